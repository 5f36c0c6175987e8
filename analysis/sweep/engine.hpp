#pragma once
// Running a sweep: scenarios on a thread pool (and over MPI ranks when launched by mpirun,
// analysis/sweep/distribute.hpp), outcomes written in scenario order to a resumable file
// (analysis/sweep/output.hpp).
//
// Determinism: the file depends only on the sweep file and the command, never on --jobs,
// the number of ranks or thread timing. Workers may run ahead of the writer by at most
// `window` scenarios (bounded memory whatever one slow scenario does).
// Interrupt: when *stop becomes true, no new scenario starts; those in flight finish and are
// written if they are next in order; the header of a CSV without any result yet is not
// written (so a resumed run ends with the same bytes). Complexity: O(scenarios) runs plus
// O(rows) formatting on the writer thread.
#include <atomic>
#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include "analysis/sweep/sweep_file.hpp"

namespace shardsim::sweep {

struct SweepOptions {
  std::string out;             ///< .csv or .jsonl
  unsigned jobs = 0;           ///< worker threads per process; 0 = cores / ranks on this node
  bool resume = false;
  std::size_t window = 0;      ///< scenarios buffered ahead of the writer; 0 = 64 x jobs
  const std::atomic<bool>* stop = nullptr;  ///< set (e.g. by a signal handler) to interrupt
  /// Called by the writer (rank 0) after each scenario: written so far (resumed included), total.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
};

struct SweepSummary {
  std::uint64_t total = 0, resumed = 0, written = 0;
  std::uint64_t ok = 0, does_not_fit = 0, invalid = 0, errors = 0;
  bool interrupted = false;
  bool writer = true;        ///< false on MPI ranks other than 0 (they print nothing)
  bool writer_failed = false;  ///< a rank other than 0 learned that rank 0 could not start
  unsigned jobs = 1, ranks = 1;
  std::set<std::string> dropped_columns;
};

/// Runs `spec` (its command must be registered). Throws ConfigError for an unusable --out or a
/// --resume file that is not a prefix of this sweep, before any scenario runs.
SweepSummary run_sweep(const SweepSpec& spec, const SweepOptions& options);

/// Default worker count: hardware threads divided by the ranks sharing this node, at least 1.
unsigned default_jobs();

}  // namespace shardsim::sweep
