// OpenMPI 4.1.4's fixed decision rules (models/collectives/ompi_decision.hpp) against the
// switch points of ompi/mca/coll/tuned/coll_tuned_decision_fixed.c, read by hand: each case
// names the row (communicator size) and the switch point it sits on, at both sides where a
// boundary matters.
#include <doctest/doctest.h>

#include <string>

#include "models/collectives/ompi_decision.hpp"
#include "models/collectives/ompi_tuned.hpp"
#include "sim/error.hpp"

using namespace shardsim;
using coll::OpKind;

namespace {
std::string pick(OpKind k, std::size_t n, std::uint64_t bytes) { return coll::ompi_fixed_decision(k, n, bytes, "test").algorithm; }
}  // namespace

TEST_CASE("all-reduce (commutative): the rows for n < 4, < 8, < 128, < 256 and >= 4096") {
  // n < 4: < 8 ring, < 4096 recursive_doubling, < 8192 ring, < 16384 rd, < 65536 ring,
  // < 262144 segmented_ring, else rabenseifner.
  CHECK(pick(OpKind::allreduce, 2, 4) == "ring");
  CHECK(pick(OpKind::allreduce, 2, 8) == "recursive_doubling");
  CHECK(pick(OpKind::allreduce, 3, 262143) == "segmented_ring");
  CHECK(pick(OpKind::allreduce, 3, 262144) == "rabenseifner");
  // n < 8: < 16 ring, < 8192 rd, else rabenseifner (the emulated 4 and 6 hosts at 1 MiB).
  CHECK(pick(OpKind::allreduce, 4, 8191) == "recursive_doubling");
  CHECK(pick(OpKind::allreduce, 4, 1 << 20) == "rabenseifner");
  CHECK(pick(OpKind::allreduce, 6, 15) == "ring");
  // n < 16 (8 hosts): < 8192 rd, else rabenseifner.
  CHECK(pick(OpKind::allreduce, 8, 1 << 20) == "rabenseifner");
  // n < 128: < 262144 rd; n < 256: < 131072 nonoverlapping, < 262144 rd, else rabenseifner.
  CHECK(pick(OpKind::allreduce, 100, 262143) == "recursive_doubling");
  CHECK(pick(OpKind::allreduce, 200, 131071) == "nonoverlapping");
  CHECK(pick(OpKind::allreduce, 200, 131072) == "recursive_doubling");
  // The last row (n >= 4096): < 2048 nonoverlapping, < 16384 segmented_ring, < 32768 rd.
  CHECK(pick(OpKind::allreduce, 5000, 16383) == "segmented_ring");
  CHECK(pick(OpKind::allreduce, 5000, 32767) == "recursive_doubling");
  CHECK(pick(OpKind::allreduce, 5000, 32768) == "rabenseifner");
}

TEST_CASE("reduce-scatter, all-gather, broadcast, all-to-all: the sizes each rule compares") {
  // reduce-scatter: total_dsize = the sum of the receive counts = S. n < 8: < 8 non_overlapping,
  // < 262144 recursive_halving, else ring.
  CHECK(pick(OpKind::reducescatter, 4, 262143) == "recursive_halving");
  CHECK(pick(OpKind::reducescatter, 4, 262144) == "ring");
  CHECK(pick(OpKind::reducescatter, 2, 100000) == "butterfly");  // n < 4: [65536, 131072)
  // all-gather: total_dsize = the send count = S / n. n == 2 two_proc; n < 32 recursive_doubling;
  // n < 64: < 1024 rd, < 65536 neighbor, else ring.
  CHECK(pick(OpKind::allgather, 2, 1 << 20) == "two_proc");
  CHECK(pick(OpKind::allgather, 8, 1 << 20) == "recursive_doubling");
  CHECK(pick(OpKind::allgather, 40, 40 * 1023) == "recursive_doubling");
  CHECK(pick(OpKind::allgather, 40, 40 * 1024) == "neighbor");
  CHECK(pick(OpKind::allgather, 40, 40 * 65536) == "ring");
  // broadcast: total_dsize = S. n < 8: ... < 1048576 basic_linear, else chain.
  CHECK(pick(OpKind::broadcast, 4, 1048575) == "basic_linear");
  CHECK(pick(OpKind::broadcast, 4, 1048576) == "chain");
  // n < 16: ... < 32768 binomial, else basic_linear.
  CHECK(pick(OpKind::broadcast, 8, 32767) == "binomial");
  CHECK(pick(OpKind::broadcast, 8, 1 << 20) == "basic_linear");
  // all-to-all: total_dsize = the count to each rank = S / n. n < 8: ... < 524288 linear,
  // < 1048576 pairwise, else linear; n < 16: < 262144 linear_sync, else linear.
  CHECK(pick(OpKind::alltoall, 4, 4 * 524287) == "linear");
  CHECK(pick(OpKind::alltoall, 4, 4 * 524288) == "pairwise");
  CHECK(pick(OpKind::alltoall, 4, 4 * 1048576) == "linear");
  CHECK(pick(OpKind::alltoall, 8, 8 * 262143) == "linear_sync");
  CHECK(pick(OpKind::alltoall, 8, 8 * 262144) == "linear");
}

TEST_CASE("the decision's broadcast chain runs with fan-out 1: the pipeline schedule") {
  const auto d = coll::ompi_fixed_decision(OpKind::broadcast, 4, 1 << 20, "test");
  CHECK(d.id == 2);
  CHECK(d.algorithm == "chain");
  CHECK(d.schedule == "pipeline");
  CHECK(d.total_dsize == (1u << 20));
  const auto a = coll::ompi_fixed_decision(OpKind::alltoall, 6, 6 * 1000, "test");
  CHECK(a.total_dsize == 1000);
  CHECK(a.schedule == a.algorithm);
}

TEST_CASE("no decision: a reduce, one rank; an id OpenMPI does not have") {
  CHECK_THROWS_WITH_AS(coll::ompi_fixed_decision(OpKind::reduce, 4, 1024, "rec 3"),
                       doctest::Contains("rec 3: OpenMPI's decision for reduce"), ConfigError);
  CHECK_THROWS_WITH_AS(coll::ompi_fixed_decision(OpKind::allreduce, 1, 1024, "rec 3"),
                       doctest::Contains("1 ranks; expected at least 2 ranks"), ConfigError);
  CHECK_THROWS_WITH_AS(coll::ompi_algorithm_name(OpKind::broadcast, 10, "x"),
                       doctest::Contains("an id from 1 to 9"), ConfigError);
  CHECK(coll::ompi_algorithm_name(OpKind::broadcast, 9, "x") == "scatter_allgather_ring");
}
