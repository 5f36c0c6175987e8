// Single-switch builders: `nvswitch_node`, `switch` (star) and `bus` (one shared medium).
#include <fmt/format.h>

#include "topologies/registry.hpp"

namespace shardsim::topo {
namespace {

// A function, not a vector at namespace scope: the builder table may be built during another
// translation unit's static initialisation, before such a vector would exist.
const std::vector<std::string>& link_classes() {
  static const std::vector<std::string> v{"ici", "nvlink", "pcie", "ib", "ethernet", "loopback"};
  return v;
}

// Devices are nodes 0..n-1. A device-to-device route is up[src], then `middle` (the shared
// medium of a bus) when there is one, then down[dst]: O(1). Other endpoints (switches) fall
// back to breadth-first search.
class StarRouter final : public Router {
 public:
  StarRouter(std::vector<LinkId> up, std::vector<LinkId> down, std::optional<LinkId> middle)
      : up_(std::move(up)), down_(std::move(down)), middle_(middle), fallback_(make_shortest_path_router()) {}

  void route(const Topology& t, NodeId src, NodeId dst, std::vector<LinkId>& out) const override {
    if (src >= up_.size() || dst >= up_.size()) {
      fallback_->route(t, src, dst, out);
      return;
    }
    out.push_back(up_[src]);
    if (middle_) out.push_back(*middle_);
    out.push_back(down_[dst]);
  }
  [[nodiscard]] std::string name() const override { return middle_ ? "bus" : "star"; }

 private:
  std::vector<LinkId> up_, down_;
  std::optional<LinkId> middle_;
  std::shared_ptr<const Router> fallback_;
};

// n devices named <prefix><i>, each with a duplex link to one switch.
Topology star(long n, const std::string& prefix, const std::string& switch_name, double bw, double lat,
              LinkClass cls, bool reduction) {
  Topology t;
  for (long i = 0; i < n; ++i) t.add_device(Node{fmt::format("{}{}", prefix, i), NodeKind::device, {}, {}, false});
  const NodeId sw = t.add_switch(Node{switch_name, NodeKind::switch_node, {}, {}, reduction});
  std::vector<LinkId> up, down;
  for (long i = 0; i < n; ++i) {
    const LinkId l = t.add_duplex(static_cast<NodeId>(i), sw, bw, lat, cls);
    up.push_back(l);
    down.push_back(l + 1);
  }
  t.set_router(std::make_shared<StarRouter>(std::move(up), std::move(down), std::nullopt));
  return t;
}

}  // namespace

void register_star_builders(std::vector<BuilderInfo>& r) {
  {
    BuilderInfo b;
    b.name = "nvswitch_node";
    b.description = "n GPUs on one non-blocking NVSwitch (one NVLink link per GPU to the switch)";
    b.params = {
        {"n", ParamType::integer, "GPUs", std::nullopt, "number of GPUs"},
        {"bw", ParamType::rate, "B/s", std::nullopt, "NVLink bandwidth per GPU, per direction"},
        {"lat", ParamType::time, "s", std::nullopt, "latency of each GPU<->switch link (a GPU-to-GPU route has two)"},
        {"nvls", ParamType::boolean, "", "0", "the switch reduces in the network (NVLink SHARP)"},
    };
    b.build = [](Params& p) {
      const long n = p.integer("n");
      const double bw = p.rate_Bps("bw");
      const double lat = p.seconds("lat");
      const bool nvls = p.boolean("nvls");
      return star(n, "gpu", "nvswitch", bw, lat, LinkClass::nvlink, nvls);
    };
    r.push_back(std::move(b));
  }
  {
    BuilderInfo b;
    b.name = "switch";
    b.description = "star: n devices, each with a duplex link to one non-blocking switch";
    b.params = {
        {"n", ParamType::integer, "devices", std::nullopt, "number of devices"},
        {"bw", ParamType::rate, "B/s", std::nullopt, "bandwidth of each device link, per direction"},
        {"lat", ParamType::time, "s", std::nullopt, "latency of each device<->switch link (a route has two)"},
        {"class", ParamType::choice, "", "ethernet", "link class", link_classes()},
    };
    b.build = [](Params& p) {
      const long n = p.integer("n");
      const double bw = p.rate_Bps("bw");
      const double lat = p.seconds("lat");
      const LinkClass cls = p.link_class("class");
      return star(n, "d", "switch", bw, lat, cls, false);
    };
    r.push_back(std::move(b));
  }
  {
    BuilderInfo b;
    b.name = "bus";
    b.description = "n devices on one shared medium: every flow crosses the one medium link, so all flows share bw";
    b.params = {
        {"n", ParamType::integer, "devices", std::nullopt, "number of devices"},
        {"bw", ParamType::rate, "B/s", std::nullopt, "capacity of the shared medium (all flows together)"},
        {"lat", ParamType::time, "s", std::nullopt, "latency of the medium (the whole route)"},
        {"class", ParamType::choice, "", "ethernet", "link class", link_classes()},
    };
    b.build = [](Params& p) {
      const long n = p.integer("n");
      const double bw = p.rate_Bps("bw");
      const double lat = p.seconds("lat");
      const LinkClass cls = p.link_class("class");
      // device -> medium_in -> (medium, bw, lat) -> medium_out -> device. The access links
      // have capacity bw too (a device cannot send faster than the medium) and no latency.
      Topology t;
      for (long i = 0; i < n; ++i) t.add_device(Node{fmt::format("d{}", i), NodeKind::device, {}, {}, false});
      const NodeId in = t.add_switch(Node{"medium_in", NodeKind::switch_node, {}, {}, false});
      const NodeId out = t.add_switch(Node{"medium_out", NodeKind::switch_node, {}, {}, false});
      const LinkId medium = t.add_link(in, out, bw, lat, cls);
      std::vector<LinkId> up, down;
      for (long i = 0; i < n; ++i) {
        up.push_back(t.add_link(static_cast<NodeId>(i), in, bw, 0, cls));
        down.push_back(t.add_link(out, static_cast<NodeId>(i), bw, 0, cls));
      }
      t.set_router(std::make_shared<StarRouter>(std::move(up), std::move(down), medium));
      return t;
    };
    r.push_back(std::move(b));
  }
}

}  // namespace shardsim::topo
