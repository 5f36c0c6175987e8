// shardsim study: the flagship study (README's main job). Replicated vs cross-replica
// sharded vs ZeRO stages for ResNet-50, BERT-large and GPT-3 1.3B / 13B, on a TPU v3 pod and
// a DGX H100 cluster over data-parallel sizes: prints the table, writes
// ./shardsim-out/study.csv (the source of truth), study.gp and, when gnuplot is installed,
// study.svg. Every point is the `step` scenario command (analytical fidelity).
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "analysis/cli/command.hpp"
#include "analysis/output/table.hpp"
#include "analysis/scenario/scenario.hpp"
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
  std::uint64_t batch;
  bool checkpointing;
  const char* why;
};

// Per-device batches as in the published runs: ResNet-50 32/chip (MLPerf v0.6 TPU v3 pod
// submissions used 32 per core pair); BERT-large 8 x 512 tokens; GPT-3 one 2048-token sequence
// per device with activation checkpointing (Narayanan et al. 2021 train GPT-3 with it).
const StudyModel kModels[] = {{"resnet50", 32, false, "224x224 images"},
                              {"bert-large", 8, false, "seq 512"},
                              {"gpt3-1.3b", 1, true, "seq 2048, checkpointing"},
                              {"gpt3-13b", 1, true, "seq 2048, checkpointing"}};

struct System {
  const char* label;
  const char* preset;  ///< preset prefix, "-<devices>" appended
};
const System kSystems[] = {{"TPU v3 pod", "tpu-v3"}, {"DGX H100 cluster", "dgx-h100"}};

}  // namespace

/// Runs the study; returns the exit status (0). Throws ConfigError when the output folder
/// cannot be written. The lead may point cli::default_job() at this.
int run_flagship_study(const StudyOptions& o) {
  const auto* step_cmd = analysis::find_scenario_command("step");
  if (step_cmd == nullptr) throw std::runtime_error("the step scenario command is not registered");
  const std::vector<std::uint64_t> sizes = o.quick ? std::vector<std::uint64_t>{16, 64}
                                                   : std::vector<std::uint64_t>{16, 64, 256, 1024};
  const char* strategies[] = {"replicated", "sharded", "zero1", "zero2", "zero3"};
  std::string csv = analysis::csv_line({"system", "model", "dp", "strategy", "fits", "step_time_s", "speedup_vs_replicated",
                                        "forward_s", "backward_s", "exposed_comm_s", "update_s", "mfu", "peak_memory_bytes"});
  fmt::print("shardsim flagship study: data-parallel training step, mixed-precision Adam, analytical collectives\n");
  for (const auto& sys : kSystems) {
    for (const auto& m : kModels) {
      fmt::print("\n== {} | {} ({}, batch {}/device)\n", sys.label, m.name, m.why, m.batch);
      analysis::Table t({"devices", "replicated", "sharded", "zero1", "zero2", "zero3", "sharded speedup"});
      for (auto n : sizes) {
        std::vector<std::string> row = {std::to_string(n)};
        double rep_time = 0;
        bool rep_fits = false;
        std::string sharded_speedup = "-";
        for (const char* s : strategies) {
          json f = {{"model", m.name}, {"topology", fmt::format("{}-{}", sys.preset, n)}, {"strategy", s},
                    {"optimizer", "adam"}, {"precision", "mixed"}, {"batch-per-device", m.batch},
                    {"checkpointing", m.checkpointing}};
          const json r = step_cmd->run(f);
          const bool fits = r.at("fits").get<bool>();
          const double time = r.at("time_if_it_fit_s").get<double>();
          if (std::string(s) == "replicated") {
            rep_time = time;
            rep_fits = fits;
          }
          const bool speedup_ok = fits && rep_fits;
          const double speedup = speedup_ok ? rep_time / time : 0.0;
          if (std::string(s) == "sharded" && speedup_ok) sharded_speedup = fmt::format("{:.2f}x", speedup);
          row.push_back(fits ? units::format_seconds(time) : "no fit");
          csv += analysis::csv_line({sys.label, m.name, std::to_string(n), s, fits ? "1" : "0",
                                     fits ? analysis::num(time) : "", speedup_ok ? analysis::num(speedup) : "",
                                     analysis::num(r.at("forward_s").get<double>()),
                                     analysis::num(r.at("backward_s").get<double>()),
                                     analysis::num(r.at("exposed_comm_s").get<double>()),
                                     analysis::num(r.at("update_s").get<double>()),
                                     fits ? analysis::num(r.at("mfu").get<double>()) : "",
                                     analysis::num(r.at("memory_bytes").at("peak").get<double>())});
        }
        row.push_back(sharded_speedup);
        t.add(row);
      }
      fmt::print("{}", t.str());
    }
  }
  std::filesystem::create_directories(o.out_dir);
  const std::string csv_path = o.out_dir + "/study.csv";
  analysis::write_file(csv_path, csv, "study");
  // One panel per system x model: step time against devices, one line per strategy (points
  // that do not fit are empty in the CSV and absent from the plot).
  std::string gp = "# shardsim flagship study: gnuplot " + o.out_dir + "/study.gp (reads study.csv)\n";
  gp += "set terminal svg size 1400,900 dynamic\nset output 'study.svg'\nset datafile separator ','\n";
  gp += "set logscale x 2\nset logscale y\nset xrange [8:2048]\nset key top left\nset xlabel 'data-parallel devices'\nset ylabel 'step time (s)'\n";
  gp += "set multiplot layout 2,4 title 'Weight-update sharding: step time per strategy (mixed-precision Adam)'\n";
  for (const auto& sys : kSystems) {
    for (const auto& m : kModels) {
      gp += fmt::format("set title '{} | {}'\nplot ", sys.label, m.name);
      bool first = true;
      for (const char* s : strategies) {
        gp += fmt::format("{}'study.csv' using (strcol(1) eq '{}' && strcol(2) eq '{}' && strcol(4) eq '{}' ? $3 : 1/0):6 "
                          "with linespoints title '{}'",
                          first ? "" : ", ", sys.label, m.name, s, s);
        first = false;
      }
      gp += "\n";
    }
  }
  gp += "unset multiplot\n";
  analysis::write_file(o.out_dir + "/study.gp", gp, "study");
  fmt::print("\nwrote {} and {}/study.gp\n", csv_path, o.out_dir);
  if (std::system("command -v gnuplot > /dev/null 2>&1") == 0) {
    const std::string cmd = fmt::format("cd '{}' && gnuplot study.gp", o.out_dir);
    if (std::system(cmd.c_str()) == 0) fmt::print("wrote {}/study.svg\n", o.out_dir);
    else fmt::print("gnuplot failed; the CSV is complete\n");
  } else {
    fmt::print("gnuplot not installed: plot with `gnuplot study.gp` in {}\n", o.out_dir);
  }
  return 0;
}

namespace {

void setup_study(CLI::App& root) {
  auto o = std::make_shared<StudyOptions>();
  auto* sub = root.add_subcommand("study", "Flagship study: replicated vs sharded vs ZeRO on a TPU v3 pod and DGX H100");
  sub->add_option("--out", o->out_dir, "Output folder for study.csv, study.gp, study.svg");
  sub->add_flag("--quick", o->quick, "Only 16 and 64 devices");
  sub->callback([o] { exit_status() = run_flagship_study(*o); });
  // `shardsim` with no arguments (the README's main job) runs this study on its defaults.
  default_job() = [] { return run_flagship_study(StudyOptions{}); };
}

const Registration reg{"study", 5, setup_study};

}  // namespace
}  // namespace shardsim::cli
