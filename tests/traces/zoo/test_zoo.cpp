// Model zoo: parameter counts against the published ones and training FLOPs per token
// against 6P + attention (traces/zoo/zoo.hpp states the counting conventions).
#include <doctest/doctest.h>

#include <cmath>

#include "sim/error.hpp"
#include "traces/trace/workload.hpp"
#include "traces/zoo/zoo.hpp"

using namespace shardsim;

namespace {
std::uint64_t params_of(const std::string& name) {
  return zoo::generate(zoo::find_model(name, "test"), 1, 0).parameter_count();
}
double rel(double a, double b) { return std::abs(a - b) / b; }
}  // namespace

TEST_CASE("GPT-3 175B: parameters from Table 2.1 hyperparameters, within 1 % of 175B") {
  // d = 12288, L = 96, V = 50257, 2048 learned positions. Per layer: QKV 3d^2 + 3d, output
  // d^2 + d, MLP 8d^2 + 5d, two LayerNorms 4d -> 12d^2 + 13d. Plus embeddings and final LN (2d).
  const std::uint64_t d = 12288, L = 96;
  const std::uint64_t expected = 50257 * d + 2048 * d + L * (12 * d * d + 13 * d) + 2 * d;
  CHECK(expected == 174604259328ULL);
  CHECK(params_of("gpt3-175b") == expected);
  CHECK(rel(static_cast<double>(expected), 175e9) < 0.01);
}

TEST_CASE("Llama-2 70B: GQA parameters equal the released checkpoint's count") {
  // d = 8192, L = 80, 64 heads, 8 KV heads (d_kv = 1024), d_ff = 28672, V = 32000, untied.
  // Per layer: q, o 2d^2; k, v 2 d d_kv; SwiGLU 3 d d_ff; two RMSNorms 2d.
  const std::uint64_t d = 8192, L = 80, kv = 1024, f = 28672, V = 32000;
  const std::uint64_t expected = L * (2 * d * d + 2 * d * kv + 3 * d * f + 2 * d) + 2 * V * d + d;
  // 68,976,648,192: the count of the released Llama-2-70b weights (Hugging Face model card,
  // "69B"); the paper's "70B" is rounded: 1.5 % above.
  CHECK(expected == 68976648192ULL);
  CHECK(params_of("llama2-70b") == expected);
  CHECK(rel(static_cast<double>(expected), 70e9) < 0.015);
}

TEST_CASE("BERT-large: encoder equals the released checkpoint, heads add the MLM/NSP parameters") {
  // L = 24, H = 1024, V = 30522, 512 positions, 2 token types. Encoder (BertModel incl.
  // pooler) = 335,141,888 for bert-large-uncased; pre-training heads add the MLM transform
  // (H^2 + H + 2H LayerNorm), the decoder bias (V) and the NSP classifier (2H + 2).
  const std::uint64_t H = 1024, L = 24, V = 30522;
  const std::uint64_t encoder = (V + 512 + 2) * H + 2 * H + L * (12 * H * H + 13 * H) + H * H + H;
  CHECK(encoder == 335141888ULL);
  const std::uint64_t expected = encoder + (H * H + H + 2 * H) + V + (2 * H + 2);
  CHECK(params_of("bert-large") == expected);
  // The paper's "340M" is rounded; the true count is 1.1 % below it.
  CHECK(rel(static_cast<double>(expected), 340e6) < 0.012);
  // BERT-base's encoder is the well-known 109,482,240.
  const std::uint64_t h = 768;
  CHECK(params_of("bert-base") - (h * h + h + 2 * h) - V - (2 * h + 2) ==
        (V + 512 + 2) * h + 2 * h + 12 * (12 * h * h + 13 * h) + h * h + h);
  CHECK((V + 512 + 2) * h + 2 * h + 12 * (12 * h * h + 13 * h) + h * h + h == 109482240ULL);
}

TEST_CASE("ResNet-50: 25,557,032 parameters (torchvision), within 1 % of 25.6M") {
  CHECK(params_of("resnet50") == 25557032ULL);
  CHECK(rel(25557032.0, 25.6e6) < 0.01);
  // Forward: 4.09 G multiply-adds per 224x224 image (torchvision model table "GFLOPS 4.09",
  // counting MACs); BN, ReLU and pooling add about 0.8 % on top in our count.
  const auto t = zoo::resnet50_trace(1);
  const double fwd_macs = t.flops(trace::Phase::forward) / 2.0;
  CHECK(fwd_macs > 4.09e9);
  CHECK(rel(fwd_macs, 4.09e9) < 0.015);
  CHECK(t.flops(trace::Phase::backward) == doctest::Approx(2.0 * t.flops(trace::Phase::forward)).scale(0));
}

TEST_CASE("Llama-3 and the GPT-3 family stay within 1 % of their nominal sizes") {
  CHECK(rel(static_cast<double>(params_of("llama3-8b")), 8.03e9) < 0.01);     // Table 3: "8B" = 8.03B
  CHECK(rel(static_cast<double>(params_of("llama3-405b")), 405e9) < 0.01);
  CHECK(rel(static_cast<double>(params_of("llama2-7b")), 6.74e9) < 0.01);     // released: 6,738,415,616
  CHECK(params_of("llama2-7b") == 6738415616ULL);
  CHECK(rel(static_cast<double>(params_of("gpt3-13b")), 13.0e9) < 0.01);
  CHECK(rel(static_cast<double>(params_of("gpt3-1.3b")), 1.3e9) < 0.02);
}

TEST_CASE("Training FLOPs per token are 6P plus the attention term 12 L s d") {
  // Narayanan et al. 2021, eq. 3: per token 6 P_matmul + 12 L s d (QK^T and AV forward 4 s d
  // per layer, x3 for training). GPT-3 ties the output head to the embedding, so every
  // parameter except the 2048 x d position table is used in a matmul.
  const std::uint64_t s = 2048, d = 12288, L = 96;
  const auto t = zoo::generate(zoo::find_model("gpt3-175b", "t"), 1, s);
  const double P = static_cast<double>(t.parameter_count());
  const double per_token = (t.flops(trace::Phase::forward) + t.flops(trace::Phase::backward)) / static_cast<double>(s);
  const double expected = 6.0 * P + 12.0 * static_cast<double>(L * s * d);
  CHECK(rel(per_token, expected) < 0.01);
  CHECK(per_token > 6.0 * P);  // the attention term is real: 12 L s d = 14 % of 6P here
  // Llama-2 7B: the untied input embedding (V x d) is a lookup, not a matmul.
  const auto l = zoo::generate(zoo::find_model("llama2-7b", "t"), 2, 4096);
  const double Pl = static_cast<double>(l.parameter_count()) - 32000.0 * 4096.0;
  const double per_token_l = (l.flops(trace::Phase::forward) + l.flops(trace::Phase::backward)) / (2.0 * 4096);
  CHECK(rel(per_token_l, 6.0 * Pl + 12.0 * 32 * 4096 * 4096) < 0.01);
}

TEST_CASE("Activation bytes per GPT layer follow Korthikanti et al. (34 s b h + 5 a s^2 b, unfused attention)") {
  // Flash attention (the decoders' default) is tests/models/compute/test_layer_cost.cpp's.
  const std::uint64_t b = 2, s = 1024;
  const auto t = zoo::generate(zoo::find_model("gpt3-1.3b", "t"), b, s, false);
  std::uint64_t layer0 = 0;
  for (const auto& op : t.ops) {
    if (op.unit == 1) layer0 += op.activation_bytes;
  }
  const double h = 2048, a = 24;
  CHECK(static_cast<double>(layer0) == doctest::Approx(34.0 * s * b * h + 5.0 * a * s * s * b).scale(0));
}

TEST_CASE("zoo errors: unknown model lists the valid names, batch and seq must be positive") {
  CHECK_THROWS_WITH_AS(zoo::find_model("gpt5", "--model"),
                       "--model: unknown model 'gpt5'; expected one of gpt3-125m, gpt3-350m, gpt3-760m, gpt3-1.3b, "
                       "gpt3-2.7b, gpt3-6.7b, gpt3-13b, gpt3-175b, llama2-7b, llama2-13b, llama2-70b, llama3-8b, "
                       "llama3-70b, llama3-405b, bert-base, bert-large, resnet50",
                       ConfigError);
  CHECK_THROWS_WITH_AS(zoo::generate(zoo::find_model("bert-base", "t"), 0, 0),
                       "--batch-per-device: 0; expected a positive batch", ConfigError);
  CHECK_THROWS_WITH_AS(zoo::transformer_trace("x", zoo::find_model("bert-base", "t").transformer, 1, 0),
                       "--seq: 0; expected a positive sequence length", ConfigError);
}

TEST_CASE("zoo traces validate and convert to a workload with units per layer") {
  for (const auto& m : zoo::models()) {
    if (m.name == "llama3-405b" || m.name == "gpt3-175b") continue;  // same code path, larger
    const auto t = zoo::generate(m, 1, m.resnet ? 0 : 128);
    CHECK_NOTHROW(trace::validate(t, m.name));
    const auto w = trace::to_workload(t);
    CHECK(w.parameter_count() == t.parameter_count());
    CHECK(w.ops.size() == t.ops.size());
    CHECK(w.units == (m.resnet ? 18u : static_cast<std::uint32_t>(m.transformer.layers + 2)));
  }
}
