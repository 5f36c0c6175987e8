// Checks shared by both Chakra forms. Dependency cycles are found with Kahn's algorithm
// (Kahn 1962, "Topological sorting of large networks"): nodes left over after it form or
// depend on a cycle; walking dependencies among them from any leftover node must revisit one.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "sim/error.hpp"
#include "traces/importers/chakra.hpp"

namespace shardsim::importers {

const char* to_string(ChakraNodeType t) {
  switch (t) {
    case ChakraNodeType::invalid: return "INVALID_NODE";
    case ChakraNodeType::metadata: return "METADATA_NODE";
    case ChakraNodeType::mem_load: return "MEM_LOAD_NODE";
    case ChakraNodeType::mem_store: return "MEM_STORE_NODE";
    case ChakraNodeType::comp: return "COMP_NODE";
    case ChakraNodeType::comm_send: return "COMM_SEND_NODE";
    case ChakraNodeType::comm_recv: return "COMM_RECV_NODE";
    case ChakraNodeType::comm_coll: return "COMM_COLL_NODE";
    case ChakraNodeType::storage: return "STORAGE_NODE";
    case ChakraNodeType::batch: return "BATCH_NODE";
    case ChakraNodeType::checkpoint: return "CHECKPOINT_NODE";
  }
  return "?";
}

namespace {

/// "c10d::broadcast_(0)" -> broadcast; "ncclKernel_Broadcast_RING_LL_Sum_int8_t(...)" -> broadcast.
std::optional<CommKind> kind_from_name(std::string_view name) {
  if (auto k = comm_kind_from_nccl_kernel(name)) return k;
  if (const auto p = name.find('('); p != std::string_view::npos) name = name.substr(0, p);
  return comm_kind_from_pytorch(name);
}

}  // namespace

void validate_chakra(ChakraTrace& trace, bool json_form) {
  const auto& source = trace.source;
  std::unordered_map<std::uint64_t, std::size_t> index;
  index.reserve(trace.nodes.size());
  for (std::size_t i = 0; i < trace.nodes.size(); ++i) {
    auto& n = trace.nodes[i];
    const std::string where = fmt::format("{}: node {}", source, n.id);
    if (!index.emplace(n.id, i).second) {
      throw ConfigError(where, "duplicate node id", "unique node ids");
    }
    if (n.type == ChakraNodeType::comm_coll && json_form) {
      if (!n.comm_kind) n.comm_kind = kind_from_name(n.name);
      if (!n.comm_kind) {
        throw ConfigError(where, fmt::format("COMM_COLL_NODE without comm_type, and its name '{}' names no collective", n.name),
                          "comm_type or a collective name (c10d::all_reduce_, ncclKernel_AllReduce_...)");
      }
    } else if (n.type == ChakraNodeType::comm_coll) {
      if (!n.comm_kind) throw ConfigError(where, "COMM_COLL_NODE without attribute comm_type", "comm_type and comm_size");
      if (!n.comm_size_bytes) throw ConfigError(where, "COMM_COLL_NODE without attribute comm_size", "comm_type and comm_size");
    }
    if (!json_form && (n.type == ChakraNodeType::comm_send || n.type == ChakraNodeType::comm_recv) && !n.comm_size_bytes) {
      throw ConfigError(where, fmt::format("{} without attribute comm_size", to_string(n.type)), "comm_size");
    }
    if (n.duration_us && !(*n.duration_us >= 0)) {
      throw ConfigError(where, fmt::format("negative duration {} us", *n.duration_us), "a duration >= 0");
    }
  }
  // Drop dependencies on ids this file does not define.
  for (auto& n : trace.nodes) {
    for (auto* deps : {&n.ctrl_deps, &n.data_deps}) {
      const auto before = deps->size();
      std::erase_if(*deps, [&](std::uint64_t d) { return !index.contains(d); });
      trace.dropped_deps += before - deps->size();
    }
  }
  // Kahn: in-degree = number of dependencies; children in CSR form.
  const std::size_t n_nodes = trace.nodes.size();
  std::vector<std::uint32_t> indegree(n_nodes, 0);
  std::vector<std::size_t> start(n_nodes + 1, 0);
  for (std::size_t i = 0; i < n_nodes; ++i) {
    for (const auto* deps : {&trace.nodes[i].ctrl_deps, &trace.nodes[i].data_deps}) {
      for (auto d : *deps) {
        ++start[index.at(d) + 1];
        ++indegree[i];
      }
    }
  }
  for (std::size_t i = 0; i < n_nodes; ++i) start[i + 1] += start[i];
  std::vector<std::size_t> children(start.back());
  std::vector<std::size_t> fill(start.begin(), start.end() - 1);
  for (std::size_t i = 0; i < n_nodes; ++i) {
    for (const auto* deps : {&trace.nodes[i].ctrl_deps, &trace.nodes[i].data_deps}) {
      for (auto d : *deps) children[fill[index.at(d)]++] = i;
    }
  }
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < n_nodes; ++i) {
    if (indegree[i] == 0) ready.push_back(i);
  }
  std::size_t done = 0;
  while (!ready.empty()) {
    const std::size_t u = ready.back();
    ready.pop_back();
    ++done;
    for (std::size_t k = start[u]; k < start[u + 1]; ++k) {
      if (--indegree[children[k]] == 0) ready.push_back(children[k]);
    }
  }
  if (done == n_nodes) return;
  // Walk from the first leftover node along leftover dependencies until a node repeats.
  std::size_t u = 0;
  while (indegree[u] == 0) ++u;
  std::vector<std::size_t> seen_at(n_nodes, n_nodes);
  std::vector<std::size_t> path;
  while (seen_at[u] == n_nodes) {
    seen_at[u] = path.size();
    path.push_back(u);
    const auto& n = trace.nodes[u];
    std::size_t next = n_nodes;
    for (const auto* deps : {&n.ctrl_deps, &n.data_deps}) {
      for (auto d : *deps) {
        const std::size_t j = index.at(d);
        if (indegree[j] > 0 && next == n_nodes) next = j;
      }
    }
    u = next;
  }
  std::string cycle;
  for (std::size_t k = seen_at[u]; k < path.size(); ++k) cycle += fmt::format("{} -> ", trace.nodes[path[k]].id);
  cycle += fmt::format("{}", trace.nodes[u].id);
  throw ConfigError(fmt::format("{}: node {}", source, trace.nodes[u].id),
                    fmt::format("dependency cycle {} (each node depends on the next)", cycle),
                    "an acyclic dependency graph");
}

}  // namespace shardsim::importers
