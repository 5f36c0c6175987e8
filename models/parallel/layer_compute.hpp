#pragma once
// Compute time of one transformer layer shard for one micro-batch (issue 13, item 2): the ONE
// place the parallel step (models/step/parallel_graphs.hpp) and the planner get per-layer
// compute from. A per-op model (models/compute/transformer_cost) is to replace the body; the
// contract stays.
//
// FLOPs (multiply-add = 2 FLOPs), for t = tp, s_q = s / cp query rows of the rank, keys over
// the whole sequence s, b the micro-batch, h hidden, a heads, k KV heads, d head dim, f FFN:
//   attention GEMMs  2 b s_q (h (a d + 2 k d) + a d h) / t        (Q, K, V, output projection)
//   attention core   4 b s_q s a d / t (QK^T and AV), halved for causal decoders with flash
//                    attention (the kernel skips the masked blocks; Dao et al. 2022); without
//                    flash attention the full square is computed (Megatron-LM 2021, as
//                    Narayanan et al. 2021 eq. 3 counts it)
//   MLP              2 b s_q (2 or 3) h f / t (3 with a gated FFN); MoE: top_k experts per
//                    token of width f_e, times the load-imbalance factor (the busiest expert
//                    rank, which the step waits for), plus a shared expert and the router
//   backward         2 x forward (Narayanan et al. 2021 sec. 5.1: "backward pass ... twice")
//   recomputation    full: one more forward of the layer; selective: the attention core
//                    (Korthikanti et al. 2022 sec. 5)
// Time = FLOPs / (peak(math) x flops_eff) + elementwise bytes / (hbm x mem_eff) + kernels x
// launch_s (the roofline of DESIGN 5 applied per part). Elementwise bytes: each activation
// the layer stores (memory_stage.hpp, no recompute, split as the layer runs) is written once
// in forward and read once in backward, plus the norms, residual adds and activation
// functions reading and writing their [s_q, b, h] inputs (assumption, 2 x 12 s_q b h bytes
// per pass; the per-op model replaces it). Kernels: 10 per layer forward, 20 backward
// (assumption: Megatron-LM's fused kernels).
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
};

/// Seconds of one layer shard on one device, one micro-batch. Parts, so that the step graph
/// can interleave them with the layer's communication.
struct LayerCompute {
  double attention_fwd_s = 0;  ///< QKV, core, output projection (+ the first norm)
  double core_fwd_s = 0;       ///< of which the attention core (split over cp's ring steps)
  double mlp_fwd_s = 0;        ///< MLP or router + experts (+ the second norm)
  double attention_bwd_s = 0, mlp_bwd_s = 0;
  double recompute_s = 0;      ///< extra forward work before the backward (see header)
  double forward_flops = 0;    ///< of this shard (model FLOPs, no recomputation)
  [[nodiscard]] double fwd_s() const { return attention_fwd_s + mlp_fwd_s; }
  [[nodiscard]] double bwd_s() const { return attention_bwd_s + mlp_bwd_s; }
};

LayerCompute layer_compute(const ModelSpec& m, const compute::Device& dev, const LayerShape& l);

/// The output layer of the last stage for one micro-batch: logits 2 b s_q h V / t FLOPs
/// (vocabulary-parallel, V padded as memory_stage.hpp) and the cross entropy over the fp32
/// logits (elementwise); backward twice the GEMM. The embedding lookup is a gather, left out.
struct HeadCompute {
  double fwd_s = 0, bwd_s = 0;
};
HeadCompute head_compute(const ModelSpec& m, const compute::Device& dev, const LayerShape& l);

}  // namespace shardsim::parallel
