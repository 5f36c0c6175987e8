#pragma once
// Capacity planning (issue 4): "how many chips, which strategy, how long, how much".
//
// Search space, per --hardware entry (a preset family such as tpu-v3 or dgx-h100 means each
// of its sizes, a sized preset such as dgx-h100-64 only that one), up to max_devices:
//   devices N = every device of the preset, all in one data-parallel group;
//   strategy  = each requested strategy (default all: replicated, sharded, zero1..3);
//   sharding subgroup k (sharded only) = N, and the largest divisor of N not above sqrt(N)
//               when it is at least 2 (a torus dimension of square-ish TPU slices, a node of
//               8 GPUs at 64 GPUs): partial sharding trades update time for communication;
//   bucket    = each of bucket_bytes (replicated, sharded, zero1, zero2; zero3 works per unit);
//   gradient accumulation = the smallest power of two dividing the per-device batch that
//               makes the step fit in memory (1 when it fits without).
// Per candidate: per-device batch = global batch / N (must divide), one step simulated by the
// step model (models/step) on the preset's topology with its device, time to train = steps x
// step time, cost = N x hours x price per device hour.
// Rejections (each candidate that is not feasible says why): batch not divisible, does not
// fit (peak vs HBM with every component, largest first, at the largest accumulation tried),
// over the deadline, over the budget.
// Pareto set over (time to train, devices, cost): a feasible candidate is kept unless another
// is no worse in all three and better in one; among exact ties the first in search order.
// Deterministic: the search order is fixed (hardware, N ascending, strategy, k, bucket).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardsim::plan {

struct PlanRequest {
  std::string model;
  std::uint64_t seq = 0;                 ///< 0 = the model's default
  std::optional<double> tokens;          ///< training tokens (steps = ceil(tokens / (G x seq)))
  std::optional<std::uint64_t> steps;    ///< or the number of steps
  std::uint64_t global_batch = 0;        ///< samples per step, G
  std::optional<double> deadline_s;
  std::optional<double> budget_usd;
  std::optional<double> price_per_device_hour;
  std::vector<std::string> hardware;     ///< preset families or sized presets
  std::vector<std::string> strategies;   ///< empty = all
  std::uint64_t max_devices = 0;         ///< 0 = no limit
  std::string optimizer = "adamw";
  std::string precision = "mixed";
  std::string fidelity = "analytical";
  std::vector<std::uint64_t> bucket_bytes = {25ULL << 20, 100ULL << 20};
};

struct Candidate {
  std::string hardware, device, strategy;
  std::uint64_t devices = 0, shard_group = 0, bucket_bytes = 0, batch_per_device = 0;
  std::uint32_t grad_accum = 1;
  double step_time_s = 0, time_to_train_s = 0, mfu = 0;
  std::optional<double> cost_usd;
  double memory_peak_bytes = 0, hbm_bytes = 0;
  nlohmann::json memory;   ///< bytes per component
  bool feasible = false, pareto = false;
  std::string rejected;    ///< why, when not feasible
};

struct PlanResult {
  std::uint64_t steps = 0;
  std::vector<Candidate> candidates;  ///< search order
  std::vector<std::size_t> pareto;    ///< indices into candidates, by time to train then devices
  nlohmann::json config;              ///< the effective request
};

/// Validates the request (ConfigError naming the flag) and searches. O(candidates x step).
PlanResult make_plan(const PlanRequest& r);

nlohmann::json to_json(const PlanResult& p);

/// What the Pareto set is over: time to train, devices, cost (0 when no price).
struct Objectives {
  double time_s = 0, devices = 0, cost = 0;
};
/// Indices of the points no other point is no worse than in all three and better in one (among
/// exact ties the first), sorted by time then devices. O(n^2).
std::vector<std::size_t> pareto_front(const std::vector<Objectives>& v);

/// Sized presets of a family (names end in their device count) up to `max_devices` (0: all),
/// or the name itself.
std::vector<std::string> expand_hardware(const std::string& name, std::uint64_t max_devices);

/// "300B" (1e9), "2T", "5e11", "1.5M" tokens; ConfigError naming `where`.
double parse_tokens(const std::string& text, const std::string& where);
/// "30d", "12h", "90min", or seconds with the units ps ns us ms s ("3600s"); unlike
/// units::parse_seconds, not bounded by the simulated time range.
double parse_duration_s(const std::string& text, const std::string& where);

/// "41.2 days", "5.3 hours", "12 min", "42 s".
std::string format_duration(double seconds);

}  // namespace shardsim::plan
