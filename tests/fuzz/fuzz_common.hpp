#pragma once
// Shared by the fuzz targets: the contract under test is "bad input throws ConfigError";
// any other exception escapes and libFuzzer reports it as a crash, as it does for signals,
// sanitizer findings, leaks, timeouts (-timeout) and memory blow-ups (-rss_limit_mb).
// Each target feeds the bytes to the same entry point the CLI uses for that input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/error.hpp"

namespace shardsim::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Inflated-size cap for gzip inputs: far above what 64 KiB (libFuzzer -max_len) of
/// fuzzed deflate data can legitimately give, far below -rss_limit_mb.
inline constexpr std::uint64_t kMaxInflatedBytes = std::uint64_t{1} << 24;

template <class F>
int expect_config_errors_only(F&& f) {
  try {
    f();
  } catch (const ConfigError&) {
    // the documented way to reject input
  }
  return 0;
}

}  // namespace shardsim::fuzz
