// shardsim calibrate RECORDS... --out profile.json: alpha/beta per link class from
// point-to-point records only (analysis/calibration/profile.hpp), with residuals and provenance.
// shardsim calibrate --compute TRACE --device D [--out table.json]: the device's GEMM
// efficiency and per-GEMM latency from a Kineto trace's kernel durations
// (analysis/calibration/compute_fit.hpp), with residuals.
#include <fmt/format.h>

#include <fstream>

#include "analysis/calibration/compute_fit.hpp"
#include "analysis/calibration/profile.hpp"
#include "analysis/cli/command.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"
#include "traces/importers/input.hpp"
#include "traces/logs/parse.hpp"

namespace shardsim::cli {
namespace {

struct CalibrateOptions {
  std::vector<std::string> files;
  std::string out, min_bytes = "0", max_bytes;
  std::string compute_trace, device;
};

void run_calibrate_compute(const CalibrateOptions& o) {
  if (o.device.empty()) throw ConfigError("--device", "missing", "the device whose table to fit (shardsim list devices)");
  if (!o.files.empty()) throw ConfigError("--compute", "with records", "either --compute TRACE or records, not both");
  const auto& base = compute::find_device(o.device, "--device");
  const auto samples = calib::gemm_samples_from_kineto(importers::read_input(o.compute_trace), o.compute_trace);
  const auto fit = calib::fit_gemm(base, samples, o.compute_trace);
  fmt::print("# {} GEMMs of {} on {} ({} memory bound; {} smaller than one wave left out)\n", fit.points,
             o.compute_trace, base.name, fit.memory_bound, fit.left_out);
  fmt::print("  gemm_eff {:.4f} (preset {:.4f}), per-GEMM latency {:.2f} us (preset launch {:.2f} us)\n", fit.gemm_eff,
             base.gemm_eff, fit.kernel_latency_s * 1e6, base.launch_s * 1e6);
  fmt::print("  residuals: rms {:.2f} %, max {:.2f} %\n", 100 * fit.rms_rel_residual, 100 * fit.max_abs_rel_residual);
  if (o.out.empty()) return;
  nlohmann::json j = {{"device", base.name},
                      {"source", o.compute_trace},
                      {"points", fit.points},
                      {"memory_bound_points", fit.memory_bound},
                      {"left_out_points", fit.left_out},
                      {"gemm_eff", fit.gemm_eff},
                      {"gemm_latency_s", fit.kernel_latency_s},
                      {"rms_rel_residual", fit.rms_rel_residual},
                      {"max_abs_rel_residual", fit.max_abs_rel_residual},
                      {"created", logs::utc_now_iso8601()}};
  std::ofstream out(o.out, std::ios::trunc);
  if (!out) throw ConfigError("--out", o.out, "a writable path");
  out << j.dump(2) << '\n';
  fmt::print("wrote {}\n", o.out);
}

void run_calibrate(const CalibrateOptions& o) {
  if (!o.compute_trace.empty()) return run_calibrate_compute(o);
  if (o.files.empty()) throw ConfigError("calibrate", "no records", "records to fit, or --compute TRACE");
  if (o.out.empty()) throw ConfigError("--out", "missing", "the profile JSON to write");
  std::vector<logs::BenchRecord> recs;
  for (const auto& f : o.files) {
    auto r = logs::parse_log_file(f);
    recs.insert(recs.end(), r.begin(), r.end());
  }
  calib::FitOptions fo;
  fo.files = o.files;
  fo.min_bytes = o.min_bytes == "0" ? 0 : units::parse_bytes(o.min_bytes, "--min-bytes");
  if (!o.max_bytes.empty()) fo.max_bytes = units::parse_bytes(o.max_bytes, "--max-bytes");
  const auto prof = calib::fit_profile(recs, fo);
  auto j = calib::to_json(prof);
  j["provenance"]["created"] = logs::utc_now_iso8601();
  std::ofstream out(o.out, std::ios::trunc);
  if (!out) throw ConfigError("--out", o.out, "a writable path");
  out << j.dump(2) << '\n';
  fmt::print("# {:<10} {:<9} {:>6} {:>18} {:>11} {:>15} {:>10} {:>10} {:>9}\n", "class", "kind", "points", "alpha_us",
             "efficiency", "bandwidth", "rms_resid", "max_resid", "residuals");
  for (const auto& c : prof.classes) {
    for (const auto& [kind, f] : c.fits) {
      fmt::print("  {:<10} {:<9} {:>6} {:>18} {:>11} {:>15} {:>9.2f}% {:>9.2f}% {:>9}\n", topo::to_string(c.cls), kind,
                 f.points, fmt::format("{:.2f}{}", f.alpha_s * 1e6, f.alpha_fixed ? " (fixed)" : ""),
                 f.efficiency ? fmt::format("{:.4f}", *f.efficiency) : "-",
                 f.bandwidth_Bps ? units::format_rate(*f.bandwidth_Bps) : "-", 100 * f.rms_rel_residual,
                 100 * f.max_abs_rel_residual, f.weighting);
    }
    fmt::print("  {:<10} profile: alpha {:.2f} us (pingpong), {} (exchange), sizes {}..{}\n", topo::to_string(c.cls),
               c.alpha_s * 1e6,
               c.efficiency ? fmt::format("efficiency {:.4f}", *c.efficiency) : units::format_rate(*c.bandwidth_Bps),
               c.min_bytes, c.max_bytes);
  }
  fmt::print("wrote {}\n", o.out);
}

void setup_calibrate(CLI::App& root) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* sub = root.add_subcommand("calibrate", "Fit alpha/beta per link class from point-to-point records");
  sub->add_option("records", o->files, "JSONL records or benchmark logs")->check(CLI::ExistingFile);
  sub->add_option("--out", o->out, "Profile JSON to write (required with records)");
  sub->add_option("--compute", o->compute_trace, "Fit the device's GEMM table from a Kineto trace (record_shapes=True)")
      ->check(CLI::ExistingFile);
  sub->add_option("--device", o->device, "With --compute: the device preset to fit (shardsim list devices)");
  sub->add_option("--min-bytes", o->min_bytes, "Leave smaller messages out of the fit");
  sub->add_option("--max-bytes", o->max_bytes, "Leave larger messages out of the fit");
  sub->callback([o] { run_calibrate(*o); });
}

const Registration reg{"calibrate", 61, setup_calibrate};

}  // namespace
}  // namespace shardsim::cli
