#pragma once
// Memory per rank for each pipeline stage of a mesh (DESIGN 8; issue 13 item 3).
//
// Activations of one transformer layer and one micro-batch (bytes; 16-bit activations,
// 1-byte dropout masks), after Korthikanti et al. 2022, "Reducing Activation Recomputation in
// Large Transformer Models", sec. 4.1 and Table 2. With s the sequence per rank (s / cp),
// b the micro-batch, h the hidden size, a heads, t = tp, and for GPT-3 shapes:
//   no parallelism                     s b h (34 + 5 a s / h)
//   tensor parallel                    s b h (10 + 24/t + 5 a s / (h t))
//   tensor + sequence parallel         s b h (34/t + 5 a s / (h t))
//   selective recompute                the 5 a s / h term is dropped (recomputed)
//   full recompute                     only the layer input: 2 s b h (2 s b h / t with sequence
//                                      parallelism, where Megatron checkpoints the [s/t, b, h]
//                                      shard)
// Generalised to other shapes by the paper's own accounting (sec. 4.1), which this code
// follows term by term:
//   replicated over tp without sequence parallelism, R = 2 sbh (norm 1 input) + 2 sbh (QKV
//     input) + 2 sbh (norm 2 input) + 2 sbh (MLP input) + [dropout] 2 sbh (two masks)
//   split over tp, T = 2 s b a d (Q) + 4 s b k d (K, V; GQA: k KV heads) + 2 s b a d (input of
//     the output projection) + MLP intermediates 4 s b f (GELU in and out) or 6 s b f (SwiGLU:
//     gate, up, and their product)
//   attention core, C = (5 with dropout, else 2) a s_q s b (softmax output, mask, dropout
//     output; s_q = s / cp query rows against all s keys); with flash attention (Dao et al.
//     2022) no score matrix is kept: C = 4 a s_q b (fp32 log-sum-exp per query row)
//   MoE layers (Megatron-Core MoE): each token's MLP terms counted for its top-k experts
//     (balanced routing), plus the router's fp32 logits 4 s b E in R.
//   none: R + (T + C)/t; with sequence parallelism (R + T + C)/t; selective drops C.
// Extra terms (Korthikanti sec. 4.4): the first stage keeps the embedding dropout mask s b h
// (/t with sequence parallelism); the last stage keeps the final norm input 2 s b h, the
// output projection input 2 s b h (both /t with sequence parallelism) and the fp32 logits
// 4 s b V / t. Recomputation needs a working set while one layer is recomputed: full
// recompute the layer's no-recompute activations, selective its attention core C (one
// micro-batch, once per stage).
//
// In-flight micro-batches per stage come from running the schedule's order (not a formula):
//   GPipe (Huang et al. 2019): all m forwards, then all backwards: m on every stage.
//   1F1B (PipeDream-Flush, Narayanan et al. 2021 sec. 2.2): stage i runs min(p - i - 1, m)
//     warm-up forwards, then alternates; at most min(p - i, m) in flight.
//   interleaved 1F1B with v chunks (Narayanan et al. 2021 sec. 2.2; Megatron-LM
//     schedules.py get_num_warmup_microbatches): (p - i - 1) 2 + (v - 1) p warm-up forwards
//     over chunks in groups of p micro-batches; stage 0 holds 2(p-1) + (v-1)p + 1 chunk
//     micro-batches of L/(pv) layers = L/p x p (1 + (p-1)/(pv)) layers (Korthikanti sec.
//     4.2.3). Megatron requires m to be a multiple of p here.
// Each chunk's activations are weighted (embedding extras on chunk 0 of stage 0, output
// extras on the last chunk of the last stage) and the peak over the schedule is taken.
//
// Model states per stage: L/p layers (tensor-split matrices and column-parallel biases / t,
// norms and row-parallel biases replicated; experts E/ep per rank), the word embedding on the
// first stage (vocabulary padded to a multiple of 128 t, Megatron --make-vocab-size-divisible-
// by, then split over t), learned positions on the first stage, the final norm and output
// head on the last (a tied embedding is kept on both ends when p > 1, Megatron
// default_embedding_ranks). The dp-axis strategy splits them through
// memory::memory_per_device (models/memory): dense weights over the dp x ep x cp group,
// expert weights over dp x cp; hsdp = zero3 within a shard group of k, replicated across.
// Buffers: pipeline send/receive (two 2 s b h tensors, /t with sequence parallelism) when
// p > 1; zero3/hsdp gather one layer's weights plus a prefetched one (Zhao et al. 2023, FSDP).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/optimizer/optimizer.hpp"
#include "models/parallel/mesh.hpp"
#include "models/parallel/model_spec.hpp"
#include "models/strategy/strategy.hpp"

namespace shardsim::parallel {

enum class Recompute : std::uint8_t { none, selective, full };
const char* to_string(Recompute r);
/// "none" | "selective" | "full"; ConfigError naming `where`.
Recompute recompute_from_string(const std::string& s, const std::string& where);

enum class ScheduleKind : std::uint8_t { gpipe, one_f_one_b, interleaved };
struct PipelineSchedule {
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  std::uint64_t virtual_stages = 1;  ///< v (interleaved only)
  [[nodiscard]] std::string str() const;  ///< "gpipe", "1f1b", "interleaved:2"
};
/// "gpipe" | "1f1b" | "interleaved:V" (V >= 2); ConfigError naming `where`.
PipelineSchedule schedule_from_string(const std::string& s, const std::string& where);

/// One op of a stage's pipeline schedule: the forward or backward of micro-batch `micro` on
/// the stage's model chunk `chunk` (0 unless interleaved).
struct PipeOp {
  bool forward = true;
  std::uint32_t chunk = 0;
  std::uint64_t micro = 0;
};
/// The order in which stage `i` of `p` runs the forwards and backwards of `m` micro-batches
/// (Megatron-LM schedules.py; see above): 2 m v ops. GPipe: every forward, then every
/// backward, both in micro-batch order. O(m v).
std::vector<PipeOp> stage_order(const PipelineSchedule& s, std::uint64_t p, std::uint64_t m, std::uint64_t i);

/// Peak chunk-micro-batches in flight on each stage (index = stage) when every chunk weighs
/// the same; `m` micro-batches, `p` stages. For 1F1B: min(p - i, m).
std::vector<std::uint64_t> in_flight(const PipelineSchedule& s, std::uint64_t p, std::uint64_t m);
/// Peak of sum(weight[chunk] x live micro-batches of chunk) over the schedule of stage `i`;
/// weights.size() = v (1 unless interleaved). O(m v).
double peak_weighted(const PipelineSchedule& s, std::uint64_t p, std::uint64_t m, std::uint64_t i,
                     const std::vector<double>& weights);

/// The dp-axis weight-update strategy: a step::Strategy, or hsdp (zero3 inside groups of
/// `shard_group`, replicated across them). `sharded` also takes a shard group (0 = whole).
struct DpStrategy {
  step::Strategy strategy = step::Strategy::replicated;
  bool hsdp = false;
  std::uint64_t shard_group = 0;
  [[nodiscard]] std::string str() const;
};
/// Every weight-update strategy name plus "hsdp"; ConfigError naming `where`.
DpStrategy dp_strategy_from_string(const std::string& s, std::uint64_t shard_group, const std::string& where);

struct ActivationShape {
  std::uint64_t seq = 0;          ///< s (whole sequence; cp splits it)
  std::uint64_t micro_batch = 1;  ///< b
  std::uint64_t tp = 1, cp = 1;
  bool sequence_parallel = false;
  bool flash_attention = true;
  Recompute recompute = Recompute::none;
  bool eager_kernels = false;  ///< eager PyTorch's saved tensors (parallel::LayerShape::eager_kernels)
};

/// Bytes one layer keeps for one micro-batch (see header).
double layer_activation_bytes(const ModelSpec& m, const ActivationShape& a);
/// The working set of recomputing one layer (full: its no-recompute activations; selective:
/// its attention core; none: 0).
double recompute_working_bytes(const ModelSpec& m, const ActivationShape& a);
/// First-stage and last-stage extras for one micro-batch (see header).
double embedding_activation_bytes(const ModelSpec& m, const ActivationShape& a);
double output_activation_bytes(const ModelSpec& m, const ActivationShape& a);

struct ParallelMemoryInput {
  const ModelSpec* model = nullptr;
  MeshSizes mesh;
  std::uint64_t micro_batch = 1;
  std::uint64_t global_batch = 0;  ///< 0: one micro-batch per replica (m = 1)
  std::uint64_t seq = 0;           ///< 0: model default
  PipelineSchedule schedule;
  Recompute recompute = Recompute::none;
  bool sequence_parallel = false;
  std::optional<bool> flash_attention;  ///< unset: on for decoders, off for encoders
  const opt::Optimizer* optimizer = nullptr;
  opt::Precision precision = opt::Precision::mixed;
  DpStrategy strategy;
  double hbm_bytes = 0;  ///< 0: no fit check
  bool uneven_stages = false;  ///< allow a pp that does not divide the layers (stage_layers)
  bool eager_kernels = false;  ///< ActivationShape::eager_kernels
};

struct StageMemory {
  std::uint64_t stage = 0;
  std::uint64_t layers = 0;
  double params = 0, grads = 0, optimizer = 0;
  double activations = 0;        ///< stored for in-flight micro-batches (schedule peak)
  double recompute_working = 0;  ///< one layer's recomputation working set
  double buffers = 0;
  double peak = 0;
  std::uint64_t in_flight = 0;   ///< peak chunk-micro-batches in flight
  [[nodiscard]] double model_states() const { return params + grads + optimizer; }
};

struct ParallelMemoryReport {
  std::uint64_t micro_batches = 1;   ///< m per replica per step
  std::uint64_t seq = 0;
  bool flash_attention = true;
  double layer_activation_bytes = 0;  ///< one layer, one micro-batch
  std::vector<StageMemory> stages;
  /// Set when a stage does not fit hbm_bytes: "stage 0 activations 93.1 GiB > HBM 80.0 GiB"
  /// when one term alone exceeds it, else "stage 0 total 95.2 GiB > HBM 80.0 GiB (largest
  /// term: activations 61.3 GiB)"; the stage with the largest peak is named.
  std::optional<std::string> does_not_fit;
  [[nodiscard]] const StageMemory& worst() const;
};

/// Checks the mesh against the model and the batch (ConfigErrors below, each naming the flag
/// and the numbers), then computes every stage. O(p m v).
///   "--mesh: tp=5 does not divide the 96 attention heads of gpt3-175b; expected a tp that
///    divides the number of heads" (also KV heads, and pp x v over layers, ep over experts,
///    cp over the sequence)
///   "--global-batch: 1000 is not a multiple of the 16 data-parallel replicas (dp x ep = 16 x 1);
///    expected a global batch divisible by dp x ep"
///   "--micro-batch: 3 does not divide the per-replica batch 64 (--global-batch 1024 / 16
///    replicas); expected a micro-batch that divides the per-replica batch"
///   "--schedule: interleaved:2 with 6 micro-batches per replica and pp=4; expected a number of
///    micro-batches that is a multiple of pp (Megatron-LM's interleaved schedule)"
ParallelMemoryReport parallel_memory(const ParallelMemoryInput& in);

/// Parameter elements one rank holds before the dp-axis strategy splits them: dense
/// (replicated over dp x ep x cp) and expert (over dp x cp).
struct ShardElements {
  double dense = 0, expert = 0;
};
/// One transformer layer on one (tp, ep) rank (tensor-split matrices / t, experts E / ep).
ShardElements layer_shard_elements(const ModelSpec& m, std::uint64_t tp, std::uint64_t ep);
/// What stage `stage` of `pp` holds besides its layers: the vocabulary-parallel embedding and
/// learned positions on the first, the final norm and output head (or tied copy) on the last.
double stage_extra_elements(const ModelSpec& m, std::uint64_t tp, std::uint64_t pp, std::uint64_t stage);

/// Validation alone (what parallel_memory checks first); the planner prunes with it. With
/// `uneven_stages` a pp (pp x v interleaved) that does not divide the layers is accepted when
/// every stage (virtual stage) gets at least two layers before the balancing.
void check_mesh_for_model(const ModelSpec& m, const MeshSizes& mesh, const PipelineSchedule& s, std::uint64_t seq,
                          bool uneven_stages = false);
/// Layers of each of `pp` stages: layers / pp each when pp divides them; otherwise (uneven
/// stages) ceil(layers / pp) each, less one layer for each stage taken alternately from the two
/// ends (first, last, second, second to last, ...) until the total is right: the Llama 3 rule,
/// "reducing one Transformer layer each from the first and the last stages" (Dubey et al.
/// 2024, sec. 3.3.2), which puts 126 layers on 16 stages as 7, 8 x 14, 7.
std::vector<std::uint64_t> stage_layers(std::uint64_t layers, std::uint64_t pp);
/// Layers of each of the pp x v virtual stages in model order (virtual stage c pp + i is model
/// chunk c of stage i, Megatron-LM's interleaving): stage_layers(layers, pp v), the Llama 3 rule
/// over virtual stages, so that the first chunk of stage 0 (which also runs the embedding) and
/// the last chunk of stage pp - 1 (the output layer and loss) lose a layer first. 126 layers,
/// pp 16, v 2: 3, 4 x 30, 3. v = 1: stage_layers(layers, pp).
std::vector<std::uint64_t> virtual_stage_layers(std::uint64_t layers, std::uint64_t pp, std::uint64_t v);
/// Layers of model chunk c of stage i for each stage: out[i][c] = virtual_stage_layers()[c pp + i].
std::vector<std::vector<std::uint64_t>> chunk_layers(std::uint64_t layers, std::uint64_t pp, std::uint64_t v);
/// Micro-batches per replica: global / (dp ep) / micro (dense data parallelism is dp x ep;
/// context parallelism splits the sequence, not the batch).
std::uint64_t micro_batches(const MeshSizes& mesh, std::uint64_t global_batch, std::uint64_t micro_batch);

}  // namespace shardsim::parallel
