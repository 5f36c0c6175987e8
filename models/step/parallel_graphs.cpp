// The per-axis graph builders of parallel_graphs.hpp: the program of one pipeline stage
// (parallel_program.hpp); parallel_step.cpp instantiates and runs it.
#include "models/step/parallel_program.hpp"

#include <fmt/format.h>

#include <optional>

#include "models/parallel/layer_compute.hpp"
#include "sim/error.hpp"

namespace shardsim::step::detail {

namespace {

using Ref = std::optional<std::uint32_t>;

class StageProgram {
 public:
  StageProgram(const Shape& s, std::uint64_t stage)
      : s_(s), stage_(stage), names_(s.c->record_timeline), layers_(parallel::chunk_layers(s.m->layers, s.p, s.v).at(stage)) {}

  void build() {
    const auto order = parallel::stage_order(s_.c->schedule, s_.p, s_.mb, stage_);
    std::vector<std::size_t> last_bwd(s_.v, order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
      if (!order[k].forward) last_bwd[order[k].chunk] = k;
    }
    for (std::size_t k = 0; k < order.size(); ++k) {
      const auto& o = order[k];
      if (o.forward) {
        forward(o.chunk, o.micro);
      } else {
        backward(o.chunk, o.micro, k == last_bwd[o.chunk]);
      }
    }
    finish_update();
  }

  std::vector<Op> ops;
  std::vector<std::uint32_t> deps;

 private:
  [[nodiscard]] bool first_chunk(std::uint32_t c) const { return stage_ == 0 && c == 0; }
  [[nodiscard]] bool last_chunk(std::uint32_t c) const { return stage_ + 1 == s_.p && c + 1 == s_.v; }

  std::uint32_t push(Op o, const std::vector<std::uint32_t>& d) {
    o.deps_begin = static_cast<std::uint32_t>(deps.size());
    deps.insert(deps.end(), d.begin(), d.end());
    o.deps_end = static_cast<std::uint32_t>(deps.size());
    ops.push_back(std::move(o));
    return static_cast<std::uint32_t>(ops.size() - 1);
  }

  std::string label(const char* what, std::uint32_t chunk, std::uint64_t micro, std::uint64_t layer) const {
    return names_ ? fmt::format("{} chunk {} mb {} layer {}", what, chunk, micro, layer) : std::string();
  }

  // A compute op after what the compute stream waits for.
  // `gemm_s`: the part of `dur` in GEMM kernels (TaskNode::gemm_share; the graph clamps it).
  std::uint32_t compute(NodePhase phase, double dur, std::vector<std::uint32_t> extra, std::string name,
                        double gemm_s = 0) {
    Op o;
    o.phase = phase;
    o.cat = phase == NodePhase::forward ? Cat::forward : phase == NodePhase::backward ? Cat::backward : Cat::update;
    o.duration_s = dur;
    o.gemm_share = dur > 0 ? gemm_s / dur : 0.0;
    o.name = std::move(name);
    extra.insert(extra.end(), pending_.begin(), pending_.end());
    pending_.clear();
    last_compute_ = push(std::move(o), extra);
    return *last_compute_;
  }

  // What an op issued now waits for: the last compute and the collectives after it.
  [[nodiscard]] std::vector<std::uint32_t> after_last() const {
    std::vector<std::uint32_t> d = pending_;
    if (last_compute_) d.push_back(*last_compute_);
    return d;
  }

  // A collective the compute stream waits for (tp, ep): after the last compute.
  void blocking(Role role, Cat cat, coll::OpKind kind, std::uint64_t bytes, std::string name) {
    if (bytes == 0) return;
    pending_ = {side(role, cat, kModel, kind, bytes, after_last(), std::move(name))};
  }

  // A collective on a side stream (cp, dp) after `d`.
  std::uint32_t side(Role role, Cat cat, std::uint32_t stream, coll::OpKind kind, std::uint64_t bytes,
                     std::vector<std::uint32_t> d, std::string name) {
    Op o;
    o.kind = NodeKind::collective;
    o.phase = NodePhase::comm;
    o.cat = cat;
    o.stream = stream;
    o.op = kind;
    o.size_bytes = bytes;
    o.role = role;
    o.name = std::move(name);
    return push(std::move(o), d);
  }

  void p2p(bool send, int dir, std::uint64_t tag, std::string name) {
    Op o;
    o.kind = send ? NodeKind::send : NodeKind::recv;
    o.phase = NodePhase::comm;
    o.cat = Cat::pp;
    o.stream = send ? (dir > 0 ? kSendNext : kSendPrev) : (dir > 0 ? kRecvNext : kRecvPrev);
    o.dir = dir;
    o.tag = tag;
    o.size_bytes = s_.p2p_bytes;
    o.name = std::move(name);
    const auto id = push(std::move(o), send ? after_last() : std::vector<std::uint32_t>{});
    // The next compute waits for a receive; for a send too when p2p is blocking (Megatron's
    // _communicate: req.wait() on every op, then torch.cuda.synchronize()).
    if (!send || s_.c->p2p_blocking) pending_.push_back(id);
    // Scatter/gather (Megatron gather_split_1d_tensor): the received 1/tp is all-gathered over
    // the tp group, S = the whole activation, before the compute that needs it.
    if (!send && s_.c->p2p_scatter_gather && !s_.c->sequence_parallel && s_.c->mesh.tp > 1) {
      blocking(Role::tp, Cat::pp, coll::OpKind::allgather, s_.tp_bytes,
               names_ ? fmt::format("pp gather {}", dir > 0 ? "gradients" : "activations") : "");
    }
  }

  // Tensor-parallel collective around a tensor-parallel region (parallel_graphs.hpp):
  // `entry` true before the region (sequence parallel: all-gather), false after it (all-reduce,
  // or reduce-scatter with sequence parallelism). Without sequence parallelism the entry is the
  // identity (forward) and the exit all-reduces.
  void tp_region(bool entry, const char* what) {
    if (s_.c->mesh.tp <= 1) return;
    if (s_.c->sequence_parallel) {
      blocking(Role::tp, Cat::tp, entry ? coll::OpKind::allgather : coll::OpKind::reducescatter, s_.tp_bytes,
               names_ ? fmt::format("tp {} {}", entry ? "all-gather" : "reduce-scatter", what) : "");
    } else if (!entry) {
      blocking(Role::tp, Cat::tp, coll::OpKind::allreduce, s_.tp_bytes, names_ ? fmt::format("tp all-reduce {}", what) : "");
    }
  }

  [[nodiscard]] bool overlap() const { return s_.c->tp_comm_overlap && s_.c->mesh.tp > 1; }
  [[nodiscard]] bool sp_overlap() const { return overlap() && s_.c->sequence_parallel; }
  [[nodiscard]] double tp() const { return static_cast<double>(s_.c->mesh.tp); }

  // TransformerEngine's userbuffers move the overlapped tp traffic with copy engines (ring
  // exchange) or a few SMs the GEMM leaves free (set_sm_margin), not NCCL's channels: the
  // collective takes no compute units from the GEMMs beside it (NeMo's tp_overlap configs,
  // e.g. userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048: RingExchangeOverlapCfg for the
  // fprop all-gathers, BulkOverlapCfg(num_sm=2..4) for the backward's).
  void userbuffers(std::uint32_t comm) { ops[comm].takes_units = false; }
  // A compute node that is GEMM kernels alone.
  void gemm(NodePhase phase, double dur, std::vector<std::uint32_t> extra, std::string name) {
    compute(phase, dur, std::move(extra), std::move(name), dur);
  }

  // Tensor-parallel communication overlapped with a GEMM (parallel_graphs.hpp: TE userbuffers).
  // All-gather pipelined into the GEMM that consumes it: the all-gather and (t-1)/t of the
  // GEMM run together, the last chunk after both: max(C, (t-1) G / t) + G / t.
  void gather_into_gemm(NodePhase phase, double gemm_s, std::vector<std::uint32_t> extra, const char* what,
                        std::string label) {
    const auto comm = side(Role::tp, Cat::tp, kModel, coll::OpKind::allgather, s_.tp_bytes, after_last(),
                           names_ ? fmt::format("tp all-gather {} (overlapped)", what) : "");
    userbuffers(comm);
    gemm(phase, gemm_s * (tp() - 1) / tp(), std::move(extra), label);
    pending_.push_back(comm);
    gemm(phase, gemm_s / tp(), {}, std::move(label));
  }
  // A GEMM pipelined into the reduce-scatter of its output: the first chunk, then the
  // collective beside the other t - 1 chunks: G / t + max(C, (t-1) G / t).
  void gemm_into_scatter(NodePhase phase, double gemm_s, const char* what, std::string label) {
    gemm(phase, gemm_s / tp(), {}, label);
    const auto comm = side(Role::tp, Cat::tp, kModel, coll::OpKind::reducescatter, s_.tp_bytes, after_last(),
                           names_ ? fmt::format("tp reduce-scatter {} (overlapped)", what) : "");
    userbuffers(comm);
    gemm(phase, gemm_s * (tp() - 1) / tp(), {}, std::move(label));
    pending_.push_back(comm);
  }
  // Backward: the input gradient reduced (reduce-scatter, or all-reduce without sequence
  // parallelism) beside the weight-gradient GEMM that does not need it: max(C, W).
  void reduce_beside(double wgrad_s, const char* what, std::string label) {
    const auto kind = s_.c->sequence_parallel ? coll::OpKind::reducescatter : coll::OpKind::allreduce;
    const auto comm = side(Role::tp, Cat::tp, kModel, kind, s_.tp_bytes, after_last(),
                           names_ ? fmt::format("tp {} {} (overlapped)", coll::to_string(kind), what) : "");
    userbuffers(comm);
    gemm(NodePhase::backward, wgrad_s, {}, std::move(label));
    pending_.push_back(comm);
  }

  // Ring attention over the cp group (parallel_graphs.hpp): the exchange, timed as an
  // all-gather of `bytes` (cp - 1 ring steps), issued once K and V exist; cp - 1 of the core's
  // cp blocks run beside it and the last one after both: max(C, (cp-1)/cp core) + core/cp, the
  // pipelined ring's t_b + (cp - 1) max(t_b, t_step) with C = (cp - 1) t_step.
  void ring(NodePhase phase, double core_s, std::uint64_t bytes, const char* what, std::string name) {
    const double cp = static_cast<double>(s_.c->mesh.cp);
    const auto kv = side(Role::cp, Cat::cp, kCp, coll::OpKind::allgather, bytes, after_last(), names_ ? what : "");
    compute(phase, core_s * (cp - 1) / cp, {}, name);
    pending_.push_back(kv);
    compute(phase, core_s / cp, {}, std::move(name));
  }

  void zero3_gather(const char* when, Ref anchor) {
    if (!s_.zero3) return;
    std::vector<std::uint32_t> d;
    if (anchor) d.push_back(*anchor);
    gathers_.clear();
    if (s_.dense_group > 1) {
      gathers_.push_back(side(Role::dp_dense, Cat::dp, kDp, coll::OpKind::allgather,
                              static_cast<std::uint64_t>(s_.layer.dense * s_.wb), d, names_ ? fmt::format("dp all-gather {}", when) : ""));
    }
    if (s_.expert_group > 1 && s_.layer.expert > 0) {
      gathers_.push_back(side(Role::dp_expert, Cat::dp, kDp, coll::OpKind::allgather,
                              static_cast<std::uint64_t>(s_.layer.expert * s_.wb), d, names_ ? fmt::format("dp all-gather experts {}", when) : ""));
    }
  }

  // One layer's forward (also as recomputation, phase backward). With overlap the GEMMs next
  // to the tp collectives are their own nodes (gather_into_gemm, gemm_into_scatter).
  void layer_forward(std::uint32_t c, std::uint64_t k, std::uint64_t l, NodePhase phase) {
    const auto& lc = s_.lc;
    zero3_gather("forward", last_compute_);
    std::vector<std::uint32_t> extra = gathers_;
    const std::uint64_t cp = s_.c->mesh.cp;
    const bool ov = sp_overlap();
    double attn = lc.attention_fwd_s, attn_gemm = lc.attention_gemm_fwd_s;
    if (ov) {
      gather_into_gemm(phase, lc.qkv_fwd_s, extra, "attention", label("attention qkv", c, k, l));
      extra.clear();
      attn -= lc.qkv_fwd_s + lc.out_fwd_s;
      attn_gemm -= lc.qkv_fwd_s + lc.out_fwd_s;
    } else {
      tp_region(true, "attention");
    }
    if (cp > 1) {
      // Ring attention: norm and QKV first (K and V exist only then), the core's cp blocks
      // beside the K,V exchange, the output projection after them.
      const double out = ov ? 0.0 : lc.out_fwd_s;
      compute(phase, attn - lc.core_fwd_s - out, extra, label("attention", c, k, l), attn_gemm - out);
      ring(phase, lc.core_fwd_s, s_.cp_bytes, "cp all-gather K,V", label("attention ring blocks", c, k, l));
      if (out > 0) gemm(phase, out, {}, label("attention out", c, k, l));
    } else {
      compute(phase, attn, extra, label("attention", c, k, l), attn_gemm);
    }
    if (ov) {
      gemm_into_scatter(phase, lc.out_fwd_s, "attention", label("attention out", c, k, l));
    } else {
      tp_region(false, "attention");
    }
    const bool moe = s_.m->moe() && s_.c->mesh.ep > 1;
    const bool ov_mlp = ov && !moe;  // the ep all-to-alls sit between the tp collectives and the GEMMs
    double mlp = lc.mlp_fwd_s, mlp_gemm = lc.mlp_gemm_fwd_s;
    if (ov_mlp) {
      gather_into_gemm(phase, lc.up_fwd_s, {}, "mlp", label("mlp up", c, k, l));
      mlp -= lc.up_fwd_s + lc.down_fwd_s;
      mlp_gemm -= lc.up_fwd_s + lc.down_fwd_s;
    } else {
      tp_region(true, "mlp");
    }
    if (moe) blocking(Role::ep, Cat::ep, coll::OpKind::alltoall, s_.ep_bytes, names_ ? "ep dispatch" : "");
    compute(phase, mlp, {}, label("mlp", c, k, l), mlp_gemm);
    if (moe) blocking(Role::ep, Cat::ep, coll::OpKind::alltoall, s_.ep_bytes, names_ ? "ep combine" : "");
    if (ov_mlp) {
      gemm_into_scatter(phase, lc.down_fwd_s, "mlp", label("mlp down", c, k, l));
    } else {
      tp_region(false, "mlp");
    }
  }

  void forward(std::uint32_t c, std::uint64_t k) {
    if (!first_chunk(c)) p2p(false, -1, 2 * (stage_ == 0 ? c - 1 : c), names_ ? fmt::format("recv activations mb {}", k) : "");
    for (std::uint64_t l = 0; l < layers_[c]; ++l) layer_forward(c, k, l, NodePhase::forward);
    if (last_chunk(c)) {
      compute(NodePhase::forward, s_.head.fwd_s, {}, names_ ? fmt::format("output layer mb {}", k) : "", s_.head.gemm_fwd_s);
    }
    if (!last_chunk(c)) p2p(true, +1, 2 * c, names_ ? fmt::format("send activations mb {}", k) : "");
  }

  void backward(std::uint32_t c, std::uint64_t k, bool reduce) {
    const auto& lc = s_.lc;
    if (!last_chunk(c)) {
      p2p(false, +1, 2 * (stage_ + 1 == s_.p ? c + 1 : c) + 1, names_ ? fmt::format("recv gradients mb {}", k) : "");
    }
    if (last_chunk(c)) {
      compute(NodePhase::backward, s_.head.bwd_s, {}, names_ ? fmt::format("output layer backward mb {}", k) : "",
              s_.head.gemm_bwd_s);
    }
    const std::uint64_t cp = s_.c->mesh.cp;
    const bool moe = s_.m->moe() && s_.c->mesh.ep > 1;
    for (std::uint64_t j = layers_[c]; j-- > 0;) {
      if (s_.c->recompute == parallel::Recompute::full) layer_forward(c, k, j, NodePhase::backward);
      if (s_.c->recompute == parallel::Recompute::selective) {
        compute(NodePhase::backward, lc.recompute_s, {}, label("recompute attention core", c, k, j));
      }
      zero3_gather("backward", last_compute_);
      std::vector<std::uint32_t> extra = gathers_;
      // Conjugates of the forward's collectives (Korthikanti et al. 2022 sec. 4.2.2). With
      // overlap: the output-gradient all-gather pipelined into the row-parallel layer's
      // input-gradient GEMM (sequence parallelism), the input gradient reduced beside the
      // column-parallel layer's weight-gradient GEMM.
      const bool ov = overlap(), ov_sp = sp_overlap();
      const bool ov_mlp = ov && !moe;
      double mlp = lc.mlp_bwd_s, mlp_gemm = lc.mlp_gemm_bwd_s;
      if (ov_mlp && ov_sp) {
        gather_into_gemm(NodePhase::backward, lc.down_dgrad_s, extra, "mlp backward", label("mlp down dgrad", c, k, j));
        extra.clear();
        mlp -= lc.down_dgrad_s;
        mlp_gemm -= lc.down_dgrad_s;
      } else {
        tp_region(true, "mlp backward");
      }
      if (ov_mlp) {
        mlp -= lc.up_wgrad_s;
        mlp_gemm -= lc.up_wgrad_s;
      }
      if (moe) blocking(Role::ep, Cat::ep, coll::OpKind::alltoall, s_.ep_bytes, names_ ? "ep combine backward" : "");
      compute(NodePhase::backward, mlp, extra, label("mlp backward", c, k, j), mlp_gemm);
      if (moe) blocking(Role::ep, Cat::ep, coll::OpKind::alltoall, s_.ep_bytes, names_ ? "ep dispatch backward" : "");
      if (ov_mlp) {
        reduce_beside(lc.up_wgrad_s, "mlp backward", label("mlp up wgrad", c, k, j));
      } else {
        tp_region(false, "mlp backward");
      }
      double attn = lc.attention_bwd_s, attn_gemm = lc.attention_gemm_bwd_s;
      if (ov_sp) {
        gather_into_gemm(NodePhase::backward, lc.out_dgrad_s, {}, "attention backward", label("attention out dgrad", c, k, j));
        attn -= lc.out_dgrad_s;
        attn_gemm -= lc.out_dgrad_s;
      } else {
        tp_region(true, "attention backward");
      }
      if (ov) {
        attn -= lc.qkv_wgrad_s;
        attn_gemm -= lc.qkv_wgrad_s;
      }
      if (cp > 1) {
        // The output projection's input gradient, then the core's cp blocks beside the ring
        // exchange of K,V with the dK,dV partials (2 x the forward's bytes), then QKV backward.
        const double out = ov_sp ? 0.0 : lc.out_dgrad_s;
        if (out > 0) gemm(NodePhase::backward, out, {}, label("attention out dgrad", c, k, j));
        ring(NodePhase::backward, lc.core_bwd_s, 2 * s_.cp_bytes, "cp all-gather K,V + dK,dV",
             label("attention ring blocks backward", c, k, j));
        compute(NodePhase::backward, attn - lc.core_bwd_s - out, {}, label("attention backward", c, k, j), attn_gemm - out);
      } else {
        compute(NodePhase::backward, attn, {}, label("attention backward", c, k, j), attn_gemm);
      }
      if (ov) {
        reduce_beside(lc.qkv_wgrad_s, "attention backward", label("attention qkv wgrad", c, k, j));
      } else {
        tp_region(false, "attention backward");
      }
      if (s_.zero3) {
        if (s_.dense_group > 1) {
          side(Role::dp_dense, Cat::dp, kDp, coll::OpKind::reducescatter, static_cast<std::uint64_t>(s_.layer.dense * s_.gb),
               {*last_compute_}, names_ ? "dp reduce-scatter" : "");
        }
        if (s_.expert_group > 1 && s_.layer.expert > 0) {
          side(Role::dp_expert, Cat::dp, kDp, coll::OpKind::reducescatter, static_cast<std::uint64_t>(s_.layer.expert * s_.gb),
               {*last_compute_}, names_ ? "dp reduce-scatter experts" : "");
        }
      } else if (reduce) {
        dense_fill_ += s_.layer.dense;
        expert_fill_ += s_.layer.expert;
        if (overlap_dp() && dense_fill_ >= s_.bucket_dense) flush(Role::dp_dense, dense_fill_);
        if (overlap_dp() && expert_fill_ >= s_.bucket_expert) flush(Role::dp_expert, expert_fill_);
      }
    }
    if (reduce && !s_.zero3) {
      ++chunks_reduced_;
      if (chunks_reduced_ == s_.v) dense_fill_ += parallel::stage_extra_elements(*s_.m, s_.c->mesh.tp, s_.p, stage_);
      // Without overlap, everything is reduced after the stage's last backward (finish_update).
      if (overlap_dp()) {
        flush(Role::dp_dense, dense_fill_);
        flush(Role::dp_expert, expert_fill_);
      }
    }
    if (!first_chunk(c)) p2p(true, -1, 2 * c + 1, names_ ? fmt::format("send gradients mb {}", k) : "");
  }

  void flush(Role role, double& fill) {
    const std::uint64_t group = role == Role::dp_dense ? s_.dense_group : s_.expert_group;
    if (fill <= 0) return;
    const double elements = fill;
    fill = 0;
    update_elements_ += s_.sharded ? elements / static_cast<double>(group) : elements;
    if (group <= 1) return;
    const auto kind = s_.sharded ? coll::OpKind::reducescatter : coll::OpKind::allreduce;
    dp_colls_.push_back(side(role, Cat::dp, kDp, kind, static_cast<std::uint64_t>(elements * s_.gb), {*last_compute_},
                             names_ ? fmt::format("dp {} gradients", coll::to_string(kind)) : ""));
    if (s_.sharded) gathers_after_.emplace_back(role, elements);
  }

  [[nodiscard]] bool overlap_dp() const { return s_.c->overlap_grad_reduce; }

  void finish_update() {
    if (!s_.zero3 && !overlap_dp()) {
      flush(Role::dp_dense, dense_fill_);
      flush(Role::dp_expert, expert_fill_);
    }
    if (s_.zero3) {
      // Every layer's shard of the stage, plus the embedding / head extras, sharded over N.
      std::uint64_t n = 0;
      for (const auto x : layers_) n += x;
      const auto layers = static_cast<double>(n);
      update_elements_ = layers * (s_.layer.dense / static_cast<double>(s_.dense_group) +
                                   s_.layer.expert / static_cast<double>(s_.expert_group)) +
                         parallel::stage_extra_elements(*s_.m, s_.c->mesh.tp, s_.p, stage_) / static_cast<double>(s_.dense_group);
    }
    const auto u = opt::update_cost(*s_.c->optimizer, s_.c->precision, update_elements_);
    const double dur = s_.dev->stream_time_s(u.flops, u.bytes) + s_.dev->launch_s;
    compute(NodePhase::update, dur, dp_colls_, names_ ? "optimizer update" : "");
    for (const auto& [role, elements] : gathers_after_) {
      side(role, Cat::dp, kDp, coll::OpKind::allgather, static_cast<std::uint64_t>(elements * s_.wb), {*last_compute_},
           names_ ? "dp all-gather weights" : "");
    }
  }

  const Shape& s_;
  std::uint64_t stage_;
  bool names_;
  std::vector<std::uint64_t> layers_;  // per model chunk of this stage (parallel::chunk_layers)
  Ref last_compute_;
  std::vector<std::uint32_t> pending_;
  std::vector<std::uint32_t> gathers_;
  std::vector<std::uint32_t> dp_colls_;
  std::vector<std::pair<Role, double>> gathers_after_;
  double dense_fill_ = 0, expert_fill_ = 0, update_elements_ = 0;
  std::uint64_t chunks_reduced_ = 0;
};


}  // namespace

std::vector<Axis> role_axes(Role r) {
  switch (r) {
    case Role::tp: return {Axis::tp};
    case Role::cp: return {Axis::cp};
    case Role::ep: return {Axis::ep};
    case Role::dp_dense: return {Axis::cp, Axis::ep, Axis::dp};
    case Role::dp_expert: return {Axis::cp, Axis::dp};
  }
  return {};
}

StageOps build_stage(const Shape& s, std::uint64_t stage) {
  StageProgram b(s, stage);
  b.build();
  return {std::move(b.ops), std::move(b.deps)};
}

}  // namespace shardsim::step::detail
