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
//    5 a s^2 b with dropout (GPT-3, BERT); Llama models use flash attention (Dao et al. 2022)
//    and no dropout, so they keep Q, K, V, O and the softmax statistics instead of the s^2
//    terms, and a SwiGLU MLP saves its input and its three f-wide intermediates.
//  - Units: transformers 0 = embeddings, 1..L = layers, L+1 = head; ResNet-50 0 = stem, one
//    unit per bottleneck block, last = classifier.
#include <cstdint>
#include <string>
#include <vector>

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
  bool dropout = true;
  bool flash_attention = false;
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
/// ResNet-50). Throws ConfigError for batch 0. O(layers) ops.
trace::Trace generate(const ModelInfo& m, std::uint64_t batch, std::uint64_t seq);
trace::Trace transformer_trace(const std::string& name, const TransformerConfig& c, std::uint64_t batch,
                               std::uint64_t seq);
trace::Trace resnet50_trace(std::uint64_t batch);

}  // namespace shardsim::zoo
