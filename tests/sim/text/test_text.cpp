// sim/text: join / split / trim, and the JSON text rules (depth limit, error offsets, UTF-8).
#include <doctest/doctest.h>

#include <string>

#include "sim/error.hpp"
#include "sim/text/json_text.hpp"
#include "sim/text/strings.hpp"

using shardsim::ConfigError;
namespace text = shardsim::text;

TEST_CASE("join, split and trim") {
  CHECK(text::join({}) == "");
  CHECK(text::join({"a"}) == "a");
  CHECK(text::join({"a", "b", "c"}) == "a, b, c");
  CHECK(text::join({"a", "b"}, "|") == "a|b");
  CHECK(text::split("a,,b", ',') == std::vector<std::string>{"a", "", "b"});
  CHECK(text::split("", ',') == std::vector<std::string>{""});
  CHECK(text::split("4x4x2", 'x') == std::vector<std::string>{"4", "4", "2"});
  CHECK(text::trim(" \t x y \r\n") == "x y");
  CHECK(text::trim(" \n ").empty());
  CHECK(text::join(text::split("p,q,r", ',')) == "p, q, r");
}

TEST_CASE("to_double: the whole string as a finite number, or nothing") {
  CHECK(text::to_double("0.5") == 0.5);
  CHECK(text::to_double("-2") == -2.0);
  CHECK(text::to_double("1e-3") == 1e-3);
  CHECK(text::to_double("1") == 1.0);
  for (const char* bad : {"", " 1", "1 ", "0.5x", "x", "inf", "nan", "1e999", "--1", "+1"}) {
    CAPTURE(bad);
    CHECK(!text::to_double(bad).has_value());
  }
}

TEST_CASE("JSON text: depth limit with the offset of the bracket that opens level 513") {
  const std::string deep = std::string(513, '[') + std::string(513, ']');
  CHECK_THROWS_WITH_AS(shardsim::parse_json_text(deep, "x.json", "a topology"),
                       "x.json: byte 512: JSON nested more than 512 levels; expected a topology", ConfigError);
  const std::string ok = std::string(512, '[') + std::string(512, ']');
  CHECK(shardsim::parse_json_text(ok, "x.json", "a topology").is_array());
  // Brackets inside strings do not count.
  CHECK(shardsim::parse_json_text("\"" + std::string(600, '[') + "\"", "x.json", "a string").is_string());
}

TEST_CASE("JSON text: syntax errors and out-of-range numbers are ConfigErrors") {
  try {
    (void)shardsim::parse_json_text("{\"a\": 1e999}", "y.json", "an object");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).rfind("y.json: byte 6: invalid JSON (", 0) == 0);
  }
  CHECK_THROWS_AS(shardsim::parse_json_text("{\"a\": }", "y.json", "an object"), ConfigError);
  CHECK(shardsim::first_invalid_utf8("plain") == std::string::npos);
  CHECK(shardsim::first_invalid_utf8("ab\xC0\x80") == 2);  // an overlong form
}
