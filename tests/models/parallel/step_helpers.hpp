#pragma once
// Mesh-step fixtures shared by the parallel-step suites (test_parallel_step.cpp,
// test_parallel_tp.cpp).
#include <cstdint>
#include <vector>

#include "models/compute/device.hpp"
#include "models/optimizer/optimizer.hpp"
#include "models/step/parallel_graphs.hpp"
#include "helpers.hpp"

namespace shardsim::parallel::test {

using step::FunctionComm;
using step::ParallelStepConfig;

// A small decoder: 16 layers, h 1024, 16 heads, GELU MLP of 4h, RMSNorm, no biases.
inline parallel::ModelSpec toy(std::uint64_t layers = 16) { return toy_decoder(layers, 2048); }

inline ParallelStepConfig config(const parallel::ModelSpec& m, MeshSizes z, std::uint64_t global_batch) {
  ParallelStepConfig c;
  c.model = &m;
  c.mesh = z;
  c.micro_batch = 1;
  c.global_batch = global_batch;
  c.optimizer = &opt::find_optimizer("adam", "test");
  return c;
}

inline FunctionComm zero_comm() {
  return FunctionComm([](coll::OpKind, std::uint64_t, const std::vector<int>&) { return 0.0; });
}

// A preset whose collectives and transfers take no SMs (comm_units, p2p_comm_units 0): the tests
// of a schedule's closed form (what is exposed) keep compute durations fixed; contention has its
// own test.
inline compute::Device no_contention(const char* preset) {
  compute::Device d = compute::find_device(preset, "test");
  d.comm_units = 0;
  d.p2p_comm_units = 0;
  return d;
}

}  // namespace shardsim::parallel::test
