// shardsim collective: predicts one collective over a size range on a topology, with the
// analytical or the flow evaluator (DESIGN 4), and prints time, algbw, busbw (nccl-tests
// definitions, DESIGN 2) and the bandwidth lower bound. With --groups, the same collective on
// several process groups at once: at flow fidelity on one shared flow network (DESIGN 8), at
// analytical fidelity each group's closed form alone.
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <numeric>

#include "analysis/cli/command.hpp"
#include "analysis/commands/collective_run.hpp"
#include "analysis/output/table.hpp"
#include "analysis/output/timeline.hpp"
#include "models/collectives/algorithm.hpp"
#include "analysis/scenario/scenario.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"

namespace shardsim::cli {
namespace {

struct CollectiveCliOptions {
  CollectiveOptions run;
  std::string groups;  // --groups text; run.groups is set when the flag was given
  bool json = false;
  std::string csv;
};

void print_table(const std::vector<CollectiveResult>& rows, const CollectiveOptions& o) {
  if (rows.empty()) return;
  const auto& first = rows.front();
  const bool multi = o.groups.has_value();
  if (multi) {
    fmt::print("# {} on {}, groups {}, algorithm {}, fidelity {}: {}\n", o.op, first.topology, *o.groups, o.algorithm,
               o.fidelity,
               o.fidelity == "flow" ? "all groups at once on one shared flow network (max-min)"
                                    : "each group's closed form alone, no contention (use --fidelity flow)");
  } else {
    fmt::print("# {} on {} ({} ranks), algorithm {}, fidelity {}\n", o.op, first.topology, first.ranks, o.algorithm,
               o.fidelity);
  }
  std::vector<std::string> header{"size", "algorithm", "time", "algbw GB/s", "busbw GB/s", "lower bound", "of bound"};
  if (multi) header.insert(header.begin() + 1, "group");
  analysis::Table t(header);
  for (const auto& r : rows) {
    std::vector<std::string> row{units::format_bytes(r.size_bytes), r.algorithm, units::format_seconds(r.time_s),
                                 fmt::format("{:.2f}", r.algbw_GBps), fmt::format("{:.2f}", r.busbw_GBps),
                                 units::format_seconds(r.lower_bound_s),
                                 fmt::format("{:.0f}%", r.time_s > 0 ? 100.0 * r.lower_bound_s / r.time_s : 0.0)};
    if (multi) row.insert(row.begin() + 1, format_ranks(r.group));
    t.add(row);
  }
  fmt::print("{}", t.str());
  if (o.algorithm == "auto") {
    for (const auto& r : rows) {
      fmt::print("auto @ {}{}: {}\n", units::format_bytes(r.size_bytes),
                 multi ? ", group " + format_ranks(r.group) : std::string(), r.why);
    }
  }
}

void run_collective_cli(const CollectiveCliOptions& o) {
  auto rows = run_collective(o.run);
  if (o.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : rows) arr.push_back(to_json(r));
    std::cout << arr.dump(2) << "\n";
  } else {
    print_table(rows, o.run);
  }
  if (!o.csv.empty()) {
    std::string out = analysis::csv_line(csv_header());
    for (const auto& r : rows) out += analysis::csv_line(csv_row(r));
    analysis::write_file(o.csv, out, "--csv");
  }
}

void setup_collective(CLI::App& root) {
  auto o = std::make_shared<CollectiveCliOptions>();
  auto* sub = root.add_subcommand("collective", "Predict a collective's time over a size range on a topology");
  sub->add_option("--topology,-t", o->run.topology,
                  "Preset (tpu-v3-1024, dgx-h100-64, ...), JSON file, or builder spec (torus:dims=32x32,bw=100GB/s,lat=1us)")
      ->required();
  sub->add_option("--op", o->run.op, "allreduce | reducescatter | allgather | broadcast | reduce | alltoall | sendrecv")
      ->default_val("allreduce");
  sub->add_option("--bytes,-b", o->run.bytes, "Size or range: 64MiB, 1K:1G:x4, 1M:8M:+1M, 1K,1M")->default_val("64MiB");
  sub->add_option("--ranks,-n", o->run.ranks, "Ranks (the first N devices; default all)");
  sub->add_option("--ranks-per-node", o->run.ranks_per_node,
                  "Ranks on each node (block placement over the topology's nodes): --ranks 2 --ranks-per-node 1 is "
                  "2 nodes x 1 GPU (default: the first --ranks devices)")
      ->check(CLI::Range(1, 1 << 24));
  sub->add_option("--algorithm,-a", o->run.algorithm, "Algorithm name or auto (see shardsim list algorithms)")
      ->default_val("auto");
  sub->add_option("--nccl-algo", o->run.nccl_algo,
                  "With auto on a GPU topology: the NCCL algorithms NCCL may choose from, as NCCL_ALGO (Ring,Tree,NVLS,"
                  "NVLSTree,CollNetDirect,CollNetChain,PAT)");
  sub->add_option("--fidelity", o->run.fidelity, "analytical | flow")
      ->default_val("analytical")
      ->check(CLI::IsMember({"analytical", "flow"}));
  sub->add_option("--chunks", o->run.chunks, "Pipelining chunks (0 = algorithm default)")->default_val(0);
  sub->add_option("--reduce-bw", o->run.reduce_bw, "Local reduction throughput per rank (e.g. 1TB/s; default free)");
  sub->add_option("--step-overhead", o->run.step_overhead, "Software overhead per step (e.g. 5us; default 0)");
  sub->add_option("--profile", o->run.profile,
                  "Calibration profile (shardsim calibrate): calibrated bandwidth per link class, alpha as step overhead")
      ->check(CLI::ExistingFile);
  sub->add_flag("--json", o->json, "Print a JSON array instead of a table");
  sub->add_option("--csv", o->csv, "Also write the rows as CSV");
  sub->add_option("--timeline", o->run.timeline, "Write a Perfetto/Chrome trace of the flow run (one size)");
  auto* groups = sub->add_option(
      "--groups", o->groups,
      "Run the collective on several process groups at once: groups separated by ';', ranks as comma lists and "
      "ranges (\"0-7;8-15\"), or stride:K (K rail groups i, i+K, i+2K, ... of the first --ranks devices). Flow "
      "fidelity: one shared flow network, groups that share links slow each other (max-min). Analytical: each "
      "group's closed form, no contention");
  sub->callback([o, groups] {
    if (groups->count() > 0) o->run.groups = o->groups;
    run_collective_cli(*o);
  });
}

const Registration reg{"collective", 10, setup_collective};

void print_algorithms() {
  for (const auto& a : coll::algorithms()) {
    std::string ops;
    for (auto k : a->ops()) ops += (ops.empty() ? "" : ", ") + std::string(coll::to_string(k));
    fmt::print("{:<20} {}\n{:<20} ops: {}\n", a->name(), a->description(), "", ops);
    for (const auto& p : a->params()) {
      fmt::print("{:<20} --{} ({}{}{}, default {}): {}\n", "", p.key, p.type, p.unit.empty() ? "" : ", ",
                 p.unit, p.default_value, p.doc);
    }
  }
}

const ListRegistration list_algorithms{"algorithms", "collective algorithms", print_algorithms};

const analysis::ScenarioRegistration scenario{analysis::ScenarioCommand{
    "collective",
    {"topology", "op", "bytes", "ranks", "ranks-per-node", "algorithm", "nccl-algo", "fidelity", "chunks", "reduce-bw", "step-overhead", "profile",
     "groups"},
    [](const nlohmann::json& flags) {
      auto o = collective_options_from_json(flags);
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& r : run_collective(o)) arr.push_back(to_json(r));
      return arr;
    }}};

}  // namespace
}  // namespace shardsim::cli
