// Chakra protobuf ET stream -> ChakraTrace. The stream framing is protobuf's delimited
// format (a varint32 byte length before each message, as written by Chakra's
// encode_message / google::protobuf::util::SerializeDelimitedToOstream); message bodies are
// parsed by the generated code of chakra_et.proto (protobuf-lite).
#include <fmt/format.h>

#include <limits>

#include "chakra_et.pb.h"
#include "sim/error.hpp"
#include "traces/importers/chakra.hpp"

namespace shardsim::importers {
namespace pb = shardsim::chakra_pb;

std::optional<std::uint64_t> read_varint(std::string_view data, std::size_t& pos) {
  std::uint64_t v = 0;
  for (unsigned shift = 0, i = 0; i < 10; ++i, shift += 7) {
    if (pos + i >= data.size()) return std::nullopt;
    const auto b = static_cast<unsigned char>(data[pos + i]);
    if (i == 9 && b > 1) return std::nullopt;  // more than 64 bits
    v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      pos += i + 1;
      return v;
    }
  }
  return std::nullopt;
}

namespace {

using pb::Attribute;

const char* value_case_name(Attribute::ValueCase c) {
  switch (c) {
    case Attribute::kDoubleVal: return "double_val";
    case Attribute::kFloatVal: return "float_val";
    case Attribute::kBoolVal: return "bool_val";
    case Attribute::kStringVal: return "string_val";
    case Attribute::kBytesVal: return "bytes_val";
    case Attribute::VALUE_NOT_SET: return "no value";
    default: return "a list";
  }
}

std::optional<std::int64_t> as_int(const Attribute& a) {
  switch (a.value_case()) {
    case Attribute::kInt32Val: return a.int32_val();
    case Attribute::kInt64Val: return a.int64_val();
    case Attribute::kUint32Val: return a.uint32_val();
    case Attribute::kUint64Val:
      if (a.uint64_val() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
      return static_cast<std::int64_t>(a.uint64_val());
    case Attribute::kSint32Val: return a.sint32_val();
    case Attribute::kSint64Val: return a.sint64_val();
    case Attribute::kFixed32Val: return a.fixed32_val();
    case Attribute::kFixed64Val:
      if (a.fixed64_val() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
      return static_cast<std::int64_t>(a.fixed64_val());
    case Attribute::kSfixed32Val: return a.sfixed32_val();
    case Attribute::kSfixed64Val: return a.sfixed64_val();
    default: return std::nullopt;
  }
}

void apply_attribute(ChakraNode& n, const Attribute& a, const std::string& where) {
  const std::string& key = a.name();
  auto integer = [&]() -> std::int64_t {
    auto v = as_int(a);
    if (!v) {
      throw ConfigError(where, fmt::format("attribute {} holds {}", key, value_case_name(a.value_case())),
                        "an integer value");
    }
    return *v;
  };
  auto non_negative = [&]() -> std::uint64_t {
    const std::int64_t v = integer();
    if (v < 0) throw ConfigError(where, fmt::format("attribute {} is negative ({})", key, v), "a value >= 0");
    return static_cast<std::uint64_t>(v);
  };
  if (key == "is_cpu_op") {
    if (a.value_case() == Attribute::kBoolVal) {
      n.is_cpu_op = a.bool_val();
    } else {
      n.is_cpu_op = integer() != 0;  // older converters wrote it as an int
    }
  } else if (key == "comm_type") {
    const std::int64_t v = integer();
    n.comm_kind = comm_kind_from_chakra(v);
    if (!n.comm_kind) {
      throw ConfigError(where, fmt::format("unknown comm_type {}", v),
                        "a CollectiveCommType 0..9 (ALL_REDUCE ... BARRIER)");
    }
  } else if (key == "comm_size") {
    n.comm_size_bytes = non_negative();
  } else if (key == "num_ops") {
    n.num_ops = non_negative();
  } else if (key == "tensor_size") {
    n.tensor_size_bytes = non_negative();
  } else if (key == "pg_name") {
    if (a.value_case() != Attribute::kStringVal) {
      throw ConfigError(where, fmt::format("attribute pg_name holds {}", value_case_name(a.value_case())),
                        "a string value");
    }
    n.pg_name = a.string_val();
  } else if (key == "comm_src") {
    n.comm_src = integer();
  } else if (key == "comm_dst") {
    n.comm_dst = integer();
  } else if (key == "comm_tag") {
    n.comm_tag = integer();
  } else if (key == "comm_priority") {
    n.comm_priority = integer();
  }
  // Other attributes (involved_dim, op_schema, rf_id, ...) do not affect the simulation.
}

}  // namespace

ChakraTrace decode_chakra_et(std::string_view data, const std::string& source) {
  ChakraTrace trace;
  trace.source = source;
  const std::string expected = "a Chakra ET stream (varint length, then GlobalMetadata, then Nodes)";
  if (data.empty()) throw ConfigError(source, "empty file", expected);
  std::size_t pos = 0;
  bool first = true;
  pb::Node node;
  while (pos < data.size()) {
    const std::size_t at = pos;
    const std::string where = fmt::format("{}: byte {}", source, at);
    const auto len = read_varint(data, pos);
    if (!len) {
      throw ConfigError(where, "bad varint length prefix (truncated or longer than 10 bytes)", expected);
    }
    if (*len > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
      throw ConfigError(where, fmt::format("message length {} exceeds 2 GiB", *len), expected);
    }
    if (*len > data.size() - pos) {
      throw ConfigError(where,
                        fmt::format("message of {} bytes runs past the end of the file ({} bytes left)",
                                    *len, data.size() - pos),
                        "a complete message (is the file truncated?)");
    }
    const char* body = data.data() + pos;
    const int size = static_cast<int>(*len);
    pos += *len;
    if (first) {
      pb::GlobalMetadata meta;
      if (!meta.ParseFromArray(body, size)) {
        throw ConfigError(where, fmt::format("cannot parse GlobalMetadata ({} bytes)", size),
                          "a protobuf GlobalMetadata message first");
      }
      trace.version = meta.version();
      first = false;
      continue;
    }
    node.Clear();
    if (!node.ParseFromArray(body, size)) {
      throw ConfigError(where, fmt::format("cannot parse Node ({} bytes)", size), "a protobuf Node message");
    }
    ChakraNode n;
    n.id = node.id();
    n.name = node.name();
    n.offset = at;
    const std::string node_where = fmt::format("{}: node {} (byte {})", source, n.id, at);
    if (node.type() > static_cast<std::uint32_t>(ChakraNodeType::checkpoint)) {
      throw ConfigError(node_where, fmt::format("unknown node type {}", node.type()),
                        "a NodeType 0..10 (INVALID_NODE ... CHECKPOINT_NODE)");
    }
    n.type = static_cast<ChakraNodeType>(node.type());
    n.ctrl_deps.assign(node.ctrl_deps().begin(), node.ctrl_deps().end());
    n.data_deps.assign(node.data_deps().begin(), node.data_deps().end());
    n.start_time_us = node.start_time_micros();
    if (node.duration_micros() > 0) n.duration_us = static_cast<double>(node.duration_micros());
    for (const auto& a : node.attr()) apply_attribute(n, a, node_where);
    trace.nodes.push_back(std::move(n));
  }
  if (first) throw ConfigError(source, "no GlobalMetadata message", expected);
  validate_chakra(trace, false);
  return trace;
}

}  // namespace shardsim::importers
