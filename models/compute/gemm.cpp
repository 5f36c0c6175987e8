#include "models/compute/gemm.hpp"

#include <algorithm>
#include <limits>

namespace shardsim::compute {

namespace {
double d(std::uint64_t v) { return static_cast<double>(v); }
std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return b == 0 ? a : (a + b - 1) / b; }
}  // namespace

double element_bytes(MathType m) {
  switch (m) {
    case MathType::fp32:
    case MathType::tf32: return 4;
    case MathType::bf16:
    case MathType::fp16: return 2;
    case MathType::fp8:
    case MathType::int8: return 1;
  }
  return 2;
}

double gemm_time_on_tile_s(const Device& dev, const GemmShape& g, MathType m, GemmTile tile, double mem_eff) {
  if (g.m == 0 || g.n == 0 || g.k == 0 || g.batch == 0) return 0.0;
  const double peak = dev.peak(m);
  const double bytes = element_bytes(m) * d(g.m * g.k + g.k * g.n + g.m * g.n) * d(g.batch);
  const double t_mem = bytes / (dev.hbm_Bps * (mem_eff > 0 ? mem_eff : dev.mem_eff));
  if (dev.compute_units == 0 || tile.m == 0 || tile.n == 0) {
    return std::max(2.0 * d(g.m) * d(g.n) * d(g.k) * d(g.batch) / (peak * dev.gemm_eff), t_mem);
  }
  const std::uint64_t tiles = ceil_div(g.m, tile.m) * ceil_div(g.n, tile.n) * g.batch;
  const std::uint64_t waves = ceil_div(tiles, dev.compute_units);
  // The K step holds gemm_tile_k 16-bit elements (128 bytes): 32 for 4-byte tf32 / fp32 (CUTLASS
  // "s1688gemm_128x128_32x3" kernels), 64 for bf16 / fp16, 128 for 8-bit.
  const auto tile_k = static_cast<std::uint64_t>(std::max(1.0, dev.gemm_tile_k * 2.0 / element_bytes(m)));
  const std::uint64_t k_pad = ceil_div(g.k, tile_k) * tile_k;
  const double per_unit = peak / d(dev.compute_units) * dev.gemm_eff;
  const double t_math = d(waves) * 2.0 * d(tile.m) * d(tile.n) * d(k_pad) / per_unit;
  return std::max(t_math, t_mem);
}

double gemm_time_s(const Device& dev, const GemmShape& g, MathType m, double mem_eff) {
  if (g.m == 0 || g.n == 0 || g.k == 0 || g.batch == 0) return 0.0;
  double best = std::numeric_limits<double>::infinity();
  if (dev.gemm_tiles.empty()) best = gemm_time_on_tile_s(dev, g, m, GemmTile{}, mem_eff);
  for (const auto& t : dev.gemm_tiles) best = std::min(best, gemm_time_on_tile_s(dev, g, m, t, mem_eff));
  return best + dev.launch_s;
}

double gemm_efficiency(const Device& dev, const GemmShape& g, MathType m) {
  const double t = gemm_time_s(dev, g, m) - dev.launch_s;
  if (t <= 0) return 0.0;
  return 2.0 * d(g.m) * d(g.n) * d(g.k) * d(g.batch) / (t * dev.peak(m));
}

}  // namespace shardsim::compute
