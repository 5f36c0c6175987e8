// Sweep files: validation before any scenario runs (exact messages), expansion order, hash.
#include <doctest/doctest.h>

#include "analysis/sweep/sweep_file.hpp"
#include "fake_commands.hpp"
#include "sim/error.hpp"

using shardsim::sweep::SweepSpec;
using nlohmann::json;

namespace {

json base() { return {{"command", "fake"}, {"x", 1}, {"y", 2.5}, {"label", "a"}, {"mode", "ok"}}; }

std::string error_of(const json& j) {
  shardsim::test::register_fake_commands();
  try {
    SweepSpec s(j, "t.json");
  } catch (const shardsim::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

json with_axes(const json& axes) { return {{"base", base()}, {"axes", axes}}; }

}  // namespace

TEST_CASE("a pointer not present in the base is rejected, naming the axis and listing the base's pointers") {
  CHECK(error_of(with_axes(json::parse(R"([{"pointer":"/z","values":[1]}])"))) ==
        "t.json: /axes/0/pointer: '/z' is not in the base; expected a pointer to a value of the base "
        "(one of /label, /mode, /x, /y)");
  CHECK(error_of(with_axes(json::parse(R"([{"pointer":"x","values":[1]}])"))) ==
        "t.json: /axes/0/pointer: 'x' is not a JSON pointer; expected a pointer to a value of the base "
        "(one of /label, /mode, /x, /y)");
  CHECK(error_of(with_axes(json::parse(R"([{"pointer":"/command","values":["fake"]}])"))) ==
        "t.json: /axes/0/pointer: '/command' varies the command; expected a pointer to a value of the base "
        "(one of /label, /mode, /x, /y)");
}

TEST_CASE("an empty axis is rejected") {
  CHECK(error_of(with_axes(json::parse(R"([{"pointer":"/x","values":[1,2]},{"pointer":"/y","values":[]}])"))) ==
        "t.json: /axes/1/values: an empty list for /y; expected at least one value");
  CHECK(error_of(with_axes(json::parse(R"([{"zip":[]}])"))) ==
        "t.json: /axes/0/zip: an empty zip; expected at least one {\"pointer\", \"values\"} list");
}

TEST_CASE("zipped lists of unequal length are rejected") {
  CHECK(error_of(with_axes(json::parse(
            R"([{"zip":[{"pointer":"/x","values":[1,2,3]},{"pointer":"/label","values":["a","b"]}]}])"))) ==
        "t.json: /axes/0/zip/1/values: 2 values for /label but 3 for /x; expected lists of equal length in a zip");
}

TEST_CASE("a value of the wrong type is rejected; a floating-point base takes any number") {
  CHECK(error_of(with_axes(json::parse(R"([{"pointer":"/label","values":["a",7]}])"))) ==
        "t.json: /axes/0/values/1: integer 7 for /label; expected a string, as the base value at /label");
  CHECK(error_of(with_axes(json::parse(R"([{"pointer":"/x","values":[2,2.5]}])"))) ==
        "t.json: /axes/0/values/1: number 2.5 for /x; expected an integer, as the base value at /x");
  CHECK(error_of(with_axes(json::parse(R"([{"pointer":"/mode","values":[true]}])"))) ==
        "t.json: /axes/0/values/0: boolean true for /mode; expected a string, as the base value at /mode");
  CHECK(error_of(with_axes(json::parse(R"([{"pointer":"/y","values":[3,0.5]}])"))) == "no error");
}

TEST_CASE("other structural errors name where they are") {
  CHECK(error_of(with_axes(json::parse(R"([{"pointer":"/x","values":[1]},{"pointer":"/x","values":[2]}])"))) ==
        "t.json: /axes/1/pointer: '/x' overlaps '/x' (/axes/0); expected each value of the base varied by one axis only");
  json j = with_axes(json::array());
  j["base"]["command"] = "nope";
  CHECK(error_of(j) == "t.json: /base/command: unknown command 'nope'; expected one of step, compare, fake");  // the library's own, then the test's
  j = with_axes(json::array());
  j["base"]["z"] = 1;
  CHECK(error_of(j) == "t.json: /base/z: unknown key 'z' for command 'fake'; expected one of x, y, label, mode, delay_ms");
  CHECK(error_of(json{{"base", base()}, {"axis", json::array()}}) ==
        "t.json: /axis: unknown key 'axis'; expected one of description, base, axes");
  CHECK(error_of(json{{"base", base()}}) == "t.json: /axes: no axes; expected a list of axes (may be empty)");
  CHECK(error_of(with_axes(json::parse(R"([{"pointer":"/x","values":[1],"extra":0}])"))) ==
        "t.json: /axes/0/extra: unknown key 'extra'; expected one of pointer, values");
}

TEST_CASE("sweep text: JSON syntax and nesting") {
  CHECK_THROWS_WITH_AS(shardsim::sweep::parse_sweep("{\"base\": ", "s.json"),
                       "s.json: invalid JSON ([json.exception.parse_error.101] parse error at line 1, column 10: "
                       "syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal); "
                       "expected a sweep object with keys base and axes",
                       shardsim::ConfigError);
  // fuzz_sweep_json: 3000 levels overflowed the stack in nlohmann::json's recursive copy.
  CHECK_THROWS_WITH_AS(
      shardsim::sweep::parse_sweep("{\"base\": " + std::string(3000, '[') + std::string(3000, ']') + "}", "s.json"),
      "s.json: byte 520: JSON nested more than 512 levels; expected a sweep object with keys base and axes",
      shardsim::ConfigError);
  CHECK_THROWS_WITH_AS(shardsim::sweep::parse_sweep(R"({"base": 1e999})", "s.json"),
                       "s.json: byte 9: invalid JSON ([json.exception.out_of_range.406] number overflow parsing '1e999'); "
                       "expected a sweep object with keys base and axes",
                       shardsim::ConfigError);
}

TEST_CASE("scenarios are the cartesian product of the items in file order, the last varying fastest") {
  shardsim::test::register_fake_commands();
  const SweepSpec s(with_axes(json::parse(R"([{"pointer":"/x","values":[1,2]},
      {"zip":[{"pointer":"/label","values":["a","b","c"]},{"pointer":"/y","values":[0.5,1.5,2.5]}]}])")),
                    "t.json");
  REQUIRE(s.size() == 6);  // 2 x 3 (the zip counts once)
  CHECK(s.axis_columns() == std::vector<std::string>{"/x", "/label", "/y"});
  CHECK(s.scenario(0) == json{{"command", "fake"}, {"x", 1}, {"y", 0.5}, {"label", "a"}, {"mode", "ok"}});
  CHECK(s.scenario(4) == json{{"command", "fake"}, {"x", 2}, {"y", 1.5}, {"label", "b"}, {"mode", "ok"}});
  CHECK(s.coordinates(5) == std::vector<std::size_t>{1, 2});
  const auto v = s.axis_values(2);
  CHECK(*v[0] == 1);
  CHECK(*v[1] == "c");
  CHECK(*v[2] == 2.5);
  const SweepSpec none(with_axes(json::array()), "t.json");
  CHECK(none.size() == 1);
  CHECK(none.scenario(0) == base());
}

TEST_CASE("the scenario hash is FNV-1a 64 of the canonical JSON") {
  // FNV-1a 64 of the 24 bytes {"command":"fake","x":1} computed independently (Python):
  // h = 0xcbf29ce484222325; for each byte: h ^= b; h = h * 0x100000001b3 mod 2^64.
  CHECK(shardsim::sweep::scenario_hash(json{{"x", 1}, {"command", "fake"}}) == "ddef8974a01fac42");
  CHECK(shardsim::sweep::scenario_hash(json{{"x", 2}, {"command", "fake"}}) != "ddef8974a01fac42");
}

TEST_CASE("label columns: zipped values written next to the axes, not applied to the scenario") {
  shardsim::test::register_fake_commands();
  const SweepSpec s(with_axes(json::parse(R"([{"zip":[{"pointer":"/label","values":["p","q"]},
      {"column":"link_bw_GBps","values":[25,50]}]}])")),
                    "t.json");
  CHECK(s.axis_columns() == std::vector<std::string>{"/label", "link_bw_GBps"});
  CHECK(s.scenario(1) == json{{"command", "fake"}, {"x", 1}, {"y", 2.5}, {"label", "q"}, {"mode", "ok"}});
  CHECK(*s.axis_values(1)[1] == 50);
  CHECK(error_of(with_axes(json::parse(R"([{"column":"bw","values":[1]}])"))) ==
        "t.json: /axes/0/column: a label column 'bw' outside a zip; expected a label inside a zip, next to the lists it describes");
  CHECK(error_of(with_axes(json::parse(R"([{"zip":[{"pointer":"/x","values":[1]},{"column":"/bw","values":[1]}]}])"))) ==
        "t.json: /axes/0/zip/1/column: '/bw'; expected a column name that is not a pointer (no leading '/') and not "
        "scenario, hash, status or reason");
  CHECK(error_of(with_axes(json::parse(R"([{"zip":[{"pointer":"/x","values":[1]},{"column":"bw","values":[1]}]},
      {"zip":[{"pointer":"/y","values":[1.5]},{"column":"bw","values":[2]}]}])"))) ==
        "t.json: /axes/1/zip/1/column: a second column 'bw' (/axes/0/zip/1); expected a distinct column name");
}
