// Chakra ET (protobuf stream, optionally gzip) and Chakra JSON, then the native mapping.
#include <vector>

#include "fuzz_common.hpp"
#include "traces/importers/chakra.hpp"
#include "traces/importers/input.hpp"
#include "traces/importers/native.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardsim::importers;
  return shardsim::fuzz::expect_config_errors_only([&] {
    std::string text(shardsim::fuzz::as_text(data, size));
    if (is_gzip(text)) text = gunzip(text, "fuzz.et.gz", 1 << 22);
    const bool json = !text.empty() && text[0] == '{';
    auto t = json ? decode_chakra_json(text, "fuzz.json") : decode_chakra_et(text, "fuzz.et");
    (void)to_native(std::vector<ChakraTrace>{std::move(t)}, {});
  });
}
