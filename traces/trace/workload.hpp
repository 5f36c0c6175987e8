#pragma once
// Native trace -> step-model workload (models/step/workload.hpp). Update-phase ops are
// dropped (the optimizer model computes the update), so are communication ops (the
// strategy issues its own; their count is kept in dropped_collectives). Ops of phase
// "other" count as forward work. Complexity O(ops + tensors).
#include "models/step/workload.hpp"
#include "traces/trace/trace.hpp"

namespace shardsim::trace {

step::Workload to_workload(const Trace& t);

}  // namespace shardsim::trace
