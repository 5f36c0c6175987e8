// Per-layer compute of layer_compute.hpp (formulas and sources there; the kernels are
// models/compute's per-op model).
#include "models/parallel/layer_compute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "models/compute/attention.hpp"
#include "models/compute/gemm.hpp"
#include "models/compute/op_cost.hpp"
#include "models/compute/transformer_cost.hpp"
#include "sim/error.hpp"

namespace shardsim::parallel {

namespace {

double d(std::uint64_t v) { return static_cast<double>(v); }

// Indices into compute::layer_ops (transformer_cost.hpp: the zoo's order).
enum : std::size_t { kNorm1, kQkv, kCore, kOut, kNorm2, kUp, kAct, kDown, kOps };

compute::LayerShape kernel_shape(const ModelSpec& m, const LayerShape& l, std::uint64_t tokens_seq, std::uint64_t batch,
                                 std::uint64_t ffn) {
  compute::LayerShape s;
  s.hidden = m.hidden;
  s.heads = m.heads;
  s.kv_heads = m.kv_heads;
  s.ffn = ffn;
  s.seq = tokens_seq;
  s.micro_batch = batch;
  s.tp = l.tp;
  s.gated = m.gated_ffn;
  s.flash = l.flash_attention;
  s.causal = m.decoder;
  s.dropout = m.dropout;
  s.rotary = l.eager_kernels && m.decoder && !m.learned_positions;  // Megatron-Core fuses RoPE (header)
  s.fused_qkv = true;
  s.eager_norm = l.eager_kernels && m.rmsnorm;
  s.repeat_kv = l.eager_kernels;
  s.sequence_parallel = l.sequence_parallel;
  s.math = l.math;
  return s;
}

double gemms_fwd(const compute::Device& dev, const compute::OpShape& o, compute::MathType mt) {
  double t = 0;
  for (const auto& g : o.gemms) t += compute::gemm_time_s(dev, g, mt);
  return t;
}
double gemms_dgrad(const compute::Device& dev, const compute::OpShape& o, compute::MathType mt) {
  double t = 0;
  for (const auto& g : o.gemms) t += compute::gemm_time_s(dev, {g.m, g.k, g.n, g.batch}, mt);
  return t;
}
double gemms_wgrad(const compute::Device& dev, const compute::OpShape& o, compute::MathType mt) {
  double t = 0;
  for (const auto& g : o.gemms) t += compute::gemm_time_s(dev, {g.k, g.n, g.m, g.batch}, mt);
  return t;
}
double gemm_flops(const compute::OpShape& o) {
  double f = 0;
  for (const auto& g : o.gemms) f += 2 * d(g.m) * d(g.n) * d(g.k) * d(g.batch);
  return f;
}
compute::OpShape without_gemms(compute::OpShape o) {
  o.gemms.clear();
  return o;
}

// Forward and backward time of an op, and of those the GEMM kernels' part.
struct Times {
  double fwd = 0, bwd = 0, gemm_fwd = 0, gemm_bwd = 0;
  Times& operator+=(const Times& x) {
    fwd += x.fwd;
    bwd += x.bwd;
    gemm_fwd += x.gemm_fwd;
    gemm_bwd += x.gemm_bwd;
    return *this;
  }
};
Times op_times(const compute::Device& dev, const compute::OpShape& o, compute::MathType mt) {
  const auto f = compute::op_time_parts(dev, o, mt, false), b = compute::op_time_parts(dev, o, mt, true);
  return {f.total_s, b.total_s, f.gemm_s, b.gemm_s};
}
// GEMMs alone: all of their time is GEMM time.
Times gemm_times(double fwd, double bwd) { return {fwd, bwd, fwd, bwd}; }

}  // namespace

LayerCompute layer_compute(const ModelSpec& m, const compute::Device& dev, const LayerShape& l) {
  const std::uint64_t f = m.moe() ? m.expert_width() : m.ffn;
  if (l.tp == 0 || m.hidden % l.tp != 0 || f % l.tp != 0) {
    throw ConfigError("--mesh", fmt::format("tp={} with hidden {} and FFN width {} of {}", l.tp, m.hidden, f, m.name),
                      "a tp that divides the hidden size and the FFN width (Megatron-LM splits both)");
  }
  const std::uint64_t sq = l.seq / l.cp;
  const auto mt = l.math;
  auto ops = compute::layer_ops(kernel_shape(m, l, sq, l.micro_batch, f));
  // Context parallelism: the rank's s_q queries attend over all s keys.
  auto& att = *ops[kCore].shape.attention;
  att.seq_q = sq;
  att.seq_kv = l.seq;

  LayerCompute c;
  Times t[kOps];
  for (std::size_t i = 0; i < kOps; ++i) t[i] = op_times(dev, ops[i].shape, mt);
  c.qkv_fwd_s = gemms_fwd(dev, ops[kQkv].shape, mt);
  c.out_fwd_s = gemms_fwd(dev, ops[kOut].shape, mt);
  c.qkv_wgrad_s = gemms_wgrad(dev, ops[kQkv].shape, mt);
  c.qkv_dgrad_s = gemms_dgrad(dev, ops[kQkv].shape, mt);
  c.out_dgrad_s = gemms_dgrad(dev, ops[kOut].shape, mt);
  c.attention_gemm_fwd_s = t[kQkv].gemm_fwd + t[kOut].gemm_fwd;
  c.attention_gemm_bwd_s = t[kQkv].gemm_bwd + t[kOut].gemm_bwd;
  c.core_fwd_s = t[kCore].fwd;
  c.core_bwd_s = t[kCore].bwd;
  c.attention_fwd_s = t[kNorm1].fwd + t[kQkv].fwd + t[kCore].fwd + t[kOut].fwd;
  c.attention_bwd_s = t[kNorm1].bwd + t[kQkv].bwd + t[kCore].bwd + t[kOut].bwd;
  c.forward_flops = gemm_flops(ops[kQkv].shape) + gemm_flops(ops[kOut].shape) +
                    (att.flash ? compute::flash_attention_flops(att, false)
                               : 4 * d(att.batch) * d(att.heads) * d(att.seq_q) * d(att.seq_kv) * d(att.head_dim));

  if (!m.moe()) {
    c.up_fwd_s = gemms_fwd(dev, ops[kUp].shape, mt);
    c.down_fwd_s = gemms_fwd(dev, ops[kDown].shape, mt);
    c.up_wgrad_s = gemms_wgrad(dev, ops[kUp].shape, mt);
    c.up_dgrad_s = gemms_dgrad(dev, ops[kUp].shape, mt);
    c.down_dgrad_s = gemms_dgrad(dev, ops[kDown].shape, mt);
    c.mlp_fwd_s = t[kNorm2].fwd + t[kUp].fwd + t[kAct].fwd + t[kDown].fwd;
    c.mlp_bwd_s = t[kNorm2].bwd + t[kUp].bwd + t[kAct].bwd + t[kDown].bwd;
    c.mlp_gemm_fwd_s = t[kUp].gemm_fwd + t[kDown].gemm_fwd;
    c.mlp_gemm_bwd_s = t[kUp].gemm_bwd + t[kDown].gemm_bwd;
    c.forward_flops += gemm_flops(ops[kUp].shape) + gemm_flops(ops[kDown].shape);
  } else {
    // Routed experts: the busiest rank's tokens x top_k through its experts (one grouped GEMM
    // per matrix); the residual add of the layer's tokens from the dense ops (kDown without
    // its GEMM); the router; a shared expert over the layer's tokens.
    const auto routed = static_cast<std::uint64_t>(
        std::max(1.0, std::round(d(l.micro_batch * sq) * d(m.top_k) * l.moe_imbalance)));
    const auto ex = compute::layer_ops(kernel_shape(m, l, routed, 1, f));
    Times mlp = t[kNorm2];
    mlp += op_times(dev, ex[kUp].shape, mt);
    mlp += op_times(dev, ex[kAct].shape, mt);
    mlp += gemm_times(gemms_fwd(dev, ex[kDown].shape, mt),
                      gemms_dgrad(dev, ex[kDown].shape, mt) + gemms_wgrad(dev, ex[kDown].shape, mt));
    mlp += op_times(dev, without_gemms(ops[kDown].shape), mt);
    const compute::GemmShape router{l.micro_batch * sq, m.experts, m.hidden, 1};
    mlp += gemm_times(compute::gemm_time_s(dev, router, mt), compute::gemm_time_s(dev, {router.m, router.k, router.n, 1}, mt) +
                                                                 compute::gemm_time_s(dev, {router.k, router.n, router.m, 1}, mt));
    c.forward_flops += gemm_flops(ex[kUp].shape) + gemm_flops(ex[kDown].shape) + 2 * d(router.m) * d(router.n) * d(router.k);
    c.up_fwd_s = gemms_fwd(dev, ex[kUp].shape, mt);
    c.down_fwd_s = gemms_fwd(dev, ex[kDown].shape, mt);
    c.up_wgrad_s = gemms_wgrad(dev, ex[kUp].shape, mt);
    c.up_dgrad_s = gemms_dgrad(dev, ex[kUp].shape, mt);
    c.down_dgrad_s = gemms_dgrad(dev, ex[kDown].shape, mt);
    if (m.shared_expert_ffn != 0) {
      if (m.shared_expert_ffn % l.tp != 0) {
        throw ConfigError("--mesh", fmt::format("tp={} with the shared expert width {} of {}", l.tp, m.shared_expert_ffn, m.name),
                          "a tp that divides the shared expert width");
      }
      const auto sh = compute::layer_ops(kernel_shape(m, l, sq, l.micro_batch, m.shared_expert_ffn));
      mlp += op_times(dev, sh[kUp].shape, mt);
      mlp += op_times(dev, sh[kAct].shape, mt);
      mlp += gemm_times(gemms_fwd(dev, sh[kDown].shape, mt),
                        gemms_dgrad(dev, sh[kDown].shape, mt) + gemms_wgrad(dev, sh[kDown].shape, mt));
      c.forward_flops += gemm_flops(sh[kUp].shape) + gemm_flops(sh[kDown].shape);
    }
    c.mlp_fwd_s = mlp.fwd;
    c.mlp_bwd_s = mlp.bwd;
    c.mlp_gemm_fwd_s = mlp.gemm_fwd;
    c.mlp_gemm_bwd_s = mlp.gemm_bwd;
  }
  switch (l.recompute) {
    case Recompute::none: break;
    case Recompute::selective: c.recompute_s = c.core_fwd_s; break;
    case Recompute::full: c.recompute_s = c.fwd_s(); break;
  }
  return c;
}

HeadCompute head_compute(const ModelSpec& m, const compute::Device& dev, const LayerShape& l) {
  const std::uint64_t pad = 128 * l.tp;  // as memory_stage.hpp: vocabulary padded to 128 t
  const std::uint64_t vocab = (m.vocab + pad - 1) / pad * pad / l.tp;
  const std::uint64_t tokens = l.seq / l.cp * l.micro_batch;
  const compute::GemmShape g{tokens, vocab, m.hidden, 1};
  const double bw = dev.hbm_Bps * dev.mem_eff;
  const double logits = 4 * d(tokens) * d(vocab);  // fp32 logits: written, then read by the softmax
  HeadCompute h;
  h.gemm_fwd_s = compute::gemm_time_s(dev, g, l.math);
  h.gemm_bwd_s = compute::gemm_time_s(dev, {g.m, g.k, g.n, 1}, l.math) + compute::gemm_time_s(dev, {g.k, g.n, g.m, 1}, l.math);
  h.fwd_s = h.gemm_fwd_s + 2 * logits / bw + dev.launch_s;
  h.bwd_s = h.gemm_bwd_s + 2 * logits / bw + dev.launch_s;
  return h;
}

}  // namespace shardsim::parallel
