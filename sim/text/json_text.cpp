#include "sim/text/json_text.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace shardsim {

void check_json_depth(std::string_view text, const std::string& source, const std::string& expected) {
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
      if (++depth > kMaxJsonDepth) {
        throw ConfigError(fmt::format("{}: byte {}", source, i), fmt::format("JSON nested more than {} levels", kMaxJsonDepth),
                          expected);
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

std::size_t first_invalid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;              // continuation bytes
    unsigned lo = 0x80, hi = 0xbf;  // range of the first continuation byte (RFC 3629 section 4)
    if (b < 0x80) {
      ++i;
      continue;
    } else if (b >= 0xc2 && b <= 0xdf) {
      n = 1;
    } else if (b >= 0xe0 && b <= 0xef) {
      n = 2;
      if (b == 0xe0) lo = 0xa0;
      if (b == 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      n = 3;
      if (b == 0xf0) lo = 0x90;
      if (b == 0xf4) hi = 0x8f;
    } else {
      return i;
    }
    if (i + n >= s.size()) return i;  // truncated sequence
    for (std::size_t k = 1; k <= n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xbf)) return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

std::size_t json_error_offset(std::string_view text) {
  // The SAX interface reports the position of every error; the DOM parser drops it for
  // out_of_range. Builds nothing.
  struct Sax final : nlohmann::json_sax<nlohmann::json> {
    std::size_t offset = 0;
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return true; }
    bool key(string_t&) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::json::exception&) override {
      // position counts the characters read, the token included.
      offset = position >= last_token.size() ? position - last_token.size() : 0;
      return false;
    }
  } sax;
  nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
  return sax.offset;
}

nlohmann::json parse_json_text(std::string_view text, const std::string& source, const std::string& expected) {
  check_json_depth(text, source, expected);
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(source, fmt::format("invalid JSON ({})", e.what()), expected);
  } catch (const nlohmann::json::out_of_range& e) {
    throw ConfigError(fmt::format("{}: byte {}", source, json_error_offset(text)), fmt::format("invalid JSON ({})", e.what()),
                      expected);
  }
}

}  // namespace shardsim
