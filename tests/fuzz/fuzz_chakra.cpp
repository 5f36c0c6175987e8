// Chakra ET (`trace import --format chakra`): a protobuf stream, raw or gzip, then the native
// mapping, whose result must load back (fuzz_native.hpp). The JSON form has its own target
// (fuzz_chakra_json).
#include <google/protobuf/stubs/logging.h>

#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "fuzz_native.hpp"
#include "traces/importers/chakra.hpp"
#include "traces/importers/input.hpp"
#include "traces/importers/native.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // libprotobuf logs each invalid UTF-8 string it rejects; the ConfigError says enough.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardsim::importers;
  return shardsim::fuzz::expect_config_errors_only([&] {
    std::string text(shardsim::fuzz::as_text(data, size));
    if (is_gzip(text)) text = gunzip(text, "fuzz.et", shardsim::fuzz::kMaxInflatedBytes);
    shardsim::fuzz::expect_loadable(to_native(std::vector<ChakraTrace>{decode_chakra_et(text, "fuzz.et")}, {}));
  });
}
