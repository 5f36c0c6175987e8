#pragma once
// Flag values of a command given as JSON (sweeps, the step/memory commands' library form):
// keys are the long flags without dashes; a missing or null key takes the default. Errors name
// the flag as --key. Shared by analysis/cli/step.cpp and analysis/cli/memory.cpp.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <string>

#include "sim/error.hpp"
#include "sim/units.hpp"

namespace shardsim::cli::flags {

using nlohmann::json;

inline std::string flag_str(const json& f, const char* key, const std::string& dflt) {
  if (!f.contains(key) || f.at(key).is_null()) return dflt;
  const auto& v = f.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return v.dump();
  throw ConfigError(std::string("--") + key, v.dump(), "a string");
}

// A flag value as the user typed it: 0 not 0.0, strings unquoted.
inline std::string show(const json& v) {
  if (v.is_number()) return fmt::format("{:g}", v.get<double>());
  return v.is_string() ? v.get<std::string>() : v.dump();
}

inline bool flag_bool(const json& f, const char* key) {
  if (!f.contains(key) || f.at(key).is_null()) return false;
  const auto& v = f.at(key);
  if (!v.is_boolean()) throw ConfigError(std::string("--") + key, v.dump(), "true or false");
  return v.get<bool>();
}

// A non-negative integer flag; `positive` rejects 0 with `expected`.
inline std::uint64_t flag_uint(const json& f, const char* key, std::uint64_t dflt, const char* expected) {
  if (!f.contains(key) || f.at(key).is_null()) return dflt;
  const auto& v = f.at(key);
  double x = 0;
  if (v.is_number()) x = v.get<double>();
  else if (v.is_string()) x = units::parse_count(v.get<std::string>(), std::string("--") + key);
  else throw ConfigError(std::string("--") + key, v.dump(), expected);
  if (!(x >= 1) || x != std::floor(x) || x > 1e15) {
    throw ConfigError(std::string("--") + key, show(v), expected);
  }
  return static_cast<std::uint64_t>(x);
}

}  // namespace shardsim::cli::flags
