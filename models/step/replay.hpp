#pragma once
// The `trace` strategy (step.hpp): one recorded step executed as its recorded graph, on every
// rank of the step. Internal to models/step; simulate_step() is the public entry, the builder
// is detail::build_replay (graph_builders.hpp).
//
// Each recorded op is one op of every rank's program (rank_program.hpp):
//  - compute: every op without a collective, on the compute stream, timed by the roofline or,
//    with measured_compute, by its measured duration where the trace has one;
//  - communication: every recorded collective, on the communication stream, on the rank's
//    group: format v1 records a group size g, and rank r's group is the block of g ranks
//    holding r (ranks 0..g-1 for rank 0: the collectives layer's `shardsim collective --ranks
//    g`); timed by the CommModel. Measured collective durations are not used.
// Streams are FIFO in trace order (as a CUDA stream runs its kernels) and an op starts when
// its streams are free and every op it depends on has finished (executor.hpp):
//   start(i) = max(free(stream(i)), max over d in deps(i) of end(d)), end(i) = start(i) + dur(i).
// step_time_s = the slowest rank's last end. forward_s / backward_s / update_s sum compute
// durations by phase ("other" counted as forward by the converter); exposed_comm_s =
// step_time_s - their sum (the compute stream only ever waits for communication).
// Throws ConfigError naming the op when a collective needs more ranks than the CommModel's
// devices(), or depends on a later op.

// Format v2 (Workload::per_rank): every rank's own recorded ops, executed as one task graph of
// every rank of the trace (rank r on topology device r; no folding):
//  - compute ops on the rank's compute stream (stream 0), in trace order;
//  - a collective on its process group: the k-th collective a rank issues on a group is the
//    k-th collective of that group on every member (NCCL matches a communicator's collectives
//    in issue order); members must agree on kind and size. Each group runs on a communication
//    stream of its own on every member (groups that share a rank on different streams), so
//    collectives of different groups overlap, and at flow fidelity share links max-min fairly
//    on one network (TopologyComm::concurrent_runner);
//  - a send/recv pair (the n-th send of (src, dst, tag) with the n-th recv) on the rank's
//    point-to-point stream: a rendezvous, then a transfer timed as a broadcast of its bytes on
//    the pair rooted at the sender (a timer at both fidelities).
// Throws ConfigError naming the op for: a rank, peer or group member beyond comm.devices()
// (where = "--topology") or not a rank of the trace; members disagreeing on a collective; a
// member that never issues a group's collective; a dependency cycle (collectives issued in
// different orders on different ranks: NCCL would hang); a send without a matching receive.
#include "models/compute/device.hpp"
#include "models/step/step.hpp"

namespace shardsim::step::detail {
void execute_replay_per_rank(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm,
                             StepResult& r);
}  // namespace shardsim::step::detail
