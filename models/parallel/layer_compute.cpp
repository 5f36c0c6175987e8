// Per-layer compute of layer_compute.hpp (formulas and sources there).
#include "models/parallel/layer_compute.hpp"

namespace shardsim::parallel {

namespace {

double d(std::uint64_t v) { return static_cast<double>(v); }

constexpr double kFwdKernels = 10, kBwdKernels = 20;

struct Flops {
  double attn_gemm = 0, core = 0, mlp = 0;
};

Flops layer_flops(const ModelSpec& m, const LayerShape& l) {
  const double t = d(l.tp), sq = d(l.seq) / d(l.cp), s = d(l.seq), b = d(l.micro_batch), h = d(m.hidden);
  const double ad = d(m.heads * m.dhead()), kd = d(m.kv_heads * m.dhead());
  const double tokens = b * sq;
  Flops f;
  f.attn_gemm = 2 * tokens * (h * (ad + 2 * kd) + ad * h) / t;
  f.core = 4 * tokens * s * ad / t;
  if (l.flash_attention && m.decoder) f.core /= 2;
  const double mats = m.gated_ffn ? 3.0 : 2.0;
  if (m.moe()) {
    f.mlp = 2 * tokens * mats * h * d(m.expert_width()) * d(m.top_k) * l.moe_imbalance / t;
    if (m.shared_expert_ffn != 0) f.mlp += 2 * tokens * mats * h * d(m.shared_expert_ffn) / t;
    f.mlp += 2 * tokens * h * d(m.experts);  // router
  } else {
    f.mlp = 2 * tokens * mats * h * d(m.ffn) / t;
  }
  return f;
}

}  // namespace

LayerCompute layer_compute(const ModelSpec& m, const compute::Device& dev, const LayerShape& l) {
  const Flops f = layer_flops(m, l);
  const double rate = dev.peak(l.math) * dev.flops_eff, bw = dev.hbm_Bps * dev.mem_eff;
  ActivationShape a;
  a.seq = l.seq;
  a.micro_batch = l.micro_batch;
  a.tp = l.tp;
  a.cp = l.cp;
  a.sequence_parallel = l.sequence_parallel;
  a.flash_attention = l.flash_attention;
  a.recompute = Recompute::none;
  const double sbh = d(l.seq) / d(l.cp) * d(l.micro_batch) * d(m.hidden);
  const double elementwise = layer_activation_bytes(m, a) + 24 * (l.sequence_parallel ? sbh / d(l.tp) : sbh);
  // The elementwise traffic is split between the two halves in proportion to their FLOPs.
  const double total = f.attn_gemm + f.core + f.mlp;
  const double attn_share = total > 0 ? (f.attn_gemm + f.core) / total : 0.5;
  LayerCompute c;
  c.core_fwd_s = f.core / rate;
  c.attention_fwd_s = (f.attn_gemm + f.core) / rate + attn_share * elementwise / bw + kFwdKernels / 2 * dev.launch_s;
  c.mlp_fwd_s = f.mlp / rate + (1 - attn_share) * elementwise / bw + kFwdKernels / 2 * dev.launch_s;
  c.attention_bwd_s = 2 * (f.attn_gemm + f.core) / rate + 2 * attn_share * elementwise / bw + kBwdKernels / 2 * dev.launch_s;
  c.mlp_bwd_s = 2 * f.mlp / rate + 2 * (1 - attn_share) * elementwise / bw + kBwdKernels / 2 * dev.launch_s;
  switch (l.recompute) {
    case Recompute::none: break;
    case Recompute::selective: c.recompute_s = c.core_fwd_s + dev.launch_s; break;
    case Recompute::full: c.recompute_s = c.fwd_s(); break;
  }
  c.forward_flops = total;
  return c;
}

HeadCompute head_compute(const ModelSpec& m, const compute::Device& dev, const LayerShape& l) {
  const std::uint64_t pad = 128 * l.tp;  // as memory_stage.hpp: vocabulary padded to 128 t
  const double vocab = d((m.vocab + pad - 1) / pad * pad) / d(l.tp);
  const double tokens = d(l.seq) / d(l.cp) * d(l.micro_batch);
  const double gemm = 2 * tokens * d(m.hidden) * vocab;
  const double rate = dev.peak(l.math) * dev.flops_eff, bw = dev.hbm_Bps * dev.mem_eff;
  const double logits = 4 * tokens * vocab;  // fp32 logits: written, then read by the softmax
  HeadCompute h;
  h.fwd_s = gemm / rate + 2 * logits / bw + 2 * dev.launch_s;
  h.bwd_s = 2 * gemm / rate + 2 * logits / bw + 3 * dev.launch_s;
  return h;
}

}  // namespace shardsim::parallel
