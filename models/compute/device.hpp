#pragma once
// Device compute model (DESIGN 5): presets of accelerator chips with cited peak FLOPs per
// dtype, HBM bandwidth and capacity, and default efficiencies; op time by roofline:
//   t = max(flops / (peak[dtype] x flops_eff), bytes / (hbm_Bps x mem_eff)) + launch_s.
// Peaks are dense (no 2:4 sparsity). Units: FLOP/s, bytes, bytes/s, seconds.
// The per-op model (gemm.hpp, attention.hpp, op_cost.hpp) uses the shape-aware fields below
// (compute units, GEMM tiles, gemm_eff, attention efficiencies); op_time_s stays the roofline
// of ops that carry no shape (imported traces).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/registry.hpp"

namespace shardsim::compute {

/// Arithmetic precision of an op's math (what the roofline picks the peak for).
enum class MathType : std::uint8_t { fp32, tf32, bf16, fp16, fp8, int8 };
const char* to_string(MathType m);

/// An output tile of a GEMM kernel (rows x columns of C one compute unit produces per pass).
struct GemmTile {
  std::uint32_t m = 0, n = 0;
};

struct Device {
  std::string name;         ///< "h100", "tpu-v3", ...
  std::string description;
  std::map<MathType, double> peak_flops;  ///< dense peak per math type, FLOP/s
  std::uint64_t hbm_bytes = 0;
  double hbm_Bps = 0;
  double flops_eff = 0.6;   ///< achievable fraction of peak for large matmuls
  double mem_eff = 0.8;     ///< achievable fraction of HBM bandwidth
  double launch_s = 0;      ///< per-op launch / dispatch overhead
  std::string source;       ///< datasheet or paper for the numbers above

  // Per-op model (models/compute/op_cost.hpp). A GEMM runs in waves of output tiles, one
  // tile per compute unit at a time (NVIDIA "Matrix Multiplication Background User's Guide",
  // sections "Tile quantization" and "Wave quantization").
  std::uint32_t compute_units = 0;    ///< SMs (NVIDIA), CUs (AMD), MXUs (TPU)
  std::vector<GemmTile> gemm_tiles;   ///< tiles the GEMM library chooses from (fastest wins)
  std::uint32_t gemm_tile_k = 64;     ///< K step of the main loop (K is padded to it)
  double gemm_eff = 0.7;              ///< fraction of peak a full wave of tiles sustains
  double attn_fwd_eff = 0.5;          ///< fused (flash) attention forward, fraction of peak
  double attn_bwd_eff = 0.4;          ///< fused attention backward, fraction of peak
  /// Fraction of hbm_Bps the unfused attention's kernels reach, forward / backward (0: mem_eff).
  /// NVIDIA GPU presets: compute::kUnfusedMemEff{Fwd,Bwd} (attention.hpp, fitted to Megatron's
  /// attention measured on A100); TPUs (XLA fuses the softmax) and MI300X keep mem_eff.
  double unfused_mem_eff_fwd = 0, unfused_mem_eff_bwd = 0;
  std::string compute_source;         ///< where units, tiles and the efficiencies come from
  /// Compute units a running collective occupies: NCCL launches one CTA per channel, each on
  /// an SM of its own for the collective's whole duration (NCCL environment variables docs:
  /// NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS, NCCL_MAX_CTAS). 0: communication takes no
  /// compute units (TPU ICI DMA engines; devices without a cited channel count).
  std::uint32_t comm_units = 0;
  std::string comm_units_source;      ///< where comm_units comes from
  /// The GEMM library launches persistent kernels, one CTA per compute unit (cuBLAS on Hopper:
  /// pytorch/pytorch#143988, "matmuls take 2x as long ... when they are overlapped with a NCCL
  /// kernel", their 132 CTAs on an H100; PyTorch's sm_carveout, PR #144974, "wave quantization
  /// can double the latency of the matmul kernels"; TransformerEngine's NVTE_EXT_MARGIN_SM "when
  /// DP is overlapped with GEMMs"). While a collective holds comm_units SMs, such a GEMM's
  /// CTAs run in ceil(units / (units - comm_units)) waves instead of one (the executor's rule:
  /// models/step/executor.hpp, CommContention::rate_units).
  bool persistent_gemm = false;
  /// Compute units one point-to-point transfer (NCCL send/recv: pipeline stages) occupies on
  /// each end: one CTA per channel, 2 channels per network peer (NCCL src/graph/paths.cc,
  /// ncclTopoGetNchannels: nNetChannels = 2, 2.28). 0: transfers take none.
  std::uint32_t p2p_comm_units = 0;

  /// Slowdown of a kernel that runs while a collective does: units / (units - comm_units),
  /// the tile waves of a GEMM spread over fewer SMs (gemm.hpp's wave model); 1 when
  /// comm_units is 0 or not below compute_units.
  [[nodiscard]] double comm_slowdown() const;

  /// Peak for `m`; falls back to bf16 then fp32 when the chip has no such unit. Throws
  /// std::out_of_range if neither exists (never for presets).
  [[nodiscard]] double peak(MathType m) const;
  /// Roofline time of one op, seconds.
  [[nodiscard]] double op_time_s(double flops, double bytes, MathType m) const;
  /// Time of a memory-bound elementwise pass moving `bytes` and doing `flops` in fp32
  /// (optimizer update), without launch overhead.
  [[nodiscard]] double stream_time_s(double flops, double bytes) const;
};

/// All presets, in a fixed order (TPUs by generation, then GPUs).
const std::vector<Device>& device_presets();
/// Preset `name`, or the device a "*.json" file describes (device_json.hpp); ConfigError naming `where`.
const Device& find_device(const std::string& name, const std::string& where);
/// The presets as a registry (sim/registry.hpp): entry i describes device_presets()[i].
const Registry& device_registry();

/// The preset for a topology's device_model (topologies/presets/*.json): the preset of that
/// name, or for a family name that is not one ("a100") the part its systems carry. The one
/// resolution every command uses for a topology's own device (step, compare, plan).
/// Throws ConfigError naming `where` when the model names no preset.
const Device& device_for_model(const std::string& device_model, const std::string& where);

}  // namespace shardsim::compute
