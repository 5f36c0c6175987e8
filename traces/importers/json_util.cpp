#include "traces/importers/json_util.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "sim/error.hpp"
#include "sim/text/json_text.hpp"

namespace shardsim::importers {

nlohmann::json parse_json(std::string_view text, const std::string& source) {
  check_json_depth(text, source, "a trace file");  // before anything recursive sees the DOM
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    std::string msg = e.what();
    // nlohmann's text: "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
    if (const auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
    // e.byte counts characters read, 1-based; report the 0-based offset of the bad one.
    throw ConfigError(fmt::format("{}: byte {}", source, e.byte > 0 ? e.byte - 1 : 0), fmt::format("invalid JSON ({})", msg),
                      "valid JSON");
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond the range of a double ("1e999"); nlohmann gives no position for it.
    std::string msg = e.what();
    if (const auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
    throw ConfigError(fmt::format("{}: byte {}", source, json_error_offset(text)), fmt::format("invalid JSON ({})", msg),
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
