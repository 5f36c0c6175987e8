// simulate_parallel_step (parallel_graphs.hpp): derive the shapes, build each stage's program
// (parallel_graphs.cpp), instantiate it on the stage's simulated ranks, run the executor and
// attribute each rank's time.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <array>
#include <optional>

#include "models/step/parallel_program.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/error.hpp"
#include "sim/text/strings.hpp"
#include "topologies/faults.hpp"

namespace shardsim::step {

namespace {

using detail::Cat;
using detail::Op;
using detail::Role;
using parallel::Axis;

double d(std::uint64_t v) { return static_cast<double>(v); }

// comm.time_s for a process group named `group` (the TaskGraph's name): a group that --faults
// cut is an error naming the link and the group (issue 16), not only a pair of its devices.
double group_time(CommModel& comm, coll::OpKind kind, std::uint64_t bytes, const std::vector<int>& ranks,
                  const std::string& group) {
  try {
    return comm.time_s(kind, bytes, ranks);
  } catch (const topo::RouteCutError& e) {
    throw topo::group_cut_error(e, group, ranks);
  }
}

std::string group_name(const parallel::ProcessGroup& pg) { return fmt::format("{} {}", pg.axes, pg.id & 0xffffffffULL); }
std::string pair_name(int a, int b) { return fmt::format("pp {}->{}", a, b); }

detail::Shape make_shape(const ParallelStepConfig& c, const compute::Device& dev, const parallel::ParallelMemoryReport& mem) {
  const auto& m = *c.model;
  const auto& z = c.mesh;
  detail::Shape s;
  s.c = &c;
  s.m = &m;
  s.dev = &dev;
  s.p = z.pp;
  s.v = c.schedule.kind == parallel::ScheduleKind::interleaved ? c.schedule.virtual_stages : 1;
  s.mb = mem.micro_batches;
  s.seq = mem.seq;
  parallel::LayerShape l;
  l.micro_batch = c.micro_batch;
  l.seq = mem.seq;
  l.tp = z.tp;
  l.cp = z.cp;
  l.sequence_parallel = c.sequence_parallel;
  l.flash_attention = mem.flash_attention;
  l.eager_kernels = c.eager_kernels;
  l.recompute = c.recompute;
  l.math = c.precision == opt::Precision::mixed ? compute::MathType::bf16 : compute::MathType::fp32;
  l.moe_imbalance = c.moe_imbalance;
  s.lc = parallel::layer_compute(m, dev, l);
  if (c.output_layer) s.head = parallel::head_compute(m, dev, l);
  const double act = c.precision == opt::Precision::mixed ? 2.0 : 4.0;  // bytes per activation element
  const double sq = d(mem.seq) / d(z.cp), b = d(c.micro_batch), h = d(m.hidden);
  // Megatron-LM: every tp all-reduce (or its reduce-scatter / all-gather pair) moves the
  // [s, b, h] activation (Shoeybi et al. 2019, Fig. 4).
  s.tp_bytes = static_cast<std::uint64_t>(sq * b * h * act);
  const double tokens = c.sequence_parallel ? sq * b / d(z.tp) : sq * b;
  s.ep_bytes = static_cast<std::uint64_t>(tokens * d(m.top_k) * h * act * c.moe_imbalance);
  s.cp_bytes = static_cast<std::uint64_t>(d(z.cp) * 2 * sq * b * d(m.kv_heads * m.dhead()) / d(z.tp) * act);
  // Per rank: the [s, b, h] activation, split over tp with sequence parallelism or with
  // Megatron's scatter/gather optimization (ParallelStepConfig::p2p_scatter_gather).
  const bool split = c.sequence_parallel || c.p2p_scatter_gather;
  s.p2p_bytes = static_cast<std::uint64_t>(split ? sq * b * h * act / d(z.tp) : sq * b * h * act);
  s.layer = parallel::layer_shard_elements(m, z.tp, z.ep);
  s.wb = opt::weight_bytes(c.precision);
  s.gb = opt::grad_bytes(c.precision);
  s.dense_group = z.cp * z.ep * z.dp;
  s.expert_group = z.cp * z.dp;
  // Megatron-LM DistributedDataParallel: bucket_size = max(40000000, 1000000 * dp size).
  auto bucket = [&](std::uint64_t group) {
    return c.bucket_elements != 0 ? d(c.bucket_elements) : std::max(40e6, 1e6 * d(group));
  };
  s.bucket_dense = bucket(s.dense_group);
  s.bucket_expert = bucket(s.expert_group);
  const auto st = c.strategy.strategy;
  s.sharded = st == Strategy::sharded || st == Strategy::zero1 || st == Strategy::zero2;
  s.zero3 = st == Strategy::zero3;
  return s;
}

void check(const ParallelStepConfig& c) {
  if (c.model == nullptr) throw ConfigError("step", "no model", "a model (--model)");
  if (c.optimizer == nullptr) throw ConfigError("--optimizer", "none", "an optimizer");
  if (c.strategy.hsdp) {
    std::vector<std::string> names;  // the weight-update strategies (models/strategy)
    for (const auto& info : strategies()) names.push_back(info.name);
    throw ConfigError("--strategy", "hsdp with --mesh", "one of " + text::join(names) + " (hsdp is modelled in memory only)");
  }
  if (c.strategy.strategy == Strategy::trace) throw ConfigError("--strategy", "trace with --mesh", "a weight-update strategy");
  const std::uint64_t n = c.mesh.cp * c.mesh.ep * c.mesh.dp;
  if (c.strategy.strategy == Strategy::sharded && c.strategy.shard_group != 0 && c.strategy.shard_group != n) {
    throw ConfigError("--shard-group", fmt::format("{} with --mesh (data-parallel group {})", c.strategy.shard_group, n),
                      "no shard group (the parallel step shards over the whole data-parallel group)");
  }
  if (c.schedule.kind == parallel::ScheduleKind::interleaved && c.mesh.pp < 2) {
    throw ConfigError("--schedule", fmt::format("{} with pp={}", c.schedule.str(), c.mesh.pp),
                      "pp >= 2 for the interleaved schedule");
  }
  if (!(c.moe_imbalance >= 1.0)) {
    throw ConfigError("--moe-imbalance", fmt::format("{}", c.moe_imbalance), "a load-imbalance factor >= 1");
  }
}

// Instantiates every stage's program on its simulated ranks.
class Instantiator {
 public:
  Instantiator(const parallel::Mesh& mesh, CommModel& comm, TaskGraph& g) : mesh_(mesh), comm_(comm), g_(g) {}

  void stage(const detail::StageOps& prog, std::uint64_t stage, const std::vector<int>& ranks) {
    const std::size_t S = ranks.size();
    std::vector<NodeId> node_of(prog.ops.size() * S, 0);
    std::vector<NodeId> deps;
    for (std::uint32_t i = 0; i < prog.ops.size(); ++i) {
      const Op& o = prog.ops[i];
      auto mapped = [&](std::size_t k, std::vector<NodeId>& out) {
        for (std::uint32_t j = o.deps_begin; j < o.deps_end; ++j) out.push_back(node_of[prog.deps[j] * S + k]);
      };
      if (o.kind != NodeKind::collective) {
        for (std::size_t k = 0; k < S; ++k) {
          deps.clear();
          mapped(k, deps);
          const int r = ranks[k];
          NodeId n = 0;
          if (o.kind == NodeKind::compute) {
            n = g_.add_compute(r, o.stream, o.phase, o.duration_s, deps, o.name);
            if (o.gemm_share > 0) g_.set_gemm_share(n, o.gemm_share);
          } else {
            const int peer = neighbour(r, stage, o.dir);
            if (o.kind == NodeKind::send) {
              n = g_.add_send(r, o.stream, peer, o.size_bytes, o.tag, p2p_time(o.size_bytes, r, peer), deps, o.name);
            } else {
              n = g_.add_recv(r, o.stream, peer, o.size_bytes, o.tag, deps, o.name);
            }
          }
          node_of[i * S + k] = n;
          push_meta(o, r);
        }
        continue;
      }
      // One node per group instance, shared by its simulated members, in first-member order.
      std::vector<std::pair<std::uint32_t, std::vector<NodeId>>> inst;  // (TaskGraph group, deps)
      std::vector<std::size_t> inst_of(S);
      for (std::size_t k = 0; k < S; ++k) {
        const std::uint32_t gi = group_index(o.role, static_cast<std::uint64_t>(ranks[k]));
        std::size_t at = 0;
        while (at < inst.size() && inst[at].first != gi) ++at;
        if (at == inst.size()) inst.emplace_back(gi, std::vector<NodeId>{});
        mapped(k, inst[at].second);
        inst_of[k] = at;
      }
      std::vector<NodeId> made(inst.size());
      for (std::size_t a = 0; a < inst.size(); ++a) {
        const auto gi = inst[a].first;
        made[a] = g_.add_collective(gi, o.stream, o.op, o.size_bytes, coll_time(o.op, o.size_bytes, gi), inst[a].second, o.name);
        if (!o.takes_units) g_.set_takes_units(made[a], false);
        if (o.units != 0) g_.set_units(made[a], o.units);
        push_meta(o, -1);
      }
      for (std::size_t k = 0; k < S; ++k) node_of[i * S + k] = made[inst_of[k]];
    }
  }

  std::vector<Cat> cat;                     ///< per node
  std::vector<std::uint64_t> tp_bytes_node;  ///< per node: S of a tp collective, else 0

 private:
  void push_meta(const Op& o, int) {
    cat.push_back(o.cat);
    tp_bytes_node.push_back(o.kind == NodeKind::collective && o.cat == Cat::tp ? o.size_bytes : 0);
  }

  int neighbour(int r, std::uint64_t stage, int dir) const {
    const std::uint64_t p = mesh_.size(Axis::pp);
    const auto to = static_cast<std::uint64_t>(
        (static_cast<std::int64_t>(stage) + static_cast<std::int64_t>(p) + dir) % static_cast<std::int64_t>(p));
    std::array<std::uint64_t, 5> co{};
    for (const Axis a : parallel::kAxes) co[static_cast<std::size_t>(a)] = mesh_.coord(static_cast<std::uint64_t>(r), a);
    co[static_cast<std::size_t>(Axis::pp)] = to;
    return static_cast<int>(mesh_.rank(co));
  }

  std::uint32_t group_index(Role role, std::uint64_t rank) {
    // Memo by (role, rank): a step asks once per collective op and simulated member.
    auto& memo = rank_group_[static_cast<std::size_t>(role)];
    if (memo.empty()) memo.assign(mesh_.devices(), kNone);
    if (memo[rank] != kNone) return memo[rank];
    const auto pg = mesh_.group_of(detail::role_axes(role), rank);
    if (auto it = groups_.find(pg.id); it != groups_.end()) return memo[rank] = it->second;
    std::vector<int> rs(pg.ranks.begin(), pg.ranks.end());
    const auto gi = g_.add_group({group_name(pg), rs});
    groups_.emplace(pg.id, gi);
    return memo[rank] = gi;
  }

  double coll_time(coll::OpKind kind, std::uint64_t bytes, std::uint32_t gi) {
    const auto key = std::make_tuple(static_cast<int>(kind), bytes, gi);
    if (auto it = times_.find(key); it != times_.end()) return it->second;
    const double t = group_time(comm_, kind, bytes, g_.groups()[gi].ranks, g_.groups()[gi].name);
    times_.emplace(key, t);
    return t;
  }

  // A point-to-point transfer: a broadcast over the two ranks (one message of S bytes).
  double p2p_time(std::uint64_t bytes, int a, int b) {
    const auto key = std::make_tuple(bytes, a, b);
    if (auto it = p2p_.find(key); it != p2p_.end()) return it->second;
    const double t = group_time(comm_, coll::OpKind::broadcast, bytes, {a, b}, pair_name(a, b));
    p2p_.emplace(key, t);
    return t;
  }

  const parallel::Mesh& mesh_;
  CommModel& comm_;
  TaskGraph& g_;
  static constexpr std::uint32_t kNone = 0xffffffffU;
  std::map<std::uint64_t, std::uint32_t> groups_;
  std::array<std::vector<std::uint32_t>, 5> rank_group_;  // by Role, by rank
  std::map<std::tuple<int, std::uint64_t, std::uint32_t>, double> times_;
  std::map<std::tuple<std::uint64_t, int, int>, double> p2p_;
};

// Fold::exact: every group instance of every collective the programs issue, and every
// pipeline pair, times alike (== on the CommModel's times).
bool symmetric(const parallel::Mesh& mesh, const std::vector<detail::StageOps>& progs, CommModel& comm) {
  std::map<std::tuple<int, int, std::uint64_t>, char> seen;
  for (const auto& prog : progs) {
    for (const auto& o : prog.ops) {
      if (o.kind == NodeKind::compute) continue;
      const int role = o.kind == NodeKind::collective ? static_cast<int>(o.role) : -1 - std::max(o.dir, 0);
      if (!seen.emplace(std::make_tuple(role, static_cast<int>(o.op), o.size_bytes), 1).second) continue;
      std::optional<double> first;
      auto same = [&](double t) {
        if (!first) first = t;
        return t == *first;
      };
      if (o.kind == NodeKind::collective) {
        for (const auto& pg : mesh.groups(detail::role_axes(o.role))) {
          if (pg.ranks.size() <= 1) continue;
          const std::vector<int> ranks(pg.ranks.begin(), pg.ranks.end());
          if (!same(group_time(comm, o.op, o.size_bytes, ranks, group_name(pg)))) return false;
        }
      } else {
        const std::uint64_t p = mesh.size(Axis::pp);
        for (std::uint64_t r = 0; r < mesh.devices(); ++r) {
          std::array<std::uint64_t, 5> co{};
          for (const Axis a : parallel::kAxes) co[static_cast<std::size_t>(a)] = mesh.coord(r, a);
          auto& pp = co[static_cast<std::size_t>(Axis::pp)];
          pp = static_cast<std::uint64_t>((static_cast<std::int64_t>(pp + p) + o.dir) % static_cast<std::int64_t>(p));
          const int peer = static_cast<int>(mesh.rank(co));
          const int a = static_cast<int>(r);
          if (!same(group_time(comm, coll::OpKind::broadcast, o.size_bytes, {a, peer}, pair_name(a, peer)))) return false;
        }
      }
    }
  }
  return true;
}

std::string stream_name(std::uint32_t s) {
  static const char* names[] = {"compute", "tp/ep", "cp", "dp", "send next", "recv prev", "send prev", "recv next"};
  return s < detail::kStreams ? names[s] : fmt::format("stream {}", s);
}

}  // namespace

parallel::ParallelMemoryInput memory_input(const ParallelStepConfig& c, double hbm_bytes) {
  parallel::ParallelMemoryInput mi;
  mi.model = c.model;
  mi.mesh = c.mesh;
  mi.micro_batch = c.micro_batch;
  mi.global_batch = c.global_batch;
  mi.seq = c.seq;
  mi.schedule = c.schedule;
  mi.recompute = c.recompute;
  mi.sequence_parallel = c.sequence_parallel;
  mi.flash_attention = c.flash_attention;
  mi.eager_kernels = c.eager_kernels;
  mi.optimizer = c.optimizer;
  mi.precision = c.precision;
  mi.strategy = c.strategy;
  mi.hbm_bytes = hbm_bytes;
  mi.uneven_stages = c.uneven_stages;
  return mi;
}

ParallelStepResult simulate_parallel_step(const ParallelStepConfig& c, const compute::Device& dev, CommModel& comm) {
  check(c);
  if (c.tp_comm_overlap && !c.tp_overlap.te_default) c.tp_overlap.check_units(dev.compute_units, "--tp-overlap-config");
  const parallel::Mesh mesh(c.mesh, c.order, "--mesh");
  if (auto n = comm.devices(); n && mesh.devices() != *n) {
    throw ConfigError("--mesh", fmt::format("dp x tp x pp x cp x ep = {} devices on a topology of {}", mesh.devices(), *n),
                      "a mesh whose product is the device count");
  }
  const auto mi = memory_input(c, static_cast<double>(dev.hbm_bytes));
  ParallelStepResult out;
  out.memory = parallel::parallel_memory(mi);  // validates mesh, batch and schedule
  const detail::Shape shape = make_shape(c, dev, out.memory);
  out.micro_batches = shape.mb;
  out.layer_forward_s = shape.lc.fwd_s();
  out.layer_backward_s = shape.lc.bwd_s();

  const std::uint64_t p = shape.p;
  std::vector<detail::StageOps> progs;
  progs.reserve(p);
  for (std::uint64_t i = 0; i < p; ++i) progs.push_back(detail::build_stage(shape, i));

  // A time-varying runner (timed faults): equal isolated times prove nothing (executor.hpp).
  sim::Simulator sim;  // before the runner, whose network and runs refer to it
  auto runner = comm.concurrent_runner();
  bool fold = c.fold != Fold::none && mesh.devices() > p && !(runner && runner->time_varying());
  if (fold && c.fold == Fold::exact) fold = symmetric(mesh, progs, comm);
  // Per-rank compute factors (issue 16): a representative stands for its stage only when every
  // rank of the stage has its factor (whatever the fold mode: a slow rank is never hidden).
  const auto& cs = c.compute_scale;
  auto factor = [&](std::uint64_t r) { return r < cs.size() ? cs[r] : 1.0; };
  for (std::uint64_t r = 0; fold && r < mesh.devices() && !cs.empty(); ++r) {
    std::array<std::uint64_t, 5> co{};
    co[static_cast<std::size_t>(Axis::pp)] = mesh.coord(r, Axis::pp);
    fold = factor(r) == factor(mesh.rank(co));
  }
  out.fold = fold ? "stage representatives" : "every rank";
  std::vector<std::vector<int>> stage_ranks(p);
  for (std::uint64_t r = 0; r < mesh.devices(); ++r) {
    const std::uint64_t st = mesh.coord(r, Axis::pp);
    bool rep = true;
    for (const Axis a : {Axis::tp, Axis::cp, Axis::ep, Axis::dp}) rep = rep && mesh.coord(r, a) == 0;
    if (!fold || rep) stage_ranks[st].push_back(static_cast<int>(r));
  }
  std::vector<int> sim_ranks;
  for (const auto& v : stage_ranks) sim_ranks.insert(sim_ranks.end(), v.begin(), v.end());
  std::vector<int> sorted = sim_ranks;
  std::sort(sorted.begin(), sorted.end());
  TaskGraph g(sorted, detail::kStreams);
  std::size_t total_ops = 0;
  for (std::uint64_t i = 0; i < p; ++i) total_ops += progs[i].ops.size() * stage_ranks[i].size();
  g.reserve(total_ops, total_ops * 2);
  Instantiator inst(mesh, comm, g);
  inst.cat.reserve(total_ops);
  inst.tp_bytes_node.reserve(total_ops);
  for (std::uint64_t i = 0; i < p; ++i) inst.stage(progs[i], i, stage_ranks[i]);
  progs.clear();

  Executor ex(g, runner.get());
  // The SMs NCCL's channels take from the compute beside a collective, and Hopper's persistent
  // GEMMs in two waves (executor.hpp; as the data-parallel step: step_contention).
  ex.set_comm_contention(CommContention::of_device(dev));
  if (!cs.empty()) {
    std::vector<double> scale;
    scale.reserve(sorted.size());
    for (const int rank : sorted) scale.push_back(factor(static_cast<std::uint64_t>(rank)));
    ex.set_compute_scale(scale);
  }
  const ExecResult res = ex.run(sim);

  // Per rank: its nodes (collectives: for every simulated member).
  const std::size_t R = sorted.size();
  std::vector<std::vector<NodeId>> busy(R);
  std::vector<Time> rank_end(R, Time::zero());
  std::vector<NodeId> last_node(R, 0);
  std::vector<ParallelRankTimes> pr(R);
  auto each_rank = [&](NodeId n, auto&& fn) { g.for_each_rank(n, fn); };
  auto dur = [&](NodeId n) { return res.end[n] - res.start[n]; };
  for (NodeId n = 0; n < g.size(); ++n) {
    const auto& node = g.node(n);
    each_rank(n, [&](std::size_t k) {
      if (res.end[n] >= rank_end[k]) {
        rank_end[k] = res.end[n];
        last_node[k] = n;
      }
      if (node.stream == detail::kCompute || node.stream == detail::kModel) busy[k].push_back(n);
      if (inst.cat[n] == Cat::dp) pr[k].dp_comm_s += dur(n).to_seconds();
      if (inst.tp_bytes_node[n] > 0) {
        pr[k].tp_bytes += static_cast<double>(inst.tp_bytes_node[n]);
        ++pr[k].tp_collectives;
      }
    });
    if (c.record_timeline) {
      each_rank(n, [&](std::size_t k) {
        out.step.timeline.push_back({stream_name(node.stream), g.name(n), res.start[n].to_seconds(), res.end[n].to_seconds(),
                                     sorted[k], node.stream});
      });
    }
  }
  // Attribution: walk the compute stream and the tp / ep collectives in time order (compute
  // first among equal starts); a node counts the part of it after everything before it (an
  // overlapped collective only what outlasts the compute beside it), a gap before a node goes
  // to the category of what it waited for (its latest-ending dependency; a collective with
  // none waited for its group), the tail after the last one to the rank's last-ending node.
  for (std::size_t k = 0; k < R; ++k) {
    auto& x = pr[k];
    x.rank = sorted[k];
    x.stage = mesh.coord(static_cast<std::uint64_t>(sorted[k]), Axis::pp);
    x.folded = fold ? mesh.devices() / p : 1;
    std::array<Time, 8> t{};  // by Cat
    auto& v = busy[k];
    std::stable_sort(v.begin(), v.end(), [&](NodeId a, NodeId b) {
      if (res.start[a] != res.start[b]) return res.start[a] < res.start[b];
      return g.node(a).stream < g.node(b).stream;
    });
    Time cursor = Time::zero();
    for (const NodeId n : v) {
      if (res.start[n] > cursor) {
        Cat why = inst.cat[n];
        Time latest = cursor;
        for (const NodeId dn : g.deps(n)) {
          if (res.end[dn] > latest) {
            latest = res.end[dn];
            why = inst.cat[dn];
          }
        }
        if (why == Cat::forward || why == Cat::backward || why == Cat::update) why = Cat::pp;
        t[static_cast<std::size_t>(why)] += res.start[n] - cursor;
      }
      if (res.end[n] > cursor) t[static_cast<std::size_t>(inst.cat[n])] += res.end[n] - std::max(cursor, res.start[n]);
      cursor = std::max(cursor, res.end[n]);
    }
    if (rank_end[k] > cursor) {
      const Cat why = inst.cat[last_node[k]] == Cat::dp ? Cat::dp : Cat::pp;
      t[static_cast<std::size_t>(why)] += rank_end[k] - cursor;
    }
    auto sec = [&](Cat ct) { return t[static_cast<std::size_t>(ct)].to_seconds(); };
    x.step_time_s = rank_end[k].to_seconds();
    x.forward_s = sec(Cat::forward);
    x.backward_s = sec(Cat::backward);
    x.update_s = sec(Cat::update);
    x.tp_comm_s = sec(Cat::tp);
    x.ep_alltoall_s = sec(Cat::ep);
    x.cp_exposed_s = sec(Cat::cp);
    x.pp_bubble_s = sec(Cat::pp);
    x.dp_exposed_s = sec(Cat::dp);
  }
  std::size_t worst = 0;
  for (std::size_t k = 1; k < R; ++k) {
    if (rank_end[k] > rank_end[worst]) worst = k;
  }
  out.slowest = pr[worst];
  auto& r = out.step;
  r.strategy = c.strategy.str();
  r.step_time_s = out.slowest.step_time_s;
  r.forward_s = out.slowest.forward_s;
  r.backward_s = out.slowest.backward_s;
  r.update_s = out.slowest.update_s;
  r.exposed_comm_s = std::max(0.0, r.step_time_s - r.forward_s - r.backward_s - r.update_s);
  r.ranks = mesh.devices();
  r.ranks_simulated = R;
  r.events = res.events;
  for (NodeId n = 0; n < g.size(); ++n) {
    const auto& node = g.node(n);
    if (node.kind != NodeKind::collective) continue;
    bool on_worst = false;
    for (const int m : g.simulated_members(node.group)) on_worst = on_worst || m == sorted[worst];
    if (!on_worst) continue;
    r.comm_s += dur(n).to_seconds();
    r.comm_bytes += static_cast<double>(node.size_bytes) * coll::busbw_factor(node.op, g.groups()[node.group].ranks.size());
    ++r.collectives;
  }
  const double tokens = d(c.global_batch != 0 ? c.global_batch : c.mesh.dp * c.mesh.ep * c.micro_batch) * d(out.memory.seq);
  r.model_flops = c.model->training_flops_per_token(out.memory.seq) * tokens / d(mesh.devices());
  const auto math = c.precision == opt::Precision::mixed ? compute::MathType::bf16 : compute::MathType::fp32;
  r.mfu = r.step_time_s > 0 ? r.model_flops / (r.step_time_s * dev.peak(math)) : 0.0;
  const auto& ws = out.memory.worst();
  r.memory = {ws.params, ws.grads, ws.optimizer, ws.activations + ws.recompute_working, ws.buffers, ws.peak};
  r.hbm_bytes = static_cast<double>(dev.hbm_bytes);
  r.fits = !out.memory.does_not_fit.has_value();
  for (const auto& x : pr) {
    r.per_rank.push_back({x.rank, x.folded, x.step_time_s, x.forward_s, x.backward_s,
                          x.step_time_s - x.forward_s - x.backward_s - x.update_s, x.update_s, 0.0});
  }
  out.per_rank = std::move(pr);
  return out;
}

}  // namespace shardsim::step
