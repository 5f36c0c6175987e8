#include "models/step/step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "models/step/graph_builders.hpp"
#include "models/step/replay.hpp"
#include "sim/enum_names.hpp"
#include "sim/error.hpp"

namespace shardsim::step {

namespace {
constexpr std::array<EnumName<FsdpImpl>, 3> kFsdpImpls{
    {{FsdpImpl::none, "none"}, {FsdpImpl::fsdp1, "fsdp1"}, {FsdpImpl::fsdp2, "fsdp2"}}};
}  // namespace

const char* to_string(FsdpImpl f) { return enum_name(kFsdpImpls, f); }

FsdpImpl fsdp_impl_from_string(const std::string& s, const std::string& where) {
  return enum_from_name(kFsdpImpls, s, "FSDP implementation", where);
}

void validate(const StepConfig& c) {
  if (c.optimizer == nullptr) throw ConfigError("--optimizer", "none", "an optimizer");
  if (c.dp == 0) throw ConfigError("--dp", "0", "a data-parallel size of at least 1");
  if (c.grad_accum == 0) throw ConfigError("--grad-accum", "0", "at least 1 micro-batch");
  if (c.bucket_bytes == 0) throw ConfigError("--bucket", "0 bytes", "a positive bucket size");
  if (c.strategy == Strategy::trace) {
    // The trace is one recorded step: replayed as is, not re-scheduled.
    if (c.grad_accum != 1) {
      throw ConfigError("--grad-accum", fmt::format("{} with --strategy trace", c.grad_accum),
                        "1 (the trace strategy replays one recorded step as is)");
    }
    if (c.checkpointing) {
      throw ConfigError("--checkpointing", "with --strategy trace", "no checkpointing (the trace records what ran)");
    }
    if (c.shard_group != 0) {
      throw ConfigError("--shard-group", fmt::format("{} with --strategy trace", c.shard_group),
                        "no shard group (the trace's collectives run as recorded)");
    }
  }
  if (c.fsdp != FsdpImpl::none && c.strategy != Strategy::zero3) {
    throw ConfigError("--fsdp", fmt::format("{} with --strategy {}", to_string(c.fsdp), to_string(c.strategy)),
                      "--strategy zero3 (FSDP's passes around its gathers and reductions)");
  }
  if (c.shard_group != 0 && (c.shard_group > c.dp || c.dp % c.shard_group != 0)) {
    throw ConfigError("--shard-group", fmt::format("k = {} does not divide N = {}", c.shard_group, c.dp),
                      "a sharding subgroup size that divides the data-parallel size");
  }
}

namespace {

double activation_bytes(const Workload& w, bool checkpointing) {
  double all = 0;
  for (const auto& o : w.ops) {
    if (o.phase == OpPhase::forward) all += static_cast<double>(o.activation_bytes);
  }
  if (!checkpointing) return all;
  // Keep each unit's input (the first forward op's saved input) plus one unit's full set,
  // live while that unit is recomputed (Chen et al. 2016, "Training Deep Nets with Sublinear
  // Memory Cost", sec. 3).
  std::uint32_t units = w.units;
  for (const auto& o : w.ops) units = std::max(units, o.unit + 1);
  std::vector<double> first(units, -1), total(units, 0);
  for (const auto& o : w.ops) {
    if (o.phase != OpPhase::forward) continue;
    if (first[o.unit] < 0) first[o.unit] = static_cast<double>(o.activation_bytes);
    total[o.unit] += static_cast<double>(o.activation_bytes);
  }
  double kept = 0, largest = 0;
  for (std::uint32_t u = 0; u < units; ++u) {
    kept += std::max(0.0, first[u]);
    largest = std::max(largest, total[u]);
  }
  return kept + largest;
}

}  // namespace

StepResult simulate_step(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm) {
  validate(c);
  const bool replay = c.strategy == Strategy::trace;
  if (replay ? w.recorded.empty() : w.ops.empty()) {
    throw ConfigError(w.name.empty() ? "workload" : w.name, replay ? "no recorded ops" : "no forward or backward ops",
                      "at least one op");
  }
  StepResult r;
  r.strategy = to_string(c.strategy);
  if (replay && w.per_rank) {
    detail::execute_replay_per_rank(w, dev, c, comm, r);  // every rank's own graph (replay.hpp)
  } else {
    const RankProgram program = detail::graph_builder(c.strategy).build(w, dev, c, comm, r);
    execute_program(program, c, comm, r, step_contention(dev, c));  // issue 15: SMs NCCL takes
  }
  const auto math = c.precision == opt::Precision::mixed ? compute::MathType::bf16 : compute::MathType::fp32;
  r.model_flops = w.model_flops() * c.grad_accum;
  r.mfu = r.step_time_s > 0 ? r.model_flops / (r.step_time_s * dev.peak(math)) : 0.0;
  const double P = static_cast<double>(w.parameter_count());
  r.padding_fraction = P > 0 ? static_cast<double>(r.padding_elements) / P : 0.0;

  memory::MemoryInput mi;
  for (const auto& p : w.params) mi.tensors.push_back({p.elements, p.rows, p.cols});
  mi.optimizer = c.optimizer;
  mi.precision = c.precision;
  mi.strategy = c.strategy;
  mi.dp = c.dp;
  mi.shard_group = c.shard_group;
  mi.activations = activation_bytes(w, c.checkpointing);
  const double wb = opt::weight_bytes(c.precision), gb = opt::grad_bytes(c.precision);
  if (c.strategy == Strategy::zero3) {
    // The gathered weights of two units (current and prefetched) and one unit's full
    // gradients before its reduce-scatter (Zhao et al. 2023, sec. 3.2).
    std::vector<double> unit(std::max<std::uint32_t>(w.units, 1), 0.0);
    for (const auto& p : w.params) {
      if (p.unit >= unit.size()) unit.resize(p.unit + 1, 0.0);
      unit[p.unit] += static_cast<double>(p.elements);
    }
    const double largest = *std::max_element(unit.begin(), unit.end());
    mi.buffers = largest * (2 * wb + gb);
  } else if (replay) {
    // The buffer of the largest recorded collective (one in flight: one FIFO stream).
    for (const auto& o : w.recorded) {
      if (o.collective) mi.buffers = std::max(mi.buffers, static_cast<double>(o.collective->size_bytes));
    }
  } else {
    // Two buckets: one being communicated, one being filled (Li et al. 2020, sec. 3.2.3).
    mi.buffers = std::min(2.0 * static_cast<double>(c.bucket_bytes), P * gb);
  }
  r.memory = memory::memory_per_device(mi);
  r.hbm_bytes = static_cast<double>(dev.hbm_bytes);
  r.fits = r.memory.peak <= r.hbm_bytes;
  // Heterogeneous ranks (issue 16): every rank holds the same state and activations, each
  // checked against its own device's HBM; the first rank that does not fit is named.
  auto gib = [](double b) { return b / static_cast<double>(1ULL << 30); };
  for (std::uint64_t k = 0; k < c.dp; ++k) {
    const auto* d = k < c.rank_devices.size() && c.rank_devices[k] != nullptr ? c.rank_devices[k] : &dev;
    const double hbm = static_cast<double>(d->hbm_bytes);
    r.hbm_bytes = std::min(r.hbm_bytes, hbm);
    if (r.memory.peak > hbm && !r.does_not_fit) {
      r.does_not_fit = fmt::format("rank {} ({}): peak {:.3g} GiB exceeds its {:.3g} GiB of HBM", k, d->name,
                                   gib(r.memory.peak), gib(hbm));
    }
  }
  r.fits = !r.does_not_fit;
  return r;
}

}  // namespace shardsim::step
