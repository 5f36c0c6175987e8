#pragma once
// The hand-made workloads and step configurations of the step tests: every figure of a step
// on them can be derived by hand (on the toy device, toy_device.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "models/optimizer/optimizer.hpp"
#include "models/step/step.hpp"

namespace shardsim::test {

/// One unit per entry of `saved_bytes`, each with `params` parameters ("u0.w", "u1.w", ...):
/// forward ops in unit order, `forward_flops` each, unit u saving saved_bytes[u] activation
/// bytes; then backward ops in reverse unit order, twice the forward FLOPs each.
inline step::Workload units_workload(std::string name, double forward_flops, std::uint64_t params,
                                     const std::vector<std::uint64_t>& saved_bytes) {
  step::Workload w;
  w.name = std::move(name);
  w.units = static_cast<std::uint32_t>(saved_bytes.size());
  for (std::uint32_t u = 0; u < w.units; ++u) {
    w.ops.push_back({step::OpPhase::forward, u, forward_flops, 0, saved_bytes[u], {}, {}});
  }
  for (std::uint32_t u = w.units; u-- > 0;) w.ops.push_back({step::OpPhase::backward, u, 2 * forward_flops, 0, 0, {}, {}});
  for (std::uint32_t u = 0; u < w.units; ++u) w.params.push_back({"u" + std::to_string(u) + ".w", params, u, 0, 0});
  return w;
}

/// Strategy `s` with Adam over a data-parallel group of `dp` (ranks 0..dp-1), gradient buckets
/// of `bucket_bytes`; everything else the StepConfig defaults.
inline step::StepConfig step_config(step::Strategy s, std::uint64_t dp, std::uint64_t bucket_bytes) {
  step::StepConfig c;
  c.strategy = s;
  c.optimizer = &opt::find_optimizer("adam", "t");
  c.dp = dp;
  c.bucket_bytes = bucket_bytes;
  return c;
}

}  // namespace shardsim::test
