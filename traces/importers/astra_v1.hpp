#pragma once
// ASTRA-sim 1.0 text workloads (astra-sim/astra-sim before the Chakra engine, commit 86fec9b;
// format in inputs/workload/README.md and Workload.cc initialize_workload):
//   line 1: parallelism policy (DATA, MICRO, MODEL, HYBRID_DATA_MODEL, HYBRID_MODEL_DATA,
//           HYBRID_CUSTOMIZED, HYBRID_TRANSFORMER, HYBRID_DLRM, ...), then optional
//           "key: value" pairs (model_parallel_NPU_group: 8, ...); HYBRID_DLRM* takes a bare
//           integer, the last bottom-MLP layer;
//   line 2: number of layers;
//   then one line per layer: name reserved fwd_compute fwd_comm_type fwd_comm_bytes
//           ig_compute ig_comm_type ig_comm_bytes wg_compute wg_comm_type wg_comm_bytes
//           update_delay [specific_policy, HYBRID_CUSTOMIZED only].
// Fields are separated by any run of spaces and tabs; CRLF line ends are accepted.
// Units: compute times and update delay in cycles, communication sizes in bytes.
// Comm types: NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL, each optionally with a
// group suffix _DP, _EP or _DP_EP (ASTRA-sim forks such as SimAI write these).
// Errors: ConfigError "<file>: line N: ..." (1-based). Complexity O(bytes).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "traces/importers/comm_kind.hpp"

namespace shardsim::importers {

struct AstraPass {
  std::uint64_t compute_cycles = 0;
  std::optional<CommKind> comm;  ///< nullopt for NONE
  std::string comm_group;        ///< "", "DP", "EP" or "DP_EP"
  std::uint64_t comm_bytes = 0;
};

struct AstraLayer {
  std::string name;
  std::int64_t reserved = -1;
  AstraPass forward, input_grad, weight_grad;
  std::uint64_t update_cycles = 0;
  std::string specific_policy;  ///< HYBRID_CUSTOMIZED only
  std::size_t line = 0;         ///< 1-based line in the file
};

struct AstraWorkload {
  std::string source;
  std::string policy;
  std::vector<std::pair<std::string, std::string>> params;  ///< header "key: value" pairs
  std::optional<std::int64_t> dlrm_last_bottom_layer;
  std::vector<AstraLayer> layers;
};

/// True for the policy words ASTRA-sim 1.0 (and its forks) accept on line 1.
bool astra_v1_is_policy(std::string_view word);

AstraWorkload decode_astra_v1(std::string_view text, const std::string& source);

}  // namespace shardsim::importers
