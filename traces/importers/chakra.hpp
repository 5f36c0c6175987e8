#pragma once
// Chakra execution traces (MLCommons Chakra, github.com/mlcommons/chakra), decoded into plain
// structs: the protobuf ET stream (schema/protobuf/et_def.proto; one file per rank) and the
// JSON form read by Chakra's JSON feeder (src/feeder/json_node.cpp: "workload_graph").
//
// Units: durations in microseconds as Chakra stores them (Node.duration_micros, JSON
// "runtime"); sizes in bytes (comm_size, tensor_size); num_ops is a FLOP count.
// Errors: ConfigError naming the file and the byte offset (ET) or the JSON pointer / node id.
// Complexity: O(bytes + nodes + edges); no recursion over the graph (safe on 1e7 nodes).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "traces/importers/comm_kind.hpp"

namespace shardsim::importers {

/// Chakra NodeType (et_def.proto): INVALID_NODE=0 ... CHECKPOINT_NODE=10.
enum class ChakraNodeType : std::uint8_t {
  invalid = 0, metadata = 1, mem_load = 2, mem_store = 3, comp = 4, comm_send = 5,
  comm_recv = 6, comm_coll = 7, storage = 8, batch = 9, checkpoint = 10
};
const char* to_string(ChakraNodeType t);  ///< "COMP_NODE", "COMM_COLL_NODE", ...

struct ChakraNode {
  std::uint64_t id = 0;
  std::string name;
  ChakraNodeType type = ChakraNodeType::invalid;
  std::vector<std::uint64_t> ctrl_deps;
  std::vector<std::uint64_t> data_deps;
  std::uint64_t start_time_us = 0;
  std::optional<double> duration_us;  ///< measured runtime; absent when 0 / not given
  std::optional<bool> is_cpu_op;
  std::optional<CommKind> comm_kind;   ///< attr comm_type (collective nodes)
  std::optional<std::uint64_t> comm_size_bytes;
  std::optional<std::uint64_t> num_ops;        ///< FLOPs (roofline input)
  std::optional<std::uint64_t> tensor_size_bytes;
  std::optional<std::string> pg_name;
  std::optional<std::int64_t> comm_src, comm_dst, comm_tag, comm_priority;
  std::uint64_t offset = 0;  ///< byte offset of the node's message (ET) or index (JSON)
};

struct ChakraTrace {
  std::string source;   ///< file name as given
  std::string version;  ///< GlobalMetadata.version (ET) or "json"
  std::vector<ChakraNode> nodes;  ///< file order
  /// Dependencies on ids that no node of this file has (partial traces, cut excerpts). They
  /// are dropped from the nodes and counted here.
  std::size_t dropped_deps = 0;
};

/// Decodes a protobuf ET stream (already inflated). Each message is preceded by its length as
/// a base-128 varint (protobuf's delimited format, at most 5 bytes / 32 bits). The first
/// message is GlobalMetadata, every later one a Node. Validates with validate_chakra().
ChakraTrace decode_chakra_et(std::string_view data, const std::string& source);

/// Decodes the JSON-feeder form: {"workload_graph": [{Id, Name, NodeType, ctrlDeps,
/// data_deps, runtime, is_cpu_op, tensor_size?, comm_type?, comm_size?, ...}], ...}.
ChakraTrace decode_chakra_json(std::string_view text, const std::string& source);

/// Checks what every consumer relies on, throwing ConfigError "<source>: node <id>: ...":
/// unique ids; collective nodes carry comm_type and comm_size (the ET form; in the JSON form
/// both are optional, as in Chakra's JSON feeder: a missing comm_type is taken from the node
/// name, "c10d::broadcast_(0)" or "ncclKernel_Broadcast_...", and a name that names no
/// collective is an error); send/recv nodes carry comm_size (ET); no negative duration; deps
/// on unknown ids are dropped (counted); no dependency cycle ("dependency cycle 3 -> 5 ->
/// 3"). Kahn's algorithm, O(nodes + edges).
void validate_chakra(ChakraTrace& trace, bool json_form);

/// Reads a varint at data[pos] (at most 10 bytes, 64 bits). Returns nullopt on a truncated
/// or over-long varint; on success advances pos.
std::optional<std::uint64_t> read_varint(std::string_view data, std::size_t& pos);

}  // namespace shardsim::importers
