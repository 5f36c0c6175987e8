#pragma once
// GEMM time from its shape (NVIDIA "Matrix Multiplication Background User's Guide", Deep
// Learning Performance docs): C[m x n] = A[m x k] B[k x n], `batch` independent products.
//  - Tile quantization: C is cut into tiles of tile.m x tile.n; a partial tile at the edge costs
//    a whole tile. K is padded to the main loop's step: gemm_tile_k for 16-bit elements, scaled
//    to the same bytes for other widths (32 for tf32 / fp32, 128 for 8-bit).
//  - Wave quantization: the tiles run in waves of compute_units tiles (one tile per SM / CU /
//    MXU at a time); a partial last wave costs a whole wave.
//  So with tiles = ceil(m / tm) ceil(n / tn) batch and waves = ceil(tiles / units):
//    t_math = waves x 2 tm tn k_pad / (peak[math] / units x gemm_eff)
//    t_mem  = e (m k + k n + m n) batch / (hbm_Bps x mem_eff)    (e bytes per element)
//    t      = max(t_math, t_mem) + launch_s,
//  minimised over the device's tiles (the library picks the fastest kernel). A device without
//  compute_units or tiles falls back to the roofline with gemm_eff. Units: seconds.
#include <cstdint>

#include "models/compute/device.hpp"

namespace shardsim::compute {

struct GemmShape {
  std::uint64_t m = 0, n = 0, k = 0, batch = 1;
};

/// Bytes per element of `m` (fp32/tf32 4, bf16/fp16 2, fp8/int8 1).
double element_bytes(MathType m);

/// Time of one GEMM on one given tile (no launch overhead). Zero for an empty shape. `mem_eff`:
/// the fraction of hbm_Bps its memory roofline uses (0: the device's mem_eff).
double gemm_time_on_tile_s(const Device& d, const GemmShape& g, MathType m, GemmTile tile, double mem_eff = 0);
/// Time of one GEMM, the fastest of the device's tiles, plus launch_s (`mem_eff` as above).
double gemm_time_s(const Device& d, const GemmShape& g, MathType m, double mem_eff = 0);
/// Achieved fraction of peak: 2 m n k batch / (t x peak[m]) with t = gemm_time_s - launch_s.
double gemm_efficiency(const Device& d, const GemmShape& g, MathType m);

}  // namespace shardsim::compute
