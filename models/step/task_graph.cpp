#include "models/step/task_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "sim/error.hpp"

namespace shardsim::step {

TaskGraph::TaskGraph(std::vector<int> ranks, std::uint32_t streams) : ranks_(std::move(ranks)), streams_(streams) {
  int top = -1;
  for (const int r : ranks_) top = std::max(top, r);
  rank_index_.assign(static_cast<std::size_t>(top + 1), -1);
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    if (ranks_[i] >= 0) rank_index_[static_cast<std::size_t>(ranks_[i])] = static_cast<int>(i);
  }
}

std::uint32_t TaskGraph::add_group(ProcessGroup g) {
  auto& m = sim_members_.emplace_back();
  for (const int r : g.ranks) {
    if (rank_index(r) >= 0) m.push_back(r);
  }
  groups_.push_back(std::move(g));
  return static_cast<std::uint32_t>(groups_.size() - 1);
}

void TaskGraph::reserve(std::size_t nodes, std::size_t deps) {
  nodes_.reserve(nodes);
  deps_.reserve(deps);
}

void TaskGraph::set_gemm_share(NodeId n, double share) {
  nodes_.at(n).gemm_share = share > 0 ? static_cast<float>(std::min(share, 1.0)) : 0.0F;
}

NodeId TaskGraph::push(TaskNode n, std::span<const NodeId> deps, std::string name) {
  n.deps_begin = static_cast<std::uint32_t>(deps_.size());
  deps_.insert(deps_.end(), deps.begin(), deps.end());
  n.deps_end = static_cast<std::uint32_t>(deps_.size());
  if (!name.empty()) {
    n.name = static_cast<std::uint32_t>(names_.size());
    names_.push_back(std::move(name));
  }
  nodes_.push_back(n);
  return static_cast<NodeId>(nodes_.size() - 1);
}

NodeId TaskGraph::add_compute(int rank, std::uint32_t stream, NodePhase phase, double duration_s,
                              std::span<const NodeId> deps, std::string name) {
  TaskNode n;
  n.kind = NodeKind::compute;
  n.phase = phase;
  n.rank = rank;
  n.stream = stream;
  n.duration_s = duration_s;
  return push(n, deps, std::move(name));
}

NodeId TaskGraph::add_collective(std::uint32_t group, std::uint32_t stream, coll::OpKind op, std::uint64_t size_bytes,
                                 double duration_s, std::span<const NodeId> deps, std::string name) {
  TaskNode n;
  n.kind = NodeKind::collective;
  n.phase = NodePhase::comm;
  n.op = op;
  n.group = group;
  n.stream = stream;
  n.size_bytes = size_bytes;
  n.duration_s = duration_s;
  return push(n, deps, std::move(name));
}

NodeId TaskGraph::add_send(int rank, std::uint32_t stream, int peer, std::uint64_t bytes, std::uint64_t tag,
                           double duration_s, std::span<const NodeId> deps, std::string name) {
  TaskNode n;
  n.kind = NodeKind::send;
  n.phase = NodePhase::comm;
  n.rank = rank;
  n.peer = peer;
  n.stream = stream;
  n.size_bytes = bytes;
  n.tag = tag;
  n.duration_s = duration_s;
  return push(n, deps, std::move(name));
}

NodeId TaskGraph::add_recv(int rank, std::uint32_t stream, int peer, std::uint64_t bytes, std::uint64_t tag,
                           std::span<const NodeId> deps, std::string name) {
  TaskNode n;
  n.kind = NodeKind::recv;
  n.phase = NodePhase::comm;
  n.rank = rank;
  n.peer = peer;
  n.stream = stream;
  n.size_bytes = bytes;
  n.tag = tag;
  return push(n, deps, std::move(name));
}

std::string TaskGraph::describe(NodeId n) const {
  const auto& s = name(n);
  return s.empty() ? fmt::format("node {}", n) : fmt::format("op '{}'", s);
}

void TaskGraph::validate(std::size_t topology_devices) const {
  const auto devices = static_cast<int>(topology_devices);
  for (const int r : ranks_) {
    if (r < 0 || r >= devices) {
      throw ConfigError("task graph", fmt::format("rank {} on a topology of {} devices", r, topology_devices),
                        fmt::format("ranks 0..{}", devices - 1));
    }
  }
  std::vector<char> used(groups_.size(), 0);
  for (NodeId i = 0; i < nodes_.size(); ++i) {
    const auto& n = nodes_[i];
    if (n.stream >= streams_) {
      throw ConfigError(describe(i), fmt::format("stream {}", n.stream), fmt::format("a stream below {}", streams_));
    }
    for (const NodeId d : deps(i)) {
      if (d >= nodes_.size()) {
        throw ConfigError(describe(i), fmt::format("a dependency on node {}", d),
                          fmt::format("dependencies on nodes 0..{}", nodes_.size() - 1));
      }
    }
    if (n.kind == NodeKind::collective) {
      if (used[n.group]) continue;
      used[n.group] = 1;
      const auto& g = groups_[n.group];
      std::vector<char> seen(topology_devices, 0);
      for (const int r : g.ranks) {
        if (r < 0 || r >= devices) {
          throw ConfigError(describe(i),
                            fmt::format("process group '{}' names rank {}, outside the topology's {} devices", g.name, r,
                                        topology_devices),
                            fmt::format("ranks 0..{}", devices - 1));
        }
        if (seen[static_cast<std::size_t>(r)]) {
          throw ConfigError(describe(i), fmt::format("process group '{}' names rank {} twice", g.name, r),
                            "distinct ranks");
        }
        seen[static_cast<std::size_t>(r)] = 1;
      }
      continue;
    }
    if (rank_index(n.rank) < 0) {
      throw ConfigError(describe(i), fmt::format("rank {}, which the graph does not simulate", n.rank),
                        "a rank of the graph");
    }
    if ((n.kind == NodeKind::send || n.kind == NodeKind::recv) && (n.peer < 0 || n.peer >= devices)) {
      throw ConfigError(describe(i), fmt::format("peer rank {} on a topology of {} devices", n.peer, topology_devices),
                        fmt::format("ranks 0..{}", devices - 1));
    }
  }

  // Point-to-point: the n-th send of (src, dst, tag) pairs with the n-th recv of it.
  std::map<std::tuple<int, int, std::uint64_t>, std::pair<std::vector<NodeId>, std::vector<NodeId>>> p2p;
  for (NodeId i = 0; i < nodes_.size(); ++i) {
    const auto& n = nodes_[i];
    if (n.kind == NodeKind::send) p2p[{n.rank, n.peer, n.tag}].first.push_back(i);
    if (n.kind == NodeKind::recv) p2p[{n.peer, n.rank, n.tag}].second.push_back(i);
  }
  NodeId bad = static_cast<NodeId>(nodes_.size());
  for (const auto& [key, sr] : p2p) {
    const auto& [sends, recvs] = sr;
    if (sends.size() > recvs.size()) bad = std::min(bad, sends[recvs.size()]);
    if (recvs.size() > sends.size()) bad = std::min(bad, recvs[sends.size()]);
  }
  if (bad < nodes_.size()) {
    const auto& n = nodes_[bad];
    if (n.kind == NodeKind::send) {
      throw ConfigError(describe(bad),
                        fmt::format("send of {} bytes from rank {} to rank {} (tag {}) without a matching receive",
                                    n.size_bytes, n.rank, n.peer, n.tag),
                        fmt::format("a recv on rank {} from rank {} with tag {}", n.peer, n.rank, n.tag));
    }
    throw ConfigError(describe(bad),
                      fmt::format("receive on rank {} from rank {} (tag {}) without a matching send", n.rank, n.peer,
                                  n.tag),
                      fmt::format("a send on rank {} to rank {} with tag {}", n.peer, n.rank, n.tag));
  }

  // Cycles: Kahn's algorithm over dependencies and stream order (the previous node of each
  // stream a node is on is a predecessor too).
  const std::size_t nn = nodes_.size();
  std::vector<std::vector<NodeId>> preds(nn);
  std::vector<NodeId> last(ranks_.size() * streams_, static_cast<NodeId>(nn));
  auto on_stream = [&](NodeId i, int device) {
    const int ri = rank_index(device);
    if (ri < 0) return;
    auto& l = last[static_cast<std::size_t>(ri) * streams_ + nodes_[i].stream];
    if (l != nn) preds[i].push_back(l);
    l = i;
  };
  for (NodeId i = 0; i < nn; ++i) {
    for (const NodeId d : deps(i)) preds[i].push_back(d);
    if (nodes_[i].kind == NodeKind::collective) {
      for (const int r : sim_members_[nodes_[i].group]) on_stream(i, r);
    } else {
      on_stream(i, nodes_[i].rank);
    }
  }
  std::vector<std::uint32_t> indeg(nn, 0);
  std::vector<std::vector<NodeId>> succ(nn);
  for (NodeId i = 0; i < nn; ++i) {
    for (const NodeId p : preds[i]) succ[p].push_back(i);
    indeg[i] = static_cast<std::uint32_t>(preds[i].size());
  }
  std::vector<NodeId> ready;
  for (NodeId i = 0; i < nn; ++i) {
    if (indeg[i] == 0) ready.push_back(i);
  }
  std::size_t done = 0;
  while (!ready.empty()) {
    const NodeId i = ready.back();
    ready.pop_back();
    ++done;
    for (const NodeId s : succ[i]) {
      if (--indeg[s] == 0) ready.push_back(s);
    }
  }
  if (done == nn) return;
  // Walk back from a node left over along left-over predecessors until one repeats: it lies
  // on a cycle, which is then listed in dependency order.
  NodeId cur = 0;
  while (indeg[cur] == 0) ++cur;
  std::vector<std::size_t> seen_at(nn, nn);
  std::vector<NodeId> path;
  while (seen_at[cur] == nn) {
    seen_at[cur] = path.size();
    path.push_back(cur);
    for (const NodeId p : preds[cur]) {
      if (indeg[p] != 0) {
        cur = p;
        break;
      }
    }
  }
  std::vector<NodeId> cycle(path.begin() + static_cast<std::ptrdiff_t>(seen_at[cur]), path.end());
  std::reverse(cycle.begin(), cycle.end());
  std::string text;
  for (const NodeId c : cycle) text += describe(c) + " -> ";
  text += describe(cycle.front());
  throw ConfigError(describe(cycle.front()), fmt::format("dependency cycle {}", text),
                    "dependencies and stream order without cycles");
}

}  // namespace shardsim::step
