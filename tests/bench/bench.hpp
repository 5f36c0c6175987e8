#pragma once
// Benchmark helpers: wall-clock timing and peak resident memory. Figures are printed, and
// targets are compared in the same run; nothing here fails a build.
#include <chrono>
#include <string>

namespace shardsim::bench {

class Stopwatch {
 public:
  Stopwatch() : t0_(std::chrono::steady_clock::now()) {}
  [[nodiscard]] double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

/// Peak resident set size of this process so far, in MiB (getrusage ru_maxrss).
double peak_rss_mib();

void bench_event_queue();
void bench_collectives(bool large);
void bench_sweep();

}  // namespace shardsim::bench
