// shardsim collective-study: the collective study (issue 2's main job before the training-step
// model existed; `shardsim` alone now runs `shardsim study`): ring vs
// torus (dimension-wise) vs hierarchical all-reduce over sizes on a TPU v3 pod slice and a
// DGX H100 cluster, analytical and flow fidelity side by side.
#include <fmt/format.h>

#include <memory>

#include "analysis/cli/command.hpp"
#include "analysis/commands/collective_run.hpp"
#include "analysis/output/table.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"

namespace shardsim::cli {
namespace {

struct StudyOptions {
  std::vector<std::string> topologies{"tpu-v3-1024", "dgx-h100-64"};
  std::vector<std::string> algorithms{"ring", "torus", "hierarchical"};
  std::string bytes = "1MiB:1GiB:x16";
  std::string csv;
};

int run_study(const StudyOptions& o) {
  std::vector<std::string> csv{analysis::csv_line(csv_header())};
  for (const auto& topo : o.topologies) {
    analysis::Table t({"size", "algorithm", "analytical", "flow", "busbw GB/s (flow)", "lower bound", "of bound"});
    std::vector<std::string> notes;
    std::size_t ranks = 0;
    for (const auto& algo : o.algorithms) {
      CollectiveOptions c;
      c.topology = topo;
      c.op = "allreduce";
      c.bytes = o.bytes;
      c.algorithm = algo;
      std::vector<CollectiveResult> a, f;
      try {
        a = run_collective(c);
        c.fidelity = "flow";
        f = run_collective(c);
      } catch (const ConfigError& e) {
        notes.push_back(fmt::format("{}: n/a ({})", algo, e.what()));
        continue;
      }
      for (std::size_t i = 0; i < a.size(); ++i) {
        ranks = a[i].ranks;
        t.add({units::format_bytes(a[i].size_bytes), algo, units::format_seconds(a[i].time_s),
               units::format_seconds(f[i].time_s), fmt::format("{:.1f}", f[i].busbw_GBps),
               units::format_seconds(f[i].lower_bound_s),
               fmt::format("{:.0f}%", 100.0 * f[i].lower_bound_s / f[i].time_s)});
        csv.push_back(analysis::csv_line(csv_row(a[i])));
        csv.push_back(analysis::csv_line(csv_row(f[i])));
      }
    }
    fmt::print("== all-reduce on {} ({} ranks)\n{}", topo, ranks, t.str());
    for (const auto& n : notes) fmt::print("  {}\n", n);
    fmt::print("\n");
  }
  if (!o.csv.empty()) {
    std::string out;
    for (const auto& l : csv) out += l;
    analysis::write_file(o.csv, out, "--csv");
  }
  return 0;
}

void setup_study(CLI::App& root) {
  auto o = std::make_shared<StudyOptions>();
  auto* sub = root.add_subcommand("collective-study",
                                  "Ring vs torus vs hierarchical all-reduce on a TPU v3 slice and a DGX H100 cluster");
  sub->add_option("--topology", o->topologies, "Topologies to compare")->capture_default_str();
  sub->add_option("--algorithm", o->algorithms, "Algorithms to compare")->capture_default_str();
  sub->add_option("--bytes", o->bytes, "Size range")->capture_default_str();
  sub->add_option("--csv", o->csv, "Also write every row as CSV");
  sub->callback([o] { run_study(*o); });
}

const Registration reg{"collective-study", 50, setup_study};

}  // namespace
}  // namespace shardsim::cli
