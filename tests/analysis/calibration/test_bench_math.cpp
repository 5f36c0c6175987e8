// Size and bandwidth arithmetic of the MPI and NCCL benchmark programs (no MPI, no GPU).
#include <doctest/doctest.h>

#include <algorithm>

#include "analysis/backends/mpi/bench_math.hpp"
#include "analysis/backends/mpi/launch.hpp"
#include "sim/error.hpp"

using namespace shardsim;

TEST_CASE("nccl-tests size list: geometric and arithmetic, bounds inclusive") {
  CHECK(bench::size_list(1 << 20, 8 << 20, 2, 0) == std::vector<std::uint64_t>{1 << 20, 2 << 20, 4 << 20, 8 << 20});
  CHECK(bench::size_list(1000, 3500, 1, 1000) == std::vector<std::uint64_t>{1000, 2000, 3000});
  CHECK(bench::size_list(8, 8, 2, 0) == std::vector<std::uint64_t>{8});
  CHECK(bench::size_list(1ULL << 62, UINT64_MAX, 4, 0) == std::vector<std::uint64_t>{1ULL << 62});  // no overflow
  CHECK_THROWS_WITH_AS(bench::size_list(0, 8, 2, 0), "size range: need 0 < min <= max", std::invalid_argument);
  CHECK_THROWS_WITH_AS(bench::size_list(8, 16, 1, 0), "size range: need a factor > 1 or a step > 0", std::invalid_argument);
}

TEST_CASE("element counts and effective sizes follow nccl-tests getCollByteCount") {
  // all-reduce: every rank reduces S: 1 MiB of float = 262144 elements.
  CHECK(bench::call_count("allreduce", 1 << 20, 4, 4) == 262144);
  // reduce-scatter: S is a rank's input, each rank gets S/(n elem) = 1 MiB / (3 x 4) = 87381 elements,
  // so the measured S is 87381 x 3 x 4 = 1048572 bytes.
  CHECK(bench::call_count("reducescatter", 1 << 20, 3, 4) == 87381);
  CHECK(bench::effective_bytes("reducescatter", 1 << 20, 3, 4) == 1048572);
  CHECK(bench::effective_bytes("allgather", 1 << 20, 4, 4) == 1 << 20);
  CHECK(bench::effective_bytes("pingpong", 1001, 2, 4) == 1000);
  // algbw = S / t: 1 MiB in 1000 us = 1.048576 GB/s.
  CHECK(bench::algbw_GBps(1 << 20, 1000.0) == doctest::Approx(1.048576).scale(0));
  CHECK(bench::algbw_GBps(1 << 20, 0.0) == 0.0);
}

TEST_CASE("OpenMPI algorithm ids (coll_tuned, OpenMPI 4.1) and the mpirun command") {
  CHECK(backends::ompi_algorithm_id("allreduce", "ring") == 4);
  CHECK(backends::ompi_algorithm_id("allreduce", "rabenseifner") == 6);
  CHECK(backends::ompi_algorithm_id("allreduce", "recursive_doubling") == 3);
  CHECK(backends::ompi_algorithm_id("reducescatter", "ring") == 3);
  CHECK(backends::ompi_algorithm_id("allgather", "ring") == 4);
  CHECK_FALSE(backends::ompi_algorithm_id("allgather", "rabenseifner").has_value());
  backends::MpiRun r;
  r.np = 4;
  r.collectives = {"allreduce", "pingpong"};
  r.algorithm = "ring";
  r.program = "/bin/bench";
  r.jsonl = "o.jsonl";
  const std::vector<std::string> expected{
      "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", "--mca", "coll_tuned_use_dynamic_rules", "1",
      "--mca", "coll_tuned_allreduce_algorithm", "4", "/bin/bench", "-c", "allreduce,pingpong", "-b", "1M", "-e", "8M",
      "-f", "2", "-w", "2", "-n", "10", "-p", "1", "--source", "shardsim bench mpi", "-a", "ring", "-o", "o.jsonl"};
  CHECK(backends::mpirun_command(r) == expected);
  r.collectives = {"allgather"};
  r.algorithm = "rabenseifner";
  CHECK_THROWS_WITH_AS(backends::mpirun_command(r),
                       "--algorithm: 'rabenseifner' is not an OpenMPI allgather algorithm; expected one of linear, "
                       "bruck, recursive_doubling, ring, neighbor, two_proc",
                       ConfigError);
}

TEST_CASE("bench emulate --algorithm entries: NAME for every collective that has it, COLLECTIVE:NAME for one") {
  const std::vector<std::string> colls{"allreduce", "allgather", "broadcast", "alltoall"};
  auto r = backends::collectives_with_algorithm(colls, "ring");
  CHECK(r.collectives == std::vector<std::string>{"allreduce", "allgather"});
  CHECK(r.algorithm == "ring");
  r = backends::collectives_with_algorithm(colls, "linear");  // allgather's and alltoall's
  CHECK(r.collectives == std::vector<std::string>{"allgather", "alltoall"});
  r = backends::collectives_with_algorithm(colls, "alltoall:linear");
  CHECK(r.collectives == std::vector<std::string>{"alltoall"});
  CHECK(r.algorithm == "linear");
  CHECK(backends::collectives_with_algorithm(colls, "").collectives == colls);  // OpenMPI's own choice
  CHECK(backends::ompi_algorithm_id("broadcast", "binomial") == 6);
  CHECK(backends::ompi_algorithm_id("alltoall", "pairwise") == 2);
  CHECK(backends::ompi_algorithm_id("reducescatter", "ring") == 3);
  CHECK_THROWS_WITH_AS(backends::collectives_with_algorithm({"broadcast"}, "ring"),
                       "--algorithm: 'ring' is not an OpenMPI algorithm of broadcast; expected one of broadcast: "
                       "basic_linear, chain, pipeline, split_binary_tree, binary_tree, binomial, knomial, "
                       "scatter_allgather, scatter_allgather_ring (optionally as COLLECTIVE:NAME)",
                       ConfigError);
  CHECK_THROWS_AS(backends::collectives_with_algorithm(colls, "allreduce:pairwise"), ConfigError);
  backends::MpiRun m;
  m.collectives = {"broadcast", "alltoall"};
  m.algorithm = "linear_sync";
  CHECK_THROWS_AS(backends::mpirun_command(m), ConfigError);  // broadcast has no linear_sync
  m.collectives = {"alltoall"};
  const auto cmd = backends::mpirun_command(m);
  CHECK(std::find(cmd.begin(), cmd.end(), "coll_tuned_alltoall_algorithm") != cmd.end());
  CHECK(std::find(cmd.begin(), cmd.end(), "4") != cmd.end());
}

TEST_CASE("run_process: exit status, output, timeout, missing program") {
  auto r = backends::run_process({"sh", "-c", "echo hi; exit 3"}, 10);
  CHECK(r.exit_code == 3);
  CHECK(r.output == "hi\n");
  CHECK_FALSE(r.timed_out);
  r = backends::run_process({"sh", "-c", "sleep 30"}, 0.3);
  CHECK(r.timed_out);
  CHECK(r.exit_code == 128 + 15);  // SIGTERM
  CHECK_THROWS_WITH_AS(backends::run_process({"no-such-program-xyz"}, 1),
                       "'no-such-program-xyz' not found in PATH (command: no-such-program-xyz)", backends::LaunchError);
}
