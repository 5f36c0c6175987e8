#include "models/compute/attention.hpp"

#include <algorithm>

#include "models/compute/gemm.hpp"

namespace shardsim::compute {

namespace {
double d(std::uint64_t v) { return static_cast<double>(v); }
}  // namespace

double flash_attention_flops(const AttentionShape& a, bool backward) {
  const double fwd = 4.0 * d(a.batch) * d(a.heads) * d(a.seq_q) * d(a.seq_kv) * d(a.head_dim) * (a.causal ? 0.5 : 1.0);
  return backward ? 2.5 * fwd : fwd;
}

double flash_attention_bytes(const AttentionShape& a, double e, bool backward) {
  const double q = d(a.batch) * d(a.seq_q) * d(a.heads) * d(a.head_dim);      // Q, O, dO, dQ
  const double kv = d(a.batch) * d(a.seq_kv) * d(a.kv_heads) * d(a.head_dim);  // K, V, dK, dV each
  const double stats = 4.0 * d(a.batch) * d(a.heads) * d(a.seq_q);             // fp32 per row
  if (!backward) return e * (2.0 * q + 2.0 * kv) + stats;
  // Read Q, O, dO, K, V; write dQ, dK, dV; fp32 dQ accumulator read + written; LSE and D.
  return e * (4.0 * q + 4.0 * kv) + 8.0 * q + 2.0 * stats;
}

double attention_time_s(const Device& dev, const AttentionShape& a, MathType m, bool backward) {
  if (a.batch == 0 || a.heads == 0 || a.seq_q == 0 || a.seq_kv == 0 || a.head_dim == 0) return 0.0;
  const double e = element_bytes(m);
  const double mem_Bps = dev.hbm_Bps * dev.mem_eff;
  if (a.flash) {
    const double eff = backward ? dev.attn_bwd_eff / (a.triton ? kTritonBwdSlowdown : 1.0)
                                : dev.attn_fwd_eff / (a.triton ? kTritonFwdSlowdown : 1.0);
    const double tc = flash_attention_flops(a, backward) / (dev.peak(m) * eff);
    const double tm = flash_attention_bytes(a, e, backward) / mem_Bps;
    return std::max(tc, tm) + (backward ? 3.0 : 1.0) * dev.launch_s;
  }
  return unfused_attention_time_s(dev, a, m, backward, backward ? dev.unfused_mem_eff_bwd : dev.unfused_mem_eff_fwd);
}

double unfused_attention_time_s(const Device& dev, const AttentionShape& a, MathType m, bool backward,
                                double mem_eff) {
  if (mem_eff <= 0) mem_eff = dev.mem_eff;
  const double e = element_bytes(m);
  const double mem_Bps = dev.hbm_Bps * mem_eff;
  const std::uint64_t bh = a.batch * a.heads;
  const double scores = d(bh) * d(a.seq_q) * d(a.seq_kv);
  const double ew_launch = (a.dropout ? 2.0 : 1.0) * dev.launch_s;
  if (!backward) {
    const double gemms = gemm_time_s(dev, {a.seq_q, a.seq_kv, a.head_dim, bh}, m, mem_eff) +  // Q K^T
                         gemm_time_s(dev, {a.seq_q, a.head_dim, a.seq_kv, bh}, m, mem_eff);   // P V
    double bytes = 2.0 * e * scores;                   // softmax: read scores, write P
    if (a.dropout) bytes += (2.0 * e + 1.0) * scores;  // read P, write dropped P and the mask
    return gemms + bytes / mem_Bps + ew_launch;
  }
  const double gemms = gemm_time_s(dev, {a.seq_kv, a.head_dim, a.seq_q, bh}, m, mem_eff) +  // dV = P^T dO
                       gemm_time_s(dev, {a.seq_q, a.seq_kv, a.head_dim, bh}, m, mem_eff) +  // dP = dO V^T
                       gemm_time_s(dev, {a.seq_q, a.head_dim, a.seq_kv, bh}, m, mem_eff) +  // dQ = dS K
                       gemm_time_s(dev, {a.seq_kv, a.head_dim, a.seq_q, bh}, m, mem_eff);   // dK = dS^T Q
  double bytes = 3.0 * e * scores;                   // softmax backward: read P, dP; write dS
  if (a.dropout) bytes += (2.0 * e + 1.0) * scores;  // read dP and the mask, write
  return gemms + bytes / mem_Bps + ew_launch;
}

}  // namespace shardsim::compute
