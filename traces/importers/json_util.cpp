#include "traces/importers/json_util.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "sim/error.hpp"

namespace shardsim::importers {

nlohmann::json parse_json(std::string_view text, const std::string& source) {
  // Depth check first, with a scan that skips strings, so the DOM is never built too deep.
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > 512) {
        throw ConfigError(fmt::format("{}: byte {}", source, i), "JSON nested more than 512 levels",
                          "a trace file");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    std::string msg = e.what();
    // nlohmann's text: "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    if (const auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
    // e.byte counts characters read, 1-based; report the 0-based offset of the bad one.
    throw ConfigError(fmt::format("{}: byte {}", source, e.byte > 0 ? e.byte - 1 : 0), fmt::format("invalid JSON ({})", msg),
                      "valid JSON");
  }
}

std::int64_t json_int(const nlohmann::json& v, const std::string& where) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw ConfigError(where, fmt::format("{} is out of range", v.dump()), "a 64-bit integer");
    }
    return v.get<std::int64_t>();
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) return static_cast<std::int64_t>(d);
  }
  throw ConfigError(where, fmt::format("{}", v.dump()), "an integer");
}

std::uint64_t json_uint(const nlohmann::json& v, const std::string& where) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  const std::int64_t i = json_int(v, where);
  if (i < 0) throw ConfigError(where, fmt::format("negative value {}", i), "an integer >= 0");
  return static_cast<std::uint64_t>(i);
}

double json_number(const nlohmann::json& v, const std::string& where) {
  if (!v.is_number()) throw ConfigError(where, v.dump(), "a number");
  const double d = v.get<double>();
  if (!std::isfinite(d)) throw ConfigError(where, v.dump(), "a finite number");
  return d;
}

}  // namespace shardsim::importers
