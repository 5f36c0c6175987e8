#pragma once
// Attention core time (softmax(Q K^T / sqrt(d)) V for `heads` query heads and `kv_heads` key /
// value heads), fused (FlashAttention) or unfused.
//
// Fused (Dao et al. 2022, "FlashAttention"; Dao 2023, "FlashAttention-2", arXiv 2307.08691):
//  - FLOPs executed: forward 4 b a s_q s_kv d (the two matmuls), halved when causal (the
//    kernel skips the masked blocks: Dao 2023, sec. 3.1); backward 2.5x forward (five matmuls
//    instead of two: Dao 2023, sec. 4.1).
//  - HBM traffic: forward reads Q, K, V and writes O and the fp32 log-sum-exp per row;
//    backward reads Q, K, V, O, dO and the statistics, writes dQ, dK, dV, and accumulates dQ
//    in fp32 (read + write). The s x s scores never reach HBM.
//  - t = max(flops / (peak x attn_{fwd,bwd}_eff), bytes / (hbm_Bps x mem_eff)) + kernels x
//    launch_s (forward 1 kernel; backward 3: the dO.O preprocessing, the main kernel and the
//    dQ conversion, as FlashAttention-2's backward launches them).
// Unfused (Megatron-LM's path without flash; Korthikanti et al. 2022, sec. 4.1): two batched
// GEMMs per direction through gemm.hpp (Q K^T and P V forward; dV, dP, dQ, dK backward) over
// the full s_q x s_kv square (masking does not skip work), plus the scale-mask-softmax kernel
// (reads the scores, writes the probabilities), and with dropout > 0 a dropout kernel that
// also writes a one-byte mask; backward the softmax and dropout gradients. Every pass over the
// b a s_q s_kv scores is HBM traffic at hbm_Bps x mem_eff.
#include <cstdint>

#include "models/compute/device.hpp"

namespace shardsim::compute {

struct AttentionShape {
  std::uint64_t batch = 0, heads = 0, kv_heads = 0, seq_q = 0, seq_kv = 0, head_dim = 0;
  bool causal = true;
  bool flash = true;
  bool dropout = false;  ///< dropout on the probabilities (unfused: a mask kernel)
  /// Fused, but HazyResearch's 2022 FlashAttention in Triton (flash_attn_triton.py, which
  /// llm-foundry ran as attn_impl: triton) instead of FlashAttention-2: "FlashAttention-2 is
  /// around 1.3-1.5x faster than FlashAttention in Triton in the forward pass and around 2x
  /// faster in the backward pass" (Dao 2023, arXiv 2307.08691, sec. 4.1, A100): the device's
  /// FlashAttention-2 fractions / kTritonFwdSlowdown and / kTritonBwdSlowdown. Measured on A100;
  /// on Hopper both kernels use the Ampere instructions (no TMA / wgmma), so the ratio is kept.
  bool triton = false;
};

/// Fraction of hbm_Bps the unfused attention reaches (its batched GEMMs' memory roofline and
/// the softmax / dropout passes over the s x s scores), forward and backward: fitted to
/// Megatron-LM's attention measured on an A100 40GB (Dao et al. 2022, "FlashAttention", arXiv
/// 2205.14135, Appendix E.5, Tables 18 and 19, the "Megatron" rows: batch 16, 8 heads of 64,
/// s = 512, 1024, 2048, no dropout, no mask, fp16; 0.42 / 1.33 / 4.28 ms forward, 0.80 / 2.59 /
/// 8.86 ms backward) by least squares on the relative error over the three lengths
/// (tests/models/compute/test_gemm_attention.cpp refits and prints the residuals). The only
/// measurement of these kernels found: the NVIDIA GPU presets carry it
/// (Device::unfused_mem_eff_fwd / _bwd).
inline constexpr double kUnfusedMemEffFwd = 0.579;
inline constexpr double kUnfusedMemEffBwd = 0.510;

inline constexpr double kTritonFwdSlowdown = 1.4;  ///< midpoint of 1.3-1.5 (Dao 2023, sec. 4.1)
inline constexpr double kTritonBwdSlowdown = 2.0;  ///< "around 2x" (same)

/// FLOPs the fused kernel executes (causal halved); backward 2.5x forward.
double flash_attention_flops(const AttentionShape& a, bool backward);
/// HBM bytes of the fused kernel, elements of `e` bytes (statistics fp32).
double flash_attention_bytes(const AttentionShape& a, double e, bool backward);
/// Time of the attention core, forward or backward, seconds (launch overhead included).
double attention_time_s(const Device& d, const AttentionShape& a, MathType m, bool backward);
/// The unfused path (a.flash ignored) with its kernels at `mem_eff` of hbm_Bps (0: the device's
/// mem_eff; attention_time_s passes the device's unfused_mem_eff_fwd / _bwd); for the fit of
/// those constants.
double unfused_attention_time_s(const Device& d, const AttentionShape& a, MathType m, bool backward, double mem_eff);

}  // namespace shardsim::compute
