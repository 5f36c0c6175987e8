// shardsim plan: capacity planning over hardware presets, device counts and strategies
// (analysis/plan/plan.hpp) or, for a transformer (--search mesh, the default for one), over
// every dp x tp x pp x cp x ep mesh (analysis/plan/mesh_plan.hpp). Prints the Pareto set over
// (time to train, devices, cost) and the rejections; exits 3 when nothing is feasible.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "analysis/cli/command.hpp"
#include "analysis/output/table.hpp"
#include "analysis/plan/mesh_plan.hpp"
#include "analysis/plan/plan.hpp"
#include "analysis/plan/reliability.hpp"
#include "models/optimizer/optimizer.hpp"
#include "sim/error.hpp"
#include "sim/registry.hpp"
#include "traces/models/model_config.hpp"
#include "traces/zoo/zoo.hpp"
#include "sim/units.hpp"

namespace shardsim::cli {
namespace {

struct PlanCliOptions {
  plan::PlanRequest req;
  std::string tokens, deadline, hardware, strategies, buckets;
  double budget = 0, price = 0;
  std::uint64_t steps = 0;
  bool json = false;
  // --reliability (issue 16, analysis/plan/reliability.hpp)
  bool reliability = false;
  std::string storage_bw, read_bw, restart = "10min", interval, goodput_csv;
  std::uint32_t per_host = 8;
  std::string search = "auto", micro_batches;  // issue 13: the mesh search (mesh_plan.hpp)
  std::optional<double> tie_margin;
};

// Goodput under failures of each Pareto candidate: checkpoint = the model state (weights and
// optimizer state, w + K bytes per parameter, ZeRO paper sec. 3.1; gradients are not saved).
nlohmann::json reliability_rows(const PlanCliOptions& o, const plan::PlanResult& p) {
  if (o.storage_bw.empty()) {
    throw ConfigError("--storage-bandwidth", "missing with --reliability", "the aggregate checkpoint write bandwidth, e.g. 100GB/s");
  }
  const auto& r = o.req;
  const auto& m = zoo::find_model(r.model, "--model");
  const double params = static_cast<double>(zoo::generate(m, 1, r.seq).parameter_count());
  const auto& optimizer = opt::find_optimizer(r.optimizer, "--optimizer");
  const auto precision = opt::precision_from_string(r.precision, "--precision");
  plan::ReliabilityInput in;
  in.devices_per_host = o.per_host;
  in.state_bytes = params * (opt::weight_bytes(precision) + opt::state_bytes_per_param(optimizer, precision));
  in.write_Bps = units::parse_rate_Bps(o.storage_bw, "--storage-bandwidth");
  if (!o.read_bw.empty()) in.read_Bps = units::parse_rate_Bps(o.read_bw, "--storage-read-bandwidth");
  in.restart_s = plan::parse_duration_s(o.restart, "--restart-time");
  if (!o.interval.empty()) in.interval_s = plan::parse_duration_s(o.interval, "--checkpoint-interval");
  nlohmann::json rows = nlohmann::json::array();
  for (const auto i : p.pareto) {
    const auto& c = p.candidates[i];
    in.devices = c.devices;
    const auto x = plan::reliability(in);
    rows.push_back({{"candidate", i}, {"hardware", c.hardware}, {"devices", c.devices}, {"strategy", c.strategy},
                    {"failures_per_h", x.failures_per_h}, {"mtbf_s", x.mtbf_s}, {"checkpoint_bytes", in.state_bytes},
                    {"checkpoint_s", x.checkpoint_s}, {"restore_s", x.restore_s},
                    {"young_interval_s", x.young_interval_s}, {"daly_interval_s", x.daly_interval_s},
                    {"interval_s", x.interval_s}, {"goodput", x.goodput},
                    {"time_to_train_s", c.time_to_train_s}, {"expected_time_to_train_s", c.time_to_train_s / x.goodput}});
  }
  if (!o.goodput_csv.empty()) {
    // Goodput against the interval for each candidate's size: 1 min x sqrt(2)^k up to 2 days
    // (`shardsim plot FILE --x interval_s --y goodput --by devices --logx`).
    std::string csv = "devices,interval_s,goodput,status\n";
    for (const auto i : p.pareto) {
      in.devices = p.candidates[i].devices;
      for (double t = 60; t <= 2 * 86400.0; t *= std::sqrt(2.0)) {
        in.interval_s = t;
        csv += fmt::format("{},{:.6g},{:.6g},ok\n", in.devices, t, plan::reliability(in).goodput);
      }
    }
    analysis::write_file(o.goodput_csv, csv, "--goodput-csv");
  }
  return rows;
}

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
  r.plan = d;
  if (!o.buckets.empty()) throw ConfigError("--buckets", o.buckets + " with --search mesh", "--search dp for bucket sizes");
  if (o.reliability) {
    throw ConfigError("--reliability", "with --search mesh (the default for a transformer)",
                      "--search dp: goodput is computed for the data-parallel search's candidates");
  }
  if (!o.micro_batches.empty()) {
    r.micro_batches.clear();
    for (const auto& m : split(o.micro_batches)) {
      r.micro_batches.push_back(static_cast<std::uint64_t>(units::parse_count(m, "--micro-batches")));
    }
  }
  if (o.tie_margin) r.tie_margin = *o.tie_margin;
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
    for (auto i : p.pareto) {
      const auto& c = p.feasible[i];
      if (!c.tie_of.empty()) fmt::print("{} on {}: {}\n", c.mesh, c.hardware, c.tie_of);
    }
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
  static constexpr std::array kSearches{std::string_view("auto"), std::string_view("dp"), std::string_view("mesh")};
  if (std::find(kSearches.begin(), kSearches.end(), o.search) == kSearches.end()) {
    throw_unknown("search", o.search, "--search", std::vector<std::string>(kSearches.begin(), kSearches.end()));
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
  if (o.tie_margin) throw ConfigError("--tie-margin", "with --search dp", "--search mesh");
  if (!o.buckets.empty()) {
    r.bucket_bytes.clear();
    for (const auto& b : split(o.buckets)) r.bucket_bytes.push_back(units::parse_bytes(b, "--buckets"));
  }
  const auto p = plan::make_plan(r);
  if (p.pareto.empty()) exit_status() = 3;
  const nlohmann::json rel = o.reliability ? reliability_rows(o, p) : nlohmann::json();
  if (o.json) {
    auto j = plan::to_json(p);
    if (o.reliability) {
      j["reliability"] = rel;
      j["reliability_rates"] = plan::llama3_rates().source;
    }
    std::cout << j.dump(2) << "\n";
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
  if (o.reliability && !rel.empty()) {
    analysis::Table t({"hardware", "devices", "strategy", "MTBF", "checkpoint", "restore", "interval (Daly)",
                       "goodput", "time to train", "expected with failures"});
    for (const auto& x : rel) {
      t.add({x.at("hardware").get<std::string>(), std::to_string(x.at("devices").get<std::uint64_t>()),
             x.at("strategy").get<std::string>(), plan::format_duration(x.at("mtbf_s").get<double>()),
             units::format_seconds(x.at("checkpoint_s").get<double>()), units::format_seconds(x.at("restore_s").get<double>()),
             plan::format_duration(x.at("interval_s").get<double>()), fmt::format("{:.1f}%", 100 * x.at("goodput").get<double>()),
             plan::format_duration(x.at("time_to_train_s").get<double>()),
             plan::format_duration(x.at("expected_time_to_train_s").get<double>())});
    }
    fmt::print("\nGoodput under failures ({}; checkpoint {} at {}):\n{}", plan::llama3_rates().source,
               units::format_bytes(static_cast<std::uint64_t>(rel.front().at("checkpoint_bytes").get<double>())),
               o.storage_bw, t.str());
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
  sub->add_flag("--reliability", o->reliability,
                "Goodput under failures: job MTBF from per-component rates (Llama 3), Young/Daly checkpoint interval, "
                "expected time to train (docs/reliability.md)");
  sub->add_option("--storage-bandwidth", o->storage_bw, "--reliability: aggregate checkpoint write bandwidth (100GB/s)");
  sub->add_option("--storage-read-bandwidth", o->read_bw, "--reliability: restore read bandwidth (default: the write one)");
  sub->add_option("--restart-time", o->restart, "--reliability: rescheduling before a restore (default 10min, an assumption)");
  sub->add_option("--checkpoint-interval", o->interval, "--reliability: compute between checkpoints (default: Daly's optimum)");
  sub->add_option("--goodput-csv", o->goodput_csv, "--reliability: write devices,interval_s,goodput rows to this CSV");
  sub->add_option("--devices-per-host", o->per_host, "--reliability: devices per host (default 8)")->check(CLI::PositiveNumber);
  sub->add_option("--search", o->search,
                  "auto | dp | mesh: dp searches devices x strategy x bucket with every device in one data-parallel "
                  "group; mesh every dp x tp x pp x cp x ep factorization with micro-batch, schedule, recompute and "
                  "strategy (auto: mesh for a transformer)");
  sub->add_option("--micro-batches", o->micro_batches, "--search mesh: micro-batch sizes to search (default 1,2,4,8)");
  sub->add_option("--tie-margin", o->tie_margin,
                  "--search mesh: steps within this fraction of the fastest are ties, won by the largest tp "
                  "(Narayanan et al. 2021; default 0.01, 0: the fastest)");
  sub->add_flag("--json", o->json, "Print JSON (config, steps, pareto, dominated, rejected)");
  sub->callback([o] { run_plan(*o); });
}

const Registration reg{"plan", 35, setup_plan};

}  // namespace
}  // namespace shardsim::cli
