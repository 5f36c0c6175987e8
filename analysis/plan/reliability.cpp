#include "analysis/plan/reliability.hpp"

#include <fmt/format.h>

#include <cmath>

#include "sim/error.hpp"

namespace shardsim::plan {

ComponentRates llama3_rates() {
  // Dubey et al. 2024, Table 5: unexpected interruptions in 54 days on 16,384 GPUs (2,048
  // hosts), grouped by component as in the header.
  constexpr double hours = 54.0 * 24.0;
  constexpr double gpus = 16384, hosts = 2048;
  ComponentRates r;
  r.gpu_per_h = (148.0 + 72 + 19 + 17 + 6 + 6) / (gpus * hours);
  r.nic_per_h = 7.0 / (gpus * hours);
  r.link_per_h = 35.0 / (gpus * hours);
  r.host_per_h = (32.0 + 3 + 3 + 2 + 2 + 2 + 2) / (hosts * hours);
  r.software_per_h = (54.0 + 7 + 2) / (gpus * hours);
  r.source = "Llama 3 (Dubey et al. 2024, Table 5): 419 unexpected interruptions in 54 days on 16,384 H100";
  return r;
}

double job_failures_per_h(const ComponentRates& r, std::uint64_t devices, std::uint32_t devices_per_host) {
  const double n = static_cast<double>(devices);
  const double hosts = std::ceil(n / static_cast<double>(devices_per_host));
  return n * (r.gpu_per_h + r.nic_per_h + r.link_per_h + r.software_per_h) + hosts * r.host_per_h;
}

double young_interval(double checkpoint_s, double mtbf_s) { return std::sqrt(2 * checkpoint_s * mtbf_s); }

double daly_interval(double checkpoint_s, double mtbf_s) {
  if (checkpoint_s >= 2 * mtbf_s) return mtbf_s;
  const double x = checkpoint_s / (2 * mtbf_s);
  return std::sqrt(2 * checkpoint_s * mtbf_s) * (1 + std::sqrt(x) / 3 + x / 9) - checkpoint_s;
}

double wall_per_work(double interval_s, double checkpoint_s, double restore_s, double mtbf_s) {
  const double M = mtbf_s;
  // expm1 keeps the no-failure limit (M -> infinity: (tau + delta) / tau) exact.
  return M * std::exp(restore_s / M) * std::expm1((interval_s + checkpoint_s) / M) / interval_s;
}

ReliabilityResult reliability(const ReliabilityInput& in) {
  if (in.devices == 0) throw ConfigError("--devices", "0", "at least 1 device");
  if (in.devices_per_host == 0) throw ConfigError("--devices-per-host", "0", "at least 1 device per host");
  const auto& r = in.rates;
  for (const double x : {r.gpu_per_h, r.nic_per_h, r.link_per_h, r.host_per_h, r.software_per_h}) {
    if (!(x >= 0) || !std::isfinite(x)) {
      throw ConfigError("--failure-rates", fmt::format("a rate of {} per hour", x), "rates >= 0");
    }
  }
  if (!(in.state_bytes > 0) || !std::isfinite(in.state_bytes)) {
    throw ConfigError("--state-bytes", fmt::format("{}", in.state_bytes), "a positive checkpoint size");
  }
  if (!(in.write_Bps > 0) || !std::isfinite(in.write_Bps)) {
    throw ConfigError("--storage-bandwidth", fmt::format("{} B/s", in.write_Bps), "a positive bandwidth");
  }
  if (!(in.restart_s >= 0) || !std::isfinite(in.restart_s)) {
    throw ConfigError("--restart-time", fmt::format("{} s", in.restart_s), "a time >= 0");
  }
  if (in.interval_s && !(*in.interval_s > 0)) {
    throw ConfigError("--checkpoint-interval", fmt::format("{} s", *in.interval_s), "a positive interval");
  }
  ReliabilityResult out;
  out.failures_per_h = job_failures_per_h(r, in.devices, in.devices_per_host);
  if (!(out.failures_per_h > 0)) {
    throw ConfigError("--failure-rates", "no failures at all", "at least one component that fails");
  }
  out.mtbf_s = 3600.0 / out.failures_per_h;
  out.checkpoint_s = in.state_bytes / in.write_Bps;
  out.restore_s = in.restart_s + in.state_bytes / (in.read_Bps > 0 ? in.read_Bps : in.write_Bps);
  out.young_interval_s = young_interval(out.checkpoint_s, out.mtbf_s);
  out.daly_interval_s = daly_interval(out.checkpoint_s, out.mtbf_s);
  out.interval_s = in.interval_s.value_or(out.daly_interval_s);
  out.goodput = 1.0 / wall_per_work(out.interval_s, out.checkpoint_s, out.restore_s, out.mtbf_s);
  return out;
}

}  // namespace shardsim::plan
