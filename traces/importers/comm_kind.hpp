#pragma once
// Communication kinds seen in imported traces: the union of Chakra's CollectiveCommType
// (et_def.proto: ALL_REDUCE=0 ... BARRIER=9), point-to-point nodes, and what NCCL kernels and
// PyTorch's c10d ops report. The native trace maps the subset it simulates.
#include <cstdint>
#include <optional>
#include <string_view>

namespace shardsim::importers {

enum class CommKind : std::uint8_t {
  all_reduce, reduce, all_gather, gather, scatter, broadcast, all_to_all, reduce_scatter,
  reduce_scatter_block, barrier, send, recv, send_recv
};

/// "all_reduce", "reduce", ..., "send_recv" (stable names: tests and `trace info` use them).
const char* to_string(CommKind k);

/// Chakra CollectiveCommType value -> kind; nullopt outside 0..9.
std::optional<CommKind> comm_kind_from_chakra(std::int64_t v);

/// PyTorch "Collective name" (record_param_comms args), c10d op or `nccl:` annotation names,
/// in any case, with or without underscores and a `_base`/`_coalesced`/`v` suffix:
/// "allreduce", "all_reduce", "_allgather_base", "reduce_scatter_tensor", "all_to_all",
/// "alltoall_base", "broadcast", "send", "recv", "barrier", ... nullopt if not recognised.
std::optional<CommKind> comm_kind_from_pytorch(std::string_view name);

/// NCCL kernel names: "ncclKernel_AllReduce_RING_LL_Sum_float(...)" (NCCL <= 2.18) and
/// "ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)" (NCCL >= 2.19). nullopt if `name` is not a
/// NCCL collective kernel.
std::optional<CommKind> comm_kind_from_nccl_kernel(std::string_view name);

/// True for kinds whose size follows the nccl-tests convention of the output buffer
/// (all-gather: S = n x input).
inline bool size_is_output(CommKind k) { return k == CommKind::all_gather || k == CommKind::gather; }

}  // namespace shardsim::importers
