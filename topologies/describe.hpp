#pragma once
// Topology statistics and export: counts, links per class, bisection bandwidth, diameter,
// Graphviz DOT and a JSON summary (used by `shardsim topo show`).
//
// Bisection bandwidth (bytes/s, one direction: the capacity from one half of the devices to
// the other) is a closed form where the builder has one, and otherwise the max-flow between
// the two halves of the rank order (Boost.Graph push_relabel), labelled as such:
//   torus    min over dimensions d with k_d even of (N / k_d) x (2 if d wraps else 1) x bw
//            (a cut across dimension d crosses N/k_d rows, each once as a mesh and twice with
//            wraparound; Dally and Towles, "Principles and Practices of Interconnection
//            Networks", 2004, section 3.3)
//   switch, nvswitch_node   floor(n/2) x bw (a non-blocking switch; the host links bound it)
//   bus      bw (every flow crosses the one medium)
//   fat_tree one leaf: floor(H/2) x bw; an even number L of leaves: (L/2) x min(hosts_per_leaf
//            x bw, spines x uplink_bw) (each leaf of one half sends at most its host links or
//            its uplinks)
//   rail_optimized  one node: floor(g/2) x nvlink_bw; an even number of nodes: (nodes/2) x g x
//            nic_bw (every rail leaf is non-blocking, so the GPU NIC links bound it)
// Diameter: the largest hop count over device pairs; torus closed form sum over d of
// (floor(k_d/2) if d wraps else k_d - 1); otherwise breadth-first search from every device
// (paths through devices only where Topology::devices_forward), skipped above 4096 devices.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "topologies/topology.hpp"

namespace shardsim::topo {

struct LinkClassStats {
  LinkClass cls = LinkClass::ethernet;
  std::size_t directed_links = 0;
  std::vector<double> bandwidths_Bps;  ///< distinct values, ascending
};

struct TopologySummary {
  std::string name, description, builder, device_model;
  std::size_t devices = 0, switches = 0, directed_links = 0;
  std::vector<LinkClassStats> classes;  ///< in LinkClass order, only classes present
  double injection_Bps = 0;             ///< of rank 0
  std::optional<double> bisection_Bps;  ///< nullopt with a single device
  std::string bisection_method;
  std::optional<int> diameter_hops;     ///< nullopt when not computed
  std::string diameter_method;
};

/// O(links) plus the max-flow or BFS fallbacks described above.
TopologySummary describe(const Topology& t);

/// Maximum flow (bytes/s) from the devices in `from` to the devices in `to`, each device an
/// unlimited source or sink; flow passes through other devices only when
/// t.devices_forward(). Boost.Graph push_relabel_max_flow, O(V^3).
double max_flow_Bps(const Topology& t, const std::vector<NodeId>& from, const std::vector<NodeId>& to);

/// max_flow_Bps from the first half of the ranks (floor(n/2)) to the rest.
double rank_halves_max_flow_Bps(const Topology& t);

/// Graphviz DOT: devices as boxes, switches as ellipses, a duplex pair as one edge with
/// dir=both, labelled with bandwidth and link class.
std::string to_dot(const Topology& t);

/// The effective config on one line, for text output: the top-level keys with their values
/// as compact JSON, except that a list of objects or lists, a list longer than 16 and an
/// object are replaced by their size ("[12 entries]", "{3 keys}"), so a custom graph's node
/// and link lists do not fill the screen. Builder specs and presets (scalars and short lists
/// such as torus dims) read as their compact JSON dump. O(top-level keys + 16).
/// `elided` (optional) is set when a list or an object was summarised.
std::string config_outline(const nlohmann::json& config, bool* elided = nullptr);

/// Stable keys with units in their names (DESIGN 7), plus the effective config.
nlohmann::json to_json(const TopologySummary& s, const Topology& t);

}  // namespace shardsim::topo
