#pragma once
// A collective in flight (DESIGN 8): a CollectiveRun attaches to a caller's sim::Simulator and
// a sim::FlowNetwork shared with every other run (and any other client) in flight, starts at a
// given time, runs the Schedule's transfers as flows on that network and calls back when its
// last rank is done, like a non-blocking MPI_Iallreduce followed by a wait (SimGrid SMPI,
// src/smpi/include/smpi_coll.hpp). Runs that overlap in time share links max-min fairly
// because they share one contention system (the network, as SimGrid's lmm::System).
//
// Semantics per run are those of evaluate_flow (flow_eval.hpp): a transfer becomes a flow over
// its route, started after the route latency plus the step overhead; steps follow the
// rank-local barrier rule of Step (collective.hpp) per chunk; a receiving rank reduces
// reduce_bytes / reduce_Bps after its receives. Transfers with src_is_node / dst_is_node
// (in-network reduction) have the switch as an endpoint, which follows the same rule.
//
// Network contract: `net` (and `sim`) outlive the run; `net` holds the topology's links, link i of the network being
// t.links()[i] (add_topology_links() does that); the run registers itself as a client of `net`
// for its lifetime. Several runs on one network need not share a topology object, only the
// link numbering.
//
// Callbacks: on_done(done) is called once, at simulated time `done` (== sim.now()), from inside
// the simulator event that completed the run, never from inside start(); the run may be
// destroyed inside on_done. Destroying a run before it is done drops its remaining completions.
//
// Cost: O(ranks x chunks + links of the routes) memory; per transfer, one flow and its share
// of one start event per (run, instant). Deterministic: same inputs and same other clients,
// same event order.
#include <cstdint>
#include <functional>
#include <memory>

#include "models/collectives/algorithm.hpp"
#include "models/collectives/collective.hpp"
#include "models/collectives/flow_eval.hpp"
#include "sim/flow_network.hpp"
#include "sim/simulator.hpp"
#include "sim/time.hpp"
#include "topologies/topology.hpp"

namespace shardsim::coll {

/// Adds one link per topology link, in t.links() order, with its bandwidth as capacity, or,
/// with `link_efficiency`, its bandwidth x coll::link_efficiency (nccl_model.hpp: what NCCL
/// reaches of NVLink on an NVIDIA GPU topology, the wire efficiency of IB / Ethernet links).
void add_topology_links(sim::FlowNetwork& net, const topo::Topology& t, bool link_efficiency = false);

class CollectiveRun {
 public:
  /// Checks and indexes the schedule (routes looked up once). `t`, `op` and `s` must outlive
  /// the run; `opts` is copied. Throws std::invalid_argument when the schedule's ranks and the
  /// group disagree or `net` does not have exactly the topology's links, std::logic_error for a
  /// transfer outside the group.
  CollectiveRun(sim::Simulator& sim, sim::FlowNetwork& net, const topo::Topology& t, CollectiveOp op,
                const Schedule& s, FlowOptions opts);
  ~CollectiveRun();
  CollectiveRun(const CollectiveRun&) = delete;
  CollectiveRun& operator=(const CollectiveRun&) = delete;

  /// Starts the run at `at` (>= sim.now(); at == now begins at once, else an event at `at`).
  /// Throws std::logic_error when started twice or in the past. `on_done` may be empty.
  void start(Time at, std::function<void(Time done)> on_done);

  [[nodiscard]] bool started() const;
  [[nodiscard]] bool done() const;
  /// When the run began (valid once started).
  [[nodiscard]] Time start_time() const;
  /// When its last rank finished (valid once done).
  [[nodiscard]] Time finish_time() const;
  /// Transfers issued so far.
  [[nodiscard]] std::uint64_t transfers() const;
  /// (participant, chunk) pairs not yet through the schedule: 0 once done; after the
  /// simulator ran out of events, non-zero means the schedule deadlocked.
  [[nodiscard]] std::size_t unfinished() const;
  /// This run's client id on the network (its flows' completions come back through it).
  [[nodiscard]] sim::FlowNetwork::ClientId client() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardsim::coll
