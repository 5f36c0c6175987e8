// shardsim step: one data-parallel training step of a zoo model or a trace on a topology
// (DESIGN 5): breakdown, memory, MFU. A trace that records collectives is replayed with them
// (strategy `trace`, the default for such a trace); a weight-update strategy replaces them.
// The options -> result path is the library's run_step (analysis/scenario/step_run.hpp),
// shared with `compare`, `study`, `plan` and sweeps; the flags come from its option table.
// Also registers `shardsim list models|devices|strategies|optimizers`.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include "analysis/cli/command.hpp"
#include "analysis/cli/step_flags.hpp"
#include "analysis/output/table.hpp"
#include "analysis/output/timeline.hpp"
#include "analysis/plan/fit.hpp"
#include "analysis/scenario/step_run.hpp"
#include "models/step/step.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"
#include "traces/zoo/zoo.hpp"

namespace shardsim::cli {
namespace {

using nlohmann::json;

// Text form of one step result, shared by step and compare.
std::string describe_step(const json& r) {
  const auto& m = r.at("memory_bytes");
  auto gib = [](const json& v) { return units::format_bytes(static_cast<std::uint64_t>(v.get<double>())); };
  std::string s = fmt::format("{} on {} ({} x {}), {} {} {}, batch {}/device\n", r.at("model").get<std::string>(),
                              r.at("topology").get<std::string>(), r.at("dp").get<std::uint64_t>(),
                              r.at("device").get<std::string>(), r.at("strategy").get<std::string>(),
                              r.at("optimizer").get<std::string>(), r.at("precision").get<std::string>(),
                              r.at("batch_per_device").get<std::uint64_t>());
  s += fmt::format("memory/device: params {}, grads {}, optimizer {}, activations {}, buffers {}; peak {} of {}\n",
                   gib(m.at("params")), gib(m.at("grads")), gib(m.at("optimizer")), gib(m.at("activations")),
                   gib(m.at("buffers")), gib(m.at("peak")), gib(r.at("hbm_bytes")));
  if (!r.at("fits").get<bool>()) {
    // What overflows and what the step would take if it fit (issue 17); no MFU, no throughput:
    // the step does not run.
    s += plan::does_not_fit_text(m, r.at("hbm_bytes").get<double>(), r.at("time_if_it_fit_s").get<double>()) + "\n";
    s += fmt::format("if it fit: forward {}, backward {}, exposed comm {}, update {}\n",
                     units::format_seconds(r.at("forward_s").get<double>()),
                     units::format_seconds(r.at("backward_s").get<double>()),
                     units::format_seconds(r.at("exposed_comm_s").get<double>()),
                     units::format_seconds(r.at("update_s").get<double>()));
    return s;
  }
  s += fmt::format("step {}: forward {}, backward {}, exposed comm {}, update {}; MFU {:.1f}%\n",
                   units::format_seconds(r.at("step_time_s").get<double>()),
                   units::format_seconds(r.at("forward_s").get<double>()),
                   units::format_seconds(r.at("backward_s").get<double>()),
                   units::format_seconds(r.at("exposed_comm_s").get<double>()),
                   units::format_seconds(r.at("update_s").get<double>()), 100.0 * r.at("mfu").get<double>());
  if (r.contains("samples")) {
    const auto& q = r.at("step_time_quantiles_s");
    s += fmt::format("{} sampled steps: mean {}, p50 {}, p90 {}, p99 {}, max {}\n", r.at("samples").get<std::uint64_t>(),
                     units::format_seconds(r.at("step_time_mean_s").get<double>()),
                     units::format_seconds(q.at("p50").get<double>()), units::format_seconds(q.at("p90").get<double>()),
                     units::format_seconds(q.at("p99").get<double>()), units::format_seconds(q.at("max").get<double>()));
  }
  if (r.contains("parallel")) {  // a --mesh step: where the time went, per axis; memory per stage
    const auto& p = r.at("parallel");
    const auto& a = p.at("axes");
    auto sec = [&](const char* k) { return units::format_seconds(a.at(k).get<double>()); };
    s += fmt::format("mesh dp={} tp={} pp={} cp={} ep={}, {}, recompute {}, {} micro-batches of {}: tp comm {}, "
                     "pp bubble {}, exposed dp {}, ep all-to-all {}, exposed cp {}\n",
                     p.at("mesh").at("dp").get<std::uint64_t>(), p.at("mesh").at("tp").get<std::uint64_t>(),
                     p.at("mesh").at("pp").get<std::uint64_t>(), p.at("mesh").at("cp").get<std::uint64_t>(),
                     p.at("mesh").at("ep").get<std::uint64_t>(), p.at("schedule").get<std::string>(),
                     p.at("recompute").get<std::string>(), p.at("micro_batches").get<std::uint64_t>(),
                     p.at("micro_batch").get<std::uint64_t>(), sec("tp_comm_s"), sec("pp_bubble_s"), sec("dp_exposed_s"),
                     sec("ep_alltoall_s"), sec("cp_exposed_s"));
    std::string peaks;
    for (const auto& st : p.at("stages")) peaks += (peaks.empty() ? "" : ", ") + gib(st.at("memory_bytes").at("peak"));
    s += "peak memory per stage: " + peaks + "\n";
  }
  if (r.at("strategy") == "trace") {
    s += fmt::format("replayed {} recorded collectives: communication {} in all\n", r.at("collectives").get<std::uint64_t>(),
                     units::format_seconds(r.at("comm_s").get<double>()));
  }
  if (r.at("padding_elements").get<std::uint64_t>() > 0) {
    s += fmt::format("padding: {} elements ({:.3g}% of the parameters)\n", r.at("padding_elements").get<std::uint64_t>(),
                     100.0 * r.at("padding_fraction").get<double>());
  }
  return s;
}

struct StepCliOptions {
  analysis::StepOptions step;
  std::string timeline, quantiles_csv;
  bool json_out = false;
};

// One track group (pid) per simulated rank, its streams as threads; a folded representative
// is labelled with the ranks it stands for.
void write_timeline(const std::vector<step::Interval>& iv, const json& result, const std::string& path) {
  analysis::ChromeTrace t;
  const auto ranks = result.at("ranks").get<std::uint64_t>();
  const bool folded = result.at("ranks_simulated").get<std::uint64_t>() == 1 && ranks > 1;
  std::vector<std::pair<int, std::uint32_t>> seen;
  for (const auto& i : iv) {
    if (std::find(seen.begin(), seen.end(), std::make_pair(i.rank, i.stream_index)) != seen.end()) continue;
    if (std::none_of(seen.begin(), seen.end(), [&](const auto& x) { return x.first == i.rank; })) {
      t.process(i.rank, folded ? fmt::format("rank {} (folded: ranks 0-{})", i.rank, ranks - 1) : fmt::format("rank {}", i.rank),
                i.rank);
    }
    seen.emplace_back(i.rank, i.stream_index);
    t.thread(i.rank, static_cast<int>(i.stream_index), i.stream_index == 0 ? "compute" : i.stream_index == 1 ? "communication" : i.stream);
  }
  for (const auto& i : iv) {
    t.slice(i.rank, static_cast<int>(i.stream_index), i.name, i.stream, Time::from_seconds(i.start_s), Time::from_seconds(i.end_s));
  }
  t.metadata("config", result.at("config"));
  analysis::write_file(path, t.str(), "--timeline");
}

// --quantiles-csv (issue 16): one row per statistic of the sampled step times, appended (the
// header when the file is new), so that runs at several sizes make one CSV for `shardsim plot
// FILE --x devices --y step_time_s --by statistic` (docs/reliability.md).
void append_quantiles(const json& r, const std::string& path) {
  if (!r.contains("samples")) throw ConfigError("--quantiles-csv", "without --samples N > 1", "--samples of at least 2 steps");
  const bool fresh = !std::ifstream(path).good();
  std::ofstream f(path, std::ios::app);
  if (!f) throw ConfigError("--quantiles-csv", fmt::format("cannot write '{}'", path), "a writable file");
  if (fresh) f << "devices,statistic,step_time_s,status\n";
  const auto dp = r.at("dp").get<std::uint64_t>();
  const auto& q = r.at("step_time_quantiles_s");
  f << fmt::format("{},mean,{:.6g},ok\n", dp, r.at("step_time_mean_s").get<double>());
  for (const char* k : {"p50", "p90", "p99", "max"}) f << fmt::format("{},{},{:.6g},ok\n", dp, k, q.at(k).get<double>());
}

void setup_step(CLI::App& root) {
  auto o = std::make_shared<StepCliOptions>();
  auto* sub = root.add_subcommand("step", "One data-parallel training step: breakdown, memory, MFU");
  add_step_flags(sub, o->step);
  sub->get_option("--topology")->required();
  sub->add_option("--timeline", o->timeline, "Write a Perfetto/Chrome trace: one track group per rank, streams as threads");
  sub->add_option("--quantiles-csv", o->quantiles_csv,
                  "With --samples: append devices,statistic,step_time_s rows (mean, p50, p90, p99, max) to this CSV");
  sub->add_flag("--json", o->json_out, "Print JSON");
  sub->callback([o] {
    const auto report = analysis::run_step(o->step, !o->timeline.empty());
    const json r = analysis::to_json(report);
    if (!o->timeline.empty()) write_timeline(report.result.timeline, r, o->timeline);
    if (!o->quantiles_csv.empty()) append_quantiles(r, o->quantiles_csv);
    if (o->json_out) std::cout << r.dump(2) << "\n";
    else fmt::print("{}", describe_step(r));
  });
}

const Registration reg{"step", 30, setup_step};

// The categories below print from their registries (sim/registry.hpp: name, summary, source,
// parameters), with the figures of each kind's typed table (entry i describes row i).
const ListRegistration list_models{zoo::model_registry().category(), zoo::model_registry().doc(), [] {
  analysis::Table t({"name", "parameters", "published", "default seq", "description", "source"});
  const auto& entries = zoo::model_registry().entries();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& m = zoo::models()[i];
    const auto p = zoo::generate(m, 1, m.resnet ? 0 : 8).parameter_count();
    t.add({entries[i].name, fmt::format("{:.4g}", static_cast<double>(p)), fmt::format("{:.4g}", m.published_params),
           m.resnet ? "-" : std::to_string(m.default_seq), entries[i].summary, entries[i].source});
  }
  fmt::print("{}", t.str());
}};

const ListRegistration list_devices{compute::device_registry().category(), compute::device_registry().doc(), [] {
  analysis::Table t({"name", "bf16 TFLOP/s", "fp32 TFLOP/s", "HBM", "HBM GB/s", "description", "source"});
  const auto& entries = compute::device_registry().entries();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& d = compute::device_presets()[i];
    t.add({entries[i].name, fmt::format("{:.1f}", d.peak(compute::MathType::bf16) / 1e12),
           fmt::format("{:.1f}", d.peak(compute::MathType::fp32) / 1e12), units::format_bytes(d.hbm_bytes),
           fmt::format("{:.0f}", d.hbm_Bps / 1e9), entries[i].summary, entries[i].source});
  }
  fmt::print("{}", t.str());
}};

const ListRegistration list_strategies{step::strategy_registry().category(), step::strategy_registry().doc(), [] {
  for (const auto& s : step::strategy_registry().entries()) {
    fmt::print("{:<11} {} ({})\n", s.name, s.summary, s.source);
    for (const auto& p : s.params) fmt::print("{:<11}   --{} ({}, default {}): {}\n", "", p.key, p.type, p.default_value, p.doc);
  }
}};

const ListRegistration list_optimizers{opt::optimizer_registry().category(), opt::optimizer_registry().doc(), [] {
  analysis::Table t({"name", "state B/param (mixed)", "update B/param", "FLOPs/param", "description", "source"});
  const auto& entries = opt::optimizer_registry().entries();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& o = opt::optimizers()[i];
    t.add({entries[i].name, fmt::format("{:g}", opt::state_bytes_per_param(o, opt::Precision::mixed)),
           fmt::format("{:g}", opt::update_cost(o, opt::Precision::mixed, 1).bytes), fmt::format("{:g}", o.flops_per_param),
           entries[i].summary, entries[i].source});
  }
  fmt::print("{}", t.str());
}};

}  // namespace
}  // namespace shardsim::cli
