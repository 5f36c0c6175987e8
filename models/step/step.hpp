#pragma once
// The training-step model (DESIGN 5, 8): one data-parallel step of a workload on a device and
// a topology, under a weight-update strategy. The strategy's graph builder
// (graph_builders.hpp) emits one rank's program; every rank of the step (devices 0..dp-1)
// runs it as a task graph on one event-driven executor (rank_program.hpp, executor.hpp),
// folded into one representative where that is exact. On each rank:
//  - compute ops take their roofline time (or their measured time), in trace order, on the
//    compute stream;
//  - collectives are issued on the communication stream when their data is ready and run
//    one after another (FIFO); a collective of a group starts when every member has reached
//    it; its duration comes from a CommModel (the collectives layer on the actual topology
//    and group), or at flow fidelity, where collectives may overlap, from a run on one
//    shared flow network;
//  - a compute op that needs gathered weights waits for its all-gather.
// The headline figures are the slowest rank's; per_rank has every simulated rank's.
// Breakdown: forward_s and backward_s are pure compute (recomputation counts as backward);
// exposed_comm_s is the time the compute stream waits for communication (before, inside and
// after backward); update_s is the optimizer pass. step_time_s = forward + backward +
// exposed_comm + update.
//
// Strategies (N = data-parallel size, k = sharding subgroup, D = shards of the update):
//  replicated: all-reduce of gradient buckets (bucket_bytes, in backward order) as backward
//    produces them; full update (Li et al. 2020).
//  sharded (Xu et al. 2020): gradients fused into buffers of bucket_bytes (or one buffer per
//    tensor without fusion), each padded to a multiple of k elements; reduce-scatter per
//    buffer during backward (+ all-reduce of the 1/k shard across the N/k subgroups when
//    k < N); 1/k update; all-gather of the updated buffers deferred to the next forward (a
//    unit's first forward op waits for the buffers holding its weights) or, with
//    defer_allgather = false, at the end of the step.
//  zero1/zero2: reduce-scatter per bucket during backward, 1/N update, all-gather at the end
//    of the step (ZeRO sec. 7: the same volume as all-reduce); they differ in memory only.
//  zero3: per unit, all-gather before its forward and again before its backward (the next
//    unit's gather prefetched while the current one computes), reduce-scatter of its
//    gradients after its backward, 1/N update (1.5x the all-reduce volume, ZeRO sec. 7.2.2).
//  trace: no weight-update model; the trace's own ops (Workload::recorded: compute, update and
//    collective ops with their dependencies) are replayed on the two streams as recorded, each
//    collective costed by the CommModel for ranks 0..g-1 (replay.hpp). Rejects grad_accum > 1,
//    checkpointing and a shard group; memory as replicated, buffers = the largest collective.
// LAMB and Adafactor under a sharded update add one fused all-reduce (optimizer.hpp) before it.
// Gradient accumulation runs forward/backward grad_accum times; gradients are communicated
// once (zero3: reduce-scattered every micro-batch). Activation checkpointing keeps only each
// unit's input and recomputes the unit's forward before its backward.
// Complexity: O(ops + tensors) per simulated rank plus one CommModel call per collective and
// group instance.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/collectives/collective.hpp"
#include "models/compute/device.hpp"
#include "models/memory/memory.hpp"
#include "models/optimizer/optimizer.hpp"
#include "models/step/executor.hpp"
#include "models/strategy/strategy.hpp"
#include "models/step/workload.hpp"
#include "sim/time.hpp"

namespace shardsim::step {

/// Time of one collective: kind, size in the nccl-tests convention (DESIGN 2), group of
/// topology device indices. Must be deterministic; may cache.
class CommModel {
 public:
  virtual ~CommModel() = default;
  virtual double time_s(coll::OpKind kind, std::uint64_t size_bytes, const std::vector<int>& group) = 0;
  /// Devices a group may use (ranks 0..devices-1); nullopt = no limit.
  [[nodiscard]] virtual std::optional<std::size_t> devices() const { return std::nullopt; }
  /// Flow fidelity: a runner of collectives on one network shared by all those in flight,
  /// used when a step's collectives may overlap (rank_program.hpp). Null (the default): every
  /// collective is a timer of time_s().
  virtual std::unique_ptr<CollectiveRunner> concurrent_runner() { return nullptr; }
};

/// A CommModel from a plain function (tests).
class FunctionComm final : public CommModel {
 public:
  explicit FunctionComm(std::function<double(coll::OpKind, std::uint64_t, const std::vector<int>&)> f)
      : f_(std::move(f)) {}
  double time_s(coll::OpKind kind, std::uint64_t size_bytes, const std::vector<int>& group) override {
    return f_(kind, size_bytes, group);
  }

 private:
  std::function<double(coll::OpKind, std::uint64_t, const std::vector<int>&)> f_;
};

/// zero3's implementation, for the memory passes it adds around each unit's collectives
/// (strategy_graphs.cpp, run_zero3, counts and sources there); none: the collectives alone.
enum class FsdpImpl { none, fsdp1, fsdp2 };
const char* to_string(FsdpImpl f);
/// "none", "fsdp1" or "fsdp2"; ConfigError naming `where` otherwise.
FsdpImpl fsdp_impl_from_string(const std::string& s, const std::string& where);

struct StepConfig {
  Strategy strategy = Strategy::replicated;
  const opt::Optimizer* optimizer = nullptr;
  opt::Precision precision = opt::Precision::mixed;
  std::uint64_t dp = 1;             ///< N; the group is ranks 0..N-1 of the topology
  std::uint64_t shard_group = 0;    ///< k for `sharded` (0 = N); must divide N
  /// PyTorch DDP default bucket_cap_mb = 25 (MiB; torch.nn.parallel.DistributedDataParallel).
  std::uint64_t bucket_bytes = 25ULL << 20;
  std::uint32_t grad_accum = 1;
  /// Bytes per gradient element in the data-parallel reduction (all-reduce, reduce-scatter);
  /// 0: the gradients' own (opt::grad_bytes). 4: bf16 gradients reduced in fp32, as FSDP's
  /// MixedPrecision(reduce_dtype=torch.float32) does (composer's fsdp mixed_precision DEFAULT,
  /// torchtitan's FSDP2 mixed_precision_reduce = "float32").
  std::uint32_t reduce_bytes = 0;
  /// zero3 only: PyTorch FSDP's memory passes around the gathers and reductions.
  FsdpImpl fsdp = FsdpImpl::none;
  bool checkpointing = false;
  bool defer_allgather = true;      ///< sharded
  bool fusion = true;               ///< sharded: fuse small tensors into buffers
  bool prefetch = true;             ///< zero3
  bool measured_compute = false;    ///< use WorkOp::measured_s where present
  bool record_timeline = false;
  /// Fold identical ranks into one representative where exact (rank_program.hpp); false:
  /// simulate every rank (tests of the folding rule).
  bool fold = true;
  /// Compute time factor per rank 0..N-1 (issue 16: slow ranks, device speed, jitter;
  /// variation.hpp): a rank's compute ops take duration x factor. Empty = 1 for every rank;
  /// ranks past the end: 1. Ranks with different factors are never folded.
  std::vector<double> compute_scale;
  /// Device of each rank 0..N-1 (issue 16: heterogeneous clusters; empty, or null entries and
  /// ranks past the end: the step's device). Each rank's compute shares its own device's
  /// units with NCCL (Device::comm_units, step_contention) and its memory must fit its own
  /// HBM (StepResult::does_not_fit names the first rank that does not). Its compute speed is
  /// compute_scale's (variation.hpp: device_factors).
  std::vector<const compute::Device*> rank_devices;
};

/// Throws ConfigError (where = the flag) for: no optimizer, dp 0, k not dividing N,
/// grad_accum 0, bucket 0; with the trace strategy, grad_accum > 1, checkpointing, a shard group.
void validate(const StepConfig& c);

struct Interval {
  std::string stream;  ///< "compute" or "comm" (stream 1; "comm N" for stream N >= 2)
  std::string name;
  double start_s = 0, end_s = 0;
  int rank = 0;              ///< topology device
  std::uint32_t stream_index = 0;
};

/// One simulated rank: its own step time and breakdown (as StepResult's).
struct RankResult {
  int rank = 0;                ///< topology device (of a fold: the representative)
  std::uint64_t folded = 1;    ///< ranks it stands for (1: itself; a fold: all of them)
  double step_time_s = 0, forward_s = 0, backward_s = 0, exposed_comm_s = 0, update_s = 0, comm_s = 0;
};

struct StepResult {
  std::string strategy;
  double step_time_s = 0, forward_s = 0, backward_s = 0, exposed_comm_s = 0, update_s = 0;
  double comm_s = 0;               ///< sum of collective durations (overlapped or not)
  double comm_bytes = 0;           ///< bytes rank 0 sends: S x busbw factor per collective of rank 0
  std::uint64_t collectives = 0;
  double model_flops = 0;          ///< per device per step (no recomputation)
  double mfu = 0;                  ///< model_flops / (step_time x peak of the math type)
  std::uint64_t updated_elements = 0;  ///< parameters this device updates (padded shard)
  std::uint64_t padding_elements = 0;  ///< padding added to reach multiples of the shard count
  double padding_fraction = 0;         ///< padding / parameters
  memory::MemoryBreakdown memory;
  double hbm_bytes = 0;              ///< of the step's device (the smallest with rank_devices)
  bool fits = true;
  /// Set when a rank's memory exceeds its device's HBM: "rank 5 (a100-40gb): peak 45.2 GiB
  /// exceeds its 40 GiB of HBM" (the first such rank).
  std::optional<std::string> does_not_fit;
  std::vector<Interval> timeline;  ///< when record_timeline, in node order
  // Every rank (DESIGN 8): the step's devices, the distinct rank graphs executed (1 when
  // folded), the simulator's events; the headline figures above are those of the slowest
  // rank (the first of them), which every rank waits for at the next step.
  std::uint64_t ranks = 1, ranks_simulated = 1, events = 0;
  std::vector<RankResult> per_rank;
};

/// Simulates one step. Throws ConfigError for an invalid config or a workload without ops
/// (the trace strategy: without recorded ops), and, with the trace strategy, for a recorded
/// collective of more ranks than comm.devices().
StepResult simulate_step(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm);

/// Buffers of `tensors` (element counts, in order): fused up to `bucket_elements` per buffer
/// (a larger tensor is a buffer of its own) or one per tensor, each padded to a multiple of
/// `shards`. Returns padded sizes; `padding` receives the total padding.
std::vector<std::uint64_t> fuse_and_pad(const std::vector<std::uint64_t>& tensors, std::uint64_t bucket_elements,
                                        std::uint64_t shards, bool fusion, std::uint64_t& padding);

}  // namespace shardsim::step
