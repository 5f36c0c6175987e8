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
// so concurrent collectives share links max-min fairly) and reports its end.
//
// Signals (STYLE 3): node_started / node_ended once per (node, rank of the graph it runs on),
// with the stream, at the node's start and end. A collective is emitted once per member rank
// of the graph.
//
// Complexity: O(nodes + deps + stream memberships) plus one simulator event per timer.
// Throws ConfigError naming a node that never ran: a deadlock that TaskGraph::validate does
// not see (it checks dependencies and stream order, not the send/recv rendezvous), e.g. two
// ranks that each post a recv before their send to the other on one stream.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "models/step/task_graph.hpp"
#include "sim/signal.hpp"
#include "sim/simulator.hpp"

namespace shardsim::step {

/// Runs the collective nodes of a graph (flow fidelity). start() is called at sim.now() and
/// must call done(end) exactly once, from an event at end >= now.
class CollectiveRunner {
 public:
  virtual ~CollectiveRunner() = default;
  virtual void start(sim::Simulator& sim, const TaskGraph& g, NodeId n, std::function<void(Time end)> done) = 0;
};

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

  /// node, rank (topology device), stream, time
  Signal<NodeId, int, std::uint32_t, Time> node_started;
  Signal<NodeId, int, std::uint32_t, Time> node_ended;

 private:
  void try_start(NodeId n);
  void launch(NodeId n);
  void finish(NodeId n);
  void emit(const Signal<NodeId, int, std::uint32_t, Time>& s, NodeId n, Time t) const;

  const TaskGraph& g_;
  CollectiveRunner* runner_;
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
