#pragma once
// A flow network on its own simulator whose completion handler records each tag's finish time
// in seconds: the fixture of the flow-network suites (test_flow_network, test_flow_capacity).
#include <cstdint>
#include <map>

#include "sim/flow_network.hpp"
#include "sim/simulator.hpp"

namespace shardsim::test {

struct FlowFixture {
  sim::Simulator sim;
  sim::FlowNetwork net{sim};
  std::map<std::uint64_t, double> done_at;  // tag -> seconds
  FlowFixture() {
    net.set_completion_handler([this](std::uint64_t tag) { done_at[tag] = sim.now().to_seconds(); });
  }
};

}  // namespace shardsim::test
