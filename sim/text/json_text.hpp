#pragma once
// Parsing JSON text that users give (files, inline --topology values, traces, logs), shared by
// every layer that reads JSON: part of the base library below sim/ (sim/text, DESIGN 1).
//  - Depth: nlohmann::json copies and dumps values recursively, so a document nested thousands
//    of levels deep exhausts the stack long after it parsed. No shardsim input nests more
//    than a few levels: text nested deeper than kMaxJsonDepth is rejected before parsing.
//  - Errors: nlohmann::json::parse reports syntax errors as parse_error (with line and
//    column) but a number beyond the range of a double ("1e999") as out_of_range, without a
//    position; both become ConfigErrors here, the second with its byte offset.
//  - Output: nlohmann::json::dump throws on a string that is not UTF-8, so text parsers check
//    the strings they take from their input (names, hosts) with first_invalid_utf8.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace shardsim {

inline constexpr int kMaxJsonDepth = 512;

/// Throws ConfigError("<source>: byte N", "JSON nested more than 512 levels", expected), N
/// being the 0-based offset of the bracket that opens level 513. Brackets inside strings do
/// not count. Says nothing about the rest of the syntax (the parser does). O(bytes).
void check_json_depth(std::string_view text, const std::string& source, const std::string& expected);

/// check_json_depth, then nlohmann::json::parse. A syntax error throws
/// ConfigError(source, "invalid JSON (<nlohmann's message>)", expected); a number out of range
/// ConfigError("<source>: byte N", "invalid JSON (<nlohmann's message>)", expected).
nlohmann::json parse_json_text(std::string_view text, const std::string& source, const std::string& expected);

/// Offset of the first byte that does not belong to a well-formed UTF-8 sequence (RFC 3629:
/// no overlong forms, no surrogates, nothing above U+10FFFF), or npos when `s` is UTF-8.
std::size_t first_invalid_utf8(std::string_view s);

/// 0-based offset of the first byte of the token where parsing `text` stops (for an error
/// that nlohmann reports without one). Only meaningful when the text does not parse.
std::size_t json_error_offset(std::string_view text);

}  // namespace shardsim
