// Golden CLI outputs (tests/golden/golden_cases.txt): each case's stdout equals its reference
// file in tests/golden/expected/ byte for byte. With SHARDSIM_REGEN_GOLDEN=1 the test writes
// the references instead (tests/golden/regen.sh); review the diff before committing it.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "run_cli.hpp"

using shardsim::testing::read_file;
using shardsim::testing::run_cli;
using shardsim::testing::write_text;

namespace {

struct Case {
  std::string name;
  std::vector<std::string> args;
};

std::vector<Case> load_cases(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::vector<Case> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto colon = line.find(": ");
    REQUIRE_MESSAGE(colon != std::string::npos, "golden case without 'name: args': " << line);
    Case c;
    c.name = line.substr(0, colon);
    std::istringstream words(line.substr(colon + 2));
    for (std::string w; words >> w;) c.args.push_back(w);
    cases.push_back(std::move(c));
  }
  return cases;
}

bool regenerating() {
  const char* v = std::getenv("SHARDSIM_REGEN_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

// The first line where two texts differ, for the failure message.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ga = static_cast<bool>(std::getline(sa, la)), gb = static_cast<bool>(std::getline(sb, lb));
    if (!ga && !gb) return "identical lines (a difference in the final newline)";
    if (ga != gb || la != lb) {
      return "line " + std::to_string(line) + ":\n  expected: " + (gb ? lb : "<end>") + "\n  actual:   " + (ga ? la : "<end>");
    }
  }
}

}  // namespace

TEST_CASE("golden CLI outputs match their reference files") {
  const std::string dir = SHARDSIM_GOLDEN_DIR;
  const auto cases = load_cases(dir + "/golden_cases.txt");
  REQUIRE(cases.size() >= 5);
  for (const auto& c : cases) {
    SUBCASE(c.name.c_str()) {
      const auto r = run_cli(c.args);
      INFO("stderr: " << r.err);
      REQUIRE(r.exit_code == 0);
      const std::string ref = dir + "/expected/" + c.name + ".out";
      if (regenerating()) {
        std::filesystem::create_directories(dir + "/expected");
        write_text(ref, r.out);
        REQUIRE_MESSAGE(read_file(ref) == r.out, "could not write " << ref);
        MESSAGE("wrote " << ref);
        continue;
      }
      const std::string expected = read_file(ref);
      CHECK_MESSAGE(r.out == expected, c.name << " differs from " << ref << " at " << first_difference(r.out, expected)
                                              << "\n(regenerate with tests/golden/regen.sh after an intended change)");
    }
  }
}
