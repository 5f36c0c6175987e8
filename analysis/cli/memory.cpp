// shardsim memory: per-device model-state memory for a parameter count, without a model:
// `shardsim memory --params 7.5e9 --dp 64 --optimizer adam --precision mixed --strategy zero2`
// (models/memory/memory.hpp; the ZeRO paper's Table 1 falls out of it).
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "analysis/cli/command.hpp"
#include "analysis/output/table.hpp"
#include "analysis/scenario/scenario.hpp"
#include "models/compute/device.hpp"
#include "models/memory/memory.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"

namespace shardsim::cli {
namespace {

using nlohmann::json;

json run_memory(const json& flags) {
  static const std::vector<std::string> keys = {"params", "dp", "optimizer", "precision", "strategy", "shard-group", "device"};
  if (!flags.is_object()) throw ConfigError("memory", flags.dump(), "an object of flags");
  for (const auto& [k, v] : flags.items()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      throw ConfigError("memory", fmt::format("unknown flag '{}'", k),
                        "one of params, dp, optimizer, precision, strategy, shard-group, device");
    }
  }
  auto text = [&](const char* k, const std::string& d) {
    if (!flags.contains(k)) return d;
    const auto& v = flags.at(k);
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  if (!flags.contains("params")) throw ConfigError("--params", "missing", "a parameter count such as 7.5e9");
  const double params = units::parse_count(text("params", ""), "--params");
  const double dp = units::parse_count(text("dp", "1"), "--dp");
  if (dp < 1 || dp != std::floor(dp)) throw ConfigError("--dp", text("dp", ""), "a positive integer");
  memory::MemoryInput in;
  in.tensors = memory::square_tensor(params);
  in.optimizer = &opt::find_optimizer(text("optimizer", "adam"), "--optimizer");
  in.precision = opt::precision_from_string(text("precision", "mixed"), "--precision");
  in.dp = static_cast<std::uint64_t>(dp);
  if (flags.contains("shard-group")) {
    const double k = units::parse_count(text("shard-group", ""), "--shard-group");
    in.shard_group = static_cast<std::uint64_t>(k);
    if (k < 1 || k != std::floor(k) || in.dp % in.shard_group != 0) {
      throw ConfigError("--shard-group", fmt::format("k = {} does not divide N = {}", text("shard-group", ""), in.dp),
                        "a sharding subgroup size that divides the data-parallel size");
    }
  }
  const compute::Device* dev = flags.contains("device") ? &compute::find_device(text("device", ""), "--device") : nullptr;
  std::vector<std::string> names;
  const std::string s = text("strategy", "all");
  if (s == "all") {
    for (const auto& i : step::strategies()) names.push_back(i.name);
  } else {
    names.push_back(s);
  }
  json out = json::array();
  for (const auto& n : names) {
    in.strategy = step::strategy_from_string(n, "--strategy");
    const auto m = memory::memory_per_device(in);
    json r = {{"strategy", n}, {"params", params}, {"dp", in.dp}, {"optimizer", in.optimizer->name},
              {"precision", opt::to_string(in.precision)}, {"model_states_bytes", m.model_states()},
              {"memory_bytes", {{"params", m.params}, {"grads", m.grads}, {"optimizer", m.optimizer},
                                {"activations", m.activations}, {"buffers", m.buffers}, {"peak", m.peak}}}};
    if (dev) {
      r["device"] = dev->name;
      r["hbm_bytes"] = dev->hbm_bytes;
      r["fits"] = m.peak <= static_cast<double>(dev->hbm_bytes);
    }
    out.push_back(r);
  }
  return s == "all" ? out : out.at(0);
}

struct MemoryOptions {
  std::string params, optimizer = "adam", precision = "mixed", strategy = "all", device;
  std::uint64_t dp = 1, shard_group = 0;
  bool json_out = false;
};

void setup_memory(CLI::App& root) {
  auto o = std::make_shared<MemoryOptions>();
  auto* sub = root.add_subcommand("memory", "Per-device model-state memory for a parameter count (ZeRO Table 1)");
  sub->add_option("--params,-p", o->params, "Parameter count (7.5e9, 175G)")->required();
  sub->add_option("--dp,-n", o->dp, "Data-parallel size N");
  sub->add_option("--optimizer,-o", o->optimizer, "Optimizer (shardsim list optimizers)");
  sub->add_option("--precision", o->precision, "mixed | fp32");
  sub->add_option("--strategy,-s", o->strategy, "A strategy or all");
  sub->add_option("--shard-group,-k", o->shard_group, "sharded: subgroup size k");
  sub->add_option("--device,-d", o->device, "Check the fit against this device's HBM");
  sub->add_flag("--json", o->json_out, "Print JSON");
  sub->callback([o] {
    json f = {{"params", o->params}, {"dp", o->dp}, {"optimizer", o->optimizer}, {"precision", o->precision},
              {"strategy", o->strategy}};
    if (o->shard_group) f["shard-group"] = o->shard_group;
    if (!o->device.empty()) f["device"] = o->device;
    json r = run_memory(f);
    if (o->json_out) {
      std::cout << r.dump(2) << "\n";
      return;
    }
    if (!r.is_array()) r = json::array({r});
    fmt::print("{} parameters, N = {}, {} {} (GB = 1e9 bytes)\n", o->params, o->dp, o->optimizer, o->precision);
    std::vector<std::string> head = {"strategy", "params GB", "grads GB", "optimizer GB", "model states GB"};
    if (!o->device.empty()) head.push_back("fits " + o->device);
    analysis::Table t(head);
    for (const auto& x : r) {
      const auto& m = x.at("memory_bytes");
      std::vector<std::string> row = {x.at("strategy").get<std::string>(),
                                      fmt::format("{:.3f}", m.at("params").get<double>() / 1e9),
                                      fmt::format("{:.3f}", m.at("grads").get<double>() / 1e9),
                                      fmt::format("{:.3f}", m.at("optimizer").get<double>() / 1e9),
                                      fmt::format("{:.3f}", x.at("model_states_bytes").get<double>() / 1e9)};
      if (!o->device.empty()) row.push_back(x.at("fits").get<bool>() ? "yes" : "NO");
      t.add(row);
    }
    fmt::print("{}", t.str());
  });
}

const Registration reg{"memory", 32, setup_memory};
const analysis::ScenarioRegistration scenario{
    {"memory", {"params", "dp", "optimizer", "precision", "strategy", "shard-group", "device"}, run_memory}};

}  // namespace
}  // namespace shardsim::cli
