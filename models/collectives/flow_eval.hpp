#pragma once
// Flow-level evaluation of a collective Schedule on a Topology (DESIGN 4): each transfer
// becomes a flow over its route, started after the route latency (plus the step overhead);
// concurrent flows share links max-min fairly (sim::FlowNetwork). Steps follow the
// rank-local barrier rule of Step (collective.hpp), per chunk, or the buffered-send rule of
// FlowOptions::buffered_send_bytes (MPI eager sends over TCP). Reductions take
// reduce_bytes / reduce_Bps on the receiving rank after its receives of the step.
//
// evaluate_flow() is one CollectiveRun (collective_run.hpp) on a private simulator and flow
// network; runs that share a network (collectives in flight at once) use CollectiveRun.
//
// Memory: O(links + ranks x chunks); a Step with repeat=k is replayed k times without being
// copied. Deterministic: same inputs, same event order, same result.
#include <cstdint>
#include <functional>

#include "models/collectives/algorithm.hpp"
#include "models/collectives/collective.hpp"
#include "sim/flow_network.hpp"
#include "sim/time.hpp"
#include "topologies/topology.hpp"

namespace shardsim::coll {

/// One completed transfer, for timelines: group ranks, when its bytes were on the wire. A
/// switch endpoint of in-network reduction is numbered n, n+1, ... (n = group size), in order
/// of first appearance in the schedule.
struct TransferRecord {
  std::uint32_t src = 0;
  std::uint32_t dst = 0;
  std::uint64_t step = 0;   ///< global step index (repeats unrolled)
  std::uint32_t chunk = 0;
  double bytes = 0;
  Time issue;  ///< when the sender issued it (latency starts)
  Time start;  ///< first byte on the wire (issue + latency + overhead)
  Time end;    ///< last byte delivered
};

struct FlowResult {
  double time_s = 0;
  std::uint64_t events = 0;
  std::uint64_t transfers = 0;
  sim::FlowNetwork::Stats network;
  std::uint64_t fingerprint = 0;  ///< event-trace fingerprint (Simulator::fingerprint)
};

struct FlowOptions {
  CostParams cost;
  /// Called for every completed transfer, in completion order (may be empty).
  std::function<void(const TransferRecord&)> on_transfer;
  /// Links at bandwidth x coll::link_efficiency (add_topology_links): the rates NCCL's model
  /// assumes, so that NCCL's schedules at flow fidelity meet its analytical times. Off: line rate.
  bool link_efficiency = false;
  /// Buffered sends (MPI eager sends over TCP): a transfer of at most this many bytes (whole
  /// transfer, before chunking) completes for its SENDER when issued; only its receiver waits
  /// for it, so the sender's next step waits for its receives alone while the data still
  /// drains. OpenMPI's coll/base algorithms send with a blocking MCA_PML send (e.g.
  /// ompi_coll_base_sendrecv_actual: irecv, send, wait), and ob1's send of a message under the
  /// eager limit returns once the data is in the socket buffer (measured on the emulated
  /// clusters: a 2 MiB send returns in 0.2-6 ms, its data arrives 44 ms later; docs/
  /// measurements.md, "Buffered sends"). With it on, each ordered pair of ranks is one TCP
  /// connection, a byte stream: a message to a rank starts once the sender's earlier message
  /// to that rank has arrived (the flow network would otherwise share them side by side).
  /// 0 (default): every transfer holds its sender too (Step's rule), no connection order.
  double buffered_send_bytes = 0;
};

/// Runs the schedule to completion. `op.group` maps schedule ranks to topology devices.
FlowResult evaluate_flow(const topo::Topology& t, const CollectiveOp& op, const Schedule& s,
                         const FlowOptions& opts);

}  // namespace shardsim::coll
