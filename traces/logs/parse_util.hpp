#pragma once
// Text helpers shared by the log parsers (internal to traces/logs).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardsim::logs {

std::string_view trim(std::string_view s);
/// Lines without their terminators ("\n" or "\r\n"); a final line without "\n" counts.
std::vector<std::string_view> split_lines(std::string_view text);
/// Whitespace-separated tokens; never empty for a non-blank line.
std::vector<std::string_view> tokens(std::string_view s);
bool starts_with_number(std::string_view tok);
/// Last path component.
std::string base_name(const std::string& path);

/// Whole token must be a finite number >= 0; else ConfigError(where, "<column> '<tok>' ...").
double parse_finite(std::string_view tok, std::string_view column, const std::string& where);
std::uint64_t parse_uint(std::string_view tok, std::string_view column, const std::string& where);
/// The token as a string when it is UTF-8 (records are written as JSON, which must be); else
/// ConfigError(where, "byte 0x.. in the <column> is not UTF-8", "UTF-8 text").
std::string utf8_or_throw(std::string_view tok, std::string_view column, const std::string& where);
/// canonical_collective() or ConfigError(where, "unknown collective '<name>'", valid list).
std::string canonical_or_throw(const std::string& name, const std::string& where);

}  // namespace shardsim::logs
