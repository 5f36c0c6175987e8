#pragma once
// The `collective` command as a library function, shared by the CLI and sweeps.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardsim::cli {

struct CollectiveOptions {
  std::string topology;
  std::string op = "allreduce";
  std::string bytes = "64MiB";
  int ranks = 0;  ///< 0 = all devices
  /// Ranks on each node (Topology::device_groups), block placement (coll::placed_group);
  /// 0 = the first --ranks devices.
  int ranks_per_node = 0;
  std::string algorithm = "auto";
  /// With auto on a GPU topology: NCCL_ALGO, the NCCL algorithms NCCL may choose from (comma
  /// list of Tree, Ring, NVLS, NVLSTree, CollNetDirect, CollNetChain, PAT); empty = all.
  std::string nccl_algo;
  std::string fidelity = "analytical";
  std::uint32_t chunks = 0;
  std::string reduce_bw;      ///< empty = free
  std::string step_overhead;  ///< empty = 0
  /// Calibration profile (shardsim calibrate): link bandwidths x efficiency per class and the
  /// calibrated alpha as step overhead (analysis/calibration/profile.hpp apply_profile).
  /// Empty = declared values. Exclusive with step_overhead.
  std::string profile;
  std::string timeline;       ///< Perfetto trace path (flow fidelity, one size)
  /// Concurrent process groups (parse_groups): the same collective on each group at once.
  /// Flow fidelity: one CollectiveRun per group on one shared flow network, all started at 0,
  /// so groups that share links slow each other (max-min). Analytical fidelity: each group's
  /// closed form, no contention. Empty = one group, the first --ranks devices.
  std::optional<std::string> groups;
};

/// Parses a --groups spec for a topology of `devices` devices named `topology`: groups
/// separated by ';', each a comma list of ranks and ranges A-B (inclusive), e.g. "0-7;8-15";
/// or "stride:K": K groups {i, i+K, i+2K, ...} (i < K) over ranks 0..n-1, n = `ranks` (0 =
/// all devices), as the rails of a rail-optimized cluster. Throws ConfigError naming --groups
/// for an empty spec or entry, a malformed rank or range, a rank outside the topology, a rank
/// in two groups (or twice in one), or a group of fewer than 2 ranks.
std::vector<std::vector<int>> parse_groups(const std::string& spec, std::size_t devices, const std::string& topology,
                                           int ranks = 0);

/// A rank list for humans: runs as A-B, an arithmetic progression as "A,B,..,Z (n ranks)".
std::string format_ranks(const std::vector<int>& ranks);

struct CollectiveResult {
  std::string op, algorithm, fidelity, topology, why;
  /// Flow fidelity with NCCL's choice ("nccl:NVLS/Simple"): the registered schedule that ran it
  /// (in-network); empty otherwise.
  std::string schedule;
  std::size_t ranks = 0;
  /// The process group (topology device indices) when --groups was given; else empty.
  std::vector<int> group;
  std::uint64_t size_bytes = 0;
  double time_s = 0, algbw_GBps = 0, busbw_GBps = 0, lower_bound_s = 0;
  double latency_s = 0, bandwidth_s = 0, reduce_s = 0;  ///< analytical terms
  /// Flow fidelity only. With --groups, events and fingerprint are those of the shared
  /// simulator (all groups of one size), transfers this group's.
  std::uint64_t events = 0, transfers = 0;
  std::uint64_t fingerprint = 0;  ///< flow: event-trace hash
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
