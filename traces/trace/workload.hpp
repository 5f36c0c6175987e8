#pragma once
// Native trace -> step-model workload (models/step/workload.hpp).
//  - Workload::ops, what the weight-update strategies schedule: forward and backward ops in
//    trace order; update-phase ops are dropped (the optimizer model computes the update), so
//    are communication ops (the strategy issues its own; their count is kept in
//    dropped_collectives). Ops of phase "other" count as forward work.
//  - Workload::recorded, what the `trace` strategy replays: every op in trace order, with its
//    collective (kind, size, group size), phase ("other" as forward), measured duration and
//    dependencies as indices of earlier ops (trace::validate guarantees they are earlier).
// Version 2 (every rank's ops): `recorded` holds every rank's ops (rank, process group ranks
// and name, p2p transfers; deps as indices into `recorded`), per_rank is set; `ops`, `params`
// and dropped_collectives describe the first rank only (a weight-update strategy models one
// replica's compute).
// Complexity O(ops + tensors + deps).
#include "models/step/workload.hpp"
#include "traces/trace/trace.hpp"

namespace shardsim::trace {

step::Workload to_workload(const Trace& t);

}  // namespace shardsim::trace
