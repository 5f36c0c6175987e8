// Composite builders: `hierarchical` (nodes of an intra topology joined by an inter
// topology) and `custom` (explicit nodes and links in JSON).
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <unordered_map>

#include "sim/error.hpp"
#include "sim/text/strings.hpp"
#include "sim/units.hpp"
#include "topologies/registry.hpp"
#include "topologies/topology.hpp"

namespace shardsim::topo {
namespace {

// The per-device reachability check of custom graphs is O(devices x (V + E)).
constexpr std::size_t kMaxCheckedDevices = 4096;

// Routes of a hierarchical topology come from the prototypes it was copied from: a pair in
// the same node uses the intra topology's router, any other pair the inter topology's
// router; link ids are shifted by the copy's base. Cost: that of the prototype's router
// plus O(hops) to shift (the result is cached by the composite Topology::route).
class HierarchicalRouter final : public Router {
 public:
  std::shared_ptr<const Topology> intra, inter;
  std::size_t nodes = 0;
  std::vector<int> local_rank;            // intra NodeId -> intra rank (-1 for switches)
  LinkId inter_link_base = 0;
  std::shared_ptr<const Router> fallback = make_shortest_path_router();

  void route(const Topology& t, NodeId src, NodeId dst, std::vector<LinkId>& out) const override {
    const std::size_t per = intra->num_nodes();
    if (src >= nodes * per || dst >= nodes * per || local_rank[src % per] < 0 || local_rank[dst % per] < 0) {
      fallback->route(t, src, dst, out);
      return;
    }
    // The prototypes' routers are called directly (not Topology::route) so that no cache
    // of the shared prototypes is written: copies of this topology stay independent.
    const std::size_t cs = src / per, cd = dst / per;
    const std::size_t start = out.size();
    if (cs == cd) {
      const auto base = static_cast<LinkId>(cs * intra->num_links());
      intra->router().route(*intra, static_cast<NodeId>(src % per), static_cast<NodeId>(dst % per), out);
      for (std::size_t i = start; i < out.size(); ++i) out[i] += base;
      return;
    }
    const std::size_t dn = intra->num_devices();
    const std::size_t rs = cs * dn + static_cast<std::size_t>(local_rank[src % per]);
    const std::size_t rd = cd * dn + static_cast<std::size_t>(local_rank[dst % per]);
    inter->router().route(*inter, inter->device(rs), inter->device(rd), out);
    for (std::size_t i = start; i < out.size(); ++i) out[i] += inter_link_base;
  }
  [[nodiscard]] std::string name() const override { return "hierarchical(" + intra->router().name() + ", " + inter->router().name() + ")"; }
};

std::string show(const nlohmann::json& v) { return v.is_string() ? "'" + v.get<std::string>() + "'" : v.dump(); }

void check_keys(const nlohmann::json& obj, const std::string& where, const std::vector<std::string>& allowed,
                const std::string& what) {
  if (!obj.is_object()) throw ConfigError(where, fmt::format("a JSON {}", obj.type_name()), "an object describing a " + what);
  for (const auto& [k, v] : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      throw ConfigError(where + "/" + k, fmt::format("unknown key '{}' in a {}", k, what), one_of(allowed));
    }
  }
}

const nlohmann::json& need_string(const nlohmann::json& obj, const std::string& where, const std::string& key,
                                  const std::string& expected) {
  if (!obj.contains(key)) throw ConfigError(where + "/" + key, fmt::format("missing key '{}'", key), expected);
  const auto& v = obj.at(key);
  if (!v.is_string()) throw ConfigError(where + "/" + key, fmt::format("{} is not a string", show(v)), expected);
  return v;
}

Topology build_hierarchical(Params& p) {
  const long nodes = p.integer("nodes");
  auto intra = std::make_shared<Topology>(p.topology("intra"));
  auto inter = std::make_shared<Topology>(p.topology("inter"));
  const std::size_t dn = intra->num_devices();
  const auto n = static_cast<std::size_t>(nodes);
  check_builder_count(nodes * static_cast<long>(intra->num_nodes()), "nodes x intra nodes (copies)", p.where("nodes"));
  if (inter->num_devices() != n * dn) {
    throw ConfigError(p.where("inter"), fmt::format("an inter topology of {} devices", inter->num_devices()),
                      fmt::format("nodes x devices per node = {} x {} = {} devices", n, dn, n * dn));
  }
  Topology t;
  auto hr = std::make_shared<HierarchicalRouter>();
  hr->intra = intra;
  hr->inter = inter;
  hr->nodes = n;
  hr->local_rank.assign(intra->num_nodes(), -1);
  for (std::size_t r = 0; r < dn; ++r) hr->local_rank[intra->device(r)] = static_cast<int>(r);
  std::vector<std::vector<int>> groups;
  std::vector<int> ring_order;
  for (std::size_t i = 0; i < n; ++i) {
    const auto base = static_cast<NodeId>(t.num_nodes());
    for (const Node& src : intra->nodes()) {
      Node copy = src;
      copy.name = fmt::format("node{}/{}", i, src.name);
      copy.group.insert(copy.group.begin(), fmt::format("node{}", i));
      if (src.kind == NodeKind::device) t.add_device(std::move(copy));
      else t.add_switch(std::move(copy));
    }
    for (const Link& l : intra->links()) t.add_link(base + l.src, base + l.dst, l.bandwidth_Bps, l.latency_s, l.cls);
    std::vector<int> ring = intra->ring_order();
    if (ring.empty()) {
      ring.resize(dn);
      for (std::size_t r = 0; r < dn; ++r) ring[r] = static_cast<int>(r);
    }
    std::vector<int> group;
    for (std::size_t r = 0; r < dn; ++r) group.push_back(static_cast<int>(i * dn + r));
    groups.push_back(std::move(group));
    for (int r : ring) ring_order.push_back(static_cast<int>(i * dn) + r);
  }
  // Inter devices are the devices just added (inter rank j = global rank j); its switches
  // are new nodes.
  std::vector<NodeId> map(inter->num_nodes());
  std::size_t next_rank = 0;
  for (NodeId v = 0; v < inter->num_nodes(); ++v) {
    const Node& src = inter->node(v);
    if (src.kind == NodeKind::device) {
      map[v] = t.device(next_rank++);
    } else {
      Node copy = src;
      copy.name = "inter/" + src.name;
      map[v] = t.add_switch(std::move(copy));
    }
  }
  hr->inter_link_base = static_cast<LinkId>(t.num_links());
  for (const Link& l : inter->links()) t.add_link(map[l.src], map[l.dst], l.bandwidth_Bps, l.latency_s, l.cls);
  t.set_router(hr);
  t.set_device_groups(std::move(groups));
  t.set_ring_order(std::move(ring_order));
  t.set_devices_forward(intra->devices_forward() || inter->devices_forward());
  t.set_device_model(intra->device_model());
  // Per-rank kinds (issue 16): every copy of the intra topology carries its kinds; without
  // them, the inter topology's (its rank j is rank j).
  if (!intra->rank_devices().empty()) {
    std::vector<Topology::RankDevice> kinds;
    for (std::size_t i = 0; i < n; ++i) {
      kinds.insert(kinds.end(), intra->rank_devices().begin(), intra->rank_devices().end());
    }
    t.set_rank_devices(std::move(kinds));
  } else {
    t.set_rank_devices(inter->rank_devices());
  }
  return t;
}

// Device groups of a custom topology: devices with the same group path (the whole path, its
// innermost group being the fast domain, e.g. "pod0/node3") form one group, groups in order of
// their first rank; hierarchical collectives use them. A group on every device or on none:
// ConfigError naming the device without one ("<nodes>/<i>/group").
std::vector<std::vector<int>> groups_of_devices(const Topology& t, const std::vector<std::size_t>& node_index,
                                                const std::string& nw) {
  std::vector<std::vector<int>> groups;
  std::unordered_map<std::string, std::size_t> index;  // path -> group
  std::optional<std::size_t> with, without;  // ranks, one of each kind
  for (std::size_t r = 0; r < t.num_devices(); ++r) {
    const auto& path = t.node(t.device(r)).group;
    if (path.empty()) {
      if (!without) without = r;
      continue;
    }
    if (!with) with = r;
    const auto [it, fresh] = index.try_emplace(text::join(path, "/"), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(static_cast<int>(r));
  }
  if (with && without) {
    throw ConfigError(fmt::format("{}/{}/group", nw, node_index[*without]),
                      fmt::format("missing on device '{}', while device '{}' has one", t.node(t.device(*without)).name,
                                  t.node(t.device(*with)).name),
                      "a group on every device or on none");
  }
  return groups;
}

Topology build_custom(Params& p) {
  const auto& nodes = p.json("nodes");
  const auto& links = p.json("links");
  const std::string nw = p.where("nodes");
  const std::string lw = p.where("links");
  if (!nodes.is_array() || nodes.empty()) {
    throw ConfigError(nw, nodes.is_array() ? "an empty list" : fmt::format("a JSON {}", nodes.type_name()),
                      "a list of nodes {\"name\", \"kind\": \"device\"|\"switch\", \"group\"?, \"coords\"?}");
  }
  if (!links.is_array()) throw ConfigError(lw, fmt::format("a JSON {}", links.type_name()), "a list of links {\"src\", \"dst\", \"bw\", \"lat\", \"class\"?, \"duplex\"?}");
  Topology t;
  std::unordered_map<std::string, std::pair<NodeId, std::size_t>> ids;  // name -> (id, index in /nodes)
  std::vector<std::size_t> device_index;  // rank -> index in /nodes
  std::vector<Topology::RankDevice> kinds;  // rank -> "device" (issue 16), "" where not given
  bool any_kind = false;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto& o = nodes[i];
    const std::string w = fmt::format("{}/{}", nw, i);
    check_keys(o, w, {"name", "kind", "group", "coords", "in_network_reduction", "device"}, "node");
    const auto name = need_string(o, w, "name", "a node name").get<std::string>();
    if (auto it = ids.find(name); it != ids.end()) {
      throw ConfigError(w + "/name", fmt::format("duplicate node '{}'", name),
                        fmt::format("a name not already used by /nodes/{}", it->second.second));
    }
    Node n;
    n.name = name;
    const std::string kind = o.contains("kind") ? need_string(o, w, "kind", "device or switch").get<std::string>() : "device";
    if (kind != "device" && kind != "switch") {
      throw ConfigError(w + "/kind", fmt::format("kind '{}'", kind), "device or switch");
    }
    if (o.contains("group")) {
      const auto& g = o.at("group");
      if (g.is_string()) {
        n.group = text::split(g.get<std::string>(), '/');
      } else if (g.is_array() && std::all_of(g.begin(), g.end(), [](const auto& x) { return x.is_string(); })) {
        for (const auto& x : g) n.group.push_back(x.get<std::string>());
      }
      if (n.group.empty() || std::any_of(n.group.begin(), n.group.end(), [](const auto& c) { return c.empty(); })) {
        throw ConfigError(w + "/group", g.dump(), "a group path \"pod0/node3\" or [\"pod0\", \"node3\"] (no empty part)");
      }
    }
    if (o.contains("coords")) {
      const auto& c = o.at("coords");
      if (!c.is_array() || !std::all_of(c.begin(), c.end(), [](const auto& x) { return x.is_number_integer(); })) {
        throw ConfigError(w + "/coords", c.dump(), "a list of whole numbers");
      }
      for (const auto& x : c) n.coords.push_back(x.get<int>());
    }
    if (o.contains("in_network_reduction")) {
      const auto& r = o.at("in_network_reduction");
      if (!r.is_boolean()) throw ConfigError(w + "/in_network_reduction", r.dump(), "true or false");
      n.in_network_reduction = r.get<bool>();
    }
    // A device's own kind (mixed generations); resolved against the device presets by the
    // step (models/step/variation.hpp), which names this location for an unknown one.
    std::string device;
    if (o.contains("device")) {
      if (kind != "device") {
        throw ConfigError(w + "/device", fmt::format("a device kind on switch '{}'", name), "\"device\" on device nodes only");
      }
      device = need_string(o, w, "device", "a device name (shardsim list devices)").get<std::string>();
      if (device.empty()) throw ConfigError(w + "/device", "an empty name", "a device name (shardsim list devices)");
      any_kind = true;
    }
    const NodeId id = kind == "device" ? t.add_device(std::move(n)) : t.add_switch(std::move(n));
    ids.emplace(name, std::make_pair(id, i));
    if (kind == "device") {
      device_index.push_back(i);
      kinds.push_back({std::move(device), w + "/device"});
    }
  }
  t.set_device_groups(groups_of_devices(t, device_index, nw));
  if (any_kind) t.set_rank_devices(std::move(kinds));
  for (std::size_t i = 0; i < links.size(); ++i) {
    const auto& o = links[i];
    const std::string w = fmt::format("{}/{}", lw, i);
    check_keys(o, w, {"src", "dst", "bw", "lat", "class", "duplex"}, "link");
    NodeId end[2] = {0, 0};
    int e = 0;
    for (const char* key : {"src", "dst"}) {
      const auto name = need_string(o, w, key, "the name of a node declared in /nodes").get<std::string>();
      auto it = ids.find(name);
      if (it == ids.end()) {
        throw ConfigError(fmt::format("{}/{}", w, key), fmt::format("unknown node '{}'", name),
                          fmt::format("one of the {} nodes declared in /nodes", nodes.size()));
      }
      end[e++] = it->second.first;
    }
    if (end[0] == end[1]) {
      throw ConfigError(w + "/dst", fmt::format("a link from '{}' to itself", t.node(end[0]).name), "a node other than src");
    }
    const double bw = units::parse_rate_Bps(need_string(o, w, "bw", "a rate such as \"100GB/s\"").get<std::string>(), w + "/bw");
    const double lat = units::parse_seconds(need_string(o, w, "lat", "a time such as \"1us\"").get<std::string>(), w + "/lat");
    const LinkClass cls = o.contains("class") ? link_class_from_string(need_string(o, w, "class", one_of(link_class_names())).get<std::string>(), w + "/class")
                                              : LinkClass::ethernet;
    bool duplex = true;
    if (o.contains("duplex")) {
      if (!o.at("duplex").is_boolean()) throw ConfigError(w + "/duplex", o.at("duplex").dump(), "true or false");
      duplex = o.at("duplex").get<bool>();
    }
    if (duplex) t.add_duplex(end[0], end[1], bw, lat, cls);
    else t.add_link(end[0], end[1], bw, lat, cls);
  }
  t.set_devices_forward(p.boolean("devices_forward"));
  t.validate(lw);
  if (!t.devices_forward()) {
    // Routes may only pass through switches: every device must reach every other that way.
    if (t.num_devices() > kMaxCheckedDevices) return t;
    for (NodeId a : t.devices()) {
      const auto dist = hop_distances(t, a);
      for (NodeId b : t.devices()) {
        if (dist[b] < 0) {
          throw ConfigError(lw, fmt::format("no path through switches from device '{}' to device '{}'", t.node(a).name, t.node(b).name),
                            "links that connect every device pair through switches (or \"devices_forward\": true)");
        }
      }
    }
    return t;
  }
  // Devices relay: every device reached from device 0 and reaching it along directed links
  // means every device pair has a directed path.
  for (bool forward : {true, false}) {
    std::vector<char> seen(t.num_nodes(), 0);
    std::deque<NodeId> q{t.device(0)};
    seen[t.device(0)] = 1;
    while (!q.empty()) {
      const NodeId u = q.front();
      q.pop_front();
      if (forward) {
        for (auto [it, end2] = boost::out_edges(u, t.graph()); it != end2; ++it) {
          const auto v = static_cast<NodeId>(boost::target(*it, t.graph()));
          if (!seen[v]) { seen[v] = 1; q.push_back(v); }
        }
      } else {
        for (auto [it, end2] = boost::in_edges(u, t.graph()); it != end2; ++it) {
          const auto v = static_cast<NodeId>(boost::source(*it, t.graph()));
          if (!seen[v]) { seen[v] = 1; q.push_back(v); }
        }
      }
    }
    for (NodeId d : t.devices()) {
      if (!seen[d]) {
        const auto& a = t.node(t.device(0)).name;
        const auto& b = t.node(d).name;
        throw ConfigError(lw, fmt::format("no directed path from device '{}' to device '{}'", forward ? a : b, forward ? b : a),
                          "links that let every device reach every other (duplex, or a directed cycle)");
      }
    }
  }
  return t;
}

}  // namespace

void register_composite_builders(std::vector<BuilderInfo>& r) {
  {
    BuilderInfo b;
    b.name = "hierarchical";
    b.description = "nodes copies of an intra topology whose devices are also the devices of an inter topology";
    b.params = {
        {"nodes", ParamType::integer, "nodes", std::nullopt, "number of copies of the intra topology"},
        {"intra", ParamType::topology, "", std::nullopt, "topology inside a node (object, preset or spec)"},
        {"inter", ParamType::topology, "", std::nullopt, "topology over all nodes x devices per node devices (inter rank j = rank j)"},
    };
    b.build = build_hierarchical;
    r.push_back(std::move(b));
  }
  {
    BuilderInfo b;
    b.name = "custom";
    b.description = "explicit nodes and links (JSON only); shortest-path routing by hop count, ties to the lowest link id";
    b.params = {
        {"nodes", ParamType::json, "", std::nullopt, "[{\"name\", \"kind\": \"device\"|\"switch\", \"group\"?, \"coords\"?, \"in_network_reduction\"?, \"device\"? (a device preset, e.g. a100; default: device_model)}]; devices are ranks in order"},
        {"links", ParamType::json, "", std::nullopt, "[{\"src\", \"dst\", \"bw\", \"lat\", \"class\" (ethernet), \"duplex\" (true)}]"},
        {"devices_forward", ParamType::boolean, "", "0", "devices relay traffic for others (direct-connect networks); 0: only switches forward"},
    };
    b.build = build_custom;
    r.push_back(std::move(b));
  }
}

}  // namespace shardsim::topo
