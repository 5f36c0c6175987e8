// The `trace` strategy as a graph builder: the recorded ops, as recorded (replay.hpp).
#include "models/step/replay.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "models/step/graph_builders.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"

namespace shardsim::step::detail {

namespace {

const char* phase_name(OpPhase p) {
  switch (p) {
    case OpPhase::forward: return "forward";
    case OpPhase::backward: return "backward";
    case OpPhase::update: return "update";
  }
  return "?";
}

NodePhase node_phase(OpPhase p) {
  switch (p) {
    case OpPhase::forward: return NodePhase::forward;
    case OpPhase::backward: return NodePhase::backward;
    case OpPhase::update: return NodePhase::update;
  }
  return NodePhase::forward;
}

}  // namespace

RankProgram build_replay(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm,
                         StepResult&) {
  const auto math = c.precision == opt::Precision::mixed ? compute::MathType::bf16 : compute::MathType::fp32;
  const std::size_t n = w.recorded.size();
  const auto limit = comm.devices();
  RankProgram p(c.dp);
  std::map<std::uint32_t, std::uint32_t> role_of_size;  // group size -> role
  std::vector<std::uint32_t> op_of(n, 0);
  std::vector<std::uint32_t> deps;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& o = w.recorded[i];
    deps.clear();
    for (const auto d : o.deps) {
      if (d >= i) {
        throw ConfigError(fmt::format("{}/ops/{}", w.name, i), fmt::format("dependency on op {} in op '{}'", d, o.name),
                          "dependencies on earlier ops");
      }
      deps.push_back(op_of[d]);
    }
    if (o.collective) {
      const auto& col = *o.collective;
      if (limit && col.group_size > *limit) {
        throw ConfigError("--topology",
                          fmt::format("{} devices, but op '{}' (ops/{} of trace '{}') runs {} on {} ranks", *limit, o.name,
                                      i, w.name, coll::to_string(col.kind), col.group_size),
                          fmt::format("a topology with at least {} devices (a trace collective of g ranks runs on "
                                      "devices 0..g-1)",
                                      col.group_size));
      }
      // Format v1 records a group size g: rank r's group is the block of g ranks holding r,
      // ranks 0..g-1 for rank 0 (as `shardsim collective --ranks g`); a block past the step's
      // ranks (dp not a multiple of g) ends with them.
      auto [it, added] = role_of_size.try_emplace(col.group_size, 0);
      if (added) {
        const std::uint64_t g = std::max<std::uint32_t>(1, col.group_size);
        auto role = blocks_role(fmt::format("g{}", g), c.dp, g);
        for (int k = static_cast<int>(role.groups[0].size()); static_cast<std::uint64_t>(k) < g; ++k) role.groups[0].push_back(k);
        it->second = p.add_role(std::move(role));
      }
      op_of[i] = p.collective(it->second, 1, col.kind, col.size_bytes, deps,
                              c.record_timeline ? fmt::format("{} ({} {}, {} ranks)", o.name, coll::to_string(col.kind),
                                                              units::format_bytes(col.size_bytes), col.group_size)
                                                : std::string());
    } else {
      const double dur = (c.measured_compute && o.measured_s) ? *o.measured_s
                         : o.shape ? compute::op_time_s(dev, *o.shape, math, o.phase == OpPhase::backward)
                                   : dev.op_time_s(o.flops, o.bytes, math);
      op_of[i] = p.compute(node_phase(o.phase), dur, deps,
                           c.record_timeline ? fmt::format("{} ({})", o.name, phase_name(o.phase)) : std::string());
    }
  }
  return p;
}

}  // namespace shardsim::step::detail

namespace shardsim::step::detail {

namespace {

// A node of the per-rank replay graph before it is added (node ids are assigned first, so that
// a collective's dependencies on every member rank are known when it is added).
struct PendingNode {
  NodeKind kind = NodeKind::compute;
  NodePhase phase = NodePhase::forward;
  int rank = -1;
  std::uint32_t stream = 0;
  double duration_s = 0;
  std::size_t op = 0;          ///< the recorded op (a collective: its first member's)
  std::uint32_t group = 0;     ///< collective: index into the graph's groups
  std::vector<NodeId> deps;
};

std::string group_label(const RecordedCollective& c) {
  return c.group_name.empty() ? fmt::format("ranks {}", fmt::join(c.ranks, ",")) : fmt::format("'{}'", c.group_name);
}

}  // namespace

void execute_replay_per_rank(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm,
                             StepResult& r) {
  const auto math = c.precision == opt::Precision::mixed ? compute::MathType::bf16 : compute::MathType::fp32;
  const auto& ops = w.recorded;
  const std::size_t n = ops.size();
  const auto limit = comm.devices();
  auto where = [&](std::size_t i) { return fmt::format("op '{}' (rank {} of trace '{}')", ops[i].name, ops[i].rank, w.name); };

  // Ranks (ascending blocks, as the trace format requires) and their index.
  std::vector<int> ranks;
  for (const auto& o : ops) {
    if (ranks.empty() || ranks.back() != o.rank) ranks.push_back(o.rank);
  }
  const int top = *std::max_element(ranks.begin(), ranks.end());
  // Before sizing anything by rank: a rank beyond the topology (or, without one, beyond 2^24).
  const std::size_t cap = limit.value_or(std::size_t{1} << 24);
  for (std::size_t i = 0; i < n; ++i) {
    if (static_cast<std::size_t>(ops[i].rank) < cap) continue;
    throw ConfigError("--topology", fmt::format("{} devices, but {} runs on rank {}", cap, where(i), ops[i].rank),
                      fmt::format("a topology with at least {} devices (a version 2 trace's rank r runs on device r)",
                                  ops[i].rank + 1));
  }
  std::vector<int> rank_pos(static_cast<std::size_t>(top) + 1, -1);
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    auto& pos = rank_pos[static_cast<std::size_t>(ranks[k])];
    if (pos >= 0) {
      throw ConfigError(w.name, fmt::format("the ops of rank {} in two separate runs", ranks[k]),
                        "each rank's ops together, ranks in ascending order (trace format version 2)");
    }
    pos = static_cast<int>(k);
  }
  auto in_trace = [&](int rk) { return rk >= 0 && rk <= top && rank_pos[static_cast<std::size_t>(rk)] >= 0; };
  auto check_device = [&](std::size_t i, int rk, const char* what) {
    if (limit && static_cast<std::size_t>(rk) >= *limit) {
      throw ConfigError("--topology",
                        fmt::format("{} devices, but {} {} rank {}", *limit, where(i), what, rk),
                        fmt::format("a topology with at least {} devices (a version 2 trace's rank r runs on device r)",
                                    rk + 1));
    }
    if (!in_trace(rk)) {
      throw ConfigError(fmt::format("{}/{}", w.name, where(i)),
                        fmt::format("{} rank {}, which the trace does not record (its ranks: {})", what, rk,
                                    fmt::join(ranks, ",")),
                        "peers and process group members that are ranks of the trace");
    }
  };

  // Process groups: one graph group per distinct rank list; each on a communication stream of
  // its own on every member (NCCL runs each communicator on its own stream), groups sharing a
  // rank on different streams (greedy colouring in order of first use).
  std::map<std::vector<int>, std::uint32_t> group_of;
  std::vector<std::vector<int>> groups;
  std::vector<std::string> group_names;
  std::vector<std::uint32_t> group_stream;
  std::vector<std::vector<char>> stream_used(ranks.size());
  bool any_p2p = false;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& o = ops[i];
    check_device(i, o.rank, "runs on");
    if (o.p2p) {
      any_p2p = true;
      check_device(i, o.p2p->peer, o.p2p->send ? "sends to" : "receives from");
    }
    if (!o.collective) continue;
    const auto& col = *o.collective;
    if (col.ranks.empty()) {
      throw ConfigError(fmt::format("{}/{}", w.name, where(i)), "a collective without a process group",
                        "the ranks of its process group (every collective of a version 2 trace names one)");
    }
    if (group_of.count(col.ranks) != 0) continue;
    for (const int m : col.ranks) check_device(i, m, "has a process group member on");
    std::uint32_t s = 1;
    auto taken = [&](std::uint32_t st) {
      for (const int m : col.ranks) {
        const auto& u = stream_used[static_cast<std::size_t>(rank_pos[static_cast<std::size_t>(m)])];
        if (st < u.size() && u[st]) return true;
      }
      return false;
    };
    while (taken(s)) ++s;
    for (const int m : col.ranks) {
      auto& u = stream_used[static_cast<std::size_t>(rank_pos[static_cast<std::size_t>(m)])];
      if (u.size() <= s) u.resize(s + 1, 0);
      u[s] = 1;
    }
    group_of.emplace(col.ranks, static_cast<std::uint32_t>(groups.size()));
    groups.push_back(col.ranks);
    group_names.push_back(col.group_name.empty() ? fmt::format("ranks {}", fmt::join(col.ranks, ",")) : col.group_name);
    group_stream.push_back(s);
  }
  std::uint32_t streams = 1;
  for (const auto s : group_stream) streams = std::max(streams, s + 1);
  const std::uint32_t p2p_stream = streams;
  if (any_p2p) ++streams;

  // Pass 1: node ids. The k-th collective a rank issues on a group is the k-th collective of
  // that group (NCCL's rule: a communicator's collectives match in issue order); its members
  // must agree on kind and size.
  std::vector<NodeId> node_of(n, 0);
  std::vector<PendingNode> nodes;
  nodes.reserve(n);
  std::vector<std::vector<NodeId>> instances(groups.size());     // group -> its k-th collective's node
  std::vector<std::vector<std::uint32_t>> issued(groups.size());  // group -> per member position: count
  std::vector<std::uint32_t> count(groups.size(), 0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& o = ops[i];
    if (i > 0 && o.rank != ops[i - 1].rank) std::fill(count.begin(), count.end(), 0);
    if (!o.collective) {
      PendingNode p;
      p.rank = o.rank;
      p.op = i;
      if (o.p2p) {
        p.kind = o.p2p->send ? NodeKind::send : NodeKind::recv;
        p.phase = NodePhase::comm;
        p.stream = p2p_stream;
        // A transfer of S bytes from one rank to another: a broadcast of S on the pair, rooted
        // at the sender (DESIGN 2: broadcast S = the bytes the root sends), costed by the
        // collectives layer on the actual route.
        if (o.p2p->send) p.duration_s = comm.time_s(coll::OpKind::broadcast, o.p2p->size_bytes, {o.rank, o.p2p->peer});
      } else {
        p.phase = node_phase(o.phase);
        p.duration_s = (c.measured_compute && o.measured_s) ? *o.measured_s : dev.op_time_s(o.flops, o.bytes, math);
      }
      node_of[i] = static_cast<NodeId>(nodes.size());
      nodes.push_back(std::move(p));
      continue;
    }
    const auto& col = *o.collective;
    const std::uint32_t gi = group_of.at(col.ranks);
    const std::uint32_t k = count[gi]++;
    if (k == instances[gi].size()) {
      PendingNode p;
      p.kind = NodeKind::collective;
      p.phase = NodePhase::comm;
      p.stream = group_stream[gi];
      p.op = i;
      p.group = gi;
      p.duration_s = col.ranks.size() > 1 ? comm.time_s(col.kind, col.size_bytes, col.ranks) : 0.0;
      instances[gi].push_back(static_cast<NodeId>(nodes.size()));
      nodes.push_back(std::move(p));
    } else {
      const auto& first = *ops[nodes[instances[gi][k]].op].collective;
      if (first.kind != col.kind || first.size_bytes != col.size_bytes) {
        const auto& f = ops[nodes[instances[gi][k]].op];
        throw ConfigError(fmt::format("{}/{}", w.name, where(i)),
                          fmt::format("collective {} of process group {} is {} of {} bytes here, {} of {} bytes in op '{}' "
                                      "on rank {}",
                                      k + 1, group_label(col), coll::to_string(col.kind), col.size_bytes,
                                      coll::to_string(first.kind), first.size_bytes, f.name, f.rank),
                          "the same collective on every member (the n-th collective of a group matches on every rank)");
      }
    }
    node_of[i] = instances[gi][k];
    if (issued[gi].empty()) issued[gi].assign(col.ranks.size(), 0);
    const auto pos = static_cast<std::size_t>(std::find(col.ranks.begin(), col.ranks.end(), o.rank) - col.ranks.begin());
    issued[gi][pos] = k + 1;
  }
  // Every member issues every collective of its groups.
  for (std::uint32_t gi = 0; gi < groups.size(); ++gi) {
    for (std::size_t m = 0; m < groups[gi].size(); ++m) {
      const std::uint32_t have = issued[gi].empty() ? 0 : issued[gi][m];
      if (have == instances[gi].size()) continue;
      const std::size_t i = nodes[instances[gi][have]].op;
      throw ConfigError(fmt::format("{}/{}", w.name, where(i)),
                        fmt::format("collective {} of process group {} ({} on ranks {}), which rank {} never issues "
                                    "(it issues {} of the group's {})",
                                    have + 1, group_label(*ops[i].collective), coll::to_string(ops[i].collective->kind),
                                    fmt::join(groups[gi], ","), groups[gi][m], have, instances[gi].size()),
                        "every member of a process group issuing each of its collectives");
    }
  }
  // Pass 2: dependencies (a collective waits for its members' dependencies), then the graph.
  for (std::size_t i = 0; i < n; ++i) {
    auto& deps = nodes[node_of[i]].deps;
    for (const auto d : ops[i].deps) {
      if (d >= i || ops[d].rank != ops[i].rank) {
        throw ConfigError(fmt::format("{}/{}", w.name, where(i)), fmt::format("dependency on op {}", d),
                          "dependencies on earlier ops of the same rank");
      }
      deps.push_back(node_of[d]);
    }
  }
  TaskGraph g(ranks, streams);
  std::size_t dep_count = 0;
  for (const auto& p : nodes) dep_count += p.deps.size();
  g.reserve(nodes.size(), dep_count);
  for (std::uint32_t gi = 0; gi < groups.size(); ++gi) g.add_group({group_names[gi], groups[gi]});
  for (const auto& p : nodes) {
    const auto& o = ops[p.op];
    // Names always: graph errors (cycles, unmatched transfers) name the op.
    std::string name = p.kind == NodeKind::collective
                           ? fmt::format("{} ({} {}, {})", o.name, coll::to_string(o.collective->kind),
                                         units::format_bytes(o.collective->size_bytes), group_names[p.group])
                           : o.name;
    switch (p.kind) {
      case NodeKind::compute: g.add_compute(p.rank, p.stream, p.phase, p.duration_s, p.deps, std::move(name)); break;
      case NodeKind::collective:
        g.add_collective(p.group, p.stream, o.collective->kind, o.collective->size_bytes, p.duration_s, p.deps,
                         std::move(name));
        break;
      case NodeKind::send:
        g.add_send(p.rank, p.stream, o.p2p->peer, o.p2p->size_bytes, o.p2p->tag, p.duration_s, p.deps, std::move(name));
        break;
      case NodeKind::recv:
        g.add_recv(p.rank, p.stream, o.p2p->peer, o.p2p->size_bytes, o.p2p->tag, p.deps, std::move(name));
        break;
    }
  }
  // Cycles (collectives issued in different orders on different ranks), unmatched sends and
  // receives: errors naming the op.
  g.validate(limit.value_or(static_cast<std::size_t>(top) + 1));
  run_task_graph(g, ranks.size(), false, c, comm, r, true);
}

}  // namespace shardsim::step::detail
