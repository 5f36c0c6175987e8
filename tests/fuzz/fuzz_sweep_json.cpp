// Sweep file loader (analysis/sweep/sweep_file.hpp SweepSpec): validation, then the first
// and last scenario when there are any.
#include <nlohmann/json.hpp>

#include "analysis/sweep/sweep_file.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = nlohmann::json::parse(shardsim::fuzz::as_text(data, size), nullptr, false);
  if (j.is_discarded()) return 0;
  return shardsim::fuzz::expect_config_errors_only([&] {
    const shardsim::sweep::SweepSpec spec(j, "fuzz.json");
    if (spec.size() > 0) {
      (void)spec.scenario(0);
      (void)spec.scenario(spec.size() - 1);
    }
  });
}
