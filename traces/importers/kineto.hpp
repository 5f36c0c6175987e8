#pragma once
// PyTorch profiler / Kineto Chrome traces (.json, .json.gz), decoded into GPU ops, their host
// launches and the NCCL collectives they run.
//
// What is read (Kineto's ChromeTraceLogger output; Chrome Trace Event Format):
//  - "X" slices: cat kernel / gpu_memcpy / gpu_memset are GPU ops (device = args.device or
//    pid, stream = args.stream or tid); cuda_runtime / cuda_driver are host launches;
//    cpu_op and user_annotation are host ops (record_param_comms and nccl:* carry
//    collective metadata).
//  - launch -> GPU op links: "ac2g" flow pairs (ph "s" on the launch, ph "f" with bp "e" on
//    the GPU op, matched by id and bound to the slice starting at the flow's pid/tid/ts);
//    where a trace has no flows, args.correlation equal on both sides.
//  - NCCL collectives: newer traces put "Collective name", "In msg nelems", "Out msg nelems",
//    "Group size", "dtype", "Process Group Name/Ranks" on the kernel (or on the enclosing
//    record_param_comms host op); older ones give only the kernel name
//    ("ncclKernel_AllReduce_RING_LL_Sum_float"), refined when the launch sits inside a
//    "nccl:all_reduce" annotation whose "Input Dims"/"Input type" give the element count.
// Units: ts and dur in microseconds (Kineto writes us with ns fractions); sizes in bytes.
// Errors: ConfigError "<file>/traceEvents/<i>/<key>: ..." (JSON pointer) or
// "<file>: byte N" for JSON syntax. Complexity O(events log events).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "traces/importers/comm_kind.hpp"

namespace shardsim::importers {

struct KinetoCollective {
  enum class Source : std::uint8_t { kernel_args, host_args, annotation, kernel_name };
  CommKind kind = CommKind::all_reduce;
  Source source = Source::kernel_name;
  std::optional<std::uint64_t> in_elems, out_elems;
  std::string dtype;                 ///< as written ("Float", "float", "c10::BFloat16")
  std::uint32_t element_bytes = 0;   ///< 0 when unknown
  std::optional<std::uint32_t> group_size;
  std::vector<std::int64_t> ranks;   ///< "Process Group Ranks" when given
  std::string pg_name;
  /// nccl-tests size S (DESIGN 2): all-gather = output bytes (n x input), others = input bytes.
  /// nullopt when the trace does not give it (kernel-name-only form, or all-gather with only
  /// the input size and no group size).
  std::optional<std::uint64_t> size_bytes;
};
const char* to_string(KinetoCollective::Source s);

struct KinetoGpuOp {
  std::string name;
  std::string category;  ///< "kernel", "gpu_memcpy" or "gpu_memset" (lower case)
  std::int64_t device = 0;
  std::int64_t stream = 0;
  double ts_us = 0;
  double dur_us = 0;
  std::optional<std::int64_t> correlation;
  std::optional<std::size_t> launch;  ///< index into KinetoTrace::launches
  std::optional<KinetoCollective> collective;
  std::size_t event = 0;  ///< index in traceEvents
};

struct KinetoLaunch {
  std::string name;
  double ts_us = 0;
  double dur_us = 0;
  std::optional<std::int64_t> correlation;
  std::size_t event = 0;
};

struct KinetoTrace {
  std::string source;
  std::optional<std::int64_t> rank, world_size;
  std::size_t events = 0;       ///< entries of traceEvents
  std::size_t cpu_ops = 0;      ///< cat cpu_op
  std::size_t annotations = 0;  ///< cat user_annotation
  std::size_t flow_pairs = 0;   ///< ac2g ids with both an "s" and an "f"
  std::size_t linked_by_flow = 0, linked_by_correlation = 0;
  std::vector<KinetoLaunch> launches;
  std::vector<KinetoGpuOp> gpu_ops;  ///< sorted by (ts, event index)

  [[nodiscard]] std::size_t count(std::string_view category) const;
  [[nodiscard]] std::size_t nccl_kernels() const;
};

KinetoTrace decode_kineto(std::string_view text, const std::string& source);

/// Bytes per element of a PyTorch dtype name as Kineto writes it, in either spelling:
/// "Float"/"float" 4, "Double" 8, "Half"/"c10::Half" 2, "BFloat16" 2, "Long"/"long int" 8,
/// "Int"/"int" 4, "Short" 2, "Char"/"Byte"/"Bool" 1, "Float8_*" 1, ... ; nullopt if unknown.
std::optional<std::uint32_t> dtype_bytes(std::string_view dtype);

}  // namespace shardsim::importers
