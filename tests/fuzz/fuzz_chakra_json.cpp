// Chakra JSON-feeder form (`trace import --format chakra-json`), then the native mapping,
// whose result must load back (fuzz_native.hpp).
#include <vector>

#include "fuzz_common.hpp"
#include "fuzz_native.hpp"
#include "traces/importers/chakra.hpp"
#include "traces/importers/native.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardsim::importers;
  return shardsim::fuzz::expect_config_errors_only([&] {
    const auto t = decode_chakra_json(shardsim::fuzz::as_text(data, size), "fuzz.json");
    shardsim::fuzz::expect_loadable(to_native(std::vector<ChakraTrace>{t}, {}));
  });
}
