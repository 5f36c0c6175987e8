// Kineto / PyTorch profiler Chrome traces (`trace import --format kineto`), raw or gzip, then
// the native mapping, whose result must load back (fuzz_native.hpp).
#include <string>

#include "fuzz_common.hpp"
#include "fuzz_native.hpp"
#include "traces/importers/input.hpp"
#include "traces/importers/kineto.hpp"
#include "traces/importers/native.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardsim::importers;
  return shardsim::fuzz::expect_config_errors_only([&] {
    std::string text(shardsim::fuzz::as_text(data, size));
    if (is_gzip(text)) text = gunzip(text, "fuzz.json", shardsim::fuzz::kMaxInflatedBytes);
    shardsim::fuzz::expect_loadable(to_native(decode_kineto(text, "fuzz.json"), {}));
  });
}
