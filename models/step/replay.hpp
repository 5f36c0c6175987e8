#pragma once
// The `trace` strategy (step.hpp): one recorded step replayed as the trace has it. Internal to
// models/step; simulate_step() is the public entry.
//
// Two streams on rank 0, each in trace order (FIFO, as a CUDA stream runs its kernels):
//  - compute: every op without a collective, timed by the roofline or, with measured_compute,
//    by its measured duration where the trace has one;
//  - communication: every recorded collective, timed by the CommModel for topology ranks
//    0..group_size-1 (the collectives layer: `shardsim collective --ranks group_size`);
//    measured collective durations are not used.
// An op starts when its stream is free and every op it depends on has finished:
//   start(i) = max(free(stream(i)), max over d in deps(i) of end(d)), end(i) = start(i) + dur(i).
// step_time_s = the last end. forward_s / backward_s / update_s sum compute durations by phase
// ("other" counted as forward by the converter); exposed_comm_s = step_time_s - their sum (the
// compute stream only ever waits for communication). Complexity O(ops + deps) plus one
// CommModel call per distinct collective.
// Throws ConfigError naming the op when a collective needs more ranks than the CommModel's
// devices().
#include "models/compute/device.hpp"
#include "models/step/step.hpp"

namespace shardsim::step::detail {

void replay_trace(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm, StepResult& r);

}  // namespace shardsim::step::detail
