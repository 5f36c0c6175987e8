#pragma once
// Imported traces -> the native operator trace (traces/trace/trace.hpp).
//
// Mapping (docs/importers.md has the full table):
//  - Chakra (ET or JSON): GPU COMP_NODE -> op (flops = num_ops, bytes = tensor_size,
//    duration = runtime); COMM_COLL_NODE -> collective op (size = comm_size, group = number
//    of rank files or --group-size); data and control deps kept; CPU ops (is_cpu_op),
//    METADATA/INVALID and other non-simulated nodes are dropped and their deps passed through
//    (dependency on a dropped node = dependency on what it depended on). Ops are emitted in a
//    topological order (Kahn, ties by file order) as the native format requires. Several files
//    are ranks of one SPMD job: they must agree op by op (type, collective, size).
//  - Kineto: the GPU ops of one device in start order, measured durations, NCCL kernels as
//    collectives (group = "Group size", else the process-group ranks, else --group-size,
//    else distributedInfo.world_size); each op depends on the previous op of its stream.
//  - ASTRA-sim 1.0: per layer a forward op, then in reverse layer order weight-gradient and
//    input-gradient ops, each with its collective as a separate op, and an update op per
//    layer with a nonzero update delay; cycles x cycle_time_s give durations.
// Kinds the native format has no collective for (send/recv, gather, scatter, barrier) and
// collectives whose size the trace does not give become ops with their measured duration
// only; they are counted in Trace::config ("not_simulated_as_collective").
#include <cstdint>
#include <map>
#include <string_view>
#include <optional>
#include <string>
#include <vector>

#include "traces/importers/astra_v1.hpp"
#include "traces/importers/chakra.hpp"
#include "traces/importers/input.hpp"
#include "traces/importers/kineto.hpp"
#include "traces/trace/trace.hpp"

namespace shardsim::importers {

struct ImportOptions {
  /// Ranks in every collective; overrides what the trace says. Required for ASTRA-sim 1.0
  /// workloads with collectives (the workload file does not record the NPU count).
  std::optional<std::uint32_t> group_size;
  /// ASTRA-sim 1.0 compute times are cycles of the simulator clock; 1 ns is the tick of its
  /// analytical network backend. Override for another clock.
  double astra_cycle_s = 1e-9;
  /// Kineto: the device whose GPU ops form the trace (default: the lowest device id seen).
  std::optional<std::int64_t> kineto_device;
  /// Chakra (and Kineto, one file per rank): write format v2, every rank's own ops (file "<prefix>.N.et" is rank N, else its
  /// position) with each collective on its process group and sends/receives with a peer as
  /// point-to-point ops. Without it the files must agree op by op and the trace is rank 0's
  /// (format v1, every collective on all the files' ranks).
  bool per_rank = false;
  /// Chakra: pg_name -> ranks (ASTRA-sim's --comm-group-configuration JSON); implies
  /// per_rank. Empty: a pg_name's ranks are those whose files issue collectives on it, and a
  /// collective without pg_name runs on every rank.
  std::map<std::string, std::vector<int>> comm_groups;
};

/// ASTRA-sim's communicator-group file: {"<pg name>": [ranks], ...}. ConfigError naming
/// `source` and the key for anything else (empty, a rank twice, a negative rank).
std::map<std::string, std::vector<int>> parse_comm_groups(std::string_view text, const std::string& source);

trace::Trace to_native(const std::vector<ChakraTrace>& ranks, const ImportOptions& o);
trace::Trace to_native(const KinetoTrace& k, const ImportOptions& o);
trace::Trace to_native(const AstraWorkload& w, const ImportOptions& o);
/// Kineto traces of several ranks (one file each, --per-rank): format v2, rank =
/// distributedInfo.rank (else the file's position), each file's ops as to_native maps them,
/// each NCCL kernel on its "Process Group Ranks" (named by "Process Group Name"), else on
/// every rank of the files.
trace::Trace to_native_per_rank(const std::vector<KinetoTrace>& ranks, const ImportOptions& o);

/// Reads, decodes and maps `files` (several only for chakra/chakra-json: one per rank).
/// The result passes trace::validate.
trace::Trace import_files(Format f, const std::vector<std::string>& files, const ImportOptions& o);

}  // namespace shardsim::importers
