// shardsim trace import|info: reads Chakra ET / JSON, Kineto Chrome traces and ASTRA-sim 1.0
// workloads (traces/importers/, docs/importers.md). `import` writes the native trace JSON
// (traces/trace/trace.hpp) that `shardsim step --trace` simulates; `info` summarises a file.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "analysis/cli/command.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"
#include "traces/importers/info.hpp"
#include "traces/importers/native.hpp"

namespace shardsim::cli {
namespace {

struct TraceImportOptions {
  std::string format;
  std::vector<std::string> files;
  std::string out;
  std::uint32_t group_size = 0;  // 0: from the trace
  std::string cycle_time = "1ns";
  std::int64_t device = -1;      // -1: lowest device id
  bool per_rank = false;         // chakra: format v2, every rank's own ops
  std::string comm_groups;       // chakra: pg_name -> ranks JSON (implies per_rank)
};

struct TraceInfoOptions {
  std::string file;
  std::string format;  // empty: detect
  bool json = false;
};

void run_import(const TraceImportOptions& o) {
  importers::ImportOptions io;
  if (o.group_size > 0) io.group_size = o.group_size;
  io.astra_cycle_s = units::parse_seconds(o.cycle_time, "--cycle-time");
  if (o.device >= 0) io.kineto_device = o.device;
  const auto f = importers::format_from_string(o.format, "--format");
  if (!o.comm_groups.empty() && f != importers::Format::chakra && f != importers::Format::chakra_json) {
    throw ConfigError("--comm-groups", fmt::format("with --format {}", o.format), "--format chakra or chakra-json");
  }
  if (o.per_rank && f == importers::Format::astra_v1) {
    throw ConfigError("--per-rank", "with --format astra-v1", "--format chakra, chakra-json or kineto (one file per rank)");
  }
  io.per_rank = o.per_rank;
  if (!o.comm_groups.empty()) io.comm_groups = importers::parse_comm_groups(importers::read_input(o.comm_groups), o.comm_groups);
  const auto t = importers::import_files(f, o.files, io);
  trace::save_trace(t, o.out);
  std::size_t colls = 0;
  double measured = 0;
  for (const auto& op : t.ops) {
    if (op.collective) ++colls;
    if (op.duration_s && !op.collective) measured += *op.duration_s;
  }
  const auto ranks = t.ranks();
  fmt::print("{}: {} ops ({} collectives, {} measured compute) from {} file(s){} -> {}\n", t.name, t.ops.size(), colls,
             units::format_seconds(measured), o.files.size(),
             t.version == 2 ? fmt::format(", {} ranks, {} process groups (format v2)", ranks.size(), t.process_groups.size())
                            : std::string(),
             o.out);
}

void run_info(const TraceInfoOptions& o) {
  std::optional<importers::Format> f;
  if (!o.format.empty()) f = importers::format_from_string(o.format, "--format");
  const auto info = importers::trace_info(o.file, f);
  if (o.json) {
    std::cout << info.to_json().dump(2) << "\n";
  } else {
    fmt::print("{}", info.to_text());
  }
}

void setup_trace(CLI::App& root) {
  auto* sub = root.add_subcommand("trace", "Import Chakra, Kineto and ASTRA-sim traces; summarise trace files");
  sub->require_subcommand(1);
  const std::vector<std::string> formats{"chakra", "chakra-json", "kineto", "astra-v1"};

  auto imp = std::make_shared<TraceImportOptions>();
  auto* i = sub->add_subcommand("import", "Convert a trace to the native trace JSON");
  i->add_option("--format", imp->format, "Input format")->required()->check(CLI::IsMember(formats));
  i->add_option("files", imp->files, "Input files (Chakra: one per rank)")->required()->check(CLI::ExistingFile);
  i->add_option("--out,-o", imp->out, "Native trace JSON to write")->required();
  i->add_option("--group-size", imp->group_size, "Ranks per collective (required for astra-v1 with collectives)")
      ->check(CLI::Range(1u, 1u << 24));
  i->add_option("--cycle-time", imp->cycle_time, "astra-v1: duration of one compute cycle")->capture_default_str();
  i->add_option("--device", imp->device, "kineto: GPU whose ops form the trace (default: the lowest id)")
      ->check(CLI::NonNegativeNumber);
  i->add_flag("--per-rank", imp->per_rank,
              "chakra, kineto: one file per rank, every rank's own ops, collectives on their process groups (native format v2)");
  i->add_option("--comm-groups", imp->comm_groups,
                "chakra: JSON {\"pg name\": [ranks]} (ASTRA-sim's comm group file); implies --per-rank")
      ->check(CLI::ExistingFile);
  i->callback([imp] { run_import(*imp); });

  auto info = std::make_shared<TraceInfoOptions>();
  auto* n = sub->add_subcommand("info", "Summarise a trace file: ops, collectives by type and size, compute time");
  n->add_option("file", info->file, "Trace file (format detected from its content)")->required()->check(CLI::ExistingFile);
  n->add_option("--format", info->format, "Force the input format")->check(CLI::IsMember(formats));
  n->add_flag("--json", info->json, "Print JSON");
  n->callback([info] { run_info(*info); });
}

const Registration reg{"trace", 60, setup_trace};

}  // namespace
}  // namespace shardsim::cli
