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
