// The weight-update strategies as graph builders (graph_builders.hpp): the schedules of
// step.hpp, one rank's program each. Compute ops run on stream 0 in trace order; every
// collective of a strategy runs on stream 1 in issue order (one communication stream, as DDP
// and FSDP issue them on one process group's NCCL stream).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

#include "models/step/graph_builders.hpp"

namespace shardsim::step {

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

using OpRef = std::optional<std::uint32_t>;
std::vector<std::uint32_t> deps_of(std::initializer_list<OpRef> refs) {
  std::vector<std::uint32_t> v;
  for (const auto& r : refs) {
    if (r) v.push_back(*r);
  }
  return v;
}

class StrategyBuilder {
 public:
  StrategyBuilder(const Workload& w, const compute::Device& dev, const StepConfig& c, StepResult& r)
      : w_(w), dev_(dev), c_(c), r_(r), p_(c.dp) {
    math_ = c.precision == opt::Precision::mixed ? compute::MathType::bf16 : compute::MathType::fp32;
    wb_ = opt::weight_bytes(c.precision);
    gb_ = opt::grad_bytes(c.precision);
    rb_ = c.reduce_bytes == 0 ? gb_ : c.reduce_bytes;  // the reduction's element (StepConfig::reduce_bytes)
    k_ = c.shard_group == 0 ? c.dp : c.shard_group;
    all_ = p_.add_role(blocks_role("dp", c.dp, c.dp));
    prepare();
  }

  RankProgram bucketed() {
    run_bucketed();
    return std::move(p_);
  }
  RankProgram zero3() {
    run_zero3();
    return std::move(p_);
  }

 private:
  struct Role {
    std::uint32_t id;
    std::uint64_t size;
  };

  void prepare() {
    const std::size_t n = w_.ops.size();
    units_ = w_.units;
    for (const auto& p : w_.params) units_ = std::max(units_, p.unit + 1);
    for (const auto& o : w_.ops) units_ = std::max(units_, o.unit + 1);
    last_bwd_.assign(units_, n);  // n: "end of backward" for units without backward ops
    first_bwd_.assign(units_, n);
    fwd_time_unit_.assign(units_, 0.0);
    op_time_.resize(n);
    op_share_.assign(n, 0.0);
    fwd_gemm_unit_.assign(units_, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& o = w_.ops[i];
      // With its GEMM share (persistent GEMMs under communication, executor.hpp): a measured
      // duration or a roofline op has none.
      const compute::OpTime t = (c_.measured_compute && o.measured_s) ? compute::OpTime{*o.measured_s, 0.0}
                                : o.shape ? compute::op_time_parts(dev_, *o.shape, math_, o.phase == OpPhase::backward)
                                          : compute::OpTime{dev_.op_time_s(o.flops, o.bytes, math_), 0.0};
      op_time_[i] = t.total_s;
      if (t.total_s > 0) op_share_[i] = t.gemm_s / t.total_s;
      if (o.phase == OpPhase::backward) {
        last_bwd_[o.unit] = i;
        if (first_bwd_[o.unit] == n) first_bwd_[o.unit] = i;
      } else {
        fwd_time_unit_[o.unit] += op_time_[i];
        fwd_gemm_unit_[o.unit] += t.gemm_s;
      }
    }
    unit_elems_.assign(units_, 0);
    for (const auto& p : w_.params) unit_elems_[p.unit] += p.elements;
    p_.reserve(n * c_.grad_accum * (c_.checkpointing ? 2 : 1) + 4 * units_ + 8);
  }

  // A collective on the rank's group of `role` after `deps`; none (nullopt) for a group of one
  // rank or no bytes, as the former list scheduler skipped them.
  OpRef issue(coll::OpKind kind, double bytes, Role role, std::vector<std::uint32_t> deps, const char* what) {
    if (role.size <= 1 || bytes <= 0) return std::nullopt;
    last_comm_ = p_.collective(role.id, 1, kind, static_cast<std::uint64_t>(bytes), deps,
                               c_.record_timeline ? fmt::format("{} {}", coll::to_string(kind), what) : std::string());
    return last_comm_;
  }

  void compute(std::size_t i, std::vector<std::uint32_t> deps = {}) {
    const auto& o = w_.ops[i];
    last_compute_ = p_.compute(o.phase == OpPhase::forward ? NodePhase::forward : NodePhase::backward, op_time_[i], deps,
                               c_.record_timeline ? fmt::format("{} unit {}", o.phase == OpPhase::forward ? "forward" : "backward", o.unit)
                                                  : std::string());
    p_.set_gemm_share(*last_compute_, op_share_[i]);
  }

  // Recomputation of a unit's forward before its first backward op (checkpointing).
  void recompute(std::size_t i, std::vector<std::uint32_t> deps) {
    const auto& o = w_.ops[i];
    if (!c_.checkpointing || o.phase != OpPhase::backward || first_bwd_[o.unit] != i) return;
    last_compute_ = p_.compute(NodePhase::backward, fwd_time_unit_[o.unit], deps,
                               c_.record_timeline ? fmt::format("recompute unit {}", o.unit) : std::string());
    if (fwd_time_unit_[o.unit] > 0) p_.set_gemm_share(*last_compute_, fwd_gemm_unit_[o.unit] / fwd_time_unit_[o.unit]);
  }

  // The optimizer pass after every collective issued so far (and the sharded optimizer's extra
  // all-reduce); returns the update op.
  std::uint32_t update(double elements, double extra_allreduce_bytes, Role group) {
    if (extra_allreduce_bytes > 0) issue(coll::OpKind::allreduce, extra_allreduce_bytes, group, deps_of({last_compute_}), "optimizer statistics");
    const auto u = opt::update_cost(*c_.optimizer, c_.precision, elements);
    const double dur = dev_.stream_time_s(u.flops, u.bytes) + dev_.launch_s;
    r_.updated_elements = static_cast<std::uint64_t>(elements);
    last_compute_ = p_.compute(NodePhase::update, dur, deps_of({last_comm_}), c_.record_timeline ? "optimizer update" : "");
    return *last_compute_;
  }

  std::vector<opt::TensorShape> shapes() const {
    std::vector<opt::TensorShape> v;
    v.reserve(w_.params.size());
    for (const auto& p : w_.params) v.push_back({p.elements, p.rows, p.cols});
    return v;
  }

  // replicated, sharded, zero1, zero2.
  void run_bucketed() {
    const bool replicated = c_.strategy == Strategy::replicated;
    const bool sharded = c_.strategy == Strategy::sharded;
    const std::uint64_t shards = replicated ? 1 : (sharded ? k_ : c_.dp);
    const Role all{all_, c_.dp};
    Role sub = all, cross{0, 1};
    if (sharded && k_ != c_.dp) {
      sub = {p_.add_role(blocks_role("shard", c_.dp, k_)), k_};
      cross = {p_.add_role(strided_role("cross", c_.dp, k_)), c_.dp / k_};
    }
    const Role group = sharded ? sub : all;
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
    std::vector<std::vector<std::uint32_t>> unit_ready(units_);
    if (sharded && c_.defer_allgather) {
      std::vector<std::size_t> ag(buffers.size());
      for (std::size_t i = 0; i < ag.size(); ++i) ag[i] = i;
      std::stable_sort(ag.begin(), ag.end(), [&](auto a, auto b) { return buffers[a].min_unit < buffers[b].min_unit; });
      std::vector<OpRef> buffer_done(buffers.size());
      for (auto b : ag) buffer_done[b] = issue(coll::OpKind::allgather, double(buffers[b].padded) * wb_, group, {}, "weights (deferred)");
      for (std::size_t i = 0; i < w_.params.size(); ++i) {
        auto& ready = unit_ready[w_.params[i].unit];
        const auto d = buffer_done[tensor_buffer[i]];
        if (d && std::find(ready.begin(), ready.end(), *d) == ready.end()) ready.push_back(*d);
      }
    }
    const std::size_t n = w_.ops.size();
    std::size_t next_buffer = 0;
    for (std::uint32_t m = 0; m < c_.grad_accum; ++m) {
      const bool last = m + 1 == c_.grad_accum;
      for (std::size_t i = 0; i < n; ++i) {
        const auto& o = w_.ops[i];
        std::vector<std::uint32_t> deps;
        if (m == 0 && o.phase == OpPhase::forward) deps = unit_ready[o.unit];
        recompute(i, deps);
        compute(i, deps);
        while (last && next_buffer < buffers.size() && buffers[next_buffer].ready_op == i) {
          issue_reduction(buffers[next_buffer++], replicated, sharded, all, sub, cross);
        }
      }
    }
    while (next_buffer < buffers.size()) issue_reduction(buffers[next_buffer++], replicated, sharded, all, sub, cross);
    if (replicated) {
      update(static_cast<double>(w_.parameter_count()), 0.0, group);
      return;
    }
    const double extra = opt::sharded_update_allreduce_bytes(*c_.optimizer, shapes());
    const std::uint32_t upd = update(padded_total / static_cast<double>(shards), extra, group);
    if (!(sharded && c_.defer_allgather)) {
      for (const auto& b : buffers) issue(coll::OpKind::allgather, double(b.padded) * wb_, group, {upd}, "weights");
    }
  }

  void issue_reduction(const Buffer& b, bool replicated, bool sharded, Role all, Role sub, Role cross) {
    const auto after = deps_of({last_compute_});
    if (replicated) {
      issue(coll::OpKind::allreduce, double(b.actual) * rb_, all, after, "gradient bucket");
      return;
    }
    issue(coll::OpKind::reducescatter, double(b.padded) * rb_, sharded ? sub : all, after, "gradient buffer");
    if (sharded && cross.size > 1) {
      issue(coll::OpKind::allreduce, double(b.padded / k_) * rb_, cross, after, "gradient shard across subgroups");
    }
  }

  // PyTorch FSDP's memory passes around a unit's collectives (StepConfig::fsdp), each a
  // memory-bound kernel over the unit's n (padded) elements, timed at hbm_Bps x mem_eff plus a
  // launch. They run on the compute timeline: an elementwise kernel over a unit's parameters
  // occupies every SM while it runs, so the GEMMs of another stream wait for it (no credit for
  // overlap is taken).
  //  - fsdp1 (torch.distributed.fsdp, PyTorch 2.1: _flat_param.py, _runtime_utils.py), after a
  //    unit's backward: the flat gradient assembled from the original parameters' gradients
  //    (the views _use_unsharded_views makes with flat_param.split(); SplitWithSizesBackward
  //    concatenates their gradients: read + write gb n); in _post_backward_hook, the cast to the
  //    reduce dtype when it differs (`flat_param.grad.to(handle._reduce_dtype)`: read gb n,
  //    write rb n) and _div_if_needed(padded_unsharded_grad, _gradient_predivide_factor) in
  //    place (read + write rb n) when that factor is above 1 (_get_gradient_predivide_factor
  //    doubles f from 1 while f divides N and N / f > f: 2 at N = 4, 4 at 8 and 16, 8 at 32 and
  //    64).
  //  - fsdp2 (torch.distributed._composable.fsdp, December 2024: _fsdp_collectives.py): after
  //    each all-gather, foreach_all_gather_copy_out's split_with_sizes_copy from the gathered
  //    buffer into the parameters (read + write wb n), in wait_for_unshard on the compute
  //    stream; before each reduce-scatter, foreach_reduce's _chunk_cat of the gradients into
  //    the reduce-scatter input in the reduce dtype (read gb n, write rb n). fp32 / bf16
  //    reductions divide inside NCCL (ReduceOp.AVG: _get_gradient_divide_factors), no pass.
  double pass_s(double bytes, std::uint32_t kernels) const {
    return dev_.stream_time_s(0, bytes) + kernels * dev_.launch_s;
  }
  static std::uint64_t predivide_factor(std::uint64_t n) {
    std::uint64_t f = 1;
    while (n % f == 0 && n / f > f) f *= 2;
    return f;
  }
  void fsdp_pass(double seconds, const char* what, std::vector<std::uint32_t> deps) {
    last_compute_ = p_.compute(NodePhase::backward, seconds, std::move(deps),
                               c_.record_timeline ? fmt::format("fsdp {}", what) : std::string());
  }

  // The passes before a unit's reduce-scatter of `n` elements over `ranks` (none for one rank).
  void fsdp_before_reduce(double n, std::uint64_t ranks) {
    if (ranks == 1 || c_.fsdp == FsdpImpl::none) return;
    if (c_.fsdp == FsdpImpl::fsdp2) {
      fsdp_pass(pass_s(double(gb_ + rb_) * n, 1), "reduce-scatter copy-in", deps_of({last_compute_}));
      return;
    }
    double bytes = 2.0 * gb_ * n;  // the flat gradient from the views' gradients
    std::uint32_t kernels = 1;
    if (rb_ != gb_) {  // the cast to the reduce dtype
      bytes += double(gb_ + rb_) * n;
      ++kernels;
    }
    if (predivide_factor(ranks) > 1) {  // the predivide in place
      bytes += 2.0 * rb_ * n;
      ++kernels;
    }
    fsdp_pass(pass_s(bytes, kernels), "gradient flatten, cast, predivide", deps_of({last_compute_}));
  }

  void run_zero3() {
    const std::uint64_t N = c_.dp;
    const Role all{all_, N};
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
    // gathered[u]: not yet (kNone), gathered without a collective (kFree), or the gather op.
    constexpr std::int64_t kNone = -1, kFree = -2;
    for (std::uint32_t m = 0; m < c_.grad_accum; ++m) {
      std::vector<std::int64_t> gathered(units_, kNone);
      auto gather = [&](std::uint32_t u) {
        if (gathered[u] != kNone) return;
        const auto op = issue(coll::OpKind::allgather, double(padded[u]) * wb_, all, deps_of({last_compute_}), "unit weights");
        gathered[u] = op ? static_cast<std::int64_t>(*op) : kFree;
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
        std::vector<std::uint32_t> deps;
        if (unit_elems_[o.unit] > 0 && o.unit != current) {
          current = o.unit;
          gather(o.unit);
          if (gathered[o.unit] >= 0) deps.push_back(static_cast<std::uint32_t>(gathered[o.unit]));
          if (c_.fsdp == FsdpImpl::fsdp2 && gathered[o.unit] >= 0) {  // copy-out, then the unit's kernels
            fsdp_pass(pass_s(2.0 * wb_ * double(padded[o.unit]), 1), "all-gather copy-out", deps);
            deps = deps_of({last_compute_});
          }
          const auto& list = o.phase == OpPhase::forward ? fwd_units : bwd_units;
          const std::size_t j = (o.phase == OpPhase::forward ? pos_f : pos_b)[o.unit] + 1;
          if (c_.prefetch && j < list.size()) gather(list[j]);
        }
        recompute(i, deps);
        compute(i, deps);
        if (o.phase == OpPhase::backward && last_bwd_[o.unit] == i && unit_elems_[o.unit] > 0) {
          const double n_u = double(padded[o.unit]);
          fsdp_before_reduce(n_u, N);
          issue(coll::OpKind::reducescatter, n_u * rb_, all, deps_of({last_compute_}), "unit gradients");
        }
      }
    }
    const double extra = opt::sharded_update_allreduce_bytes(*c_.optimizer, shapes());
    update(padded_total / static_cast<double>(N), extra, all);
  }

  const Workload& w_;
  const compute::Device& dev_;
  const StepConfig& c_;
  StepResult& r_;
  RankProgram p_;
  compute::MathType math_ = compute::MathType::bf16;
  std::uint32_t wb_ = 2, gb_ = 2, rb_ = 2;
  std::uint64_t k_ = 1;
  std::uint32_t all_ = 0;
  std::uint32_t units_ = 0;
  std::vector<std::size_t> last_bwd_, first_bwd_;
  std::vector<double> fwd_time_unit_, op_time_;
  std::vector<double> fwd_gemm_unit_, op_share_;  ///< GEMM seconds per unit's forward; GEMM share per op
  std::vector<std::uint64_t> unit_elems_;
  OpRef last_compute_, last_comm_;
};

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

namespace detail {

RankProgram build_bucketed(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel&,
                           StepResult& r) {
  return StrategyBuilder(w, dev, c, r).bucketed();
}

RankProgram build_zero3(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel&, StepResult& r) {
  return StrategyBuilder(w, dev, c, r).zero3();
}

const std::vector<GraphBuilderInfo>& graph_builders() {
  static const std::vector<GraphBuilderInfo> table = {
      {Strategy::replicated, "bucketed", &build_bucketed}, {Strategy::sharded, "bucketed", &build_bucketed},
      {Strategy::zero1, "bucketed", &build_bucketed},      {Strategy::zero2, "bucketed", &build_bucketed},
      {Strategy::zero3, "unit-gather", &build_zero3},      {Strategy::trace, "recorded", &build_replay},
  };
  return table;
}

const GraphBuilderInfo& graph_builder(Strategy s) { return graph_builders().at(static_cast<std::size_t>(s)); }

}  // namespace detail

}  // namespace shardsim::step
