// Switched cluster builders: `fat_tree` (two-level leaf/spine) and `rail_optimized`
// (DGX SuperPOD style: NVSwitch nodes, NIC k of every node on rail leaf k, spines above).
#include <fmt/format.h>

#include "sim/error.hpp"
#include "topologies/registry.hpp"

namespace shardsim::topo {
namespace {

// Deterministic ECMP hash of a (source, destination) pair: splitmix64 (Steele, Lea and Flood,
// "Fast splittable pseudorandom number generators", OOPSLA 2014) of (src << 32 | dst).
std::size_t ecmp(NodeId src, NodeId dst, std::size_t ways) {
  std::uint64_t z = (static_cast<std::uint64_t>(src) << 32) | dst;
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<std::size_t>(z % ways);
}

// Up/down routing on a two-level fat tree: hosts are nodes 0..H-1. Same leaf: host -> leaf ->
// host. Else host -> leaf -> spine (ECMP hash of the pair) -> leaf -> host. O(1).
class FatTreeRouter final : public Router {
 public:
  FatTreeRouter(std::size_t per_leaf, std::size_t spines, std::vector<LinkId> up, std::vector<LinkId> down,
                std::vector<LinkId> leaf_up, std::vector<LinkId> spine_down)
      : per_leaf_(per_leaf), spines_(spines), up_(std::move(up)), down_(std::move(down)),
        leaf_up_(std::move(leaf_up)), spine_down_(std::move(spine_down)), fallback_(make_shortest_path_router()) {}

  void route(const Topology& t, NodeId src, NodeId dst, std::vector<LinkId>& out) const override {
    if (src >= up_.size() || dst >= up_.size()) {
      fallback_->route(t, src, dst, out);
      return;
    }
    const std::size_t ls = src / per_leaf_, ld = dst / per_leaf_;
    out.push_back(up_[src]);
    if (ls != ld) {
      const std::size_t s = ecmp(src, dst, spines_);
      out.push_back(leaf_up_[ls * spines_ + s]);
      out.push_back(spine_down_[ld * spines_ + s]);
    }
    out.push_back(down_[dst]);
  }
  [[nodiscard]] std::string name() const override { return "fat-tree-up-down-ecmp"; }

 private:
  std::size_t per_leaf_, spines_;
  std::vector<LinkId> up_, down_, leaf_up_, spine_down_;
  std::shared_ptr<const Router> fallback_;
};

// Rail-optimized cluster: GPU (node n, local k) is node n*g+k.
//  same node:             GPU -> NVSwitch -> GPU
//  other node, same rail: GPU -> rail leaf k -> GPU
//  other node, other rail, "pxn": GPU -> NVSwitch -> GPU (node_s, k_d) -> rail leaf k_d -> GPU
//    (NCCL PXN: data moves over NVLink to the GPU next to the destination rail's NIC, so
//    inter-node traffic stays on one rail; NCCL 2.12 release notes)
//  other node, other rail, "spine": GPU -> leaf k_s -> spine (ECMP) -> leaf k_d -> GPU
class RailRouter final : public Router {
 public:
  std::size_t g = 0, spines = 0;
  bool pxn = true;
  std::vector<LinkId> nv_up, nv_down, rail_up, rail_down, leaf_up, spine_down;
  std::shared_ptr<const Router> fallback = make_shortest_path_router();

  void route(const Topology& t, NodeId src, NodeId dst, std::vector<LinkId>& out) const override {
    if (src >= nv_up.size() || dst >= nv_up.size()) {
      fallback->route(t, src, dst, out);
      return;
    }
    const std::size_t ns = src / g, nd = dst / g, ks = src % g, kd = dst % g;
    if (ns == nd) {
      out.push_back(nv_up[src]);
      out.push_back(nv_down[dst]);
    } else if (ks == kd) {
      out.push_back(rail_up[src]);
      out.push_back(rail_down[dst]);
    } else if (pxn) {
      const std::size_t relay = ns * g + kd;
      out.push_back(nv_up[src]);
      out.push_back(nv_down[relay]);
      out.push_back(rail_up[relay]);
      out.push_back(rail_down[dst]);
    } else {
      const std::size_t s = ecmp(src, dst, spines);
      out.push_back(rail_up[src]);
      out.push_back(leaf_up[ks * spines + s]);
      out.push_back(spine_down[kd * spines + s]);
      out.push_back(rail_down[dst]);
    }
  }
  [[nodiscard]] std::string name() const override { return pxn ? "rail-pxn" : "rail-spine-ecmp"; }
};

}  // namespace

void register_fat_tree_builders(std::vector<BuilderInfo>& r) {
  {
    BuilderInfo b;
    b.name = "fat_tree";
    b.description = "two-level leaf/spine fat tree; up/down routing with deterministic ECMP over spines";
    b.params = {
        {"hosts", ParamType::integer, "hosts", std::nullopt, "number of hosts (devices)"},
        {"hosts_per_leaf", ParamType::integer, "hosts", std::nullopt, "hosts on each leaf switch (divides hosts)"},
        {"bw", ParamType::rate, "B/s", std::nullopt, "host link bandwidth, per direction"},
        {"uplink_bw", ParamType::rate, "B/s", std::nullopt, "bandwidth of each leaf<->spine link, per direction"},
        {"spines", ParamType::integer, "switches", "1", "spine switches (each leaf has one link to each)"},
        {"lat", ParamType::time, "s", std::nullopt, "latency of every link"},
        {"class", ParamType::choice, "", "ib", "link class", {"ici", "nvlink", "pcie", "ib", "ethernet", "loopback"}},
    };
    b.build = [](Params& p) {
      const long hosts = p.integer("hosts");
      const long per_leaf = p.integer("hosts_per_leaf");
      const double bw = p.rate_Bps("bw");
      const double up_bw = p.rate_Bps("uplink_bw");
      const long spines = p.integer("spines");
      const double lat = p.seconds("lat");
      const LinkClass cls = p.link_class("class");
      if (hosts % per_leaf != 0) {
        throw ConfigError(p.where("hosts_per_leaf"), fmt::format("{} hosts in leaves of {}", hosts, per_leaf),
                          "hosts_per_leaf dividing hosts");
      }
      const long leaves = hosts / per_leaf;
      if (leaves > 1) check_builder_count(leaves * spines, "leaves x spines (links)", p.where("spines"));
      Topology t;
      for (long h = 0; h < hosts; ++h) {
        t.add_device(Node{fmt::format("h{}", h), NodeKind::device, {}, {fmt::format("leaf{}", h / per_leaf), fmt::format("h{}", h)}, false});
      }
      std::vector<NodeId> leaf, spine;
      for (long l = 0; l < leaves; ++l) leaf.push_back(t.add_switch(Node{fmt::format("leaf{}", l), NodeKind::switch_node, {}, {}, false}));
      // One leaf needs no spine: it already connects every host.
      const long nspines = leaves > 1 ? spines : 0;
      for (long s = 0; s < nspines; ++s) spine.push_back(t.add_switch(Node{fmt::format("spine{}", s), NodeKind::switch_node, {}, {}, false}));
      std::vector<LinkId> up, down, leaf_up, spine_down;
      for (long h = 0; h < hosts; ++h) {
        const LinkId l = t.add_duplex(static_cast<NodeId>(h), leaf[static_cast<std::size_t>(h / per_leaf)], bw, lat, cls);
        up.push_back(l);
        down.push_back(l + 1);
      }
      for (long l = 0; l < leaves; ++l) {
        for (long s = 0; s < nspines; ++s) {
          const LinkId id = t.add_duplex(leaf[static_cast<std::size_t>(l)], spine[static_cast<std::size_t>(s)], up_bw, lat, cls);
          leaf_up.push_back(id);
          spine_down.push_back(id + 1);
        }
      }
      t.set_router(std::make_shared<FatTreeRouter>(static_cast<std::size_t>(per_leaf), static_cast<std::size_t>(spines),
                                                   std::move(up), std::move(down), std::move(leaf_up), std::move(spine_down)));
      return t;
    };
    r.push_back(std::move(b));
  }
  {
    BuilderInfo b;
    b.name = "rail_optimized";
    b.description = "DGX SuperPOD style: nodes of g GPUs on an NVSwitch, NIC k of every node on rail leaf k, rail leaves joined by spines";
    b.params = {
        {"nodes", ParamType::integer, "nodes", std::nullopt, "number of nodes"},
        {"gpus_per_node", ParamType::integer, "GPUs", "8", "GPUs (and NICs, and rails) per node"},
        {"nvlink_bw", ParamType::rate, "B/s", std::nullopt, "NVLink bandwidth per GPU, per direction"},
        {"nvlink_lat", ParamType::time, "s", std::nullopt, "latency of each GPU<->NVSwitch link"},
        {"nvls", ParamType::boolean, "", "0", "the NVSwitches reduce in the network (NVLink SHARP)"},
        {"nic_bw", ParamType::rate, "B/s", std::nullopt, "NIC bandwidth per GPU, per direction"},
        {"ib_lat", ParamType::time, "s", std::nullopt, "latency of each InfiniBand link"},
        {"nic_class", ParamType::choice, "", "ib", "link class of the NICs, rail leaves and spines: ib (InfiniBand) or ethernet (RoCE, EFA, TCPXO)", {"ib", "ethernet"}},
        {"spines", ParamType::integer, "switches", "1", "spine switches (each rail leaf has one uplink to each)"},
        {"oversubscription", ParamType::integer, "ratio", "1", "leaf downlink : uplink bandwidth (1 = non-blocking)"},
        {"cross_rail", ParamType::choice, "", "pxn", "route between different rails: pxn (NVLink to the destination's rail first) or spine", {"pxn", "spine"}},
    };
    b.build = [](Params& p) {
      const long nodes = p.integer("nodes");
      const long g = p.integer("gpus_per_node");
      const double nv_bw = p.rate_Bps("nvlink_bw");
      const double nv_lat = p.seconds("nvlink_lat");
      const bool nvls = p.boolean("nvls");
      const double nic_bw = p.rate_Bps("nic_bw");
      const double ib_lat = p.seconds("ib_lat");
      const LinkClass nic_cls = link_class_from_string(p.choice("nic_class"), p.where("nic_class"));
      const long spines = p.integer("spines");
      const long over = p.integer("oversubscription");
      const bool pxn = p.choice("cross_rail") == "pxn";
      check_builder_count(nodes * g, "nodes x gpus_per_node (devices)", p.where("gpus_per_node"));
      check_builder_count(g * spines, "gpus_per_node x spines (links)", p.where("spines"));
      // Each rail leaf has `nodes` downlinks of nic_bw; its uplinks carry 1/over of that,
      // split evenly over the spines.
      const double uplink_bw = static_cast<double>(nodes) * nic_bw / static_cast<double>(over * spines);
      Topology t;
      for (long n = 0; n < nodes; ++n) {
        for (long k = 0; k < g; ++k) {
          t.add_device(Node{fmt::format("node{}/gpu{}", n, k), NodeKind::device, {}, {fmt::format("node{}", n), fmt::format("gpu{}", k)}, false});
        }
      }
      auto rr = std::make_shared<RailRouter>();
      rr->g = static_cast<std::size_t>(g);
      rr->spines = static_cast<std::size_t>(spines);
      rr->pxn = pxn;
      for (long n = 0; n < nodes; ++n) {
        const NodeId sw = t.add_switch(Node{fmt::format("node{}/nvswitch", n), NodeKind::switch_node, {}, {fmt::format("node{}", n)}, nvls});
        for (long k = 0; k < g; ++k) {
          const LinkId l = t.add_duplex(static_cast<NodeId>(n * g + k), sw, nv_bw, nv_lat, LinkClass::nvlink);
          rr->nv_up.push_back(l);
          rr->nv_down.push_back(l + 1);
        }
      }
      std::vector<NodeId> leaf;
      for (long k = 0; k < g; ++k) leaf.push_back(t.add_switch(Node{fmt::format("rail{}", k), NodeKind::switch_node, {}, {}, false}));
      rr->rail_up.resize(static_cast<std::size_t>(nodes * g));
      rr->rail_down.resize(static_cast<std::size_t>(nodes * g));
      for (long n = 0; n < nodes; ++n) {
        for (long k = 0; k < g; ++k) {
          const auto gpu = static_cast<std::size_t>(n * g + k);
          const LinkId l = t.add_duplex(static_cast<NodeId>(gpu), leaf[static_cast<std::size_t>(k)], nic_bw, ib_lat, nic_cls);
          rr->rail_up[gpu] = l;
          rr->rail_down[gpu] = l + 1;
        }
      }
      if (g > 1) {
        std::vector<NodeId> spine;
        for (long s = 0; s < spines; ++s) spine.push_back(t.add_switch(Node{fmt::format("spine{}", s), NodeKind::switch_node, {}, {}, false}));
        for (long k = 0; k < g; ++k) {
          for (long s = 0; s < spines; ++s) {
            const LinkId l = t.add_duplex(leaf[static_cast<std::size_t>(k)], spine[static_cast<std::size_t>(s)], uplink_bw, ib_lat, nic_cls);
            rr->leaf_up.push_back(l);
            rr->spine_down.push_back(l + 1);
          }
        }
      }
      t.set_router(rr);
      t.set_devices_forward(pxn);
      std::vector<std::vector<int>> groups;
      for (long n = 0; n < nodes; ++n) {
        std::vector<int> grp;
        for (long k = 0; k < g; ++k) grp.push_back(static_cast<int>(n * g + k));
        groups.push_back(std::move(grp));
      }
      t.set_device_groups(std::move(groups));
      return t;
    };
    r.push_back(std::move(b));
  }
}

}  // namespace shardsim::topo
