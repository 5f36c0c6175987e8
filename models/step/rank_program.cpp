#include "models/step/rank_program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "sim/error.hpp"
#include "topologies/faults.hpp"

namespace shardsim::step {

GroupRole blocks_role(std::string name, std::uint64_t ranks, std::uint64_t size) {
  GroupRole r;
  r.name = std::move(name);
  r.of_rank.resize(ranks);
  for (std::uint64_t i = 0; i < ranks; ++i) {
    if (i % size == 0) r.groups.emplace_back();
    r.groups.back().push_back(static_cast<int>(i));
    r.of_rank[i] = static_cast<std::uint32_t>(r.groups.size() - 1);
  }
  return r;
}

GroupRole strided_role(std::string name, std::uint64_t ranks, std::uint64_t stride) {
  GroupRole r;
  r.name = std::move(name);
  r.of_rank.resize(ranks);
  r.groups.resize(std::min(ranks, stride));
  for (std::uint64_t i = 0; i < ranks; ++i) {
    r.groups[i % stride].push_back(static_cast<int>(i));
    r.of_rank[i] = static_cast<std::uint32_t>(i % stride);
  }
  return r;
}

std::uint32_t RankProgram::add_role(GroupRole r) {
  roles_.push_back(std::move(r));
  return static_cast<std::uint32_t>(roles_.size() - 1);
}

std::uint32_t RankProgram::push(ProgramOp o, std::span<const std::uint32_t> deps) {
  o.deps_begin = static_cast<std::uint32_t>(deps_.size());
  deps_.insert(deps_.end(), deps.begin(), deps.end());
  o.deps_end = static_cast<std::uint32_t>(deps_.size());
  streams_ = std::max(streams_, o.stream + 1);
  ops_.push_back(std::move(o));
  return static_cast<std::uint32_t>(ops_.size() - 1);
}

std::uint32_t RankProgram::compute(NodePhase phase, double duration_s, const std::vector<std::uint32_t>& deps,
                                   std::string name) {
  ProgramOp o;
  o.phase = phase;
  o.duration_s = duration_s;
  o.name = std::move(name);
  return push(std::move(o), deps);
}

void RankProgram::set_gemm_share(std::uint32_t i, double share) { ops_.at(i).gemm_share = static_cast<float>(share); }

std::uint32_t RankProgram::collective(std::uint32_t role, std::uint32_t stream, coll::OpKind op,
                                      std::uint64_t size_bytes, const std::vector<std::uint32_t>& deps,
                                      std::string name) {
  ProgramOp o;
  o.kind = NodeKind::collective;
  o.phase = NodePhase::comm;
  o.stream = stream;
  o.op = op;
  o.size_bytes = size_bytes;
  o.role = role;
  o.name = std::move(name);
  return push(std::move(o), deps);
}

namespace {

std::string stream_name(std::uint32_t s) {
  if (s == 0) return "compute";
  if (s == 1) return "comm";
  return fmt::format("comm {}", s);
}

// True when every collective of the graph is on one stream of one simulated rank: they then
// run one at a time (FIFO), never on the network together, so a timer of the isolated time is
// exact at any fidelity.
bool collectives_serialised(const TaskGraph& g) {
  std::vector<int> common;
  bool first = true;
  std::uint32_t stream = 0;
  for (NodeId i = 0; i < g.size(); ++i) {
    const auto& n = g.node(i);
    if (n.kind != NodeKind::collective || g.groups()[n.group].ranks.size() <= 1) continue;
    std::vector<int> sim = g.simulated_members(n.group);
    std::sort(sim.begin(), sim.end());
    if (first) {
      common = std::move(sim);
      stream = n.stream;
      first = false;
    } else {
      if (n.stream != stream) return false;
      std::vector<int> both;
      std::set_intersection(common.begin(), common.end(), sim.begin(), sim.end(), std::back_inserter(both));
      common = std::move(both);
    }
    if (common.empty()) return false;
  }
  return true;
}

}  // namespace

ProgramInstance instantiate_program(const RankProgram& p, const StepConfig& c, CommModel& comm, bool vary) {
  const std::uint64_t R = p.ranks();
  const auto& ops = p.ops();
  const auto& roles = p.roles();
  const auto runner = comm.concurrent_runner();
  const bool concurrent = runner != nullptr;

  // Collective times: rank 0's instances first, in program order (the order the former list
  // scheduler asked), then the other instances where needed. Key (op index, group index).
  std::map<std::pair<std::uint32_t, std::uint32_t>, double> dur;
  auto time_of = [&](std::uint32_t i, std::uint32_t gi) {
    const auto key = std::make_pair(i, gi);
    if (auto it = dur.find(key); it != dur.end()) return it->second;
    const auto& o = ops[i];
    const auto& g = roles[o.role].groups[gi];
    double t = 0;
    try {
      t = g.size() > 1 ? comm.time_s(o.op, o.size_bytes, g) : 0.0;
    } catch (const topo::RouteCutError& e) {
      // Name the process group the fault cuts (issue 16), not only the pair of devices.
      throw topo::group_cut_error(e, fmt::format("{} {}", roles[o.role].name, gi), g);
    }
    dur.emplace(key, t);
    return t;
  };
  for (std::uint32_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == NodeKind::collective) time_of(i, roles[ops[i].role].of_rank[0]);
  }
  // A time-varying network (timed faults): equal isolated times prove nothing (executor.hpp).
  bool fold = c.fold && R > 1 && !vary && !(runner && runner->time_varying());
  // Per-rank compute factors: fold only when every rank has the representative's.
  for (std::size_t k = 1; k < c.compute_scale.size() && k < R && fold; ++k) fold = c.compute_scale[k] == c.compute_scale[0];
  if (fold && !c.compute_scale.empty() && c.compute_scale.size() < R) fold = c.compute_scale[0] == 1.0;
  // Per-rank devices (their comm units differ): the same rule (a null entry and the step's
  // device count as different: conservative, still exact).
  for (std::uint64_t k = 1; k < R && fold && !c.rank_devices.empty(); ++k) {
    fold = (k < c.rank_devices.size() ? c.rank_devices[k] : nullptr) == c.rank_devices[0];
  }
  if (fold) {
    for (std::uint32_t i = 0; i < ops.size() && fold; ++i) {
      const auto& o = ops[i];
      if (o.kind != NodeKind::collective) continue;
      const auto& role = roles[o.role];
      if (concurrent) {
        fold = role.groups.size() == 1;
        continue;
      }
      const double t0 = time_of(i, role.of_rank[0]);
      for (std::uint32_t gi = 0; gi < role.groups.size() && fold; ++gi) fold = time_of(i, gi) == t0;
    }
  }
  // Instantiate op by op, so that each stream of each rank lists its nodes in program order.
  const std::uint64_t S = fold ? 1 : R;
  std::vector<int> sim_ranks(S);
  for (std::uint64_t k = 0; k < S; ++k) sim_ranks[k] = static_cast<int>(k);
  ProgramInstance inst{TaskGraph(sim_ranks, p.streams()), fold, R};
  TaskGraph& g = inst.graph;
  g.reserve(ops.size() * S, 0);
  std::vector<std::vector<std::uint32_t>> role_group_id(roles.size());
  std::vector<char> role_used(roles.size(), 0);
  for (const auto& o : ops) {
    if (o.kind == NodeKind::collective) role_used[o.role] = 1;
  }
  for (std::size_t ro = 0; ro < roles.size(); ++ro) {
    if (!role_used[ro]) continue;
    for (std::size_t gi = 0; gi < roles[ro].groups.size(); ++gi) {
      role_group_id[ro].push_back(
          g.add_group({fmt::format("{} {}", roles[ro].name, gi), roles[ro].groups[gi]}));
    }
  }
  std::vector<NodeId> node_of(ops.size() * S, 0);  // (op, simulated rank) -> node
  std::vector<NodeId> deps;
  std::vector<std::vector<NodeId>> inst_deps;  // collective: per group, every member's deps
  std::vector<std::uint32_t> inst_order;
  for (std::uint32_t i = 0; i < ops.size(); ++i) {
    const auto& o = ops[i];
    if (o.kind == NodeKind::compute) {
      for (std::uint64_t k = 0; k < S; ++k) {
        deps.clear();
        for (const std::uint32_t d : p.deps(i)) deps.push_back(node_of[d * S + k]);
        node_of[i * S + k] = g.add_compute(sim_ranks[k], o.stream, o.phase, o.duration_s, deps, o.name);
        if (o.gemm_share > 0) g.set_gemm_share(node_of[i * S + k], o.gemm_share);
      }
      continue;
    }
    const auto& role = roles[o.role];
    inst_deps.assign(role.groups.size(), {});
    inst_order.clear();
    std::vector<char> seen(role.groups.size(), 0);
    for (std::uint64_t k = 0; k < S; ++k) {
      const std::uint32_t gi = role.of_rank[k];
      if (!seen[gi]) {
        seen[gi] = 1;
        inst_order.push_back(gi);
      }
      for (const std::uint32_t d : p.deps(i)) inst_deps[gi].push_back(node_of[d * S + k]);
    }
    std::vector<NodeId> inst_node(role.groups.size(), 0);
    for (const std::uint32_t gi : inst_order) {
      inst_node[gi] = g.add_collective(role_group_id[o.role][gi], o.stream, o.op, o.size_bytes, time_of(i, gi),
                                       inst_deps[gi], o.name);
    }
    for (std::uint64_t k = 0; k < S; ++k) node_of[i * S + k] = inst_node[role.of_rank[k]];
  }
  return inst;
}

bool uses_runner(const ProgramInstance& inst, CommModel& comm) {
  const auto runner = comm.concurrent_runner();
  return runner != nullptr && (runner->time_varying() || !collectives_serialised(inst.graph));
}

void run_instance(const ProgramInstance& inst, const StepConfig& c, CommModel& comm, std::span<const double> scale,
                  StepResult& r, Executor* reuse, const CommContention& contention) {
  run_task_graph(inst.graph, inst.ranks, inst.folded, c, comm, r, false, scale, reuse, contention);
}

CommContention step_contention(const compute::Device& dev, const StepConfig& c) {
  if (c.measured_compute || c.strategy == Strategy::trace) return {};
  CommContention out = CommContention::of_device(dev);
  for (const auto* d : c.rank_devices) {  // heterogeneous ranks: each its own device's units
    const auto x = CommContention::of_device(d != nullptr ? *d : dev);
    out.per_rank.push_back({x.units, x.comm_units, x.persistent ? 1U : 0U, x.p2p_units});
  }
  return out;
}

void run_task_graph(const TaskGraph& g, std::uint64_t R, bool fold, const StepConfig& c, CommModel& comm, StepResult& r,
                    bool label_by_group, std::span<const double> scale, Executor* reuse,
                    const CommContention& contention) {
  sim::Simulator sim;  // before the runner, whose network and runs refer to it
  // Timers where collectives cannot overlap; the concurrent runner (flow) where they can.
  std::unique_ptr<CollectiveRunner> runner = comm.concurrent_runner();
  // (A time-varying runner, timed faults: every collective on it, serialised or not.)
  if (runner && !runner->time_varying() && collectives_serialised(g)) runner.reset();
  CollectiveRunner* use = runner.get();
  std::unique_ptr<Executor> own;
  Executor* ex = reuse;
  if (ex == nullptr || use != nullptr) {
    own = std::make_unique<Executor>(g, use);
    ex = own.get();
  }
  ex->set_compute_scale(scale);
  ex->set_comm_contention(contention);
  const ExecResult res = ex->run(sim);
  const std::size_t S = g.ranks().size();
  const auto& sim_ranks = g.ranks();

  // Per-rank figures (sums in node order, as the former list scheduler summed them).
  std::vector<RankResult> pr(S);
  std::vector<Time> rank_end(S, Time::zero());
  auto on_rank = [&](NodeId n, auto&& fn) { g.for_each_rank(n, fn); };
  r.comm_s = 0;
  r.comm_bytes = 0;
  r.collectives = 0;
  r.timeline.clear();
  for (NodeId n = 0; n < g.size(); ++n) {
    const auto& node = g.node(n);
    // A run on the shared network, and a send/recv pair (the recv has no duration of its
    // own), take what the execution says; timers their duration.
    // Under contention, compute takes what the execution says too (scale included).
    const bool measured = (node.kind == NodeKind::collective && use != nullptr) || node.kind == NodeKind::send ||
                          node.kind == NodeKind::recv || (node.kind == NodeKind::compute && contention.active());
    double d = measured ? (res.end[n] - res.start[n]).to_seconds() : node.duration_s;
    if (node.kind == NodeKind::compute && !scale.empty() && !measured) {
      d *= scale[static_cast<std::size_t>(g.rank_index(node.rank))];
    }
    on_rank(n, [&](std::size_t k) {
      rank_end[k] = std::max(rank_end[k], res.end[n]);
      auto& x = pr[k];
      switch (node.phase) {
        case NodePhase::forward: x.forward_s += d; break;
        case NodePhase::backward: x.backward_s += d; break;
        case NodePhase::update: x.update_s += d; break;
        case NodePhase::comm: x.comm_s += d; break;
      }
      if (k == 0 && node.kind == NodeKind::collective) {
        const auto gs = g.groups()[node.group].ranks.size();
        r.comm_bytes += static_cast<double>(node.size_bytes) * coll::busbw_factor(node.op, gs);
        ++r.collectives;
      }
    });
    if (c.record_timeline) {
      on_rank(n, [&](std::size_t k) {
        std::string label = stream_name(node.stream);
        if (label_by_group && node.kind == NodeKind::collective) label = "comm " + g.groups()[node.group].name;
        if (label_by_group && (node.kind == NodeKind::send || node.kind == NodeKind::recv)) label = "p2p";
        r.timeline.push_back({std::move(label), g.name(n), res.start[n].to_seconds(), res.end[n].to_seconds(),
                              sim_ranks[k], node.stream});
      });
    }
  }
  std::size_t worst = 0;
  for (std::size_t k = 0; k < S; ++k) {
    auto& x = pr[k];
    x.rank = sim_ranks[k];
    x.folded = fold ? R : 1;
    x.step_time_s = rank_end[k].to_seconds();
    x.exposed_comm_s = std::max(0.0, x.step_time_s - x.forward_s - x.backward_s - x.update_s);
    if (rank_end[k] > rank_end[worst]) worst = k;
  }
  const auto& w = pr[worst];
  r.step_time_s = w.step_time_s;
  r.forward_s = w.forward_s;
  r.backward_s = w.backward_s;
  r.update_s = w.update_s;
  r.exposed_comm_s = w.exposed_comm_s;
  r.comm_s = w.comm_s;
  r.ranks = R;
  r.ranks_simulated = S;
  r.events = res.events;
  r.per_rank = std::move(pr);
}

void execute_program(const RankProgram& p, const StepConfig& c, CommModel& comm, StepResult& r,
                     const CommContention& contention) {
  const ProgramInstance inst = instantiate_program(p, c, comm);
  std::vector<double> scale;
  if (!c.compute_scale.empty()) {
    // Factors of the simulated ranks (a folded graph's representative: rank 0's).
    for (const int rank : inst.graph.ranks()) {
      const auto k = static_cast<std::size_t>(rank);
      scale.push_back(k < c.compute_scale.size() ? c.compute_scale[k] : 1.0);
    }
  }
  run_instance(inst, c, comm, scale, r, nullptr, contention);
}

}  // namespace shardsim::step
