#pragma once
// The native operator trace (docs/trace-format.md): a training step as a list of operators,
// either one replica's program that every rank runs (format version 1) or every rank's own
// program with explicit process groups (version 2). Each op carries its phase, FLOPs, HBM bytes moved, the
// parameter tensors it declares, the activation bytes it saves for backward, the unit
// (layer, block) it belongs to, an optional measured duration, an optional collective
// (communication ops found in imported traces) and dependency ids.
//
// Contract:
//  - FLOPs and bytes are for the whole per-replica micro-batch the trace describes
//    (`batch_per_replica` samples of `seq_len` tokens; seq_len = 0 for non-sequence models).
//  - A parameter tensor is declared once, on the first op that uses it (normally a forward
//    op); its gradient is ready when the last backward op of the same unit has run. Tensor
//    names are unique within a trace.
//  - Ops are listed in a valid execution order: every dependency id names an earlier op.
//  - Importers (issue 5) fill the same structs and call validate().
//  - Version 2 (issue 12): every op has a `rank` (a topology device); ops of one rank keep
//    their order, dependencies name earlier ops of the same rank, ids and tensor names are
//    unique per rank. A collective carries its process group (explicit ranks, or the id of a
//    group of `process_groups`); the op's rank is a member. A point-to-point op (`p2p`) sends
//    to or receives from a peer rank; the n-th send of (src, dst, tag) matches the n-th recv.
//    How ranks' collectives match (the n-th collective of a group on every member) is the
//    replay's business (models/step/replay.hpp), as it is NCCL's.
// Units: flops (double), bytes (double, may be fractional for averaged traces),
// activation_bytes (uint64), duration_s (seconds).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/collectives/collective.hpp"
#include "models/compute/op_cost.hpp"

namespace shardsim::trace {

enum class Phase : std::uint8_t { forward, backward, update, other };
const char* to_string(Phase p);
/// "forward" | "backward" | "update" | "other"; throws ConfigError naming `where`.
Phase phase_from_string(const std::string& s, const std::string& where);

enum class DType : std::uint8_t { fp64, fp32, tf32, bf16, fp16, fp8, int8, int32 };
const char* to_string(DType d);
/// Bytes per element (tf32 is stored in 4 bytes).
std::uint32_t dtype_bytes(DType d);
/// Throws ConfigError naming `where` and listing the valid names.
DType dtype_from_string(const std::string& s, const std::string& where);

/// A parameter tensor. `shape` is optional (empty = unknown); when given, its product equals
/// `elements`. Adafactor factors the second moment of tensors with two or more dimensions.
struct Tensor {
  std::string name;
  std::uint64_t elements = 0;
  DType dtype = DType::bf16;
  std::vector<std::uint64_t> shape;
};

/// A communication op present in an imported trace (kind, size in the nccl-tests convention
/// of DESIGN 2, number of participating ranks). Version 2: the process group, as the id of a
/// Trace::process_groups entry (`group`) or explicit ranks; `ranks` always holds the members
/// (resolved from the table when `group` is set) and group_size = ranks.size().
struct Collective {
  coll::OpKind kind = coll::OpKind::allreduce;
  std::uint64_t size_bytes = 0;
  std::uint32_t group_size = 1;
  std::optional<std::uint64_t> group{};  ///< v2: id in Trace::process_groups
  std::vector<int> ranks{};            ///< v2: members (topology devices, in group order)
};

/// A process group of a version-2 trace: an id the collectives name, a name (a Chakra pg
/// name, "tp0", ...) and its member ranks in group order.
struct ProcessGroupDef {
  std::uint64_t id = 0;
  std::string name;
  std::vector<int> ranks;
};

/// A point-to-point transfer of a version-2 trace (NCCL send/recv, pipeline stages).
struct P2P {
  bool send = true;              ///< send to `peer`, else receive from it
  int peer = 0;                  ///< the other rank
  std::uint64_t size_bytes = 0;
  std::uint64_t tag = 0;
};

struct Op {
  std::uint64_t id = 0;
  std::string name;
  Phase phase = Phase::forward;
  std::uint32_t unit = 0;           ///< layer / FSDP unit index
  double flops = 0;                 ///< floating-point operations of this op
  double bytes = 0;                 ///< HBM bytes read + written
  std::vector<Tensor> params;       ///< parameter tensors declared by this op
  std::uint64_t activation_bytes = 0;  ///< bytes saved for backward (forward ops)
  std::optional<double> duration_s;    ///< measured duration (imported traces)
  std::optional<Collective> collective;
  std::optional<P2P> p2p;              ///< v2 only; not together with a collective
  std::vector<std::uint64_t> deps;     ///< ids of earlier ops (of the same rank) this op waits for
  std::optional<int> rank;             ///< v2: the rank (topology device) that runs the op
  /// The kernels of the op (models/compute/op_cost.hpp), set by the zoo; the step times an op
  /// that has one by the per-op model instead of the roofline. Not part of the file format.
  std::optional<compute::OpShape> shape;
};

struct Trace {
  std::string name;
  std::string source = "zoo";      ///< "zoo", "chakra", "kineto", "astra-sim", "file", ...
  std::uint64_t batch_per_replica = 1;  ///< samples in the micro-batch the ops describe
  std::uint64_t seq_len = 0;             ///< tokens per sample (0: not a sequence model)
  nlohmann::json config = nlohmann::json::object();  ///< generator hyperparameters, free form
  /// 1: `ops` is one replica's program, every rank runs it, a collective records a group size;
  /// 2: `ops` holds every rank's ops (Op::rank), grouped by rank, collectives name their groups.
  std::uint32_t version = 1;
  std::vector<ProcessGroupDef> process_groups;  ///< v2
  std::vector<Op> ops;

  /// Sum of the elements of every declared parameter tensor.
  [[nodiscard]] std::uint64_t parameter_count() const;
  /// Sum of flops over ops of one phase.
  [[nodiscard]] double flops(Phase p) const;
  /// Number of units (1 + the largest unit id; 0 for an empty trace).
  [[nodiscard]] std::uint32_t num_units() const;
  /// v2: the distinct ranks in order of first appearance (ascending in a valid trace); v1: {}.
  [[nodiscard]] std::vector<int> ranks() const;
};

/// Checks every rule of docs/trace-format.md. Throws ConfigError whose where is
/// `where` + JSON pointer (e.g. "t.json/ops/3/flops") and whose message names the op.
void validate(const Trace& t, const std::string& where);

/// JSON <-> Trace. from_json validates (unknown keys are errors); to_json writes every field
/// in a fixed order so output is deterministic.
Trace trace_from_json(const nlohmann::json& j, const std::string& where);
nlohmann::json to_json(const Trace& t);

/// Text -> Trace: bad JSON (line and column), JSON nested deeper than kMaxJsonDepth
/// (sim/text/json_text.hpp, byte offset) or a failed rule is a ConfigError naming `source`.
Trace parse_trace(std::string_view text, const std::string& source);

/// Files. load_trace throws ConfigError for a missing file, bad JSON or a failed rule.
Trace load_trace(const std::string& path);
void save_trace(const Trace& t, const std::string& path);

}  // namespace shardsim::trace
