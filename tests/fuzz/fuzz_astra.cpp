// ASTRA-sim 1.0 text workloads, then the native mapping (with a group size, so collectives map).
#include "fuzz_common.hpp"
#include "traces/importers/astra_v1.hpp"
#include "traces/importers/native.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardsim::importers;
  return shardsim::fuzz::expect_config_errors_only([&] {
    ImportOptions o;
    o.group_size = 8;
    (void)to_native(decode_astra_v1(shardsim::fuzz::as_text(data, size), "fuzz.txt"), o);
  });
}
