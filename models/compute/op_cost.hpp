#pragma once
// The per-op compute model: an op of a training step as the kernels an accelerator runs for
// it. An OpShape lists the op's GEMMs (gemm.hpp), its attention core (attention.hpp) and its
// memory-bound elementwise kernels (norms, activations, residual adds, dropout, casts) with
// the HBM bytes they move and how many kernels they launch, forward and backward, as eager
// PyTorch runs them with the fusions it does by default (bias add in the GEMM epilogue,
// flash attention, one kernel per norm; docs/training-step.md "Compute" lists them).
//
// Time of one op (seconds):
//   forward:  sum_g gemm(m, n, k) + attention_fwd + ew_bytes_fwd / (hbm_Bps x mem_eff)
//             + ew_kernels_fwd x launch_s
//   backward: sum_g [gemm(m, k, n) (input gradient) + gemm(k, n, m) (weight gradient)]
//             + attention_bwd + ew_bytes_bwd / (hbm_Bps x mem_eff) + ew_kernels_bwd x launch_s
// Elementwise kernels do well under one FLOP per byte, far below any device's ridge point
// (H100: 989.5e12 / 3.35e12 = 295 FLOP/byte), so they are timed by their bytes alone.
// Backward GEMMs: for Y = X W (X m x k, W k x n), dX = dY W^T is m x k over n and dW = X^T dY
// is k x n over m (2 x the forward FLOPs, the zoo's convention).
#include <cstdint>
#include <optional>
#include <vector>

#include "models/compute/attention.hpp"
#include "models/compute/device.hpp"
#include "models/compute/gemm.hpp"

namespace shardsim::compute {

struct OpShape {
  std::vector<GemmShape> gemms;              ///< forward GEMMs of the op (weights: k x n)
  std::optional<AttentionShape> attention;   ///< the attention core
  double ew_bytes_fwd = 0, ew_bytes_bwd = 0;  ///< HBM bytes of the elementwise kernels
  std::uint32_t ew_kernels_fwd = 0, ew_kernels_bwd = 0;
};

/// Time of `op` forward (backward = false) or backward on `d` in math type `m`, and the part of
/// it spent in the op's GEMMs (backward: the input- and weight-gradient GEMMs of each, launch
/// overhead included), which Hopper's persistent GEMMs make slower beside communication.
struct OpTime {
  double total_s = 0, gemm_s = 0;
};
OpTime op_time_parts(const Device& d, const OpShape& op, MathType m, bool backward);
/// op_time_parts(...).total_s.
double op_time_s(const Device& d, const OpShape& op, MathType m, bool backward);

}  // namespace shardsim::compute
