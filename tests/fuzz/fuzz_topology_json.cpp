// Topologies as users give them (topologies/load.hpp make_topology): inline JSON, which takes
// the same path as a .json file (parse, then the builder registry), and also inline specs
// (torus:dims=8x8,...) and preset names. Text ending in ".json" is skipped: it names a file.
//
// The target is the loading path (syntax, parameters, validation), not the builders at scale:
// a valid topology of millions of devices takes minutes to build under ASan
// (torus:dims=2048x2048: 345 s, 4.4 GB) and would read as a hang. So inputs are skipped when
// the product of their bare numbers exceeds 4096, a bound on the devices and links any
// builder makes from them. A bare number is a digit run not glued to a letter (other than the
// 'x' of "8x8") or a '.': "100GB/s", "1.5us", "h100" and "1e9" do not count. The builders'
// own caps on larger counts (kMaxBuilderCount) have unit tests.
#include <string>
#include <string_view>

#include "fuzz_common.hpp"
#include "topologies/load.hpp"

namespace {

bool glued(char c) { return c == '.' || (((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) && c != 'x'); }

bool small_enough(std::string_view s) {
  double product = 1;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] < '0' || s[i] > '9') {
      ++i;
      continue;
    }
    std::size_t j = i;
    double v = 0;
    for (; j < s.size() && s[j] >= '0' && s[j] <= '9'; ++j) v = v * 10 + (s[j] - '0');
    if (!(i > 0 && glued(s[i - 1])) && !(j < s.size() && glued(s[j])) && v > 1) product *= v;
    if (product > 4096) return false;
    i = j;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string spec(shardsim::fuzz::as_text(data, size));
  if (spec.ends_with(".json") || !small_enough(spec)) return 0;
  return shardsim::fuzz::expect_config_errors_only([&] { (void)shardsim::topo::make_topology(spec, "fuzz"); });
}
