// Native operator traces (traces/trace/trace.hpp parse_trace, what `step --trace` loads). A
// trace that loads must also load again once written (save_trace's text), unchanged.
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "fuzz_common.hpp"
#include "traces/trace/trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardsim::trace;
  std::optional<Trace> t;
  shardsim::fuzz::expect_config_errors_only([&] { t = parse_trace(shardsim::fuzz::as_text(data, size), "fuzz.json"); });
  if (!t) return 0;
  try {
    const auto text = to_json(*t).dump(1);
    if (to_json(parse_trace(text, "written back")).dump(1) != text) {
      std::fprintf(stderr, "fuzz_trace_json: the trace changes when written and read back\n");
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_trace_json: a loaded trace cannot be written and read back: %s\n", e.what());
    std::abort();
  }
  return 0;
}
