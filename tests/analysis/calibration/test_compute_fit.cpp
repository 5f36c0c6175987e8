// calibrate --compute: the GEMM table fitted from Kineto kernel durations
// (analysis/calibration/compute_fit.hpp).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "analysis/calibration/compute_fit.hpp"
#include "sim/error.hpp"
#include "traces/importers/input.hpp"

using namespace shardsim;
using nlohmann::json;

namespace {

// A Kineto trace of aten::mm ops whose kernels take exactly the time `truth` predicts.
std::string synthetic_trace(const compute::Device& truth, const std::vector<compute::GemmShape>& shapes) {
  json ev = json::array();
  double ts = 1000;
  int corr = 1;
  for (const auto& g : shapes) {
    const double dur_us = compute::gemm_time_s(truth, g, compute::MathType::bf16) * 1e6;
    ev.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::mm"}, {"pid", 1}, {"tid", 2}, {"ts", ts}, {"dur", 20.0},
                  {"args", {{"Input Dims", {{g.m, g.k}, {g.k, g.n}}}, {"Input type", {"c10::BFloat16", "c10::BFloat16"}}}}});
    ev.push_back({{"ph", "X"}, {"cat", "cuda_runtime"}, {"name", "cudaLaunchKernel"}, {"pid", 1}, {"tid", 2},
                  {"ts", ts + 5}, {"dur", 4.0}, {"args", {{"correlation", corr}}}});
    ev.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", "sm90_xmma_gemm_bf16bf16"}, {"pid", 0}, {"tid", 7},
                  {"ts", ts + 10}, {"dur", dur_us}, {"args", {{"correlation", corr}, {"device", 0}, {"stream", 7}}}});
    ts += 100000;
    ++corr;
  }
  // An elementwise op in between: not a sample.
  ev.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", "aten::add"}, {"pid", 1}, {"tid", 2}, {"ts", ts}, {"dur", 5.0}});
  return json{{"traceEvents", ev}}.dump();
}

}  // namespace

TEST_CASE("calibrate --compute recovers the efficiency and per-GEMM latency a trace was made with") {
  compute::Device truth = compute::find_device("h100", "t");
  truth.gemm_eff = 0.6;
  truth.launch_s = 3e-6;
  const std::vector<compute::GemmShape> shapes{{8192, 8192, 8192, 1}, {4096, 4096, 4096, 1}, {2048, 8192, 1024, 1},
                                               {16384, 4096, 14336, 1}, {512, 512, 512, 1},  {1537, 2816, 8192, 1},
                                               {65536, 1, 8192, 1}};  // the last one memory bound
  const auto samples = calib::gemm_samples_from_kineto(synthetic_trace(truth, shapes), "synthetic");
  REQUIRE(samples.size() == shapes.size());
  CHECK(samples[5].shape.m == 1537);
  CHECK(samples[5].shape.n == 2816);
  CHECK(samples[5].shape.k == 8192);
  CHECK(samples[0].math == compute::MathType::bf16);
  const auto fit = calib::fit_gemm(compute::find_device("h100", "t"), samples, "synthetic");
  CHECK(fit.gemm_eff == doctest::Approx(0.6).epsilon(1e-6).scale(0));
  CHECK(fit.kernel_latency_s == doctest::Approx(3e-6).epsilon(1e-4).scale(0));
  CHECK(fit.memory_bound == 1);
  CHECK(fit.left_out == 1);  // 512^3: 8 tiles of 256x128, less than one wave of 132
  CHECK(fit.max_abs_rel_residual < 1e-6);
}

TEST_CASE("calibrate --compute on a real A100 trace: the calibrated device reproduces its GEMMs within the stated residual") {
  const std::string path = SHARDSIM_FIXTURES_DIR "/kineto/sampled_rank-0.json.gz";
  const auto samples = calib::gemm_samples_from_kineto(importers::read_input(path), path);
  REQUIRE(samples.size() >= 10);
  const auto& a100 = compute::find_device("a100-80gb", "t");
  const auto fit = calib::fit_gemm(a100, samples, path);
  const auto cal = calib::calibrated_device(a100, fit);
  double sq_cal = 0, sq_preset = 0, max_cal = 0;
  for (const auto& s : samples) {
    if (!calib::fills_device(a100, s.shape)) continue;
    const double rc = (compute::gemm_time_s(cal, s.shape, s.math) - s.measured_s) / s.measured_s;
    const double rp = (compute::gemm_time_s(a100, s.shape, s.math) - s.measured_s) / s.measured_s;
    sq_cal += rc * rc;
    sq_preset += rp * rp;
    max_cal = std::max(max_cal, std::abs(rc));
    CHECK(std::abs(rc) <= fit.max_abs_rel_residual + 1e-12);
  }
  const double n = static_cast<double>(fit.points);
  CHECK(fit.points + fit.left_out == static_cast<int>(samples.size()));
  CHECK(std::sqrt(sq_cal / n) == doctest::Approx(fit.rms_rel_residual).scale(0));
  CHECK(max_cal == doctest::Approx(fit.max_abs_rel_residual).scale(0));
  // The fit beats the preset on the trace it was fitted to (least squares on these residuals).
  CHECK(std::sqrt(sq_cal / n) < std::sqrt(sq_preset / n));
  CHECK(fit.points >= 10);
  MESSAGE(fmt::format("{} GEMMs: gemm_eff {:.3f}, latency {:.2f} us, rms {:.1f} %, max {:.1f} % (preset rms {:.1f} %)",
                      fit.points, fit.gemm_eff, fit.kernel_latency_s * 1e6, 100 * fit.rms_rel_residual,
                      100 * fit.max_abs_rel_residual, 100 * std::sqrt(sq_preset / n)));
}

TEST_CASE("calibrate --compute: too few GEMMs is a clear error") {
  CHECK_THROWS_WITH_AS(calib::fit_gemm(compute::find_device("h100", "t"), {}, "x.json"),
                       "--compute: x.json: 0 GEMM samples that fill the device (0 in all); expected at least 2 "
                       "aten::mm/addmm/bmm ops with Input Dims and their kernels (record_shapes=True), each at least one "
                       "full wave of tiles",
                       ConfigError);
  CHECK_THROWS_WITH_AS(calib::gemm_samples_from_kineto("{\"a\": 1}", "t.json"),
                       "t.json: no traceEvents array; expected a Kineto trace (PyTorch profiler export)", ConfigError);
}
