// Native trace format (docs/trace-format.md): JSON round trip and one failing case, with its
// exact message, for every validation rule.
#include <doctest/doctest.h>

#include <cstdio>

#include "sim/error.hpp"
#include "traces/trace/trace.hpp"
#include "traces/trace/workload.hpp"
#include "traces/zoo/zoo.hpp"

using namespace shardsim;
using nlohmann::json;

namespace {
json minimal() {
  return json::parse(R"({
    "format": "shardsim-trace", "version": 1, "name": "tiny", "batch_per_replica": 4,
    "ops": [
      {"id": 1, "name": "fc.fwd", "phase": "forward", "unit": 0, "flops": 100, "bytes": 64,
       "params": [{"name": "fc.w", "elements": 6, "dtype": "fp32", "shape": [2, 3]}],
       "activation_bytes": 32},
      {"id": 2, "name": "fc.bwd", "phase": "backward", "flops": 200, "bytes": 128, "deps": [1],
       "duration_s": 0.001},
      {"id": 3, "name": "grad.ar", "phase": "backward",
       "collective": {"kind": "all-reduce", "size_bytes": 24, "group_size": 8}, "deps": [2]}
    ]})");
}
std::string error_of(const json& j) {
  try {
    trace::trace_from_json(j, "t.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("a minimal trace loads with defaults and converts to a workload") {
  const auto t = trace::trace_from_json(minimal(), "t.json");
  CHECK(t.name == "tiny");
  CHECK(t.source == "file");
  CHECK(t.batch_per_replica == 4);
  CHECK(t.ops.size() == 3);
  CHECK(t.ops[0].params[0].dtype == trace::DType::fp32);
  CHECK(t.ops[1].unit == 0);
  CHECK(*t.ops[1].duration_s == 0.001);
  CHECK(t.ops[2].collective->kind == coll::OpKind::allreduce);
  CHECK(t.parameter_count() == 6);
  const auto w = trace::to_workload(t);
  CHECK(w.ops.size() == 2);  // the collective is replaced by the strategy's own
  CHECK(w.dropped_collectives == 1);
  CHECK(w.params[0].rows == 2);
  CHECK(w.params[0].cols == 3);
  CHECK(*w.ops[1].measured_s == 0.001);
}

TEST_CASE("save then load gives the same trace (zoo BERT-base)") {
  const auto t = zoo::generate(zoo::find_model("bert-base", "t"), 2, 128);
  const std::string path = std::string(SHARDSIM_BINARY_DIR) + "/test_trace_roundtrip.json";
  trace::save_trace(t, path);
  const auto u = trace::load_trace(path);
  std::remove(path.c_str());
  CHECK(trace::to_json(u) == trace::to_json(t));
  CHECK(u.parameter_count() == t.parameter_count());
  CHECK(u.flops(trace::Phase::backward) == t.flops(trace::Phase::backward));
}

TEST_CASE("every validation rule fails with the op and the field named") {
  auto j = minimal();
  j["format"] = "chakra";
  CHECK(error_of(j) == "t.json/format: 'chakra'; expected \"shardsim-trace\"");
  j = minimal();
  j["version"] = 3;
  CHECK(error_of(j) == "t.json/version: 3; expected 1 or 2");
  j["version"] = 2;  // version 2 lists ops per rank (below)
  CHECK(error_of(j) == "t.json/ops: unknown key 'ops'; expected one of format, version, name, source, "
                       "batch_per_replica, seq_len, config, process_groups, ranks");
  j = minimal();
  j["colour"] = 1;
  CHECK(error_of(j) == "t.json/colour: unknown key 'colour'; expected one of format, version, name, source, "
                       "batch_per_replica, seq_len, config, ops");
  j = minimal();
  j.erase("batch_per_replica");
  CHECK(error_of(j) == "t.json/batch_per_replica: missing; expected a positive integer");
  j = minimal();
  j["batch_per_replica"] = 0;
  CHECK(error_of(j) == "t.json/batch_per_replica: 0; expected a positive number of samples");
  j = minimal();
  j["ops"] = json::array();
  CHECK(error_of(j) == "t.json/ops: no ops; expected at least one op");
  j = minimal();
  j["ops"][1]["flops"] = -5;
  CHECK(error_of(j) == "t.json/ops/1/flops: flops = -5 in op 'fc.bwd'; expected a finite number >= 0");
  j = minimal();
  j["ops"][0]["bytes"] = -1;
  CHECK(error_of(j) == "t.json/ops/0/bytes: bytes = -1 in op 'fc.fwd'; expected a finite number >= 0");
  j = minimal();
  j["ops"][1]["duration_s"] = 0;
  CHECK(error_of(j) == "t.json/ops/1/duration_s: duration_s = 0 in op 'fc.bwd'; expected a finite number > 0");
  j = minimal();
  j["ops"][1]["phase"] = "sideways";
  CHECK(error_of(j) == "t.json/ops/1/phase: unknown phase 'sideways'; expected one of forward, backward, update, other");
  j = minimal();
  j["ops"][1]["id"] = 1;
  CHECK(error_of(j) == "t.json/ops/1/id: duplicate id 1 in op 'fc.bwd'; expected ids unique within the trace");
  j = minimal();
  j["ops"][0]["deps"] = {2};
  CHECK(error_of(j) ==
        "t.json/ops/0/deps/0: dependency 2 of op 'fc.fwd' is not an earlier op; expected ids of ops listed before this one");
  j = minimal();
  j["ops"][0]["params"][0]["elements"] = 0;
  CHECK(error_of(j) == "t.json/ops/0/params/0/elements: 0 elements for tensor 'fc.w' in op 'fc.fwd'; expected a positive count");
  j = minimal();
  j["ops"][0]["params"][0]["shape"] = {4, 2};
  CHECK(error_of(j) == "t.json/ops/0/params/0/shape: shape with 8 elements for tensor 'fc.w' (6 elements) in op "
                       "'fc.fwd'; expected a shape whose product equals elements");
  j = minimal();
  j["ops"][0]["params"][0]["dtype"] = "fp12";
  CHECK(error_of(j) == "t.json/ops/0/params/0/dtype: unknown dtype 'fp12'; expected one of fp64, fp32, tf32, bf16, "
                       "fp16, fp8, int8, int32");
  j = minimal();
  j["ops"][1]["params"] = json::parse(R"([{"name": "fc.w", "elements": 6}])");
  CHECK(error_of(j) == "t.json/ops/1/params/0/name: tensor 'fc.w' declared again in op 'fc.bwd'; expected each "
                       "parameter tensor declared once");
  j = minimal();
  j["ops"][2]["collective"]["size_bytes"] = 0;
  CHECK(error_of(j) == "t.json/ops/2/collective/size_bytes: 0 in op 'grad.ar'; expected a positive size");
  j = minimal();
  j["ops"][2]["collective"]["group_size"] = 0;
  CHECK(error_of(j) == "t.json/ops/2/collective/group_size: 0 in op 'grad.ar'; expected a group of at least 1 rank");
  j = minimal();
  j["ops"][2]["collective"]["kind"] = "shuffle";
  CHECK(error_of(j) == "t.json/ops/2/collective/kind: unknown collective 'shuffle'; expected one of allreduce, "
                       "reducescatter, allgather, broadcast, alltoall, reduce, sendrecv");
  j = minimal();
  j["ops"][0]["name"] = "";
  CHECK(error_of(j) == "t.json/ops/0/name: an empty name; expected a non-empty op name");
  j = minimal();
  j["ops"][0]["flops"] = "lots";
  CHECK(error_of(j) == "t.json/ops/0/flops: a string; expected a number");
  j = minimal();
  j["ops"][0]["speed"] = 3;
  CHECK(error_of(j) == "t.json/ops/0/speed: unknown key 'speed'; expected one of id, name, phase, unit, flops, bytes, "
                       "params, activation_bytes, duration_s, collective, deps");
}

TEST_CASE("load_trace: missing file and invalid JSON") {
  CHECK_THROWS_WITH_AS(trace::load_trace("/nonexistent/t.json"),
                       "/nonexistent/t.json: cannot open the file; expected a readable shardsim trace JSON file",
                       ConfigError);
  CHECK_THROWS_WITH_AS(trace::parse_trace("{\"config\": " + std::string(3000, '[') + std::string(3000, ']') + "}", "t.json"),
                       "t.json: byte 522: JSON nested more than 512 levels; expected a shardsim trace JSON file",
                       ConfigError);
}

// Format version 2 (issue 12): every rank's ops, collectives with their process groups.
namespace {
json minimal_v2() {
  return json::parse(R"({
    "format": "shardsim-trace", "version": 2, "name": "pair", "batch_per_replica": 1,
    "process_groups": [{"id": 7, "name": "tp", "ranks": [0, 1]}],
    "ranks": [
      {"rank": 0, "ops": [
        {"id": 1, "name": "fwd", "phase": "forward", "flops": 10,
         "params": [{"name": "w", "elements": 4}]},
        {"id": 2, "name": "ar", "phase": "forward", "collective": {"kind": "allreduce", "size_bytes": 64, "group": 7},
         "deps": [1]},
        {"id": 3, "name": "to1", "phase": "forward", "p2p": {"kind": "send", "peer": 1, "size_bytes": 32}, "deps": [2]}]},
      {"rank": 1, "ops": [
        {"id": 1, "name": "fwd", "phase": "forward", "flops": 20,
         "params": [{"name": "w", "elements": 4}]},
        {"id": 2, "name": "ar", "phase": "forward", "collective": {"kind": "allreduce", "size_bytes": 64, "ranks": [0, 1]},
         "deps": [1]},
        {"id": 3, "name": "from0", "phase": "forward", "p2p": {"kind": "recv", "peer": 0, "size_bytes": 32, "tag": 0}}]}
    ]})");
}
}  // namespace

TEST_CASE("version 2: per-rank ops, process groups by id or ranks, p2p; round trip; workload per rank") {
  const auto t = trace::trace_from_json(minimal_v2(), "t.json");
  CHECK(t.version == 2);
  REQUIRE(t.ops.size() == 6);
  CHECK(t.ranks() == std::vector<int>{0, 1});
  CHECK(*t.ops[4].rank == 1);
  CHECK(t.ops[1].collective->group == 7u);
  CHECK(t.ops[1].collective->ranks == std::vector<int>{0, 1});  // resolved from the table
  CHECK(t.ops[1].collective->group_size == 2);
  CHECK(!t.ops[4].collective->group);
  CHECK(t.ops[4].collective->group_size == 2);
  CHECK(t.ops[2].p2p->send);
  CHECK(t.ops[2].p2p->peer == 1);
  CHECK(!t.ops[5].p2p->send);
  // Written back and read again: the same trace (process groups, ranks, p2p).
  const auto u = trace::trace_from_json(trace::to_json(t), "u.json");
  CHECK(trace::to_json(u) == trace::to_json(t));
  CHECK(trace::to_json(t)["ranks"].size() == 2);
  CHECK(!trace::to_json(t).contains("ops"));
  // Workload: every rank's ops recorded (deps per rank), the strategies' view is rank 0's.
  const auto w = trace::to_workload(t);
  CHECK(w.per_rank);
  REQUIRE(w.recorded.size() == 6);
  CHECK(w.recorded[3].rank == 1);
  CHECK(w.recorded[4].deps == std::vector<std::size_t>{3});  // rank 1's op 1
  CHECK(w.recorded[1].collective->group_name == "tp");
  CHECK(w.recorded[4].collective->ranks == std::vector<int>{0, 1});
  CHECK(w.ops.size() == 1);  // rank 0's compute
  CHECK(w.params.size() == 1);
  CHECK(w.dropped_collectives == 2);  // rank 0's all-reduce and send
}

TEST_CASE("version 2: every rule fails naming the place and the op") {
  auto bad = [](auto&& edit) {
    auto j = minimal_v2();
    edit(j);
    return error_of(j);
  };
  CHECK(bad([](json& j) { j["process_groups"][0]["ranks"] = json::array(); }) ==
        "t.json/process_groups/0/ranks: no ranks in process group 'tp'; expected at least one rank");
  CHECK(bad([](json& j) { j["process_groups"][0]["ranks"] = {0, 0}; }) ==
        "t.json/process_groups/0/ranks/1: rank 0 twice in process group 'tp'; expected each rank once");
  CHECK(bad([](json& j) { j["process_groups"][0]["ranks"] = {0, -1}; }) ==
        "t.json/process_groups/0/ranks/1: -1; expected a rank (an integer >= 0)");
  CHECK(bad([](json& j) { j["ranks"][0]["ops"][1]["collective"]["group"] = 3; }) ==
        "t.json/ranks/0/ops/1/collective/group: process group 3 in op 'ar', which process_groups does not define; "
        "expected the id of a process group of the trace");
  CHECK(bad([](json& j) { j["ranks"][1]["ops"][1]["collective"].erase("ranks"); }) ==
        "t.json/ranks/1/ops/1/collective: no process group in op 'ar'; expected \"group\": a process group id, or "
        "\"ranks\": [...] (version 2)");
  CHECK(bad([](json& j) { j["ranks"][1]["ops"][1]["collective"]["ranks"] = {0, 2}; }) ==
        "t.json/ranks/1/ops/1/collective: op 'ar' on rank 1 runs on a process group without it (0,2); expected a "
        "process group that holds the op's rank");
  CHECK(bad([](json& j) { j["ranks"][1]["ops"][1]["collective"]["group"] = 7; }) ==
        "t.json/ranks/1/ops/1/collective: both \"group\" and \"ranks\"; expected one of them (a process group id, or "
        "the ranks)");
  CHECK(bad([](json& j) { j["ranks"][1]["ops"][1]["collective"]["group_size"] = 3; }) ==
        "t.json/ranks/1/ops/1/collective/group_size: 3 for a group of 2 ranks in op 'ar'; expected the number of ranks "
        "of the group");
  CHECK(bad([](json& j) { j["ranks"][1]["rank"] = 0; }) ==
        "t.json/ranks/1/rank: rank 0 after rank 0; expected ranks listed once each, in ascending order");
  CHECK(bad([](json& j) { j["ranks"][1]["ops"] = json::array(); }) ==
        "t.json/ranks/1/ops: no ops; expected a non-empty array of ops");
  CHECK(bad([](json& j) { j["ranks"][1]["ops"][2]["p2p"]["peer"] = 1; }) ==
        "t.json/ranks/1/ops/2/p2p/peer: peer 1 of op 'from0' on rank 1; expected another rank >= 0");
  CHECK(bad([](json& j) { j["ranks"][1]["ops"][2]["p2p"]["kind"] = "put"; }) ==
        "t.json/ranks/1/ops/2/p2p/kind: 'put'; expected \"send\" or \"recv\"");
  CHECK(bad([](json& j) { j["ranks"][1]["ops"][2]["deps"] = {3}; }) ==
        "t.json/ranks/1/ops/2/deps/0: dependency 3 of op 'from0' is not an earlier op of its rank; expected ids of ops "
        "listed before this one on the same rank");
  CHECK(bad([](json& j) { j["ranks"][1]["ops"][0]["params"][0]["name"] = "w"; j["ranks"][1]["ops"][1]["params"] = {{{"name", "w"}, {"elements", 1}}}; }) ==
        "t.json/ranks/1/ops/1/params/0/name: tensor 'w' declared again in op 'ar'; expected each parameter tensor "
        "declared once");
  // Ids and tensor names are per rank: rank 1 reusing rank 0's ids and tensor names is valid.
  CHECK(bad([](json&) {}) == "no error");
  // Version 1 has no process groups, ranks or p2p.
  auto v1 = minimal();
  v1["ops"][2]["collective"]["ranks"] = {0, 1};
  CHECK(error_of(v1) == "t.json/ops/2/collective/ranks: unknown key 'ranks'; expected one of kind, size_bytes, group_size");
}
