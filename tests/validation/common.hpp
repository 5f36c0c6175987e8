#pragma once
// Helpers of the validation suite: run the shardsim CLI, skip with a clear message.
#include <doctest/doctest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "analysis/backends/mpi/launch.hpp"

namespace vtest {

inline const std::string kShardsim = SHARDSIM_BINARY_DIR "/shardsim";
inline const std::string kBench = SHARDSIM_BINARY_DIR "/shardsim-mpi-bench";

inline shardsim::backends::ProcessResult shardsim_cli(std::vector<std::string> args, double timeout_s = 600) {
  args.insert(args.begin(), kShardsim);
  return shardsim::backends::run_process(args, timeout_s);
}

/// Empty when the MPI backend can run here, else why not.
inline std::string mpi_unavailable() {
  if (!shardsim::backends::find_in_path("mpirun")) return "mpirun not found (Debian: openmpi-bin)";
  if (::access(kBench.c_str(), X_OK) != 0) return "shardsim-mpi-bench not built (SHARDSIM_WITH_MPI)";
  return "";
}

inline std::string tmpdir(const std::string& name) {
  const std::string d = std::string(SHARDSIM_BINARY_DIR) + "/validation-" + name;
  shardsim::backends::run_process({"rm", "-rf", d}, 30);
  shardsim::backends::run_process({"mkdir", "-p", d}, 30);
  return d;
}

}  // namespace vtest
