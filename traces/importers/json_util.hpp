#pragma once
// JSON helpers shared by the JSON importers: parse with the byte offset in the error, and
// typed field access that names the JSON pointer of a bad value.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace shardsim::importers {

/// Parses `text`; a syntax error becomes ConfigError("<source>: byte N", ...). Nesting deeper
/// than 512 levels is rejected (no trace format nests more than a few levels) so that
/// adversarial input cannot exhaust the stack.
nlohmann::json parse_json(std::string_view text, const std::string& source);

/// The value as a non-negative integer (a JSON integer, or a float with no fraction, as
/// Python's json writes 1.0). Throws ConfigError(where, ..., "an integer >= 0").
std::uint64_t json_uint(const nlohmann::json& v, const std::string& where);
/// The value as an integer of either sign.
std::int64_t json_int(const nlohmann::json& v, const std::string& where);
/// The value as a finite number.
double json_number(const nlohmann::json& v, const std::string& where);

}  // namespace shardsim::importers
