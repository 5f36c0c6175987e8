// shardsim study: the flagship study (README's main job). Replicated vs cross-replica
// sharded vs ZeRO stages for ResNet-50, BERT-large and GPT-3 1.3B / 13B, on a TPU v3 pod and
// a DGX H100 cluster over data-parallel sizes: prints the tables and writes, in ./shardsim-out,
// study.csv (every step: the source of truth), the figure data speedup.csv, breakdown.csv and
// memory.csv with their gnuplot scripts (analysis/plot/study_figures.hpp) and, when gnuplot is
// installed, speedup/breakdown/memory .svg and .png. Every point is the library's run_step
// (analysis/scenario/step_run.hpp; analytical fidelity).
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analysis/cli/command.hpp"
#include "analysis/output/table.hpp"
#include "analysis/plot/study_figures.hpp"
#include "analysis/scenario/step_run.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"

namespace shardsim::cli {

struct StudyOptions {
  std::string out_dir = "shardsim-out";
  bool quick = false;  ///< fewer data-parallel sizes (tests, demos)
};

namespace {

using nlohmann::json;

struct StudyModel {
  const char* name;
  const char* label;
  std::uint64_t batch;
  bool checkpointing;
  const char* why;
  const char* workload;  ///< for the figure titles
};

// Per-device batches as in the published runs: ResNet-50 32/chip (MLPerf v0.6 TPU v3 pod
// submissions used 32 per core pair); BERT-large 8 x 512 tokens; GPT-3 one 2048-token sequence
// per device with activation checkpointing (Narayanan et al. 2021 train GPT-3 with it).
const StudyModel kModels[] = {{"resnet50", "ResNet-50", 32, false, "224x224 images", "batch 32 images/device"},
                              {"bert-large", "BERT-large", 8, false, "seq 512", "batch 8 x seq 512/device"},
                              {"gpt3-1.3b", "GPT-3 1.3B", 1, true, "seq 2048, checkpointing", "batch 1 x seq 2048/device, ckpt"},
                              {"gpt3-13b", "GPT-3 13B", 1, true, "seq 2048, checkpointing", "batch 1 x seq 2048/device, ckpt"}};

struct System {
  const char* label;
  const char* preset;  ///< preset prefix, "-<devices>" appended
};
const System kSystems[] = {{"TPU v3 pod", "tpu-v3"}, {"DGX H100 cluster", "dgx-h100"}};

}  // namespace

/// Runs the study; returns the exit status (0). Throws ConfigError when the output folder
/// cannot be written. The lead may point cli::default_job() at this.
int run_flagship_study(const StudyOptions& o) {
  const std::vector<std::uint64_t> sizes = o.quick ? std::vector<std::uint64_t>{16, 64}
                                                   : std::vector<std::uint64_t>{16, 64, 256, 1024};
  plot::StudyFigures fig;
  fig.title = "Replicated vs sharded (Xu et al. 2020) vs ZeRO weight update";
  fig.strategies = {"replicated", "sharded", "zero1", "zero2", "zero3"};
  fig.sizes = sizes;
  std::string csv = analysis::csv_line({"system", "model", "dp", "strategy", "fits", "step_time_s", "speedup_vs_replicated",
                                        "forward_s", "backward_s", "exposed_comm_s", "update_s", "mfu", "peak_memory_bytes"});
  fmt::print("shardsim flagship study: data-parallel training step, mixed-precision Adam, analytical collectives\n");
  for (const auto& sys : kSystems) {
    for (const auto& m : kModels) {
      fmt::print("\n== {} | {} ({}, batch {}/device)\n", sys.label, m.name, m.why, m.batch);
      const std::size_t panel = fig.panels.size();
      fig.panels.push_back({sys.label, m.name, m.label, m.workload, "bf16 mixed, Adam", 0});
      analysis::Table t({"devices", "replicated", "sharded", "zero1", "zero2", "zero3", "sharded speedup"});
      for (auto n : sizes) {
        std::vector<std::string> row = {std::to_string(n)};
        double rep_time = 0;
        bool rep_fits = false;
        std::string sharded_speedup = "-";
        for (const auto& s : fig.strategies) {
          analysis::StepOptions f;
          f.model = m.name;
          f.topology = fmt::format("{}-{}", sys.preset, n);
          f.strategy = s;
          f.optimizer = "adam";
          f.precision = "mixed";
          f.batch_per_device = static_cast<double>(m.batch);
          f.checkpointing = m.checkpointing;
          const json r = analysis::to_json(analysis::run_step(f));
          const bool fits = r.at("fits").get<bool>();
          const double time = r.at("time_if_it_fit_s").get<double>();
          if (s == "replicated") {
            rep_time = time;
            rep_fits = fits;
          }
          const bool speedup_ok = fits && rep_fits;
          const double speedup = speedup_ok ? rep_time / time : 0.0;
          if (s == "sharded" && speedup_ok) sharded_speedup = fmt::format("{:.2f}x", speedup);
          row.push_back(fits ? units::format_seconds(time) : "no fit");
          const auto& mem = r.at("memory_bytes");
          csv += analysis::csv_line({sys.label, m.name, std::to_string(n), s, fits ? "1" : "0",
                                     fits ? analysis::num(time) : "", speedup_ok ? analysis::num(speedup) : "",
                                     analysis::num(r.at("forward_s").get<double>()),
                                     analysis::num(r.at("backward_s").get<double>()),
                                     analysis::num(r.at("exposed_comm_s").get<double>()),
                                     analysis::num(r.at("update_s").get<double>()),
                                     fits ? analysis::num(r.at("mfu").get<double>()) : "",
                                     analysis::num(mem.at("peak").get<double>())});
          fig.panels[panel].hbm_bytes = r.at("hbm_bytes").get<std::uint64_t>();
          fig.points.push_back({panel, n, s, fits, time, r.at("forward_s").get<double>(), r.at("backward_s").get<double>(),
                                r.at("exposed_comm_s").get<double>(), r.at("update_s").get<double>(),
                                mem.at("params").get<double>(), mem.at("grads").get<double>(),
                                mem.at("optimizer").get<double>(), mem.at("activations").get<double>(),
                                mem.at("buffers").get<double>()});
        }
        row.push_back(sharded_speedup);
        t.add(row);
      }
      fmt::print("{}", t.str());
    }
  }
  std::filesystem::create_directories(o.out_dir);
  analysis::write_file(o.out_dir + "/study.csv", csv, "--out");
  // The figures: each drawn from its own CSV by its own script (analysis/plot/study_figures.hpp).
  const std::pair<const char*, std::string> figures[] = {
      {"speedup", plot::speedup_csv(fig)}, {"breakdown", plot::breakdown_csv(fig)}, {"memory", plot::memory_csv(fig)}};
  analysis::write_file(o.out_dir + "/speedup.gp", plot::speedup_gp(fig), "--out");
  analysis::write_file(o.out_dir + "/breakdown.gp", plot::breakdown_gp(fig), "--out");
  analysis::write_file(o.out_dir + "/memory.gp", plot::memory_gp(fig), "--out");
  for (const auto& [name, data] : figures) analysis::write_file(fmt::format("{}/{}.csv", o.out_dir, name), data, "--out");
  fmt::print("\nwrote {0}/study.csv (every step) and the figure data {0}/speedup.csv, breakdown.csv, memory.csv "
             "with their gnuplot scripts (.gp)\n",
             o.out_dir);
  for (const auto& [name, data] : figures) {
    const auto failure = plot::run_gnuplot_in(o.out_dir, std::string(name) + ".gp");
    if (failure) {
      fmt::print("{}; the CSVs are complete (plot with `gnuplot {}.gp` in {})\n", *failure, name, o.out_dir);
      if (failure->find("not installed") != std::string::npos) break;
    } else {
      fmt::print("wrote {0}/{1}.svg and {0}/{1}.png\n", o.out_dir, name);
    }
  }
  return 0;
}

namespace {

void setup_study(CLI::App& root) {
  auto o = std::make_shared<StudyOptions>();
  auto* sub = root.add_subcommand("study", "Flagship study: replicated vs sharded vs ZeRO on a TPU v3 pod and DGX H100");
  sub->add_option("--out", o->out_dir, "Output folder for study.csv and the figures (speedup, breakdown, memory: .csv .gp .svg .png)");
  sub->add_flag("--quick", o->quick, "Only 16 and 64 devices");
  sub->callback([o] { exit_status() = run_flagship_study(*o); });
  // `shardsim` with no arguments (the README's main job) runs this study on its defaults.
  default_job() = [] { return run_flagship_study(StudyOptions{}); };
}

const Registration reg{"study", 5, setup_study};

}  // namespace
}  // namespace shardsim::cli
