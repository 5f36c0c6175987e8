// sim/registry.hpp: entries in order, lookups, the one unknown-name message.
#include <doctest/doctest.h>

#include <stdexcept>

#include "sim/error.hpp"
#include "sim/registry.hpp"

using shardsim::ConfigError;
using shardsim::Registry;

TEST_CASE("a registry keeps its entries in order and finds them by name") {
  Registry r("widget", "widgets", "widgets for --widget");
  r.add({"a", "first", "src A", {{"k", "int", "B", "1", "a key"}}});
  r.add({"b", "second", "", {}});
  CHECK(r.kind() == "widget");
  CHECK(r.category() == "widgets");
  CHECK(r.names() == std::vector<std::string>{"a", "b"});
  CHECK(r.find("b") == 1u);
  CHECK(!r.find("c").has_value());
  CHECK(r.at("a", "--widget") == 0u);
  CHECK(r.entries()[0].params.at(0).default_value == "1");
  CHECK_THROWS_WITH_AS((void)r.at("c", "--widget"), "--widget: unknown widget 'c'; expected one of a, b", ConfigError);
  CHECK_THROWS_AS(r.add({"a", "again", "", {}}), std::logic_error);
  CHECK(shardsim::one_of({"x", "y"}) == "one of x, y");
  CHECK_THROWS_WITH_AS(shardsim::throw_unknown("mode", "z", "--mode", {"p", "q"}), "--mode: unknown mode 'z'; expected one of p, q",
                       ConfigError);
}
