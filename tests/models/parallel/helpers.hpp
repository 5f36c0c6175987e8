#pragma once
// Shared by the models/parallel tests.
#include <functional>
#include <string>

#include "sim/error.hpp"

namespace shardsim::parallel::test {

/// The message of the ConfigError `f` throws, or "no error".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace shardsim::parallel::test
