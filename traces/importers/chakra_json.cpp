// Chakra JSON-feeder form -> ChakraTrace. Field names as read by Chakra's JSON feeder
// (mlcommons/chakra src/feeder/json_node.cpp): Id, Name, NodeType, ctrlDeps, data_deps,
// runtime (us), is_cpu_op, and for communication nodes tensor_size, comm_type, comm_priority,
// comm_size, comm_src, comm_dst, comm_tag. Keys we do not know are ignored (the feeder does
// the same), so files from newer converters still load.
#include <fmt/format.h>

#include "sim/error.hpp"
#include "traces/importers/chakra.hpp"
#include "traces/importers/json_util.hpp"

namespace shardsim::importers {

namespace {

std::vector<std::uint64_t> id_list(const nlohmann::json& v, const std::string& where) {
  if (!v.is_array()) throw ConfigError(where, v.dump(), "an array of node ids");
  std::vector<std::uint64_t> ids;
  ids.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) ids.push_back(json_uint(v[i], fmt::format("{}/{}", where, i)));
  return ids;
}

}  // namespace

ChakraTrace decode_chakra_json(std::string_view text, const std::string& source) {
  const nlohmann::json doc = parse_json(text, source);
  if (!doc.is_object() || !doc.contains("workload_graph")) {
    throw ConfigError(source, "no \"workload_graph\" key", "a Chakra JSON object with a workload_graph array");
  }
  const auto& graph = doc.at("workload_graph");
  if (!graph.is_array()) {
    throw ConfigError(source + "/workload_graph", graph.type_name(), "an array of nodes");
  }
  ChakraTrace trace;
  trace.source = source;
  trace.version = "json";
  trace.nodes.reserve(graph.size());
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const auto& j = graph[i];
    const std::string base = fmt::format("{}/workload_graph/{}", source, i);
    if (!j.is_object()) throw ConfigError(base, j.type_name(), "a node object");
    for (const char* key : {"Id", "NodeType"}) {
      if (!j.contains(key)) throw ConfigError(base, fmt::format("missing required key \"{}\"", key), "Id and NodeType");
    }
    auto at = [&](const char* key) { return fmt::format("{}/{}", base, key); };
    ChakraNode n;
    n.offset = i;
    n.id = json_uint(j.at("Id"), at("Id"));
    const std::uint64_t type = json_uint(j.at("NodeType"), at("NodeType"));
    if (type > static_cast<std::uint64_t>(ChakraNodeType::checkpoint)) {
      throw ConfigError(at("NodeType"), fmt::format("unknown node type {}", type),
                        "a NodeType 0..10 (INVALID_NODE ... CHECKPOINT_NODE)");
    }
    n.type = static_cast<ChakraNodeType>(type);
    if (j.contains("Name")) {
      if (!j.at("Name").is_string()) throw ConfigError(at("Name"), j.at("Name").dump(), "a string");
      n.name = j.at("Name").get<std::string>();
    }
    if (j.contains("ctrlDeps")) n.ctrl_deps = id_list(j.at("ctrlDeps"), at("ctrlDeps"));
    if (j.contains("data_deps")) n.data_deps = id_list(j.at("data_deps"), at("data_deps"));
    if (j.contains("runtime")) {
      const double r = json_number(j.at("runtime"), at("runtime"));
      if (r < 0) throw ConfigError(at("runtime"), fmt::format("negative duration {} us", r), "a duration >= 0");
      if (r > 0) n.duration_us = r;
    }
    if (j.contains("is_cpu_op")) {
      const auto& v = j.at("is_cpu_op");
      if (v.is_boolean()) {
        n.is_cpu_op = v.get<bool>();
      } else {
        n.is_cpu_op = json_int(v, at("is_cpu_op")) != 0;
      }
    }
    if (j.contains("comm_type")) {
      const std::int64_t v = json_int(j.at("comm_type"), at("comm_type"));
      n.comm_kind = comm_kind_from_chakra(v);
      if (!n.comm_kind) {
        throw ConfigError(at("comm_type"), fmt::format("unknown comm_type {}", v),
                          "a CollectiveCommType 0..9 (ALL_REDUCE ... BARRIER)");
      }
    }
    if (j.contains("comm_size")) n.comm_size_bytes = json_uint(j.at("comm_size"), at("comm_size"));
    if (j.contains("tensor_size")) n.tensor_size_bytes = json_uint(j.at("tensor_size"), at("tensor_size"));
    if (j.contains("num_ops")) n.num_ops = json_uint(j.at("num_ops"), at("num_ops"));
    if (j.contains("comm_src")) n.comm_src = json_int(j.at("comm_src"), at("comm_src"));
    if (j.contains("comm_dst")) n.comm_dst = json_int(j.at("comm_dst"), at("comm_dst"));
    if (j.contains("comm_tag")) n.comm_tag = json_int(j.at("comm_tag"), at("comm_tag"));
    if (j.contains("comm_priority")) n.comm_priority = json_int(j.at("comm_priority"), at("comm_priority"));
    if (j.contains("pg_name")) {
      if (!j.at("pg_name").is_string()) throw ConfigError(at("pg_name"), j.at("pg_name").dump(), "a string");
      n.pg_name = j.at("pg_name").get<std::string>();
    }
    trace.nodes.push_back(std::move(n));
  }
  validate_chakra(trace, true);
  return trace;
}

}  // namespace shardsim::importers
