#include "analysis/scenario/scenario.hpp"

namespace shardsim::analysis {

std::vector<ScenarioCommand>& scenario_commands() {
  static std::vector<ScenarioCommand> commands;
  return commands;
}

const ScenarioCommand* find_scenario_command(const std::string& name) {
  for (const auto& c : scenario_commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace shardsim::analysis
