#pragma once
// Self-registering subcommands (CLI11 examples/subcom_in_files): each file under
// analysis/cli/ defines an options struct, a setup function that adds its subcommand to the
// root App and a run function, and registers the setup with a static Registration.
// Errors: throw ConfigError for bad input (exit 2); anything else exits 1. Only main()
// turns exceptions into exit codes.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace shardsim::cli {

struct CommandEntry {
  std::string name;
  int order = 0;  ///< position in --help
  std::function<void(CLI::App& root)> setup;
};

std::vector<CommandEntry>& command_registry();

struct Registration {
  Registration(std::string name, int order, std::function<void(CLI::App&)> setup) {
    command_registry().push_back({std::move(name), order, std::move(setup)});
  }
};

/// The job run by `shardsim` with no arguments (the README's main job). Set by one file.
std::function<int()>& default_job();

/// Exit code set by a subcommand that wants a non-zero status without an error (e.g. plan: 3).
int& exit_status();

}  // namespace shardsim::cli

namespace shardsim::cli {

/// `shardsim list CATEGORY`: each registry (topologies, algorithms, models, devices, ...)
/// registers a printer for its category from the file that owns it.
struct ListEntry {
  std::string category;
  std::string doc;
  std::function<void()> print;
};
std::vector<ListEntry>& list_registry();
struct ListRegistration {
  ListRegistration(std::string category, std::string doc, std::function<void()> print) {
    list_registry().push_back({std::move(category), std::move(doc), std::move(print)});
  }
};

}  // namespace shardsim::cli
