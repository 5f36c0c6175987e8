// Chakra ET (protobuf) and JSON importers against the fixtures in tests/data/fixtures and
// hand-built corrupted streams.
#include <doctest/doctest.h>

#include "chakra_et.pb.h"
#include "helpers.hpp"
#include "traces/importers/chakra.hpp"
#include "traces/importers/input.hpp"
#include "traces/importers/native.hpp"

using namespace shardsim;
using namespace shardsim::importers;
using shardsim::test::error_of;
using shardsim::test::fixture;

namespace {

const std::string kEtDir = "chakra_et/all_reduce_4npus_1MB/";

/// A delimited stream: each message preceded by its varint32 length.
std::string delimited(const std::vector<std::string>& msgs) {
  std::string out;
  for (const auto& m : msgs) {
    std::size_t n = m.size();
    do {
      auto b = static_cast<unsigned char>(n & 0x7f);
      n >>= 7;
      if (n != 0) b |= 0x80;
      out.push_back(static_cast<char>(b));
    } while (n != 0);
    out += m;
  }
  return out;
}

std::string metadata() {
  chakra_pb::GlobalMetadata m;
  m.set_version("0.0.4");
  return m.SerializeAsString();
}

std::string node(std::uint64_t id, std::uint32_t type, std::vector<std::uint64_t> deps, bool with_comm_type,
                 bool with_comm_size) {
  chakra_pb::Node n;
  n.set_id(id);
  n.set_name("n" + std::to_string(id));
  n.set_type(type);
  for (auto d : deps) n.add_data_deps(d);
  if (with_comm_type) {
    auto* a = n.add_attr();
    a->set_name("comm_type");
    a->set_int64_val(0);
  }
  if (with_comm_size) {
    auto* a = n.add_attr();
    a->set_name("comm_size");
    a->set_int64_val(4096);
  }
  return n.SerializeAsString();
}

}  // namespace

TEST_CASE("chakra ET fixture: 4 ranks, one 1 MiB ALL_REDUCE each") {
  for (int r = 0; r < 4; ++r) {
    const auto path = fixture(kEtDir + "all_reduce." + std::to_string(r) + ".et");
    const auto t = decode_chakra_et(read_input(path), path);
    CHECK(t.version == "0.0.4");
    REQUIRE(t.nodes.size() == 1);
    const auto& n = t.nodes[0];
    CHECK(n.id == static_cast<std::uint64_t>(r));  // the generator numbers nodes across files
    CHECK(n.name == "all_reduce_4npus_1MB");
    CHECK(n.type == ChakraNodeType::comm_coll);
    CHECK(n.comm_kind == CommKind::all_reduce);
    CHECK(n.comm_size_bytes == 1048576);  // 1 MiB = 2^20
    CHECK(n.is_cpu_op == false);
    CHECK(n.offset == 8);  // after the 1-byte length and the 7-byte GlobalMetadata
  }
}

TEST_CASE("chakra ET fixture maps to one all-reduce over the 4 rank files") {
  std::vector<std::string> files;
  for (int r = 0; r < 4; ++r) files.push_back(fixture(kEtDir + "all_reduce." + std::to_string(r) + ".et"));
  const auto t = import_files(Format::chakra, files, {});
  REQUIRE(t.ops.size() == 1);
  REQUIRE(t.ops[0].collective.has_value());
  CHECK(t.ops[0].collective->kind == coll::OpKind::allreduce);
  CHECK(t.ops[0].collective->size_bytes == 1048576);
  CHECK(t.ops[0].collective->group_size == 4);  // one rank per file
  CHECK(t.source == "chakra");
  CHECK(t.config.at("group_size") == 4);
}

TEST_CASE("chakra JSON fixture: 7 nodes, 4 compute, 3 collectives, external deps dropped") {
  const auto path = fixture("chakra_json/small_chakra.0.json");
  const auto t = decode_chakra_json(read_input(path), path);
  REQUIRE(t.nodes.size() == 7);
  int comp = 0, coll = 0, cpu = 0;
  for (const auto& n : t.nodes) {
    comp += n.type == ChakraNodeType::comp;
    coll += n.type == ChakraNodeType::comm_coll;
    cpu += n.is_cpu_op.value_or(false);
  }
  CHECK(comp == 4);
  CHECK(coll == 3);
  CHECK(cpu == 5);
  // ctrlDeps 3, 429 and 434 name nodes cut out of this excerpt: one per node, 7 in all.
  CHECK(t.dropped_deps == 7);
  // The collectives carry no comm_type; the kind comes from the names.
  CHECK(t.nodes[3].comm_kind == CommKind::broadcast);  // c10d::broadcast_(0)
  CHECK(t.nodes[5].comm_kind == CommKind::broadcast);  // ncclKernel_Broadcast_RING_LL_...
  CHECK(t.nodes[5].data_deps == std::vector<std::uint64_t>{432, 216, 217});
  CHECK(t.nodes[5].duration_us == 28.0);

  // Native: only the GPU ops 430 (compute, 4 us) and 435 (broadcast kernel, 28 us, no size,
  // so kept as a measured op) remain; their deps all lead to CPU ops, which are dropped.
  const auto nat = to_native(std::vector<ChakraTrace>{t}, {});
  REQUIRE(nat.ops.size() == 2);
  CHECK(nat.ops[0].id == 430);
  CHECK(nat.ops[0].duration_s == doctest::Approx(4e-6).scale(0));
  CHECK(nat.ops[1].id == 435);
  CHECK_FALSE(nat.ops[1].collective.has_value());
  CHECK(nat.ops[1].duration_s == doctest::Approx(28e-6).scale(0));
  CHECK(nat.config.at("dropped_nodes") == 5);
  CHECK(nat.config.at("not_simulated_as_collective").at("size unknown") == 1);
}

TEST_CASE("chakra ET: data and control deps kept, topological order") {
  const auto data = delimited({metadata(), node(2, 4, {1}, false, false), node(1, 4, {}, false, false),
                               node(3, 7, {1, 2}, true, true)});
  const auto t = decode_chakra_et(data, "s.et");
  const auto nat = to_native(std::vector<ChakraTrace>{t}, {});
  REQUIRE(nat.ops.size() == 3);
  CHECK(nat.ops[0].id == 1);  // moved before node 2, which depends on it
  CHECK(nat.ops[1].id == 2);
  CHECK(nat.ops[1].deps == std::vector<std::uint64_t>{1});
  CHECK(nat.ops[2].deps == std::vector<std::uint64_t>{1, 2});
  CHECK(nat.ops[2].collective->size_bytes == 4096);
  CHECK(nat.ops[2].collective->group_size == 1);  // one file
}

TEST_CASE("chakra ET errors name the file and the byte offset or node") {
  const auto path = fixture(kEtDir + "all_reduce.0.et");
  const auto whole = read_input(path);
  // The Node message starts at byte 8 with length 0x48 = 72; cut the file at 70 bytes: 61
  // bytes follow the 1-byte length.
  CHECK(error_of([&] { decode_chakra_et(whole.substr(0, 70), "cut.et"); }) ==
        "cut.et: byte 8: message of 72 bytes runs past the end of the file (61 bytes left); "
        "expected a complete message (is the file truncated?)");
  CHECK(error_of([&] { decode_chakra_et(whole.substr(0, 8) + std::string(11, '\xff'), "v.et"); }) ==
        "v.et: byte 8: bad varint length prefix (truncated or longer than 10 bytes); "
        "expected a Chakra ET stream (varint length, then GlobalMetadata, then Nodes)");
  CHECK(error_of([&] { decode_chakra_et(whole.substr(0, 8) + "\x85", "v.et"); }) ==
        "v.et: byte 8: bad varint length prefix (truncated or longer than 10 bytes); "
        "expected a Chakra ET stream (varint length, then GlobalMetadata, then Nodes)");
  CHECK(error_of([&] { decode_chakra_et("", "e.et"); }) ==
        "e.et: empty file; expected a Chakra ET stream (varint length, then GlobalMetadata, then Nodes)");
  // A 3-byte Node whose body is a field-1 varint that never ends.
  CHECK(error_of([&] { decode_chakra_et(whole.substr(0, 8) + std::string("\x03\x08\xff\xff", 4), "p.et"); }) ==
        "p.et: byte 8: cannot parse Node (3 bytes); expected a protobuf Node message");
  CHECK(error_of([&] { decode_chakra_et(delimited({metadata(), node(7, 7, {}, true, false)}), "m.et"); }) ==
        "m.et: node 7: COMM_COLL_NODE without attribute comm_size; expected comm_type and comm_size");
  CHECK(error_of([&] { decode_chakra_et(delimited({metadata(), node(7, 7, {}, false, true)}), "m.et"); }) ==
        "m.et: node 7: COMM_COLL_NODE without attribute comm_type; expected comm_type and comm_size");
  CHECK(error_of([&] { decode_chakra_et(delimited({metadata(), node(7, 42, {}, false, false)}), "t.et"); }) ==
        "t.et: node 7 (byte 8): unknown node type 42; expected a NodeType 0..10 (INVALID_NODE ... CHECKPOINT_NODE)");
  CHECK(error_of([&] { decode_chakra_et(delimited({metadata(), node(1, 4, {}, false, false), node(1, 4, {}, false, false)}), "d.et"); }) ==
        "d.et: node 1: duplicate node id; expected unique node ids");
  CHECK(error_of([&] {
          decode_chakra_et(delimited({metadata(), node(1, 4, {3}, false, false), node(2, 4, {1}, false, false),
                                      node(3, 4, {2}, false, false)}),
                           "c.et");
        }) == "c.et: node 1: dependency cycle 1 -> 3 -> 2 -> 1 (each node depends on the next); "
              "expected an acyclic dependency graph");
}

TEST_CASE("chakra: ranks that disagree are an error") {
  const auto a = decode_chakra_et(delimited({metadata(), node(1, 7, {}, true, true)}), "r0.et");
  auto b = decode_chakra_et(delimited({metadata(), node(1, 7, {}, true, true)}), "r1.et");
  b.nodes[0].comm_size_bytes = 8192;
  CHECK(error_of([&] { to_native(std::vector<ChakraTrace>{a, b}, {}); }) ==
        "r1.et: node 1: op 0 differs from rank 0's node 1; expected the same collectives on every rank");
}

TEST_CASE("chakra JSON errors") {
  CHECK(error_of([] { decode_chakra_json(R"({"workload_graph": [{"Id": 1, "NodeType": 4, "runtime": -3}]})", "n.json"); }) ==
        "n.json/workload_graph/0/runtime: negative duration -3 us; expected a duration >= 0");
  CHECK(error_of([] { decode_chakra_json(R"({"workload_graph": [{"Id": 1}]})", "n.json"); }) ==
        "n.json/workload_graph/0: missing required key \"NodeType\"; expected Id and NodeType");
  CHECK(error_of([] {
          decode_chakra_json(R"({"workload_graph": [{"Id": 1, "NodeType": 4, "data_deps": [2]},
                                                    {"Id": 2, "NodeType": 4, "ctrlDeps": [1]}]})",
                             "c.json");
        }) == "c.json: node 1: dependency cycle 1 -> 2 -> 1 (each node depends on the next); "
              "expected an acyclic dependency graph");
  CHECK(error_of([] { decode_chakra_json(R"({"workload_graph": [{"Id": 1, "NodeType": 7, "Name": "x"}]})", "k.json"); }) ==
        "k.json: node 1: COMM_COLL_NODE without comm_type, and its name 'x' names no collective; "
        "expected comm_type or a collective name (c10d::all_reduce_, ncclKernel_AllReduce_...)");
  CHECK(error_of([] { decode_chakra_json(R"({"workload_graph": [)", "s.json"); }).starts_with("s.json: byte 20: invalid JSON ("));
}
