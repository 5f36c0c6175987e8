#include "models/step/topology_comm.hpp"

#include <fmt/format.h>

#include "models/collectives/flow_eval.hpp"
#include "sim/error.hpp"

namespace shardsim::step {

Fidelity fidelity_from_string(const std::string& s, const std::string& where) {
  if (s == "analytical") return Fidelity::analytical;
  if (s == "flow") return Fidelity::flow;
  throw ConfigError(where, fmt::format("unknown fidelity '{}'", s), "one of analytical, flow");
}

TopologyComm::TopologyComm(const topo::Topology& t, Fidelity f, std::string algorithm, coll::CostParams p,
                           std::uint32_t element_bytes)
    : t_(t), f_(f), algorithm_(std::move(algorithm)), p_(p), element_bytes_(element_bytes) {}

double TopologyComm::time_s(coll::OpKind kind, std::uint64_t size_bytes, const std::vector<int>& group) {
  if (group.size() <= 1 || size_bytes == 0) return 0.0;
  std::size_t gid = 0;
  while (gid < groups_.size() && groups_[gid] != group) ++gid;
  if (gid == groups_.size()) groups_.push_back(group);
  const auto key = std::make_tuple(static_cast<int>(kind), size_bytes, gid);
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  coll::CollectiveOp op;
  op.kind = kind;
  op.size_bytes = size_bytes;
  op.group = group;
  op.element_bytes = element_bytes_;
  const coll::Algorithm* alg = nullptr;
  double analytical = 0;
  if (algorithm_ == "auto") {
    const auto choice = coll::choose_auto(t_, op, p_, f_ == Fidelity::flow);
    alg = choice.algorithm;
    analytical = choice.cost.time_s;
  } else {
    alg = &coll::find_algorithm(algorithm_, kind, "--algorithm");
    if (auto why = alg->unsupported(t_, op)) {
      throw ConfigError("--algorithm", fmt::format("{} cannot run {} here: {}", alg->name(), coll::to_string(kind), *why),
                        "an algorithm that applies to this topology and group (or auto)");
    }
    analytical = alg->analytical(t_, op, p_).time_s;
  }
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
