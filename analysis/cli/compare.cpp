// shardsim compare: the same step under several strategies, side by side, with the speedup
// over replicated. The library's run_compare (analysis/scenario/step_run.hpp): run_step once
// per strategy (one code path); the flags come from the step option table.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "analysis/cli/command.hpp"
#include "analysis/cli/step_flags.hpp"
#include "analysis/output/table.hpp"
#include "analysis/plan/fit.hpp"
#include "analysis/scenario/step_run.hpp"
#include "sim/units.hpp"

namespace shardsim::cli {
namespace {

using nlohmann::json;

struct CompareCliOptions {
  analysis::CompareOptions compare;
  bool json_out = false;
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
  auto o = std::make_shared<CompareCliOptions>();
  auto* sub = root.add_subcommand("compare", "Strategies side by side for one step, with speedup over replicated");
  add_step_flags(sub, o->compare.step, {"strategy"});
  sub->get_option("--topology")->required();
  sub->add_option("--strategies,-s", o->compare.strategies,
                  "'all' (the weight-update strategies) or a comma list (trace,replicated,sharded,zero3)");
  sub->add_flag("--json", o->json_out, "Print a JSON array of step objects");
  sub->callback([o] {
    const json rows = analysis::run_compare(o->compare);
    if (o->json_out) std::cout << rows.dump(2) << "\n";
    else print(rows);
  });
}

const Registration reg{"compare", 31, setup_compare};

}  // namespace
}  // namespace shardsim::cli
