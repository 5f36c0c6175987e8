#pragma once
// Compute time of one transformer layer shard for one micro-batch (issue 13, item 2): the ONE
// place the parallel step (models/step/parallel_graphs.hpp) and the planner get per-layer
// compute from. The kernels are the per-op model of the data-parallel step
// (models/compute/transformer_cost.hpp layer_ops, op_cost.hpp, gemm.hpp, attention.hpp: tile
// and wave quantized GEMMs, FlashAttention-2 or the unfused path, elementwise kernels by their
// HBM bytes), so the mesh and data-parallel steps share one compute model.
//
// The layer on one rank, t = tp, s_q = s / cp query rows of the rank (keys over the whole
// sequence s), b the micro-batch, in Megatron-LM's layout (Shoeybi et al. 2019 sec. 3; with
// sequence parallelism, Korthikanti et al. 2022 sec. 4.2.2, the norms, residuals and dropouts
// on s_q / t tokens):
//   compute::layer_ops with seq = s_q, fused QKV (Megatron-LM's linear_qkv), no rotary kernels
//   (Megatron-Core fuses RoPE into one kernel: --apply-rope-fusion; left out; with eager_kernels
//   the reference path's and the eager RMSNorm's kernels, transformer_cost.hpp), causal
//   attention for decoders; the attention core is re-shaped to s_q queries over s keys
//   (context parallelism: each rank's queries attend to every key, load-balanced causal
//   chunks keep the halving, Megatron-Core CP);
//   MoE: the MLP's GEMMs on b s_q top_k x imbalance routed tokens (the busiest expert rank,
//   which the step waits for) with the expert width f_e / t, plus a shared expert over the
//   b s_q tokens and the router GEMM [b s_q, h] x [h, E];
//   backward: op_cost.hpp (input- and weight-gradient GEMMs, 2.5x flash forward);
//   recomputation: full: the layer's forward again; selective: the attention core's forward
//   (Korthikanti et al. 2022 sec. 5).
// The GEMMs next to the tensor-parallel collectives are also given alone, for the overlap of
// tensor-parallel communication with them (parallel_graphs.hpp): forward QKV and MLP-up
// (column-parallel, after the all-gather) and output projection and MLP-down (row-parallel,
// before the reduce-scatter); backward the input-gradient GEMMs of the row-parallel layers
// (after the all-gather of the output gradient), the weight-gradient GEMMs of the
// column-parallel layers (while the input gradient is reduce-scattered) and their
// input-gradient GEMMs (while, with sequence parallelism, their input is all-gathered again). Backward GEMMs of
// Y = X W (X m x k, W k x n): dX = dY W^T (m x k over n), dW = X^T dY (k x n over m)
// (op_cost.hpp).
#include <cstdint>

#include "models/compute/device.hpp"
#include "models/parallel/memory_stage.hpp"
#include "models/parallel/model_spec.hpp"

namespace shardsim::parallel {

struct LayerShape {
  std::uint64_t micro_batch = 1;  ///< b
  std::uint64_t seq = 0;          ///< s, the whole sequence (cp splits the queries)
  std::uint64_t tp = 1, cp = 1;
  bool sequence_parallel = false;
  bool flash_attention = true;
  Recompute recompute = Recompute::none;
  compute::MathType math = compute::MathType::bf16;
  double moe_imbalance = 1.0;     ///< tokens on the busiest expert rank / the mean (>= 1)
  /// The Llama reference code as eager PyTorch runs it (compute::LayerShape::eager_norm for
  /// RMSNorm models, repeat_kv, the reference rotary); off: Megatron-Core's fused kernels.
  bool eager_kernels = false;
};

/// Seconds of one layer shard on one device, one micro-batch. Parts, so that the step graph
/// can interleave them with the layer's communication.
struct LayerCompute {
  double attention_fwd_s = 0;  ///< norm 1, QKV, core, output projection (+ residual)
  double core_fwd_s = 0;       ///< of which the attention core (split over cp's ring steps)
  double mlp_fwd_s = 0;        ///< norm 2, MLP or router + experts (+ residual)
  double attention_bwd_s = 0, mlp_bwd_s = 0;
  double core_bwd_s = 0;       ///< of attention_bwd_s: the attention core
  double recompute_s = 0;      ///< extra forward work before the backward (see header)
  double forward_flops = 0;    ///< of this shard (GEMMs and attention core, no recomputation)
  // GEMMs next to the tp collectives, included in the parts above (see header).
  double qkv_fwd_s = 0, out_fwd_s = 0, up_fwd_s = 0, down_fwd_s = 0;  ///< forward
  double out_dgrad_s = 0, down_dgrad_s = 0;  ///< backward, after the output-gradient all-gather
  double qkv_wgrad_s = 0, up_wgrad_s = 0;    ///< backward, while the input gradient is reduced
  /// backward, with sequence parallelism while the saved input is all-gathered again
  double qkv_dgrad_s = 0, up_dgrad_s = 0;
  /// The GEMM kernels' share of the parts above (forward; backward: input and weight
  /// gradients), which Hopper's persistent GEMMs make slower beside NCCL (models/step/
  /// executor.hpp, CommContention::rate).
  double attention_gemm_fwd_s = 0, attention_gemm_bwd_s = 0, mlp_gemm_fwd_s = 0, mlp_gemm_bwd_s = 0;
  [[nodiscard]] double fwd_s() const { return attention_fwd_s + mlp_fwd_s; }
  [[nodiscard]] double bwd_s() const { return attention_bwd_s + mlp_bwd_s; }
};

/// Throws ConfigError ("--mesh") when tp does not divide the hidden size or the FFN width
/// (Megatron-LM splits both over tp).
LayerCompute layer_compute(const ModelSpec& m, const compute::Device& dev, const LayerShape& l);

/// The output layer of the last stage for one micro-batch: the logits GEMM [b s_q, h] x
/// [h, V / t] (vocabulary-parallel, V padded as memory_stage.hpp; gemm.hpp) and the cross
/// entropy over the fp32 logits (written, then read by the softmax: elementwise); backward
/// its two gradient GEMMs. The embedding lookup is a gather, left out.
struct HeadCompute {
  double fwd_s = 0, bwd_s = 0;
  double gemm_fwd_s = 0, gemm_bwd_s = 0;  ///< of which the logits GEMM (and its gradients)
};
HeadCompute head_compute(const ModelSpec& m, const compute::Device& dev, const LayerShape& l);

}  // namespace shardsim::parallel
