// shardsim step: one data-parallel training step of a zoo model or a trace on a topology
// (DESIGN 5): breakdown, memory, MFU. A trace that records collectives is replayed with them
// (strategy `trace`, the default for such a trace); a weight-update strategy replaces them.
// The flags -> result path is the `step` scenario command (analysis/scenario), shared with
// `compare`, `study` and sweeps. Also registers `shardsim list models|devices|strategies|
// optimizers`.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "analysis/calibration/profile.hpp"
#include "analysis/cli/command.hpp"
#include "analysis/cli/json_flags.hpp"
#include "analysis/output/table.hpp"
#include "analysis/output/timeline.hpp"
#include "analysis/plan/fit.hpp"
#include "analysis/scenario/scenario.hpp"
#include "models/step/step.hpp"
#include "models/step/topology_comm.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"
#include "topologies/load.hpp"
#include "traces/trace/workload.hpp"
#include "traces/zoo/zoo.hpp"

namespace shardsim::cli {
namespace {

using nlohmann::json;
using flags::flag_bool;
using flags::flag_str;
using flags::flag_uint;
using flags::show;

const std::vector<std::string> kStepKeys = {
    "model", "trace", "topology", "device", "strategy", "optimizer", "batch-per-device", "seq", "fidelity",
    "precision", "dp", "grad-accum", "checkpointing", "bucket", "shard-group", "no-defer", "no-fusion",
    "no-prefetch", "algorithm", "compute", "timeline", "profile", "no-flash-attention"};

void reject_unknown(const json& flags, const std::vector<std::string>& keys, const std::string& cmd) {
  if (!flags.is_object()) throw ConfigError(cmd, flags.dump(), "an object of flags");
  for (const auto& [k, v] : flags.items()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      std::string valid;
      for (const auto& x : keys) valid += (valid.empty() ? "" : ", ") + x;
      throw ConfigError(cmd, fmt::format("unknown flag '{}'", k), "one of " + valid);
    }
  }
}

// Scales a trace recorded at one batch to another: FLOPs, bytes, saved activations and measured
// durations grow linearly with the samples (first-order; weights do not, a small error).
void scale_trace(trace::Trace& t, std::uint64_t batch) {
  if (batch == t.batch_per_replica) return;
  const double r = static_cast<double>(batch) / static_cast<double>(t.batch_per_replica);
  for (auto& op : t.ops) {
    op.flops *= r;
    op.bytes *= r;
    op.activation_bytes = static_cast<std::uint64_t>(static_cast<double>(op.activation_bytes) * r);
    if (op.duration_s) *op.duration_s *= r;
  }
  t.batch_per_replica = batch;
}

json memory_json(const memory::MemoryBreakdown& m) {
  return {{"params", m.params}, {"grads", m.grads}, {"optimizer", m.optimizer}, {"activations", m.activations},
          {"buffers", m.buffers}, {"peak", m.peak}};
}

// The `step` scenario: flags (keys = long flag names) -> one result object.
json run_step_flags(const json& flags, std::vector<step::Interval>* timeline) {
  reject_unknown(flags, kStepKeys, "step");
  const std::string model = flag_str(flags, "model", ""), trace_file = flag_str(flags, "trace", "");
  if (model.empty() == trace_file.empty()) throw ConfigError("--model/--trace", "both or neither given", "exactly one of them");
  const std::string topo_spec = flag_str(flags, "topology", "");
  if (topo_spec.empty()) throw ConfigError("--topology", "missing", "a topology preset, JSON file or builder spec");
  if (flags.contains("batch-per-device") && flags.at("batch-per-device").is_number() &&
      flags.at("batch-per-device").get<double>() <= 0) {
    throw ConfigError("--batch-per-device", show(flags.at("batch-per-device")), "a positive batch");
  }
  if (flags.contains("seq") && flags.at("seq").is_number() && flags.at("seq").get<double>() <= 0) {
    throw ConfigError("--seq", show(flags.at("seq")), "a positive sequence length");
  }
  step::StepConfig c;
  // Default: `trace` for a trace that records collectives (they are replayed), else replicated.
  const std::string strategy_name = flag_str(flags, "strategy", "");
  std::optional<step::Strategy> strategy;
  if (!strategy_name.empty()) strategy = step::strategy_from_string(strategy_name, "--strategy", step::StrategySet::with_trace);
  if (strategy == step::Strategy::trace && !model.empty()) {
    throw ConfigError("--strategy", fmt::format("trace with --model {}", model),
                      "--trace FILE (the trace strategy replays a trace's recorded collectives; a zoo model records none)");
  }
  c.optimizer = &opt::find_optimizer(flag_str(flags, "optimizer", "adam"), "--optimizer");
  c.precision = opt::precision_from_string(flag_str(flags, "precision", "mixed"), "--precision");
  const auto fidelity = step::fidelity_from_string(flag_str(flags, "fidelity", "analytical"), "--fidelity");
  const std::string compute_mode = flag_str(flags, "compute", "roofline");
  if (compute_mode != "roofline" && compute_mode != "measured") {
    throw ConfigError("--compute", fmt::format("unknown compute model '{}'", compute_mode), "one of roofline, measured");
  }
  c.measured_compute = compute_mode == "measured";
  c.grad_accum = static_cast<std::uint32_t>(flag_uint(flags, "grad-accum", 1, "a positive number of micro-batches"));
  c.checkpointing = flag_bool(flags, "checkpointing");
  c.defer_allgather = !flag_bool(flags, "no-defer");
  c.fusion = !flag_bool(flags, "no-fusion");
  c.prefetch = !flag_bool(flags, "no-prefetch");
  if (flags.contains("bucket")) c.bucket_bytes = units::parse_bytes(flag_str(flags, "bucket", ""), "--bucket");
  c.record_timeline = timeline != nullptr;

  const topo::Topology topo = topo::make_topology(topo_spec, "--topology");
  const std::string device_name = flag_str(flags, "device", "");
  if (device_name.empty() && topo.device_model.empty()) {
    throw ConfigError("--device", fmt::format("missing, and topology '{}' names no device", topo.name),
                      "a device (see shardsim list devices)");
  }
  const auto& dev = device_name.empty() ? compute::device_for_model(topo.device_model, "--topology")
                                        : compute::find_device(device_name, "--device");

  trace::Trace tr;
  std::uint64_t batch = 0;
  if (!model.empty()) {
    const auto& m = zoo::find_model(model, "--model");
    batch = flag_uint(flags, "batch-per-device", 0, "a positive batch");
    if (batch == 0) throw ConfigError("--batch-per-device", "missing", "a positive batch");
    std::optional<bool> flash;
    if (flag_bool(flags, "no-flash-attention")) flash = false;
    tr = zoo::generate(m, batch, flag_uint(flags, "seq", 0, "a positive sequence length"), flash);
  } else {
    tr = trace::load_trace(trace_file);
    batch = flag_uint(flags, "batch-per-device", tr.batch_per_replica, "a positive batch");
    scale_trace(tr, batch);
  }
  const auto w = trace::to_workload(tr);
  const std::uint64_t trace_collectives = w.recorded_collectives();
  c.strategy = strategy.value_or(trace_collectives > 0 ? step::Strategy::trace : step::Strategy::replicated);
  const bool replay = c.strategy == step::Strategy::trace;

  // Replay: the job the trace recorded spans its largest collective group (a larger group than
  // the topology is reported by the step model, naming the op).
  std::uint64_t dp_default = topo.num_devices();
  if (replay) {
    std::uint64_t largest = 1;
    for (const auto& o : w.recorded) {
      if (o.collective) largest = std::max<std::uint64_t>(largest, o.collective->group_size);
    }
    dp_default = std::min<std::uint64_t>(largest, topo.num_devices());
  }
  c.dp = flag_uint(flags, "dp", dp_default, "a positive data-parallel size");
  if (c.dp > topo.num_devices()) {
    throw ConfigError("--dp", fmt::format("{} ranks on a topology of {} devices", c.dp, topo.num_devices()),
                      "at most the topology's device count");
  }
  c.shard_group = flag_uint(flags, "shard-group", 0, "a positive subgroup size that divides the data-parallel size");
  step::validate(c);

  // A recorded collective has no dtype in the native trace: it is costed with the element size
  // of `shardsim collective` (CollectiveOp's default), so both commands give the same time.
  // --profile (shardsim calibrate): collectives run on the calibrated topology, with the
  // profile's alpha as step overhead (calib::apply_profile, as `shardsim collective` does).
  std::optional<calib::AppliedProfile> applied;
  const std::string profile = flag_str(flags, "profile", "");
  if (!profile.empty()) applied = calib::apply_profile(topo, calib::load_profile(profile), {}, "--profile");
  step::TopologyComm comm(applied ? applied->topology : topo, fidelity, flag_str(flags, "algorithm", "auto"),
                          applied ? applied->cost : coll::CostParams{},
                          replay ? coll::CollectiveOp{}.element_bytes : 2);
  const auto r = step::simulate_step(w, dev, c, comm);
  if (timeline) *timeline = r.timeline;

  json out;
  out["strategy"] = r.strategy;
  out["model"] = tr.name;
  out["topology"] = topo.name;
  if (!profile.empty()) out["profile"] = profile;
  out["device"] = dev.name;
  out["dp"] = c.dp;
  out["optimizer"] = c.optimizer->name;
  out["precision"] = opt::to_string(c.precision);
  out["batch_per_device"] = batch;
  out["seq"] = tr.seq_len;
  out["params"] = w.parameter_count();
  out["fits"] = r.fits;
  // Never a plain time for a configuration that does not fit (issue 3): the time it would
  // take is kept under its own name.
  out["step_time_s"] = r.fits ? json(r.step_time_s) : json(nullptr);
  out["mfu"] = r.fits ? json(r.mfu) : json(nullptr);
  out["time_if_it_fit_s"] = r.step_time_s;
  out["forward_s"] = r.forward_s;
  out["backward_s"] = r.backward_s;
  out["exposed_comm_s"] = r.exposed_comm_s;
  out["update_s"] = r.update_s;
  out["comm_s"] = r.comm_s;
  out["comm_bytes"] = r.comm_bytes;
  out["collectives"] = r.collectives;
  out["collective_evaluations"] = comm.evaluations();
  out["ranks"] = r.ranks;                      // devices in the step
  out["ranks_simulated"] = r.ranks_simulated;  // distinct rank graphs executed (1: folded)
  out["events"] = r.events;
  out["samples_per_s"] = r.fits ? json(static_cast<double>(batch * c.grad_accum * c.dp) / r.step_time_s) : json(nullptr);
  out["padding_elements"] = r.padding_elements;
  out["padding_fraction"] = r.padding_fraction;
  out["updated_elements"] = r.updated_elements;
  out["hbm_bytes"] = r.hbm_bytes;
  out["memory_bytes"] = memory_json(r.memory);
  out["trace_collectives"] = trace_collectives;
  out["dropped_trace_collectives"] = replay ? 0 : w.dropped_collectives;
  out["config"] = flags;
  out["config"]["strategy"] = r.strategy;  // the effective one (a default depends on the trace)
  return out;
}

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
  std::string model, trace, topology, device, strategy, optimizer = "adam", precision = "mixed";
  std::string fidelity = "analytical", algorithm = "auto", compute = "roofline", bucket, timeline, profile;
  double batch = 0, seq = 0;
  std::uint64_t dp = 0, grad_accum = 1, shard_group = 0;
  bool checkpointing = false, no_defer = false, no_fusion = false, no_prefetch = false, json_out = false;
  bool no_flash = false;
};

json to_flags(const StepCliOptions& o, CLI::App* sub) {
  json f;
  if (!o.model.empty()) f["model"] = o.model;
  if (!o.trace.empty()) f["trace"] = o.trace;
  f["topology"] = o.topology;
  if (!o.device.empty()) f["device"] = o.device;
  if (!o.strategy.empty()) f["strategy"] = o.strategy;
  f["optimizer"] = o.optimizer;
  f["precision"] = o.precision;
  f["fidelity"] = o.fidelity;
  f["algorithm"] = o.algorithm;
  f["compute"] = o.compute;
  if (!o.profile.empty()) f["profile"] = o.profile;
  if (sub->count("--batch-per-device")) f["batch-per-device"] = o.batch;
  if (sub->count("--seq")) f["seq"] = o.seq;
  if (o.dp) f["dp"] = o.dp;
  f["grad-accum"] = o.grad_accum;
  if (o.shard_group) f["shard-group"] = o.shard_group;
  if (!o.bucket.empty()) f["bucket"] = o.bucket;
  f["checkpointing"] = o.checkpointing;
  f["no-defer"] = o.no_defer;
  f["no-fusion"] = o.no_fusion;
  f["no-prefetch"] = o.no_prefetch;
  if (o.no_flash) f["no-flash-attention"] = true;
  return f;
}

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

void add_step_options(CLI::App* sub, StepCliOptions& o) {
  sub->add_option("--model,-m", o.model, "Zoo model (shardsim list models)");
  sub->add_option("--trace", o.trace, "Native trace JSON (docs/trace-format.md)");
  sub->add_option("--topology,-t", o.topology, "Topology preset, JSON file or builder spec")->required();
  sub->add_option("--device,-d", o.device, "Device (default: the topology's; shardsim list devices)");
  sub->add_option("--strategy,-s", o.strategy,
                  "Strategy (shardsim list strategies; default: trace for a --trace with collectives, else replicated)");
  sub->add_option("--optimizer,-o", o.optimizer, "Optimizer (shardsim list optimizers)");
  sub->add_option("--precision", o.precision, "mixed | fp32");
  sub->add_option("--batch-per-device,-b", o.batch, "Samples per device per micro-batch");
  sub->add_option("--seq", o.seq, "Sequence length (default: the model's)");
  sub->add_option("--dp", o.dp, "Data-parallel size (default: every device of the topology)");
  sub->add_option("--fidelity", o.fidelity, "analytical | flow");
  sub->add_option("--algorithm,-a", o.algorithm, "Collective algorithm or auto");
  sub->add_option("--profile", o.profile,
                  "Calibration profile (shardsim calibrate): calibrated bandwidth per link class, alpha as step overhead");
  sub->add_option("--compute", o.compute, "roofline | measured (trace durations)");
  sub->add_option("--grad-accum", o.grad_accum, "Micro-batches per step");
  sub->add_option("--bucket", o.bucket, "Gradient bucket / fused buffer size (default 25MiB)");
  sub->add_option("--shard-group,-k", o.shard_group, "sharded: shard over subgroups of k ranks (k divides N)");
  sub->add_flag("--checkpointing", o.checkpointing, "Activation checkpointing per unit");
  sub->add_flag("--no-defer", o.no_defer, "sharded: all-gather at step end, not in the next forward");
  sub->add_flag("--no-fusion", o.no_fusion, "sharded: one padded buffer per tensor");
  sub->add_flag("--no-prefetch", o.no_prefetch, "zero3: no prefetch of the next unit's all-gather");
  sub->add_flag("--no-flash-attention", o.no_flash, "Unfused attention: the s^2 scores stored and timed (default: flash for decoders)");
  sub->add_flag("--json", o.json_out, "Print JSON");
}

void setup_step(CLI::App& root) {
  auto o = std::make_shared<StepCliOptions>();
  auto* sub = root.add_subcommand("step", "One data-parallel training step: breakdown, memory, MFU");
  add_step_options(sub, *o);
  sub->add_option("--timeline", o->timeline, "Write a Perfetto/Chrome trace: one track group per rank, streams as threads");
  sub->callback([o, sub] {
    const json flags = to_flags(*o, sub);
    std::vector<step::Interval> tl;
    const json r = run_step_flags(flags, o->timeline.empty() ? nullptr : &tl);
    if (!o->timeline.empty()) write_timeline(tl, r, o->timeline);
    if (o->json_out) std::cout << r.dump(2) << "\n";
    else fmt::print("{}", describe_step(r));
  });
}

const Registration reg{"step", 30, setup_step};
const analysis::ScenarioRegistration scenario{
    {"step", kStepKeys, [](const json& flags) { return run_step_flags(flags, nullptr); }}};

const ListRegistration list_models{"models", "zoo models for --model", [] {
  analysis::Table t({"name", "parameters", "published", "default seq", "description", "source"});
  for (const auto& m : zoo::models()) {
    const auto p = zoo::generate(m, 1, m.resnet ? 0 : 8).parameter_count();
    t.add({m.name, fmt::format("{:.4g}", static_cast<double>(p)), fmt::format("{:.4g}", m.published_params),
           m.resnet ? "-" : std::to_string(m.default_seq), m.description, m.source});
  }
  fmt::print("{}", t.str());
}};

const ListRegistration list_devices{"devices", "accelerator presets for --device", [] {
  analysis::Table t({"name", "bf16 TFLOP/s", "fp32 TFLOP/s", "HBM", "HBM GB/s", "description", "source"});
  for (const auto& d : compute::device_presets()) {
    t.add({d.name, fmt::format("{:.1f}", d.peak(compute::MathType::bf16) / 1e12),
           fmt::format("{:.1f}", d.peak(compute::MathType::fp32) / 1e12), units::format_bytes(d.hbm_bytes),
           fmt::format("{:.0f}", d.hbm_Bps / 1e9), d.description, d.source});
  }
  fmt::print("{}", t.str());
}};

const ListRegistration list_strategies{"strategies", "weight-update strategies (and trace replay) for --strategy", [] {
  auto print = [](const step::StrategyInfo& s) {
    fmt::print("{:<11} {} ({})\n", s.name, s.description, s.source);
    for (const auto& p : s.params) fmt::print("{:<11}   --{} ({}, default {}): {}\n", "", p.key, p.type, p.default_value, p.doc);
  };
  for (const auto& s : step::strategies()) print(s);
  print(step::trace_strategy());
}};

const ListRegistration list_optimizers{"optimizers", "optimizers for --optimizer", [] {
  analysis::Table t({"name", "state B/param (mixed)", "update B/param", "FLOPs/param", "description", "source"});
  for (const auto& o : opt::optimizers()) {
    t.add({o.name, fmt::format("{:g}", opt::state_bytes_per_param(o, opt::Precision::mixed)),
           fmt::format("{:g}", opt::update_cost(o, opt::Precision::mixed, 1).bytes), fmt::format("{:g}", o.flops_per_param),
           o.description, o.source});
  }
  fmt::print("{}", t.str());
}};

}  // namespace
}  // namespace shardsim::cli
