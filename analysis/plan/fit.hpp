#pragma once
// The line every command prints for a configuration that does not fit in device memory
// (step, compare, plan): the peak against HBM, the largest memory term, how far over, and
// what the step would take if it fit, e.g.
//   does not fit: peak 93.1 GiB > HBM 80 GiB (activations 61.2 GiB is the largest term;
//   13.1 GiB over); if it fit: step 1.234 s
// (one line). Terms are the per-device breakdown of models/memory: peak = params + grads +
// optimizer + activations + buffers, all live at the end of backward; over = peak - HBM.
// Sizes as units::format_bytes, the time as units::format_seconds.
#include <nlohmann/json.hpp>

#include <string>

namespace shardsim::plan {

/// `memory_bytes`: an object with params, grads, optimizer, activations, buffers and peak in
/// bytes (step --json's "memory_bytes"). Among equal terms the first in that order is named.
/// Throws nlohmann::json::out_of_range when a key is missing.
std::string does_not_fit_text(const nlohmann::json& memory_bytes, double hbm_bytes, double time_if_it_fit_s);

}  // namespace shardsim::plan
