// shardsim plan: capacity planning over hardware presets, device counts and strategies
// (analysis/plan/plan.hpp) or, for a transformer (--search mesh, the default for one), over
// every dp x tp x pp x cp x ep mesh (analysis/plan/mesh_plan.hpp). Prints the Pareto set over
// (time to train, devices, cost) and the rejections; exits 3 when nothing is feasible.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "analysis/cli/command.hpp"
#include "analysis/output/table.hpp"
#include "analysis/plan/mesh_plan.hpp"
#include "analysis/plan/plan.hpp"
#include "sim/error.hpp"
#include "traces/models/model_config.hpp"
#include "sim/units.hpp"

namespace shardsim::cli {
namespace {

struct PlanCliOptions {
  plan::PlanRequest req;
  std::string tokens, deadline, hardware, strategies, buckets;
  double budget = 0, price = 0;
  std::uint64_t steps = 0;
  bool json = false;
  std::string search = "auto", micro_batches;  // issue 13: the mesh search (mesh_plan.hpp)
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + ",") {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  return out;
}

std::string config_text(const plan::Candidate& c) {
  std::string s = c.strategy;
  if (c.shard_group && c.shard_group != c.devices) s += fmt::format(" k={}", c.shard_group);
  if (c.strategy != "zero3") s += " bucket " + units::format_bytes(c.bucket_bytes);
  if (c.grad_accum > 1) s += fmt::format(" accum {}", c.grad_accum);
  return s;
}

// `plan --search mesh` (the default for a transformer): factorizations of each device count.
void run_mesh_plan(PlanCliOptions& o) {
  const auto& d = o.req;
  plan::MeshPlanRequest r;
  r.model = d.model;
  r.seq = d.seq;
  r.tokens = d.tokens;
  r.steps = d.steps;
  r.global_batch = d.global_batch;
  r.deadline_s = d.deadline_s;
  r.budget_usd = d.budget_usd;
  r.price_per_device_hour = d.price_per_device_hour;
  r.hardware = d.hardware;
  r.strategies = d.strategies;
  r.max_devices = d.max_devices;
  r.optimizer = d.optimizer;
  r.precision = d.precision;
  if (d.fidelity != "analytical") throw ConfigError("--fidelity", d.fidelity + " with --search mesh", "analytical");
  if (!o.buckets.empty()) throw ConfigError("--buckets", o.buckets + " with --search mesh", "--search dp for bucket sizes");
  if (!o.micro_batches.empty()) {
    r.micro_batches.clear();
    for (const auto& m : split(o.micro_batches)) {
      r.micro_batches.push_back(static_cast<std::uint64_t>(units::parse_count(m, "--micro-batches")));
    }
  }
  const auto p = plan::make_mesh_plan(r);
  if (p.pareto.empty()) exit_status() = 3;
  if (o.json) {
    std::cout << plan::to_json(p).dump(2) << "\n";
    return;
  }
  fmt::print("# plan: {} on {}, global batch {}, {} steps; {} meshes, {} steps simulated\n", d.model, o.hardware,
             d.global_batch, p.steps, p.considered, p.simulated);
  if (!p.pareto.empty()) {
    analysis::Table t({"hardware", "devices", "mesh", "micro-batch", "schedule", "recompute", "strategy", "step",
                       "time to train", "MFU", "tp comm", "pp bubble", "dp exposed", "memory/device", "cost USD"});
    for (auto i : p.pareto) {
      const auto& c = p.feasible[i];
      t.add({c.hardware, std::to_string(c.devices), c.mesh + (c.sequence_parallel ? " sp" : ""),
             std::to_string(c.micro_batch), c.schedule, c.recompute, c.strategy, units::format_seconds(c.step_time_s),
             plan::format_duration(c.time_to_train_s), fmt::format("{:.1f}%", 100 * c.mfu),
             units::format_seconds(c.tp_comm_s), units::format_seconds(c.pp_bubble_s),
             units::format_seconds(c.dp_exposed_s), units::format_bytes(static_cast<std::uint64_t>(c.memory_peak_bytes)),
             c.cost_usd ? fmt::format("{:.0f}", *c.cost_usd) : "-"});
    }
    fmt::print("Pareto set over (time to train, devices, cost): {} of {} simulated configurations\n{}", p.pareto.size(),
               p.feasible.size(), t.str());
  }
  if (!p.rejected.empty()) {
    fmt::print("\nRejected, by cause:\n");
    for (const auto& g : p.rejected) fmt::print("  {} x {}; e.g. {}\n", g.count, g.cause, g.example);
  }
  if (p.pareto.empty()) fmt::print(stderr, "plan: no feasible configuration (every one is rejected above)\n");
}

void run_plan(PlanCliOptions& o) {
  auto& r = o.req;
  if (!o.tokens.empty()) r.tokens = plan::parse_tokens(o.tokens, "--tokens");
  if (o.steps) r.steps = o.steps;
  if (!o.deadline.empty()) r.deadline_s = plan::parse_duration_s(o.deadline, "--deadline");
  if (o.budget > 0) r.budget_usd = o.budget;
  if (o.price > 0) r.price_per_device_hour = o.price;
  r.hardware = split(o.hardware);
  r.strategies = split(o.strategies);
  if (o.search != "auto" && o.search != "dp" && o.search != "mesh") {
    throw ConfigError("--search", o.search, "auto, dp or mesh");
  }
  // auto: the mesh search for a transformer (a zoo transformer or a config.json), else dp.
  bool mesh = o.search == "mesh";
  if (o.search == "auto") {
    try {
      models::resolve_model(r.model, "--model");
      mesh = true;
    } catch (const ConfigError&) {
      mesh = false;
    }
  }
  if (mesh) {
    run_mesh_plan(o);
    return;
  }
  if (!o.micro_batches.empty()) throw ConfigError("--micro-batches", "with --search dp", "--search mesh");
  if (!o.buckets.empty()) {
    r.bucket_bytes.clear();
    for (const auto& b : split(o.buckets)) r.bucket_bytes.push_back(units::parse_bytes(b, "--buckets"));
  }
  const auto p = plan::make_plan(r);
  if (p.pareto.empty()) exit_status() = 3;
  if (o.json) {
    std::cout << plan::to_json(p).dump(2) << "\n";
    return;
  }
  fmt::print("# plan: {} on {}, global batch {}, {} steps\n", r.model, o.hardware, r.global_batch, p.steps);
  std::size_t feasible = 0;
  for (const auto& c : p.candidates) feasible += c.feasible ? 1 : 0;
  if (!p.pareto.empty()) {
    analysis::Table t({"hardware", "devices", "strategy", "batch/device", "step", "time to train", "MFU",
                       "memory/device", "cost USD"});
    for (auto i : p.pareto) {
      const auto& c = p.candidates[i];
      t.add({c.hardware, std::to_string(c.devices), config_text(c), std::to_string(c.batch_per_device),
             units::format_seconds(c.step_time_s), plan::format_duration(c.time_to_train_s),
             fmt::format("{:.1f}%", 100 * c.mfu), units::format_bytes(static_cast<std::uint64_t>(c.memory_peak_bytes)),
             c.cost_usd ? fmt::format("{:.0f}", *c.cost_usd) : "-"});
    }
    fmt::print("Pareto set over (time to train, devices, cost): {} of {} feasible configurations\n{}", p.pareto.size(),
               feasible, t.str());
  }
  const std::size_t rejected = p.candidates.size() - feasible;
  if (rejected > 0) {
    fmt::print("\nRejected ({} of {} configurations):\n", rejected, p.candidates.size());
    for (const auto& c : p.candidates) {
      if (!c.feasible) fmt::print("  {} x{} {}: {}\n", c.hardware, c.devices, config_text(c), c.rejected);
    }
  }
  if (p.pareto.empty()) {
    fmt::print(stderr, "plan: no feasible configuration among {} ({})\n", p.candidates.size(),
               p.candidates.empty() ? "no hardware size within --max-devices" : "every one is rejected above");
  }
}

void setup_plan(CLI::App& root) {
  auto o = std::make_shared<PlanCliOptions>();
  auto* sub = root.add_subcommand("plan", "Capacity planning: devices, strategy, time to train and cost (Pareto set)");
  sub->add_option("--model,-m", o->req.model, "Zoo model (shardsim list models) or a config.json (--search mesh)")->required();
  sub->add_option("--seq", o->req.seq, "Sequence length (default: the model's)");
  auto* tok = sub->add_option("--tokens", o->tokens, "Training tokens: 300B, 2T, 3e11");
  auto* steps = sub->add_option("--steps", o->steps, "Training steps")->check(CLI::PositiveNumber);
  tok->excludes(steps);
  sub->add_option("--global-batch,-g", o->req.global_batch, "Samples per step (global batch)")->required()->check(CLI::PositiveNumber);
  sub->add_option("--deadline", o->deadline, "Reject plans slower than this: 30d, 12h, 90min");
  sub->add_option("--budget", o->budget, "Reject plans costing more (USD; needs --price-per-device-hour)")->check(CLI::PositiveNumber);
  sub->add_option("--price-per-device-hour", o->price, "USD per device hour")->check(CLI::PositiveNumber);
  sub->add_option("--hardware", o->hardware, "Presets, comma separated: a family (tpu-v3, dgx-h100) or a size (dgx-h100-64)")->required();
  sub->add_option("--strategies", o->strategies, "Strategies, comma separated (default all: shardsim list strategies)");
  sub->add_option("--max-devices", o->req.max_devices, "Largest device count to consider");
  sub->add_option("--optimizer", o->req.optimizer, "Optimizer (shardsim list optimizers)")->default_val("adamw");
  sub->add_option("--precision", o->req.precision, "fp32 | mixed")->default_val("mixed");
  sub->add_option("--fidelity", o->req.fidelity, "analytical | flow")->default_val("analytical");
  sub->add_option("--buckets", o->buckets, "Gradient bucket sizes to search (default 25MiB,100MiB)");
  sub->add_option("--search", o->search,
                  "auto | dp | mesh: dp searches devices x strategy x bucket with every device in one data-parallel "
                  "group; mesh every dp x tp x pp x cp x ep factorization with micro-batch, schedule, recompute and "
                  "strategy (auto: mesh for a transformer)");
  sub->add_option("--micro-batches", o->micro_batches, "--search mesh: micro-batch sizes to search (default 1,2,4,8)");
  sub->add_flag("--json", o->json, "Print JSON (config, steps, pareto, dominated, rejected)");
  sub->callback([o] { run_plan(*o); });
}

const Registration reg{"plan", 35, setup_plan};

}  // namespace
}  // namespace shardsim::cli
