#pragma once
// The training step of a transformer on a device mesh (DESIGN 8; issue 13 item 2): graph
// builders per parallel axis on the task-graph executor (executor.hpp). Every rank of stage i
// of the pipeline runs the same program; the program is the stage's pipeline schedule
// (parallel::stage_order: GPipe, 1F1B or interleaved 1F1B with v model chunks, Megatron-LM
// schedules.py) of per-layer ops:
//  - compute (stream 0): per layer and micro-batch, attention and MLP parts, forward and
//    backward, with recomputation (full: the layer's forward again before its backward;
//    selective: the attention core), from parallel::layer_compute; the last stage adds the
//    output layer and loss (parallel::head_compute);
//  - tp (stream 1, blocking: the next compute waits for it): Megatron-LM's two all-reduces per
//    layer in forward (after the attention and MLP row-parallel GEMMs) and two in backward
//    (the column-parallel input gradients), S = 2 b s_q h bytes (Shoeybi et al. 2019, Fig. 4;
//    Narayanan et al. 2021 sec. 3.2), repeated for the recomputed forward; with sequence
//    parallelism each all-reduce becomes an all-gather before and a reduce-scatter after the
//    tensor-parallel region, of the same S (Korthikanti et al. 2022 sec. 4.2.2);
//    in backward with sequence parallelism (TE _Linear / _LayerNormLinear backward, Megatron-Core
//    LinearWithGradAccumulationAndAsyncCommunication; Korthikanti et al. 2022 sec. 4.2.2) the
//    row-parallel layers' output gradient is all-gathered (blocking), and each column-parallel
//    layer (QKV, MLP-up) all-gathers its saved sequence-shard input again beside its
//    input-gradient GEMM D (for the weight gradient), then reduce-scatters the input gradient
//    beside its weight-gradient GEMM W: max(C, D), max(C, W), as NCCL collectives on SMs (the
//    executor's contention rule): 4 + 6 collectives per layer;
//    With tp_comm_overlap (Megatron-LM --tp-comm-overlap, TransformerEngine userbuffers:
//    te.initialize_ub; Wang et al., "Overlap Communication with Dependent Computation via
//    Decomposition", ASPLOS 2023) each of the ten overlapped layers runs as its
//    TpOverlapConfig says (tp_overlap.hpp: TE's defaults or a NeMo userbuffers config): the
//    all-gathers ring-exchanged into the column-parallel GEMM that consumes them (QKV, MLP-up;
//    backward the row-parallel layers' input-gradient GEMMs), k chunks, max(C, (k-1)/k G) +
//    G/k; the row-parallel GEMM (output projection, MLP-down) into its reduce-scatter, by ring
//    exchange G/k + max(C, (k-1)/k G) or pipelined (the last chunk's reduce-scatter after the
//    GEMM: G + C/k when C/k <= G/k); the backward's bulk pairs as above. A GEMM launched with
//    an SM margin runs units / (units - num_sm) longer; a kernel without one takes its num_sm
//    from the GEMM beside it (TaskNode::units); ring exchanges take none (copy engines).
//    Without sequence parallelism the backward all-reduces are blocking (Megatron-LM 2021), or
//    beside the weight-gradient GEMM with tp_comm_overlap. G, D, W: the GEMM times of
//    parallel::layer_compute. Not modelled: the k smaller GEMMs the chunking cuts a GEMM into
//    (their own wave quantization: the GEMM model has no split-K, which cuBLAS uses for such
//    shapes), the HBM bandwidth the overlapped communication takes from the GEMM, the
//    ring-exchange reduce-scatter's final reduction kernel, and the MLP of MoE layers with
//    ep > 1 (the all-to-alls sit between);
//  - ep (stream 1, blocking): per MoE layer a dispatch and a combine all-to-all on the ep group
//    in forward and in backward, S = tokens x top_k x h x 2 bytes x imbalance (Megatron-Core
//    MoE alltoall dispatcher; the busiest rank receives imbalance x the mean);
//  - cp (stream 2, overlapped): ring attention (Liu et al. 2023; Megatron-Core context
//    parallelism, attention with KV p2p): the K and V blocks travel around the cp group in
//    cp - 1 steps, each step beside one block of the attention core (core / cp: load-balanced
//    causal chunks). The exchange is timed as an all-gather of S = cp x 2 x 2 b s_q k d / t
//    bytes (a ring all-gather is the same cp - 1 steps of one block), issued after the QKV
//    projection that produces K and V; cp - 1 blocks run beside it and the last after both, so
//    the attention core takes max(C, (cp-1)/cp core) + core/cp = the pipelined ring's
//    t_b + (cp-1) max(t_b, t_step): exposed (cp_exposed_s) only where the exchange exceeds the
//    compute, max(0, C - (cp-1)/cp core). Backward: after the output projection's input
//    gradient, the same with K, V and the dK, dV partials travelling together (2 S), then the
//    QKV backward. Not modelled: the final hop returning dK, dV to their owner;
//  - pp (streams 4-7): activations (forward) and their gradients (backward), 2 b s_q h bytes
//    (/ t with sequence parallelism), sent to the next / previous stage as send/recv pairs, a
//    transfer timed as a 2-rank broadcast by the CommModel; in the interleaved schedule the
//    last stage sends chunk c to chunk c + 1 of the first. The next compute waits for the
//    receives it needs; with p2p_blocking for the stage's sends as well (Megatron-LM's default);
//    with p2p_scatter_gather each tp rank sends 1/t and the receiver all-gathers S = 2 b s_q h
//    over its tp group (blocking) before that compute (both under ParallelStepConfig);
//  - dp (stream 3, overlapped): the weight-update strategy on the data-parallel groups of the
//    stage (dense weights over the cp x ep x dp group, expert weights over cp x dp): gradients
//    reduced in buckets as the last micro-batch's backward of each model chunk produces them
//    (Megatron-LM --overlap-grad-reduce; bucket max(40 M, 1 M x group) elements), or, with
//    overlap_grad_reduce off, in one reduction per role after the stage's last backward
//    (Megatron-LM of 2021, --DDP-impl local: training.py train_step calls
//    model.allreduce_gradients() after forward_backward_func returns; one coalesced buffer, here
//    one collective per stage; zero3 unaffected); replicated:
//    all-reduce; sharded, zero1, zero2: reduce-scatter, 1/N update, then all-gather of the
//    updated weights (Megatron's distributed optimizer); zero3: per layer and micro-batch an
//    all-gather of its weights before forward and before backward (one layer ahead) and a
//    reduce-scatter of its gradients after backward; then the optimizer update (compute).
// Folding (Fold::exact): one representative rank per stage (all coordinates 0 but pp) when every
// collective role times alike on all its group instances (CommModel times compared with ==),
// else every rank; Fold::assume_symmetric skips that check (the planner, on symmetric preset
// topologies); Fold::none simulates every rank. At flow fidelity with folding, the
// representatives' collectives share one flow network; the folded ranks' traffic is not on it.
// Breakdown of each rank (they add up to its step time): forward_s, backward_s (compute,
// recomputation included), update_s, tp_comm_s, ep_alltoall_s (blocking collectives), and the
// idle time of the compute stream attributed to what it waited for: pp_bubble_s (a receive:
// the pipeline bubble and exposed point-to-point transfers), cp_exposed_s, dp_exposed_s
// (gradient reduction, the final all-gather, zero3 gathers).
// Limits: shared embedding gradients of tied
// embeddings across the first and last stage are not reduced; sharded with a shard group
// below N and hsdp are rejected here (ConfigError).
#include <cstdint>
#include <optional>
#include <vector>

#include "models/compute/device.hpp"
#include "models/parallel/memory_stage.hpp"
#include "models/parallel/mesh.hpp"
#include "models/parallel/model_spec.hpp"
#include "models/step/step.hpp"
#include "models/step/tp_overlap.hpp"

namespace shardsim::step {

enum class Fold : std::uint8_t { exact, assume_symmetric, none };

struct ParallelStepConfig {
  const parallel::ModelSpec* model = nullptr;
  parallel::MeshSizes mesh;
  std::vector<parallel::Axis> order = parallel::Mesh::default_order();
  std::uint64_t micro_batch = 1;
  std::uint64_t global_batch = 0;  ///< 0: one micro-batch per replica
  std::uint64_t seq = 0;           ///< 0: the model's default
  parallel::PipelineSchedule schedule;
  parallel::Recompute recompute = parallel::Recompute::none;
  bool sequence_parallel = false;
  bool tp_comm_overlap = false;  ///< overlap tp collectives with the GEMMs (see above)
  /// With tp_comm_overlap: how each overlapped layer runs (TE's defaults, or a NeMo userbuffers
  /// config: --tp-overlap-config).
  TpOverlapConfig tp_overlap;
  std::optional<bool> flash_attention;  ///< unset: on for decoders
  bool eager_kernels = false;           ///< parallel::LayerShape::eager_kernels
  parallel::DpStrategy strategy;
  const opt::Optimizer* optimizer = nullptr;
  opt::Precision precision = opt::Precision::mixed;
  double moe_imbalance = 1.0;
  std::uint64_t bucket_elements = 0;  ///< 0: Megatron's max(40e6, 1e6 x group size)
  /// Reduce gradients in buckets during the last micro-batch's backward (true), or all of them
  /// after the last backward (Megatron-LM 2021 --DDP-impl local; see above).
  bool overlap_grad_reduce = true;
  /// Pipeline point-to-point as Megatron-LM's p2p_communication._communicate runs it by default
  /// (no --overlap-p2p-communication): batch_isend_irecv, req.wait() on every send and receive,
  /// then torch.cuda.synchronize(), so a stage's next compute waits for its sends as well as its
  /// receives. false: the sends run beside the compute and only receives are waited for
  /// (--overlap-p2p-communication, NeMo's interleaved recipes, PyTorch's pipelining schedules).
  bool p2p_blocking = false;
  /// Megatron-LM's scatter/gather optimization of the pipeline transfers (Narayanan et al. 2021
  /// sec. 4.1; --scatter-gather-tensors-in-pipeline, on by default in Megatron-LM 2021): with
  /// tp > 1 each tensor-parallel rank sends 1/tp of the activation (split_tensor_into_1d_equal_
  /// chunks) and the receiving stage all-gathers it over its tp group (gather_split_1d_tensor)
  /// before the compute that needs it. Megatron skips it with sequence parallelism (the
  /// activation is already split); so does the model.
  bool p2p_scatter_gather = false;
  /// Allow a pp (pp x v interleaved) that does not divide the layers: parallel::chunk_layers
  /// (the Llama 3 rule over the virtual stages).
  bool uneven_stages = false;
  /// false: leave out the output layer's compute, so that every stage is alike (the symmetric
  /// pipeline of the bubble analysis, Narayanan et al. 2021 sec. 2.2).
  bool output_layer = true;
  bool record_timeline = false;
  Fold fold = Fold::exact;
  /// Issue 16 (models/step/variation.hpp): compute time factor per mesh rank 0..devices-1; a
  /// rank's compute nodes take duration x factor (Executor::set_compute_scale). Empty = 1;
  /// ranks past the end: 1. A stage whose ranks' factors differ is not folded (every rank
  /// is simulated: ranks_simulated grows). parallel_step.cpp applies it.
  std::vector<double> compute_scale;
};

/// One rank's step, split so that the parts add up to step_time_s.
struct ParallelRankTimes {
  int rank = 0;
  std::uint64_t stage = 0;
  std::uint64_t folded = 1;
  double step_time_s = 0, forward_s = 0, backward_s = 0, update_s = 0;
  double tp_comm_s = 0, ep_alltoall_s = 0, cp_exposed_s = 0, pp_bubble_s = 0, dp_exposed_s = 0;
  double dp_comm_s = 0;  ///< sum of its dp collectives' durations (overlapped or not)
  std::uint64_t tp_collectives = 0;
  double tp_bytes = 0;   ///< sum of S of its tp collectives
};

struct ParallelStepResult {
  StepResult step;               ///< headline (the slowest rank), memory of the fullest stage
  ParallelRankTimes slowest;     ///< the slowest rank's breakdown
  std::vector<ParallelRankTimes> per_rank;  ///< every simulated rank
  parallel::ParallelMemoryReport memory;
  std::uint64_t micro_batches = 1;
  double layer_forward_s = 0, layer_backward_s = 0;  ///< one layer, one micro-batch (compute)
  std::string fold;              ///< "stage representatives", "every rank"
};

/// The memory model's input for the step's configuration (HBM `hbm_bytes`, 0: no fit check).
parallel::ParallelMemoryInput memory_input(const ParallelStepConfig& c, double hbm_bytes);

/// Validates (parallel::parallel_memory's checks, ConfigError naming the flag), builds the
/// graph of every simulated rank, executes it and reports. O(p m v L/p) nodes per simulated
/// rank plus one CommModel call per distinct collective and group instance.
ParallelStepResult simulate_parallel_step(const ParallelStepConfig& c, const compute::Device& dev, CommModel& comm);

}  // namespace shardsim::step
