#pragma once
// The step model's CommModel on a real topology: each collective is costed by the
// collectives layer (models/collectives) for the actual group of topology ranks.
//  - analytical: the named algorithm's closed form; with "auto" on a GPU topology NCCL's
//    tuning model and choice for the collective's group (coll::nccl_auto: the System derived
//    from the group's nodes, NVLink and NICs, as `shardsim collective --algorithm auto`),
//    elsewhere (TPU, CPU, no GPU device model) the applicable algorithm with the smallest
//    analytical time (coll::choose_auto);
//  - flow: the same algorithm's schedule run on the flow network (coll::evaluate_flow); with
//    auto on a GPU topology the registered schedule closest to NCCL's choice (nccl_auto).
// Results are memoised per (kind, size, group), so a step with many same-sized collectives
// (one per transformer layer) costs one evaluation per distinct collective.
// This is the computation of `shardsim collective` (analysis/commands/collective_run.cpp) with
// default CostParams: a collective of g ranks costs the same here as `shardsim collective
// --ranks g` on the same topology, algorithm and fidelity (tests/models/step/
// test_step_trace.cpp pins it). Flow fidelity runs in-network reduction too (switch
// endpoints, collective_run.hpp), so auto picks the same algorithm at both fidelities.
// concurrent_runner() (flow fidelity): runs collectives as coll::CollectiveRun on one
// sim::FlowNetwork of the topology's links shared by every collective in flight, so
// overlapping collectives share links max-min fairly; the step uses it where its collectives
// may overlap (rank_program.hpp). A collective alone on the network takes time_s().
// Not thread safe (memo, Topology route cache): one instance per thread.
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "models/collectives/algorithm.hpp"
#include "models/step/step.hpp"
#include "topologies/topology.hpp"

namespace shardsim::step {

enum class Fidelity : std::uint8_t { analytical, flow };
/// "analytical" | "flow"; throws ConfigError naming `where`.
Fidelity fidelity_from_string(const std::string& s, const std::string& where);

class TopologyComm final : public CommModel {
 public:
  /// `algorithm`: a registered algorithm name or "auto". The topology must outlive this.
  /// `element_bytes`: dtype size of the collectives (the strategies communicate bf16; a
  /// recorded collective has no dtype in the native trace and uses CollectiveOp's default,
  /// that of `shardsim collective`).
  TopologyComm(const topo::Topology& t, Fidelity f, std::string algorithm = "auto", coll::CostParams p = {},
               std::uint32_t element_bytes = 2);
  double time_s(coll::OpKind kind, std::uint64_t size_bytes, const std::vector<int>& group) override;
  [[nodiscard]] std::optional<std::size_t> devices() const override { return t_.num_devices(); }
  /// Flow fidelity: a runner on a shared network (bound to the simulator of its first
  /// start); analytical: null (timers).
  std::unique_ptr<CollectiveRunner> concurrent_runner() override;
  /// Distinct collectives evaluated so far (memo size).
  [[nodiscard]] std::size_t evaluations() const { return memo_.size(); }

  /// What a run of a collective on a shared network needs (coll::CollectiveRun).
  struct FlowPlan {
    coll::CollectiveOp op;
    coll::Schedule schedule;
  };
  /// The op and schedule of a collective at flow fidelity (the algorithm resolve() picks,
  /// built on this topology), memoised per (kind, size, group): the reference stays valid as
  /// long as this object. Throws as time_s() for a group that down links cut.
  const FlowPlan& flow_plan(coll::OpKind kind, std::uint64_t size_bytes, const std::vector<int>& group);
  [[nodiscard]] const topo::Topology& topology() const { return t_; }
  [[nodiscard]] const coll::CostParams& cost() const { return p_; }

 private:
  /// The algorithm for a collective (`auto`: NCCL's schedule on a GPU topology, else the
  /// fastest applicable; analytical time in `analytical_s`); throws ConfigError for a named algorithm that cannot run it.
  const coll::Algorithm* resolve(const coll::CollectiveOp& op, double& analytical_s) const;
  const topo::Topology& t_;
  Fidelity f_;
  std::string algorithm_;
  coll::CostParams p_;
  std::uint32_t element_bytes_;
  // Memo key: (kind, size, index of the group in groups_). A step issues hundreds of
  // collectives over a handful of distinct groups; comparing against those few avoids copying
  // and ordering whole rank lists on every call.
  std::vector<std::vector<int>> groups_;
  std::map<std::tuple<int, std::uint64_t, std::size_t>, double> memo_;
  std::map<std::tuple<int, std::uint64_t, std::vector<int>>, std::unique_ptr<FlowPlan>> plans_;
};

}  // namespace shardsim::step
