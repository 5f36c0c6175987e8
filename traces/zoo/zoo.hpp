#pragma once
// Model zoo: operator traces (traces/trace/trace.hpp) generated from hyperparameters for
// decoder transformers (GPT-3, Llama-2, Llama-3), encoders (BERT) and ResNet-50.
//
// Counting conventions (every test derives its expectation from these):
//  - A matmul of an m x k by k x n operand costs 2mkn FLOPs forward and 4mkn backward
//    (input and weight gradients); every other op's backward is 2x its forward.
//  - Attention scores and values (QK^T, AV) cost 4 b s^2 d forward per layer, full (not
//    causal-halved) square, as Narayanan et al. 2021 (SC21), eq. 3 count them; training FLOPs
//    per token are then 6 (P - P_lookup) + 12 L s d, P_lookup = parameters used only by a
//    lookup (input embeddings when untied, position and token-type embeddings).
//  - Activations are 16-bit; saved bytes per transformer layer follow Korthikanti et al. 2022,
//    "Reducing Activation Recomputation in Large Transformer Models", sec. 4.1: 34 s b h +
//    5 a s^2 b with dropout (BERT: unfused attention); decoders (GPT-3, Llama) use flash
//    attention (Dao et al. 2022), so they keep Q, K, V, O and the softmax statistics instead of
//    the s^2 terms (the probabilities' dropout mask is regenerated in the kernel), GPT-3 keeps
//    the 1-byte masks of its two other dropouts (sbh each), Llama has no dropout, and a SwiGLU
//    MLP saves its input and its three f-wide intermediates.
//  - Units: transformers 0 = embeddings, 1..L = layers, L+1 = head; ResNet-50 0 = stem, one
//    unit per bottleneck block, last = classifier.
//  - Kernels: every op of a transformer (but BERT's pre-training heads) carries its OpShape
//    (models/compute/op_cost.hpp): the layers' from compute::layer_ops (transformer_cost.hpp,
//    one tp rank of 1, 16-bit elements), the embedding, final norm and LM head (GEMM plus an
//    fp32 softmax cross-entropy) below; the step times them by the per-op model. Decoders
//    (GPT-3, Llama) run flash attention (causal), as PyTorch's SDPA and Megatron-LM do by
//    default; BERT runs unfused attention. ResNet-50 carries no shapes (roofline).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/compute/transformer_cost.hpp"
#include "sim/registry.hpp"
#include "traces/trace/trace.hpp"

namespace shardsim::zoo {

struct TransformerConfig {
  std::uint64_t layers = 0, d_model = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0;
  std::uint64_t learned_positions = 0;  ///< rows of a learned position table (0: rotary)
  std::uint64_t token_types = 0;        ///< BERT segment embeddings
  bool gated_ffn = false;               ///< SwiGLU (3 matrices) instead of GELU (2)
  bool biases = true;
  bool rmsnorm = false;                 ///< RMSNorm (d params) instead of LayerNorm (2d)
  bool tied_embeddings = true;
  bool encoder = false;                 ///< BERT: pooler, MLM head on 15 % of tokens, NSP
  bool dropout = true;                  ///< dropout > 0: masks saved (and timed) where it applies
  bool flash_attention = false;
  bool fused_qkv = true;                ///< one QKV GEMM; Llama's reference code has three
  /// The Llama reference code in PyTorch eager (torchtitan's norm_type = "rmsnorm", no
  /// torch.compile): the RMSNorm (rmsnorm models) as its separate ops and GQA's repeat_kv copies
  /// (compute::LayerShape::eager_norm / repeat_kv). Off: fused norms (Megatron-LM,
  /// TransformerEngine, PyTorch's native layer_norm, torch.compile) and GQA-aware attention.
  bool eager_kernels = false;
  /// Flash attention as HazyResearch's 2022 Triton kernel (compute::AttentionShape::triton):
  /// llm-foundry's attn_impl: triton, the MPT benchmarks' default.
  bool triton_attention = false;
};

struct ModelInfo {
  std::string name;
  std::string description;
  std::string source;          ///< paper and table of the hyperparameters
  double published_params = 0; ///< as published (rounded in papers)
  std::uint64_t default_seq = 0;  ///< 0 for ResNet-50 (224 x 224 images)
  bool resnet = false;
  TransformerConfig transformer;
};

/// All zoo models, in a fixed order.
const std::vector<ModelInfo>& models();
/// Throws ConfigError naming `where` and listing the valid names.
const ModelInfo& find_model(const std::string& name, const std::string& where);
/// The zoo as a registry (sim/registry.hpp): entry i describes models()[i].
const Registry& model_registry();

/// Trace of one replica's micro-batch of `batch` samples (seq 0 = model default; ignored by
/// ResNet-50); `flash` overrides the model's attention (unset: its default). Throws
/// ConfigError for batch 0. O(layers) ops.
/// `eager_kernels`: TransformerConfig::eager_kernels.
trace::Trace generate(const ModelInfo& m, std::uint64_t batch, std::uint64_t seq, std::optional<bool> flash = std::nullopt,
                      bool eager_kernels = false);
trace::Trace transformer_trace(const std::string& name, const TransformerConfig& c, std::uint64_t batch,
                               std::uint64_t seq);
/// The kernels of one layer of `c` for a micro-batch of `batch` x `seq` tokens (tp = 1).
compute::LayerShape layer_shape(const TransformerConfig& c, std::uint64_t batch, std::uint64_t seq);
trace::Trace resnet50_trace(std::uint64_t batch);

}  // namespace shardsim::zoo
