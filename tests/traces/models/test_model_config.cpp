// Models from Hugging Face config.json files, shardsim's own model JSON and the zoo: the
// shapes read, parameter counts against published totals (tests/data/models/SOURCE.txt), the
// FLOPs per token against Narayanan et al. 2021, and the error messages.
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "sim/error.hpp"
#include "traces/models/model_config.hpp"

using namespace shardsim;
using nlohmann::json;

namespace {

const std::string kData = std::string(SHARDSIM_SOURCE_DIR) + "/tests/data/models/";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

double rel(double a, double b) { return std::abs(a - b) / b; }

}  // namespace

TEST_CASE("Llama-3-8B: shapes and the exact parameter count") {
  const auto m = models::load_model_file(kData + "llama-3-8b/config.json");
  CHECK(m.name == "llama-3-8b");
  CHECK(m.architecture == "llama");
  CHECK(m.layers == 32);
  CHECK(m.hidden == 4096);
  CHECK(m.heads == 32);
  CHECK(m.kv_heads == 8);
  CHECK(m.ffn == 14336);
  CHECK(m.gated_ffn);
  CHECK(m.rmsnorm);
  CHECK_FALSE(m.tied_embeddings);
  CHECK(m.vocab == 128256);
  CHECK(m.default_seq == 8192);
  // By hand: attention 4096 x 4096 x 2 + 4096 x 1024 x 2; SwiGLU 3 x 4096 x 14336; two
  // RMSNorms; embeddings and head 128256 x 4096 each; final norm.
  const double layer = 2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 3.0 * 4096 * 14336 + 2.0 * 4096;
  const double total = 32 * layer + 2.0 * 128256 * 4096 + 4096;
  CHECK(m.parameter_count() == total);
  CHECK(total == 8030261248.0);
  CHECK(rel(m.parameter_count(), 8.03e9) < 0.01);
}

TEST_CASE("published totals within 1 %: Llama-3-70B 70.6B, GPT-2 124M, Mixtral-8x7B 46.7B / 12.9B active") {
  const auto l70 = models::load_model_file(kData + "llama-3-70b/config.json");
  CHECK(rel(l70.parameter_count(), 70.6e9) < 0.01);
  const auto g2 = models::load_model_file(kData + "gpt2/config.json");
  CHECK(g2.learned_positions);
  CHECK(g2.tied_embeddings);
  CHECK(g2.dropout);
  CHECK(g2.ffn == 4 * 768);
  CHECK(rel(g2.parameter_count(), 124e6) < 0.01);
  // GPT-2 small by hand: 12 x (12 h^2 + 13 h) + (50257 + 1024) h + 2 h = 124,439,808.
  CHECK(g2.parameter_count() == 124439808.0);
  const auto mx = models::load_model_file(kData + "mixtral-8x7b/config.json");
  CHECK(mx.experts == 8);
  CHECK(mx.top_k == 2);
  CHECK(rel(mx.parameter_count(), 46.7e9) < 0.01);
  CHECK(rel(mx.active_parameters(), 12.9e9) < 0.01);
  // A dense model uses every parameter.
  CHECK(l70.active_parameters() == l70.parameter_count());
}

TEST_CASE("GPT-NeoX and Qwen2-MoE configs: counts by hand on small shapes") {
  // GPT-NeoX: LayerNorm, biases on q, k, v, o and the MLP, untied. Per layer: attention
  // 4 h^2 + 4 h, MLP 2 h f + f + h, two LayerNorms 4 h.
  const json neox = {{"model_type", "gpt_neox"}, {"hidden_size", 64}, {"num_hidden_layers", 2},
                     {"num_attention_heads", 4}, {"intermediate_size", 256}, {"vocab_size", 1000},
                     {"max_position_embeddings", 128}};
  const auto n = models::from_hf_config(neox, "neox.json");
  const double h = 64, f = 256, V = 1000;
  CHECK(n.parameter_count() == 2 * (4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h) + V * h + 2 * h + V * h);
  // Qwen2-MoE: head_dim 16, 2 KV heads, bias on q, k, v; 4 experts of width 32 (top 2), a
  // shared expert of width 128 with a 1 x h gate, router h x 4, RMSNorm.
  const json qm = {{"model_type", "qwen2_moe"}, {"hidden_size", 64}, {"num_hidden_layers", 2},
                   {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"intermediate_size", 512},
                   {"moe_intermediate_size", 32}, {"shared_expert_intermediate_size", 128}, {"num_experts", 4},
                   {"num_experts_per_tok", 2}, {"vocab_size", 1000}, {"max_position_embeddings", 128}};
  const auto q = models::from_hf_config(qm, "qwen.json");
  const double attn = 64 * 64 + 2 * 64 * 32 + 64 * 64 + (64 + 2 * 32);
  const double expert = 3 * 64 * 32, shared = 3 * 64 * 128 + 64, router = 64 * 4, norms = 2 * 64;
  CHECK(q.parameter_count() == 2 * (attn + router + 4 * expert + shared + norms) + 2 * V * h + h);
  CHECK(q.active_parameters() == 2 * (attn + router + 2 * expert + shared + norms) + 2 * V * h + h);
  // Mixed dense and MoE layers are refused rather than miscounted.
  json mixed = qm;
  mixed["decoder_sparse_step"] = 2;
  CHECK(error_of([&] { models::from_hf_config(mixed, "qwen.json"); }) ==
        "qwen.json: /decoder_sparse_step: dense and MoE layers mixed; expected every layer MoE (decoder_sparse_step 1, "
        "no mlp_only_layers)");
}

TEST_CASE("FLOPs per token: GPT-3 175B against Narayanan et al. 2021, eq. 3 without recomputation") {
  const auto g = models::from_zoo("gpt3-175b", "--model");
  // 72 l h^2 (1 + s/(6h) + V/(12 l h)) per token (eq. 3's 96 B s l h^2 (...) counts a
  // recomputed forward: x 3/4, and V/(16lh) becomes V/(12lh)). The zoo adds biases and
  // norms (78 l h + 2 h more) the equation leaves out: within 0.01 %.
  const double l = 96, h = 12288, s = 2048, V = 50257;
  const double narayanan = 72 * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  CHECK(rel(g.training_flops_per_token(2048), narayanan) < 1e-4);
  // MoE: only the top-k experts count (6 x active, not total).
  const auto mx = models::load_model_file(kData + "mixtral-8x7b/config.json");
  const double lookup = 32000.0 * 4096;  // untied input embeddings do no matmul
  CHECK(mx.training_flops_per_token(4096) == 6 * (mx.active_parameters() - lookup) + 12.0 * 32 * 32 * 128 * 4096);
}

TEST_CASE("shardsim's own model JSON and the zoo give the same model") {
  const json own = {{"name", "gpt3-175b"}, {"layers", 96}, {"hidden", 12288}, {"heads", 96}, {"ffn", 49152},
                    {"vocab", 50257}, {"max_positions", 2048}, {"learned_positions", true},
                    {"tied_embeddings", true}, {"qkv_bias", true}, {"linear_bias", true}, {"dropout", true},
                    {"seq", 2048}};
  const auto a = models::from_model_json(own, "gpt3.json");
  const auto z = models::from_zoo("gpt3-175b", "--model");
  CHECK(a.parameter_count() == z.parameter_count());
  CHECK(rel(z.parameter_count(), 175e9) < 0.01);
  CHECK(a.default_seq == 2048);
  CHECK(a.decoder);
}

TEST_CASE("errors name the file, the JSON pointer and what was expected") {
  CHECK(error_of([] { models::from_hf_config(json{{"model_type", "falcon"}}, "config.json"); }) ==
        "config.json: /model_type: 'falcon'; expected one of gpt2, gpt_neox, llama, mistral, mixtral, qwen2, qwen2_moe");
  CHECK(error_of([] { models::from_hf_config(json{{"model_type", "llama"}, {"hidden_size", 8}}, "c.json"); }) ==
        "c.json: /num_hidden_layers: missing; expected a positive integer");
  CHECK(error_of([] {
          models::from_hf_config(json{{"model_type", "llama"}, {"hidden_size", 64}, {"num_hidden_layers", 2},
                                      {"num_attention_heads", 8}, {"num_key_value_heads", 3}, {"intermediate_size", 128},
                                      {"vocab_size", 100}, {"max_position_embeddings", 64}},
                                 "c.json");
        }) == "c.json: /kv_heads: 3 KV heads for 8 heads; expected a number of KV heads that divides the number of heads");
  CHECK(error_of([] { models::from_model_json(json{{"layers", 2}, {"hiden", 8}}, "m.json"); }).rfind(
            "m.json: /hiden: an unknown key; expected one of name, layers,", 0) == 0);
  CHECK(error_of([] { models::from_zoo("resnet50", "--model"); }) ==
        "--model: 'resnet50' is not a transformer; expected a transformer model or config.json");
  CHECK(error_of([] { models::resolve_model("/nonexistent/config.json", "--model"); }) ==
        "--model: /nonexistent/config.json: a file that cannot be opened; expected a readable model JSON file");
}
