#pragma once
// One training step as a library call (DESIGN 5 and 8): StepOptions -> run_step -> StepReport
// -> JSON. The same code answers `shardsim step`, `compare` (run_compare), `study`, `plan`
// and the sweep commands `step` and `compare` (analysis/scenario/scenario.hpp).
//
// run_step resolves the options (topology, device, zoo model or trace scaled to the batch,
// strategy, optimizer, calibration profile), simulates with models/step and reports the
// result with the names it resolved. Thread-safe and deterministic (each call builds its own
// topology and simulator). Bad input: ConfigError naming the flag (--key) or the file.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/scenario/step_options.hpp"
#include "models/parallel/placement.hpp"
#include "models/step/parallel_graphs.hpp"
#include "models/step/step.hpp"
#include "models/step/timed_faults.hpp"

namespace shardsim::topo {
class Topology;
}  // namespace shardsim::topo

namespace shardsim::analysis {

/// What a --mesh step adds (models/step/parallel_graphs.hpp): the layout, each axis's time
/// on the slowest rank, every simulated rank's, and memory per pipeline stage.
struct ParallelReport {
  parallel::MeshSizes mesh;
  std::string order, schedule, recompute, fold;
  std::uint64_t micro_batch = 1, micro_batches = 1, global_batch = 0;
  bool sequence_parallel = false, uneven_stages = false, tp_comm_overlap = false;
  bool p2p_blocking = false, p2p_scatter_gather = false;
  step::ParallelRankTimes slowest;
  std::vector<step::ParallelRankTimes> per_rank;
  parallel::ParallelMemoryReport memory;
  std::vector<parallel::AxisPlacement> placement;  ///< each axis on the topology, mesh order
};

struct StepReport {
  StepOptions options;          ///< effective: `strategy` is the one run (a default depends on the trace)
  std::string model, topology, device, optimizer, precision;
  std::uint64_t dp = 0, batch_per_device = 0, grad_accum = 1, seq = 0, params = 0;
  std::uint64_t collective_evaluations = 0;  ///< distinct collectives costed (the cache's size)
  std::uint64_t trace_collectives = 0;       ///< collectives the workload recorded
  std::uint64_t dropped_trace_collectives = 0;  ///< recorded ones replaced by a weight-update strategy
  step::StepResult result;      ///< result.timeline is filled when run with record_timeline
  /// --samples N > 1 (issue 16): the N sampled step times (result is step 0's) and their
  /// statistics; JSON: samples, step_time_mean_s, step_time_quantiles_s {p50, p90, p99, max}.
  struct Samples {
    std::vector<double> step_time_s;
    double mean_s = 0, p50_s = 0, p90_s = 0, p99_s = 0, max_s = 0;
  };
  std::optional<Samples> samples;
  /// --batch-split speed: samples per rank (JSON rank_batches); empty otherwise.
  std::vector<std::uint64_t> rank_batches;
  std::optional<ParallelReport> parallel;  ///< set for a --mesh step
  /// --faults with timed items or a fault process (models/step/timed_faults.hpp): the faults
  /// of the step in time order (drawn ones included); JSON timed_faults.
  std::optional<std::vector<step::TimedFault>> timed_faults;
};

/// Runs steps, keeping what several of them share: topologies (by spec), the collective
/// costs on each (by topology, fidelity, algorithm, profile, element size; memoised per
/// collective, models/step/topology_comm.hpp) and zoo workloads (by model, batch, seq). The
/// planner runs thousands of steps through one. Results are those of a fresh runner, except
/// collective_evaluations, which counts the evaluations the step added to the shared cache.
/// Not thread safe: one per thread.
class StepRunner {
 public:
  StepRunner();
  ~StepRunner();
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  /// Simulates the step the options describe.
  StepReport run(const StepOptions& o, bool record_timeline = false);

 private:
  struct Cache;
  /// `t` with the static fault items `spec` applied (cached by topology and spec), or `t`.
  const topo::Topology& with_faults(const topo::Topology& t, const std::string& spec);
  std::unique_ptr<Cache> cache_;
};

/// One step on a fresh StepRunner (thread safe).
StepReport run_step(const StepOptions& o, bool record_timeline = false);

/// The step JSON of `shardsim step --json` (docs/cli.md): the figures, memory, the
/// resolved names and `config` (the effective options).
nlohmann::json to_json(const StepReport& r);

/// `shardsim compare`: the same step under several strategies; `strategies` is "all" (the
/// weight-update strategies) or a comma list (trace allowed). Each row is a step JSON with
/// speedup_vs_replicated (null unless both it and replicated fit); replicated is run as the
/// baseline even when not listed.
struct CompareOptions {
  StepOptions step;             ///< step.strategy must stay unset
  std::string strategies = "all";
};
/// JSON form: the step keys without "strategy", plus "strategies".
CompareOptions parse_compare_options(const nlohmann::json& j);
nlohmann::json run_compare(const CompareOptions& o);

}  // namespace shardsim::analysis
