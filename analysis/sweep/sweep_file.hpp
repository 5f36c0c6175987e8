#pragma once
// Sweep files (issue 4): a `base` scenario and `axes` varied over it.
//
//   {"description": "optional text",
//    "base": {"command": "collective", "topology": "...", "op": "allreduce", "bytes": "64MiB"},
//    "axes": [{"pointer": "/bytes", "values": ["1MiB", "64MiB"]},
//             {"zip": [{"pointer": "/algorithm", "values": ["ring", "torus"]},
//                      {"pointer": "/topology", "values": ["...", "..."]}]}]}
//
// The base names a registered scenario command (analysis/scenario/scenario.hpp) and holds its
// flags (long flag names without dashes). Each axis item is a single list or a zip of lists
// of equal length varied together. Scenarios are the cartesian product of the items, in
// order: the first item varies slowest, the last fastest (nested loops in file order).
//
// Validation happens once, on load, before any scenario runs; every rule throws ConfigError
// naming the file and the JSON pointer of the offending axis:
//   - a pointer that is not present in the base (or is /command, or overlaps another axis);
//   - an empty list of values;
//   - zipped lists of unequal length;
//   - a value whose JSON type differs from the base value it replaces (an integer base value
//     takes integers, a floating-point one any number);
//   - a label column outside a zip, or named like another column.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardsim::sweep {

/// One varied value: a JSON pointer into the base and its values; or, inside a zip only, a
/// label column ({"column": "link_bw_GBps", "values": [...]}) that is written to the output
/// next to the axes but does not change the scenario (e.g. the bandwidth of zipped topologies
/// of different kinds, as a number to plot).
struct AxisList {
  std::string pointer;  ///< the JSON pointer, or the column name of a label
  std::vector<nlohmann::json> values;
  bool label = false;
};

/// One item of `axes`: a single list, or several zipped lists (all of the same length).
struct AxisItem {
  std::vector<AxisList> lists;
  [[nodiscard]] std::size_t size() const { return lists.front().values.size(); }
};

class SweepSpec {
 public:
  /// Validates `j` (see the rules above); `source` names the file in error messages.
  /// The command must be registered (analysis/scenario/scenario.hpp).
  SweepSpec(const nlohmann::json& j, std::string source);

  [[nodiscard]] const std::string& command() const { return command_; }
  [[nodiscard]] const nlohmann::json& base() const { return base_; }
  [[nodiscard]] const std::vector<AxisItem>& axes() const { return axes_; }
  [[nodiscard]] const std::string& source() const { return source_; }

  /// Number of scenarios: the product of the axis item sizes (1 without axes).
  [[nodiscard]] std::uint64_t size() const { return size_; }

  /// Scenario `i` (0 <= i < size()): the base with every axis pointer set. O(base + axes).
  [[nodiscard]] nlohmann::json scenario(std::uint64_t i) const;

  /// The index into each axis item for scenario i (mixed radix, last item fastest).
  [[nodiscard]] std::vector<std::size_t> coordinates(std::uint64_t i) const;

  /// Axis column names, one per list in axis order (zip members in their order): the pointer,
  /// or the label's column name.
  [[nodiscard]] std::vector<std::string> axis_columns() const;

  /// The values of the axis columns for scenario i, in axis_columns() order.
  [[nodiscard]] std::vector<const nlohmann::json*> axis_values(std::uint64_t i) const;

 private:
  std::string source_, command_;
  nlohmann::json base_;
  std::vector<AxisItem> axes_;
  std::uint64_t size_ = 1;
};

/// Parses and validates sweep JSON text; `source` names it in errors. Throws ConfigError for
/// bad JSON (with the line and column) and JSON nested deeper than kMaxJsonDepth
/// (sim/text/json_text.hpp, with the byte offset), then as SweepSpec does.
SweepSpec parse_sweep(std::string_view text, const std::string& source);

/// Reads a sweep file and parse_sweep()s it. Throws ConfigError for unreadable files too.
SweepSpec load_sweep_file(const std::string& path);

/// A stable 64-bit FNV-1a hash of the scenario's canonical JSON (keys sorted, as
/// nlohmann::json::dump writes them), as 16 lowercase hex digits. Same scenario, same hash,
/// on every platform and in every run.
std::string scenario_hash(const nlohmann::json& scenario);

}  // namespace shardsim::sweep
