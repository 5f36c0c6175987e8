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
  j["version"] = 2;
  CHECK(error_of(j) == "t.json/version: 2; expected 1");
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
                       "reducescatter, allgather, broadcast, alltoall, reduce");
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
