#pragma once
// Runs the shardsim binary through the shell (`args` as one string, stderr folded into the
// output) for the suites that test it end to end. The binary is SHARDSIM_BINARY_DIR/shardsim.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace shardsim::testing {

struct ShellRun {
  int status = -1;  ///< exit code, -1 if the process did not exit normally
  std::string out;  ///< stdout and stderr
};

inline ShellRun run_shardsim(const std::string& args) {
  const std::string cmd = std::string(SHARDSIM_BINARY_DIR) + "/shardsim " + args + " 2>&1";
  ShellRun r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr) r.out += buf.data();
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace shardsim::testing
