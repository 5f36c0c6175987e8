// The mesh search of mesh_plan.hpp (search space, pruning and sources there).
#include "analysis/plan/mesh_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <tuple>

#include "analysis/plan/plan.hpp"
#include "models/compute/device.hpp"
#include "models/parallel/layer_compute.hpp"
#include "models/parallel/memory_stage.hpp"
#include "models/parallel/placement.hpp"
#include "models/step/parallel_graphs.hpp"
#include "models/step/topology_comm.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/error.hpp"
#include "sim/text/strings.hpp"
#include "topologies/presets.hpp"
#include "traces/models/model_config.hpp"

namespace shardsim::plan {
namespace {

using parallel::PipelineSchedule;
using parallel::Recompute;
using parallel::ScheduleKind;

double d(std::uint64_t v) { return static_cast<double>(v); }

// A candidate that passed the cheap checks, waiting for simulation.
struct Pending {
  step::ParallelStepConfig cfg;
  double bound_s = 0;  ///< (1) of the bound; (2) is added when the candidate is reached
  double peak = 0;
  std::uint64_t m = 1;  ///< micro-batches
};

class Rejections {
 public:
  void add(const std::string& cause, const std::string& example) {
    for (auto& g : groups_) {
      if (g.cause == cause) {
        ++g.count;
        return;
      }
    }
    groups_.push_back({cause, 1, example});
  }
  std::vector<RejectionGroup> take() { return std::move(groups_); }

 private:
  std::vector<RejectionGroup> groups_;
};

std::string describe(const parallel::MeshSizes& z, std::uint64_t micro, const PipelineSchedule& s, const char* strategy) {
  return fmt::format("{} micro-batch {} {} {}", z.str(), micro, s.str(), strategy);
}

// The cause a does-not-fit line is grouped under: its term ("activations", "optimizer state").
std::string memory_cause(const std::string& line) {
  const auto lt = line.find("largest term: ");
  if (lt != std::string::npos) {
    const auto from = lt + 14;
    const auto to = line.rfind(' ', line.rfind(" GiB)") - 1);
    return fmt::format("does not fit in HBM (largest term: {})", line.substr(from, to - from));
  }
  // "stage S <term> X GiB > HBM Y GiB": the words between the stage number and the size.
  const auto a = line.find(' ', line.find(' ') + 1);
  const auto gib = line.find(" GiB > HBM");
  const auto b = line.rfind(' ', gib - 1);
  return fmt::format("does not fit in HBM (one term alone exceeds it: {})", line.substr(a + 1, b - a - 1));
}

// The preset's analytical collective times, remembered across candidates: meshes of one
// preset share most of their (op, size, group) triples and the NCCL model's cost per call
// grows with the group (its NVLink domains). Exact: a lookup returns what the call returned.
class CachedComm final : public step::CommModel {
 public:
  explicit CachedComm(step::CommModel& inner) : inner_(inner) {}
  double time_s(coll::OpKind kind, std::uint64_t bytes, const std::vector<int>& group) override {
    auto key = std::make_tuple(static_cast<int>(kind), bytes, group);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    const double t = inner_.time_s(kind, bytes, group);
    memo_.emplace(std::move(key), t);
    return t;
  }
  [[nodiscard]] std::optional<std::size_t> devices() const override { return inner_.devices(); }

 private:
  step::CommModel& inner_;
  std::map<std::tuple<int, std::uint64_t, std::vector<int>>, double> memo_;
};

// A lower bound of the tensor-parallel communication one layer adds to its compute for one
// micro-batch (the step graph of parallel_graphs.hpp): blocking collectives count whole; an
// overlapped one only what it can outlast of the GEMM beside it: pipelined into a GEMM G,
// max(C, (t-1)/t G) + G/t >= G + max(0, C - (t-1)/t G); beside a weight-gradient GEMM W,
// max(C, W) >= W + max(0, C - W). The recomputed forward (full) counts the forward again.
double tp_exposed_bound(const parallel::LayerCompute& lc, const step::ParallelStepConfig& c, bool moe_ep, step::CommModel& comm,
                        std::uint64_t bytes, const std::vector<int>& grp) {
  const double t = d(c.mesh.tp);
  const bool sp = c.sequence_parallel;
  const double ag = sp ? comm.time_s(coll::OpKind::allgather, bytes, grp) : 0.0;
  const double rs = comm.time_s(sp ? coll::OpKind::reducescatter : coll::OpKind::allreduce, bytes, grp);
  auto piped = [&](double cm, double gemm) { return std::max(0.0, cm - (t - 1) / t * gemm); };
  auto beside = [&](double cm, double gemm) { return std::max(0.0, cm - gemm); };
  double fwd = 0, bwd = 0;
  if (!c.tp_comm_overlap) {
    fwd = 2 * (ag + rs);
    bwd = 2 * (ag + rs);
  } else {
    const bool mlp = !moe_ep;
    fwd = sp ? piped(ag, lc.qkv_fwd_s) + piped(rs, lc.out_fwd_s) : rs;
    fwd += mlp && sp ? piped(ag, lc.up_fwd_s) + piped(rs, lc.down_fwd_s) : ag + rs;
    bwd = (sp ? piped(ag, lc.out_dgrad_s) : 0.0) + beside(rs, lc.qkv_wgrad_s);
    bwd += mlp ? (sp ? piped(ag, lc.down_dgrad_s) : 0.0) + beside(rs, lc.up_wgrad_s) : ag + rs;
  }
  return fwd + bwd + (c.recompute == parallel::Recompute::full ? fwd : 0.0);
}

// (2) of the bound in make_mesh_plan: the zero3 collectives of the busiest stage's dp stream
// (their group: the stage representative's, as the folded step simulates it).
double zero3_stream_bound(const parallel::ModelSpec& model, const step::ParallelStepConfig& c, const parallel::Mesh& mesh,
                          step::CommModel& comm, const std::vector<std::uint64_t>& per_stage, std::uint64_t m) {
  const auto& z = c.mesh;
  const auto layer = parallel::layer_shard_elements(model, z.tp, z.ep);
  const double wb = opt::weight_bytes(c.precision), gb = opt::grad_bytes(c.precision);
  const double gathers = c.recompute == Recompute::full ? 3.0 : 2.0;
  double best = 0;
  for (std::uint64_t j = 0; j < z.pp; ++j) {
    std::array<std::uint64_t, 5> co{};
    co[static_cast<std::size_t>(parallel::Axis::pp)] = j;
    const auto rank = mesh.rank(co);
    double per_layer = 0;
    auto add = [&](const std::vector<parallel::Axis>& axes, double elements) {
      const auto pg = mesh.group_of(axes, rank);
      if (pg.ranks.size() <= 1 || elements <= 0) return;
      const std::vector<int> g(pg.ranks.begin(), pg.ranks.end());
      per_layer += gathers * comm.time_s(coll::OpKind::allgather, static_cast<std::uint64_t>(elements * wb), g) +
                   comm.time_s(coll::OpKind::reducescatter, static_cast<std::uint64_t>(elements * gb), g);
    };
    add({parallel::Axis::cp, parallel::Axis::ep, parallel::Axis::dp}, layer.dense);
    add({parallel::Axis::cp, parallel::Axis::dp}, layer.expert);
    best = std::max(best, d(per_stage[j]) * d(m) * per_layer);
  }
  return best;
}

// The tie winner among feasible[first..] (one preset) and its fastest (header): of the
// candidates within `margin` of the fastest step, the largest tp, then the least step, then the
// first in search order.
std::pair<std::size_t, std::size_t> tie_winner(const std::vector<MeshCandidate>& f, std::size_t first, double margin) {
  std::size_t fastest = first;
  for (std::size_t i = first; i < f.size(); ++i) {
    if (f[i].step_time_s < f[fastest].step_time_s) fastest = i;
  }
  const double limit = f[fastest].step_time_s * (1 + margin);
  std::size_t winner = fastest;
  for (std::size_t i = first; i < f.size(); ++i) {
    if (f[i].step_time_s > limit) continue;
    const auto& a = f[i];
    const auto& w = f[winner];
    if (a.tp > w.tp || (a.tp == w.tp && a.step_time_s < w.step_time_s)) winner = i;
  }
  return {winner, fastest};
}

}  // namespace

MeshPlanResult make_mesh_plan(const MeshPlanRequest& r) {
  const parallel::ModelSpec model = models::resolve_model(r.plan.model, "--model");
  const opt::Optimizer& optimizer = opt::find_optimizer(r.plan.optimizer, "--optimizer");
  const opt::Precision precision = opt::precision_from_string(r.plan.precision, "--precision");
  if (r.plan.fidelity != "analytical") throw ConfigError("--fidelity", r.plan.fidelity + " with --search mesh", "analytical");
  if (r.plan.global_batch == 0) throw ConfigError("--global-batch", "0", "a positive number of samples per step");
  if (r.plan.tokens.has_value() == r.plan.steps.has_value()) {
    throw ConfigError("--tokens/--steps", r.plan.tokens ? "both" : "neither", "exactly one of --tokens and --steps");
  }
  if (r.plan.steps && *r.plan.steps == 0) throw ConfigError("--steps", "0", "a positive number of steps");
  if (r.plan.budget_usd && !r.plan.price_per_device_hour) {
    throw ConfigError("--budget", "a budget without --price-per-device-hour", "--price-per-device-hour X (USD)");
  }
  if (r.plan.hardware.empty()) throw ConfigError("--hardware", "no hardware", "one or more presets (tpu-v3, dgx-h100, dgx-h100-64, ...)");
  const std::uint64_t seq = r.plan.seq ? r.plan.seq : model.default_seq;
  if (seq == 0) throw ConfigError("--seq", "missing (the model has no default)", "a sequence length");
  std::vector<parallel::DpStrategy> strategies;
  for (const auto& s : r.plan.strategies.empty() ? std::vector<std::string>{"replicated", "zero1", "zero3"} : r.plan.strategies) {
    strategies.push_back(parallel::dp_strategy_from_string(s, 0, "--strategies"));
    if (strategies.back().hsdp || strategies.back().strategy == step::Strategy::trace) {
      std::vector<std::string> names;  // the weight-update strategies (models/strategy), hsdp excluded
      for (const auto& info : step::strategies()) names.push_back(info.name);
      throw ConfigError("--strategies", s, "one of " + text::join(names) + " for a mesh search");
    }
  }
  if (!(r.tie_margin >= 0 && r.tie_margin < 0.5)) {
    throw ConfigError("--tie-margin", fmt::format("{}", r.tie_margin), "a fraction of the fastest step in [0, 0.5) (0.01: 1 %)");
  }
  const std::uint64_t max_cp = r.max_cp != 0 ? r.max_cp : (seq >= 8192 ? 8 : 1);

  MeshPlanResult out;
  const double tokens_per_step = d(r.plan.global_batch) * d(seq);
  out.steps = r.plan.steps ? *r.plan.steps : static_cast<std::uint64_t>(std::ceil(*r.plan.tokens / tokens_per_step));
  std::vector<std::string> strategy_names;
  for (const auto& s : strategies) strategy_names.push_back(s.str());
  out.config = {{"model", model.name}, {"seq", seq}, {"global_batch", r.plan.global_batch}, {"steps", out.steps},
                {"hardware", r.plan.hardware}, {"strategies", strategy_names}, {"micro_batches", r.micro_batches},
                {"virtual_stages", r.virtual_stages}, {"max_devices", r.plan.max_devices}, {"max_cp", max_cp}, {"uneven_stages", r.uneven_stages},
                {"optimizer", optimizer.name}, {"precision", opt::to_string(precision)}, {"fidelity", "analytical"},
                {"search", "mesh"}, {"tie_margin", r.tie_margin}};
  if (r.plan.tokens) out.config["tokens"] = *r.plan.tokens;
  if (r.plan.deadline_s) out.config["deadline_s"] = *r.plan.deadline_s;
  if (r.plan.budget_usd) out.config["budget_usd"] = *r.plan.budget_usd;
  if (r.plan.price_per_device_hour) out.config["price_per_device_hour_usd"] = *r.plan.price_per_device_hour;

  Rejections rej;
  // Per preset: the tie winner (header) and the fastest it stands in for, indices into feasible.
  struct Tie {
    std::size_t winner, fastest, first, end;  // end: one past the preset's last candidate
  };
  std::vector<Tie> ties;
  parallel::FactorConstraints fc;
  fc.heads = model.heads;
  fc.kv_heads = model.kv_heads;
  fc.layers = r.uneven_stages ? 0 : model.layers;
  if (r.uneven_stages) fc.max_pp = model.layers / 2;
  fc.experts = model.experts;
  fc.seq = seq;
  fc.max_cp = max_cp;
  const auto math = precision == opt::Precision::mixed ? compute::MathType::bf16 : compute::MathType::fp32;

  for (const auto& hw : r.plan.hardware) {
    for (const auto& name : expand_hardware(hw, r.plan.max_devices)) {
      auto t = topo::make_preset(name);
      if (!t) throw ConfigError("--hardware", fmt::format("unknown preset '{}'", name), "a preset family or a sized preset");
      const std::uint64_t n = t->num_devices();
      if (r.plan.max_devices && n > r.plan.max_devices) continue;
      if (t->device_model().empty()) throw ConfigError("--hardware", fmt::format("preset '{}' names no device", name), "a preset with a device model");
      const compute::Device& dev = compute::device_for_model(t->device_model(), "--hardware");
      const auto shape = parallel::shape_of(*t);
      const double hbm = static_cast<double>(dev.hbm_bytes);
      step::TopologyComm topo_comm(*t, step::Fidelity::analytical, "auto");
      CachedComm comm(topo_comm);
      std::vector<Pending> pending;
      for (const auto& z : parallel::enumerate_factorizations(n, fc)) {
        ++out.considered;
        const parallel::Mesh mesh(z);
        const auto issues = parallel::placement_issues(mesh, shape);
        if (!issues.empty()) {
          rej.add(issues.front(), fmt::format("{} on {}", z.str(), name));
          continue;
        }
        const std::uint64_t width = model.moe() ? model.expert_width() : model.ffn;
        if (model.hidden % z.tp != 0 || width % z.tp != 0 || (model.shared_expert_ffn % z.tp) != 0) {
          rej.add(fmt::format("tp does not divide the hidden size {} or the FFN width {}", model.hidden, width),
                  fmt::format("{} on {}", z.str(), name));
          continue;
        }
        const std::uint64_t replicas = z.dp * z.ep;
        if (r.plan.global_batch % replicas != 0) {
          rej.add("global batch not divisible by dp x ep",
                  fmt::format("{} on {}: {} over {} replicas", z.str(), name, r.plan.global_batch, replicas));
          continue;
        }
        const std::uint64_t per = r.plan.global_batch / replicas;
        for (const std::uint64_t micro : r.micro_batches) {
          if (micro == 0 || per % micro != 0) continue;
          const std::uint64_t m = per / micro;
          std::vector<PipelineSchedule> schedules = {{ScheduleKind::one_f_one_b, 1}};
          if (z.pp > 1) {
            schedules.push_back({ScheduleKind::gpipe, 1});
            for (const auto v : r.virtual_stages) {
              if (v >= 2 && model.layers % (z.pp * v) == 0 && m % z.pp == 0) schedules.push_back({ScheduleKind::interleaved, v});
            }
          }
          for (const auto& sched : schedules) {
            for (const auto& strat : strategies) {
              step::ParallelStepConfig c;
              c.model = &model;
              c.mesh = z;
              c.micro_batch = micro;
              c.global_batch = r.plan.global_batch;
              c.seq = seq;
              c.schedule = sched;
              c.sequence_parallel = z.tp > 1 && (seq / z.cp) % z.tp == 0;
              c.tp_comm_overlap = true;  // header: NeMo's recipes, Megatron's asynchronous all-reduce
              c.strategy = strat;
              c.optimizer = &optimizer;
              c.precision = precision;
              c.fold = step::Fold::assume_symmetric;
              c.uneven_stages = r.uneven_stages;
              auto mi = step::memory_input(c, hbm);
              std::optional<parallel::ParallelMemoryReport> fit;
              std::string line;
              for (const Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
                mi.recompute = rc;
                auto rep = parallel::parallel_memory(mi);
                if (!rep.does_not_fit) {
                  c.recompute = rc;
                  fit = std::move(rep);
                  break;
                }
                line = *rep.does_not_fit;
              }
              if (!fit) {
                rej.add(memory_cause(line), fmt::format("{} on {} (full recompute): {}", describe(z, micro, sched, strat.str().c_str()), name, line));
                continue;
              }
              // Lower bound (exact pruning, see header). Per micro-batch stage i takes at least
              // T_i = its compute plus its tp / ep collectives' least exposure (tp_exposed_bound).
              // (1) Pipeline: the first op of stage j needs micro-batch 0's first chunk forward on
              // every stage before it, its last op is followed by that chunk's backward on them,
              // and it runs m T_i of work in between on one stream: step >= m T_j + sum_{i<j} T_i / v
              // (v chunks; uniform stages give (m + (p - 1)/v) T, Narayanan et al. 2021 sec. 2.2).
              // (2) zero3: the dp stream of stage j runs one after another, per layer and
              // micro-batch, the weight all-gathers (forward, backward, and the recomputed forward
              // with full recomputation) and the gradient reduce-scatter (parallel_graphs.hpp):
              // step >= their sum. Longer durations never shorten the fixed-order schedule.
              parallel::LayerShape ls;
              ls.micro_batch = micro;
              ls.seq = seq;
              ls.tp = z.tp;
              ls.cp = z.cp;
              ls.sequence_parallel = c.sequence_parallel;
              ls.flash_attention = fit->flash_attention;
              ls.recompute = c.recompute;
              ls.math = math;
              const auto lc = parallel::layer_compute(model, dev, ls);
              const auto head = parallel::head_compute(model, dev, ls);
              const double act = precision == opt::Precision::mixed ? 2.0 : 4.0;
              const double tokens = d(seq / z.cp) * d(micro);
              const bool moe_ep = model.moe() && z.ep > 1;
              double layer_comm = 0;
              if (z.tp > 1) {
                const auto g = mesh.group(parallel::Axis::tp, 0).ranks;
                const std::vector<int> grp(g.begin(), g.end());
                const auto bytes = static_cast<std::uint64_t>(tokens * d(model.hidden) * act);
                layer_comm += tp_exposed_bound(lc, c, moe_ep, comm, bytes, grp);
              }
              if (moe_ep) {
                const auto g = mesh.group(parallel::Axis::ep, 0).ranks;
                const double routed = c.sequence_parallel ? tokens / d(z.tp) : tokens;
                layer_comm += 4 * comm.time_s(coll::OpKind::alltoall,
                                              static_cast<std::uint64_t>(routed * d(model.top_k) * d(model.hidden) * act),
                                              std::vector<int>(g.begin(), g.end()));
              }
              const auto per_stage = parallel::stage_layers(model.layers, z.pp);
              const double per_layer = lc.fwd_s() + lc.bwd_s() + lc.recompute_s + layer_comm;
              const double v = d(sched.kind == ScheduleKind::interleaved ? sched.virtual_stages : 1);
              double bound = 0, before = 0;
              for (std::uint64_t i = 0; i < z.pp; ++i) {
                const double ti = d(per_stage[i]) * per_layer + (i + 1 == z.pp ? head.fwd_s + head.bwd_s : 0.0);
                bound = std::max(bound, d(m) * ti + before / v);
                before += ti;
              }
              Pending pd;
              pd.cfg = c;
              pd.bound_s = bound;
              pd.m = m;
              pd.peak = fit->worst().peak;
              pending.push_back(std::move(pd));
            }
          }
        }
      }
      // Best first: the candidate of least bound next (ties: enumeration order). Part (2) of
      // the bound is added when a zero3 candidate first comes up, and it goes back in line:
      // pruning stays exact with any valid lower bound (it only skips what is slower than a
      // simulated step), and (2) asks the collective model for every stage's dp group.
      using Key = std::pair<double, std::size_t>;
      std::priority_queue<Key, std::vector<Key>, std::greater<>> queue;
      std::vector<char> refined(pending.size(), 0);
      for (std::size_t i = 0; i < pending.size(); ++i) queue.emplace(pending[i].bound_s, i);
      std::optional<double> best;
      // Pruning keeps every candidate that may tie with the fastest (header).
      auto beyond_ties = [&](double bound) { return best && bound > *best * (1 + r.tie_margin); };
      const std::size_t first = out.feasible.size();
      while (!queue.empty()) {
        const std::size_t idx = queue.top().second;
        queue.pop();
        auto& pd = pending[idx];
        const auto& c = pd.cfg;
        if (c.strategy.strategy == step::Strategy::zero3 && !refined[idx]) {
          refined[idx] = 1;
          pd.bound_s = std::max(pd.bound_s, zero3_stream_bound(*c.model, c, parallel::Mesh(c.mesh), comm,
                                                               parallel::stage_layers(c.model->layers, c.mesh.pp), pd.m));
          if (!r.prune_by_bound || !beyond_ties(pd.bound_s)) {
            queue.emplace(pd.bound_s, idx);
            continue;
          }
        }
        const std::string what = describe(c.mesh, c.micro_batch, c.schedule, c.strategy.str().c_str());
        if (r.prune_by_bound && beyond_ties(pd.bound_s)) {
          rej.add("slower than the fastest found (compute lower bound above its step time)",
                  fmt::format("{} on {}: bound {:.4g} s > {:.4g} s", what, name, pd.bound_s, *best));
          continue;
        }
        const auto res = step::simulate_parallel_step(c, dev, comm);
        ++out.simulated;
        MeshCandidate mc;
        mc.hardware = name;
        mc.device = dev.name;
        mc.devices = n;
        mc.mesh = c.mesh.str();
        mc.dp = c.mesh.dp;
        mc.tp = c.mesh.tp;
        mc.pp = c.mesh.pp;
        mc.cp = c.mesh.cp;
        mc.ep = c.mesh.ep;
        mc.micro_batch = c.micro_batch;
        mc.micro_batches = res.micro_batches;
        mc.schedule = c.schedule.str();
        mc.recompute = parallel::to_string(c.recompute);
        mc.strategy = c.strategy.str();
        mc.sequence_parallel = c.sequence_parallel;
        mc.step_time_s = res.step.step_time_s;
        mc.bound_s = pd.bound_s;
        mc.mfu = res.step.mfu;
        mc.tp_comm_s = res.slowest.tp_comm_s;
        mc.pp_bubble_s = res.slowest.pp_bubble_s;
        mc.dp_exposed_s = res.slowest.dp_exposed_s;
        mc.ep_alltoall_s = res.slowest.ep_alltoall_s;
        mc.memory_peak_bytes = pd.peak;
        mc.hbm_bytes = hbm;
        mc.time_to_train_s = mc.step_time_s * d(out.steps);
        if (r.plan.price_per_device_hour) mc.cost_usd = d(n) * mc.time_to_train_s / 3600.0 * *r.plan.price_per_device_hour;
        if (r.plan.deadline_s && mc.time_to_train_s > *r.plan.deadline_s) {
          rej.add("over the deadline", fmt::format("{} on {}: {} > {}", what, name, format_duration(mc.time_to_train_s),
                                                   format_duration(*r.plan.deadline_s)));
          continue;
        }
        if (r.plan.budget_usd && mc.cost_usd && *mc.cost_usd > *r.plan.budget_usd) {
          rej.add("over budget", fmt::format("{} on {}: ${:.0f} > ${:.0f}", what, name, *mc.cost_usd, *r.plan.budget_usd));
          continue;
        }
        if (!best || mc.step_time_s < *best) best = mc.step_time_s;
        out.feasible.push_back(std::move(mc));
      }
      if (out.feasible.size() > first) {
        const auto [winner, fastest] = tie_winner(out.feasible, first, r.tie_margin);
        ties.push_back({winner, fastest, first, out.feasible.size()});
      }
    }
  }

  // Pareto set over (time to train, devices, cost); each preset's tie winner stands in for its
  // fastest with the fastest's objectives, the other ties are left out (each is dominated by the
  // fastest of the same preset anyway: same devices, cost proportional to time).
  std::vector<Objectives> obj;
  std::vector<std::size_t> index;
  std::vector<char> left_out(out.feasible.size(), 0);
  std::map<std::size_t, std::size_t> stands_for;  // winner -> fastest
  for (const auto& t : ties) {
    stands_for[t.winner] = t.fastest;
    const double limit = out.feasible[t.fastest].step_time_s * (1 + r.tie_margin);
    for (std::size_t i = t.first; i < t.end; ++i) {
      if (i != t.winner && out.feasible[i].step_time_s <= limit) left_out[i] = 1;
    }
  }
  for (std::size_t i = 0; i < out.feasible.size(); ++i) {
    if (left_out[i]) continue;
    const auto it = stands_for.find(i);
    const auto& c = out.feasible[it == stands_for.end() ? i : it->second];
    obj.push_back({c.time_to_train_s, d(c.devices), c.cost_usd.value_or(0.0)});
    index.push_back(i);
  }
  for (const auto k : pareto_front(obj)) {
    const std::size_t i = index[k];
    out.pareto.push_back(i);
    auto& c = out.feasible[i];
    c.pareto = true;
    const auto it = stands_for.find(i);
    if (it != stands_for.end() && it->second != i) {
      const auto& f = out.feasible[it->second];
      c.tie_of = fmt::format("within {:g} % of the fastest, {} {} {:.4g} s: the larger tp (Narayanan et al. 2021, takeaway #1)",
                             100 * r.tie_margin, f.mesh, f.schedule, f.step_time_s);
    }
  }
  out.rejected = rej.take();
  return out;
}

nlohmann::json to_json(const MeshPlanResult& p) {
  auto cand = [](const MeshCandidate& c) {
    nlohmann::json j = {{"hardware", c.hardware}, {"device", c.device}, {"devices", c.devices}, {"mesh", c.mesh},
                        {"dp", c.dp}, {"tp", c.tp}, {"pp", c.pp}, {"cp", c.cp}, {"ep", c.ep},
                        {"micro_batch", c.micro_batch}, {"micro_batches", c.micro_batches}, {"schedule", c.schedule},
                        {"recompute", c.recompute}, {"sequence_parallel", c.sequence_parallel}, {"strategy", c.strategy},
                        {"step_time_s", c.step_time_s}, {"time_to_train_s", c.time_to_train_s}, {"mfu", c.mfu},
                        {"tp_comm_s", c.tp_comm_s}, {"pp_bubble_s", c.pp_bubble_s}, {"dp_exposed_s", c.dp_exposed_s},
                        {"ep_alltoall_s", c.ep_alltoall_s}, {"memory_peak_bytes", c.memory_peak_bytes},
                        {"hbm_bytes", c.hbm_bytes}, {"pareto", c.pareto}};
    if (c.cost_usd) j["cost_usd"] = *c.cost_usd;
    if (!c.tie_of.empty()) j["tie_of"] = c.tie_of;
    return j;
  };
  nlohmann::json pareto = nlohmann::json::array(), other = nlohmann::json::array(), rejected = nlohmann::json::array();
  for (auto i : p.pareto) pareto.push_back(cand(p.feasible[i]));
  for (const auto& c : p.feasible) {
    if (!c.pareto) other.push_back(cand(c));
  }
  for (const auto& g : p.rejected) rejected.push_back({{"cause", g.cause}, {"count", g.count}, {"example", g.example}});
  return {{"config", p.config}, {"steps", p.steps}, {"considered_meshes", p.considered}, {"simulated", p.simulated},
          {"pareto", pareto}, {"dominated", other}, {"rejected", rejected}};
}

}  // namespace shardsim::plan
