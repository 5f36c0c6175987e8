// ASTRA-sim 1.0 text workload importer against the fixtures (tests/data/fixtures/astra_sim_v1).
#include <doctest/doctest.h>

#include "helpers.hpp"
#include "traces/importers/astra_v1.hpp"
#include "traces/importers/info.hpp"
#include "traces/importers/input.hpp"
#include "traces/importers/native.hpp"

using namespace shardsim;
using namespace shardsim::importers;
using shardsim::test::error_of;
using shardsim::test::fixture;

namespace {
AstraWorkload load(const std::string& rel) {
  const auto path = fixture("astra_sim_v1/" + rel);
  return decode_astra_v1(read_input(path), path);
}
}  // namespace

TEST_CASE("astra-v1 MICRO, space separated, CRLF") {
  const auto w = load("workload_microAllReduce.txt");
  CHECK(w.policy == "MICRO");
  REQUIRE(w.layers.size() == 1);
  const auto& l = w.layers[0];
  CHECK(l.name == "conv1");
  CHECK(l.forward.compute_cycles == 5);
  CHECK_FALSE(l.forward.comm.has_value());
  CHECK(l.weight_grad.comm == CommKind::all_reduce);
  CHECK(l.weight_grad.comm_bytes == 1048576);
  CHECK(l.update_cycles == 5);
  CHECK(l.line == 3);
  ImportOptions o;
  o.group_size = 4;
  const auto t = to_native(w, o);
  // fwd, wg, wg all-reduce, ig, update.
  REQUIRE(t.ops.size() == 5);
  CHECK(t.ops[0].name == "conv1.fwd");
  CHECK(t.ops[0].duration_s == doctest::Approx(5e-9).scale(0));  // 5 cycles x 1 ns
  CHECK(t.ops[2].name == "conv1.wg.all_reduce");
  CHECK(t.ops[2].collective->size_bytes == 1048576);
  CHECK(t.ops[2].collective->group_size == 4);
  CHECK(t.ops[4].phase == trace::Phase::update);
  CHECK(t.ops[4].deps == std::vector<std::uint64_t>{2});  // the update waits for the all-reduce
}

TEST_CASE("astra-v1 DATA ResNet-50, tab separated: 54 layers, 54 weight-gradient all-reduces") {
  const auto w = load("workload_Resnet50_DataParallel.txt");
  CHECK(w.policy == "DATA");
  REQUIRE(w.layers.size() == 54);
  std::size_t ar = 0;
  std::uint64_t bytes = 0;
  for (const auto& l : w.layers) {
    if (l.weight_grad.comm == CommKind::all_reduce) {
      ++ar;
      bytes += l.weight_grad.comm_bytes;
    }
  }
  CHECK(ar == 54);
  CHECK(bytes == 102011648);  // sum of column 11, computed independently from the file
  CHECK(w.layers.back().name == "fc1000");
  CHECK(w.layers.back().weight_grad.comm_bytes == 8192000);  // 1000 x 2048 fp32
  const auto info = trace_info(fixture("astra_sim_v1/workload_Resnet50_DataParallel.txt"));
  CHECK(info.format == Format::astra_v1);
  CHECK(info.compute_time_s == doctest::Approx(1129103e-9).scale(0));  // all compute + update cycles
}

TEST_CASE("astra-v1 HYBRID_DLRM with its bottom-layer parameter and trailing tabs") {
  const auto w = load("workload_DLRM_HybridParallel.txt");
  CHECK(w.policy == "HYBRID_DLRM");
  CHECK(w.dlrm_last_bottom_layer == 4);
  REQUIRE(w.layers.size() == 8);
  CHECK(w.layers[0].forward.comm == CommKind::all_to_all);
  CHECK(w.layers[0].input_grad.comm == CommKind::all_to_all);
  CHECK(w.layers[0].forward.comm_bytes == 98304);
  std::size_t ar = 0;
  for (const auto& l : w.layers) ar += l.weight_grad.comm == CommKind::all_reduce;
  CHECK(ar == 7);
}

TEST_CASE("astra-v1 errors name the line") {
  CHECK(error_of([] { decode_astra_v1("DATA\n1\nl -1 -5 NONE 0 1 NONE 0 1 NONE 0 1\n", "w.txt"); }) ==
        "w.txt: line 3: negative forward compute time -5 (field 3); expected an integer >= 0");
  CHECK(error_of([] { decode_astra_v1("DATA\n2\nl -1 5 NONE 0 1 NONE 0 1 NONE 0 1\n", "w.txt"); }) ==
        "w.txt: file ends after 1 of 2 layers; expected one line per declared layer");
  // fuzz_astra: the count used to reserve its layers first, 2.5 GB here.
  CHECK(error_of([] { decode_astra_v1("DATA\n10000000\n", "w.txt"); }) ==
        "w.txt: file ends after 0 of 10000000 layers; expected one line per declared layer");
  // The layer name goes into the native trace's JSON (`trace import` failed writing it).
  CHECK(error_of([] { decode_astra_v1("DATA\n1\nl\xff -1 5 NONE 0 1 NONE 0 1 NONE 0 1\n", "w.txt"); }) ==
        "w.txt: line 3: byte 0xff at column 2 is not UTF-8; expected ASCII or UTF-8 text");
  CHECK(error_of([] { decode_astra_v1("DATA\n1\nl -1 5 NONE 0 1 NONE 0 1 BCAST 0 1\n", "w.txt"); }) ==
        "w.txt: line 3: unknown weight-gradient communication type 'BCAST' (field 10); "
        "expected NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER or ALLTOALL");
  CHECK(error_of([] { decode_astra_v1("DATA\n1\nl -1 5 NONE 0 1\n", "w.txt"); }) ==
        "w.txt: line 3: 6 fields; expected 12 fields: name reserved fwd_compute fwd_comm fwd_bytes ig_compute "
        "ig_comm ig_bytes wg_compute wg_comm wg_bytes update_delay");
  CHECK(error_of([] { decode_astra_v1("PIPELINE\n1\n", "w.txt"); }).starts_with("w.txt: line 1: 'PIPELINE' is not a parallelism policy"));
  CHECK(error_of([] { to_native(decode_astra_v1("DATA\n1\nl -1 5 NONE 0 1 NONE 0 1 ALLREDUCE 8 1\n", "w.txt"), {}); }) ==
        "w.txt: an ASTRA-sim 1.0 workload does not record how many NPUs take part; "
        "expected --group-size N (the NPU count of the system it ran on)");
}
