#pragma once
// A one-line progress bar for long runs (DESIGN 7): done/total, percentage, rate and ETA,
// redrawn in place at most every 100 ms. Draws only when enabled (the CLI enables it when
// stderr is a terminal), so redirected output stays clean and deterministic.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace shardsim::sweep {

class ProgressBar {
 public:
  /// `start` items were already done before this run (resumed); the rate counts only new ones.
  ProgressBar(std::FILE* out, bool enabled, std::uint64_t start);
  void update(std::uint64_t done, std::uint64_t total);
  /// Ends the line (if anything was drawn).
  void finish();

  /// The text of one bar (no carriage return), for tests: rate in items/s, eta in seconds.
  static std::string line(std::uint64_t done, std::uint64_t total, double rate_per_s, double eta_s);

 private:
  std::FILE* out_;
  bool enabled_, drawn_ = false;
  std::uint64_t start_;
  std::chrono::steady_clock::time_point t0_, last_;
};

/// "42s", "3m07s", "2h05m" (seconds rounded up).
std::string format_eta(double seconds);

}  // namespace shardsim::sweep
