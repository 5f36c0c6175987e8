#include "models/compute/transformer_cost.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/error.hpp"

namespace shardsim::compute {

namespace {
double d(std::uint64_t v) { return static_cast<double>(v); }

void check(const LayerShape& s) {
  const char* where = "layer shape";
  if (s.hidden == 0 || s.heads == 0 || s.kv_heads == 0 || s.ffn == 0 || s.seq == 0 || s.micro_batch == 0 || s.tp == 0) {
    throw ConfigError(where, "a zero size", "positive hidden, heads, kv_heads, ffn, seq, micro_batch and tp");
  }
  if (s.hidden % s.tp != 0 || s.heads % s.tp != 0 || s.ffn % s.tp != 0 ||
      (s.kv_heads >= s.tp && s.kv_heads % s.tp != 0)) {
    throw ConfigError(where, fmt::format("tp {} does not divide hidden {}, heads {}, kv heads {} or ffn {}", s.tp,
                                         s.hidden, s.heads, s.kv_heads, s.ffn),
                      "a tensor-parallel degree dividing hidden, heads, ffn and kv heads");
  }
}
}  // namespace

OpShape norm_kernels(double e, double elements, bool eager) {
  OpShape o;
  if (eager) {
    o.ew_bytes_fwd = (28 + 4 * e) * elements;
    o.ew_bytes_bwd = (72 + 8 * e) * elements;
    o.ew_kernels_fwd = 8;
    o.ew_kernels_bwd = 13;
  } else {
    o.ew_bytes_fwd = 2 * e * elements;
    o.ew_bytes_bwd = 3 * e * elements;
    o.ew_kernels_fwd = 1;
    o.ew_kernels_bwd = 2;
  }
  return o;
}

std::vector<LayerOp> layer_ops(const LayerShape& s) {
  check(s);
  const double e = element_bytes(s.math);
  const std::uint64_t T = s.micro_batch * s.seq, h = s.hidden, dh = s.hidden / s.heads;
  const std::uint64_t heads = s.heads / s.tp;
  const std::uint64_t kvh = std::max<std::uint64_t>(1, s.kv_heads / s.tp);  // replicated when kv < tp
  // GEMM widths from hidden (GPT-3 13B's printed d_model 5140 is not a multiple of its 40
  // heads: the projections keep their width, the attention core uses floor(h / heads)).
  const std::uint64_t q_cols = h / s.tp, kv_cols = h * s.kv_heads / s.heads / (s.kv_heads >= s.tp ? s.tp : s.kv_heads);
  const std::uint64_t f = s.ffn / s.tp;
  const double Tr = s.sequence_parallel ? d(T) / d(s.tp) : d(T);  // tokens of the replicated parts
  const double Th = Tr * d(h);

  auto norm = [&](std::string name) { return LayerOp{std::move(name), norm_kernels(e, Th, s.eager_norm)}; };
  auto residual = [&](OpShape& o) {  // + dropout when on
    o.ew_bytes_fwd += 3 * e * Th;
    o.ew_bytes_bwd += 3 * e * Th;
    o.ew_kernels_fwd += 1;
    o.ew_kernels_bwd += 1;
    if (s.dropout) {
      o.ew_bytes_fwd += (2 * e + 1) * Th;
      o.ew_bytes_bwd += (2 * e + 1) * Th;
      o.ew_kernels_fwd += 1;
      o.ew_kernels_bwd += 1;
    }
  };

  std::vector<LayerOp> ops;
  ops.push_back(norm("norm1"));

  LayerOp qkv{"attn.qkv", {}};
  if (s.fused_qkv) {
    qkv.shape.gemms.push_back({T, q_cols + 2 * kv_cols, h, 1});
  } else {
    qkv.shape.gemms.push_back({T, q_cols, h, 1});
    qkv.shape.gemms.push_back({T, kv_cols, h, 1});
    qkv.shape.gemms.push_back({T, kv_cols, h, 1});
  }
  ops.push_back(std::move(qkv));

  LayerOp core{"attn.core", {}};
  core.shape.attention =
      AttentionShape{s.micro_batch, heads, kvh, s.seq, s.seq, dh, s.causal, s.flash, s.dropout, s.flash && s.triton_attention};
  if (s.rotary) {
    const double qk = d(T) * d(q_cols + kv_cols);
    core.shape.ew_bytes_fwd = core.shape.ew_bytes_bwd = (2 * e + 16) * qk;
    core.shape.ew_kernels_fwd = core.shape.ew_kernels_bwd = 6;
  }
  if (s.repeat_kv && kvh < heads) {
    const double copy = 2 * e * d(T) * d(q_cols + kv_cols);  // K and V: read the kv heads, write every head
    core.shape.ew_bytes_fwd += copy;
    core.shape.ew_bytes_bwd += copy;
    core.shape.ew_kernels_fwd += 2;
    core.shape.ew_kernels_bwd += 2;
  }
  ops.push_back(std::move(core));

  LayerOp out{"attn.out", {}};
  out.shape.gemms.push_back({T, h, q_cols, 1});
  residual(out.shape);
  ops.push_back(std::move(out));

  ops.push_back(norm("norm2"));

  LayerOp up{"mlp.up", {}};
  up.shape.gemms.push_back({T, f, h, 1});
  if (s.gated) up.shape.gemms.push_back({T, f, h, 1});
  ops.push_back(std::move(up));

  LayerOp act{"mlp.act", {}};
  const double Tf = d(T) * d(f);
  if (s.gated) {
    act.shape.ew_bytes_fwd = 5 * e * Tf;
    act.shape.ew_bytes_bwd = 8 * e * Tf;
    act.shape.ew_kernels_fwd = 2;
    act.shape.ew_kernels_bwd = 3;
  } else {
    act.shape.ew_bytes_fwd = 2 * e * Tf;
    act.shape.ew_bytes_bwd = 3 * e * Tf;
    act.shape.ew_kernels_fwd = 1;
    act.shape.ew_kernels_bwd = 1;
  }
  ops.push_back(std::move(act));

  LayerOp down{"mlp.down", {}};
  down.shape.gemms.push_back({T, h, f, 1});
  residual(down.shape);
  ops.push_back(std::move(down));
  return ops;
}

LayerTime layer_time(const Device& dev, const LayerShape& s) {
  LayerTime t;
  for (const auto& o : layer_ops(s)) {
    t.forward_s += op_time_s(dev, o.shape, s.math, false);
    t.backward_s += op_time_s(dev, o.shape, s.math, true);
  }
  return t;
}

}  // namespace shardsim::compute
