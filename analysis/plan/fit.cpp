#include "analysis/plan/fit.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "sim/units.hpp"

namespace shardsim::plan {

std::string does_not_fit_text(const nlohmann::json& memory_bytes, double hbm_bytes, double time_if_it_fit_s) {
  auto bytes = [](double b) { return units::format_bytes(static_cast<std::uint64_t>(b)); };
  const char* largest = nullptr;
  double largest_bytes = -1;
  for (const char* k : {"params", "grads", "optimizer", "activations", "buffers"}) {
    const double v = memory_bytes.at(k).get<double>();
    if (v > largest_bytes) {
      largest = k;
      largest_bytes = v;
    }
  }
  const double peak = memory_bytes.at("peak").get<double>();
  return fmt::format("does not fit: peak {} > HBM {} ({} {} is the largest term; {} over); if it fit: step {}",
                     bytes(peak), bytes(hbm_bytes), largest, bytes(largest_bytes), bytes(peak - hbm_bytes),
                     units::format_seconds(time_if_it_fit_s));
}

}  // namespace shardsim::plan
