#pragma once
// Internal helpers shared by the collective algorithms (not part of the public contract):
// ring orders, per-hop alpha/beta read from Topology::route(), cost accumulation and the
// factories the registry calls in a fixed order.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/collectives/algorithm.hpp"
#include "sim/error.hpp"

namespace shardsim::coll::detail {

/// Group indices in ring order: Topology::ring_order restricted to `members` (group indices),
/// so neighbours stay adjacent on tori; members whose device is not in ring_order (or all of
/// them when it is empty) follow in the order given. O(devices + members).
std::vector<std::uint32_t> ring_of(const topo::Topology& t, const CollectiveOp& op,
                                   const std::vector<std::uint32_t>& members);
/// The NVLink domain of every topology node: connected components over `nvlink` links
/// (devices and NVSwitches); a node without NVLink is a domain of its own. O(V + E).
std::vector<std::size_t> nvlink_domains(const topo::Topology& t);
/// The group's ranks by node (NVLink domain, nvlink_domains), nodes in order of first
/// appearance in ring_of, each node's ranks in ring_of order; why_not when the group lies in
/// one node or its nodes hold different numbers of its ranks.
struct NodeLayout {
  std::vector<std::vector<std::uint32_t>> nodes;
  std::optional<std::string> why_not;
};
NodeLayout node_layout(const topo::Topology& t, const CollectiveOp& op);

/// Sanders, Speck and Traeff's double binary tree over n positions: by position, the parent
/// (-1 for the root) and depth in tree A (in-order balanced, root = middle position) and in
/// tree B (A mirrored, position p plays n-1-p); levels = the largest depth.
struct BinaryTrees {
  std::vector<int> parent[2];
  std::vector<int> depth[2];
  int levels = 0;
};
BinaryTrees make_double_trees(std::size_t n);

/// A step with the data-plan units of each of its transfers (same order).
struct Stage {
  Step step;
  std::vector<std::vector<std::uint32_t>> units;
};
/// The inter-node levels of NCCL's per-channel trees (tree-channels, nvls-tree): channel c's
/// head on node k is nodes[k][c]; trees A and B (make_double_trees over the nodes) carry
/// `per_tree` bytes each, units 2c and 2c+1. up: reduce levels, deepest first (reduce_bytes =
/// the most one rank receives); else broadcast levels, root first. Appended to `out`.
/// Closed form of a pipeline whose stages all run at once in steady state (tree-channels,
/// nvls-tree): (stages + C - 1) alpha + max over links (bytes the link carries over all stages
/// / its bandwidth) + (stages - 1) x the slowest stage's piece (its largest transfer / C over
/// its smallest route bottleneck) + the reductions; alpha = largest route latency + step
/// overhead. Exact when one link is the bottleneck of the whole run and pieces flow freely.
AnalyticalCost pipelined_link_bound(const topo::Topology& t, const CollectiveOp& op, const CostParams& p,
                                    const std::vector<Stage>& stages, std::uint32_t chunks);
/// Both directions of a link join a and b.
bool linked_both(const topo::Topology& t, topo::NodeId a, topo::NodeId b);
void append_channel_trees(std::vector<Stage>& out, const std::vector<std::vector<std::uint32_t>>& nodes,
                          double per_tree, std::size_t ranks, bool up);

/// ring_of over the whole group.
std::vector<std::uint32_t> ring_of(const topo::Topology& t, const CollectiveOp& op);

/// Alpha and beta of a step: what the flow evaluator charges a lone transfer is wait
/// alpha, then bytes / B.
struct Hop {
  double alpha_s = 0;
  double bw_Bps = std::numeric_limits<double>::infinity();
  double latency_s = 0;  ///< largest route latency alone
  std::size_t pairs = 0;
};
/// Alpha and beta of one step of concurrent transfers: alpha = largest route latency + step
/// overhead; B = the smallest per-transfer bandwidth, where a transfer gets, on each link of
/// its route, the link bandwidth divided by the number of the step's transfers that share
/// that link AND the same source (or the same destination) endpoint: a rank's own
/// concurrent sends split its port, as do the receives converging on one rank. Sharing
/// between transfers of different sources and destinations (network contention: a bus, an
/// oversubscribed uplink) is NOT counted; only the flow evaluator sees it.
/// O(transfers x route length).
Hop step_hop(const topo::Topology& t, const CollectiveOp& op, const std::vector<Transfer>& transfers,
             const CostParams& p);
/// The route of a transfer (group ranks, or switch nodes when flagged).
const topo::Route& route_of(const topo::Topology& t, const CollectiveOp& op, const Transfer& x);

/// Accumulates alpha, beta and gamma terms of a closed form.
struct Cost {
  AnalyticalCost c;
  double reduce_Bps = std::numeric_limits<double>::infinity();
  explicit Cost(const CostParams& p) : reduce_Bps(p.reduce_Bps) {}
  /// `steps` steps, each paying alpha, moving `bytes` over B and reducing `reduce_bytes`.
  void steps(double count, const Hop& h, double bytes, double reduce_bytes);
  /// A pipeline of stages (one per step, each split into `chunks` pieces): every stage
  /// pays alpha + bytes / (chunks B) + gamma(reduce_bytes / chunks) per piece; the pieces
  /// follow each other as a wavefront, so t = sum of stage times + (chunks - 1) x the
  /// slowest stage (fill, then one piece per slowest-stage time). Assumes no link carries
  /// pieces of two stages at once.
  struct Stage {
    Hop hop;
    double bytes = 0;
    double reduce_bytes = 0;
  };
  void pipeline(const std::vector<Stage>& stages, std::uint32_t chunks);
  AnalyticalCost done(std::string formula);
};

/// Reduction time of `bytes` (0 when reduce_Bps is infinite).
double gamma_s(double bytes, double reduce_Bps);

/// Plain transfer and step builders.
Transfer xfer(std::uint32_t src, std::uint32_t dst, double bytes);
/// A step in which ring[i] sends `bytes` to ring[i + dir] (dir = +1 or -1, modulo n).
Step ring_step(const std::vector<std::uint32_t>& ring, int dir, double bytes, double reduce_bytes,
               std::uint32_t repeat, std::string label);
/// The hops of a pipelined chain round `ring` (group positions), in order: broadcast from the
/// root forward round the ring, (ring[r+k], ring[r+k+1]); reduce from the rank after the root
/// forward to the root, (ring[r+1+k], ring[r+2+k]) (NCCL's ring broadcast and reduce); k = 0..n-2,
/// r = the root's place in the ring.
std::vector<std::pair<std::uint32_t, std::uint32_t>> ring_chain(const std::vector<std::uint32_t>& ring,
                                                                 const CollectiveOp& op);
/// Appends the transfers of `b` to `a` (same step; reduce bytes add).
void merge_into(Step& a, const Step& b);

/// "1.23 us" style numbers for formulas.
std::string fs(double seconds);
std::string fbw(double Bps);

/// Chunks for pipelined algorithms: p.chunks, or ceil(S / 1 MiB) clamped to [1, 64] when 0
/// (NCCL pipelines in chunks of this order: NCCL_BUFFSIZE 4 MiB split into NCCL_STEPS = 8
/// slots; 1 MiB keeps per-chunk alpha small next to the chunk's transfer time).
std::uint32_t pipeline_chunks(const CollectiveOp& op, const CostParams& p);
/// The `chunks` parameter of an algorithm that pipelines by pipeline_chunks (`shardsim list`).
ParamInfo pipeline_chunks_param();

/// n > 0 and a power of two.
bool is_power_of_two(std::size_t n);

// Factories, called by the registry in this order.
std::unique_ptr<Algorithm> make_ring();
std::unique_ptr<Algorithm> make_ring_channels();
std::unique_ptr<Algorithm> make_ring_bidir();
std::unique_ptr<Algorithm> make_torus();
std::unique_ptr<Algorithm> make_hierarchical();
std::unique_ptr<Algorithm> make_double_binary_tree();
std::unique_ptr<Algorithm> make_tree_channels();
std::unique_ptr<Algorithm> make_nvls_tree();
std::unique_ptr<Algorithm> make_rabenseifner();
std::unique_ptr<Algorithm> make_direct();
std::unique_ptr<Algorithm> make_in_network();

}  // namespace shardsim::coll::detail
