// Topologies as users give them (topologies/load.hpp make_topology): inline JSON, which takes
// the same path as a .json file (parse, then the builder registry), and also inline specs
// (torus:dims=8x8,...) and preset names. Text ending in ".json" is skipped: it names a file.
#include <string>

#include "fuzz_common.hpp"
#include "topologies/load.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string spec(shardsim::fuzz::as_text(data, size));
  if (spec.ends_with(".json")) return 0;
  return shardsim::fuzz::expect_config_errors_only([&] { (void)shardsim::topo::make_topology(spec, "fuzz"); });
}
