#pragma once
// Per-rank compute variation (issue 16): stragglers, jitter and sampled steps.
//
// A rank's compute takes its program's durations times a per-rank factor (StepConfig::
// compute_scale, applied by the Executor to compute nodes only):
//   factor(rank, step) = 1 / speed(rank) x jitter(rank, step)
// where speed(rank) is the persistent speed fraction of a slow rank (--slow-ranks RANK:SPEED,
// 0.5 = half speed: its compute takes twice as long; 1 otherwise) and jitter a sample of the
// distribution (--compute-jitter), drawn afresh for every (step, rank):
//   lognormal:SIGMA   exp(SIGMA Z - SIGMA^2/2), Z standard normal: mean 1, the shape of
//                     measured kernel-time noise (lognormal straggler model of Dean and
//                     Barroso, "The Tail at Scale", CACM 56(2), 2013, fig. 1 long tail);
//   normal:SIGMA      1 + SIGMA Z, redrawn while <= 0.05 (a kernel is never 20x faster);
//   a file            an empirical histogram: lines "FACTOR WEIGHT" (or "FACTOR,WEIGHT"),
//                     '#' comments; a factor is drawn with probability weight / sum.
// Synchronisation turns per-rank noise into step time: a data-parallel step waits for the
// slowest rank, so E[step] grows with E[max of R samples] ~ sigma sqrt(2 ln R) for normal
// noise (extreme-value asymptotics, e.g. David and Nagaraja, Order Statistics, 3rd ed., 10.5).
//
// Determinism: the generator is xoshiro256** (Blackman and Vigna, "Scrambled linear
// pseudorandom number generators", ACM TOMS 47(4), 2021) seeded with splitmix64 (Steele, Lea
// and Flood, OOPSLA 2014) from (seed, step, rank), so a rank's sample does not depend on the
// order in which ranks are drawn; normals use Marsaglia's polar method (Marsaglia and Bray,
// SIAM Review 6(3), 1964), which needs only log and sqrt: no std:: distribution (their
// algorithms differ between standard libraries), so output is byte-identical everywhere with
// an IEEE-754 libm whose log is correctly rounded (glibc, musl, macOS).
//
// Folding (rank_program.hpp): ranks whose factors differ are never folded.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/step/executor.hpp"
#include "models/step/parallel_graphs.hpp"
#include "models/step/step.hpp"
#include "models/step/task_graph.hpp"
#include "topologies/topology.hpp"

namespace shardsim::step {

/// xoshiro256** seeded by splitmix64. Same seed, same sequence, on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform();
  /// Standard normal (polar method; the second value of a pair is kept for the next call).
  double normal();

 private:
  std::uint64_t s_[4];
  double spare_ = 0;
  bool has_spare_ = false;
};

/// splitmix64: advances `state` and returns the next output.
std::uint64_t splitmix64(std::uint64_t& state);
/// The generator of (seed, step, rank): independent streams, order-free.
Rng stream_rng(std::uint64_t seed, std::uint64_t step, std::uint64_t rank);

struct JitterDist {
  enum class Kind : std::uint8_t { none, lognormal, normal, empirical };
  Kind kind = Kind::none;
  double sigma = 0;
  std::vector<double> values;  ///< empirical: factors
  std::vector<double> cdf;     ///< empirical: cumulative weights / total, last = 1
  std::string spec;            ///< as given ("" for none)
  /// A compute time factor (> 0).
  double sample(Rng& rng) const;
};

/// "lognormal:SIGMA", "normal:SIGMA" (SIGMA >= 0, finite) or the path of a histogram file
/// (above). Throws ConfigError naming `where` (and the file and line for a file).
JitterDist parse_jitter(const std::string& spec, const std::string& where);

struct SlowRank {
  int rank = 0;
  double speed = 1;  ///< fraction of normal speed, > 0 (0.5: compute takes twice as long)
};
/// "RANK:SPEED[,RANK:SPEED...]": ranks distinct, >= 0; SPEED > 0 and finite. Throws
/// ConfigError naming `where`.
std::vector<SlowRank> parse_slow_ranks(const std::string& spec, const std::string& where);

struct ComputeVariation {
  JitterDist jitter;
  std::vector<SlowRank> slow;
  std::uint64_t seed = 0;
  [[nodiscard]] bool empty() const { return jitter.kind == JitterDist::Kind::none && slow.empty(); }
  /// Throws ConfigError (where = "--slow-ranks") for a slow rank >= ranks.
  void check(std::uint64_t ranks) const;
  /// Factors of ranks 0..ranks-1 in step `step` (out is resized). Without jitter they do not
  /// depend on the step.
  void factors(std::uint64_t step, std::uint64_t ranks, std::vector<double>& out) const;
};

/// Heterogeneous clusters: "RANKS:DEVICE[,RANKS:DEVICE...]" (RANKS = "a" or "a-b", DEVICE a
/// preset of `shardsim list devices`) gives ranks their own device; the others keep `base`.
/// Throws ConfigError naming `where` for a bad item, an unknown device, a rank >= ranks.
std::vector<const compute::Device*> parse_rank_devices(const std::string& spec, std::uint64_t ranks,
                                                       const compute::Device& base, const std::string& where);
/// The same items applied over `devs` (one entry per rank): the ranks they name take their
/// device, the others keep theirs. parse_rank_devices is this over `ranks` copies of `base`.
void apply_rank_devices(const std::string& spec, std::vector<const compute::Device*>& devs, const std::string& where);
/// The devices a topology gives its ranks 0..ranks-1 (Topology::rank_devices: a custom node's
/// "device"), each resolved as a topology's device_model is (compute::device_for_model, so
/// "a100" is the a100-80gb part); a rank without a kind of its own gets `base`. Every kind of
/// the topology is checked, also beyond `ranks`: an unknown one throws ConfigError naming its
/// location ("topo.json: /nodes/9/device") and listing the device presets. The step overlays
/// --rank-devices on this vector (apply_rank_devices): the flag wins for the ranks it names.
std::vector<const compute::Device*> topology_rank_devices(const topo::Topology& t, std::uint64_t ranks,
                                                          const compute::Device& base);
/// Compute factor of each rank: the roofline time of the workload's ops (forward and
/// backward, models/compute/device.hpp) on its device over that on `base`. First order: one
/// ratio per rank for all its compute (the optimizer update included).
std::vector<double> device_factors(const Workload& w, bool mixed_precision, const std::vector<const compute::Device*>& devs,
                                   const compute::Device& base);
/// The batch split in proportion to device speed (1 / factor): integer samples per rank that
/// sum to ranks x batch, by the largest-remainder method (Hamilton), ties to the lower rank.
/// A rank's compute then scales by its samples / batch (compute linear in the batch).
std::vector<std::uint64_t> balanced_batches(const std::vector<double>& factors, std::uint64_t batch);

/// Quantile of sorted values, linear interpolation between order statistics (Hyndman and
/// Fan 1996, definition 7: h = (n - 1) q). Throws std::invalid_argument when empty.
double quantile_sorted(const std::vector<double>& sorted, double q);

/// The one-pass timer of sampled steps: the executor's makespan of a timer-only graph
/// without re-running the executor. Rule: start(i) = max(end of deps(i), end of the previous
/// node on each of its streams), evaluated in id order (a topological order: every dependency
/// and stream predecessor has a smaller id, true of instantiate_program's graphs), in the same
/// integer picoseconds and with the same rounding of scaled durations as
/// Executor::set_compute_scale, and compute ends by contended_end (executor.hpp, the rule the
/// executor uses) over the busy union of the collectives of its rank seen so far. Equal to the
/// executor's makespan exactly whenever it returns a time (variation.cpp says why;
/// tests/models/step/test_variation.cpp and tests/models/compute/test_comm_contention.cpp check
/// it). Under active contention it returns nullopt when a collective overlaps a compute node
/// of its rank with a smaller id (the pass cannot have seen it): the caller runs the executor.
/// O(nodes + deps + stream memberships) per call, plus, under contention, a binary search per
/// compute node and the scan of each collective's members' latest compute; no event queue.
class StaticTimer {
 public:
  /// nullptr for a graph the pass cannot time: send/recv (a rendezvous), or a dependency on a
  /// node of a larger id. The graph is read here only.
  static std::unique_ptr<StaticTimer> make(const TaskGraph& g, const CommContention& contention = {});
  /// Makespan with per-rank compute factors `scale` (indexed as the graph's ranks; empty = 1),
  /// or nullopt (above).
  std::optional<Time> makespan(const std::vector<double>& scale);

 private:
  struct ComputeRun {
    Time start, end, max_end;  ///< a compute node's run; max_end over the rank's runs so far
  };
  /// True when a run of `runs` overlaps [s, e) with positive length.
  static bool overlaps_earlier_compute(const std::vector<ComputeRun>& runs, Time s, Time e);
  StaticTimer() = default;
  CommContention contention_;
  std::vector<CommContention> rank_contention_;  ///< per rank index (CommContention::of_rank)
  std::vector<std::uint32_t> q_begin_, q_, deps_begin_;
  std::vector<NodeId> deps_;
  std::vector<Time> dur_, end_, last_;
  std::vector<double> base_;
  std::vector<float> share_;  ///< TaskNode::gemm_share per node
  std::vector<int> rank_;
  std::vector<char> coll_;
  std::vector<std::vector<BusyInterval>> busy_;  ///< per rank index: its collectives so far
  std::vector<std::vector<ComputeRun>> runs_;     ///< per rank index: its compute so far
  std::size_t queues_ = 0;
  std::uint32_t streams_ = 1;
};

struct StepSamples {
  StepResult first;                 ///< the full result of step 0
  std::vector<double> step_time_s;  ///< per sampled step, in order
  double mean_s = 0, p50_s = 0, p90_s = 0, p99_s = 0, max_s = 0, min_s = 0;
  /// Samples the executor ran: all of them with a concurrent runner or send/recv, else those
  /// the one-pass timer could not time exactly (variation.cpp).
  std::uint64_t executor_samples = 0;
};

/// Runs `samples` steps (>= 1; ConfigError "--samples" otherwise) of one program: the graph
/// is built once and re-executed with the factors of each step (c.compute_scale is ignored;
/// the factors come from `v` and multiply any per-rank device factor in `base_scale`, empty =
/// 1). Compute overlapped by collectives is slowed as in simulate_step (step_contention,
/// rank_program.hpp). Graphs without send/recv and without a concurrent runner are timed in
/// one pass per step, exactly the executor's times (variation.cpp; the executor where the pass
/// cannot prove that); O(samples x (nodes + events)).
StepSamples simulate_step_samples(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm,
                                  const ComputeVariation& v, std::uint64_t samples,
                                  const std::vector<double>& base_scale = {});

/// Mean, quantiles, min and max of out.step_time_s (non-empty), in its order for the sum.
void summarise_samples(StepSamples& out);

/// Sampled steps of a mesh step (issue 16): `samples` (>= 1; ConfigError "--samples") runs of
/// simulate_parallel_step, step s with the factors of `v` for step s (ComputeVariation::
/// factors over the mesh's ranks) times c.compute_scale (a per-rank device factor; empty = 1).
/// `first` receives step 0's full result (its timeline when c.record_timeline); the returned
/// first is its StepResult. Throws ConfigError for a slow rank outside the mesh. Every sample
/// rebuilds and executes the graph: O(samples x simulate_parallel_step); a jittered step
/// simulates every rank (factors differ: no folding).
StepSamples simulate_parallel_step_samples(const ParallelStepConfig& c, const compute::Device& dev, CommModel& comm,
                                           const ComputeVariation& v, std::uint64_t samples, ParallelStepResult& first);

}  // namespace shardsim::step
