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

  // The overlapped tp collectives (tp_overlap.hpp): with userbuffers (tp_comm_overlap) each
  // runs by its layer's method, its GEMM on the SMs the communication kernel leaves
  // (set_sm_margin: x gemm_factor) and the collective on SMs taken from the GEMM only without a
  // margin (takes_units); without userbuffers (`ub` empty) the collective is NCCL's, on its
  // channels' SMs beside a GEMM sized for all of them.
  using Ub = std::optional<UbLayer>;
  [[nodiscard]] double factor(Ub ub) const {
    return ub ? s_.c->tp_overlap.gemm_factor(*ub, s_.dev->compute_units) : 1.0;
  }
  void units(std::uint32_t comm, Ub ub) {
    ops[comm].takes_units = !ub || s_.c->tp_overlap.takes_units(*ub);
    if (ub && ops[comm].takes_units) ops[comm].units = static_cast<std::uint16_t>(s_.c->tp_overlap.at(*ub).num_sm);
  }
  [[nodiscard]] double chunks(UbLayer ub) const {
    return static_cast<double>(s_.c->tp_overlap.splits(ub, s_.c->mesh.tp));
  }
  // A compute node that is GEMM kernels alone.
  void gemm(NodePhase phase, double dur, std::vector<std::uint32_t> extra, std::string name) {
    compute(phase, dur, std::move(extra), std::move(name), dur);
  }

  // All-gather pipelined into the GEMM that consumes it (ring exchange, k chunks): the
  // all-gather and (k-1)/k of the GEMM run together, the last chunk after both:
  // max(C, (k-1) G / k) + G / k, G the GEMM at its SM share.
  void gather_into_gemm(NodePhase phase, double gemm_s, std::vector<std::uint32_t> extra, const char* what,
                        std::string label, UbLayer ub) {
    const auto comm = side(Role::tp, Cat::tp, kModel, coll::OpKind::allgather, s_.tp_bytes, after_last(),
                           names_ ? fmt::format("tp all-gather {} (overlapped)", what) : "");
    units(comm, ub);
    const double g = gemm_s * factor(ub), k = chunks(ub);
    gemm(phase, g * (k - 1) / k, std::move(extra), label);
    pending_.push_back(comm);
    gemm(phase, g / k, {}, std::move(label));
  }
  // A GEMM pipelined into the reduce-scatter of its output (k chunks). Ring exchange: the first
  // chunk, then the collective beside the other k - 1: G / k + max(C, (k-1) G / k). Pipeline
  // (TE's split_overlap_rs: chunk i's reduce-scatter on the communication stream after GEMM
  // chunk i, the last one after the whole GEMM, "last communication chunk with max SM"): the
  // first chunk, the first k - 1 chunks' reduce-scatter (bytes (k-1)/k) beside the other k - 1
  // GEMM chunks, then the last chunk's (bytes 1/k) after both: with per-chunk times g and r,
  // G + r when r <= g, g + k r otherwise.
  void gemm_into_scatter(NodePhase phase, double gemm_s, const char* what, std::string label, UbLayer ub) {
    const double g = gemm_s * factor(ub), k = chunks(ub);
    gemm(phase, g / k, {}, label);
    const bool pipeline = s_.c->tp_overlap.at(ub).method == UbMethod::pipeline && k > 1;
    const auto kk = static_cast<std::uint64_t>(k);
    const std::uint64_t last = pipeline ? s_.tp_bytes / kk : 0;
    const auto comm = side(Role::tp, Cat::tp, kModel, coll::OpKind::reducescatter, s_.tp_bytes - last, after_last(),
                           names_ ? fmt::format("tp reduce-scatter {} (overlapped)", what) : "");
    units(comm, ub);
    gemm(phase, g * (k - 1) / k, {}, label);
    pending_.push_back(comm);
    if (pipeline) {
      const auto tail = side(Role::tp, Cat::tp, kModel, coll::OpKind::reducescatter, last, after_last(),
                             names_ ? fmt::format("tp reduce-scatter {} last chunk", what) : "");
      units(tail, ub);
      pending_ = {tail};
    }
  }
  // Backward: the input gradient reduced (reduce-scatter, or all-reduce without sequence
  // parallelism) beside the weight-gradient GEMM that does not need it: max(C, W).
  void reduce_beside(double wgrad_s, const char* what, std::string label, Ub ub) {
    const auto kind = s_.c->sequence_parallel ? coll::OpKind::reducescatter : coll::OpKind::allreduce;
    const auto comm = side(Role::tp, Cat::tp, kModel, kind, s_.tp_bytes, after_last(),
                           names_ ? fmt::format("tp {} {} (overlapped)", coll::to_string(kind), what) : "");
    units(comm, ub);
    gemm(NodePhase::backward, wgrad_s * factor(ub), {}, std::move(label));
    pending_.push_back(comm);
  }
  // Backward with sequence parallelism: the column-parallel layer's saved input (its 1/t
  // sequence shard) all-gathered again for the weight gradient, beside the input-gradient GEMM
  // that does not need it: max(C, D) (Korthikanti et al. 2022 sec. 4.2.2; TE _Linear /
  // _LayerNormLinear backward, Megatron-Core LinearWithGradAccumulationAndAsyncCommunication).
  void gather_beside(double dgrad_s, const char* what, std::string label, Ub ub) {
    const auto comm = side(Role::tp, Cat::tp, kModel, coll::OpKind::allgather, s_.tp_bytes, after_last(),
                           names_ ? fmt::format("tp all-gather {} input (overlapped)", what) : "");
    units(comm, ub);
    gemm(NodePhase::backward, dgrad_s * factor(ub), {}, std::move(label));
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
      gather_into_gemm(phase, lc.qkv_fwd_s, extra, "attention", label("attention qkv", c, k, l), UbLayer::qkv_fprop);
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
      gemm_into_scatter(phase, lc.out_fwd_s, "attention", label("attention out", c, k, l), UbLayer::proj_fprop);
    } else {
      tp_region(false, "attention");
    }
    const bool moe = s_.m->moe() && s_.c->mesh.ep > 1;
    const bool ov_mlp = ov && !moe;  // the ep all-to-alls sit between the tp collectives and the GEMMs
    double mlp = lc.mlp_fwd_s, mlp_gemm = lc.mlp_gemm_fwd_s;
    if (ov_mlp) {
      gather_into_gemm(phase, lc.up_fwd_s, {}, "mlp", label("mlp up", c, k, l), UbLayer::fc1_fprop);
      mlp -= lc.up_fwd_s + lc.down_fwd_s;
      mlp_gemm -= lc.up_fwd_s + lc.down_fwd_s;
    } else {
      tp_region(true, "mlp");
    }
    if (moe) blocking(Role::ep, Cat::ep, coll::OpKind::alltoall, s_.ep_bytes, names_ ? "ep dispatch" : "");
    compute(phase, mlp, {}, label("mlp", c, k, l), mlp_gemm);
    if (moe) blocking(Role::ep, Cat::ep, coll::OpKind::alltoall, s_.ep_bytes, names_ ? "ep combine" : "");
    if (ov_mlp) {
      gemm_into_scatter(phase, lc.down_fwd_s, "mlp", label("mlp down", c, k, l), UbLayer::fc2_fprop);
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
      // Conjugates of the forward's collectives (Korthikanti et al. 2022 sec. 4.2.2): the
      // row-parallel layers' output gradient all-gathered before their input-gradient GEMM
      // (with userbuffers pipelined into it); the column-parallel layers' input gradient
      // reduced beside their weight-gradient GEMM, and with sequence parallelism their saved
      // input all-gathered again beside the input-gradient GEMM (TE and Megatron-Core do both
      // asynchronously with or without userbuffers; without sequence parallelism and
      // userbuffers the all-reduce is blocking, Megatron-LM 2021).
      const bool ov = overlap(), ov_sp = sp_overlap();
      const bool sp = s_.c->sequence_parallel && s_.c->mesh.tp > 1;
      const Ub ub_fc1d = ov ? Ub(UbLayer::fc1_dgrad) : Ub(), ub_fc1w = ov ? Ub(UbLayer::fc1_wgrad) : Ub();
      const Ub ub_qkvd = ov ? Ub(UbLayer::qkv_dgrad) : Ub(), ub_qkvw = ov ? Ub(UbLayer::qkv_wgrad) : Ub();
      const bool beside_mlp = (ov || sp) && !moe;  // the ep all-to-alls sit between with MoE
      const bool beside_attn = ov || sp;
      double mlp = lc.mlp_bwd_s, mlp_gemm = lc.mlp_gemm_bwd_s;
      if (beside_mlp && ov_sp) {
        gather_into_gemm(NodePhase::backward, lc.down_dgrad_s, extra, "mlp backward", label("mlp down dgrad", c, k, j),
                         UbLayer::fc2_dgrad);
        extra.clear();
        mlp -= lc.down_dgrad_s;
        mlp_gemm -= lc.down_dgrad_s;
      } else {
        tp_region(true, "mlp backward");
      }
      if (beside_mlp) {
        const double beside = lc.up_wgrad_s + (sp ? lc.up_dgrad_s : 0.0);
        mlp -= beside;
        mlp_gemm -= beside;
      }
      if (moe) blocking(Role::ep, Cat::ep, coll::OpKind::alltoall, s_.ep_bytes, names_ ? "ep combine backward" : "");
      compute(NodePhase::backward, mlp, extra, label("mlp backward", c, k, j), mlp_gemm);
      if (moe) blocking(Role::ep, Cat::ep, coll::OpKind::alltoall, s_.ep_bytes, names_ ? "ep dispatch backward" : "");
      if (beside_mlp) {
        if (sp) gather_beside(lc.up_dgrad_s, "mlp backward", label("mlp up dgrad", c, k, j), ub_fc1d);
        reduce_beside(lc.up_wgrad_s, "mlp backward", label("mlp up wgrad", c, k, j), ub_fc1w);
      } else {
        tp_region(false, "mlp backward");
      }
      double attn = lc.attention_bwd_s, attn_gemm = lc.attention_gemm_bwd_s;
      if (ov_sp) {
        gather_into_gemm(NodePhase::backward, lc.out_dgrad_s, {}, "attention backward", label("attention out dgrad", c, k, j),
                         UbLayer::proj_dgrad);
        attn -= lc.out_dgrad_s;
        attn_gemm -= lc.out_dgrad_s;
      } else {
        tp_region(true, "attention backward");
      }
      if (beside_attn) {
        const double beside = lc.qkv_wgrad_s + (sp ? lc.qkv_dgrad_s : 0.0);
        attn -= beside;
        attn_gemm -= beside;
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
      if (beside_attn) {
        if (sp) gather_beside(lc.qkv_dgrad_s, "attention backward", label("attention qkv dgrad", c, k, j), ub_qkvd);
        reduce_beside(lc.qkv_wgrad_s, "attention backward", label("attention qkv wgrad", c, k, j), ub_qkvw);
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
