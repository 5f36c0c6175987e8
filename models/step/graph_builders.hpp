#pragma once
// Graph builders (DESIGN 8), registered by strategy: each turns a workload and a step config
// into one rank's program (rank_program.hpp), which every rank of the step runs. Internal to
// models/step; simulate_step() (step.hpp) is the public entry.
//  - replicated, sharded, zero1, zero2: the bucketed builder (strategy_graphs.cpp);
//  - zero3: the per-unit gather builder (strategy_graphs.cpp);
//  - trace: the recorded graph as is (replay.hpp).
// The schedules are those documented in step.hpp. A builder also fills the non-timing fields
// of the result (updated elements, padding).
#include <vector>

#include "models/compute/device.hpp"
#include "models/step/rank_program.hpp"
#include "models/step/step.hpp"

namespace shardsim::step::detail {

using GraphBuildFn = RankProgram (*)(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm,
                                     StepResult& r);

struct GraphBuilderInfo {
  Strategy strategy;
  const char* builder;  ///< name of the builder
  GraphBuildFn build;
};

/// One entry per Strategy, in enum order.
const std::vector<GraphBuilderInfo>& graph_builders();
const GraphBuilderInfo& graph_builder(Strategy s);

RankProgram build_bucketed(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm,
                           StepResult& r);
RankProgram build_zero3(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm,
                        StepResult& r);
RankProgram build_replay(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm,
                         StepResult& r);

}  // namespace shardsim::step::detail
