#pragma once
// Collective operations and their schedules (DESIGN 4).
//
// Size convention (nccl-tests, DESIGN 2): all-reduce S = buffer each rank reduces;
// reduce-scatter S = whole input of a rank (n x its output); all-gather S = whole output of
// a rank (n x its input); broadcast/reduce S = the buffer; all-to-all S = what each rank
// sends in total (S/n to each peer).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardsim::coll {

/// sendrecv: nccl-tests sendrecv_perf, a ring shift: every rank sends S bytes to the next rank
/// of the group and receives S from the previous one, all at once (busbw = algbw).
enum class OpKind : std::uint8_t { allreduce, reducescatter, allgather, broadcast, alltoall, reduce, sendrecv };
const char* to_string(OpKind k);
/// Every collective kind's name, in declaration order (`shardsim list`, error messages).
std::vector<std::string> op_kind_names();
/// Accepts allreduce|all-reduce|all_reduce, reducescatter, allgather, broadcast, alltoall,
/// reduce, sendrecv. Throws ConfigError naming `where` and listing the valid names.
OpKind op_from_string(const std::string& s, const std::string& where);

/// nccl-tests bus bandwidth factor: 2(n-1)/n all-reduce, (n-1)/n reduce-scatter, all-gather
/// and all-to-all, 1 broadcast, reduce and sendrecv (nccl-tests doc/PERFORMANCE.md).
double busbw_factor(OpKind k, std::size_t n);

struct CollectiveOp {
  OpKind kind = OpKind::allreduce;
  std::uint64_t size_bytes = 0;
  /// Participating ranks (topology device indices), in group order. Rank i of the
  /// collective is group[i].
  std::vector<int> group;
  int root = 0;  ///< group index of the root (broadcast, reduce)
  std::uint32_t element_bytes = 4;  ///< dtype size; chunks are rounded to whole elements
};

/// One transfer of a step: group indices, bytes.
///
/// In-network reduction (NVLink SHARP / IB SHARP): when `src_is_node` (or `dst_is_node`) is
/// set, src (dst) is a topology NodeId of a switch with in_network_reduction, not a group
/// index. The switch follows the same rank-local barrier rule as a rank: it starts its sends
/// of step k once every transfer of step k-1 in which it is source or destination has
/// completed, so it multicasts the reduced buffer only after all contributions arrived. The
/// switch's own reduction is free (line rate, as NVLS and SHARP do it in the switch ASIC).
struct Transfer {
  std::uint32_t src = 0;
  std::uint32_t dst = 0;
  double bytes = 0;
  bool src_is_node = false;
  bool dst_is_node = false;
};

/// A set of transfers that may run concurrently. Dependency rule (rank-local barrier): a
/// rank starts its sends of step k once every transfer of step k-1 in which it is source or
/// destination has completed and its reduction of step k-1 is done. A rank that takes no part
/// in step k-1 passes straight through. With chunking, the rule applies per chunk: chunk c of
/// step k waits only for chunk c of step k-1, so chunks pipeline through the steps.
struct Step {
  std::vector<Transfer> transfers;
  /// Bytes each receiving rank reduces after its receives of this step (0: no reduction).
  double reduce_bytes = 0;
  /// The step is repeated this many times back to back (a ring's n-1 identical steps):
  /// keeps schedules O(n) in memory for 16k ranks.
  std::uint32_t repeat = 1;
  std::string label;
};

struct Schedule {
  std::string algorithm;
  std::vector<Step> steps;
  /// Pipelining: every transfer (and reduction) is split into this many equal pieces.
  std::uint32_t chunks = 1;
  std::size_t ranks = 0;

  [[nodiscard]] std::uint64_t total_steps() const;
  /// Bytes sent by all ranks over the whole schedule (for volume checks).
  [[nodiscard]] double total_bytes() const;
};

}  // namespace shardsim::coll
