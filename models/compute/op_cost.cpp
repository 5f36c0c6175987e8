#include "models/compute/op_cost.hpp"

namespace shardsim::compute {

OpTime op_time_parts(const Device& dev, const OpShape& op, MathType m, bool backward) {
  double t = 0;
  for (const auto& g : op.gemms) {
    if (!backward) {
      t += gemm_time_s(dev, g, m);
    } else {
      t += gemm_time_s(dev, {g.m, g.k, g.n, g.batch}, m);  // dX = dY W^T
      t += gemm_time_s(dev, {g.k, g.n, g.m, g.batch}, m);  // dW = X^T dY
    }
  }
  const double gemm = t;
  if (op.attention) t += attention_time_s(dev, *op.attention, m, backward);
  const double bytes = backward ? op.ew_bytes_bwd : op.ew_bytes_fwd;
  const double kernels = backward ? op.ew_kernels_bwd : op.ew_kernels_fwd;
  if (bytes > 0) t += bytes / (dev.hbm_Bps * dev.mem_eff);
  t += kernels * dev.launch_s;
  return {t, gemm};
}

double op_time_s(const Device& dev, const OpShape& op, MathType m, bool backward) {
  return op_time_parts(dev, op, m, backward).total_s;
}

}  // namespace shardsim::compute
