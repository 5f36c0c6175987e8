#include "traces/trace/workload.hpp"

#include <unordered_map>

namespace shardsim::trace {

namespace {

step::OpPhase step_phase(Phase p) {
  switch (p) {
    case Phase::backward: return step::OpPhase::backward;
    case Phase::update: return step::OpPhase::update;
    case Phase::forward:
    case Phase::other: return step::OpPhase::forward;
  }
  return step::OpPhase::forward;
}

}  // namespace

step::Workload to_workload(const Trace& t) {
  step::Workload w;
  w.name = t.name;
  w.batch_per_replica = t.batch_per_replica;
  w.seq_len = t.seq_len;
  w.units = std::max<std::uint32_t>(1, t.num_units());
  w.ops.reserve(t.ops.size());
  w.recorded.reserve(t.ops.size());
  std::unordered_map<std::uint64_t, std::size_t> index;  // op id -> position (per rank in v2)
  index.reserve(t.ops.size());
  w.per_rank = t.version == 2;
  for (const auto& op : t.ops) {
    const bool first_rank = !w.per_rank || *op.rank == *t.ops.front().rank;
    if (w.per_rank && !w.recorded.empty() && w.recorded.back().rank != *op.rank) index.clear();
    for (const auto& p : op.params) {
      if (!first_rank) break;
      step::ParamTensor pt{p.name, p.elements, op.unit, 0, 0};
      if (p.shape.size() >= 2) {
        pt.rows = p.shape.front();
        pt.cols = p.elements / p.shape.front();
      }
      w.params.push_back(std::move(pt));
    }
    step::RecordedOp rec;
    rec.name = op.name;
    rec.phase = step_phase(op.phase);
    rec.flops = op.flops;
    rec.bytes = op.bytes;
    rec.measured_s = op.duration_s;
    rec.shape = op.shape;
    if (op.collective) {
      const auto& c = *op.collective;
      rec.collective = step::RecordedCollective{c.kind, c.size_bytes, c.group_size, c.ranks, {}};
      if (c.group) {
        for (const auto& pg : t.process_groups) {
          if (pg.id == *c.group) rec.collective->group_name = pg.name;
        }
      }
    }
    if (op.p2p) rec.p2p = step::RecordedP2P{op.p2p->send, op.p2p->peer, op.p2p->size_bytes, op.p2p->tag};
    rec.rank = op.rank.value_or(-1);
    rec.deps.reserve(op.deps.size());
    for (const auto d : op.deps) rec.deps.push_back(index.at(d));
    index.emplace(op.id, w.recorded.size());
    w.recorded.push_back(std::move(rec));
    if (!first_rank) continue;
    if (op.collective || op.p2p) {
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
    o.shape = op.shape;
    w.ops.push_back(o);
  }
  return w;
}

}  // namespace shardsim::trace
