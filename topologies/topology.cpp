#include "topologies/topology.hpp"

#include <fmt/format.h>

#include <boost/graph/breadth_first_search.hpp>
#include <atomic>
#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>

#include "sim/error.hpp"
#include "topologies/registry.hpp"

namespace shardsim::topo {

const char* to_string(LinkClass c) {
  switch (c) {
    case LinkClass::ici: return "ici";
    case LinkClass::nvlink: return "nvlink";
    case LinkClass::pcie: return "pcie";
    case LinkClass::ib: return "ib";
    case LinkClass::ethernet: return "ethernet";
    case LinkClass::loopback: return "loopback";
  }
  return "?";
}

namespace {
constexpr LinkClass kLinkClasses[] = {LinkClass::ici, LinkClass::nvlink, LinkClass::pcie,
                                      LinkClass::ib,  LinkClass::ethernet, LinkClass::loopback};
}  // namespace

const std::vector<std::string>& link_class_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (auto c : kLinkClasses) v.emplace_back(to_string(c));
    return v;
  }();
  return names;
}

LinkClass link_class_from_string(const std::string& s, const std::string& where) {
  for (auto c : kLinkClasses) {
    if (s == to_string(c)) return c;
  }
  throw_unknown("link class", s, where, link_class_names());
}

namespace {

class ShortestPathRouter final : public Router {
 public:
  void route(const Topology& t, NodeId src, NodeId dst, std::vector<LinkId>& out) const override {
    if (!shortest_path(t, src, dst, nullptr, out)) {
      throw std::runtime_error(fmt::format("no route from {} to {}", t.node(src).name, t.node(dst).name));
    }
  }
  [[nodiscard]] std::string name() const override { return "shortest-path"; }
};

}  // namespace

namespace {

// The layer's one breadth-first search (shortest_path, hop_distances): from src by hop count;
// out-links are visited in insertion (LinkId) order, so the first link to reach a node is the
// lowest LinkId among its shortest paths and the result is deterministic. Links l with
// skip[l] != 0 are not used (skip may be null). reached(v, l) is called once for every node v
// other than src, when link l first reaches it; the search stops when it returns true.
template <class Reached>
void breadth_first(const Topology& t, NodeId src, const std::vector<char>* skip, Reached&& reached) {
  std::vector<char> seen(t.num_nodes(), 0);
  std::deque<NodeId> q{src};
  seen[src] = 1;
  while (!q.empty()) {
    const NodeId u = q.front();
    q.pop_front();
    // Switches forward; devices relay traffic for others only where the topology says
    // they do (Topology::devices_forward).
    if (u != src && t.node(u).kind == NodeKind::device && !t.devices_forward()) continue;
    for (LinkId l : t.out_links(u)) {
      if (skip != nullptr && (*skip)[l] != 0) continue;
      const NodeId v = t.link(l).dst;
      if (seen[v]) continue;
      seen[v] = 1;
      if (reached(v, l)) return;
      q.push_back(v);
    }
  }
}

}  // namespace

bool shortest_path(const Topology& t, NodeId src, NodeId dst, const std::vector<char>* skip, std::vector<LinkId>& out) {
  if (src == dst) return true;
  std::vector<LinkId> via(t.num_nodes(), std::numeric_limits<LinkId>::max());
  bool found = false;
  breadth_first(t, src, skip, [&](NodeId v, LinkId l) {
    via[v] = l;
    found = v == dst;
    return found;
  });
  if (!found) return false;
  const std::size_t start = out.size();
  for (NodeId v = dst; v != src; v = t.link(via[v]).src) out.push_back(via[v]);
  std::reverse(out.begin() + static_cast<std::ptrdiff_t>(start), out.end());
  return true;
}

std::vector<int> hop_distances(const Topology& t, NodeId src, const std::vector<char>* skip) {
  std::vector<int> dist(t.num_nodes(), -1);
  dist[src] = 0;
  breadth_first(t, src, skip, [&](NodeId v, LinkId l) {
    dist[v] = dist[t.link(l).src] + 1;
    return false;
  });
  return dist;
}

std::shared_ptr<const Router> make_shortest_path_router() { return std::make_shared<ShortestPathRouter>(); }

Topology::Topology() : router_(make_shortest_path_router()) {}

std::uint64_t Topology::next_generation() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

NodeId Topology::add_device(Node n) {
  n.kind = NodeKind::device;
  const auto id = static_cast<NodeId>(nodes_.size());
  nodes_.push_back(std::move(n));
  out_.emplace_back();
  boost::add_vertex(graph_);
  devices_.push_back(id);
  return id;
}

NodeId Topology::add_switch(Node n) {
  n.kind = NodeKind::switch_node;
  const auto id = static_cast<NodeId>(nodes_.size());
  nodes_.push_back(std::move(n));
  out_.emplace_back();
  boost::add_vertex(graph_);
  return id;
}

LinkId Topology::add_link(NodeId src, NodeId dst, double bandwidth_Bps, double latency_s, LinkClass cls) {
  if (src >= nodes_.size() || dst >= nodes_.size()) {
    throw ConfigError(fmt::format("link {}->{}", src, dst), "a node id past the last node",
                      fmt::format("ids below {}", nodes_.size()));
  }
  if (src == dst) {
    throw ConfigError(fmt::format("link {}->{}", nodes_[src].name, nodes_[dst].name), "a self-loop",
                      "a link between two different nodes");
  }
  if (!(bandwidth_Bps > 0) || !std::isfinite(bandwidth_Bps)) {
    throw ConfigError(fmt::format("link {}->{}", nodes_[src].name, nodes_[dst].name),
                      fmt::format("bandwidth {} B/s", bandwidth_Bps), "a bandwidth greater than zero");
  }
  if (!(latency_s >= 0) || !std::isfinite(latency_s)) {
    throw ConfigError(fmt::format("link {}->{}", nodes_[src].name, nodes_[dst].name),
                      fmt::format("latency {} s", latency_s), "a latency of zero or more");
  }
  const auto id = static_cast<LinkId>(links_.size());
  links_.push_back(Link{src, dst, bandwidth_Bps, latency_s, cls});
  out_[src].push_back(id);
  boost::add_edge(src, dst, id, graph_);
  clear_routes();
  return id;
}

LinkId Topology::add_duplex(NodeId a, NodeId b, double bandwidth_Bps, double latency_s, LinkClass cls) {
  const LinkId ab = add_link(a, b, bandwidth_Bps, latency_s, cls);
  add_link(b, a, bandwidth_Bps, latency_s, cls);
  return ab;
}

void Topology::set_link_bandwidth(LinkId l, double bandwidth_Bps) {
  if (l >= links_.size()) {
    throw ConfigError(fmt::format("link {}", l), "a link id past the last link", fmt::format("ids below {}", links_.size()));
  }
  if (!(bandwidth_Bps > 0) || !std::isfinite(bandwidth_Bps)) {
    throw ConfigError(fmt::format("link {}->{}", nodes_[links_[l].src].name, nodes_[links_[l].dst].name),
                      fmt::format("bandwidth {} B/s", bandwidth_Bps), "a bandwidth greater than zero");
  }
  links_[l].bandwidth_Bps = bandwidth_Bps;
  clear_routes();
}

void Topology::set_link_latency(LinkId l, double latency_s) {
  if (l >= links_.size()) {
    throw ConfigError(fmt::format("link {}", l), "a link id past the last link", fmt::format("ids below {}", links_.size()));
  }
  if (!(latency_s >= 0) || !std::isfinite(latency_s)) {
    throw ConfigError(fmt::format("link {}->{}", nodes_[links_[l].src].name, nodes_[links_[l].dst].name),
                      fmt::format("latency {} s", latency_s), "a latency of zero or more");
  }
  links_[l].latency_s = latency_s;
  clear_routes();
}

void Topology::set_router(std::shared_ptr<const Router> r) {
  router_ = std::move(r);
  clear_routes();
}

const Route& Topology::route(NodeId src, NodeId dst) const {
  const std::size_t nn = nodes_.size();
  const bool dense = nn <= kDenseRouteNodes && src < nn && dst < nn;
  if (dense) {
    if (routes_.dense.empty()) routes_.dense.assign(nn * nn, nullptr);
    if (const Route* r = routes_.dense[static_cast<std::size_t>(src) * nn + dst]) return *r;
  }
  const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | dst;
  auto it = routes_.map.find(key);
  if (it != routes_.map.end()) return it->second;
  Route r;
  if (src != dst) router_->route(*this, src, dst, r.links);
  r.bottleneck_Bps = std::numeric_limits<double>::infinity();
  for (LinkId l : r.links) {
    r.latency_s += links_[l].latency_s;
    r.bottleneck_Bps = std::min(r.bottleneck_Bps, links_[l].bandwidth_Bps);
  }
  const Route& stored = routes_.map.emplace(key, std::move(r)).first->second;
  if (dense) routes_.dense[static_cast<std::size_t>(src) * nn + dst] = &stored;
  return stored;
}

double Topology::injection_Bps(NodeId device) const {
  double sum = 0;
  for (LinkId l : out_.at(device)) sum += links_[l].bandwidth_Bps;
  return sum;
}

void Topology::set_torus(std::vector<int> dims, std::vector<bool> wrap) {
  const std::string where = name_.empty() ? std::string("topology") : name_;
  if (dims.size() != wrap.size())
    throw ConfigError(where, fmt::format("{} torus dimensions with {} wraparound flags", dims.size(), wrap.size()),
                      "one wraparound flag per dimension");
  std::size_t product = 1;
  for (int d : dims) {
    if (d < 1) throw ConfigError(where, fmt::format("torus dimension {}", d), "every dimension >= 1");
    product *= static_cast<std::size_t>(d);
  }
  if (!dims.empty() && product != devices_.size())
    throw ConfigError(where, fmt::format("torus dimensions of product {} over {} devices", product, devices_.size()),
                      "dimensions that multiply to the device count");
  torus_dims_ = std::move(dims);
  torus_wrap_ = std::move(wrap);
}

void Topology::set_device_groups(std::vector<std::vector<int>> groups) {
  const std::string where = name_.empty() ? std::string("topology") : name_;
  std::vector<char> used(devices_.size(), 0);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty())
      throw ConfigError(where, fmt::format("device group {} is empty", g), "at least one rank per group");
    for (int r : groups[g]) {
      if (r < 0 || static_cast<std::size_t>(r) >= devices_.size())
        throw ConfigError(where, fmt::format("device group {} names rank {}", g, r),
                          fmt::format("ranks 0..{}", devices_.size() - 1));
      if (used[static_cast<std::size_t>(r)])
        throw ConfigError(where, fmt::format("rank {} in two device groups", r), "each rank in at most one group");
      used[static_cast<std::size_t>(r)] = 1;
    }
  }
  device_groups_ = std::move(groups);
}

void Topology::set_ring_order(std::vector<int> order) {
  const std::string where = name_.empty() ? std::string("topology") : name_;
  if (!order.empty()) {
    std::vector<char> seen(devices_.size(), 0);
    if (order.size() != devices_.size())
      throw ConfigError(where, fmt::format("a ring order of {} ranks over {} devices", order.size(), devices_.size()),
                        "a permutation of every rank");
    for (int r : order) {
      if (r < 0 || static_cast<std::size_t>(r) >= devices_.size() || seen[static_cast<std::size_t>(r)])
        throw ConfigError(where, fmt::format("ring order entry {} (out of range or repeated)", r),
                          "a permutation of every rank");
      seen[static_cast<std::size_t>(r)] = 1;
    }
  }
  ring_order_ = std::move(order);
}

void Topology::set_rank_devices(std::vector<RankDevice> kinds) {
  if (!kinds.empty() && kinds.size() != devices_.size())
    throw ConfigError(name_.empty() ? std::string("topology") : name_,
                      fmt::format("{} per-rank device kinds over {} devices", kinds.size(), devices_.size()),
                      "one per device, or none");
  rank_devices_ = std::move(kinds);
}

void Topology::validate(const std::string& where) const {
  if (devices_.empty()) throw ConfigError(where, "a topology with no device", "at least one device");
  // Undirected reachability from device 0 over the Boost graph: every device must be reached.
  std::vector<char> seen(nodes_.size(), 0);
  std::deque<NodeId> q{devices_.front()};
  seen[devices_.front()] = 1;
  while (!q.empty()) {
    const NodeId u = q.front();
    q.pop_front();
    for (auto [e, end] = boost::out_edges(u, graph_); e != end; ++e) {
      const auto v = static_cast<NodeId>(boost::target(*e, graph_));
      if (!seen[v]) { seen[v] = 1; q.push_back(v); }
    }
    for (auto [e, end] = boost::in_edges(u, graph_); e != end; ++e) {
      const auto v = static_cast<NodeId>(boost::source(*e, graph_));
      if (!seen[v]) { seen[v] = 1; q.push_back(v); }
    }
  }
  for (NodeId d : devices_) {
    if (!seen[d]) {
      throw ConfigError(where,
                        fmt::format("a disconnected graph: device '{}' cannot reach device '{}'",
                                    nodes_[devices_.front()].name, nodes_[d].name),
                        "every device connected to every other");
    }
  }
}

}  // namespace shardsim::topo
