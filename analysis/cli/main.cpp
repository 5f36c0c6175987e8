// shardsim: entry point. Parses the command line, runs one subcommand, and is the only
// place where errors become exit codes: 0 ok, 2 bad input (ConfigError, CLI11 parse
// errors), 1 internal error.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <exception>

#include "analysis/cli/command.hpp"
#include "sim/error.hpp"

namespace shardsim::cli {

std::vector<CommandEntry>& command_registry() {
  static std::vector<CommandEntry> r;
  return r;
}

std::function<int()>& default_job() {
  static std::function<int()> job;
  return job;
}

std::vector<ListEntry>& list_registry() {
  static std::vector<ListEntry> r;
  return r;
}

int& exit_status() {
  static int status = 0;
  return status;
}

}  // namespace shardsim::cli

int main(int argc, char** argv) {
  using namespace shardsim;
  CLI::App app{"shardsim: cluster and collective-communication simulator for distributed ML training",
               "shardsim"};
  app.set_version_flag("--version", "shardsim 0.1.0");
  app.require_subcommand(0, 1);
  auto& reg = cli::command_registry();
  std::stable_sort(reg.begin(), reg.end(), [](const auto& a, const auto& b) { return a.order < b.order; });
  try {
    for (auto& c : reg) c.setup(app);
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      if (!cli::default_job()) {
        fmt::print(stderr, "shardsim: no subcommand given (see shardsim --help)\n");
        return 2;
      }
      return cli::default_job()();
    }
    return cli::exit_status();
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const ConfigError& e) {
    fmt::print(stderr, "shardsim: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "shardsim: internal error: {}\n", e.what());
    return 1;
  }
}
