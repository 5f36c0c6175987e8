#pragma once
// Runs the shardsim executable with arguments and captures stdout, stderr and the exit code.
#include <string>
#include <vector>

namespace shardsim::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Arguments are passed verbatim (no shell). The binary is SHARDSIM_BINARY_DIR/shardsim.
CliResult run_cli(const std::vector<std::string>& args);

/// A fresh empty directory under the build tree for a test's files.
std::string scratch_dir(const std::string& name);

std::string read_file(const std::string& path);
void write_text(const std::string& path, const std::string& text);

}  // namespace shardsim::testing
