#include "models/step/step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "models/step/replay.hpp"
#include "sim/error.hpp"

namespace shardsim::step {

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
  if (c.shard_group != 0 && (c.shard_group > c.dp || c.dp % c.shard_group != 0)) {
    throw ConfigError("--shard-group", fmt::format("k = {} does not divide N = {}", c.shard_group, c.dp),
                      "a sharding subgroup size that divides the data-parallel size");
  }
}

namespace {

struct Buffer {
  std::uint64_t actual = 0, padded = 0;
  std::size_t ready_op = 0;     ///< index of the backward op after which it is complete
  std::uint32_t min_unit = 0;   ///< earliest unit whose weights it holds (forward order)
};

struct OrderedTensor {
  std::uint64_t elements = 0;
  std::size_t ready_op = 0;
  std::uint32_t unit = 0;
  std::size_t index = 0;  ///< into Workload::params
};

std::uint64_t pad_to(std::uint64_t n, std::uint64_t m) { return m <= 1 ? n : (n + m - 1) / m * m; }

// PyTorch DDP's rule (compute_bucket_assignment_by_size): append to the open buffer, close it
// once it holds at least the cap.
std::vector<Buffer> make_buffers(const std::vector<OrderedTensor>& ts, std::uint64_t cap, std::uint64_t shards,
                                 bool fusion, std::vector<std::size_t>* tensor_buffer) {
  std::vector<Buffer> out;
  Buffer open;
  bool has_open = false;
  auto close = [&] {
    open.padded = pad_to(open.actual, shards);
    out.push_back(open);
    open = Buffer{};
    has_open = false;
  };
  for (const auto& t : ts) {
    if (!has_open) open.min_unit = t.unit;
    open.actual += t.elements;
    open.ready_op = std::max(open.ready_op, t.ready_op);
    open.min_unit = std::min(open.min_unit, t.unit);
    has_open = true;
    if (tensor_buffer) (*tensor_buffer)[t.index] = out.size();
    if (!fusion || open.actual >= cap) close();
  }
  if (has_open) close();
  return out;
}

class StepSim {
 public:
  StepSim(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm, StepResult& r)
      : w_(w), dev_(dev), c_(c), comm_(comm), r_(r) {
    math_ = c.precision == opt::Precision::mixed ? compute::MathType::bf16 : compute::MathType::fp32;
    wb_ = opt::weight_bytes(c.precision);
    gb_ = opt::grad_bytes(c.precision);
    k_ = c.shard_group == 0 ? c.dp : c.shard_group;
    for (std::uint64_t i = 0; i < c.dp; ++i) all_.push_back(static_cast<int>(i));
    for (std::uint64_t i = 0; i < k_; ++i) sub_.push_back(static_cast<int>(i));
    for (std::uint64_t i = 0; i < c.dp; i += k_) cross_.push_back(static_cast<int>(i));
    prepare();
  }

  void run() {
    double t = 0;
    if (c_.strategy == Strategy::zero3) {
      t = run_zero3();
    } else {
      t = run_bucketed();
    }
    r_.step_time_s = t;
    r_.exposed_comm_s = std::max(0.0, t - r_.forward_s - r_.backward_s - r_.update_s);
  }

 private:
  void prepare() {
    const std::size_t n = w_.ops.size();
    units_ = w_.units;
    for (const auto& p : w_.params) units_ = std::max(units_, p.unit + 1);
    for (const auto& o : w_.ops) units_ = std::max(units_, o.unit + 1);
    last_bwd_.assign(units_, n);  // n: "end of backward" for units without backward ops
    first_bwd_.assign(units_, n);
    fwd_time_unit_.assign(units_, 0.0);
    op_time_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& o = w_.ops[i];
      op_time_[i] = (c_.measured_compute && o.measured_s) ? *o.measured_s : dev_.op_time_s(o.flops, o.bytes, math_);
      if (o.phase == OpPhase::backward) {
        last_bwd_[o.unit] = i;
        if (first_bwd_[o.unit] == n) first_bwd_[o.unit] = i;
      } else {
        fwd_time_unit_[o.unit] += op_time_[i];
      }
    }
    unit_elems_.assign(units_, 0);
    for (const auto& p : w_.params) unit_elems_[p.unit] += p.elements;
  }

  double issue(coll::OpKind kind, double bytes, const std::vector<int>& g, double ready, const char* what) {
    if (g.size() <= 1 || bytes <= 0) return ready;
    const auto size = static_cast<std::uint64_t>(bytes);
    const double dur = comm_.time_s(kind, size, g);
    const double start = std::max(comm_free_, ready);
    comm_free_ = start + dur;
    r_.comm_s += dur;
    r_.comm_bytes += bytes * coll::busbw_factor(kind, g.size());
    ++r_.collectives;
    if (c_.record_timeline) r_.timeline.push_back({"comm", fmt::format("{} {}", coll::to_string(kind), what), start, comm_free_});
    return comm_free_;
  }

  void compute(double& t, std::size_t i, double dur) {
    const auto& o = w_.ops[i];
    if (c_.record_timeline) {
      r_.timeline.push_back({"compute", fmt::format("{} unit {}", o.phase == OpPhase::forward ? "forward" : "backward", o.unit),
                             t, t + dur});
    }
    t += dur;
    (o.phase == OpPhase::forward ? r_.forward_s : r_.backward_s) += dur;
  }

  // Recomputation of a unit's forward before its first backward op (checkpointing).
  void recompute(double& t, std::size_t i) {
    const auto& o = w_.ops[i];
    if (!c_.checkpointing || o.phase != OpPhase::backward || first_bwd_[o.unit] != i) return;
    if (c_.record_timeline) r_.timeline.push_back({"compute", fmt::format("recompute unit {}", o.unit), t, t + fwd_time_unit_[o.unit]});
    t += fwd_time_unit_[o.unit];
    r_.backward_s += fwd_time_unit_[o.unit];
  }

  double update(double t, double elements, double extra_allreduce_bytes, const std::vector<int>& group) {
    if (extra_allreduce_bytes > 0) t = std::max(t, issue(coll::OpKind::allreduce, extra_allreduce_bytes, group, t, "optimizer statistics"));
    t = std::max(t, comm_free_);
    const auto u = opt::update_cost(*c_.optimizer, c_.precision, elements);
    const double dur = dev_.stream_time_s(u.flops, u.bytes) + dev_.launch_s;
    if (c_.record_timeline) r_.timeline.push_back({"compute", "optimizer update", t, t + dur});
    r_.update_s = dur;
    r_.updated_elements = static_cast<std::uint64_t>(elements);
    return t + dur;
  }

  std::vector<opt::TensorShape> shapes() const {
    std::vector<opt::TensorShape> v;
    v.reserve(w_.params.size());
    for (const auto& p : w_.params) v.push_back({p.elements, p.rows, p.cols});
    return v;
  }

  // replicated, sharded, zero1, zero2.
  double run_bucketed() {
    const bool replicated = c_.strategy == Strategy::replicated;
    const bool sharded = c_.strategy == Strategy::sharded;
    const std::uint64_t shards = replicated ? 1 : (sharded ? k_ : c_.dp);
    const std::vector<int>& group = sharded ? sub_ : all_;
    // Tensors in gradient-ready order: units by their last backward op, tensors of a unit in
    // reverse declaration order (DDP registers buckets in reverse parameter order).
    std::vector<std::uint32_t> order(units_);
    for (std::uint32_t u = 0; u < units_; ++u) order[u] = u;
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return last_bwd_[a] < last_bwd_[b]; });
    std::vector<std::vector<std::size_t>> per_unit(units_);
    for (std::size_t i = 0; i < w_.params.size(); ++i) per_unit[w_.params[i].unit].push_back(i);
    std::vector<OrderedTensor> ts;
    ts.reserve(w_.params.size());
    for (auto u : order) {
      for (auto it = per_unit[u].rbegin(); it != per_unit[u].rend(); ++it) {
        ts.push_back({w_.params[*it].elements, last_bwd_[u], u, *it});
      }
    }
    std::vector<std::size_t> tensor_buffer(w_.params.size(), 0);
    const std::uint64_t cap = std::max<std::uint64_t>(1, c_.bucket_bytes / gb_);
    const auto buffers = make_buffers(ts, cap, shards, replicated || c_.fusion, &tensor_buffer);
    double padded_total = 0;
    for (const auto& b : buffers) {
      r_.padding_elements += b.padded - b.actual;
      padded_total += static_cast<double>(b.padded);
    }
    // Deferred all-gather of the previous step's update (steady state): issued at step start,
    // buffers holding the earliest units first; a unit's first forward op waits for them.
    std::vector<double> unit_ready(units_, 0.0);
    if (sharded && c_.defer_allgather) {
      std::vector<std::size_t> ag(buffers.size());
      for (std::size_t i = 0; i < ag.size(); ++i) ag[i] = i;
      std::stable_sort(ag.begin(), ag.end(), [&](auto a, auto b) { return buffers[a].min_unit < buffers[b].min_unit; });
      std::vector<double> buffer_done(buffers.size(), 0.0);
      for (auto b : ag) buffer_done[b] = issue(coll::OpKind::allgather, double(buffers[b].padded) * wb_, group, 0.0, "weights (deferred)");
      for (std::size_t i = 0; i < w_.params.size(); ++i) {
        auto& ready = unit_ready[w_.params[i].unit];
        ready = std::max(ready, buffer_done[tensor_buffer[i]]);
      }
    }
    double t = 0;
    const std::size_t n = w_.ops.size();
    std::size_t next_buffer = 0;
    for (std::uint32_t m = 0; m < c_.grad_accum; ++m) {
      const bool last = m + 1 == c_.grad_accum;
      for (std::size_t i = 0; i < n; ++i) {
        const auto& o = w_.ops[i];
        if (m == 0 && o.phase == OpPhase::forward) t = std::max(t, unit_ready[o.unit]);
        recompute(t, i);
        compute(t, i, op_time_[i]);
        while (last && next_buffer < buffers.size() && buffers[next_buffer].ready_op == i) issue_reduction(buffers[next_buffer++], t, replicated, sharded);
      }
    }
    while (next_buffer < buffers.size()) issue_reduction(buffers[next_buffer++], t, replicated, sharded);
    if (replicated) return update(t, static_cast<double>(w_.parameter_count()), 0.0, group);
    const double extra = opt::sharded_update_allreduce_bytes(*c_.optimizer, shapes());
    t = update(t, padded_total / static_cast<double>(shards), extra, group);
    if (!(sharded && c_.defer_allgather)) {
      for (const auto& b : buffers) issue(coll::OpKind::allgather, double(b.padded) * wb_, group, t, "weights");
      t = std::max(t, comm_free_);
    }
    return t;
  }

  void issue_reduction(const Buffer& b, double t, bool replicated, bool sharded) {
    if (replicated) {
      issue(coll::OpKind::allreduce, double(b.actual) * gb_, all_, t, "gradient bucket");
      return;
    }
    const std::vector<int>& group = sharded ? sub_ : all_;
    issue(coll::OpKind::reducescatter, double(b.padded) * gb_, group, t, "gradient buffer");
    if (sharded && cross_.size() > 1) {
      issue(coll::OpKind::allreduce, double(b.padded / k_) * gb_, cross_, t, "gradient shard across subgroups");
    }
  }

  double run_zero3() {
    const std::uint64_t N = c_.dp;
    std::vector<std::uint64_t> padded(units_);
    double padded_total = 0;
    for (std::uint32_t u = 0; u < units_; ++u) {
      padded[u] = pad_to(unit_elems_[u], N);
      r_.padding_elements += padded[u] - unit_elems_[u];
      padded_total += static_cast<double>(padded[u]);
    }
    const std::size_t n = w_.ops.size();
    // Units in the order each phase first touches them.
    std::vector<std::uint32_t> fwd_units, bwd_units;
    {
      std::vector<char> sf(units_, 0), sb(units_, 0);
      for (const auto& o : w_.ops) {
        auto& seen = o.phase == OpPhase::forward ? sf : sb;
        auto& list = o.phase == OpPhase::forward ? fwd_units : bwd_units;
        if (!seen[o.unit] && unit_elems_[o.unit] > 0) {
          seen[o.unit] = 1;
          list.push_back(o.unit);
        }
      }
    }
    std::vector<std::size_t> pos_f(units_, 0), pos_b(units_, 0);
    for (std::size_t j = 0; j < fwd_units.size(); ++j) pos_f[fwd_units[j]] = j;
    for (std::size_t j = 0; j < bwd_units.size(); ++j) pos_b[bwd_units[j]] = j;
    constexpr double kNone = -1;
    double t = 0;
    for (std::uint32_t m = 0; m < c_.grad_accum; ++m) {
      std::vector<double> gathered(units_, kNone);
      auto gather = [&](std::uint32_t u, double ready) {
        if (gathered[u] == kNone) gathered[u] = issue(coll::OpKind::allgather, double(padded[u]) * wb_, all_, ready, "unit weights");
      };
      std::uint32_t current = std::numeric_limits<std::uint32_t>::max();
      OpPhase phase = OpPhase::forward;
      for (std::size_t i = 0; i < n; ++i) {
        const auto& o = w_.ops[i];
        if (o.phase != phase) {  // weights are freed after forward and gathered again
          std::fill(gathered.begin(), gathered.end(), kNone);
          phase = o.phase;
          current = std::numeric_limits<std::uint32_t>::max();
        }
        if (unit_elems_[o.unit] > 0 && o.unit != current) {
          current = o.unit;
          gather(o.unit, t);
          t = std::max(t, gathered[o.unit]);
          const auto& list = o.phase == OpPhase::forward ? fwd_units : bwd_units;
          const std::size_t j = (o.phase == OpPhase::forward ? pos_f : pos_b)[o.unit] + 1;
          if (c_.prefetch && j < list.size()) gather(list[j], t);
        }
        recompute(t, i);
        compute(t, i, op_time_[i]);
        if (o.phase == OpPhase::backward && last_bwd_[o.unit] == i && unit_elems_[o.unit] > 0) {
          issue(coll::OpKind::reducescatter, double(padded[o.unit]) * gb_, all_, t, "unit gradients");
        }
      }
    }
    const double extra = opt::sharded_update_allreduce_bytes(*c_.optimizer, shapes());
    return update(t, padded_total / static_cast<double>(N), extra, all_);
  }

  const Workload& w_;
  const compute::Device& dev_;
  const StepConfig& c_;
  CommModel& comm_;
  StepResult& r_;
  compute::MathType math_ = compute::MathType::bf16;
  std::uint32_t wb_ = 2, gb_ = 2;
  std::uint64_t k_ = 1;
  std::vector<int> all_, sub_, cross_;
  std::uint32_t units_ = 0;
  std::vector<std::size_t> last_bwd_, first_bwd_;
  std::vector<double> fwd_time_unit_, op_time_;
  std::vector<std::uint64_t> unit_elems_;
  double comm_free_ = 0;
};

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

std::vector<std::uint64_t> fuse_and_pad(const std::vector<std::uint64_t>& tensors, std::uint64_t bucket_elements,
                                        std::uint64_t shards, bool fusion, std::uint64_t& padding) {
  std::vector<OrderedTensor> ts;
  for (std::size_t i = 0; i < tensors.size(); ++i) ts.push_back({tensors[i], 0, 0, i});
  const auto bs = make_buffers(ts, std::max<std::uint64_t>(1, bucket_elements), shards, fusion, nullptr);
  std::vector<std::uint64_t> out;
  padding = 0;
  for (const auto& b : bs) {
    out.push_back(b.padded);
    padding += b.padded - b.actual;
  }
  return out;
}

StepResult simulate_step(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm) {
  validate(c);
  const bool replay = c.strategy == Strategy::trace;
  if (replay ? w.recorded.empty() : w.ops.empty()) {
    throw ConfigError(w.name.empty() ? "workload" : w.name, replay ? "no recorded ops" : "no forward or backward ops",
                      "at least one op");
  }
  StepResult r;
  r.strategy = to_string(c.strategy);
  if (replay) {
    detail::replay_trace(w, dev, c, comm, r);
  } else {
    StepSim sim(w, dev, c, comm, r);
    sim.run();
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
  return r;
}

}  // namespace shardsim::step
