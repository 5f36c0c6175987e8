#include "models/step/topology_comm.hpp"

#include <fmt/format.h>

#include <array>

#include "models/collectives/collective_run.hpp"
#include "models/collectives/flow_eval.hpp"
#include "models/collectives/nccl_model.hpp"
#include "sim/enum_names.hpp"
#include "sim/error.hpp"
#include "topologies/faults.hpp"

namespace shardsim::step {

namespace {
constexpr std::array<EnumName<Fidelity>, 2> kFidelities{{{Fidelity::analytical, "analytical"}, {Fidelity::flow, "flow"}}};
}  // namespace

Fidelity fidelity_from_string(const std::string& s, const std::string& where) {
  return enum_from_name(kFidelities, s, "fidelity", where);
}

TopologyComm::TopologyComm(const topo::Topology& t, Fidelity f, std::string algorithm, coll::CostParams p,
                           std::uint32_t element_bytes)
    : t_(t), f_(f), algorithm_(std::move(algorithm)), p_(p), element_bytes_(element_bytes) {}

const coll::Algorithm* TopologyComm::resolve(const coll::CollectiveOp& op, double& analytical_s) const {
  if (algorithm_ == "auto") {
    // GPU topology: NCCL's model and choice for this group, as `shardsim collective --algorithm
    // auto` (coll::nccl_auto); other topologies: the registry's fastest applicable algorithm.
    if (auto n = coll::nccl_auto(t_, op)) {
      analytical_s = n->cost.time_s;
      return n->schedule;
    }
    const auto choice = coll::choose_auto(t_, op, p_, f_ == Fidelity::flow);
    analytical_s = choice.cost.time_s;
    return choice.algorithm;
  }
  const auto* alg = &coll::find_algorithm(algorithm_, op.kind, "--algorithm");
  if (auto why = alg->unsupported(t_, op)) {
    throw ConfigError("--algorithm", fmt::format("{} cannot run {} here: {}", alg->name(), coll::to_string(op.kind), *why),
                      "an algorithm that applies to this topology and group (or auto)");
  }
  analytical_s = alg->analytical(t_, op, p_).time_s;
  return alg;
}

const TopologyComm::FlowPlan& TopologyComm::flow_plan(coll::OpKind kind, std::uint64_t size_bytes,
                                                     const std::vector<int>& group) {
  const auto key = std::make_tuple(static_cast<int>(kind), size_bytes, group);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    topo::check_group(t_, group);  // a group that down links cut is an error naming them
    auto plan = std::make_unique<FlowPlan>();
    plan->op.kind = kind;
    plan->op.size_bytes = size_bytes;
    plan->op.group = group;
    plan->op.element_bytes = element_bytes_;
    double analytical = 0;
    const auto* alg = resolve(plan->op, analytical);
    plan->schedule = alg->build(t_, plan->op, p_);
    it = plans_.emplace(key, std::move(plan)).first;
  }
  return *it->second;
}

namespace {

// Collectives in flight on one network of the topology's links. Schedules come from the
// comm's plans (they outlive the runs); runs are kept until the runner goes.
class FlowRunner final : public CollectiveRunner {
 public:
  explicit FlowRunner(TopologyComm& c) : c_(c) {}
  void start(sim::Simulator& sim, const TaskGraph& g, NodeId n, std::function<void(Time)> done) override {
    const auto& node = g.node(n);
    const auto& group = g.groups()[node.group].ranks;
    if (group.size() <= 1 || node.size_bytes == 0) {
      sim.schedule_at(sim.now(), [d = std::move(done), t = sim.now()] { d(t); });
      return;
    }
    if (!net_) {
      net_ = std::make_unique<sim::FlowNetwork>(sim);
      coll::add_topology_links(*net_, c_.topology());
    }
    const auto& plan = c_.flow_plan(node.op, node.size_bytes, group);
    coll::FlowOptions fo;
    fo.cost = c_.cost();
    runs_.push_back(std::make_unique<coll::CollectiveRun>(sim, *net_, c_.topology(), plan.op, plan.schedule, fo));
    runs_.back()->start(sim.now(), std::move(done));
  }

 private:
  TopologyComm& c_;
  std::unique_ptr<sim::FlowNetwork> net_;
  std::vector<std::unique_ptr<coll::CollectiveRun>> runs_;
};

}  // namespace

std::unique_ptr<CollectiveRunner> TopologyComm::concurrent_runner() {
  if (f_ != Fidelity::flow) return nullptr;
  return std::make_unique<FlowRunner>(*this);
}

double TopologyComm::time_s(coll::OpKind kind, std::uint64_t size_bytes, const std::vector<int>& group) {
  if (group.size() <= 1 || size_bytes == 0) return 0.0;
  std::size_t gid = 0;
  while (gid < groups_.size() && groups_[gid] != group) ++gid;
  if (gid == groups_.size()) {
    topo::check_group(t_, group);  // a group that down links cut is an error naming them
    groups_.push_back(group);
  }
  const auto key = std::make_tuple(static_cast<int>(kind), size_bytes, gid);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  coll::CollectiveOp op;
  op.kind = kind;
  op.size_bytes = size_bytes;
  op.group = group;
  op.element_bytes = element_bytes_;
  double analytical = 0;
  const coll::Algorithm* alg = resolve(op, analytical);
  double time = analytical;
  if (f_ == Fidelity::flow && alg != nullptr) {
    const auto schedule = alg->build(t_, op, p_);
    coll::FlowOptions fo;
    fo.cost = p_;
    time = coll::evaluate_flow(t_, op, schedule, fo).time_s;
  }
  memo_.emplace(key, time);
  return time;
}

}  // namespace shardsim::step
