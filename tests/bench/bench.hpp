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
/// Issue 12: `collective --groups stride:8` ring all-reduce of 1 GiB on dgx-h100-1024, flow.
void bench_groups();
/// Issue 12: GPT-3 175B zero3 (batch 1, checkpointing, flow fidelity, every collective on the
/// shared network, ranks folded where exact) on dgx-h100-1024 (< 5 s) and, with `large`, on a
/// rail-optimized cluster of 16,384 H100 (2,048 nodes, 16 spines; < 60 s, < 8 GiB).
void bench_gpt3_steps(bool large);
void bench_step();
void bench_sweep();
void bench_variation();
void bench_parallel();

}  // namespace shardsim::bench
