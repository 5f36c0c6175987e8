// Builders: node and link counts, routes (torus dimension order, fat-tree up/down, rail
// PXN), ring orders and route validity on every builder.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <set>

#include "test_helpers.hpp"
#include "topologies/torus.hpp"

namespace shardsim::topo {
using test::route_is_valid;
using test::route_nodes;
using Nodes = std::vector<NodeId>;

TEST_SUITE("test_topologies") {

TEST_CASE("a copy of a topology routes on its own cache (the source may be gone)") {
  std::optional<Topology> source = make_topology("torus:dims=4x4,bw=100GB/s,lat=1us", "test");
  const auto before = source->route(source->device(0), source->device(10)).links;  // fills the cache
  const Topology copy = *source;
  CHECK(copy.generation() == source->generation());  // same links, same routing
  source.reset();  // the copy must not read the source's cache (ASan: heap-use-after-free)
  CHECK(copy.route(copy.device(0), copy.device(10)).links == before);
  Topology changed = copy;
  changed.set_link_latency(0, 2e-6);
  CHECK(changed.generation() != copy.generation());
  CHECK(changed.link(0).latency_s == 2e-6);
  CHECK_THROWS_WITH_AS(changed.set_link_latency(0, -1.0), "link chip[0,0]->chip[1,0]: latency -1 s; expected a latency of zero or more",
                       ConfigError);
}

TEST_CASE("structure setters refuse hints that do not fit the graph (issue 12: accessors, not fields)") {
  Topology t = make_topology("switch:n=4,bw=10GB/s,lat=1us", "test");
  REQUIRE(t.num_devices() == 4);
  t.set_device_groups({{0, 1}, {2, 3}});
  CHECK(t.device_groups() == std::vector<std::vector<int>>{{0, 1}, {2, 3}});
  CHECK_THROWS_WITH_AS(t.set_device_groups({{0, 1}, {2, 4}}),
                       doctest::Contains("device group 1 names rank 4; expected ranks 0..3"), ConfigError);
  CHECK_THROWS_WITH_AS(t.set_device_groups({{0, 1}, {1, 2}}), doctest::Contains("rank 1 in two device groups"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(t.set_device_groups({{0}, {}}), doctest::Contains("device group 1 is empty"), ConfigError);
  CHECK(t.device_groups() == std::vector<std::vector<int>>{{0, 1}, {2, 3}});  // a refused set changes nothing
  t.set_ring_order({0, 2, 3, 1});
  CHECK(t.ring_order() == std::vector<int>{0, 2, 3, 1});
  CHECK_THROWS_WITH_AS(t.set_ring_order({0, 2, 2, 1}), doctest::Contains("a permutation of every rank"), ConfigError);
  CHECK_THROWS_WITH_AS(t.set_ring_order({0, 1, 2}), doctest::Contains("a ring order of 3 ranks over 4 devices"),
                       ConfigError);
  t.set_torus({2, 2}, {false, false});
  CHECK(t.torus_dims() == std::vector<int>{2, 2});
  CHECK_THROWS_WITH_AS(t.set_torus({2, 3}, {true, true}),
                       doctest::Contains("torus dimensions of product 6 over 4 devices"), ConfigError);
  CHECK_THROWS_WITH_AS(t.set_torus({4}, {true, false}), doctest::Contains("1 torus dimensions with 2 wraparound flags"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(t.set_rank_devices({{"h100", "x"}}), doctest::Contains("1 per-rank device kinds over 4 devices"),
                       ConfigError);
  t.set_rank_devices({{"h100", "a"}, {"", "b"}, {"a100", "c"}, {"", "d"}});
  t.set_device_model("b200");
  CHECK(t.device_model_of(0) == "h100");
  CHECK(t.device_model_of(1) == "b200");
  CHECK(t.device_model_of(2) == "a100");
  t.set_config_entry("preset", "mine");
  CHECK(t.config().at("preset") == "mine");
}

TEST_CASE("torus 4x4 with wraparound: counts, coordinates and shortest-direction DOR routes") {
  const Topology t = make_topology("torus:dims=4x4,bw=100GB/s,lat=1us", "test");
  CHECK(t.num_devices() == 16);
  CHECK(t.num_nodes() == 16);
  CHECK(t.num_links() == 64);  // 16 chips x 2 dimensions x 2 directions
  CHECK(t.torus_dims() == std::vector<int>{4, 4});
  CHECK(t.torus_wrap() == std::vector<bool>{true, true});
  CHECK(t.node(t.device(6)).coords == std::vector<int>{1, 2});  // 6 = 1*4 + 2
  CHECK(t.node(t.device(6)).name == "chip[1,2]");
  CHECK(route_nodes(t, 0, 3) == Nodes{0, 3});               // -1 over the wraparound
  CHECK(route_nodes(t, 0, 2) == Nodes{0, 1, 2});            // tie (2 = 4/2) goes positive
  CHECK(route_nodes(t, 0, 15) == Nodes{0, 12, 15});         // dimension 0 first, both -1
  CHECK(route_nodes(t, 0, 10) == Nodes{0, 4, 8, 9, 10});    // ties: +2 then +2
  CHECK(t.rank_route(0, 2).latency_s == doctest::Approx(2e-6).scale(0));
  CHECK(t.rank_route(0, 2).bottleneck_Bps == 100e9);
  CHECK(t.injection_Bps(t.device(0)) == 400e9);  // 4 links of 100 GB/s
  CHECK(t.config() == nlohmann::json{{"builder", "torus"}, {"dims", {4, 4}}, {"bw", "100GB/s"}, {"lat", "1us"},
                                   {"wrap", {true, true}}, {"class", "ici"}});
}

TEST_CASE("torus without wraparound routes through the mesh; wrap per dimension") {
  const Topology mesh = make_topology("torus:dims=4x4,bw=100GB/s,lat=1us,wrap=0", "test");
  CHECK(mesh.num_links() == 48);  // 2 x (4 rows x 3 + 4 columns x 3)
  CHECK(route_nodes(mesh, 0, 3) == Nodes{0, 1, 2, 3});
  CHECK(route_nodes(mesh, 15, 0) == Nodes{15, 11, 7, 3, 2, 1, 0});
  const Topology half = make_topology("torus:dims=4x4,bw=100GB/s,lat=1us,wrap=1x0", "test");
  CHECK(half.num_links() == 56);  // 2 x (16 in dimension 0 with wrap + 12 in dimension 1)
  CHECK(half.torus_wrap() == std::vector<bool>{true, false});
  CHECK(route_nodes(half, 0, 12) == Nodes{0, 12});
  CHECK(route_nodes(half, 0, 3) == Nodes{0, 1, 2, 3});
}

TEST_CASE("torus dimensions of 2 get one link; 8x8 DOR to the far corner") {
  const Topology t = make_topology("torus:dims=2x2x2,bw=1GB/s,lat=1us", "test");
  CHECK(t.num_links() == 24);  // 3 dimensions x 4 pairs x 2 directions
  CHECK(t.torus_wrap() == std::vector<bool>{false, false, false});
  const Topology e = make_topology("torus:dims=8x8,bw=100GB/s,lat=1us", "test");
  CHECK(route_nodes(e, 0, 36) == Nodes{0, 8, 16, 24, 32, 33, 34, 35, 36});
}

TEST_CASE("torus 128x128 builds with lazily computed routes") {
  const Topology t = make_topology("torus:dims=128x128,bw=100GB/s,lat=1us", "test");
  CHECK(t.num_devices() == 16384);
  CHECK(t.num_links() == 65536);
  CHECK(t.rank_route(0, 64 * 128 + 64).links.size() == 128);  // 64 + 64 hops
  CHECK(route_is_valid(t, 5, 16383));
}

TEST_CASE("torus ring order: the boustrophedon snake") {
  CHECK(torus_ring_order({4, 4}, {false, false}) ==
        std::vector<int>{0, 1, 2, 3, 7, 6, 5, 9, 10, 11, 15, 14, 13, 12, 8, 4});
  const Topology t = make_topology("torus:dims=4x4,bw=1GB/s,lat=1us", "test");
  CHECK(t.ring_order() == torus_ring_order({4, 4}, {true, true}));
  // Consecutive ranks (and the closing pair) are one link apart on meshes with a cycle.
  for (const char* dims : {"4x4", "3x4", "4x3", "2x4x4", "2x3x3", "3x3x2", "4x1x4", "6x6"}) {
    CAPTURE(dims);
    const Topology m = make_topology(std::string("torus:dims=") + dims + ",bw=1GB/s,lat=1us,wrap=0", "test");
    const auto& ring = m.ring_order();
    REQUIRE(ring.size() == m.num_devices());
    CHECK(std::set<int>(ring.begin(), ring.end()).size() == ring.size());
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const auto a = static_cast<std::size_t>(ring[i]);
      const auto b = static_cast<std::size_t>(ring[(i + 1) % ring.size()]);
      CHECK(m.rank_route(a, b).links.size() == 1);
    }
  }
  // One wrapped dimension: the identity ring closes over the wraparound.
  const Topology w = make_topology("torus:dims=1x8,bw=1GB/s,lat=1us", "test");
  CHECK(w.ring_order() == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(w.rank_route(7, 0).links.size() == 1);
  // Odd mesh: no Hamiltonian cycle; the snake path still steps one link at a time.
  CHECK(torus_ring_order({3, 3}, {false, false}) == std::vector<int>{0, 1, 2, 5, 4, 3, 6, 7, 8});
  // The ring restricted to the first k ranks of row 0 is that row.
  const auto r8 = torus_ring_order({8, 8}, {true, true});
  std::vector<int> first;
  std::copy_if(r8.begin(), r8.end(), std::back_inserter(first), [](int r) { return r < 5; });
  CHECK(first == std::vector<int>{0, 1, 2, 3, 4});
}

TEST_CASE("nvswitch_node, switch and bus") {
  const Topology nv = make_topology("nvswitch_node:n=8,bw=450GB/s,lat=0.25us,nvls=1", "test");
  CHECK(nv.num_nodes() == 9);
  CHECK(nv.num_links() == 16);
  CHECK(nv.node(8).in_network_reduction);
  CHECK(route_nodes(nv, 0, 5) == Nodes{0, 8, 5});
  CHECK(nv.rank_route(0, 5).latency_s == doctest::Approx(0.5e-6).scale(0));
  CHECK(nv.link(0).cls == LinkClass::nvlink);
  CHECK(nv.injection_Bps(nv.device(3)) == 450e9);

  const Topology sw = make_topology("switch:n=4,bw=450GB/s,lat=1us", "test");
  CHECK(sw.num_nodes() == 5);
  CHECK(sw.num_links() == 8);
  CHECK(sw.node(4).name == "switch");
  CHECK(sw.link(0).cls == LinkClass::ethernet);
  CHECK(make_topology("switch:n=4,bw=1GB/s,lat=1us,class=ib", "test").link(0).cls == LinkClass::ib);

  const Topology bus = make_topology("bus:n=4,bw=50MB/s,lat=10us", "test");
  CHECK(bus.num_nodes() == 6);
  CHECK(bus.num_links() == 9);  // the medium + 4 up + 4 down
  CHECK(bus.injection_Bps(bus.device(0)) == 50e6);
  for (std::size_t a = 0; a < 4; ++a) {
    for (std::size_t b = 0; b < 4; ++b) {
      if (a == b) continue;
      const Route& r = bus.rank_route(a, b);
      REQUIRE(r.links.size() == 3);
      CHECK(r.links[1] == 0);  // every flow crosses the one medium link
      CHECK(r.latency_s == doctest::Approx(10e-6).scale(0));
    }
  }
}

TEST_CASE("fat_tree: up/down routes with deterministic ECMP over spines") {
  const std::string spec = "fat_tree:hosts=16,hosts_per_leaf=4,bw=100Gb/s,uplink_bw=100Gb/s,spines=2,lat=1us";
  const Topology t = make_topology(spec, "test");
  CHECK(t.num_nodes() == 22);   // 16 hosts + 4 leaves + 2 spines
  CHECK(t.num_links() == 48);   // 2 x (16 host links + 4 leaves x 2 spines)
  CHECK(route_nodes(t, 0, 1) == Nodes{0, 16, 1});
  std::set<NodeId> spines;
  const Topology again = make_topology(spec, "test");
  for (std::size_t a = 0; a < 4; ++a) {
    for (std::size_t b = 4; b < 8; ++b) {
      const auto n = route_nodes(t, a, b);
      REQUIRE(n.size() == 5);
      CHECK(n[1] == 16);
      CHECK(n[3] == 17);
      CHECK((n[2] == 20 || n[2] == 21));
      CHECK(route_nodes(again, a, b) == n);
      spines.insert(n[2]);
    }
  }
  CHECK(spines.size() == 2);  // the hash spreads the 16 pairs over both spines
  const Topology one = make_topology("fat_tree:hosts=4,hosts_per_leaf=4,bw=1GB/s,uplink_bw=1GB/s,lat=1us", "test");
  CHECK(one.num_nodes() == 5);  // one leaf needs no spine
  CHECK(one.num_links() == 8);
}

TEST_CASE("rail_optimized: NVSwitch inside a node, the rail leaf across nodes, PXN across rails") {
  const std::string base = "rail_optimized:nodes=2,gpus_per_node=4,nvlink_bw=450GB/s,nvlink_lat=0.25us,nic_bw=400Gb/s,ib_lat=1us,spines=2";
  const Topology t = make_topology(base, "test");
  // GPUs 0-7, NVSwitches 8-9, rails 10-13, spines 14-15.
  CHECK(t.num_nodes() == 16);
  CHECK(t.num_links() == 48);  // 2 x (8 NVLink + 8 NIC + 4 rails x 2 spines)
  CHECK(t.device_groups() == std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(route_nodes(t, 0, 1) == Nodes{0, 8, 1});
  CHECK(route_nodes(t, 1, 5) == Nodes{1, 11, 5});
  CHECK(route_nodes(t, 0, 6) == Nodes{0, 8, 2, 12, 6});  // PXN: NVLink to GPU 2, then rail 2
  CHECK(t.rank_route(1, 5).bottleneck_Bps == 50e9);
  // Leaf uplinks: nodes x nic_bw / (oversubscription x spines) = 2 x 50 GB/s / 2.
  CHECK(t.link(t.out_links(10).back()).bandwidth_Bps == 50e9);
  const Topology s = make_topology(base + ",cross_rail=spine", "test");
  const auto n = route_nodes(s, 0, 6);
  REQUIRE(n.size() == 5);
  CHECK(n[1] == 10);
  CHECK((n[2] == 14 || n[2] == 15));
  CHECK(n[3] == 12);
}

TEST_CASE("hierarchical: intra routes inside a node, inter routes across") {
  const nlohmann::json j = {{"builder", "hierarchical"},
                            {"nodes", 2},
                            {"intra", {{"builder", "nvswitch_node"}, {"n", 4}, {"bw", "450GB/s"}, {"lat", "0.25us"}}},
                            {"inter", "switch:n=8,bw=50GB/s,lat=1us"}};
  const Topology t = topology_from_json(j, "h.json");
  CHECK(t.num_devices() == 8);
  CHECK(t.num_nodes() == 11);  // 2 x (4 GPUs + NVSwitch) + the inter switch
  CHECK(t.num_links() == 32);
  CHECK(t.node(t.device(4)).name == "node1/gpu0");
  CHECK(t.node(t.device(4)).group == std::vector<std::string>{"node1"});
  CHECK(route_nodes(t, 0, 1) == Nodes{0, 4, 1});
  CHECK(t.link(t.rank_route(0, 1).links[0]).cls == LinkClass::nvlink);
  CHECK(route_nodes(t, 0, 5) == Nodes{0, 10, 6});
  CHECK(t.link(t.rank_route(0, 5).links[0]).cls == LinkClass::ethernet);
  CHECK(t.device_groups() == std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(t.config().at("inter").at("builder") == "switch");
}

TEST_CASE("custom: explicit nodes and links, shortest paths") {
  nlohmann::json j = {{"builder", "custom"}, {"nodes", nlohmann::json::array()}, {"links", nlohmann::json::array()}};
  for (int i = 0; i < 4; ++i) j["nodes"].push_back({{"name", "a" + std::to_string(i)}, {"group", "pod0/n" + std::to_string(i / 2)}});
  j["nodes"].push_back({{"name", "sw"}, {"kind", "switch"}});
  for (int i = 0; i < 4; ++i) j["links"].push_back({{"src", "a" + std::to_string(i)}, {"dst", "sw"}, {"bw", "10GB/s"}, {"lat", "1us"}});
  const Topology t = topology_from_json(j, "c.json");
  CHECK(t.num_devices() == 4);
  CHECK(t.num_links() == 8);
  CHECK(t.node(t.device(3)).group == std::vector<std::string>{"pod0", "n1"});
  CHECK(route_nodes(t, 0, 2) == Nodes{0, 4, 2});
  CHECK(t.link(0).cls == LinkClass::ethernet);

  // A ring of devices needs devices that forward.
  nlohmann::json ring = {{"builder", "custom"}, {"devices_forward", true}, {"nodes", nlohmann::json::array()}, {"links", nlohmann::json::array()}};
  for (int i = 0; i < 4; ++i) ring["nodes"].push_back({{"name", "a" + std::to_string(i)}});
  for (int i = 0; i < 4; ++i) {
    ring["links"].push_back({{"src", "a" + std::to_string(i)}, {"dst", "a" + std::to_string((i + 1) % 4)}, {"bw", "1GB/s"}, {"lat", "1us"}, {"class", "pcie"}});
  }
  const Topology r = topology_from_json(ring, "r.json");
  CHECK(route_nodes(r, 0, 2) == Nodes{0, 1, 2});  // tie: lowest link id first
  CHECK(route_nodes(r, 0, 3) == Nodes{0, 3});
}

TEST_CASE("every builder's routes are valid directed paths") {
  const nlohmann::json hier = {{"builder", "hierarchical"}, {"nodes", 3}, {"intra", "torus:dims=2x2,bw=1GB/s,lat=1us"},
                               {"inter", "fat_tree:hosts=12,hosts_per_leaf=4,bw=1GB/s,uplink_bw=1GB/s,spines=2,lat=1us"}};
  for (const std::string& spec : std::vector<std::string>{"torus:dims=4x4,bw=1GB/s,lat=1us", "torus:dims=3x5,bw=1GB/s,lat=1us,wrap=0", "torus:dims=2x3x4,bw=1GB/s,lat=1us,wrap=1x0x1",
        "nvswitch_node:n=8,bw=1GB/s,lat=1us", "switch:n=5,bw=1GB/s,lat=1us", "bus:n=4,bw=1GB/s,lat=1us",
        "fat_tree:hosts=24,hosts_per_leaf=6,bw=1GB/s,uplink_bw=2GB/s,spines=3,lat=1us",
        "rail_optimized:nodes=3,gpus_per_node=4,nvlink_bw=2GB/s,nvlink_lat=1us,nic_bw=1GB/s,ib_lat=1us,spines=2",
        "rail_optimized:nodes=3,gpus_per_node=4,nvlink_bw=2GB/s,nvlink_lat=1us,nic_bw=1GB/s,ib_lat=1us,cross_rail=spine",
        hier.dump(), "dgx-h100-16", "tpu-v4-64"}) {
    CAPTURE(spec);
    const Topology t = make_topology(spec, "test");
    for (std::size_t a = 0; a < t.num_devices(); ++a) {
      for (std::size_t b = 0; b < t.num_devices(); ++b) CHECK(route_is_valid(t, a, b));
    }
  }
}

}  // TEST_SUITE
}  // namespace shardsim::topo
