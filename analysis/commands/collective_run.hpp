#pragma once
// The `collective` command as a library function, shared by the CLI and sweeps.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace shardsim::cli {

struct CollectiveOptions {
  std::string topology;
  std::string op = "allreduce";
  std::string bytes = "64MiB";
  int ranks = 0;  ///< 0 = all devices
  std::string algorithm = "auto";
  std::string fidelity = "analytical";
  std::uint32_t chunks = 0;
  std::string reduce_bw;      ///< empty = free
  std::string step_overhead;  ///< empty = 0
  /// Calibration profile (shardsim calibrate): link bandwidths x efficiency per class and the
  /// calibrated alpha as step overhead (analysis/calibration/profile.hpp apply_profile).
  /// Empty = declared values. Exclusive with step_overhead.
  std::string profile;
  std::string timeline;       ///< Perfetto trace path (flow fidelity, one size)
};

struct CollectiveResult {
  std::string op, algorithm, fidelity, topology, why;
  std::size_t ranks = 0;
  std::uint64_t size_bytes = 0;
  double time_s = 0, algbw_GBps = 0, busbw_GBps = 0, lower_bound_s = 0;
  double latency_s = 0, bandwidth_s = 0, reduce_s = 0;  ///< analytical terms
  std::uint64_t events = 0, transfers = 0;              ///< flow fidelity only
  std::uint64_t fingerprint = 0;                        ///< flow: event-trace hash
  nlohmann::json config;                                ///< effective configuration
};

/// Throws ConfigError for bad input (flags named as --flag).
std::vector<CollectiveResult> run_collective(const CollectiveOptions& o);

/// Flags as JSON (sweeps): keys as the long flags without dashes. Unknown keys are errors.
CollectiveOptions collective_options_from_json(const nlohmann::json& flags);

nlohmann::json to_json(const CollectiveResult& r);
std::vector<std::string> csv_header();
std::vector<std::string> csv_row(const CollectiveResult& r);

}  // namespace shardsim::cli
