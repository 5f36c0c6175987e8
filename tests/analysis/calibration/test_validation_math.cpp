// Validation arithmetic: OpenMPI -> model algorithms, bit reversal, percentiles.
#include <doctest/doctest.h>

#include "analysis/validation/validate.hpp"

using namespace shardsim;

TEST_CASE("OpenMPI algorithm names map onto model algorithms") {
  CHECK(validation::mpi_algorithm_to_model("allreduce", "ring")->name == "ring");
  CHECK(validation::mpi_algorithm_to_model("allreduce", "segmented_ring")->name == "ring");
  const auto r = validation::mpi_algorithm_to_model("allreduce", "rabenseifner");
  CHECK(r->name == "rabenseifner");
  CHECK(r->bit_reversed);
  CHECK(validation::mpi_algorithm_to_model("reducescatter", "recursive_halving")->name == "rabenseifner");
  CHECK(validation::mpi_algorithm_to_model("allgather", "recursive_doubling")->name == "rabenseifner");
  // OpenMPI's recursive-doubling all-reduce sends the whole vector log n times: no model twin.
  CHECK_FALSE(validation::mpi_algorithm_to_model("allreduce", "recursive_doubling").has_value());
}

TEST_CASE("bit-reversed group: position q holds rank bitrev(q)") {
  // n = 4: bitrev(0,1,2,3) over 2 bits = 0,2,1,3. OpenMPI's first partner of rank 0 is rank 1
  // (distance 1); the model's first partner of position 0 is position 2 = rank 1.
  CHECK(validation::bit_reversed_group(4) == std::vector<int>{0, 2, 1, 3});
  CHECK(validation::bit_reversed_group(8) == std::vector<int>{0, 4, 2, 6, 1, 5, 3, 7});
  CHECK(validation::bit_reversed_group(3) == std::vector<int>{0, 1, 2});  // not a power of two
}

TEST_CASE("nearest-rank percentiles") {
  CHECK(validation::percentile({0.05, 0.01, 0.03}, 0.5) == 0.03);
  CHECK(validation::percentile({0.1, 0.2, 0.3, 0.4}, 0.5) == 0.2);   // ceil(2) = 2nd
  CHECK(validation::percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.9) == 9);
  CHECK(validation::percentile({}, 0.5) == 0);
}
