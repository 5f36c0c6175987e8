#include "analysis/calibration/compute_fit.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/error.hpp"

namespace shardsim::calib {

namespace {

using nlohmann::json;

struct HostOp {
  std::int64_t pid = 0, tid = 0;
  double ts = 0, end = 0;
  std::size_t sample = 0;  ///< index into the samples, or npos
};

std::int64_t id_of(const json& v) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number_unsigned()) return static_cast<std::int64_t>(v.get<std::uint64_t>());
  if (v.is_string()) {
    try {
      return std::stoll(v.get<std::string>());
    } catch (const std::exception&) {
      return -1;
    }
  }
  return -1;
}

std::vector<std::uint64_t> dims(const json& d) {
  std::vector<std::uint64_t> v;
  if (!d.is_array()) return v;
  for (const auto& x : d) {
    if (!x.is_number_integer() || x.get<std::int64_t>() <= 0) return {};
    v.push_back(static_cast<std::uint64_t>(x.get<std::int64_t>()));
  }
  return v;
}

// Shape of a matmul host op from its "Input Dims"; nullopt when they do not describe one.
std::optional<compute::GemmShape> shape_of(const std::string& name, const json& in) {
  if (!in.is_array()) return std::nullopt;
  const std::size_t first = (name == "aten::addmm" || name == "aten::baddbmm") ? 1 : 0;
  if (in.size() < first + 2) return std::nullopt;
  const auto a = dims(in[first]), b = dims(in[first + 1]);
  if (name == "aten::mm" || name == "aten::addmm") {
    if (a.size() != 2 || b.size() != 2 || a[1] != b[0]) return std::nullopt;
    return compute::GemmShape{a[0], b[1], a[1], 1};
  }
  if (a.size() != 3 || b.size() != 3 || a[0] != b[0] || a[2] != b[1]) return std::nullopt;
  return compute::GemmShape{a[1], b[2], a[2], a[0]};
}

std::optional<compute::MathType> math_of(const json& types) {
  if (!types.is_array() || types.empty() || !types.back().is_string()) return std::nullopt;
  const std::string t = types.back().get<std::string>();
  if (t == "float" || t == "Float") return compute::MathType::fp32;
  if (t == "c10::BFloat16" || t == "BFloat16") return compute::MathType::bf16;
  if (t == "c10::Half" || t == "Half") return compute::MathType::fp16;
  return std::nullopt;
}

}  // namespace

std::vector<GemmSample> gemm_samples_from_kineto(std::string_view text, const std::string& source) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw ConfigError(source, fmt::format("not JSON (byte {})", e.byte), "a Kineto trace");
  }
  if (!j.is_object() || !j.contains("traceEvents") || !j.at("traceEvents").is_array()) {
    throw ConfigError(source, "no traceEvents array", "a Kineto trace (PyTorch profiler export)");
  }
  const auto& ev = j.at("traceEvents");
  std::vector<GemmSample> samples;
  std::vector<HostOp> ops;
  std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> launch_thread;  // correlation -> pid, tid
  std::map<std::int64_t, double> launch_ts;
  std::vector<std::tuple<std::int64_t, double, std::string>> kernels;  // correlation, dur_s, name
  for (const auto& e : ev) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    const json args = e.value("args", json::object());
    if (cat == "cpu_op") {
      const std::string name = e.value("name", "");
      if (name != "aten::mm" && name != "aten::addmm" && name != "aten::bmm" && name != "aten::baddbmm") continue;
      const auto shape = args.contains("Input Dims") ? shape_of(name, args.at("Input Dims")) : std::nullopt;
      const auto math = args.contains("Input type") ? math_of(args.at("Input type")) : std::nullopt;
      if (!shape || !math) continue;
      HostOp h{id_of(e.value("pid", json())), id_of(e.value("tid", json())), e.value("ts", 0.0), 0, samples.size()};
      h.end = h.ts + e.value("dur", 0.0);
      ops.push_back(h);
      samples.push_back({name, *shape, *math, 0, 0});
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      if (!args.contains("correlation")) continue;
      const std::int64_t c = id_of(args.at("correlation"));
      launch_thread[c] = {id_of(e.value("pid", json())), id_of(e.value("tid", json()))};
      launch_ts[c] = e.value("ts", 0.0);
    } else if (cat == "kernel") {
      if (!args.contains("correlation")) continue;
      kernels.emplace_back(id_of(args.at("correlation")), e.value("dur", 0.0) * 1e-6, e.value("name", ""));
    }
  }
  for (const auto& [c, dur, name] : kernels) {
    const auto lt = launch_thread.find(c);
    if (lt == launch_thread.end()) continue;
    const double ts = launch_ts.at(c);
    const HostOp* best = nullptr;
    for (const auto& h : ops) {
      if (h.pid != lt->second.first || h.tid != lt->second.second || ts < h.ts || ts > h.end) continue;
      if (!best || h.end - h.ts < best->end - best->ts) best = &h;
    }
    if (!best) continue;
    auto& s = samples[best->sample];
    s.measured_s += dur;
    s.kernels += 1;
    if (s.math == compute::MathType::fp32 &&
        (name.find("tensorop_s1688") != std::string::npos || name.find("tf32") != std::string::npos)) {
      s.math = compute::MathType::tf32;
    }
  }
  std::vector<GemmSample> out;
  for (auto& s : samples) {
    if (s.kernels > 0 && s.measured_s > 0) out.push_back(std::move(s));
  }
  return out;
}

namespace {

// Compute time at eff = 1 (w) and memory time (m) of a sample on `d`, as gemm_time_s has them.
std::pair<double, double> parts(compute::Device d, const GemmSample& s) {
  d.gemm_eff = 1.0;
  d.launch_s = 0;
  const double mem_bytes = compute::element_bytes(s.math) *
                           static_cast<double>(s.shape.m * s.shape.k + s.shape.k * s.shape.n + s.shape.m * s.shape.n) *
                           static_cast<double>(s.shape.batch);
  const double m = mem_bytes / (d.hbm_Bps * d.mem_eff);
  d.hbm_Bps = 1e30;  // compute part alone
  const double w = compute::gemm_time_s(d, s.shape, s.math);
  return {w, m};
}

}  // namespace

bool fills_device(const compute::Device& d, const compute::GemmShape& g) {
  if (d.gemm_tiles.empty() || d.compute_units == 0) return true;
  const auto& t = d.gemm_tiles.front();
  return (g.m + t.m - 1) / t.m * ((g.n + t.n - 1) / t.n) * g.batch >= d.compute_units;
}

ComputeFit fit_gemm(const compute::Device& base, const std::vector<GemmSample>& all, const std::string& source) {
  std::vector<GemmSample> samples;
  for (const auto& s : all) {
    if (fills_device(base, s.shape)) samples.push_back(s);
  }
  if (samples.size() < 2) {
    throw ConfigError("--compute", fmt::format("{}: {} GEMM samples that fill the device ({} in all)", source,
                                               samples.size(), all.size()),
                      "at least 2 aten::mm/addmm/bmm ops with Input Dims and their kernels (record_shapes=True), each "
                      "at least one full wave of tiles");
  }
  const auto n = static_cast<Eigen::Index>(samples.size());
  std::vector<double> w(samples.size()), m(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) std::tie(w[i], m[i]) = parts(base, samples[i]);
  double x = 1.0 / base.gemm_eff, t0 = 0;
  std::vector<bool> membound(samples.size(), false);
  for (int iter = 0; iter < 20; ++iter) {
    auto solve = [&](bool with_t0) {
      Eigen::MatrixXd a(n, with_t0 ? 2 : 1);
      Eigen::VectorXd b(n);
      for (Eigen::Index i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        const double t = samples[k].measured_s;
        // Rows divided by t: relative residuals.
        int col = 0;
        if (with_t0) a(i, col++) = 1.0 / t;
        a(i, col) = membound[k] ? 0.0 : w[k] / t;
        b(i) = (membound[k] ? t - m[k] : t) / t;
      }
      Eigen::VectorXd sol = a.colPivHouseholderQr().solve(b);
      return sol;
    };
    Eigen::VectorXd sol = solve(true);
    double nt0 = sol(0), nx = sol(1);
    if (nt0 < 0) {
      sol = solve(false);
      nt0 = 0;
      nx = sol(0);
    }
    if (!(nx > 0) || !std::isfinite(nx)) nx = x;  // every sample memory bound: keep the device's
    if (nx < 1.0) {
      // Above the peak is not physical (the intercept took the time): eff = 1, t0 refitted.
      nx = 1.0;
      double num = 0, den = 0;
      for (std::size_t i = 0; i < samples.size(); ++i) {
        const double t = samples[i].measured_s, rest = t - std::max(w[i], m[i]);
        num += rest / (t * t);
        den += 1.0 / (t * t);
      }
      nt0 = std::max(0.0, num / den);
    }
    bool changed = false;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const bool mb = m[i] > w[i] * nx;
      changed = changed || mb != membound[i];
      membound[i] = mb;
    }
    x = nx;
    t0 = nt0;
    if (!changed) break;
  }
  ComputeFit f;
  f.device = base.name;
  f.source = source;
  f.points = static_cast<int>(samples.size());
  f.left_out = static_cast<int>(all.size() - samples.size());
  f.gemm_eff = 1.0 / x;
  f.kernel_latency_s = t0;
  const compute::Device cal = calibrated_device(base, f);
  double sq = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const double t = samples[i].measured_s;
    const double r = (compute::gemm_time_s(cal, samples[i].shape, samples[i].math) - t) / t;
    f.residuals.push_back(r);
    sq += r * r;
    f.max_abs_rel_residual = std::max(f.max_abs_rel_residual, std::abs(r));
    f.memory_bound += membound[i] ? 1 : 0;
  }
  f.rms_rel_residual = std::sqrt(sq / static_cast<double>(samples.size()));
  return f;
}

compute::Device calibrated_device(const compute::Device& base, const ComputeFit& fit) {
  compute::Device d = base;
  d.gemm_eff = fit.gemm_eff;
  d.launch_s = fit.kernel_latency_s;
  d.compute_source = fmt::format("calibrated from {} ({} GEMMs, rms residual {:.1f} %)", fit.source, fit.points,
                                 100 * fit.rms_rel_residual);
  return d;
}

}  // namespace shardsim::calib
