#pragma once
// Scenario commands: the subcommands a sweep can run (collective, memory, step, compare).
// A command takes its flags as a JSON object (keys = long flag names without dashes, values
// as on the command line: strings, numbers, booleans) and returns its result as JSON: an
// object for one result, or an array of objects (e.g. one per message size).
//
// `step` and `compare` are the library's own (analysis/scenario/step_run.hpp: typed options,
// one table of keys); the other commands register from their CLI file (analysis/cli/<cmd>.cpp)
// with a static ScenarioRegistration, so both `shardsim <cmd>` and `shardsim sweep` run the
// same code.
// Runners must be thread-safe (each builds its own Topology/Simulator) and deterministic.
// Bad input: throw ConfigError (a sweep records the scenario as invalid, with the reason).
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace shardsim::analysis {

using ScenarioRunner = std::function<nlohmann::json(const nlohmann::json& flags)>;

struct ScenarioCommand {
  std::string name;
  std::vector<std::string> keys;  ///< accepted flag keys (unknown keys are errors)
  ScenarioRunner run;
};

/// Registered commands, in registration order.
std::vector<ScenarioCommand>& scenario_commands();
/// nullptr when unknown.
const ScenarioCommand* find_scenario_command(const std::string& name);

struct ScenarioRegistration {
  explicit ScenarioRegistration(ScenarioCommand c) { scenario_commands().push_back(std::move(c)); }
};

}  // namespace shardsim::analysis
