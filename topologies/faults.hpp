#pragma once
// Link and NIC faults (issue 16): a topology with some links degraded to a fraction of their
// rate or down, and routes that re-form over the links that are up.
//
// Spec (`--faults`), items separated by ';':
//   link:LINK:FRACTION   the link at FRACTION (0 < FRACTION <= 1) of its bandwidth
//   nic:DEVICE:FRACTION  every network link (class ib or ethernet) into and out of DEVICE
//   down:LINK            the link down
//   down:nic:DEVICE      the device's network links down
// LINK is "A-B" (both directions, every parallel link) or "A->B" (one direction); A, B and
// DEVICE are node names as `shardsim topo show --dot` labels them ("node0/gpu3", "rail2",
// "spine0"). A link named twice takes the last item.
//
// Routing with faults (FaultRouter): the topology's own router where its route crosses no
// down link (so a degraded link keeps every route, and a fault elsewhere changes none);
// otherwise the shortest path by hop count over the links that are up, ties to the lowest
// LinkId, through devices only where Topology::devices_forward (as the shortest-path router).
// Down links stay in the graph, so link ids, and the flow network built from them
// (coll::add_topology_links), are those of the intact topology; a down link's bandwidth is
// left as is and no route uses it. A degraded link's bandwidth is FRACTION x its own, so the
// analytical closed forms (route bottlenecks) and the flow network (capacities) see it.
//
// A pair of devices with no path over the links that are up is a RouteCutError (a
// ConfigError, where = "--faults") naming the down links of its intact route; check_group()
// finds that for every pair of a group at once: O(members x (nodes + links)).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/error.hpp"
#include "topologies/topology.hpp"

namespace shardsim::topo {

struct LinkFault {
  std::string item;            ///< the spec item, as given ("down:rail0-spine1")
  std::vector<LinkId> links;   ///< the directed links it names
  double fraction = 1;         ///< of the bandwidth; 0 = down
};

struct FaultSet {
  std::string spec;
  std::vector<LinkFault> faults;
  [[nodiscard]] bool empty() const { return faults.empty(); }
  [[nodiscard]] bool any_down() const;
};

/// Parses `spec` (above) against `t`. Throws ConfigError naming `where` for an unknown item
/// kind, an unknown node, a pair of nodes without a link, a device without network links, a
/// fraction outside (0, 1].
FaultSet parse_faults(const Topology& t, const std::string& spec, const std::string& where);

/// A pair of devices that the down links disconnect (ConfigError, where = "--faults"):
/// "--faults: DOWN disconnects PAIR; expected faults that leave a path between them".
class RouteCutError : public ConfigError {
 public:
  RouteCutError(std::string down, std::string pair)
      : ConfigError("--faults", down + " disconnects " + pair, "faults that leave a path between them"),
        down_(std::move(down)), pair_(std::move(pair)) {}
  /// The down links (spec items) on the pair's intact route, comma-separated.
  [[nodiscard]] const std::string& down() const { return down_; }
  /// "ranks 3 (node0/gpu3) and 5 (node0/gpu5)" or "node0/gpu3 and rail0".
  [[nodiscard]] const std::string& pair() const { return pair_; }

 private:
  std::string down_, pair_;
};

/// `t` with the faults applied: degraded bandwidths and, where a link is down, a FaultRouter
/// around t's router. The name records the faults ("dgx-h100-16 with faults link:..."),
/// config["faults"] the spec.
Topology apply_faults(const Topology& t, const FaultSet& f);

/// The faults of a topology made by apply_faults (null for any other topology).
const FaultSet* faults_of(const Topology& t);

/// "0-7" for consecutive ranks, else "0,2,4" (at most 8 listed, then ",... (N ranks)").
std::string rank_list(const std::vector<int>& ranks);

/// The error of a process group that down links cut (issue 16), from the RouteCutError of a
/// pair of its members: ConfigError("--faults", "DOWN disconnects process group 'GROUP'
/// (ranks LIST)[ WHEN]: no path between PAIR over the links that are up"). `when` is "" or
/// e.g. "at 1.5 ms" (a timed fault).
ConfigError group_cut_error(const RouteCutError& e, const std::string& group, const std::vector<int>& ranks,
                            const std::string& when = "");

/// Throws RouteCutError when two members of `group` (topology ranks) have no path over the
/// links that are up: "down:A-B disconnects ranks 3 (node0/gpu3) and 5 (node0/gpu5)". A
/// topology without down links passes at once.
void check_group(const Topology& t, const std::vector<int>& group);

}  // namespace shardsim::topo
