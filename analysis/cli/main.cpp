// shardsim: entry point. Parses the command line, runs one subcommand, and is the only
// place where errors become exit codes: 0 ok, 2 bad input (ConfigError, CLI11 parse
// errors, a simulated time beyond the Time range), 1 internal error.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <iterator>
#include <string>

#include "analysis/cli/command.hpp"
#include "sim/error.hpp"
#include "sim/time.hpp"

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

namespace {

// The inputs that set a run's simulated times: link rates and latencies (the topology, a
// calibration profile), sizes (bytes, a model and its batch, a trace) and overheads.
constexpr const char* kTimeInputs[] = {"topology", "hardware", "profile",          "bytes",
                                       "model",    "trace",    "batch-per-device", "global-batch",
                                       "step-overhead", "reduce-bw"};

// "--topology bus:n=4,bw=1B/s,lat=1us --bytes 64MiB": the time inputs of the subcommand that ran
// (given or defaulted), in the order it declares them; the subcommand's name when it has none.
std::string time_inputs(const CLI::App& app) {
  const CLI::App* sub = &app;
  while (!sub->get_subcommands().empty()) sub = sub->get_subcommands().front();
  std::string s;
  for (const CLI::Option* o : sub->get_options()) {
    const auto& names = o->get_lnames();
    if (names.empty() || std::find(std::begin(kTimeInputs), std::end(kTimeInputs), names.front()) == std::end(kTimeInputs)) {
      continue;
    }
    if (o->count() == 0 && o->get_default_str().empty()) continue;
    s += fmt::format("{}--{} {}", s.empty() ? "" : " ", names.front(), o->as<std::string>());
  }
  return s.empty() ? sub->get_name() : s;
}

}  // namespace
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
  } catch (const TimeRangeError& e) {
    // Not caught at the boundary (the rate and latency parsers reject what no transfer can
    // survive): a product of sizes, rates and latencies ran past the range. Bad input.
    fmt::print(stderr, "shardsim: error: {}: {}; expected rates, latencies and sizes whose simulated times stay within it\n",
               cli::time_inputs(app), e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "shardsim: internal error: {}\n", e.what());
    return 1;
  }
}
