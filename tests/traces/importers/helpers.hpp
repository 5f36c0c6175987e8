#pragma once
// Shared by the importer suites: fixture paths and exact-message checks.
#include <doctest/doctest.h>

#include <string>

#include "sim/error.hpp"

namespace shardsim::test {

inline std::string fixture(const std::string& rel) { return std::string(SHARDSIM_FIXTURES_DIR) + "/" + rel; }

/// Runs f and returns the ConfigError text ("" if nothing was thrown).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace shardsim::test
