// Topology JSON loader (topologies/load.hpp topology_from_json). Text that is not JSON is
// skipped: the JSON parser is not the code under test here.
#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"
#include "topologies/load.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = nlohmann::json::parse(shardsim::fuzz::as_text(data, size), nullptr, false);
  if (j.is_discarded()) return 0;
  return shardsim::fuzz::expect_config_errors_only([&] { (void)shardsim::topo::topology_from_json(j, "fuzz.json"); });
}
