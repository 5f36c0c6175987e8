#pragma once
// Workload: what the step model needs from one replica's operator trace (DESIGN 5), in the
// models layer's own terms (the native trace format lives in traces/; traces/trace/
// workload.hpp converts). Ops keep their execution order; parameter tensors keep the unit
// that declared them, so gradient buckets and FSDP units follow the model's structure.
// `recorded` keeps the whole source trace (collectives, update ops, dependencies) for the
// `trace` strategy, which replays it as recorded instead of modelling a weight update.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/collectives/collective.hpp"
#include "models/compute/op_cost.hpp"

namespace shardsim::step {

/// forward and backward: the strategies' ops (Workload::ops). update: recorded ops only.
enum class OpPhase : std::uint8_t { forward, backward, update };

struct WorkOp {
  OpPhase phase = OpPhase::forward;
  std::uint32_t unit = 0;
  double flops = 0;
  double bytes = 0;                     ///< HBM bytes read + written
  std::uint64_t activation_bytes = 0;   ///< saved for backward (forward ops)
  std::optional<double> measured_s;     ///< measured duration (imported traces)
  std::optional<compute::OpShape> shape;  ///< kernels for the per-op model (zoo workloads)
};

/// A collective as the source trace recorded it: kind, size S in the nccl-tests convention
/// (DESIGN 2) and the number of ranks, which are topology devices 0..group_size-1, or (format
/// v2) the process group's ranks.
struct RecordedCollective {
  coll::OpKind kind = coll::OpKind::allreduce;
  std::uint64_t size_bytes = 0;
  std::uint32_t group_size = 1;
  std::vector<int> ranks{};  ///< v2: the process group (topology devices); empty: a block of group_size
  std::string group_name{};  ///< v2: the process group's name (messages, timelines)
};

/// A point-to-point transfer (format v2): send to / receive from `peer`.
struct RecordedP2P {
  bool send = true;
  int peer = 0;
  std::uint64_t size_bytes = 0;
  std::uint64_t tag = 0;
};

/// One op of the source trace, in trace order: compute (roofline from flops and bytes, or
/// measured_s) or, when `collective` is set, communication. `deps` are indices of earlier ops
/// of Workload::recorded (data and control dependencies alike).
struct RecordedOp {
  std::string name;
  OpPhase phase = OpPhase::forward;
  double flops = 0;
  double bytes = 0;
  std::optional<double> measured_s;
  std::optional<RecordedCollective> collective;
  std::optional<RecordedP2P> p2p;
  std::vector<std::size_t> deps;
  std::optional<compute::OpShape> shape;  ///< kernels for the per-op model (zoo workloads)
  int rank = -1;  ///< v2: the rank that runs it; -1: every rank (v1, one SPMD program)
};

struct ParamTensor {
  std::string name;
  std::uint64_t elements = 0;
  std::uint32_t unit = 0;
  /// Rows and columns when the tensor is a matrix (or higher: rows = first dimension,
  /// cols = product of the rest); 0 when unknown or a vector. Adafactor factors these.
  std::uint64_t rows = 0, cols = 0;
};

struct Workload {
  std::string name;
  std::uint64_t batch_per_replica = 1;  ///< samples per micro-batch
  std::uint64_t seq_len = 0;            ///< tokens per sample (0: not a sequence model)
  std::uint32_t units = 1;              ///< unit ids are 0..units-1
  std::vector<WorkOp> ops;              ///< forward and backward ops, in execution order
  std::vector<ParamTensor> params;      ///< declaration order
  std::uint64_t dropped_collectives = 0;  ///< communication ops of the source trace (replaced
                                          ///< by the strategy's own collectives)
  std::vector<RecordedOp> recorded;       ///< every op of the source trace (strategy `trace`);
                                          ///< v2: every rank's, grouped by rank
  bool per_rank = false;                  ///< v2: recorded ops carry their rank and groups

  /// Number of recorded ops that communicate (collectives and, v2, point-to-point transfers).
  [[nodiscard]] std::uint64_t recorded_collectives() const {
    std::uint64_t n = 0;
    for (const auto& o : recorded) n += o.collective || o.p2p ? 1 : 0;
    return n;
  }

  [[nodiscard]] std::uint64_t parameter_count() const {
    std::uint64_t n = 0;
    for (const auto& p : params) n += p.elements;
    return n;
  }
  /// Model FLOPs of one micro-batch (forward + backward, no recomputation).
  [[nodiscard]] double model_flops() const {
    double f = 0;
    for (const auto& o : ops) f += o.flops;
    return f;
  }
};

}  // namespace shardsim::step
