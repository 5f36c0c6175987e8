// shardsim sweep SWEEP.json --out results.csv|results.jsonl [--jobs N] [--resume]: runs the
// cartesian product of a sweep file's axes over its base scenario (analysis/sweep/), on a
// thread pool and, under mpirun, over MPI ranks; see docs/sweeps.md.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>

#include "analysis/cli/command.hpp"
#include "analysis/sweep/distribute.hpp"
#include "analysis/sweep/engine.hpp"
#include "analysis/sweep/progress.hpp"
#include "analysis/sweep/sweep_file.hpp"
#include "sim/error.hpp"

namespace shardsim::cli {
namespace {

struct SweepCliOptions {
  std::string file;
  sweep::SweepOptions run;
  bool no_progress = false;
};

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) { g_stop.store(true); }

/// Ctrl-C and SIGTERM stop the sweep after the scenarios in flight (whole rows only); the
/// previous handlers come back when the sweep ends.
class StopSignals {
 public:
  StopSignals() {
    g_stop.store(false);
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

void run_sweep_cli(SweepCliOptions& o) {
  const auto world = sweep::mpi_world();  // before reading anything: MPI_Init under mpirun
  const sweep::SweepSpec spec = sweep::load_sweep_file(o.file);
  StopSignals signals;
  o.run.stop = &g_stop;
  const bool bar_on = world.rank == 0 && !o.no_progress && ::isatty(STDERR_FILENO) == 1;
  sweep::ProgressBar bar(stderr, bar_on, 0);
  bool bar_started = false;
  o.run.progress = [&](std::uint64_t done, std::uint64_t total) {
    if (!bar_started) {
      bar = sweep::ProgressBar(stderr, bar_on, done - 1);
      bar_started = true;
    }
    bar.update(done, total);
  };
  const auto t0 = std::chrono::steady_clock::now();
  const auto s = sweep::run_sweep(spec, o.run);
  bar.finish();
  if (s.writer_failed) {
    exit_status() = 2;  // rank 0 printed why
    return;
  }
  if (!s.writer) return;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::uint64_t fresh = s.written;
  fmt::print(stderr, "sweep: {} scenarios ({} resumed, {} run: {} ok, {} does-not-fit, {} invalid, {} error) -> {}"
                     " in {:.2f} s ({:.0f} scenarios/s, {} jobs x {} ranks)\n",
             s.total, s.resumed, fresh, s.ok, s.does_not_fit, s.invalid, s.errors, o.run.out, wall,
             wall > 0 ? static_cast<double>(fresh) / wall : 0.0, s.jobs, s.ranks);
  if (!s.dropped_columns.empty()) {
    std::string cols;
    for (const auto& c : s.dropped_columns) cols += (cols.empty() ? "" : ", ") + c;
    fmt::print(stderr, "sweep: warning: result keys absent from the first result are not in the CSV header ({}); "
                       "use a .jsonl output to keep them\n", cols);
  }
  if (s.interrupted) {
    fmt::print(stderr, "sweep: interrupted after {} of {} scenarios; rerun with --resume to continue\n",
               s.resumed + s.written, s.total);
    exit_status() = 130;
  } else if (s.errors > 0) {
    fmt::print(stderr, "sweep: {} scenarios failed with an internal error (status error in {})\n", s.errors, o.run.out);
    exit_status() = 1;
  }
}

void setup_sweep(CLI::App& root) {
  auto o = std::make_shared<SweepCliOptions>();
  auto* sub = root.add_subcommand("sweep", "Run a grid of what-if scenarios from a sweep file (thread pool; MPI under mpirun)");
  sub->add_option("file", o->file, "Sweep JSON: {\"base\": {\"command\": ..., flags...}, \"axes\": [...]} (docs/sweeps.md)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--out,-o", o->run.out, "Results file: .csv (flat) or .jsonl (full results)")->required();
  sub->add_option("--jobs,-j", o->run.jobs, "Worker threads per process (default: cores / ranks on the node)")
      ->check(CLI::Range(1u, 4096u));
  sub->add_flag("--resume", o->run.resume, "Keep the rows already in --out and run only the remaining scenarios");
  sub->add_flag("--no-progress", o->no_progress, "No progress bar (it is drawn only when stderr is a terminal)");
  sub->callback([o] { run_sweep_cli(*o); });
}

const Registration reg{"sweep", 40, setup_sweep};

}  // namespace
}  // namespace shardsim::cli
