#pragma once
// One transformer layer as the kernels it runs (op_cost.hpp), from its shapes: the ops the
// zoo's layers carry (traces/zoo) and the forward / backward time of a layer on one
// tensor-parallel rank (Megatron-LM layout, Shoeybi et al. 2019, sec. 3: QKV and the MLP's
// first GEMM split by columns, the attention output and the MLP's second GEMM by rows, heads
// split over tp; the tp collectives are not included: the caller adds them). With sequence
// parallelism (Korthikanti et al. 2022, sec. 4.2.2) the norms, residual adds and dropouts run
// on s / tp of the tokens.
//
// Elementwise kernels per layer, e = bytes per activation element, T = micro_batch x seq
// tokens (T / tp for the replicated parts under sequence parallelism), f = ffn / tp:
//   norm (LayerNorm / RMSNorm)  fused (one kernel, Apex / TransformerEngine / PyTorch's native
//                               layer_norm / torch.compile): fwd read x, write y: 2 e T h, 1
//                               kernel; bwd read x, dy, write dx: 3 e T h, 2 kernels (input and
//                               weight gradients).
//                               eager (`eager_norm`: the Llama reference RMSNorm that torchtitan's
//                               norm_type = "rmsnorm" runs, `self._norm(x.float()).type_as(x) *
//                               self.weight`, _norm = x * rsqrt(x.pow(2).mean(-1) + eps)), every
//                               op its own kernel, per element of x (4-byte fp32 intermediates;
//                               the per-row mean / rsqrt are T values, not counted):
//                                 fwd x.float() e + 4, pow 8, mean 4, x * r 8, type_as 4 + e,
//                                 * weight 2 e: (28 + 4 e) T h, 8 kernels (with + eps, rsqrt);
//                                 bwd, PyTorch's autograd formulas (tools/autograd/
//                                 derivatives.yaml): * weight: dy w 2 e, dw = sum(dy y) 4 e;
//                                 type_as e + 4; x * r: g r 8, sum(g x) 16; mean: the expanded
//                                 g / N 4; pow: x.pow(1) 8, * 2 8, * g 12; the two gradients of
//                                 x summed 12; .float() 4 + e: (72 + 8 e) T h, 13 kernels.
//   residual add                fwd 3 e T h, 1 kernel; bwd the gradient sum, 3 e T h, 1 kernel
//   dropout (dropout > 0)       fwd read x, write y and a 1-byte mask: (2 e + 1) T h, 1 kernel;
//                               bwd the same
//   GeLU                        fwd 2 e T f, 1 kernel; bwd 3 e T f, 1 kernel
//   SwiGLU silu(g) * u          fwd silu 2 e T f + mul 3 e T f, 2 kernels; bwd 8 e T f, 3 kernels
//   rotary (on Q and K)         the Llama reference path (x.float() as complex, multiply,
//                               type_as): (e + 4) + 8 + (4 + e) bytes per element of Q and K,
//                               3 kernels each, fwd and bwd
//   repeat_kv (`repeat_kv`,     K and V expanded to every query head by a copy (the Llama
//   GQA, kv heads < heads)      reference's x[:, :, :, None, :].expand(...).reshape(...)): fwd
//                               read e T kv, write e T q per tensor, 2 kernels; bwd the expand's
//                               gradient, a sum over the copies: the same bytes, 2 kernels.
// Ops, in the zoo's order: norm1, attn.qkv, attn.core, attn.out (+ residual, dropout), norm2,
// mlp.up (gate and up, or fc1), mlp.act, mlp.down (+ residual, dropout).
#include <cstdint>
#include <string>
#include <vector>

#include "models/compute/op_cost.hpp"

namespace shardsim::compute {

struct LayerShape {
  std::uint64_t hidden = 0, heads = 0, kv_heads = 0, ffn = 0, seq = 0, micro_batch = 1, tp = 1;
  bool gated = false;       ///< SwiGLU (two up GEMMs) instead of GeLU
  bool flash = true;        ///< fused attention
  bool causal = true;
  bool dropout = false;     ///< dropout > 0 (masks on the attention probabilities and outputs)
  bool rotary = false;      ///< rotary embeddings applied to Q and K
  bool fused_qkv = true;    ///< one QKV GEMM (Megatron, MPT) or three (Llama reference, torchtitan)
  bool sequence_parallel = false;
  bool eager_norm = false;  ///< the norm as the Llama reference's separate eager ops (above)
  bool repeat_kv = false;   ///< GQA K / V copied to every query head (no effect when kv heads = heads)
  bool triton_attention = false;  ///< AttentionShape::triton (with flash)
  MathType math = MathType::bf16;
};

/// The kernels of one norm over `elements` (tokens x width) activations of `e` bytes: fused or
/// the eager reference RMSNorm (bytes and kernel counts in the header comment).
OpShape norm_kernels(double e, double elements, bool eager);

struct LayerOp {
  std::string name;
  OpShape shape;
};

/// The layer's ops on one tp rank. Throws ConfigError ("layer shape") for zero sizes or tp not
/// dividing hidden, heads, kv heads (when >= tp) and ffn. K / V are replicated on tp ranks
/// when kv heads < tp (Megatron-LM's GQA layout).
std::vector<LayerOp> layer_ops(const LayerShape& s);

struct LayerTime {
  double forward_s = 0, backward_s = 0;
};

/// Forward and backward time of one layer on one tp rank (sum of its ops).
LayerTime layer_time(const Device& d, const LayerShape& s);

}  // namespace shardsim::compute
