// Sweep throughput (issue 4): 10,000 analytical collective scenarios (target < 10 s on 2
// cores): 2 algorithms x 50 sizes x 100 link bandwidths on a 16x16 torus, written to CSV by
// the sweep engine (thread pool, ordered output) exactly as `shardsim sweep` runs them.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "analysis/commands/collective_run.hpp"
#include "analysis/scenario/scenario.hpp"
#include "analysis/sweep/engine.hpp"
#include "bench.hpp"

namespace shardsim::bench {

void bench_sweep() {
  // The CLI registers `collective` from analysis/cli/collective.cpp, which this binary does
  // not link: register the same runner here.
  if (!analysis::find_scenario_command("collective")) {
    static const analysis::ScenarioRegistration reg{analysis::ScenarioCommand{
        "collective",
        {"topology", "op", "bytes", "ranks", "algorithm", "fidelity", "chunks", "reduce-bw", "step-overhead"},
        [](const nlohmann::json& flags) {
          nlohmann::json arr = nlohmann::json::array();
          for (const auto& r : cli::run_collective(cli::collective_options_from_json(flags))) arr.push_back(cli::to_json(r));
          return arr;
        }}};
  }
  nlohmann::json sizes = nlohmann::json::array(), bws = nlohmann::json::array();
  for (int i = 0; i < 50; ++i) sizes.push_back(fmt::format("{}KiB", 64 * (i + 1)));
  for (int i = 0; i < 100; ++i) bws.push_back(fmt::format("{}GB/s", 10 + 5 * i));
  const nlohmann::json file = {
      {"base",
       {{"command", "collective"},
        {"topology", {{"builder", "torus"}, {"dims", "16x16"}, {"bw", "100GB/s"}, {"lat", "1us"}}},
        {"op", "allreduce"},
        {"bytes", "64MiB"},
        {"algorithm", "ring"},
        {"fidelity", "analytical"}}},
      {"axes",
       {{{"pointer", "/algorithm"}, {"values", {"ring", "torus"}}},
        {{"pointer", "/topology/bw"}, {"values", bws}},
        {{"pointer", "/bytes"}, {"values", sizes}}}}};
  const sweep::SweepSpec spec(file, "bench_sweep");
  const auto out = std::filesystem::temp_directory_path() / fmt::format("shardsim-bench-sweep-{}.csv", ::getpid());
  sweep::SweepOptions o;
  o.out = out.string();
  o.jobs = std::max(1u, std::thread::hardware_concurrency());
  Stopwatch sw;
  const auto s = sweep::run_sweep(spec, o);
  const double wall = sw.seconds();
  const auto bytes = std::filesystem::file_size(out);
  std::filesystem::remove(out);
  fmt::print("sweep: {} analytical collective scenarios (16x16 torus) on {} threads: {:.2f} s = {:.0f} scenarios/s "
             "(target < 10 s), {} ok, {} invalid, {} KiB of CSV, peak RSS {:.0f} MiB\n",
             s.total, s.jobs, wall, static_cast<double>(s.total) / wall, s.ok, s.invalid, bytes / 1024, peak_rss_mib());
}

}  // namespace shardsim::bench
