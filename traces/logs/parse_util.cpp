#include "traces/logs/parse_util.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>

#include "sim/error.hpp"
#include "sim/text/json_text.hpp"
#include "traces/logs/record.hpp"

namespace shardsim::logs {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    start = nl + 1;
  }
  return out;
}

std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool starts_with_number(std::string_view tok) {
  return !tok.empty() && std::isdigit(static_cast<unsigned char>(tok.front()));
}

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

double parse_finite(std::string_view tok, std::string_view column, const std::string& where) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (ec != std::errc() || ptr != tok.data() + tok.size() || !std::isfinite(v) || v < 0) {
    throw ConfigError(where, fmt::format("{} '{}'", column, tok), "a finite number >= 0");
  }
  return v;
}

std::uint64_t parse_uint(std::string_view tok, std::string_view column, const std::string& where) {
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (ec != std::errc() || ptr != tok.data() + tok.size()) {
    throw ConfigError(where, fmt::format("{} '{}'", column, tok), "an unsigned integer");
  }
  return v;
}

std::string utf8_or_throw(std::string_view tok, std::string_view column, const std::string& where) {
  if (const auto bad = first_invalid_utf8(tok); bad != std::string_view::npos) {
    throw ConfigError(where, fmt::format("byte 0x{:02x} in the {} is not UTF-8", static_cast<unsigned char>(tok[bad]), column),
                      "UTF-8 text");
  }
  return std::string(tok);
}

std::string canonical_or_throw(const std::string& name, const std::string& where) {
  const auto c = canonical_collective(name);
  if (!c) {
    throw ConfigError(where, fmt::format("unknown collective '{}'", name), std::string("one of ") + valid_collectives());
  }
  return *c;
}

}  // namespace shardsim::logs
