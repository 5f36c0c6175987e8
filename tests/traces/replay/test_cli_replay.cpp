// `shardsim step --trace` on format-v2 traces end to end (the shardsim binary, issue 12):
// the 8-rank trace of tests/data/traces replays on every rank with a Perfetto track group per
// rank; bad process groups, dependency cycles and unmatched sends exit 2 naming the op.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "../../shell_run.hpp"

namespace {

using shardsim::testing::run_shardsim;

std::string scratch(const std::string& name) {
  const auto d = std::filesystem::path(SHARDSIM_BINARY_DIR) / "test_cli_replay" / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

// A v2 trace with `ranks` (the JSON array) and `groups` (the process_groups array), written to
// dir/name.json.
std::string write_v2(const std::string& dir, const std::string& name, const std::string& ranks,
                     const std::string& groups = "[]") {
  const std::string path = dir + "/" + name + ".json";
  std::ofstream(path) << R"({"format": "shardsim-trace", "version": 2, "name": ")" << name
                      << R"(", "batch_per_replica": 1, "process_groups": )" << groups << R"(, "ranks": )" << ranks
                      << "}\n";
  return path;
}

const std::string kTopo = " --topology switch:n=4,bw=100GB/s,lat=1us --device h100";

}  // namespace

TEST_CASE("step --trace v2: the 8-rank trace runs on 8 ranks, one timeline track group per rank") {
  const std::string dir = scratch("eight");
  const std::string trace = std::string(SHARDSIM_SOURCE_DIR) + "/tests/data/traces/two_groups_8ranks.json";
  const auto r = run_shardsim("step --trace " + trace + " --topology switch:n=8,bw=100GB/s,lat=1us --device h100 "
                              "--compute measured --fidelity flow --algorithm ring --json --timeline " + dir + "/t.json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("strategy") == "trace");
  CHECK(j.at("ranks") == 8);
  CHECK(j.at("ranks_simulated") == 8);
  // forward 1 ms + the isolated ring all-reduce (disjoint links) + update 0.5 ms:
  // 6 x (2 us + (16 MiB / 4) / 100 GB/s).
  const double ar = 6 * (2e-6 + 16.0 * (1 << 20) / 4 / 100e9);
  CHECK(j.at("step_time_s").get<double>() == doctest::Approx(1e-3 + ar + 0.5e-3).epsilon(1e-9).scale(0));
  std::ifstream in(dir + "/t.json");
  const auto tl = nlohmann::json::parse(in);
  int tracks = 0;
  for (const auto& e : tl.at("traceEvents")) {
    if (e.value("ph", "") == "M" && e.value("name", "") == "process_name") ++tracks;
  }
  CHECK(tracks == 8);
}

TEST_CASE("step --trace v2: bad input exits 2 naming the op") {
  const std::string dir = scratch("bad");
  auto expect = [&](const std::string& path, const std::string& message) {
    const auto r = run_shardsim("step --trace " + path + kTopo);
    CHECK(r.status == 2);
    CHECK(r.out == "shardsim: error: " + message + "\n");
  };
  // A process group naming a rank outside the topology (4 devices).
  expect(write_v2(dir, "outside", R"([{"rank": 0, "ops": [{"id": 1, "name": "tp.ar", "phase": "forward",
                                        "collective": {"kind": "allreduce", "size_bytes": 64, "group": 0}}]}])",
                  R"([{"id": 0, "name": "tp", "ranks": [0, 5]}])"),
         "--topology: 4 devices, but op 'tp.ar' (rank 0 of trace 'outside') has a process group member on rank 5; "
         "expected a topology with at least 6 devices (a version 2 trace's rank r runs on device r)");
  // An empty process group.
  expect(write_v2(dir, "empty", R"([{"rank": 0, "ops": [{"id": 1, "name": "c", "phase": "forward"}]}])",
                  R"([{"id": 0, "name": "tp", "ranks": []}])"),
         dir + "/empty.json/process_groups/0/ranks: no ranks in process group 'tp'; expected at least one rank");
  // Collectives issued in opposite orders on two ranks: a dependency cycle (NCCL would hang).
  const std::string a = R"("collective": {"kind": "allreduce", "size_bytes": 64, "group": 0})";
  const std::string b = R"("collective": {"kind": "allreduce", "size_bytes": 64, "group": 1})";
  expect(write_v2(dir, "cycle",
                  R"([{"rank": 0, "ops": [{"id": 1, "name": "a", "phase": "forward", )" + a +
                      R"(}, {"id": 2, "name": "b", "phase": "forward", )" + b + R"(, "deps": [1]}]},
                      {"rank": 1, "ops": [{"id": 1, "name": "b", "phase": "forward", )" + b +
                      R"(}, {"id": 2, "name": "a", "phase": "forward", )" + a + R"(, "deps": [1]}]},
                      {"rank": 2, "ops": [{"id": 1, "name": "b", "phase": "forward", )" + b + "}]}]",
                  R"([{"id": 0, "name": "ga", "ranks": [0, 1]}, {"id": 1, "name": "gb", "ranks": [0, 1, 2]}])"),
         "op 'b (allreduce 64 B, gb)': dependency cycle op 'b (allreduce 64 B, gb)' -> op 'a (allreduce 64 B, ga)' -> "
         "op 'b (allreduce 64 B, gb)'; expected dependencies and stream order without cycles");
  // A send without a matching receive.
  expect(write_v2(dir, "send", R"([{"rank": 0, "ops": [{"id": 1, "name": "send.act", "phase": "forward",
                                     "p2p": {"kind": "send", "peer": 1, "size_bytes": 4096}}]},
                                   {"rank": 1, "ops": [{"id": 1, "name": "idle", "phase": "forward"}]}])"),
         "op 'send.act': send of 4096 bytes from rank 0 to rank 1 (tag 0) without a matching receive; expected a recv "
         "on rank 1 from rank 0 with tag 0");
  // (An empty --groups entry of `shardsim collective`: tests/golden/test_cli_collective.cpp.)
}

TEST_CASE("trace import --per-rank / --comm-groups: the Chakra fixture as format v2, then replayed on every rank") {
  const std::string dir = scratch("import");
  std::string files;
  for (int r = 0; r < 4; ++r) {
    files += std::string(" ") + SHARDSIM_FIXTURES_DIR + "/chakra_et/all_reduce_4npus_1MB/all_reduce." + std::to_string(r) + ".et";
  }
  auto r = run_shardsim("trace import --format chakra --per-rank" + files + " --out " + dir + "/v2.json");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("4 ranks, 0 process groups (format v2)") != std::string::npos);
  const auto step = run_shardsim("step --trace " + dir + "/v2.json" + kTopo + " --fidelity flow --json");
  REQUIRE(step.status == 0);
  const auto j = nlohmann::json::parse(step.out);
  const auto coll = run_shardsim("collective --topology switch:n=4,bw=100GB/s,lat=1us --op allreduce --bytes 1MiB --ranks 4 "
                                 "--fidelity flow --json");
  REQUIRE(coll.status == 0);
  const double expected = nlohmann::json::parse(coll.out).at(0).at("time_s").get<double>();
  CHECK(j.at("ranks") == 4);
  CHECK(j.at("ranks_simulated") == 4);
  CHECK(std::abs(j.at("step_time_s").get<double>() - expected) <= 0.5e-12);
  // Bad flags and files exit 2 naming them.
  std::ofstream(dir + "/groups.json") << R"({"0": [0, 1, 1]})";
  r = run_shardsim("trace import --format chakra --comm-groups " + dir + "/groups.json" + files + " --out " + dir + "/x.json");
  CHECK(r.status == 2);
  CHECK(r.out == "shardsim: error: " + dir + "/groups.json/0/2: rank 1 twice; expected each rank once\n");
  r = run_shardsim("trace import --format astra-v1 --per-rank " + std::string(SHARDSIM_FIXTURES_DIR) +
                   "/chakra_et/all_reduce_4npus_1MB/all_reduce.0.et --out " + dir + "/x.json");
  CHECK(r.status == 2);
  CHECK(r.out == "shardsim: error: --per-rank: with --format astra-v1; expected --format chakra, chakra-json or kineto "
                 "(one file per rank)\n");
}
