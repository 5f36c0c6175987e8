#include "analysis/scenario/step_parallel.hpp"

#include <fmt/format.h>

#include "models/parallel/mesh.hpp"
#include "models/parallel/placement.hpp"
#include "models/step/variation.hpp"
#include "sim/error.hpp"
#include "traces/models/model_config.hpp"

namespace shardsim::analysis::detail {

using nlohmann::json;

void reject_mesh_only(const StepOptions& o) {
  auto no = [](const char* flag) {
    throw ConfigError(flag, "without --mesh", "--mesh dp=..,tp=..,pp=.. (the option applies to a parallel layout)");
  };
  if (o.micro_batch) no("--micro-batch");
  if (o.global_batch) no("--global-batch");
  if (o.schedule) no("--schedule");
  if (o.recompute) no("--recompute");
  if (o.sequence_parallel) no("--sequence-parallel");
  if (o.uneven_stages) no("--uneven-stages");
  if (o.tp_comm_overlap) no("--tp-comm-overlap");
  if (o.tp_overlap_config) no("--tp-overlap-config");
  if (o.p2p_blocking) no("--p2p-blocking");
  if (o.p2p_scatter_gather) no("--p2p-scatter-gather");
}

StepReport run_parallel_step(const StepOptions& o, const topo::Topology& topo, const compute::Device& dev,
                             step::CommModel& comm, bool record_timeline) {
  auto no = [](const char* flag, const std::string& found) {
    throw ConfigError(flag, found + " with --mesh", "no such flag (a mesh step: --micro-batch, --global-batch, --recompute)");
  };
  if (o.trace) no("--trace", *o.trace);
  if (o.batch_per_device) no("--batch-per-device", fmt::format("{:g}", *o.batch_per_device));
  if (o.dp) no("--dp", std::to_string(*o.dp));
  if (o.grad_accum != 1) no("--grad-accum", std::to_string(o.grad_accum));
  if (o.checkpointing) no("--checkpointing", "set");
  if (o.bucket) no("--bucket", *o.bucket);
  if (o.no_defer || o.no_fusion || o.no_prefetch) no("--no-defer/--no-fusion/--no-prefetch", "set");
  if (o.compute != "roofline") no("--compute", o.compute);
  if (o.profile) no("--profile", *o.profile);
  if (!o.model) throw ConfigError("--model", "missing", "a zoo transformer or a config.json");

  static_cast<void>(record_timeline);
  const parallel::ModelSpec model = models::resolve_model(*o.model, "--model");
  const auto spec = parallel::parse_mesh(*o.mesh, topo.num_devices(), "--mesh");
  step::ParallelStepConfig c;
  c.model = &model;
  c.mesh = spec.sizes;
  c.order = spec.order;
  c.micro_batch = o.micro_batch.value_or(1);
  c.global_batch = o.global_batch.value_or(spec.sizes.dp * spec.sizes.ep * c.micro_batch);
  c.seq = o.seq ? static_cast<std::uint64_t>(*o.seq) : 0;
  c.schedule = parallel::schedule_from_string(o.schedule.value_or("1f1b"), "--schedule");
  c.recompute = parallel::recompute_from_string(o.recompute.value_or("none"), "--recompute");
  c.sequence_parallel = o.sequence_parallel.value_or(false);
  c.uneven_stages = o.uneven_stages.value_or(false);
  c.tp_comm_overlap = o.tp_comm_overlap.value_or(false);
  if (o.tp_overlap_config) {
    if (!c.tp_comm_overlap) {
      throw ConfigError("--tp-overlap-config", "given without --tp-comm-overlap", "--tp-comm-overlap with it");
    }
    c.tp_overlap = step::load_tp_overlap_file(*o.tp_overlap_config, "--tp-overlap-config");
  }
  c.p2p_blocking = o.p2p_blocking.value_or(false);
  c.p2p_scatter_gather = o.p2p_scatter_gather.value_or(false);
  if (o.no_flash_attention.value_or(false)) c.flash_attention = false;
  if (o.fsdp) {
    throw ConfigError("--fsdp", "with --mesh", "no --fsdp (a mesh step's data axis runs Megatron's strategies)");
  }
  c.eager_kernels = o.eager_kernels.value_or(false);
  c.strategy = parallel::dp_strategy_from_string(o.strategy.value_or("replicated"), o.shard_group.value_or(0), "--strategy");
  c.optimizer = &opt::find_optimizer(o.optimizer, "--optimizer");
  c.precision = opt::precision_from_string(o.precision, "--precision");
  c.record_timeline = record_timeline;
  // Issue 16: per-rank compute variation over the mesh's ranks (models/step/variation.hpp).
  step::ComputeVariation variation;
  if (o.compute_jitter) variation.jitter = step::parse_jitter(*o.compute_jitter, "--compute-jitter");
  if (o.slow_ranks) variation.slow = step::parse_slow_ranks(*o.slow_ranks, "--slow-ranks");
  variation.seed = o.seed.value_or(1);
  const std::uint64_t samples = o.samples.value_or(1);
  StepReport r;
  step::ParallelStepResult res;
  if (variation.empty() && samples == 1) {
    res = step::simulate_parallel_step(c, dev, comm);
  } else {
    auto s = step::simulate_parallel_step_samples(c, dev, comm, variation, samples, res);
    if (samples > 1) r.samples = StepReport::Samples{std::move(s.step_time_s), s.mean_s, s.p50_s, s.p90_s, s.p99_s, s.max_s};
  }

  r.result = res.step;
  r.options = o;
  r.options.strategy = c.strategy.str();
  r.model = model.name;
  r.topology = topo.name();
  r.device = dev.name;
  r.optimizer = c.optimizer->name;
  r.precision = opt::to_string(c.precision);
  r.dp = c.mesh.dp * c.mesh.ep;  // replicas: samples per step = batch x accumulation x replicas
  r.batch_per_device = c.micro_batch;
  r.grad_accum = res.micro_batches;
  r.seq = res.memory.seq;
  r.params = static_cast<std::uint64_t>(model.parameter_count());
  ParallelReport p;
  p.mesh = c.mesh;
  p.order = parallel::Mesh(c.mesh, c.order).order_str();
  p.schedule = c.schedule.str();
  p.recompute = parallel::to_string(c.recompute);
  p.fold = res.fold;
  p.micro_batch = c.micro_batch;
  p.micro_batches = res.micro_batches;
  p.global_batch = c.global_batch;
  p.sequence_parallel = c.sequence_parallel;
  p.uneven_stages = c.uneven_stages;
  p.tp_comm_overlap = c.tp_comm_overlap;
  p.p2p_blocking = c.p2p_blocking;
  p.p2p_scatter_gather = c.p2p_scatter_gather;
  p.slowest = res.slowest;
  p.per_rank = res.per_rank;
  p.memory = res.memory;
  p.placement = parallel::place(parallel::Mesh(c.mesh, c.order), parallel::shape_of(topo));
  parallel::name_gspmd_axes(p.placement, spec);
  r.parallel = std::move(p);
  return r;
}

namespace {

json times_json(const step::ParallelRankTimes& x) {
  return {{"rank", x.rank},
          {"stage", x.stage},
          {"folded", x.folded},
          {"step_time_s", x.step_time_s},
          {"forward_s", x.forward_s},
          {"backward_s", x.backward_s},
          {"update_s", x.update_s},
          {"tp_comm_s", x.tp_comm_s},
          {"ep_alltoall_s", x.ep_alltoall_s},
          {"cp_exposed_s", x.cp_exposed_s},
          {"pp_bubble_s", x.pp_bubble_s},
          {"dp_exposed_s", x.dp_exposed_s},
          {"dp_comm_s", x.dp_comm_s},
          {"tp_collectives", x.tp_collectives},
          {"tp_bytes", x.tp_bytes}};
}

}  // namespace

json parallel_json(const ParallelReport& p) {
  json stages = json::array();
  for (const auto& st : p.memory.stages) {
    stages.push_back({{"stage", st.stage},
                      {"layers", st.layers},
                      {"in_flight", st.in_flight},
                      {"memory_bytes",
                       {{"params", st.params}, {"grads", st.grads}, {"optimizer", st.optimizer},
                        {"activations", st.activations}, {"recompute", st.recompute_working}, {"buffers", st.buffers},
                        {"peak", st.peak}}}});
  }
  json ranks = json::array();
  for (const auto& x : p.per_rank) ranks.push_back(times_json(x));
  json placement = json::array();
  for (const auto& a : p.placement) {
    placement.push_back({{"axis", parallel::to_string(a.axis)},
                         {"name", a.name},
                         {"size", a.size},
                         {"stride", a.stride},
                         {"where", a.where},
                         {"torus_dims", a.torus_dims},
                         {"torus_extent", a.torus_extent}});
  }
  json out = {{"mesh", {{"dp", p.mesh.dp}, {"tp", p.mesh.tp}, {"pp", p.mesh.pp}, {"cp", p.mesh.cp}, {"ep", p.mesh.ep}}},
              {"order", p.order},
              {"placement", placement},
              {"schedule", p.schedule},
              {"recompute", p.recompute},
              {"sequence_parallel", p.sequence_parallel},
              {"uneven_stages", p.uneven_stages},
              {"tp_comm_overlap", p.tp_comm_overlap},
              {"p2p_blocking", p.p2p_blocking},
              {"p2p_scatter_gather", p.p2p_scatter_gather},
              {"flash_attention", p.memory.flash_attention},
              {"micro_batch", p.micro_batch},
              {"micro_batches", p.micro_batches},
              {"global_batch", p.global_batch},
              {"fold", p.fold},
              {"axes", times_json(p.slowest)},
              {"per_rank", ranks},
              {"stages", stages}};
  if (p.memory.does_not_fit) out["does_not_fit"] = *p.memory.does_not_fit;
  return out;
}

}  // namespace shardsim::analysis::detail
