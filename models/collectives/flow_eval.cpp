#include "models/collectives/flow_eval.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "models/collectives/collective_run.hpp"
#include "sim/simulator.hpp"

namespace shardsim::coll {

// One CollectiveRun on a private simulator and network, started at time 0. The run begins
// inside start() (as the one-shot evaluator always did), so the events, and with them the
// fingerprint, are those of the evaluator before runs could share a network.
FlowResult evaluate_flow(const topo::Topology& t, const CollectiveOp& op, const Schedule& s, const FlowOptions& opts) {
  sim::Simulator sim;
  sim::FlowNetwork net(sim);
  add_topology_links(net, t, opts.link_efficiency);
  CollectiveRun run(sim, net, t, op, s, opts);
  sim.enable_fingerprint();
  run.start(Time::zero(), nullptr);
  sim.run();
  if (!run.done()) {
    throw std::logic_error(fmt::format("schedule '{}' deadlocked: {} rank-chunks unfinished at {}", s.algorithm,
                                       run.unfinished(), sim.now()));
  }
  FlowResult out;
  out.time_s = run.finish_time().to_seconds();
  out.events = sim.event_count();
  out.transfers = run.transfers();
  out.network = net.stats();
  out.fingerprint = sim.fingerprint();
  return out;
}

}  // namespace shardsim::coll
