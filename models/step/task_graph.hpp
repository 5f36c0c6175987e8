#pragma once
// A step as a task graph of ranks (DESIGN 8): what the Executor (executor.hpp) runs.
//
// Nodes:
//  - compute: one op on one rank, with a duration (the device model's or a measured one);
//  - collective: one collective on a named process group (explicit topology device indices),
//    kind and size S in the nccl-tests convention (DESIGN 2). It exists ONCE per group: every
//    member rank of the graph has it on its stream `stream`, and it starts when it is at the
//    head of that stream on every member rank of the graph and its dependencies are done.
//    Members that the graph does not simulate (folded ranks, rank_program.hpp) do not gate it;
//  - send / recv: one point-to-point transfer, a send on `rank` to `peer` matched with the
//    recv on `peer` from `rank` with the same tag (the n-th send of a (src, dst, tag) with the
//    n-th recv). The transfer starts when both are ready and ends for both at once (NCCL's
//    ncclSend/ncclRecv rendezvous); its duration is the send's.
// Streams: each rank of the graph has `streams()` FIFO streams, 0 = compute, 1.. =
// communication (NCCL runs the collectives of different groups on different streams). A node
// on a stream runs after the nodes added before it on that stream (of that rank).
// Dependencies: node ids of any node (also of other ranks). The graph is built by the graph
// builders (rank_program.hpp, replay.hpp) and checked by validate().
//
// Layout: nodes in one vector, dependencies in one flat array (CSR), names only when asked
// for (timelines): a folded GPT-3 175B step is ~10^4 nodes, an unfolded one ~10^7.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/collectives/collective.hpp"

namespace shardsim::step {

using NodeId = std::uint32_t;

enum class NodeKind : std::uint8_t { compute, collective, send, recv };
/// What a compute node counts toward in the step breakdown (step.hpp).
enum class NodePhase : std::uint8_t { forward, backward, update, comm };

struct ProcessGroup {
  std::string name;
  std::vector<int> ranks;  ///< topology device indices, in group order
};

struct TaskNode {
  NodeKind kind = NodeKind::compute;
  NodePhase phase = NodePhase::forward;
  coll::OpKind op = coll::OpKind::allreduce;  ///< collective
  std::uint32_t stream = 0;
  int rank = -1;                ///< compute, send, recv: the rank; collective: -1
  int peer = -1;                ///< send: destination, recv: source
  std::uint32_t group = 0;      ///< collective: index into groups()
  std::uint64_t size_bytes = 0; ///< collective: S; send/recv: bytes
  std::uint64_t tag = 0;        ///< send/recv
  double duration_s = 0;        ///< compute, send, analytical collective (recv: unused)
  /// compute: fraction of duration_s spent in GEMM kernels (0..1), which a persistent GEMM
  /// library slows more under communication (CommContention::rate); 0 unless set.
  float gemm_share = 0;
  /// collective: it runs on compute units (NCCL's CTAs) and so slows the compute beside it
  /// (executor.hpp); false for transfers on copy engines (TransformerEngine's userbuffers).
  bool takes_units = true;
  /// collective with takes_units: the compute units it holds while in flight; 0: the device's
  /// comm_units (NCCL's channels; collectives in flight together hold them once). TE
  /// userbuffers' kernels hold their num_sm, added to what else is in flight (executor.hpp).
  std::uint16_t units = 0;
  std::uint32_t name = 0;       ///< index into names() (0 = "")
  std::uint32_t deps_begin = 0, deps_end = 0;
};

class TaskGraph {
 public:
  /// `ranks`: topology device indices the graph simulates (distinct); `streams` per rank.
  TaskGraph(std::vector<int> ranks, std::uint32_t streams);

  /// Adds a process group; returns its index.
  std::uint32_t add_group(ProcessGroup g);

  NodeId add_compute(int rank, std::uint32_t stream, NodePhase phase, double duration_s, std::span<const NodeId> deps,
                     std::string name = {});
  NodeId add_collective(std::uint32_t group, std::uint32_t stream, coll::OpKind op, std::uint64_t size_bytes,
                        double duration_s, std::span<const NodeId> deps, std::string name = {});
  NodeId add_send(int rank, std::uint32_t stream, int peer, std::uint64_t bytes, std::uint64_t tag, double duration_s,
                  std::span<const NodeId> deps, std::string name = {});
  NodeId add_recv(int rank, std::uint32_t stream, int peer, std::uint64_t bytes, std::uint64_t tag,
                  std::span<const NodeId> deps, std::string name = {});
  void reserve(std::size_t nodes, std::size_t deps);
  /// Sets a compute node's TaskNode::gemm_share (clamped to [0, 1]; NaN: 0).
  void set_gemm_share(NodeId n, double share);
  /// Sets a collective's TaskNode::takes_units.
  void set_takes_units(NodeId n, bool takes) { nodes_.at(n).takes_units = takes; }
  /// Sets a collective's TaskNode::units.
  void set_units(NodeId n, std::uint16_t units) { nodes_.at(n).units = units; }

  /// Throws ConfigError naming the op (its name, else "node N") for: a group naming a rank
  /// outside 0..topology_devices-1 (or twice), a graph rank outside it, a stream out of range,
  /// a compute/send/recv on a rank the graph does not simulate, a dependency on a node that
  /// does not exist, a dependency cycle (dependencies and stream order together), a send
  /// without a matching receive (or a receive without a send). O(nodes + deps).
  void validate(std::size_t topology_devices) const;

  [[nodiscard]] const std::vector<TaskNode>& nodes() const { return nodes_; }
  [[nodiscard]] const TaskNode& node(NodeId n) const { return nodes_[n]; }
  [[nodiscard]] std::span<const NodeId> deps(NodeId n) const {
    return {deps_.data() + nodes_[n].deps_begin, nodes_[n].deps_end - nodes_[n].deps_begin};
  }
  [[nodiscard]] const std::vector<ProcessGroup>& groups() const { return groups_; }
  /// The members of group `g` that the graph simulates, as topology devices in group order
  /// (computed once per group: a folded step's groups have hundreds of members, one simulated).
  [[nodiscard]] const std::vector<int>& simulated_members(std::uint32_t g) const { return sim_members_[g]; }
  [[nodiscard]] const std::vector<int>& ranks() const { return ranks_; }
  [[nodiscard]] std::uint32_t streams() const { return streams_; }
  [[nodiscard]] std::size_t size() const { return nodes_.size(); }
  [[nodiscard]] const std::string& name(NodeId n) const { return names_[nodes_[n].name]; }
  /// The op's name for messages: its name, or "node N".
  [[nodiscard]] std::string describe(NodeId n) const;
  /// Index of a topology device in ranks(), or -1 when the graph does not simulate it.
  [[nodiscard]] int rank_index(int device) const {
    return device >= 0 && static_cast<std::size_t>(device) < rank_index_.size() ? rank_index_[static_cast<std::size_t>(device)] : -1;
  }
  /// Calls fn(k) with the rank index k (into ranks()) of every simulated rank that runs node
  /// `n`: its rank, or for a collective each simulated member of its group.
  template <class F>
  void for_each_rank(NodeId n, F&& fn) const {
    const auto& node = nodes_[n];
    if (node.kind != NodeKind::collective) {
      fn(static_cast<std::size_t>(rank_index(node.rank)));
      return;
    }
    for (const int m : sim_members_[node.group]) fn(static_cast<std::size_t>(rank_index(m)));
  }

 private:
  NodeId push(TaskNode n, std::span<const NodeId> deps, std::string name);
  std::vector<int> ranks_;
  std::vector<int> rank_index_;
  std::uint32_t streams_;
  std::vector<TaskNode> nodes_;
  std::vector<NodeId> deps_;
  std::vector<ProcessGroup> groups_;
  std::vector<std::vector<int>> sim_members_;
  std::vector<std::string> names_{std::string()};
};

}  // namespace shardsim::step
