// shardsim compare: the same step under several strategies, side by side, with the speedup
// over replicated. Runs the `step` scenario command once per strategy (one code path).
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <sstream>

#include "analysis/cli/command.hpp"
#include "analysis/output/table.hpp"
#include "analysis/plan/fit.hpp"
#include "analysis/scenario/scenario.hpp"
#include "models/step/strategy.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"

namespace shardsim::cli {
namespace {

using nlohmann::json;

std::vector<std::string> parse_strategies(const std::string& list) {
  std::vector<std::string> out;
  if (list == "all") {
    for (const auto& s : step::strategies()) out.push_back(s.name);
    return out;
  }
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // Validates, listing the valid names; `trace` (replay of a trace's own collectives) is
    // accepted here but not part of "all", which means the weight-update strategies.
    step::strategy_from_string(item, "--strategies", step::StrategySet::with_trace);
    out.push_back(item);
  }
  if (out.empty()) throw ConfigError("--strategies", "an empty list", "'all' or a comma list of strategies");
  return out;
}

json run_compare(const json& flags) {
  if (!flags.is_object()) throw ConfigError("compare", flags.dump(), "an object of flags");
  const auto* step_cmd = analysis::find_scenario_command("step");
  if (step_cmd == nullptr) throw std::runtime_error("the step scenario command is not registered");
  const std::string list = flags.contains("strategies") ? flags.at("strategies").get<std::string>() : "all";
  json base = flags;
  base.erase("strategies");
  if (base.contains("strategy")) throw ConfigError("compare", "unknown flag 'strategy'", "--strategies");
  const auto names = parse_strategies(list);
  // The baseline is replicated, computed even when not listed.
  json rep_flags = base;
  rep_flags["strategy"] = "replicated";
  const json rep = step_cmd->run(rep_flags);
  json out = json::array();
  for (const auto& n : names) {
    json f = base;
    f["strategy"] = n;
    json r = n == "replicated" ? rep : step_cmd->run(f);
    const bool both = rep.at("fits").get<bool>() && r.at("fits").get<bool>();
    r["speedup_vs_replicated"] = both ? json(rep.at("step_time_s").get<double>() / r.at("step_time_s").get<double>()) : json(nullptr);
    out.push_back(r);
  }
  return out;
}

struct CompareOptions {
  std::string model, trace, topology, device, strategies = "all", optimizer = "adam", precision = "mixed";
  std::string fidelity = "analytical", algorithm = "auto", compute = "roofline", bucket;
  double batch = 0, seq = 0;
  std::uint64_t dp = 0, grad_accum = 1, shard_group = 0;
  bool checkpointing = false, no_defer = false, no_fusion = false, no_prefetch = false, json_out = false;
};

void print(const json& rows) {
  const auto& first = rows.at(0);
  fmt::print("{} on {} ({} x {}), {} {}, batch {}/device\n", first.at("model").get<std::string>(),
             first.at("topology").get<std::string>(), first.at("dp").get<std::uint64_t>(),
             first.at("device").get<std::string>(), first.at("optimizer").get<std::string>(),
             first.at("precision").get<std::string>(), first.at("batch_per_device").get<std::uint64_t>());
  analysis::Table t({"strategy", "step", "forward", "backward", "exposed comm", "update", "MFU", "peak memory", "fits",
                     "speedup"});
  for (const auto& r : rows) {
    const bool fits = r.at("fits").get<bool>();
    auto sec = [&](const char* k) { return units::format_seconds(r.at(k).get<double>()); };
    t.add({r.at("strategy").get<std::string>(), fits ? sec("step_time_s") : "no fit", sec("forward_s"), sec("backward_s"),
           sec("exposed_comm_s"), sec("update_s"), fits ? fmt::format("{:.1f}%", 100 * r.at("mfu").get<double>()) : "-",
           units::format_bytes(static_cast<std::uint64_t>(r.at("memory_bytes").at("peak").get<double>())),
           fits ? "yes" : "NO",
           r.at("speedup_vs_replicated").is_null() ? "-" : fmt::format("{:.2f}x", r.at("speedup_vs_replicated").get<double>())});
  }
  fmt::print("{}", t.str());
  for (const auto& r : rows) {
    if (!r.at("fits").get<bool>()) {
      fmt::print("{}: {}\n", r.at("strategy").get<std::string>(),
                 plan::does_not_fit_text(r.at("memory_bytes"), r.at("hbm_bytes").get<double>(),
                                         r.at("time_if_it_fit_s").get<double>()));
    }
  }
}

void setup_compare(CLI::App& root) {
  auto o = std::make_shared<CompareOptions>();
  auto* sub = root.add_subcommand("compare", "Strategies side by side for one step, with speedup over replicated");
  sub->add_option("--model,-m", o->model, "Zoo model (shardsim list models)");
  sub->add_option("--trace", o->trace, "Native trace JSON (docs/trace-format.md)");
  sub->add_option("--topology,-t", o->topology, "Topology preset, JSON file or builder spec")->required();
  sub->add_option("--device,-d", o->device, "Device (default: the topology's)");
  sub->add_option("--strategies,-s", o->strategies,
                  "'all' (the weight-update strategies) or a comma list (trace,replicated,sharded,zero3)");
  sub->add_option("--optimizer,-o", o->optimizer, "Optimizer");
  sub->add_option("--precision", o->precision, "mixed | fp32");
  sub->add_option("--batch-per-device,-b", o->batch, "Samples per device per micro-batch");
  sub->add_option("--seq", o->seq, "Sequence length");
  sub->add_option("--dp", o->dp, "Data-parallel size");
  sub->add_option("--fidelity", o->fidelity, "analytical | flow");
  sub->add_option("--algorithm,-a", o->algorithm, "Collective algorithm or auto");
  sub->add_option("--compute", o->compute, "roofline | measured");
  sub->add_option("--grad-accum", o->grad_accum, "Micro-batches per step");
  sub->add_option("--bucket", o->bucket, "Bucket / fused buffer size");
  sub->add_option("--shard-group,-k", o->shard_group, "sharded: subgroup size k");
  sub->add_flag("--checkpointing", o->checkpointing, "Activation checkpointing");
  sub->add_flag("--no-defer", o->no_defer, "sharded: all-gather at step end");
  sub->add_flag("--no-fusion", o->no_fusion, "sharded: one buffer per tensor");
  sub->add_flag("--no-prefetch", o->no_prefetch, "zero3: no prefetch");
  sub->add_flag("--json", o->json_out, "Print a JSON array of step objects");
  sub->callback([o, sub] {
    json f;
    if (!o->model.empty()) f["model"] = o->model;
    if (!o->trace.empty()) f["trace"] = o->trace;
    f["topology"] = o->topology;
    if (!o->device.empty()) f["device"] = o->device;
    f["strategies"] = o->strategies;
    f["optimizer"] = o->optimizer;
    f["precision"] = o->precision;
    f["fidelity"] = o->fidelity;
    f["algorithm"] = o->algorithm;
    f["compute"] = o->compute;
    if (sub->count("--batch-per-device")) f["batch-per-device"] = o->batch;
    if (sub->count("--seq")) f["seq"] = o->seq;
    if (o->dp) f["dp"] = o->dp;
    f["grad-accum"] = o->grad_accum;
    if (o->shard_group) f["shard-group"] = o->shard_group;
    if (!o->bucket.empty()) f["bucket"] = o->bucket;
    f["checkpointing"] = o->checkpointing;
    f["no-defer"] = o->no_defer;
    f["no-fusion"] = o->no_fusion;
    f["no-prefetch"] = o->no_prefetch;
    const json rows = run_compare(f);
    if (o->json_out) std::cout << rows.dump(2) << "\n";
    else print(rows);
  });
}

const Registration reg{"compare", 31, setup_compare};
const analysis::ScenarioRegistration scenario{
    {"compare",
     {"model", "trace", "topology", "device", "strategies", "optimizer", "batch-per-device", "seq", "fidelity",
      "precision", "dp", "grad-accum", "checkpointing", "bucket", "shard-group", "no-defer", "no-fusion", "no-prefetch",
      "algorithm", "compute"},
     run_compare}};

}  // namespace
}  // namespace shardsim::cli
