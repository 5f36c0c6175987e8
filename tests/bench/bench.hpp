#pragma once
// Benchmark helpers: wall-clock and CPU timing and peak resident memory. Figures are
// printed, and targets are compared in the same run; nothing here fails a build.
//
// Every figure is printed twice: per wall-clock second and per CPU second of the running
// thread (CLOCK_THREAD_CPUTIME_ID). On an idle machine they agree; on a shared one (CI, two
// cores, other jobs) the CPU figure is the one that says what the code does "on one core".
#include <time.h>

#include <chrono>
#include <string>

namespace shardsim::bench {

class Stopwatch {
 public:
  Stopwatch() : t0_(std::chrono::steady_clock::now()), c0_(thread_cpu()) {}
  [[nodiscard]] double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  /// CPU time of the calling thread since construction.
  [[nodiscard]] double cpu_seconds() const { return thread_cpu() - c0_; }

 private:
  static double thread_cpu() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  std::chrono::steady_clock::time_point t0_;
  double c0_;
};

/// Peak resident set size of this process so far, in MiB (getrusage ru_maxrss).
double peak_rss_mib();

void bench_event_queue();
void bench_collectives(bool large);
void bench_step();
void bench_sweep();
void bench_parallel();

}  // namespace shardsim::bench
