#pragma once
// `shardsim trace info`: a summary of any supported trace file, from the decoded form (not
// the native mapping, so it also works where the mapping needs options such as --group-size).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "traces/importers/input.hpp"

namespace shardsim::importers {

struct TraceInfo {
  std::string file;
  Format format = Format::chakra;
  /// Format-specific counts in a fixed order ("nodes", "kernels", "flow pairs", ...).
  std::vector<std::pair<std::string, std::uint64_t>> counts;
  std::size_t ops = 0;  ///< nodes (Chakra), GPU ops (Kineto), layers x 3 passes (ASTRA)
  /// kind -> size in bytes (nccl-tests S; 0 = not given by the trace) -> count.
  std::map<std::string, std::map<std::uint64_t, std::size_t>> collectives;
  /// Measured compute time: GPU COMP nodes (Chakra), non-NCCL GPU ops (Kineto), compute and
  /// update cycles x 1 ns (ASTRA-sim 1.0; see ImportOptions::astra_cycle_s).
  double compute_time_s = 0;

  [[nodiscard]] nlohmann::json to_json() const;
  [[nodiscard]] std::string to_text() const;
};

/// Reads `path` and summarises it; the format is detected from the content unless given.
TraceInfo trace_info(const std::string& path, std::optional<Format> format = std::nullopt);

}  // namespace shardsim::importers
