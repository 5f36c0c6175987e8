// ASTRA-sim 1.0 text workloads (`trace import --format astra-v1`), then the native mapping
// (with a group size, so that collectives map), whose result must load back (fuzz_native.hpp).
#include "fuzz_common.hpp"
#include "fuzz_native.hpp"
#include "traces/importers/astra_v1.hpp"
#include "traces/importers/native.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardsim::importers;
  return shardsim::fuzz::expect_config_errors_only([&] {
    ImportOptions o;
    o.group_size = 8;
    shardsim::fuzz::expect_loadable(to_native(decode_astra_v1(shardsim::fuzz::as_text(data, size), "fuzz.txt"), o));
  });
}
