#include "analysis/scenario/scenario.hpp"

#include "analysis/scenario/step_run.hpp"

namespace shardsim::analysis {

std::vector<ScenarioCommand>& scenario_commands() {
  // The library's own commands come first; the CLI files register the others.
  static std::vector<ScenarioCommand> commands = [] {
    std::vector<std::string> compare_keys;
    for (const auto& k : step_option_keys()) {
      if (k != "strategy") compare_keys.push_back(k);
    }
    compare_keys.emplace_back("strategies");
    return std::vector<ScenarioCommand>{
        {"step", step_option_keys(), [](const nlohmann::json& f) { return to_json(run_step(parse_step_options(f))); }},
        {"compare", compare_keys, [](const nlohmann::json& f) { return run_compare(parse_compare_options(f)); }}};
  }();
  return commands;
}

const ScenarioCommand* find_scenario_command(const std::string& name) {
  for (const auto& c : scenario_commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace shardsim::analysis
