// shardsim validate RECORDS|LOGS [--topology T] [--profile P] [--out DIR]: predicted vs measured
// per record and size, median and p90 absolute error (analysis/validation/validate.hpp).
#include <fmt/format.h>

#include <filesystem>

#include "analysis/cli/command.hpp"
#include "analysis/validation/published.hpp"
#include "analysis/validation/validate.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"
#include "traces/logs/parse.hpp"

namespace shardsim::cli {
namespace {

struct ValidateOptions {
  std::vector<std::string> files;
  std::string topology, profile, out, algorithm, collective, min_bytes = "0", published;
  int ranks = 0, ranks_per_node = 0, gpus_per_thread = 0;
  bool analytical = false;
  double max_median = 0;
};

void run_validate(const ValidateOptions& o) {
  if (!o.published.empty()) {
    if (!o.files.empty()) throw ConfigError("--published", "with record files", "either --published INDEX or records");
    const auto r = validation::predict_published(o.published);
    const auto s = validation::summarize_published(r);
    fmt::print("# shardsim validate --published {}: collective --algorithm auto (NCCL model on GPU topologies), "
               "nccl-tests in-place columns, signed errors (predicted / measured - 1)\n\n{}",
               o.published, validation::published_table(r, s));
    return;
  }
  if (o.files.empty()) throw ConfigError("validate", "no records", "record files (JSONL or logs) or --published INDEX");
  logs::ParseOptions po;
  if (!o.collective.empty()) po.collective = o.collective;
  if (o.ranks > 0) po.ranks = o.ranks;
  std::vector<logs::BenchRecord> recs;
  for (const auto& f : o.files) {
    auto r = logs::parse_log_file(f, po);
    recs.insert(recs.end(), r.begin(), r.end());
  }
  validation::Options vo;
  if (!o.topology.empty()) vo.topology = o.topology;
  if (!o.profile.empty()) vo.profile = calib::load_profile(o.profile);
  if (!o.algorithm.empty()) vo.algorithm = o.algorithm;
  vo.analytical = o.analytical;
  if (o.ranks_per_node > 0) vo.ranks_per_node = o.ranks_per_node;
  if (o.gpus_per_thread > 0) vo.gpus_per_thread = o.gpus_per_thread;
  const auto rows = validation::predict(recs, vo);
  if (rows.empty()) throw ConfigError("validate", "no collective record", "records of allreduce, reducescatter, ...");
  const std::uint64_t min_b = o.min_bytes == "0" ? 0 : units::parse_bytes(o.min_bytes, "--min-bytes");
  const auto sums = validation::summarize(rows, min_b);
  fmt::print("# shardsim validate: {} model{}{}\n", o.analytical ? "analytical" : "flow",
             o.profile.empty() ? ", declared bandwidths (no profile)" : ", profile " + o.profile,
             min_b > 0 ? fmt::format(", summary over S >= {} B", min_b) : "");
  validation::print_report(rows, sums);
  if (!o.out.empty()) {
    std::filesystem::create_directories(o.out);
    const std::string csv = o.out + "/validation.csv";
    validation::write_csv(rows, csv);
    const std::string svg = validation::write_plot(csv, o.out);
    fmt::print("wrote {}{}\n", csv, svg.empty() ? " (gnuplot not found: plot script only)" : " and " + svg);
  }
  if (o.max_median > 0) {
    for (const auto& s : sums) {
      if (s.median_abs_error * 100 > o.max_median) {
        fmt::print(stderr, "shardsim: {} {} {}: median |error| {:.1f}% above --max-median-error {}%\n", s.topology,
                   s.collective, s.algorithm, 100 * s.median_abs_error, o.max_median);
        exit_status() = 3;
      }
    }
  }
}

void setup_validate(CLI::App& root) {
  auto o = std::make_shared<ValidateOptions>();
  auto* sub = root.add_subcommand("validate", "Predict measured records/logs and report the error");
  sub->add_option("records", o->files, "JSONL records or benchmark logs (nccl-tests, OSU)")->check(CLI::ExistingFile);
  sub->add_option("--published", o->published,
                  "Predict the published corpus of this index.json (tests/data/published/collectives/index.json) "
                  "and print the per-file error table")
      ->check(CLI::ExistingFile);
  sub->add_option("--topology", o->topology, "Topology the measurements ran on (overrides the records')");
  sub->add_option("--profile", o->profile, "Calibration profile (shardsim calibrate)")->check(CLI::ExistingFile);
  sub->add_option("--algorithm", o->algorithm,
                  "Model algorithm for records that name none; auto: NCCL's choice on GPU topologies, the "
                  "smallest closed form elsewhere");
  sub->add_option("--ranks-per-node", o->ranks_per_node,
                  "Ranks on each node of the topology (block placement); default: the records' where the topology "
                  "has nodes")
      ->check(CLI::Range(1, 1 << 24));
  sub->add_option("--collective", o->collective, "Collective, for logs that do not name it");
  sub->add_option("--ranks", o->ranks, "Ranks, for logs that do not list them")->check(CLI::Range(1, 1 << 24));
  sub->add_option("--gpus-per-thread", o->gpus_per_thread,
                  "nccl-tests -g of logs without the 'nGpus' header line (one thread launching for that many GPUs "
                  "floors NCCL's time); default: the log's")
      ->check(CLI::Range(1, 1 << 16));
  sub->add_option("--min-bytes", o->min_bytes, "Summaries over records of at least this size");
  sub->add_flag("--analytical", o->analytical, "Closed-form model instead of the flow model");
  sub->add_option("--max-median-error", o->max_median, "Exit 3 when a group's median |error| exceeds this (percent)");
  sub->add_option("--out", o->out, "Directory for validation.csv and the plot");
  sub->callback([o] { run_validate(*o); });
}

const Registration reg{"validate", 62, setup_validate};

}  // namespace
}  // namespace shardsim::cli
