#pragma once
// Topology: a directed graph (Boost.Graph adjacency_list) of endpoints (devices) and switches.
// Every physical link is two directed edges, each with its own bandwidth, latency and link
// class (DESIGN 3). Node and link data live in vectors indexed by NodeId / LinkId; the Boost
// graph carries the LinkId on each edge, so graph algorithms and the flow network index the
// same arrays.
//
// Ranks: device k (in insertion order) is rank k. Builders insert devices in a documented
// order (tori: row-major over coordinates, last dimension fastest; clusters: node-major).
//
// Thread safety: const methods are safe to call concurrently except route(), which fills a
// cache; give each thread its own Topology (sweeps build one per scenario).
#include <boost/graph/adjacency_list.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace shardsim::topo {

using NodeId = std::uint32_t;
using LinkId = std::uint32_t;

enum class LinkClass : std::uint8_t { ici, nvlink, pcie, ib, ethernet, loopback };
const char* to_string(LinkClass c);
/// Throws ConfigError naming `where` for an unknown class.
LinkClass link_class_from_string(const std::string& s, const std::string& where);

enum class NodeKind : std::uint8_t { device, switch_node };

struct Node {
  std::string name;
  NodeKind kind = NodeKind::device;
  std::vector<int> coords;          ///< torus coordinates (devices of tori only)
  std::vector<std::string> group;   ///< group path, outermost first: {"pod0","node3","gpu5"}
  bool in_network_reduction = false;  ///< switch can reduce (NVLink SHARP, IB SHARP)
};

struct Link {
  NodeId src = 0;
  NodeId dst = 0;
  double bandwidth_Bps = 0;
  double latency_s = 0;
  LinkClass cls = LinkClass::ethernet;
};

/// A path between two nodes: directed links in order, and the sum of their latencies.
struct Route {
  std::vector<LinkId> links;
  double latency_s = 0;
  /// Smallest link bandwidth on the path (infinity for an empty route).
  double bottleneck_Bps = 0;
};

class Topology;

/// Routing policy, chosen by the builder. Must be deterministic.
class Router {
 public:
  virtual ~Router() = default;
  /// Appends the links from src to dst (src != dst) to `out`. Throws std::runtime_error if
  /// there is no path.
  virtual void route(const Topology& t, NodeId src, NodeId dst, std::vector<LinkId>& out) const = 0;
  [[nodiscard]] virtual std::string name() const = 0;
};

/// The shortest path from src to dst by hop count (breadth-first), ties to the lowest LinkId,
/// through devices only when Topology::devices_forward, skipping links l with skip[l] != 0
/// (skip may be null). Appends it to `out` and returns true, or returns false (no path).
bool shortest_path(const Topology& t, NodeId src, NodeId dst, const std::vector<char>* skip, std::vector<LinkId>& out);

/// Hop distances from `src` to every node by the same breadth-first search (directed links,
/// through devices only when Topology::devices_forward, skipping links l with skip[l] != 0;
/// skip may be null); -1 where unreachable. O(V + E).
std::vector<int> hop_distances(const Topology& t, NodeId src, const std::vector<char>* skip = nullptr);

/// Shortest paths by hop count (breadth-first), ties broken by lowest LinkId. Paths pass
/// through devices only when Topology::devices_forward is set. O(V + E) per new pair.
std::shared_ptr<const Router> make_shortest_path_router();

class Topology {
 public:
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                      boost::no_property, boost::property<boost::edge_index_t, LinkId>>;

  Topology();

  NodeId add_device(Node n);
  NodeId add_switch(Node n);
  /// One directed link. Throws ConfigError for bad ids or non-positive bandwidth.
  LinkId add_link(NodeId src, NodeId dst, double bandwidth_Bps, double latency_s, LinkClass cls);
  /// Two directed links, a->b then b->a, same parameters. Returns the a->b id (b->a is +1).
  LinkId add_duplex(NodeId a, NodeId b, double bandwidth_Bps, double latency_s, LinkClass cls);

  [[nodiscard]] std::size_t num_nodes() const { return nodes_.size(); }
  /// Identifies this graph's links and routing: unique per process, renewed whenever a link
  /// is added or the router changes. Caches of derived figures key on it.
  [[nodiscard]] std::uint64_t generation() const { return routes_.generation; }
  [[nodiscard]] std::size_t num_links() const { return links_.size(); }
  [[nodiscard]] std::size_t num_devices() const { return devices_.size(); }
  [[nodiscard]] const Node& node(NodeId n) const { return nodes_.at(n); }
  [[nodiscard]] const Link& link(LinkId l) const { return links_.at(l); }
  [[nodiscard]] const std::vector<Link>& links() const { return links_; }
  [[nodiscard]] const std::vector<Node>& nodes() const { return nodes_; }
  /// Node id of rank r. Throws std::out_of_range.
  [[nodiscard]] NodeId device(std::size_t rank) const { return devices_.at(rank); }
  [[nodiscard]] const std::vector<NodeId>& devices() const { return devices_; }
  [[nodiscard]] const Graph& graph() const { return graph_; }
  /// Outgoing links of a node, in insertion order.
  [[nodiscard]] const std::vector<LinkId>& out_links(NodeId n) const { return out_.at(n); }

  void set_router(std::shared_ptr<const Router> r);
  [[nodiscard]] const Router& router() const { return *router_; }
  [[nodiscard]] std::shared_ptr<const Router> shared_router() const { return router_; }
  /// Changes one link's bandwidth (faults.hpp: a degraded link); clears the route cache.
  /// Throws ConfigError for a bad id or a bandwidth that is not positive and finite.
  void set_link_bandwidth(LinkId l, double bandwidth_Bps);
  /// Changes one link's latency (calibration: alpha carries it); clears the route cache.
  /// Throws ConfigError for a bad id or a latency that is negative or not finite.
  void set_link_latency(LinkId l, double latency_s);
  /// Route between two nodes (cached). Same node: an empty route.
  [[nodiscard]] const Route& route(NodeId src, NodeId dst) const;
  /// Route between two ranks.
  [[nodiscard]] const Route& rank_route(std::size_t a, std::size_t b) const {
    return route(device(a), device(b));
  }

  /// Total bandwidth a device can inject into the network (sum of its outgoing links).
  [[nodiscard]] double injection_Bps(NodeId device) const;

  // ---- structure (set by builders, read by collectives and the step) ----
  // Kept behind accessors (issue 12): each setter checks what it is given against the graph
  // (ranks in range, a permutation, dimensions that multiply to the device count), so a
  // builder cannot leave a hint that names a rank the topology does not have.

  /// Torus dimensions when the devices form a torus (rank = row-major index of coords,
  /// last dimension fastest); empty otherwise.
  [[nodiscard]] const std::vector<int>& torus_dims() const { return torus_dims_; }
  /// Wraparound per torus dimension (same length as torus_dims()).
  [[nodiscard]] const std::vector<bool>& torus_wrap() const { return torus_wrap_; }
  /// Sets both. Throws ConfigError unless the sizes agree, every dimension is >= 1 and their
  /// product is num_devices().
  void set_torus(std::vector<int> dims, std::vector<bool> wrap);
  /// Groups of ranks that share a fast domain (e.g. the 8 GPUs of a DGX node), in rank
  /// order; empty when flat. Hierarchical algorithms use it.
  [[nodiscard]] const std::vector<std::vector<int>>& device_groups() const { return device_groups_; }
  /// Throws ConfigError for an empty group, a rank out of range or in two groups.
  void set_device_groups(std::vector<std::vector<int>> groups);
  /// A ring order over all ranks that keeps neighbours close (torus: boustrophedon snake);
  /// empty means identity.
  [[nodiscard]] const std::vector<int>& ring_order() const { return ring_order_; }
  /// Throws ConfigError unless `order` is empty or a permutation of 0..num_devices()-1.
  void set_ring_order(std::vector<int> order);
  /// True when devices forward traffic for others (torus chips route ICI traffic; PXN GPUs
  /// relay over NVLink to the NIC of another rail). Max-flow bisection (describe.hpp) lets
  /// flow pass through devices only when this is set.
  [[nodiscard]] bool devices_forward() const { return devices_forward_; }
  void set_devices_forward(bool on) { devices_forward_ = on; }

  /// Device model the topology implies ("tpu-v3", "h100", ...; presets set it, JSON may set
  /// it with "device_model"); empty when unknown.
  [[nodiscard]] const std::string& device_model() const { return device_model_; }
  void set_device_model(std::string model) { device_model_ = std::move(model); }
  /// Per-rank device kinds (issue 16: mixed generations in one topology; a custom node's
  /// "device"), in rank order: each rank's model ("" = device_model) and the input location it
  /// came from ("topo.json: /nodes/9/device"), which names it in errors. Empty when uniform.
  /// Names are not checked here (the device presets live in models/compute): the step resolves
  /// them (step::topology_rank_devices) and reports an unknown one at that location.
  struct RankDevice {
    std::string model, where;
  };
  [[nodiscard]] const std::vector<RankDevice>& rank_devices() const { return rank_devices_; }
  /// Throws ConfigError unless `kinds` is empty or has one entry per device.
  void set_rank_devices(std::vector<RankDevice> kinds);
  /// Device model of rank r: its own kind, else device_model().
  [[nodiscard]] const std::string& device_model_of(std::size_t rank) const {
    return rank < rank_devices_.size() && !rank_devices_[rank].model.empty() ? rank_devices_[rank].model
                                                                              : device_model_;
  }

  // ---- provenance ----
  /// Name (preset name or builder spec), a one-line description, and the effective
  /// configuration it came from (what `topo show --json` prints).
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& description() const { return description_; }
  [[nodiscard]] const nlohmann::json& config() const { return config_; }
  void set_name(std::string name) { name_ = std::move(name); }
  void set_description(std::string description) { description_ = std::move(description); }
  void set_config(nlohmann::json config) { config_ = std::move(config); }
  /// Sets one key of the configuration object (a preset's name, the faults applied).
  void set_config_entry(const std::string& key, nlohmann::json value) { config_[key] = std::move(value); }

  /// Throws ConfigError if the graph is disconnected between devices (names two nodes that
  /// cannot reach each other), has no device, or a link with bad parameters.
  void validate(const std::string& where) const;

 private:
  std::vector<int> torus_dims_;
  std::vector<bool> torus_wrap_;
  std::vector<std::vector<int>> device_groups_;
  std::vector<int> ring_order_;
  bool devices_forward_ = false;
  std::string device_model_;
  std::vector<RankDevice> rank_devices_;
  std::string name_;
  std::string description_;
  nlohmann::json config_;

  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<NodeId> devices_;
  std::vector<std::vector<LinkId>> out_;
  Graph graph_;
  std::shared_ptr<const Router> router_;
  // Routes computed so far. A copy of a Topology starts with an empty cache (the dense view
  // points into the map it was built for, so a copied view would read the source's routes, and
  // freed memory once the source is gone) and keeps the generation: same links, same routing.
  struct RouteCache {
    std::unordered_map<std::uint64_t, Route> map;
    // Direct-indexed view of `map` (src x nodes + dst) for graphs of at most kDenseRouteNodes
    // nodes, so that analytical sweeps do not pay a hash lookup per transfer.
    std::vector<const Route*> dense;
    std::uint64_t generation = next_generation();
    RouteCache() = default;
    RouteCache(const RouteCache& o) : generation(o.generation) {}
    RouteCache& operator=(const RouteCache& o) {
      if (this != &o) {
        map.clear();
        dense.clear();
        generation = o.generation;
      }
      return *this;
    }
    RouteCache(RouteCache&&) noexcept = default;  // moved map nodes keep their addresses
    RouteCache& operator=(RouteCache&&) noexcept = default;
    ~RouteCache() = default;
    void clear() {
      map.clear();
      dense.clear();
      generation = next_generation();
    }
  };
  static constexpr std::size_t kDenseRouteNodes = 1536;
  static std::uint64_t next_generation();
  mutable RouteCache routes_;
  void clear_routes() { routes_.clear(); }
};

}  // namespace shardsim::topo
