#pragma once
// The toy device of the step tests: 1 TFLOP/s, efficiency 1, no launch overhead, and HBM of
// 56,000 B/s, so that Adam's update of 2,000 parameters (28 bytes each, optimizer.hpp) takes
// exactly 1 s. Every schedule on it can be derived by hand.
#include "models/compute/device.hpp"

namespace shardsim::test {

inline compute::Device toy_device() {
  compute::Device d;
  d.name = "toy";
  d.peak_flops[compute::MathType::bf16] = 1e12;
  d.peak_flops[compute::MathType::fp32] = 1e12;
  d.hbm_Bps = 56000;
  d.hbm_bytes = 1ULL << 40;
  d.flops_eff = 1;
  d.mem_eff = 1;
  d.launch_s = 0;
  return d;
}

}  // namespace shardsim::test
