// Presets (sizes, shapes, sources' numbers) and describe (bisection, diameter, export).
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "test_helpers.hpp"
#include "topologies/describe.hpp"
#include "topologies/presets.hpp"

namespace shardsim::topo {
using test::error_of;

TEST_SUITE("test_topologies") {

TEST_CASE("TPU presets: shapes, wraparound and the documented pod bisections") {
  const Topology v3 = make_topology("tpu-v3-1024", "test");
  CHECK(v3.torus_dims() == std::vector<int>{32, 32});
  CHECK(v3.torus_wrap() == std::vector<bool>{true, true});
  CHECK(v3.num_links() == 4096);
  CHECK(v3.device_model() == "tpu-v3");
  CHECK(v3.name() == "tpu-v3-1024");
  CHECK(v3.config().at("preset") == "tpu-v3-1024");
  // Cloud TPU docs (v3): bisection bandwidth per Pod 6.4 TB/s = 2 x 32 links x 100 GB/s.
  CHECK(*describe(v3).bisection_Bps == 6.4e12);
  CHECK(*describe(v3).diameter_hops == 32);  // 16 + 16

  const Topology half = make_topology("tpu-v3-512", "test");
  CHECK(half.torus_dims() == std::vector<int>{16, 32});
  CHECK(half.torus_wrap() == std::vector<bool>{false, true});  // only the full pod dimension wraps
  // Cut across dimension 0: 512/16 rows x 1 link; across dimension 1: 512/32 x 2 links.
  CHECK(*describe(half).bisection_Bps == 3.2e12);

  const Topology v4 = make_topology("tpu-v4-4096", "test");
  CHECK(v4.torus_dims() == std::vector<int>{16, 16, 16});
  // 2 x 256 links x 50 GB/s = 25.6 TB/s (Cloud TPU docs quote 24 TB/s for the Pod).
  CHECK(*describe(v4).bisection_Bps == 25.6e12);
  CHECK(make_topology("tpu-v4-16", "test").torus_wrap() == std::vector<bool>{false, false, false});  // 2x2x4
  CHECK(make_topology("tpu-v4-64", "test").torus_wrap() == std::vector<bool>{true, true, true});     // 4x4x4
  const Topology v5p = make_topology("tpu-v5p-6144", "test");
  CHECK(v5p.torus_dims() == std::vector<int>{16, 16, 24});
  CHECK(v5p.injection_Bps(v5p.device(0)) == 600e9);  // 6 links x 100 GB/s
  // Cloud TPU docs (v5e): bisection bandwidth per Pod 1.6 TB/s = 2 x 16 links x 50 GB/s.
  CHECK(*describe(make_topology("tpu-v5e-256", "test")).bisection_Bps == 1.6e12);
  CHECK(make_topology("tpu-v2-256", "test").torus_dims() == std::vector<int>{16, 16});
}

TEST_CASE("GPU presets: one node, rail-optimized clusters and NVL72") {
  const Topology one = make_topology("dgx-h100-8", "test");
  CHECK(one.config().at("builder") == "nvswitch_node");
  CHECK(one.num_devices() == 8);
  CHECK(one.node(8).in_network_reduction);
  CHECK(one.injection_Bps(one.device(0)) == 450e9);
  const Topology pod = make_topology("dgx-h100-64", "test");
  CHECK(pod.num_devices() == 64);
  CHECK(pod.config().at("builder") == "rail_optimized");
  CHECK(pod.config().at("nodes") == 8);
  CHECK(pod.device_groups().size() == 8);
  CHECK(pod.device_groups()[7] == std::vector<int>{56, 57, 58, 59, 60, 61, 62, 63});
  CHECK(pod.device_model() == "h100");
  CHECK(pod.injection_Bps(pod.device(0)) == 450e9 + 50e9);  // NVLink + one 400 Gb/s NIC
  CHECK(*describe(pod).bisection_Bps == 4 * 8 * 50e9);       // (nodes/2) x 8 x 50 GB/s
  CHECK(make_topology("dgx-a100-16", "test").rank_route(0, 8).bottleneck_Bps == 25e9);  // HDR 200 Gb/s
  CHECK(!make_topology("dgx-a100-8", "test").node(8).in_network_reduction);
  CHECK(make_topology("dgx-h200-24", "test").device_model() == "h200");
  const Topology nvl = make_topology("gb200-nvl72", "test");
  CHECK(nvl.num_devices() == 72);
  CHECK(nvl.injection_Bps(nvl.device(0)) == 900e9);
  CHECK(*describe(nvl).bisection_Bps == 36 * 900e9);
}

TEST_CASE("cloud and B200 presets carry their datasheets' NIC bandwidth per GPU") {
  // Per-GPU NIC share = instance network bandwidth / 8 GPUs, as each preset's sources state:
  // p4d/p4de 400 Gb/s EFA (4 x 100 Gb/s) -> 50 Gb/s = 6.25 GB/s; p5 3200 Gb/s (32 x 100 Gb/s EFA)
  // -> 400 Gb/s = 50 GB/s; A3 Mega 1600 Gb/s GPU-to-GPU -> 200 Gb/s = 25 GB/s; DGX B200 8 x 400 Gb/s.
  const auto nic_Bps = [](const std::string& name) { return make_topology(name, "test").rank_route(0, 8).bottleneck_Bps; };
  CHECK(nic_Bps("aws-p4d-16") == 400e9 / 8 / 8);
  CHECK(nic_Bps("aws-p4de-16") == 400e9 / 8 / 8);
  CHECK(nic_Bps("aws-p5-16") == 3200e9 / 8 / 8);
  CHECK(nic_Bps("gcp-a3-mega-16") == 1600e9 / 8 / 8);
  CHECK(nic_Bps("dgx-b200-16") == 400e9 / 8);
  // Meta's Llama 3 cluster (arXiv 2407.21783 sec. 3.3.1): 400 Gb/s RoCE per GPU, up to 24K GPUs.
  CHECK(nic_Bps("meta-h100-roce-16") == 400e9 / 8);
  CHECK(make_topology("meta-h100-roce-16", "test").link(make_topology("meta-h100-roce-16", "test").rank_route(0, 8).links.front()).cls ==
        LinkClass::ethernet);
  CHECK(make_topology("meta-h100-roce-24576", "test").num_devices() == 24576);
  CHECK(error_of("meta-h100-roce-24584").rfind("meta-h100-roce-24584: 24584 GPUs is not a valid meta-h100-roce size;", 0) == 0);
  // The DGX A100 preset gave p4de four times its NIC bandwidth (issue 14): 200 Gb/s vs 50 Gb/s.
  CHECK(nic_Bps("dgx-a100-16") == 4 * nic_Bps("aws-p4de-16"));
  CHECK(make_topology("aws-p4d-8", "test").device_model() == "a100-40gb");
  CHECK(make_topology("aws-p4de-8", "test").device_model() == "a100-80gb");
  CHECK(make_topology("dgx-a100-8", "test").device_model() == "a100-80gb");
  // Selene (Megatron-LM SC'21 sec. 5): DGX A100 80GB nodes, one HDR 200 Gb/s NIC per GPU, 4,480 GPUs.
  CHECK(make_topology("selene-16", "test").device_model() == "a100-80gb");
  CHECK(nic_Bps("selene-16") == 200e9 / 8);
  CHECK(make_topology("selene-4480", "test").num_devices() == 4480);
  CHECK(make_topology("aws-p5-8", "test").device_model() == "h100");
  const Topology b200 = make_topology("dgx-b200-8", "test");
  CHECK(b200.device_model() == "b200");
  CHECK(b200.injection_Bps(b200.device(0)) == 14.4e12 / 2 / 8);  // 14.4 TB/s aggregate, bidirectional, 8 GPUs
  CHECK(b200.node(8).in_network_reduction);
}

TEST_CASE("cloud presets of their own: RoCE where the DGX has InfiniBand, NVL72 domains joined by NICs") {
  const auto route = [](const std::string& name, std::uint32_t a, std::uint32_t b) {
    return make_topology(name, "test").rank_route(a, b);
  };
  const auto nic_class = [](const std::string& name, std::uint32_t a, std::uint32_t b) {
    const Topology t = make_topology(name, "test");
    return t.link(t.rank_route(a, b).links.front()).cls;
  };
  // GCP A3 Ultra / A4: the DGX H200 / B200 per-GPU NIC (3,200 Gbps over 8 CX-7), but RoCE.
  CHECK(route("gcp-a3-ultra-16", 0, 8).bottleneck_Bps == 3200e9 / 8 / 8);
  CHECK(nic_class("gcp-a3-ultra-16", 0, 8) == LinkClass::ethernet);
  CHECK(nic_class("dgx-h200-16", 0, 8) == LinkClass::ib);
  CHECK(make_topology("gcp-a3-ultra-8", "test").device_model() == "h200");
  CHECK(route("gcp-a4-16", 0, 8).bottleneck_Bps == 3200e9 / 8 / 8);
  CHECK(make_topology("gcp-a4-16", "test").device_model() == "b200");
  // NVL72 domains: 72 GPUs on NVLink, the next domain through the GPUs' NICs.
  const Topology a4x = make_topology("gcp-a4x-144", "test");
  CHECK(a4x.num_devices() == 144);
  CHECK(a4x.device_model() == "gb200");
  CHECK(a4x.rank_route(0, 71).bottleneck_Bps == 900e9);
  CHECK(a4x.rank_route(0, 72).bottleneck_Bps == 1600e9 / 4 / 8);  // 4 CX-7, 1,600 Gbps per 4 GPUs
  CHECK(make_topology("gcp-a4x-72", "test").num_devices() == 72);
  // gcp-a4x is a prefix of gcp-a4x-max: the longer family name wins.
  CHECK(make_topology("gcp-a4x-max-144", "test").device_model() == "gb300");
  CHECK(route("gcp-a4x-max-144", 0, 72).bottleneck_Bps == 3200e9 / 4 / 8);
  CHECK(error_of("gcp-a4x-max-100").rfind("gcp-a4x-max-100: 100 GPUs is not a valid gcp-a4x-max size;", 0) == 0);
  CHECK(nic_class("azure-nd-gb200-v6-144", 0, 72) == LinkClass::ib);
  CHECK(nic_class("oci-gb200-144", 0, 72) == LinkClass::ethernet);
  CHECK(route("oci-gb300-144", 0, 72).bottleneck_Bps == 8 * 400e9 / 4 / 8);  // 8 x 400G per 4-GPU host
  CHECK(make_topology("oci-gb300-216", "test").num_devices() == 216);  // three racks
}

TEST_CASE("every number of every preset family names its source") {
  // STYLE: every constant carries its source. A preset's fields (nested ones as "link.bw") each
  // need a "sources" entry; only names, units and link classes are exempt.
  const std::set<std::string> exempt = {"family", "kind", "description", "device_model", "unit",
                                        "sources", "node_unit", "builder", "class"};
  for (const auto& f : preset_families()) {
    CAPTURE(f.name);
    REQUIRE(f.data.contains("sources"));
    const auto& src = f.data.at("sources");
    for (const auto& item : f.data.items()) {
      const std::string key = item.key();  // CAPTURE takes a lambda capture: clang 14 refuses structured bindings
      if (exempt.count(key)) continue;
      if (item.value().is_object()) {
        for (const auto& sub : item.value().items()) {
          const std::string nested = key + "." + sub.key();
          CAPTURE(nested);
          if (!exempt.count(sub.key())) CHECK(src.contains(nested));
        }
      } else {
        CAPTURE(key);
        CHECK(src.contains(key));
      }
    }
  }
}

TEST_CASE("preset size errors list the valid sizes") {
  CHECK(error_of("tpu-v3-1000") ==
        "tpu-v3-1000: 1000 chips is not a valid tpu-v3 slice; expected one of 4, 8, 16, 32, 64, 128, 256, 512, 1024");
  CHECK(error_of("tpu-v5p-16") ==
        "tpu-v5p-16: 16 chips is not a valid tpu-v5p slice; expected one of 4, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 6144");
  CHECK(error_of("tpu-v3-abc") ==
        "tpu-v3-abc: 'abc' is not a number of chips; expected one of 4, 8, 16, 32, 64, 128, 256, 512, 1024");
  CHECK(error_of("dgx-h100-12") ==
        "dgx-h100-12: 12 GPUs is not a valid dgx-h100 size; expected 8 (one node) or a multiple of 8 up to 1024 "
        "(rail-optimized cluster of 8-GPU nodes)");
  CHECK(error_of("dgx-h100-2048").rfind("dgx-h100-2048: 2048 GPUs is not a valid dgx-h100 size;", 0) == 0);
}

TEST_CASE("every preset name builds with the size it names") {
  const auto names = preset_names();
  // Slices of v2, v3, v4, v5p, v5e; gb200-nvl72; dgx-a100/b200/h100/h200, aws-p4d/p4de/p5 and
  // gcp-a3-mega at 8, 16, ..., 1024; meta-h100-roce at 8, 16, ..., 16384; selene at 8, ..., 4096;
  // jean-zay-a100 at 8, ..., 256; megascale-a100 at 8, ..., 8192; gcp-a3-ultra and gcp-a4 at 8,
  // ..., 1024; the five NVL72-domain families at 72, 144, ..., 2304.
  CHECK(names.size() == 7 + 9 + 11 + 11 + 8 + 1 + 8 * 8 + 12 + 10 + 6 + 11 + 2 * 8 + 5 * 6);
  for (const auto& n : names) {
    CAPTURE(n);
    const Topology t = make_topology(n, "test");
    CHECK(!t.device_model().empty());
    const auto dash = n.find_last_of('-');
    if (n != "gb200-nvl72") CHECK(std::to_string(t.num_devices()) == n.substr(dash + 1));
  }
}

TEST_CASE("bisection: closed forms agree with the max-flow") {
  const Topology t44 = make_topology("torus:dims=4x4,bw=100GB/s,lat=1us", "test");
  const auto s44 = describe(t44);
  CHECK(*s44.bisection_Bps == 8 * 100e9);  // 16/4 rows x 2 links
  CHECK(s44.bisection_method.rfind("closed form", 0) == 0);
  CHECK(rank_halves_max_flow_Bps(t44) == 8 * 100e9);
  const Topology m44 = make_topology("torus:dims=4x4,bw=100GB/s,lat=1us,wrap=0", "test");
  CHECK(*describe(m44).bisection_Bps == 4 * 100e9);
  CHECK(rank_halves_max_flow_Bps(m44) == 4 * 100e9);
  const Topology t84 = make_topology("torus:dims=8x4,bw=100GB/s,lat=1us", "test");
  CHECK(*describe(t84).bisection_Bps == 8 * 100e9);  // across the 8: 32/8 x 2
  CHECK(rank_halves_max_flow_Bps(t84) == 8 * 100e9);
  // 4x8: the rank halves cut the short dimension (16 links); the bisection cuts the long one.
  const Topology t48 = make_topology("torus:dims=4x8,bw=100GB/s,lat=1us", "test");
  CHECK(*describe(t48).bisection_Bps == 8 * 100e9);
  CHECK(rank_halves_max_flow_Bps(t48) == 16 * 100e9);
  std::vector<NodeId> left, right;
  for (std::size_t r = 0; r < 32; ++r) (r % 8 < 4 ? left : right).push_back(t48.device(r));
  CHECK(max_flow_Bps(t48, left, right) == 8 * 100e9);

  const Topology ft = make_topology("fat_tree:hosts=16,hosts_per_leaf=4,bw=100Gb/s,uplink_bw=100Gb/s,spines=2,lat=1us", "test");
  CHECK(*describe(ft).bisection_Bps == 2 * std::min(4 * 12.5e9, 2 * 12.5e9));  // (4/2) leaves x uplinks
  CHECK(rank_halves_max_flow_Bps(ft) == 50e9);
  const Topology full = make_topology("fat_tree:hosts=16,hosts_per_leaf=4,bw=100Gb/s,uplink_bw=400Gb/s,spines=1,lat=1us", "test");
  CHECK(*describe(full).bisection_Bps == 8 * 12.5e9);  // non-blocking: the host links bound it
  CHECK(rank_halves_max_flow_Bps(full) == 8 * 12.5e9);

  const Topology rail = make_topology("rail_optimized:nodes=2,gpus_per_node=4,nvlink_bw=450GB/s,nvlink_lat=0.25us,nic_bw=400Gb/s,ib_lat=1us,spines=2", "test");
  CHECK(*describe(rail).bisection_Bps == 4 * 50e9);
  CHECK(rank_halves_max_flow_Bps(rail) == 4 * 50e9);
  CHECK(*describe(make_topology("bus:n=4,bw=50MB/s,lat=10us", "test")).bisection_Bps == 50e6);
  CHECK(rank_halves_max_flow_Bps(make_topology("bus:n=4,bw=50MB/s,lat=10us", "test")) == 50e6);
  CHECK(*describe(make_topology("switch:n=5,bw=1GB/s,lat=1us", "test")).bisection_Bps == 2e9);

  const Topology h = make_topology(
      R"({"builder":"hierarchical","nodes":2,"intra":"nvswitch_node:n=4,bw=100GB/s,lat=1us","inter":"switch:n=8,bw=10GB/s,lat=1us"})", "test");
  const auto hs = describe(h);
  CHECK(*hs.bisection_Bps == 4 * 10e9);
  CHECK(hs.bisection_method == "max-flow between the two halves of the rank order");
}

TEST_CASE("diameter: closed form on tori, breadth-first search elsewhere") {
  CHECK(*describe(make_topology("torus:dims=4x4,bw=1GB/s,lat=1us", "test")).diameter_hops == 4);
  CHECK(*describe(make_topology("torus:dims=4x4,bw=1GB/s,lat=1us,wrap=0", "test")).diameter_hops == 6);
  const Topology t = make_topology("torus:dims=4x5,bw=1GB/s,lat=1us", "test");
  int bfs = 0;
  for (NodeId a : t.devices()) {
    for (int d : hop_distances(t, a)) bfs = std::max(bfs, d);
  }
  CHECK(*describe(t).diameter_hops == bfs);  // 2 + 2
  CHECK(bfs == 4);
  CHECK(*describe(make_topology("switch:n=4,bw=1GB/s,lat=1us", "test")).diameter_hops == 2);
  CHECK(*describe(make_topology("bus:n=4,bw=1GB/s,lat=1us", "test")).diameter_hops == 3);
  const auto ft = describe(make_topology("fat_tree:hosts=8,hosts_per_leaf=4,bw=1GB/s,uplink_bw=1GB/s,lat=1us", "test"));
  CHECK(*ft.diameter_hops == 4);
  CHECK(ft.diameter_method == "breadth-first search from every device");
}

TEST_CASE("summary counts, JSON and Graphviz export") {
  const auto s = describe(make_topology("tpu-v3-1024", "test"));
  CHECK(s.devices == 1024);
  CHECK(s.switches == 0);
  CHECK(s.directed_links == 4096);
  REQUIRE(s.classes.size() == 1);
  CHECK(s.classes[0].cls == LinkClass::ici);
  CHECK(s.classes[0].bandwidths_Bps == std::vector<double>{100e9});
  const Topology r = make_topology("dgx-h100-16", "test");
  const auto j = to_json(describe(r), r);
  CHECK(j.at("devices") == 16);
  CHECK(j.at("switches") == 2 + 8 + 8);  // NVSwitches, rail leaves, spines
  CHECK(j.at("links_by_class").size() == 2);
  CHECK(j.at("links_by_class")[0].at("class") == "nvlink");
  // Leaf uplinks: 2 nodes x 50 GB/s / 8 spines = 12.5 GB/s; NICs 400 Gb/s = 50 GB/s.
  CHECK(j.at("links_by_class")[1].at("bandwidths_Bps") == std::vector<double>{12.5e9, 50e9});
  CHECK(j.at("config").at("preset") == "dgx-h100-16");
  CHECK(to_dot(make_topology("switch:n=2,bw=1GB/s,lat=1us", "test")) ==
        "digraph \"switch:n=2,bw=1GB/s,lat=1us\" {\n"
        "  n0 [label=\"d0\", shape=box];\n"
        "  n1 [label=\"d1\", shape=box];\n"
        "  n2 [label=\"switch\", shape=ellipse];\n"
        "  n0 -> n2 [label=\"1 GB/s ethernet\", dir=both];\n"
        "  n1 -> n2 [label=\"1 GB/s ethernet\", dir=both];\n"
        "}\n");
}

}  // TEST_SUITE
}  // namespace shardsim::topo
