// Sweep files (analysis/sweep/sweep_file.hpp parse_sweep): parsing and validation, then the
// first and last scenario. `step` and `compare` are the library's; `collective` is registered
// here under the name and flag keys of the CLI's (analysis/cli/collective.cpp; the CLI is not
// linked in); no runner is called, as loading a sweep runs nothing.
#include <nlohmann/json.hpp>

#include <stdexcept>

#include "analysis/scenario/scenario.hpp"
#include "analysis/sweep/sweep_file.hpp"
#include "fuzz_common.hpp"

namespace {

nlohmann::json not_run(const nlohmann::json&) { throw std::logic_error("fuzz_sweep_json runs no scenario"); }

const shardsim::analysis::ScenarioRegistration collective{
    {"collective",
     {"topology", "op", "bytes", "ranks", "algorithm", "fidelity", "chunks", "reduce-bw", "step-overhead"},
     not_run}};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return shardsim::fuzz::expect_config_errors_only([&] {
    const auto spec = shardsim::sweep::parse_sweep(shardsim::fuzz::as_text(data, size), "fuzz.json");
    (void)spec.scenario(0);
    (void)spec.scenario(spec.size() - 1);
  });
}
