// Layer kernels (models/compute/transformer_cost.hpp), activation memory with and without
// flash attention (traces/zoo, models/parallel/memory_activations.cpp), and the step timing
// zoo ops by the per-op model.
#include <doctest/doctest.h>

#include "models/compute/transformer_cost.hpp"
#include "models/parallel/memory_stage.hpp"
#include "models/step/step.hpp"
#include "traces/trace/workload.hpp"
#include "traces/zoo/zoo.hpp"
#include "sim/error.hpp"

using namespace shardsim;
using compute::MathType;

namespace {

double gemm_flops(const std::vector<compute::LayerOp>& ops) {
  double f = 0;
  for (const auto& o : ops) {
    for (const auto& g : o.shape.gemms) {
      f += 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) * static_cast<double>(g.batch);
    }
  }
  return f;
}

std::uint64_t layer0_saved(const trace::Trace& t) {
  std::uint64_t n = 0;
  for (const auto& op : t.ops) {
    if (op.unit == 1 && op.phase == trace::Phase::forward) n += op.activation_bytes;
  }
  return n;
}

}  // namespace

TEST_CASE("layer kernels: the GEMMs carry the layer's matmul FLOPs, split over tp") {
  compute::LayerShape s{.hidden = 4096, .heads = 32, .kv_heads = 8, .ffn = 14336, .seq = 8192, .micro_batch = 2,
                        .gated = true, .fused_qkv = false};
  const double T = 2.0 * 8192, h = 4096, kv = 1024, f = 14336;
  // Q, K, V, O: 2 T h (h + 2 kv) + 2 T h h; SwiGLU: 3 x 2 T h f.
  const double expected = 2 * T * h * (h + 2 * kv) + 2 * T * h * h + 6 * T * h * f;
  const auto ops = compute::layer_ops(s);
  REQUIRE(ops.size() == 8);
  CHECK(ops[0].name == "norm1");
  CHECK(ops[7].name == "mlp.down");
  CHECK(gemm_flops(ops) == doctest::Approx(expected).scale(0));
  s.tp = 8;
  CHECK(gemm_flops(compute::layer_ops(s)) == doctest::Approx(expected / 8).scale(0));
  // The attention core: heads / tp query heads, one K/V head per rank (8 / 8).
  const auto ops_tp8 = compute::layer_ops(s);  // kept alive: `a` refers into it (ASan)
  const auto& a = *ops_tp8[2].shape.attention;
  CHECK(a.heads == 4);
  CHECK(a.kv_heads == 1);
  s.tp = 3;
  CHECK_THROWS_WITH_AS(compute::layer_ops(s),
                       "layer shape: tp 3 does not divide hidden 4096, heads 32, kv heads 8 or ffn 14336; expected a "
                       "tensor-parallel degree dividing hidden, heads, ffn and kv heads",
                       ConfigError);
}

TEST_CASE("layer time is the sum of its ops; backward GEMMs take twice the forward's FLOPs") {
  const auto& h100 = compute::find_device("h100", "t");
  const compute::LayerShape s{.hidden = 8192, .heads = 64, .kv_heads = 64, .ffn = 32768, .seq = 2048, .micro_batch = 4};
  const auto t = compute::layer_time(h100, s);
  double fwd = 0, bwd = 0;
  for (const auto& o : compute::layer_ops(s)) {
    fwd += compute::op_time_s(h100, o.shape, MathType::bf16, false);
    bwd += compute::op_time_s(h100, o.shape, MathType::bf16, true);
  }
  CHECK(t.forward_s == doctest::Approx(fwd).scale(0));
  CHECK(t.backward_s == doctest::Approx(bwd).scale(0));
  // A large layer: GEMMs dominate, so backward / forward is near 2 (attention bwd 2.5x).
  CHECK(t.backward_s / t.forward_s > 1.9);
  CHECK(t.backward_s / t.forward_s < 2.3);
  // The achieved fraction of peak over the whole layer lies below the GEMM ceiling.
  const double T = 4.0 * 2048, h = 8192;
  const double flops = 3 * (24 * T * h * h + 4 * T * 2048 * h);  // 6 x params x T + attention, fwd+bwd
  const double mfu = flops / ((t.forward_s + t.backward_s) * h100.peak(MathType::bf16));
  CHECK(mfu < h100.gemm_eff);
  CHECK(mfu > 0.5 * h100.gemm_eff);
}

TEST_CASE("activation memory: flash attention removes the s^2 term, unfused keeps it (Korthikanti et al. 2022)") {
  const std::uint64_t b = 2, s = 1024;
  auto cfg = zoo::find_model("gpt3-1.3b", "t").transformer;
  REQUIRE(cfg.flash_attention);  // decoders default to flash
  const double h = 2048, a = 24, sd = static_cast<double>(s), bd = static_cast<double>(b);
  // Flash: 34 s b h (the s^2 terms gone) + the fp32 log-sum-exp per row, 4 a s b.
  const auto flash = zoo::transformer_trace("f", cfg, b, s);
  CHECK(static_cast<double>(layer0_saved(flash)) == doctest::Approx(34.0 * sd * bd * h + 4.0 * a * sd * bd).scale(0));
  // Unfused with dropout: 34 s b h + 5 a s^2 b (scores' softmax output, dropout mask, output).
  cfg.flash_attention = false;
  const auto unfused = zoo::transformer_trace("u", cfg, b, s);
  CHECK(static_cast<double>(layer0_saved(unfused)) == doctest::Approx(34.0 * sd * bd * h + 5.0 * a * sd * sd * bd).scale(0));
  // Unfused without dropout: the mask and the dropped copy go (2 a s^2 b), and the two sbh masks.
  cfg.dropout = false;
  const auto nodrop = zoo::transformer_trace("n", cfg, b, s);
  CHECK(static_cast<double>(layer0_saved(nodrop)) == doctest::Approx(32.0 * sd * bd * h + 2.0 * a * sd * sd * bd).scale(0));
  // Doubling s: flash doubles, unfused more than doubles (the s^2 term).
  cfg = zoo::find_model("gpt3-1.3b", "t").transformer;
  CHECK(layer0_saved(zoo::transformer_trace("f2", cfg, b, 2 * s)) == 2 * layer0_saved(flash));
  cfg.flash_attention = false;
  CHECK(layer0_saved(zoo::transformer_trace("u2", cfg, b, 2 * s)) > 2 * layer0_saved(unfused) + 1000);
}

TEST_CASE("the zoo's activation bytes agree with models/parallel's per-layer formula") {
  for (const std::string name : {"gpt3-2.7b", "llama2-7b", "llama3-8b"}) {  // heads divide d_model
    CAPTURE(name);
    const auto& m = zoo::find_model(name, "t");
    const auto spec = [&] {
      parallel::ModelSpec p;
      p.layers = m.transformer.layers;
      p.hidden = m.transformer.d_model;
      p.heads = m.transformer.heads;
      p.kv_heads = m.transformer.kv_heads;
      p.ffn = m.transformer.ffn;
      p.gated_ffn = m.transformer.gated_ffn;
      p.vocab = m.transformer.vocab;
      p.dropout = m.transformer.dropout;
      return p;
    }();
    for (bool flash : {true, false}) {
      auto cfg = m.transformer;
      cfg.flash_attention = flash;
      parallel::ActivationShape a;
      a.seq = 1024;
      a.micro_batch = 2;
      a.flash_attention = flash;
      CHECK(static_cast<double>(layer0_saved(zoo::transformer_trace("x", cfg, 2, 1024))) ==
            doctest::Approx(parallel::layer_activation_bytes(spec, a)).scale(0));
    }
  }
}

TEST_CASE("the step times zoo ops by the per-op model; ops without a shape keep the roofline") {
  const auto& h100 = compute::find_device("h100", "t");
  const auto t = zoo::generate(zoo::find_model("gpt3-1.3b", "t"), 4, 2048);
  const auto w = trace::to_workload(t);
  double fwd = 0, bwd = 0;
  for (const auto& o : w.ops) {
    REQUIRE(o.shape.has_value());
    (o.phase == step::OpPhase::forward ? fwd : bwd) +=
        compute::op_time_s(h100, *o.shape, MathType::bf16, o.phase == step::OpPhase::backward);
  }
  step::StepConfig c;
  c.optimizer = &opt::find_optimizer("adam", "t");
  c.dp = 1;
  step::FunctionComm none([](coll::OpKind, std::uint64_t, const std::vector<int>&) { return 0.0; });
  const auto r = step::simulate_step(w, h100, c, none);
  // Durations round to the picosecond once per op.
  CHECK(r.forward_s == doctest::Approx(fwd).epsilon(1e-9).scale(0));
  CHECK(r.backward_s == doctest::Approx(bwd).epsilon(1e-9).scale(0));
  // Without shapes the same workload is timed by the roofline: a different forward time.
  auto bare = w;
  for (auto& o : bare.ops) o.shape.reset();
  double roof = 0;
  for (const auto& o : bare.ops) {
    if (o.phase == step::OpPhase::forward) roof += h100.op_time_s(o.flops, o.bytes, MathType::bf16);
  }
  const auto r2 = step::simulate_step(bare, h100, c, none);
  CHECK(r2.forward_s == doctest::Approx(roof).epsilon(1e-9).scale(0));
  CHECK(r2.forward_s != doctest::Approx(r.forward_s).epsilon(1e-3).scale(0));
  // Measured durations win over both (--compute measured).
  for (auto& o : bare.ops) o.measured_s = 1e-3;
  c.measured_compute = true;
  const auto r3 = step::simulate_step(bare, h100, c, none);
  CHECK(r3.forward_s == doctest::Approx(1e-3 * static_cast<double>(bare.ops.size() / 2)).scale(0));
}

TEST_CASE("eager reference RMSNorm and repeat_kv: the bytes and kernels of the header's count") {
  // Llama 3 8B shapes, bf16 (e = 2): a fused norm moves 2e / 3e bytes per element, the eager
  // reference (x.float(), pow, mean, x * r, type_as, * weight and their autograd) 28 + 4e = 36
  // forward and 72 + 8e = 88 backward; repeat_kv copies K and V to 32 heads from 8.
  compute::LayerShape s{.hidden = 4096, .heads = 32, .kv_heads = 8, .ffn = 14336, .seq = 8192, .micro_batch = 2,
                        .gated = true, .fused_qkv = false};
  const double T = 2.0 * 8192, h = 4096, kv = 1024;
  const auto fused = compute::layer_ops(s);
  s.eager_norm = true;
  s.repeat_kv = true;
  const auto eager = compute::layer_ops(s);
  REQUIRE(eager.size() == fused.size());
  for (std::size_t i : {std::size_t{0}, std::size_t{4}}) {  // norm1, norm2
    CHECK(fused[i].shape.ew_bytes_fwd == doctest::Approx(4 * T * h).scale(0));
    CHECK(fused[i].shape.ew_bytes_bwd == doctest::Approx(6 * T * h).scale(0));
    CHECK(eager[i].shape.ew_bytes_fwd == doctest::Approx(36 * T * h).scale(0));
    CHECK(eager[i].shape.ew_bytes_bwd == doctest::Approx(88 * T * h).scale(0));
    CHECK(eager[i].shape.ew_kernels_fwd == 8);
    CHECK(eager[i].shape.ew_kernels_bwd == 13);
  }
  // attn.core: the copies add 2 e T (h + kv) each way and 2 kernels; GEMMs and attention unchanged.
  CHECK(eager[2].shape.ew_bytes_fwd - fused[2].shape.ew_bytes_fwd == doctest::Approx(4 * T * (h + kv)).scale(0));
  CHECK(eager[2].shape.ew_bytes_bwd - fused[2].shape.ew_bytes_bwd == doctest::Approx(4 * T * (h + kv)).scale(0));
  CHECK(eager[2].shape.ew_kernels_fwd == fused[2].shape.ew_kernels_fwd + 2);
  CHECK(gemm_flops(eager) == doctest::Approx(gemm_flops(fused)).scale(0));
  // Without GQA (kv heads = heads) there is nothing to copy.
  s.kv_heads = 32;
  s.rotary = true;
  const auto mha = compute::layer_ops(s);
  s.repeat_kv = false;
  CHECK(mha[2].shape.ew_bytes_fwd > 0);
  CHECK(mha[2].shape.ew_bytes_fwd == compute::layer_ops(s)[2].shape.ew_bytes_fwd);
  // The zoo: eager_kernels turns both on, in every layer and the final norm; the step is slower.
  zoo::TransformerConfig c = zoo::find_model("llama3-8b", "t").transformer;
  const auto& h100 = compute::find_device("h100", "t");
  auto layer_s = [&](bool eager_kernels) {
    c.eager_kernels = eager_kernels;
    const auto t = compute::layer_time(h100, zoo::layer_shape(c, 1, 8192));
    return t.forward_s + t.backward_s;
  };
  const double t_fused = layer_s(false), t_eager = layer_s(true);
  // Saved for backward, one layer: each norm keeps its fp32 x and the 16-bit normalised output
  // (4 bytes more per element than a fused norm's input), attention K and V at all 32 heads.
  c.eager_kernels = false;
  const double saved_fused = static_cast<double>(layer0_saved(zoo::transformer_trace("l", c, 1, 8192)));
  c.eager_kernels = true;
  const double saved_eager = static_cast<double>(layer0_saved(zoo::transformer_trace("l", c, 1, 8192)));
  CHECK(saved_eager - saved_fused == doctest::Approx(2 * 4 * 8192.0 * h + 2 * 2 * 8192.0 * (h - kv)).epsilon(1e-12));
  // Extra per layer: (36 - 4) + (88 - 6) bytes per element in each of 2 norms, 4 T (h + kv) each
  // way for the copies, at hbm x mem_eff; 2 x (7 + 11) + 4 more kernel launches.
  const double Tl = 8192;
  const double extra_bytes = 2 * (32 + 82) * Tl * h + 2 * 4 * Tl * (h + kv);
  const double extra_s = extra_bytes / (h100.hbm_Bps * h100.mem_eff) + (2 * (7 + 11) + 4) * h100.launch_s;
  CHECK(t_eager - t_fused == doctest::Approx(extra_s).epsilon(1e-9));
}
