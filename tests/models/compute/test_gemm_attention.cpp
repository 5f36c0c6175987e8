// GEMM tile and wave quantization and attention costs, against closed forms
// (models/compute/gemm.hpp, attention.hpp).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>

#include "models/compute/attention.hpp"
#include "models/compute/device.hpp"
#include "models/compute/gemm.hpp"

using namespace shardsim;
using compute::MathType;

namespace {

// A device whose numbers make the closed forms easy: `units` compute units, one tile, peak
// 1e12 FLOP/s sustained fully, HBM so fast that GEMMs are compute bound, no launch overhead.
compute::Device toy(std::uint32_t units, compute::GemmTile tile) {
  compute::Device d;
  d.name = "toy";
  d.peak_flops[MathType::bf16] = 1e12;
  d.peak_flops[MathType::fp32] = 1e11;
  d.hbm_Bps = 1e18;
  d.mem_eff = 1;
  d.launch_s = 0;
  d.compute_units = units;
  d.gemm_tiles = {tile};
  d.gemm_tile_k = 64;
  d.gemm_eff = 1;
  d.attn_fwd_eff = 0.5;
  d.attn_bwd_eff = 0.25;
  return d;
}

}  // namespace

TEST_CASE("GEMM: tile quantization, a partial tile costs a whole tile") {
  const auto d = toy(1, {128, 128});  // one unit: every tile is a wave of its own
  // 128 x 128 x 1024 is one full tile: t = 2 x 128 x 128 x 1024 / 1e12, efficiency 1.
  const compute::GemmShape full{128, 128, 1024, 1};
  CHECK(compute::gemm_time_s(d, full, MathType::bf16) == doctest::Approx(2.0 * 128 * 128 * 1024 / 1e12).scale(0));
  CHECK(compute::gemm_efficiency(d, full, MathType::bf16) == doctest::Approx(1.0).scale(0));
  // M just over the tile: 2 tiles for 129 / 128 of the work -> efficiency 129 / 256.
  const compute::GemmShape over{129, 128, 1024, 1};
  CHECK(compute::gemm_efficiency(d, over, MathType::bf16) == doctest::Approx(129.0 / 256.0).scale(0));
  // K pads to the 64-wide main loop: K = 65 costs K = 128 -> 65 / 128.
  CHECK(compute::gemm_efficiency(d, {128, 128, 65, 1}, MathType::bf16) == doctest::Approx(65.0 / 128.0).scale(0));
}

TEST_CASE("GEMM: wave quantization, tiles just over a multiple of the unit count cost a wave") {
  const auto d = toy(4, {128, 128});
  // 4 tiles on 4 units: one wave, efficiency 1; 5 tiles: two waves for 5/4 of the work -> 5/8.
  CHECK(compute::gemm_efficiency(d, {512, 128, 4096, 1}, MathType::bf16) == doctest::Approx(1.0).scale(0));
  CHECK(compute::gemm_efficiency(d, {640, 128, 4096, 1}, MathType::bf16) == doctest::Approx(5.0 / 8.0).scale(0));
  // Batched: 2 x 2 tiles = one wave; 3 batches of 2 = 6 tiles = 2 waves -> 6/8.
  CHECK(compute::gemm_efficiency(d, {256, 128, 4096, 2}, MathType::bf16) == doctest::Approx(1.0).scale(0));
  CHECK(compute::gemm_efficiency(d, {256, 128, 4096, 3}, MathType::bf16) == doctest::Approx(6.0 / 8.0).scale(0));
}

TEST_CASE("GEMM on the H100 preset: gemm_eff at one full wave, the drop one row later") {
  const auto& h = compute::find_device("h100", "t");
  REQUIRE(h.compute_units == 132);
  // 1536 x 2816 x 8192: 128x256 tiles 12 x 11 = 132 (one wave), 256x128 6 x 22 = 132 (one
  // wave), 128x128 264 (two): one wave of 32768-element tiles -> exactly gemm_eff. Compute
  // bound: 2 x (1536 x 8192 + 8192 x 2816 + 1536 x 2816) bytes / 2.68e12 = 30 us < 89 us.
  CHECK(compute::gemm_efficiency(h, {1536, 2816, 8192, 1}, MathType::bf16) == doctest::Approx(h.gemm_eff).scale(0));
  // M = 1537: 128x256 -> 13 x 11 = 143 tiles, 2 waves x 32768; 256x128 -> 7 x 22 = 154, 2 x
  // 32768; 128x128 -> 13 x 22 = 286, 3 waves x 16384 = 49152 elements per unit, the least.
  const double expected = h.gemm_eff * 1537.0 * 2816.0 / (49152.0 * 132.0);
  CHECK(compute::gemm_efficiency(h, {1537, 2816, 8192, 1}, MathType::bf16) == doctest::Approx(expected).scale(0));
  CHECK(expected < 0.7 * h.gemm_eff);
  // Never above gemm_eff, whatever the shape.
  for (std::uint64_t m : {1000u, 2048u, 4097u, 8192u, 12288u}) {
    CHECK(compute::gemm_efficiency(h, {m, 4096, 4096, 1}, MathType::bf16) <= h.gemm_eff * (1 + 1e-12));
  }
}

TEST_CASE("GEMM: a skinny GEMM is memory bound") {
  auto d = toy(4, {128, 128});
  d.hbm_Bps = 1e9;  // now slow memory
  const compute::GemmShape g{4096, 1, 4096, 1};
  const double bytes = 2.0 * (4096.0 * 4096 + 4096 + 4096);
  CHECK(compute::gemm_time_s(d, g, MathType::bf16) == doctest::Approx(bytes / 1e9).scale(0));
}

TEST_CASE("Flash attention: causal halves the FLOPs, backward is 2.5x forward, time at the kernel's efficiency") {
  const compute::AttentionShape a{2, 16, 16, 4096, 4096, 128, true, true, false};
  const double full = 4.0 * 2 * 16 * 4096.0 * 4096 * 128;
  CHECK(compute::flash_attention_flops(a, false) == doctest::Approx(full / 2).scale(0));
  CHECK(compute::flash_attention_flops(a, true) == doctest::Approx(2.5 * full / 2).scale(0));
  auto nc = a;
  nc.causal = false;
  CHECK(compute::flash_attention_flops(nc, false) == doctest::Approx(full).scale(0));
  const auto d = toy(4, {128, 128});
  CHECK(compute::attention_time_s(d, a, MathType::bf16, false) == doctest::Approx(full / 2 / (1e12 * 0.5)).scale(0));
  CHECK(compute::attention_time_s(d, a, MathType::bf16, true) == doctest::Approx(2.5 * full / 2 / (1e12 * 0.25)).scale(0));
}

TEST_CASE("Flash attention in Triton (llm-foundry's attn_impl: triton): FlashAttention-2's fractions / 1.4 and / 2") {
  // Dao 2023 sec. 4.1: FlashAttention-2 ~1.3-1.5x faster forward, ~2x backward than the Triton
  // kernel. Same FLOPs and bytes; the compute-bound time scales by exactly those factors.
  compute::AttentionShape a{2, 16, 16, 4096, 4096, 128, true, true, false};
  const auto d = toy(4, {128, 128});
  const double fwd = compute::attention_time_s(d, a, MathType::bf16, false);
  const double bwd = compute::attention_time_s(d, a, MathType::bf16, true);
  a.triton = true;
  CHECK(compute::attention_time_s(d, a, MathType::bf16, false) == doctest::Approx(1.4 * fwd).epsilon(1e-12));
  CHECK(compute::attention_time_s(d, a, MathType::bf16, true) == doctest::Approx(2.0 * bwd).epsilon(1e-12));
  // Unfused attention ignores the flag (it runs GEMMs and softmax passes, no fused kernel).
  a.flash = false;
  const double unfused_triton = compute::attention_time_s(d, a, MathType::bf16, false);
  a.triton = false;
  CHECK(compute::attention_time_s(d, a, MathType::bf16, false) == unfused_triton);
}

TEST_CASE("Unfused attention: the s^2 scores are HBM traffic, with dropout a mask pass more") {
  auto d = toy(4, {128, 128});
  d.hbm_Bps = 1e12;
  compute::AttentionShape a{1, 8, 8, 2048, 2048, 64, true, false, false};
  const double scores = 8.0 * 2048 * 2048;
  const double gemms = compute::gemm_time_s(d, {2048, 2048, 64, 8}, MathType::bf16) +
                       compute::gemm_time_s(d, {2048, 64, 2048, 8}, MathType::bf16);
  // Softmax: read scores, write probabilities (2 bytes each); at the toy's full bandwidth.
  CHECK(compute::unfused_attention_time_s(d, a, MathType::bf16, false, 1.0) ==
        doctest::Approx(gemms + 4.0 * scores / 1e12).scale(0));
  a.dropout = true;
  CHECK(compute::unfused_attention_time_s(d, a, MathType::bf16, false, 1.0) ==
        doctest::Approx(gemms + 9.0 * scores / 1e12).scale(0));
  // attention_time_s runs the unfused kernels at the device's unfused bandwidth (mem_eff when
  // unset, as on the toy and the TPUs; the fitted constants on NVIDIA presets).
  CHECK(compute::attention_time_s(d, a, MathType::bf16, false) ==
        compute::unfused_attention_time_s(d, a, MathType::bf16, false, d.mem_eff));
  const auto& a100 = compute::find_device("a100-80gb", "t");
  CHECK(a100.unfused_mem_eff_fwd == compute::kUnfusedMemEffFwd);
  CHECK(compute::attention_time_s(a100, a, MathType::bf16, true) ==
        compute::unfused_attention_time_s(a100, a, MathType::bf16, true, compute::kUnfusedMemEffBwd));
  CHECK(compute::find_device("tpu-v3", "t").unfused_mem_eff_fwd == 0);
  // Doubling s quadruples the score traffic: the s^2 term is there; flash has none of it.
  auto a2 = a;
  a2.seq_q = a2.seq_kv = 4096;
  auto f1 = a, f2 = a2;
  f1.flash = f2.flash = false;
  const double ratio_unfused = compute::attention_time_s(d, a2, MathType::bf16, false) /
                               compute::attention_time_s(d, a, MathType::bf16, false);
  CHECK(ratio_unfused == doctest::Approx(4.0).epsilon(0.01).scale(0));
  f1.flash = f2.flash = true;
  CHECK(compute::flash_attention_bytes(f2, 2, false) == doctest::Approx(2.0 * compute::flash_attention_bytes(f1, 2, false)).scale(0));
}

TEST_CASE("H100 HBM2e at 500 W (torchtitan's Grand Teton part): the SXM die, its memory, the clock a 500 W limit holds") {
  const auto& sxm = compute::find_device("h100", "t");
  const auto& p = compute::find_device("h100-hbm2e-500w", "t");
  // torchtitan docs/performance.md: 96GB HBM2e, 2.4 TB/s; the same die: peaks, SMs, tiles, NCCL channels.
  CHECK(p.hbm_bytes == 96ULL << 30);
  CHECK(p.hbm_Bps == 2.4e12);
  CHECK(p.peak(MathType::bf16) == sxm.peak(MathType::bf16));
  CHECK(p.compute_units == sxm.compute_units);
  CHECK(p.comm_units == sxm.comm_units);
  // P ~ f^3: the sustained rates scale by (500 / 700)^(1/3) = 0.8939.
  const double r = std::cbrt(500.0 / 700.0);
  CHECK(r == doctest::Approx(0.8939).epsilon(1e-4));
  CHECK(p.gemm_eff == doctest::Approx(sxm.gemm_eff * r).epsilon(1e-12));
  CHECK(p.attn_fwd_eff == doctest::Approx(sxm.attn_fwd_eff * r).epsilon(1e-12));
  CHECK(p.attn_bwd_eff == doctest::Approx(sxm.attn_bwd_eff * r).epsilon(1e-12));
  // Inside the bound torchtitan's footnote states: between the NVL (835.5 dense) and SXM peaks.
  CHECK(r > 835.5 / 989.5);
  CHECK(r < 1.0);
  // A full-wave GEMM takes 1 / r as long; a memory-bound pass 3.35 / 2.4 as long.
  const compute::GemmShape g{1536, 2816, 8192, 1};
  CHECK(compute::gemm_time_s(p, g, MathType::bf16) - p.launch_s ==
        doctest::Approx((compute::gemm_time_s(sxm, g, MathType::bf16) - sxm.launch_s) / r).epsilon(1e-9));
  CHECK(p.stream_time_s(0, 1e9) == doctest::Approx(sxm.stream_time_s(0, 1e9) * 3.35 / 2.4).epsilon(1e-12));
}

TEST_CASE("Unfused attention: its achieved bandwidth is the least-squares fit to Megatron's measured attention") {
  // Dao et al. 2022 (FlashAttention), Appendix E.5, Tables 18 (forward) and 19 (backward),
  // "Megatron" rows: A100 40GB, batch 16, 8 heads of dimension 64, fp16, no dropout, no mask.
  const auto& dev = compute::find_device("a100-40gb", "t");
  const std::uint64_t seqs[] = {512, 1024, 2048};
  const double fwd_ms[] = {0.42, 1.33, 4.28}, bwd_ms[] = {0.80, 2.59, 8.86};
  auto sse = [&](bool backward, double eff) {
    double s = 0;
    for (int i = 0; i < 3; ++i) {
      const compute::AttentionShape a{16, 8, 8, seqs[i], seqs[i], 64, true, false, false};
      const double t = compute::unfused_attention_time_s(dev, a, MathType::fp16, backward, eff) * 1e3;
      const double r = t / (backward ? bwd_ms[i] : fwd_ms[i]) - 1;
      s += r * r;
    }
    return s;
  };
  for (bool backward : {false, true}) {
    double best = 0, best_sse = 1e300;
    for (int k = 300; k <= 1000; ++k) {  // 0.300 .. 1.000 in steps of 0.001
      const double e = k / 1000.0, v = sse(backward, e);
      if (v < best_sse) best_sse = v, best = e;
    }
    const double constant = backward ? compute::kUnfusedMemEffBwd : compute::kUnfusedMemEffFwd;
    MESSAGE(fmt::format("unfused attention {}: fitted mem_eff {:.3f}, rms relative residual {:.1f} %", backward ? "backward" : "forward",
                        best, 100 * std::sqrt(best_sse / 3)));
    CHECK(constant == doctest::Approx(best).epsilon(0.002));
    // The fitted constant reproduces every measured length within 25 % (the residuals: shorter
    // sequences run slower than their bytes say, launch-bound kernels).
    for (int i = 0; i < 3; ++i) {
      const compute::AttentionShape a{16, 8, 8, seqs[i], seqs[i], 64, true, false, false};
      const double t = compute::attention_time_s(dev, a, MathType::fp16, backward) * 1e3;
      MESSAGE(fmt::format("  s = {}: predicted {:.2f} ms, measured {:.2f} ms, {:+.1f} %", seqs[i], t,
                          backward ? bwd_ms[i] : fwd_ms[i], 100 * (t / (backward ? bwd_ms[i] : fwd_ms[i]) - 1)));
      CHECK(std::abs(t / (backward ? bwd_ms[i] : fwd_ms[i]) - 1) < 0.25);
    }
  }
}
