#pragma once
// Calibration of the GEMM model (models/compute/gemm.hpp) from per-kernel durations in a
// PyTorch profiler (Kineto) trace recorded with record_shapes=True.
//
// Samples: every aten::mm / addmm / bmm / baddbmm host op with "Input Dims", and the GPU
// kernels launched inside it (launch -> kernel by args.correlation; launch -> op by the
// innermost op of the same pid/tid whose span contains the launch): shape (M, N, K, batch)
// from the dims, math type from "Input type" (fp32 inputs on a tensor-op kernel, whose name
// has "tensorop_s1688" or "tf32", are tf32), measured time = the sum of its kernels' GPU
// durations.
// Only GEMMs that fill the device are fitted: at least one full wave of the device's first
// (largest) tile, ceil(M / tm) ceil(N / tn) batch >= units; smaller ones (GEMV-like,
// split-K, launch-bound) are outside what the wave model describes and are counted as left
// out. Model (the device's, with its tiles, units and HBM): per sample
//     t = t0 + max(w / eff, m)
// w = the tile- and wave-quantized compute time at eff = 1, m = the memory-roofline time,
// t0 = a fixed time per GEMM (kernel prologue / epilogue, small-problem latency), eff = the
// device's gemm_eff. Fitted by least squares on relative residuals ((t_fit - t) / t, rows
// weighted by 1/t, Eigen ColPivHouseholderQR) in x = 1/eff and t0, iterating the set of
// memory-bound samples (m > w x) until it is stable; an efficiency above 1 (not physical: the
// intercept took the time) is refitted with eff = 1 and t0 alone; an intercept below 0 with
// t0 = 0. The calibrated device: gemm_eff = 1 / x and launch_s = t0 (gemm_time_s adds
// launch_s once per GEMM), so gemm_time_s of the calibrated device is the fitted model; the
// residuals are computed through it.
#include <string>
#include <string_view>
#include <vector>

#include "models/compute/device.hpp"
#include "models/compute/gemm.hpp"

namespace shardsim::calib {

struct GemmSample {
  std::string op;          ///< host op name ("aten::mm")
  compute::GemmShape shape;
  compute::MathType math = compute::MathType::bf16;
  double measured_s = 0;   ///< sum of its kernels' durations
  int kernels = 0;
};

/// GEMM samples of a Kineto trace (text already inflated). Throws ConfigError naming
/// `source` for bad JSON or no traceEvents.
std::vector<GemmSample> gemm_samples_from_kineto(std::string_view text, const std::string& source);

struct ComputeFit {
  std::string device, source;
  int points = 0, memory_bound = 0;
  int left_out = 0;  ///< samples smaller than one full wave
  double gemm_eff = 0;
  double kernel_latency_s = 0;
  double rms_rel_residual = 0, max_abs_rel_residual = 0;
  std::vector<double> residuals;  ///< per sample, (t_fit - t) / t
};

/// True when `g` fills `d`: one full wave of its first tile or more.
bool fills_device(const compute::Device& d, const compute::GemmShape& g);
/// Fits gemm_eff and t0 on `base` (its tiles, units, peaks, HBM) from the samples that fill
/// it. Throws ConfigError ("--compute") with fewer than 2 such samples.
ComputeFit fit_gemm(const compute::Device& base, const std::vector<GemmSample>& samples, const std::string& source);

/// `base` with gemm_eff and launch_s from the fit, its compute_source naming the trace.
compute::Device calibrated_device(const compute::Device& base, const ComputeFit& fit);

}  // namespace shardsim::calib
