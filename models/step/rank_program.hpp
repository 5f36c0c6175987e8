#pragma once
// One rank's program and its instantiation on every rank (DESIGN 8): what the graph builders
// (strategy graphs, trace replay) emit and how it becomes a TaskGraph.
//
// A RankProgram is the op sequence that every rank of the step runs: compute ops with their
// durations, and collectives on a group *role* (the data-parallel group, the sharding
// subgroup, ...). A role partitions the step's ranks into groups; a rank's collective of that
// role runs on its group of the role. instantiate() creates, op by op, one compute node per
// simulated rank and one collective node per group instance (shared by its members), so every
// stream keeps the program's order.
//
// Folding (docs/training-step.md): the step's ranks fold into one representative (the first)
// when that is exact, i.e. when every rank provably has the same timeline:
//  - every rank runs the same program on the same device (true of every builder here), and
//  - for every collective op, every group instance of its role takes the same time:
//      analytical timers: the CommModel's time is equal (==) on every instance;
//      a concurrent runner (flow fidelity with overlapping collectives): the role has one
//      instance (a group of all ranks), so there is one collective for everybody.
// By induction over the program then every rank starts and ends every op at the same time, so
// the representative's times are every rank's. Otherwise (e.g. one slow link in one subgroup)
// every rank is simulated. StepConfig::fold = false simulates every rank regardless, and so
// do per-rank compute factors that differ (StepConfig::compute_scale, variation.hpp).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "models/step/executor.hpp"
#include "models/step/step.hpp"
#include "models/step/task_graph.hpp"

namespace shardsim::step {

/// A partition of the step's ranks 0..R-1 into groups (topology device indices).
struct GroupRole {
  std::string name;
  std::vector<std::vector<int>> groups;
  std::vector<std::uint32_t> of_rank;  ///< group index of each rank
};

/// `ranks` consecutive blocks of `size` ranks (the last may be shorter): the data-parallel
/// group (size = R), sharding subgroups (k).
GroupRole blocks_role(std::string name, std::uint64_t ranks, std::uint64_t size);
/// Ranks with equal index modulo `stride` (rank i with i + stride, i + 2 stride, ...).
GroupRole strided_role(std::string name, std::uint64_t ranks, std::uint64_t stride);

struct ProgramOp {
  NodeKind kind = NodeKind::compute;  ///< compute or collective
  NodePhase phase = NodePhase::forward;
  std::uint32_t stream = 0;
  double duration_s = 0;  ///< compute
  float gemm_share = 0;   ///< compute: TaskNode::gemm_share
  coll::OpKind op = coll::OpKind::allreduce;
  std::uint64_t size_bytes = 0;
  std::uint32_t role = 0;
  std::string name;  ///< only when the step records a timeline
  std::uint32_t deps_begin = 0, deps_end = 0;
};

class RankProgram {
 public:
  explicit RankProgram(std::uint64_t ranks) : ranks_(ranks) {}
  std::uint32_t add_role(GroupRole r);
  /// Compute op on stream 0. deps: earlier ops of the program.
  std::uint32_t compute(NodePhase phase, double duration_s, const std::vector<std::uint32_t>& deps, std::string name = {});
  /// Collective on the rank's group of `role`, on stream `stream` (>= 1).
  std::uint32_t collective(std::uint32_t role, std::uint32_t stream, coll::OpKind op, std::uint64_t size_bytes,
                           const std::vector<std::uint32_t>& deps, std::string name = {});
  /// Sets compute op `i`'s share of time in GEMM kernels (TaskNode::gemm_share; instantiation
  /// clamps it to [0, 1], TaskGraph::set_gemm_share).
  void set_gemm_share(std::uint32_t i, double share);
  [[nodiscard]] const std::vector<ProgramOp>& ops() const { return ops_; }
  [[nodiscard]] const std::vector<GroupRole>& roles() const { return roles_; }
  [[nodiscard]] std::uint64_t ranks() const { return ranks_; }
  [[nodiscard]] std::uint32_t streams() const { return streams_; }
  [[nodiscard]] std::span<const std::uint32_t> deps(std::uint32_t i) const {
    return {deps_.data() + ops_[i].deps_begin, ops_[i].deps_end - ops_[i].deps_begin};
  }
  void reserve(std::size_t ops) { ops_.reserve(ops); }

 private:
  std::uint32_t push(ProgramOp o, std::span<const std::uint32_t> deps);
  std::uint64_t ranks_;
  std::uint32_t streams_ = 1;
  std::vector<ProgramOp> ops_;
  std::vector<std::uint32_t> deps_;
  std::vector<GroupRole> roles_;
};

/// The program instantiated on the step's ranks: the graph, and whether it is folded.
struct ProgramInstance {
  TaskGraph graph;
  bool folded = false;
  std::uint64_t ranks = 0;  ///< R, the step's ranks (graph.ranks() are the simulated ones)
};

/// Instantiates the program over ranks 0..R-1, folded where exact (above). Never folded when
/// c.fold is false, when comm's runner is time-varying (timed faults, executor.hpp), when c.compute_scale gives ranks different factors (a folded rank must
/// never hide a slow one), or when `vary` (the caller will run it with per-rank factors).
ProgramInstance instantiate_program(const RankProgram& p, const StepConfig& c, CommModel& comm, bool vary = false);

/// Executes an instance on a fresh simulator with per-rank compute factors `scale` (indexed
/// as graph.ranks(); empty = 1) and fills the timing fields of `r` (as execute_program).
/// `ex`, when given, is an executor of inst.graph to reuse (no concurrent runner): repeated
/// runs (sampled steps) then skip the executor's set-up.
/// `contention`: Executor::set_comm_contention for this run (default none).
void run_instance(const ProgramInstance& inst, const StepConfig& c, CommModel& comm, std::span<const double> scale,
                  StepResult& r, Executor* ex = nullptr, const CommContention& contention = {});
/// True when the instance runs its collectives on comm's concurrent runner (flow fidelity
/// with collectives that may overlap): then each run needs its own runner and executor.
bool uses_runner(const ProgramInstance& inst, CommModel& comm);

/// Instantiates the program over ranks 0..R-1, folds where exact (above), executes it and
/// fills the timing fields of `r` (step time, breakdown, communication totals, per-rank
/// results, ranks / ranks_simulated / events, timeline). Collective times come from `comm`
/// (called first for rank 0's instances in program order, then for the other instances);
/// collectives that may overlap run on comm's concurrent runner where it has one.
/// `contention`: compute slowed by the collectives in flight on its rank (executor.hpp); the
/// breakdown then counts each compute node at the time it ran.
void execute_program(const RankProgram& p, const StepConfig& c, CommModel& comm, StepResult& r,
                     const CommContention& contention = {});

/// The contention a strategy step's compute runs under on `dev` (issue 15): the device's
/// compute units and the units NCCL's channels take (Device::comm_units); none when compute
/// times are measured (c.measured_compute) or recorded (the trace strategy), since those
/// already carry whatever contention they ran under.
CommContention step_contention(const compute::Device& dev, const StepConfig& c);

/// Executes a task graph of the step (every node's duration set; collectives as timers of
/// their duration_s, or on comm's concurrent runner where the graph's collectives may overlap)
/// and fills the timing fields of `r` as execute_program does. `R`: ranks of the step (the
/// graph's ranks, or the ranks a folded representative stands for); `fold`: the graph's one
/// rank stands for all R. `label_by_group`: timeline intervals of collectives name their
/// stream "comm <group name>" and send/recv "p2p" (a stream per group), else "comm", "comm N".
/// `scale`, `ex` and `contention` as for run_instance (which calls this).
void run_task_graph(const TaskGraph& g, std::uint64_t R, bool fold, const StepConfig& c, CommModel& comm, StepResult& r,
                    bool label_by_group = false, std::span<const double> scale = {}, Executor* ex = nullptr,
                    const CommContention& contention = {});

}  // namespace shardsim::step
