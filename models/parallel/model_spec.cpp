#include "models/parallel/model_spec.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace shardsim::parallel {

namespace {
double d(std::uint64_t v) { return static_cast<double>(v); }
}  // namespace

double ModelSpec::attention_params() const {
  const double h = d(hidden), q = d(heads * dhead()), kv = d(kv_heads * dhead());
  double p = h * q + 2 * h * kv + q * h;
  if (qkv_bias) p += q + 2 * kv;
  if (linear_bias) p += h;
  return p;
}

double ModelSpec::mlp_params(std::uint64_t f) const {
  const double h = d(hidden), w = d(f);
  if (gated_ffn) return 3 * h * w + (linear_bias ? 2 * w + h : 0.0);
  return 2 * h * w + (linear_bias ? w + h : 0.0);
}

double ModelSpec::layer_mlp_params() const {
  if (!moe()) return mlp_params(ffn);
  double p = d(hidden) * d(experts) + d(experts) * mlp_params(expert_width());
  if (shared_expert_ffn != 0) p += mlp_params(shared_expert_ffn) + d(hidden);  // + its sigmoid gate
  return p;
}

double ModelSpec::embedding_params() const {
  return d(vocab) * d(hidden) + (learned_positions ? d(max_positions) * d(hidden) : 0.0);
}

double ModelSpec::head_params() const { return norm_params() + (tied_embeddings ? 0.0 : d(vocab) * d(hidden)); }

double ModelSpec::parameter_count() const { return d(layers) * layer_params() + embedding_params() + head_params(); }

double ModelSpec::active_parameters() const {
  double mlp = layer_mlp_params();
  if (moe()) {
    mlp = d(hidden) * d(experts) + d(top_k) * mlp_params(expert_width());
    if (shared_expert_ffn != 0) mlp += mlp_params(shared_expert_ffn) + d(hidden);
  }
  return d(layers) * (attention_params() + mlp + 2 * norm_params()) + embedding_params() + head_params();
}

double ModelSpec::training_flops_per_token(std::uint64_t seq) const {
  // Lookup tables do no matmul work; a tied table is used once more, as the output head.
  double lookup = learned_positions ? d(max_positions) * d(hidden) : 0.0;
  if (!tied_embeddings) lookup += d(vocab) * d(hidden);
  return 6.0 * (active_parameters() - lookup) + 12.0 * d(layers) * d(heads) * d(dhead()) * d(seq);
}

void ModelSpec::validate(const std::string& where) const {
  auto need = [&](const char* key, std::uint64_t v) {
    if (v == 0) throw ConfigError(where + "/" + key, "0", "a positive integer");
  };
  need("layers", layers);
  need("hidden", hidden);
  need("heads", heads);
  need("kv_heads", kv_heads);
  need("ffn", ffn);
  need("vocab", vocab);
  if (heads % kv_heads != 0) {
    throw ConfigError(where + "/kv_heads", fmt::format("{} KV heads for {} heads", kv_heads, heads),
                      "a number of KV heads that divides the number of heads");
  }
  if (head_dim == 0 && hidden % heads != 0) {
    throw ConfigError(where + "/heads", fmt::format("{} heads for hidden size {}", heads, hidden),
                      "heads dividing the hidden size (or an explicit head_dim)");
  }
  if (experts > 0 && (top_k == 0 || top_k > experts)) {
    throw ConfigError(where + "/top_k", fmt::format("top_k {} with {} experts", top_k, experts),
                      "1 <= top_k <= experts");
  }
}

}  // namespace shardsim::parallel
