#pragma once
// The 8-device star of the step tests: devices d0..d7 on one switch "sw", every link 1 GB/s
// and 1 us each way (links 2i: di->sw, 2i+1: sw->di); device `slow` (if any) at half rate
// both ways.
#include <fmt/format.h>

#include "topologies/topology.hpp"

namespace shardsim::test {

inline topo::Topology star8(int slow = -1) {
  topo::Topology t;
  for (int i = 0; i < 8; ++i) t.add_device(topo::Node{fmt::format("d{}", i), topo::NodeKind::device, {}, {}, false});
  const auto sw = t.add_switch(topo::Node{"sw", topo::NodeKind::switch_node, {}, {}, false});
  for (int i = 0; i < 8; ++i) {
    t.add_duplex(static_cast<topo::NodeId>(i), sw, i == slow ? 0.5e9 : 1e9, 1e-6, topo::LinkClass::ethernet);
  }
  t.set_name("star8");
  return t;
}

}  // namespace shardsim::test
