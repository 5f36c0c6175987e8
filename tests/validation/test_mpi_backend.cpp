// The MPI backend on this machine: records, and every failure a clear error with a non-zero
// exit, never a hang (mpirun missing, a rank crashing, a timeout).
#include <doctest/doctest.h>

#include "common.hpp"
#include "traces/logs/record.hpp"

using namespace shardsim;

TEST_CASE("bench mpi writes one record per collective and size") {
  if (const auto why = vtest::mpi_unavailable(); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  const auto dir = vtest::tmpdir("mpi");
  const auto r = vtest::shardsim_cli({"bench", "mpi", "--np", "2", "--collective", "allreduce,pingpong,exchange", "--bytes",
                                      "64K:256K:x2", "--iters", "2", "--warmup", "1", "--algorithm", "ring", "--timeout",
                                      "120", "--out", dir + "/r.jsonl"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto recs = logs::read_jsonl_file(dir + "/r.jsonl");
  REQUIRE(recs.size() == 9);  // 3 kinds x {64K, 128K, 256K}
  CHECK(recs[0].collective == "allreduce");
  CHECK(recs[0].algorithm == "ring");
  CHECK(recs[0].bytes == 65536);
  CHECK(recs[3].collective == "pingpong");
  CHECK(recs[3].peer == 1);
  CHECK_FALSE(recs[3].algorithm.has_value());
  for (const auto& x : recs) {
    CHECK(x.time_us > 0);
    CHECK(x.algbw_GBps == doctest::Approx(static_cast<double>(x.bytes) / (x.time_us * 1e3)).scale(0));
  }
}

TEST_CASE("MPI failures: missing mpirun, crashing rank, timeout") {
  if (const auto why = vtest::mpi_unavailable(); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  const auto dir = vtest::tmpdir("mpifail");
  auto r = vtest::shardsim_cli({"bench", "mpi", "--np", "2", "--mpirun", "/nonexistent/mpirun", "--out", dir + "/a.jsonl"});
  CHECK(r.exit_code == 1);
  CHECK(r.output == "shardsim: error: '/nonexistent/mpirun' not found in PATH: install OpenMPI (Debian: openmpi-bin) or "
                    "pass --mpirun\n");
  r = vtest::shardsim_cli({"bench", "mpi", "--np", "2", "--bytes", "64K", "--timeout", "60", "--out", dir + "/b.jsonl",
                           "--inject=--crash-rank", "--inject=1"});
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("shardsim: error: mpirun failed with exit status") != std::string::npos);
  r = vtest::shardsim_cli({"bench", "mpi", "--np", "2", "--bytes", "64K", "--timeout", "3", "--out", dir + "/c.jsonl",
                           "--inject=--hang-rank", "--inject=1"},
                          60);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("shardsim: error: mpirun timed out after 3 s and was killed") != std::string::npos);
  CHECK_FALSE(r.timed_out);  // shardsim itself returned: the launch timeout fired
}
