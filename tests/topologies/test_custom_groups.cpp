// A custom JSON topology's `group` field forms device groups (issue 12): the hierarchical
// all-reduce on a custom copy of the hierarchical builder's graph (same nodes, same links in
// the same order, the groups given per device) equals the builder's, at analytical and flow
// fidelity; without the groups it cannot run; a bad group is a ConfigError naming its path.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>

#include "models/collectives/algorithm.hpp"
#include "models/collectives/flow_eval.hpp"
#include "sim/error.hpp"
#include "topologies/load.hpp"
#include "topologies/registry.hpp"

using nlohmann::json;
namespace topo = shardsim::topo;
namespace coll = shardsim::coll;

namespace {

const char* kSpec =
    R"({"builder": "hierarchical", "nodes": 2, "intra": "nvswitch_node:n=4,bw=400GB/s,lat=1us",)"
    R"( "inter": "switch:n=8,bw=50GB/s,lat=2us"})";

// The builder's graph as a custom topology: its nodes and links in order (values in the
// shortest text that reads back to the same double); with `groups`, each
// device carries the group (node) the builder put it in.
json as_custom(const topo::Topology& t, bool groups) {
  json nodes = json::array(), links = json::array();
  for (const auto& n : t.nodes()) {
    json o = {{"name", n.name}, {"kind", n.kind == topo::NodeKind::device ? "device" : "switch"}};
    if (groups && n.kind == topo::NodeKind::device) o["group"] = n.group.front();  // "node0", "node1"
    nodes.push_back(o);
  }
  for (const auto& l : t.links()) {
    links.push_back({{"src", t.node(l.src).name}, {"dst", t.node(l.dst).name},
                     {"bw", fmt::format("{}B/s", l.bandwidth_Bps)}, {"lat", fmt::format("{}s", l.latency_s)},
                     {"class", topo::to_string(l.cls)}, {"duplex", false}});
  }
  return {{"builder", "custom"}, {"nodes", nodes}, {"links", links}};
}

coll::CollectiveOp allreduce(std::uint64_t bytes) {
  coll::CollectiveOp op;
  op.size_bytes = bytes;
  for (int r = 0; r < 8; ++r) op.group.push_back(r);
  return op;
}

}  // namespace

TEST_CASE("custom groups: the hierarchical all-reduce equals the builder's") {
  const topo::Topology built = topo::make_topology(kSpec, "--topology");
  REQUIRE(built.device_groups() == std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  const topo::Topology custom = topo::make_topology(as_custom(built, true).dump(), "--topology");
  CHECK(custom.device_groups() == built.device_groups());
  const auto& h = coll::find_algorithm("hierarchical", coll::OpKind::allreduce, "--algorithm");
  for (std::uint64_t bytes : {1ULL << 20, 64ULL << 20}) {
    const auto op = allreduce(bytes);
    CHECK(!h.unsupported(custom, op).has_value());
    const double a_built = h.analytical(built, op, {}).time_s, a_custom = h.analytical(custom, op, {}).time_s;
    CHECK(a_custom == a_built);
    const double f_built = coll::evaluate_flow(built, op, h.build(built, op, {}), {}).time_s;
    const double f_custom = coll::evaluate_flow(custom, op, h.build(custom, op, {}), {}).time_s;
    CHECK(f_custom == f_built);
    CHECK(f_built > 0);
  }
  // Without the groups (as before issue 12) there is nothing to be hierarchical over.
  const topo::Topology flat = topo::make_topology(as_custom(built, false).dump(), "--topology");
  CHECK(flat.device_groups().empty());
  CHECK(h.unsupported(flat, allreduce(1 << 20)).value_or("") == "topology 'inline' has no device groups");
}

TEST_CASE("custom groups: bad values name the JSON path") {
  const topo::Topology built = topo::make_topology(kSpec, "--topology");
  auto error_of = [](const json& j) {
    try {
      (void)topo::make_topology(j.dump(), "--topology");
    } catch (const shardsim::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  json j = as_custom(built, true);
  j["nodes"][2]["group"] = 7;
  CHECK(error_of(j) == "--topology: /nodes/2/group: 7; expected a group path \"pod0/node3\" or [\"pod0\", \"node3\"] (no empty part)");
  j["nodes"][2]["group"] = "pod0//node1";
  CHECK(error_of(j) == "--topology: /nodes/2/group: \"pod0//node1\"; expected a group path \"pod0/node3\" or [\"pod0\", \"node3\"] (no empty part)");
  j["nodes"][2].erase("group");
  CHECK(error_of(j) == "--topology: /nodes/2/group: missing on device 'node0/gpu2', while device 'node0/gpu0' has one; "
                       "expected a group on every device or on none");
  j = as_custom(built, true);
  j["nodes"][2]["group"] = json::array({"pod0", "node0"});  // a path as a list: its own group
  CHECK(topo::make_topology(j.dump(), "--topology").device_groups().size() == 3);
}
