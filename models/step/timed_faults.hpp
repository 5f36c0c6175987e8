#pragma once
// Faults in time (issue 16): link and NIC faults that begin (and may end) during the step,
// given explicitly or drawn by a seeded fault process, and collectives timed across them.
//
// Spec (`--faults`): the static items of topologies/faults.hpp, and, separated by ';' as well,
//   ITEM@START[+DURATION]              a static item (link:, nic:, down:) from START for
//                                      DURATION (default: to the end of the step); times with
//                                      a unit ("1.5ms", "200us")
//   random:RATE[:FRACTION[:DURATION]]  a fault process over the step: faults arrive as a
//                                      Poisson process of RATE faults per step (RATE > 0:
//                                      exponential gaps of H / RATE over [0, H), H the step
//                                      time without timed faults); each takes one physical
//                                      link (A-B, both directions; loopback links excluded),
//                                      drawn uniformly, to FRACTION of its rate (0 < F <= 1,
//                                      default 0.5) or down ("down"), for DURATION (default:
//                                      to the end). Drawn from --seed (xoshiro256**,
//                                      variation.hpp): same seed, same faults.
//
// Timing across faults, by fidelity (concurrent_runner(); time_s() is always state 0's):
//  - flow: one sim::FlowNetwork of the topology's links shared by every collective and
//    send/recv pair in flight (coll::CollectiveRun, as TopologyComm's runner), whose link
//    capacities change at each state's instant (FlowNetwork::set_capacity): a degraded link
//    runs at FRACTION x its rate from then on for every flow on it, concurrent collectives
//    keep sharing links max-min, and the flows on a link that goes down move, with their
//    remaining bytes, to the route the state's topology gives between the same two nodes
//    (the flow network re-solves). A collective is planned (algorithm, schedule, routes) on
//    the topology of the state in force when it starts.
//  - analytical, the progress rule: a collective progresses at 1 / T_k of its work per
//    second while the network is in state k (T_k: its closed-form time on the topology with
//    the faults active in state k), and ends when the work is done:
//      end = t_j + (1 - sum_{k<j} (t_{k+1} - max(start, t_k)) / T_k) x T_j
//    over the states j it crosses. With one state it is a timer of T_0. It is the closed
//    forms' re-solve at the fault instant: a collective whose bottleneck link runs at half
//    rate from half-way through its time T takes T/2 + T'/2 (T' its time with the link at
//    half rate). Each collective is timed alone: collectives in flight together do not share
//    links (the flow fidelity's do).
// A send/recv pair is a broadcast over its two ranks (its group "p2p A->B") at both. Both
// runners are time-varying (executor.hpp): every collective runs on them, and no rank folds.
// A down link that cuts a process group is a ConfigError naming the link, the group and the
// instant (topo::group_cut_error): analytical, for a collective in flight (or starting) in a
// state that cuts its group; flow, for a collective starting in such a state or a flow in
// flight (or starting) that has no route left.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/step/executor.hpp"
#include "models/step/step.hpp"
#include "models/step/topology_comm.hpp"
#include "topologies/topology.hpp"

namespace shardsim::step {

struct TimedFault {
  std::string item;             ///< the static item it applies ("link:d3-sw:0.5", "down:d3-sw")
  double begin_s = 0;
  std::optional<double> end_s;  ///< none: to the end of the step
};

struct RandomFaults {
  std::string item;             ///< as given
  double rate = 0;              ///< expected faults per step
  double fraction = 0.5;        ///< of the link's rate; 0 = down
  std::optional<double> duration_s;
};

struct FaultPlan {
  std::string fixed;                   ///< the untimed items, ';'-joined (topo::parse_faults)
  std::vector<TimedFault> timed;
  std::optional<RandomFaults> random;
  [[nodiscard]] bool timed_any() const { return !timed.empty() || random.has_value(); }
};

/// Splits `spec` (above) into static, timed and random items; every item is checked against
/// `t` (topo::parse_faults). Throws ConfigError naming `where`, the item, what was found and
/// what was expected.
FaultPlan parse_fault_plan(const topo::Topology& t, const std::string& spec, const std::string& where);

/// The random process's faults over [0, horizon_s) (above), in time order. O(faults + links).
std::vector<TimedFault> draw_faults(const topo::Topology& t, const RandomFaults& r, double horizon_s, std::uint64_t seed);

/// A CommModel over the states of a timeline of faults: time_s is the time at the step's
/// start (state 0); concurrent_runner() times every collective across the states (above).
/// Not thread safe (TopologyComm).
class TimedFaultComm final : public CommModel {
 public:
  /// `intact`: the topology without faults (outlives this); `fixed`: the static items.
  TimedFaultComm(const topo::Topology& intact, const std::string& fixed, const std::vector<TimedFault>& timed,
                 Fidelity f, const std::string& algorithm, std::uint32_t element_bytes, coll::CostParams p = {});
  ~TimedFaultComm() override;
  double time_s(coll::OpKind kind, std::uint64_t size_bytes, const std::vector<int>& group) override;
  [[nodiscard]] std::optional<std::size_t> devices() const override;
  std::unique_ptr<CollectiveRunner> concurrent_runner() override;
  /// The end of a collective started at `start` by the progress rule (analytical fidelity).
  /// `group_name` names the group in a cut's error.
  Time end(coll::OpKind kind, std::uint64_t size_bytes, const std::vector<int>& group, const std::string& group_name,
           Time start);
  /// States of the network (1 + distinct instants at which faults begin or end).
  [[nodiscard]] std::size_t states() const { return states_.size(); }
  /// Distinct collectives evaluated so far, over every state.
  [[nodiscard]] std::size_t evaluations() const;
  /// The state in force at `t` (the last that begins at or before it).
  [[nodiscard]] std::size_t state_at(Time t) const;

 private:
  friend class TimedFlowRunner;
  struct State;
  std::vector<std::unique_ptr<State>> states_;
  Fidelity fidelity_;
  coll::CostParams cost_;
};

}  // namespace shardsim::step
