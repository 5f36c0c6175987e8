#include "traces/trace/workload.hpp"

namespace shardsim::trace {

step::Workload to_workload(const Trace& t) {
  step::Workload w;
  w.name = t.name;
  w.batch_per_replica = t.batch_per_replica;
  w.seq_len = t.seq_len;
  w.units = std::max<std::uint32_t>(1, t.num_units());
  w.ops.reserve(t.ops.size());
  for (const auto& op : t.ops) {
    for (const auto& p : op.params) {
      step::ParamTensor pt{p.name, p.elements, op.unit, 0, 0};
      if (p.shape.size() >= 2) {
        pt.rows = p.shape.front();
        pt.cols = p.elements / p.shape.front();
      }
      w.params.push_back(std::move(pt));
    }
    if (op.collective) {
      ++w.dropped_collectives;
      continue;
    }
    if (op.phase == Phase::update) continue;
    step::WorkOp o;
    o.phase = op.phase == Phase::backward ? step::OpPhase::backward : step::OpPhase::forward;
    o.unit = op.unit;
    o.flops = op.flops;
    o.bytes = op.bytes;
    o.activation_bytes = op.activation_bytes;
    o.measured_s = op.duration_s;
    w.ops.push_back(o);
  }
  return w;
}

}  // namespace shardsim::trace
