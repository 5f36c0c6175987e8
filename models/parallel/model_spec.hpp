#pragma once
// ModelSpec: a decoder (or encoder) transformer as the parallel layout and the memory model
// see it. traces/models builds it from a Hugging Face config.json, shardsim's own model JSON
// or a zoo name; this header only counts.
//
// Parameter count (every matrix h_in x h_out, biases and norms as flagged):
//   attention  h (a d) + 2 h (k d) + (a d) h            (q, k, v, o; d = head_dim, k = KV heads)
//              + qkv bias (a d + 2 k d) + o bias h
//   dense MLP  gated (SwiGLU, Shazeer 2020): 3 h f; else 2 h f (+ biases f + h)
//   MoE MLP    router h E + E x expert MLP (f_e) + shared expert (f_s, + its 1 x h gate)
//   norms      2 per layer + 1 final: h each (RMSNorm) or 2h (LayerNorm)
//   embeddings V h (+ max_positions h when learned) ; output head V h unless tied
// Llama-3-8B: 32 x (41.9M + 176.2M + 8K) + 2 x 525.3M + 4K = 8.03B, as Meta's model card.
//
// Training FLOPs per token (model FLOPs, no recomputation), Chowdhery et al. 2022 (PaLM),
// Appendix B: 6 N + 12 L H Q T, with N the parameters a token uses in matmuls (the top-k
// experts only; lookup tables - input embeddings when untied, learned positions - left out),
// L layers, H heads, Q head dimension, T sequence length. For GPT-3 this equals Narayanan et
// al. 2021 (SC21) eq. 3 divided by 4/3 (their 96 B s l h^2 counts a recomputed forward) with
// the attention term taken as a full, not causal-halved, square.
#include <cstdint>
#include <string>

namespace shardsim::parallel {

struct ModelSpec {
  std::string name;
  std::string source;        ///< file or zoo entry it came from
  std::string architecture;  ///< "llama", "gpt2", "mixtral", ... ("shardsim" for own JSON)
  std::uint64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0;  ///< head_dim 0: hidden / heads
  std::uint64_t ffn = 0;            ///< dense MLP width (or each expert's when MoE)
  bool gated_ffn = false;           ///< SwiGLU / GeGLU: 3 matrices instead of 2
  std::uint64_t vocab = 0;
  std::uint64_t max_positions = 0;
  bool learned_positions = false;   ///< a max_positions x hidden table (GPT-2)
  bool tied_embeddings = false;
  bool rmsnorm = false;             ///< RMSNorm (h) instead of LayerNorm (2h)
  bool qkv_bias = false;            ///< biases on q, k, v
  bool linear_bias = false;         ///< biases on o and the MLP matrices
  bool dropout = false;             ///< dropout in training (GPT-2/3, BERT; not Llama)
  bool decoder = true;              ///< causal LM (flash attention is the default)
  std::uint64_t experts = 0;        ///< 0: dense
  std::uint64_t top_k = 0;
  std::uint64_t expert_ffn = 0;     ///< 0: ffn
  std::uint64_t shared_expert_ffn = 0;  ///< Qwen2-MoE shared expert (0: none)
  std::uint64_t default_seq = 0;    ///< sequence length when --seq is not given

  [[nodiscard]] std::uint64_t dhead() const { return head_dim != 0 ? head_dim : (heads ? hidden / heads : 0); }
  [[nodiscard]] bool moe() const { return experts > 0; }
  [[nodiscard]] std::uint64_t expert_width() const { return expert_ffn != 0 ? expert_ffn : ffn; }

  /// Per layer: attention (q, k, v, o and their biases).
  [[nodiscard]] double attention_params() const;
  /// Per layer: one dense MLP of width f (or one expert's).
  [[nodiscard]] double mlp_params(std::uint64_t f) const;
  /// Per layer: every MLP parameter (dense, or router + all experts + shared expert).
  [[nodiscard]] double layer_mlp_params() const;
  [[nodiscard]] double norm_params() const { return rmsnorm ? static_cast<double>(hidden) : 2.0 * static_cast<double>(hidden); }
  [[nodiscard]] double layer_params() const { return attention_params() + layer_mlp_params() + 2 * norm_params(); }
  [[nodiscard]] double embedding_params() const;  ///< word (+ position) table
  [[nodiscard]] double head_params() const;       ///< final norm + untied output matrix
  [[nodiscard]] double parameter_count() const;
  /// Parameters one token passes through (top_k experts of each MoE layer).
  [[nodiscard]] double active_parameters() const;
  /// 6 N + 12 L H Q T (see above).
  [[nodiscard]] double training_flops_per_token(std::uint64_t seq) const;

  /// Throws ConfigError naming `where` for a zero size, kv_heads not dividing heads, top_k
  /// missing or above experts.
  void validate(const std::string& where) const;
};

}  // namespace shardsim::parallel
