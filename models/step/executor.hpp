#pragma once
// The event-driven executor of a TaskGraph (task_graph.hpp) on a sim::Simulator (DESIGN 8).
//
// Rule: a node starts at the first instant when every dependency has ended and it is at the
// head of each stream it is on (one for compute/send/recv; the stream on every member rank of
// the graph for a collective); a send/recv pair starts when both are ready. Then
//   start(i) = max(end of deps(i), end of the previous node on each of its streams)
// which is the list schedule of the former step and replay models, in integer picoseconds
// (DESIGN 2). Durations convert once, rounded to the nearest picosecond (Time::from_seconds).
//
// Timing of communication: compute, send/recv and (by default) collectives are timers of
// their node's duration_s (the analytical closed form). A CollectiveRunner, when given, runs
// every collective instead (flow fidelity: a coll::CollectiveRun on one shared flow network,
// so concurrent collectives share links max-min fairly) and reports its end; send/recv pairs
// too where it takes them (start_p2p: the timed-fault runners, timed_faults.hpp).
//
// Signals (STYLE 3): node_started / node_ended once per (node, rank of the graph it runs on),
// with the stream, at the node's start and end. A collective is emitted once per member rank
// of the graph.
//
// Point-to-point transfers (send/recv) hold p2p_units on both of their ranks while they run.
// Communication takes compute units (issue 15; set_comm_contention): NCCL runs one CTA per
// channel, each on an SM of its own, for the whole collective (NCCL docs, environment
// variables NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS), so a kernel that overlaps
// a collective has the SMs less those. The compute-time rule (ComputeProgress, contended_end
// below, the one rule the executor and the sampled-step timer of variation.cpp share): a
// compute node has work = duration x units (unit-picoseconds) and does `units - comm_units`
// of it per picosecond while at least one collective of its rank is in flight, `units`
// otherwise; it ends at the first picosecond by which its work is done. Integer arithmetic:
// banking the work at any set of instants gives the same end (the executor banks at every
// start and end of a collective of the rank, the timer only where the rank's busy union
// changes). Without contention (the default) compute nodes are plain timers.
//
// Complexity: O(nodes + deps + stream memberships) plus one simulator event per timer; with
// contention, each start and end of a collective also reschedules the compute nodes running
// on its member ranks.
// Throws ConfigError naming a node that never ran: a deadlock that TaskGraph::validate does
// not see (it checks dependencies and stream order, not the send/recv rendezvous), e.g. two
// ranks that each post a recv before their send to the other on one stream.
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "models/step/task_graph.hpp"
#include "sim/signal.hpp"
#include "sim/simulator.hpp"

namespace shardsim::compute {
struct Device;
}

namespace shardsim::step {

/// Runs the collective nodes of a graph (flow fidelity). start() is called at sim.now() and
/// must call done(end) exactly once, from an event at end >= now.
class CollectiveRunner {
 public:
  virtual ~CollectiveRunner() = default;
  virtual void start(sim::Simulator& sim, const TaskGraph& g, NodeId n, std::function<void(Time end)> done) = 0;
  /// True when a collective's time depends on when it starts (a network that changes during
  /// the step: timed faults, timed_faults.hpp). Then a timer of its isolated time is not exact
  /// even where collectives never overlap, and ranks whose isolated times agree need not share
  /// a timeline: the step keeps the runner and does not fold (rank_program.hpp).
  [[nodiscard]] virtual bool time_varying() const { return false; }
  /// A send/recv pair, from its send node (rank -> peer, size_bytes): false (the default)
  /// leaves it a timer of the send's duration; true means the runner took `done` (moved from
  /// it) and calls done(end) once, as for start().
  virtual bool start_p2p(sim::Simulator& /*sim*/, const TaskGraph& /*g*/, NodeId /*send*/,
                         std::function<void(Time end)>& /*done*/) {
    return false;
  }
};

/// Compute units a running collective takes from the compute of its ranks (header comment).
struct CommContention {
  std::uint32_t units = 0;       ///< compute units (SMs) of the device
  std::uint32_t comm_units = 0;  ///< units a collective in flight occupies (NCCL channels)
  /// Heterogeneous ranks (issue 16): {units, comm_units, persistent (0/1)} of each topology
  /// rank's own device, indexed by rank; ranks past the end (all, when empty) take the fields
  /// of this struct.
  std::vector<std::array<std::uint32_t, 4>> per_rank;
  /// The device's GEMMs are persistent kernels (compute::Device::persistent_gemm): their share
  /// of a compute node runs in ceil(units / (units - comm_units)) waves while contended.
  bool persistent = false;
  /// Units one point-to-point transfer (NCCL send/recv) occupies on each of its two ranks
  /// (compute::Device::p2p_comm_units); per_rank's fourth entry.
  std::uint32_t p2p_units = 0;
  /// Work is counted in 1/kScale unit-picoseconds, so that a node's contended rate, which its
  /// GEMM share sets, is an integer (exact for share 0, rounded once otherwise).
  static constexpr std::int64_t kScale = 16;
  /// A device's: compute_units, comm_units, persistent_gemm, p2p_comm_units (no per_rank).
  static CommContention of_device(const compute::Device& d);
  /// True when there is a slowdown to model on some rank: 0 < comm_units < units.
  [[nodiscard]] bool active() const;
  /// The uniform contention of topology rank `rank` (per_rank empty). A rank without a
  /// slowdown gets {1, 0}: rate 1 contended or not (its compute nodes are plain timers).
  [[nodiscard]] CommContention of_rank(int rank) const;
  /// Work done per picosecond, in units of 1/kScale unit-picoseconds: kScale x units, and while
  /// contended kScale x units / slowdown with slowdown = share x waves + (1 - share) x units /
  /// (units - comm_units), waves = ceil(units / (units - comm_units)) for persistent GEMMs
  /// (units / (units - comm_units) otherwise). `gemm_share`: the fraction of the node's time in
  /// GEMM kernels (TaskNode::gemm_share). Share 0 or no persistent GEMMs: kScale x (units -
  /// comm_units), exactly.
  [[nodiscard]] std::int64_t rate(bool contended, double gemm_share = 0) const {
    return rate_units(contended ? comm_units : 0, gemm_share);
  }
  /// The same rule with `busy` units held by communication (capped at units - 1): what a rank
  /// with a collective (comm_units) and point-to-point transfers (p2p_units each) in flight
  /// leaves its compute.
  [[nodiscard]] std::int64_t rate_units(std::uint32_t busy, double gemm_share = 0) const;
};

/// Progress of one compute node under contention (the rule of the header comment).
struct ComputeProgress {
  std::int64_t work = 0;  ///< work left as of `since`, unit-picoseconds
  Time since;
  std::int64_t rate = 1;  ///< unit-picoseconds per picosecond from `since`
  /// A node of `duration` starting at `at`. Throws TimeRangeError when duration x units
  /// overflows int64 (a compute node of more than about 800 days on 132 units).
  static ComputeProgress start(Time at, Time duration, const CommContention& c, bool contended, double gemm_share = 0);
  /// The same with `busy` communication units in flight (CommContention::rate_units).
  static ComputeProgress start_units(Time at, Time duration, const CommContention& c, std::uint32_t busy,
                                     double gemm_share = 0);
  /// Banks the work done from `since` to `now` (never below 0) and continues at `new_rate`.
  void change(Time now, std::int64_t new_rate);
  /// The first picosecond by which the work is done at the current rate: since + ceil(work / rate).
  [[nodiscard]] Time end() const;
};

/// A half-open interval [begin, end) during which a rank has a collective in flight.
struct BusyInterval {
  Time begin, end;
};

/// End of a compute node of `duration` starting at `start` on a rank whose collectives are in
/// flight over `busy` (sorted, disjoint, not touching, each non-empty): ComputeProgress over
/// the rank's changes after `start`. With c inactive or no busy time after `start`:
/// start + duration. O(log |busy| + intervals the node overlaps).
Time contended_end(Time start, Time duration, std::span<const BusyInterval> busy, const CommContention& c,
                   double gemm_share = 0);

/// Adds [begin, end) to a rank's busy union (sorted, disjoint, not touching), merging what it
/// meets; an empty interval adds nothing. O(log n) to append, O(n) to insert in the middle.
void add_busy(std::vector<BusyInterval>& busy, Time begin, Time end);

struct ExecResult {
  std::vector<Time> start, end;  ///< per node
  Time makespan;                 ///< the last end
  std::uint64_t events = 0;      ///< simulator events (timers, flow events)
};

class Executor {
 public:
  /// `runner` may be null (every node a timer). The graph (and runner) must outlive run().
  explicit Executor(const TaskGraph& g, CollectiveRunner* runner = nullptr);
  /// Runs the graph to completion on `sim` (from sim.now()).
  ExecResult run(sim::Simulator& sim);
  /// Runs on a private simulator.
  ExecResult run();

  /// Compute time factors per rank of the graph (indexed as g.ranks(); empty = 1) for the
  /// following runs: a compute node takes duration_s x factor, rounded once to the picosecond
  /// (issue 16: per-rank compute variation, variation.hpp). Other nodes are unchanged.
  /// Throws std::invalid_argument for a size other than 0 or g.ranks().size(), or a factor
  /// that is not positive and finite. O(nodes).
  void set_compute_scale(std::span<const double> per_rank);
  /// Compute slowed by collectives in flight on its rank (header comment) for the following
  /// runs; default none (inactive). Any collective node counts, on every simulated member.
  /// Each rank runs under its own device's units (CommContention::of_rank).
  void set_comm_contention(const CommContention& c);

  /// node, rank (topology device), stream, time
  Signal<NodeId, int, std::uint32_t, Time> node_started;
  Signal<NodeId, int, std::uint32_t, Time> node_ended;

 private:
  void try_start(NodeId n);
  void launch(NodeId n);
  void finish(NodeId n);
  void emit(const Signal<NodeId, int, std::uint32_t, Time>& s, NodeId n, Time t) const;
  void comm_changed(std::size_t rank_index);
  /// A point-to-point transfer started (or ended): its two ranks hold p2p_units more (less).
  void p2p_changed(const TaskNode& send, bool started);
  /// Units held by communication on a rank index: comm_units while a collective is in flight,
  /// plus p2p_units per point-to-point transfer in flight.
  [[nodiscard]] std::uint32_t busy_units(std::size_t rank_index) const;

  struct Running {  ///< a compute node in progress under contention
    NodeId n = 0;
    ComputeProgress p;
    sim::EventId ev;
  };

  const TaskGraph& g_;
  CollectiveRunner* runner_;
  CommContention contention_;
  std::vector<CommContention> rank_contention_;  ///< per rank index (of_rank)
  bool contended_ = false;                       ///< contention_.active()
  std::vector<std::uint32_t> comm_in_flight_;  ///< collectives in flight per rank index
  std::vector<std::uint32_t> p2p_in_flight_;   ///< point-to-point transfers in flight per rank index
  std::vector<std::uint32_t> ub_units_;        ///< units held by collectives with their own TaskNode::units
  std::vector<std::vector<Running>> running_;  ///< compute in progress per rank index
  sim::Simulator* sim_ = nullptr;
  ExecResult* out_ = nullptr;
  // Stream queues (rank index x streams): node ids in order, and the head position.
  std::vector<std::uint32_t> q_begin_, q_head_, q_end_;
  std::vector<NodeId> q_nodes_;
  // Streams each node is on (CSR), successors by dependency (CSR).
  std::vector<std::uint32_t> nq_begin_;
  std::vector<std::uint32_t> nq_;
  std::vector<std::uint32_t> succ_begin_;
  std::vector<NodeId> succ_;
  std::vector<std::uint32_t> waiting_;  ///< unfinished deps + streams where it is not the head
  std::vector<NodeId> partner_;         ///< send <-> recv
  std::vector<char> ready_;             ///< send/recv: ready, waiting for the partner
  std::vector<char> done_;
  std::vector<Time> dur_;
  std::size_t finished_ = 0;
};

}  // namespace shardsim::step
