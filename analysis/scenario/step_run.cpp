#include "analysis/scenario/step_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <optional>
#include <sstream>

#include "analysis/calibration/profile.hpp"
#include "analysis/scenario/step_parallel.hpp"
#include "models/strategy/strategy.hpp"
#include "models/step/topology_comm.hpp"
#include "models/step/variation.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"
#include "topologies/faults.hpp"
#include "topologies/load.hpp"
#include "traces/trace/workload.hpp"
#include "traces/zoo/zoo.hpp"

namespace shardsim::analysis {
namespace {

using nlohmann::json;

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

std::vector<std::string> parse_strategies(const std::string& list) {
  std::vector<std::string> out;
  if (list == "all") {
    for (const auto& s : step::strategies()) out.push_back(s.name);
    return out;
  }
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    // Validates, listing the valid names; `trace` (replay of a trace's own collectives) is
    // accepted here but not part of "all", which means the weight-update strategies.
    step::strategy_from_string(item, "--strategies", step::StrategySet::with_trace);
    out.push_back(item);
  }
  if (out.empty()) throw ConfigError("--strategies", "an empty list", "'all' or a comma list of strategies");
  return out;
}

}  // namespace

struct StepRunner::Cache {
  std::map<std::string, std::unique_ptr<topo::Topology>> topologies;  // by spec
  // Calibrated copies: by (spec, profile file).
  std::map<std::pair<std::string, std::string>, std::unique_ptr<calib::AppliedProfile>> profiles;
  std::map<std::tuple<const topo::Topology*, step::Fidelity, std::string, std::uint32_t>, std::unique_ptr<step::TopologyComm>>
      comms;
  struct Prepared {
    std::string name;
    std::uint64_t seq = 0;
    step::Workload workload;
  };
  std::map<std::tuple<std::string, std::uint64_t, std::uint64_t, bool, bool>, Prepared> zoo;  // by (model, batch, seq, unfused, eager)
  // Topologies with --faults applied: by (topology they degrade, spec).
  std::map<std::pair<const topo::Topology*, std::string>, std::unique_ptr<topo::Topology>> faulty;
};

StepRunner::StepRunner() : cache_(std::make_unique<Cache>()) {}

const topo::Topology& StepRunner::with_faults(const topo::Topology& t, const std::string& spec) {
  if (spec.empty()) return t;
  // Faults on the (calibrated) topology the collectives run on (topologies/faults.hpp).
  auto& slot = cache_->faulty[{&t, spec}];
  if (!slot) slot = std::make_unique<topo::Topology>(topo::apply_faults(t, topo::parse_faults(t, spec, "--faults")));
  return *slot;
}
StepRunner::~StepRunner() = default;

StepReport run_step(const StepOptions& o, bool record_timeline) { return StepRunner().run(o, record_timeline); }

StepReport StepRunner::run(const StepOptions& o, bool record_timeline) {
  validate_step_options(o);
  const bool has_model = o.model && !o.model->empty(), has_trace = o.trace && !o.trace->empty();
  if (has_model == has_trace) {
    throw ConfigError("--model/--trace", "both or neither given", "exactly one of them");
  }
  if (o.topology.empty()) throw ConfigError("--topology", "missing", "a topology preset, JSON file or builder spec");
  step::StepConfig c;
  // Default: `trace` for a trace that records collectives (they are replayed), else replicated.
  std::optional<step::Strategy> strategy;
  if (o.strategy && !o.strategy->empty()) {
    strategy = step::strategy_from_string(*o.strategy, "--strategy", step::StrategySet::with_trace);
  }
  if (strategy == step::Strategy::trace && has_model) {
    throw ConfigError("--strategy", fmt::format("trace with --model {}", *o.model),
                      "--trace FILE (the trace strategy replays a trace's recorded collectives; a zoo model records none)");
  }
  c.optimizer = &opt::find_optimizer(o.optimizer, "--optimizer");
  c.precision = opt::precision_from_string(o.precision, "--precision");
  const auto fidelity = step::fidelity_from_string(o.fidelity, "--fidelity");
  if (o.compute != "roofline" && o.compute != "measured") {
    throw ConfigError("--compute", fmt::format("unknown compute model '{}'", o.compute), one_of({"roofline", "measured"}));
  }
  c.measured_compute = o.compute == "measured";
  c.grad_accum = static_cast<std::uint32_t>(o.grad_accum);
  c.checkpointing = o.checkpointing;
  if (o.fsdp) c.fsdp = step::fsdp_impl_from_string(*o.fsdp, "--fsdp");
  c.defer_allgather = !o.no_defer;
  c.fusion = !o.no_fusion;
  c.prefetch = !o.no_prefetch;
  if (o.bucket) c.bucket_bytes = units::parse_bytes(*o.bucket, "--bucket");
  c.record_timeline = record_timeline;

  auto topo_it = cache_->topologies.find(o.topology);
  if (topo_it == cache_->topologies.end()) {
    topo_it = cache_->topologies
                  .emplace(o.topology, std::make_unique<topo::Topology>(topo::make_topology(o.topology, "--topology")))
                  .first;
  }
  const topo::Topology& topo = *topo_it->second;
  const bool named_device = o.device && !o.device->empty();
  // The base device: --device, else the topology's device_model, else (a topology whose
  // nodes all name their kind, issue 16) the kind of its first rank that names one. Per-rank
  // kinds are relative to it (step::device_factors).
  const topo::Topology::RankDevice* first_kind = nullptr;
  for (const auto& k : topo.rank_devices()) {
    if (!k.model.empty()) {
      first_kind = &k;
      break;
    }
  }
  if (!named_device && topo.device_model().empty() && !first_kind) {
    throw ConfigError("--device", fmt::format("missing, and topology '{}' names no device", topo.name()),
                      "a device (see shardsim list devices)");
  }
  const auto& dev = named_device              ? compute::find_device(*o.device, "--device")
                    : !topo.device_model().empty() ? compute::device_for_model(topo.device_model(), "--topology")
                                                 : compute::device_for_model(first_kind->model, first_kind->where);
  if (o.mesh) {  // a transformer on a device mesh (step_parallel.hpp)
    // The mesh step runs every rank on the base device: heterogeneous ranks are an error there,
    // not silently dropped.
    constexpr const char* kNoMesh = "a step without --mesh (heterogeneous ranks are a data-parallel step's)";
    if (o.rank_devices) throw ConfigError("--rank-devices", fmt::format("'{}' with --mesh", *o.rank_devices), kNoMesh);
    if (o.batch_split) throw ConfigError("--batch-split", fmt::format("'{}' with --mesh", *o.batch_split), kNoMesh);
    const auto devs = step::topology_rank_devices(topo, topo.num_devices(), dev);
    for (std::size_t k = 0; k < devs.size(); ++k) {
      if (devs[k] != &dev) {
        throw ConfigError(topo.rank_devices()[k].where,
                          fmt::format("device '{}' on rank {} with --mesh, whose ranks all run {}", devs[k]->name, k, dev.name),
                          "one device kind in a mesh step (heterogeneous ranks: a step without --mesh)");
      }
    }
    const auto mesh_plan = step::parse_fault_plan(topo, o.faults.value_or(""), "--faults");
    const topo::Topology& mesh_topo = with_faults(topo, mesh_plan.fixed);
    auto& slot = cache_->comms[{&mesh_topo, fidelity, o.algorithm, 2}];
    if (!slot) slot = std::make_unique<step::TopologyComm>(mesh_topo, fidelity, o.algorithm, coll::CostParams{}, 2);
    const std::size_t before = slot->evaluations();
    if (!mesh_plan.timed_any()) {
      StepReport r = detail::run_parallel_step(o, topo, dev, *slot, record_timeline);
      r.collective_evaluations = slot->evaluations() - before;
      return r;
    }
    // Timed faults: every collective and pipeline transfer across the fault states (models/
    // step/timed_faults.hpp), no rank folded; a fault process is drawn over the step time
    // without timed faults or compute variation (one step run first), with --seed.
    std::vector<step::TimedFault> items = mesh_plan.timed;
    if (mesh_plan.random) {
      StepOptions o0 = o;
      o0.samples.reset();
      o0.compute_jitter.reset();
      o0.slow_ranks.reset();
      const double horizon = detail::run_parallel_step(o0, topo, dev, *slot, false).result.step_time_s;
      const auto drawn = step::draw_faults(topo, *mesh_plan.random, horizon, o.seed.value_or(1));
      items.insert(items.end(), drawn.begin(), drawn.end());
    }
    step::TimedFaultComm timed(topo, mesh_plan.fixed, items, fidelity, o.algorithm, 2);
    StepReport r = detail::run_parallel_step(o, topo, dev, timed, record_timeline);
    r.collective_evaluations = slot->evaluations() - before + timed.evaluations();
    r.timed_faults = std::move(items);
    return r;
  }
  detail::reject_mesh_only(o);

  std::uint64_t batch = 0;
  const Cache::Prepared* prepared = nullptr;
  std::optional<Cache::Prepared> from_trace;
  if (has_model) {
    const auto& m = zoo::find_model(*o.model, "--model");
    if (!o.batch_per_device) throw ConfigError("--batch-per-device", "missing", "a positive batch");
    batch = static_cast<std::uint64_t>(*o.batch_per_device);
    const std::uint64_t seq = o.seq ? static_cast<std::uint64_t>(*o.seq) : 0;
    const bool eager = o.eager_kernels.value_or(false);
    const auto key = std::make_tuple(m.name, batch, seq, o.no_flash_attention.value_or(false), eager);
    auto it = cache_->zoo.find(key);
    if (it == cache_->zoo.end()) {
      const auto tr = zoo::generate(m, batch, seq, o.no_flash_attention.value_or(false) ? std::optional<bool>(false) : std::nullopt,
                                    eager);
      it = cache_->zoo.emplace(key, Cache::Prepared{tr.name, tr.seq_len, trace::to_workload(tr)}).first;
    }
    prepared = &it->second;
  } else {
    auto tr = trace::load_trace(*o.trace);
    batch = o.batch_per_device ? static_cast<std::uint64_t>(*o.batch_per_device) : tr.batch_per_replica;
    scale_trace(tr, batch);
    from_trace = Cache::Prepared{tr.name, tr.seq_len, trace::to_workload(tr)};
    prepared = &*from_trace;
  }
  const step::Workload& w = prepared->workload;
  const std::uint64_t trace_collectives = w.recorded_collectives();
  c.strategy = strategy.value_or(trace_collectives > 0 ? step::Strategy::trace : step::Strategy::replicated);
  const bool replay = c.strategy == step::Strategy::trace;

  // Replay: the job the trace recorded spans its largest collective group (a larger group than
  // the topology is reported by the step model, naming the op).
  std::uint64_t dp_default = topo.num_devices();
  if (replay) {
    std::uint64_t largest = 1;
    for (const auto& op : w.recorded) {
      if (op.collective) largest = std::max<std::uint64_t>(largest, op.collective->group_size);
    }
    dp_default = std::min<std::uint64_t>(largest, topo.num_devices());
  }
  c.dp = o.dp.value_or(dp_default);
  if (c.dp > topo.num_devices()) {
    throw ConfigError("--dp", fmt::format("{} ranks on a topology of {} devices", c.dp, topo.num_devices()),
                      "at most the topology's device count");
  }
  c.shard_group = o.shard_group.value_or(0);
  step::validate(c);

  // A recorded collective has no dtype in the native trace: it is costed with the element size
  // of `shardsim collective` (CollectiveOp's default), so both commands give the same time.
  // --profile (shardsim calibrate): collectives run on the calibrated topology, with the
  // profile's alpha as step overhead (calib::apply_profile, as `shardsim collective` does).
  const calib::AppliedProfile* applied = nullptr;
  if (o.profile && !o.profile->empty()) {
    const auto key = std::make_pair(o.topology, *o.profile);
    auto it = cache_->profiles.find(key);
    if (it == cache_->profiles.end()) {
      auto p = std::make_unique<calib::AppliedProfile>(
          calib::apply_profile(topo, calib::load_profile(*o.profile), {}, "--profile"));
      it = cache_->profiles.emplace(key, std::move(p)).first;
    }
    applied = it->second.get();
  }
  const topo::Topology* comm_base = applied ? &applied->topology : &topo;
  // Static fault items on the topology the collectives run on; timed ones and a fault
  // process over the step (models/step/timed_faults.hpp, below).
  const step::FaultPlan fault_plan = step::parse_fault_plan(*comm_base, o.faults.value_or(""), "--faults");
  const topo::Topology& comm_topo = with_faults(*comm_base, fault_plan.fixed);
  const std::uint32_t element_bytes = replay ? coll::CollectiveOp{}.element_bytes : 2;
  auto& comm_slot = cache_->comms[{&comm_topo, fidelity, o.algorithm, element_bytes}];
  if (!comm_slot) {
    comm_slot = std::make_unique<step::TopologyComm>(comm_topo, fidelity, o.algorithm,
                                                     applied ? applied->cost : coll::CostParams{}, element_bytes);
  }
  step::TopologyComm& comm = *comm_slot;
  const std::size_t evaluations_before = comm.evaluations();

  StepReport r;
  step::ComputeVariation variation;
  if (o.compute_jitter) variation.jitter = step::parse_jitter(*o.compute_jitter, "--compute-jitter");
  if (o.slow_ranks) variation.slow = step::parse_slow_ranks(*o.slow_ranks, "--slow-ranks");
  variation.seed = o.seed.value_or(1);
  const std::uint64_t samples = o.samples.value_or(1);
  // Heterogeneous ranks (issue 16): each rank's compute from its own device, optionally with
  // the batch split in proportion to device speed (compute linear in its samples). One vector
  // of devices: the topology's per-rank kinds (a custom node's "device"), then --rank-devices
  // over it (the flag wins for the ranks it names).
  std::vector<double> device_scale;
  const bool flag_devices = o.rank_devices && !o.rank_devices->empty();
  if (flag_devices || !topo.rank_devices().empty()) {
    auto devs = step::topology_rank_devices(topo, c.dp, dev);
    if (flag_devices) step::apply_rank_devices(*o.rank_devices, devs, "--rank-devices");
    device_scale = step::device_factors(w, c.precision == opt::Precision::mixed, devs, dev);
    c.rank_devices = devs;  // each rank's own SMs (comm contention) and HBM (memory fit)
  }
  const std::string split = o.batch_split.value_or("even");
  if (split != "even" && split != "speed") {
    throw ConfigError("--batch-split", fmt::format("'{}'", split), "even or speed");
  }
  if (split == "speed" && !device_scale.empty()) {
    const auto batches = step::balanced_batches(device_scale, batch);
    for (std::size_t k = 0; k < device_scale.size(); ++k) {
      if (batches[k] == 0) {
        throw ConfigError("--batch-split", fmt::format("speed gives rank {} no sample of {}", k, batch * c.dp),
                          "a global batch large enough for every rank to get a sample");
      }
      device_scale[k] *= static_cast<double>(batches[k]) / static_cast<double>(batch);
    }
    r.rank_batches = batches;
  }
  // Timed faults: every collective by the progress rule over the fault states; a fault
  // process is drawn over the step time without timed faults (one step run first), with
  // --seed. Not folded: a timed fault breaks the symmetry folding relies on.
  step::CommModel* use = &comm;
  std::unique_ptr<step::TimedFaultComm> timed;
  if (fault_plan.timed_any()) {
    std::vector<step::TimedFault> items = fault_plan.timed;
    if (fault_plan.random) {
      step::StepConfig c0 = c;
      c0.compute_scale = device_scale;
      c0.record_timeline = false;
      const double horizon = step::simulate_step(w, dev, c0, comm).step_time_s;
      const auto drawn = step::draw_faults(*comm_base, *fault_plan.random, horizon, o.seed.value_or(1));
      items.insert(items.end(), drawn.begin(), drawn.end());
    }
    timed = std::make_unique<step::TimedFaultComm>(*comm_base, fault_plan.fixed, items, fidelity, o.algorithm, element_bytes,
                                                   applied ? applied->cost : coll::CostParams{});
    use = timed.get();
    c.fold = false;
    r.timed_faults = std::move(items);
  }
  if (variation.empty() && samples == 1) {
    c.compute_scale = device_scale;
    r.result = step::simulate_step(w, dev, c, *use);
  } else {
    auto s = step::simulate_step_samples(w, dev, c, *use, variation, samples, device_scale);
    r.result = std::move(s.first);
    if (samples > 1) r.samples = StepReport::Samples{std::move(s.step_time_s), s.mean_s, s.p50_s, s.p90_s, s.p99_s, s.max_s};
  }
  r.options = o;
  r.options.strategy = r.result.strategy;
  r.model = prepared->name;
  r.topology = topo.name();
  r.device = dev.name;
  r.optimizer = c.optimizer->name;
  r.precision = opt::to_string(c.precision);
  r.dp = c.dp;
  r.batch_per_device = batch;
  r.grad_accum = c.grad_accum;
  r.seq = prepared->seq;
  r.params = w.parameter_count();
  r.collective_evaluations = comm.evaluations() - evaluations_before + (timed ? timed->evaluations() : 0);
  r.trace_collectives = trace_collectives;
  r.dropped_trace_collectives = replay ? 0 : w.dropped_collectives;
  return r;
}

json to_json(const StepReport& rep) {
  const auto& r = rep.result;
  json out;
  out["strategy"] = r.strategy;
  out["model"] = rep.model;
  out["topology"] = rep.topology;
  if (rep.options.profile && !rep.options.profile->empty()) out["profile"] = *rep.options.profile;
  out["device"] = rep.device;
  out["dp"] = rep.dp;
  out["optimizer"] = rep.optimizer;
  out["precision"] = rep.precision;
  out["batch_per_device"] = rep.batch_per_device;
  out["seq"] = rep.seq;
  out["params"] = rep.params;
  out["fits"] = r.fits;
  if (r.does_not_fit) out["does_not_fit"] = *r.does_not_fit;  // names the rank and its device
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
  out["collective_evaluations"] = rep.collective_evaluations;
  out["ranks"] = r.ranks;                      // devices in the step
  out["ranks_simulated"] = r.ranks_simulated;  // distinct rank graphs executed (1: folded)
  out["events"] = r.events;
  out["samples_per_s"] =
      r.fits ? json(static_cast<double>(rep.batch_per_device * rep.grad_accum * rep.dp) / r.step_time_s) : json(nullptr);
  out["padding_elements"] = r.padding_elements;
  out["padding_fraction"] = r.padding_fraction;
  out["updated_elements"] = r.updated_elements;
  out["hbm_bytes"] = r.hbm_bytes;
  out["memory_bytes"] = memory_json(r.memory);
  out["trace_collectives"] = rep.trace_collectives;
  out["dropped_trace_collectives"] = rep.dropped_trace_collectives;
  if (!rep.rank_batches.empty()) out["rank_batches"] = rep.rank_batches;
  if (rep.samples) {
    out["samples"] = rep.samples->step_time_s.size();
    out["step_time_mean_s"] = rep.samples->mean_s;
    out["step_time_quantiles_s"] = {{"p50", rep.samples->p50_s}, {"p90", rep.samples->p90_s},
                                    {"p99", rep.samples->p99_s}, {"max", rep.samples->max_s}};
  }
  if (rep.timed_faults) {
    json tf = json::array();
    for (const auto& f : *rep.timed_faults) {
      tf.push_back({{"item", f.item}, {"begin_s", f.begin_s}, {"end_s", f.end_s ? json(*f.end_s) : json(nullptr)}});
    }
    out["timed_faults"] = tf;
  }
  out["config"] = to_json(rep.options);
  if (rep.parallel) out["parallel"] = detail::parallel_json(*rep.parallel);
  return out;
}

CompareOptions parse_compare_options(const json& j) {
  if (!j.is_object()) throw ConfigError("compare", j.dump(), "an object of flags");
  if (j.contains("strategy")) throw ConfigError("compare", "unknown flag 'strategy'", "--strategies");
  CompareOptions o;
  o.step = parse_step_options(j, {"strategies"});
  if (j.contains("strategies") && !j.at("strategies").is_null()) {
    if (!j.at("strategies").is_string()) throw ConfigError("--strategies", j.at("strategies").dump(), "a string");
    o.strategies = j.at("strategies").get<std::string>();
  }
  return o;
}

json run_compare(const CompareOptions& o) {
  if (o.step.strategy) throw ConfigError("compare", "unknown flag 'strategy'", "--strategies");
  const auto names = parse_strategies(o.strategies);
  // The baseline is replicated, computed even when not listed.
  StepOptions rep_options = o.step;
  rep_options.strategy = "replicated";
  const json rep = to_json(run_step(rep_options));
  json out = json::array();
  for (const auto& n : names) {
    StepOptions f = o.step;
    f.strategy = n;
    json r = n == "replicated" ? rep : to_json(run_step(f));
    const bool both = rep.at("fits").get<bool>() && r.at("fits").get<bool>();
    r["speedup_vs_replicated"] = both ? json(rep.at("step_time_s").get<double>() / r.at("step_time_s").get<double>()) : json(nullptr);
    out.push_back(r);
  }
  return out;
}

}  // namespace shardsim::analysis
