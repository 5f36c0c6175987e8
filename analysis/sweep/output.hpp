#pragma once
// Sweep results: one scenario's outcome, and the append-only, resumable results file.
//
// Files (chosen by the extension of --out):
//   .csv   header `scenario,hash,status,reason,<axis pointers...>,<result columns...>`, then
//          one line per result object (a scenario whose command returns an array of k
//          objects gives k lines with the same scenario index and hash). Result columns are
//          the first result's keys (sorted, as nlohmann::json keeps them), nested objects
//          flattened with '.' (memory_bytes.params); the effective configuration ("config")
//          is kept out of the CSV. Cells never contain a newline, so a record is a line.
//   .jsonl one object per result: {"scenario", "hash", "status", "reason", "axes":
//          {pointer: value}, "result": the full result object or null}.
// Status: ok; does-not-fit (a result has "fits": false); invalid (the command threw a
// ConfigError: the reason is its message); error (any other exception).
//
// Rows are written in scenario order, each scenario's rows with one write(2) call; a CSV
// header is written with the first scenario that has a result (rows before it wait), so the
// bytes depend only on the sweep, never on timing. --resume reads the file back, drops a
// partial last line and the rows of the last scenario present (it may be incomplete), checks
// that what remains is a prefix of this sweep (indices and hashes), and continues after it.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "analysis/scenario/scenario.hpp"
#include "analysis/sweep/sweep_file.hpp"

namespace shardsim::sweep {

struct Outcome {
  std::uint64_t index = 0;
  std::string hash;
  std::string status;  ///< ok, does-not-fit, invalid, error
  std::string reason;
  nlohmann::json results = nlohmann::json::array();  ///< result objects (empty unless ok/does-not-fit)
};

/// Runs scenario i of `spec` with `cmd` (thread-safe if cmd.run is). Never throws for a
/// scenario's own failure: it becomes status invalid or error.
Outcome run_scenario(const SweepSpec& spec, const analysis::ScenarioCommand& cmd, std::uint64_t i);

/// Wire form (MPI): exact round trip, doubles included.
nlohmann::json to_json(const Outcome& o);
Outcome outcome_from_json(const nlohmann::json& j);

enum class Format { csv, jsonl };
/// From the extension (.csv, .jsonl); throws ConfigError naming `flag` otherwise.
Format format_for(const std::string& path, const std::string& flag);

class ResultWriter {
 public:
  /// Opens `path` (truncating unless `resume`). With `resume`, validates the file against the
  /// sweep (ConfigError naming the path and line on a mismatch) and truncates it to the
  /// prefix it keeps.
  ResultWriter(const SweepSpec& spec, std::string path, bool resume);
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  /// The first scenario still to run (0 without resume).
  [[nodiscard]] std::uint64_t first_scenario() const { return first_; }

  /// Appends scenario o.index; calls must come in scenario order from first_scenario().
  void write(const Outcome& o);
  /// Writes what waits for a header (every scenario so far had no result). Call at the end.
  void finish();

  /// Result keys that appeared after the header was fixed and are therefore only in JSONL.
  [[nodiscard]] const std::set<std::string>& dropped_columns() const { return dropped_; }

 private:
  void resume_from_file();
  void append(const std::string& text);
  [[nodiscard]] std::string csv_rows(const Outcome& o);
  [[nodiscard]] std::string jsonl_rows(const Outcome& o) const;

  const SweepSpec& spec_;
  std::string path_;
  Format format_;
  int fd_ = -1;
  std::uint64_t first_ = 0;
  bool have_header_ = false;
  std::vector<std::string> result_columns_;
  std::vector<Outcome> waiting_;  ///< CSV rows before the first result (no header yet)
  std::set<std::string> dropped_;
};

/// Flattens a result object into (column, cell) pairs in key order: nested objects joined
/// with '.', arrays as compact JSON text, the key "config" left out at the top level.
std::vector<std::pair<std::string, std::string>> flatten_result(const nlohmann::json& result);

/// The CSV cell text of a JSON value (strings as-is, integers exactly, doubles shortest
/// round-trip, booleans true/false, null empty, others compact JSON); newlines become spaces.
std::string cell_text(const nlohmann::json& v);

}  // namespace shardsim::sweep
