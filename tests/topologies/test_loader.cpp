// make_topology / topology_from_json: inputs and every validation message, exactly.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>

#include "test_helpers.hpp"
#include "topologies/registry.hpp"

namespace shardsim::topo {
using test::error_of;
using test::json_error_of;

namespace {
const std::string kBuilders = "torus, nvswitch_node, switch, bus, fat_tree, rail_optimized, hierarchical, custom";

nlohmann::json custom_8() {
  nlohmann::json j = {{"builder", "custom"}, {"nodes", nlohmann::json::array()}, {"links", nlohmann::json::array()}};
  for (int i = 0; i < 7; ++i) j["nodes"].push_back({{"name", "gpu" + std::to_string(i)}});
  j["nodes"].push_back({{"name", "sw"}, {"kind", "switch"}});
  for (int i = 0; i < 7; ++i) j["links"].push_back({{"src", "gpu" + std::to_string(i)}, {"dst", "sw"}, {"bw", "10GB/s"}, {"lat", "1us"}});
  return j;
}
}  // namespace

TEST_SUITE("test_topologies") {

TEST_CASE("the same topology from an inline spec, inline JSON and a JSON file") {
  const Topology a = make_topology("torus:dims=32x32,bw=100GB/s,lat=1us", "test");
  const Topology b = make_topology(R"({"builder":"torus","dims":[32,32],"bw":"100GB/s","lat":"1us"})", "test");
  const std::string path = std::string(SHARDSIM_BINARY_DIR) + "/test_topologies_torus.json";
  {
    std::ofstream f(path);
    f << R"({"builder": "torus", "name": "my-torus", "dims": "32x32", "bw": "100GB/s", "lat": "1us", "wrap": [1, 1]})";
  }
  const Topology c = make_topology(path, "test");
  std::remove(path.c_str());
  CHECK(a.num_links() == 4096);
  CHECK(a.config() == b.config());
  CHECK(c.config().at("dims") == a.config().at("dims"));
  CHECK(c.config().at("wrap") == a.config().at("wrap"));
  CHECK(a.name() == "torus:dims=32x32,bw=100GB/s,lat=1us");
  CHECK(c.name() == "my-torus");
  CHECK(b.num_links() == c.num_links());
}

TEST_CASE("inline spec errors") {
  CHECK(error_of("torus:dims=4x4,bw=1GB/s,lat=1us,bw2=3") ==
        "torus:dims=4x4,bw=1GB/s,lat=1us,bw2=3: /bw2: unknown key 'bw2' for builder 'torus'; expected one of dims, bw, lat, wrap, class");
  CHECK(error_of("torus:dims=4x4,bw=1GB/s") ==
        "torus:dims=4x4,bw=1GB/s: /lat: missing key 'lat' for builder 'torus'; expected latency of each link (time, s)");
  CHECK(error_of("switch:n=4,bw=0GB/s,lat=1us") ==
        "switch:n=4,bw=0GB/s,lat=1us: /bw: non-positive rate '0GB/s'; expected a rate greater than zero");
  CHECK(error_of("switch:n=4,bw=-5GB/s,lat=1us") ==
        "switch:n=4,bw=-5GB/s,lat=1us: /bw: non-positive rate '-5GB/s'; expected a rate greater than zero");
  CHECK(error_of("switch:n=0,bw=1GB/s,lat=1us") == "switch:n=0,bw=1GB/s,lat=1us: /n: n = 0; expected at least 1");
  // Counts are capped as the torus's devices are (this one built for minutes, then ran out of memory).
  CHECK(error_of("switch:n=100000000,bw=1GB/s,lat=1us") ==
        "switch:n=100000000,bw=1GB/s,lat=1us: /n: n = 100000000; expected at most 4194304");
  CHECK(error_of("rail_optimized:nodes=4194304,nvlink_bw=1GB/s,nvlink_lat=1us,nic_bw=1GB/s,ib_lat=1us") ==
        "rail_optimized:nodes=4194304,nvlink_bw=1GB/s,nvlink_lat=1us,nic_bw=1GB/s,ib_lat=1us: /gpus_per_node: "
        "nodes x gpus_per_node (devices) = 33554432; expected at most 4194304");
  CHECK(error_of("fat_tree:hosts=4194304,hosts_per_leaf=2,bw=1GB/s,uplink_bw=1GB/s,spines=4,lat=1us") ==
        "fat_tree:hosts=4194304,hosts_per_leaf=2,bw=1GB/s,uplink_bw=1GB/s,spines=4,lat=1us: /spines: "
        "leaves x spines (links) = 8388608; expected at most 4194304");
  CHECK(error_of("switch:n=four,bw=1GB/s,lat=1us") ==
        "switch:n=four,bw=1GB/s,lat=1us: /n: 'four' is not a whole number; expected number of devices");
  CHECK(error_of("torus:dims=4x0,bw=1GB/s,lat=1us") ==
        "torus:dims=4x0,bw=1GB/s,lat=1us: /dims: dimension '0' in '4x0'; expected dimensions as [32, 32] or \"32x32\", "
        "each a whole number of at least 1");
  CHECK(error_of("torus:dims=4x4x4,bw=1GB/s,lat=1us,wrap=1x0") ==
        "torus:dims=4x4x4,bw=1GB/s,lat=1us,wrap=1x0: /wrap: 2 flags in '1x0'; expected one flag (1 or 0) for all 3 "
        "dimensions or one per dimension, e.g. [1, 0] or \"1x0\"");
  CHECK(error_of("torus:dims=4x4,bw=1GB/s,lat=1us,class=fiber") ==
        "torus:dims=4x4,bw=1GB/s,lat=1us,class=fiber: /class: class = 'fiber'; expected one of ici, nvlink, pcie, ib, ethernet, loopback");
  CHECK(error_of("ring:n=4") == "ring:n=4: unknown builder 'ring'; expected one of " + kBuilders);
  CHECK(error_of("switch:n=4,n=5") == "switch:n=4,n=5: key 'n' given twice; expected each key once");
  CHECK(error_of("switch:n=4,bw") == "switch:n=4,bw: 'bw' is not key=value; expected builder:key=value,key=value,...");
  CHECK(error_of("custom:nodes=3") ==
        "custom:nodes=3: builder 'custom' in an inline spec; expected a JSON file or inline JSON (its key 'nodes' is a JSON list)");
  CHECK(error_of("fat_tree:hosts=10,hosts_per_leaf=4,bw=1GB/s,uplink_bw=1GB/s,lat=1us") ==
        "fat_tree:hosts=10,hosts_per_leaf=4,bw=1GB/s,uplink_bw=1GB/s,lat=1us: /hosts_per_leaf: 10 hosts in leaves of 4; "
        "expected hosts_per_leaf dividing hosts");
  CHECK(error_of("rail_optimized:nodes=2,nvlink_bw=1GB/s,nvlink_lat=1us,nic_bw=1GB/s,ib_lat=1us,cross_rail=any") ==
        "rail_optimized:nodes=2,nvlink_bw=1GB/s,nvlink_lat=1us,nic_bw=1GB/s,ib_lat=1us,cross_rail=any: /cross_rail: "
        "cross_rail = 'any'; expected one of pxn, spine");
}

TEST_CASE("input that is none of preset, file, JSON or spec") {
  CHECK(error_of("", "--topology") ==
        "--topology: an empty topology; expected a preset name, a .json file, inline JSON or builder:key=value,...");
  CHECK(error_of("foo", "--topology") ==
        "--topology: unknown topology 'foo'; expected a preset (aws-p4d-<GPUs>, aws-p4de-<GPUs>, aws-p5-<GPUs>, "
        "azure-nd-gb200-v6-<GPUs>, dgx-a100-<GPUs>, dgx-b200-<GPUs>, dgx-h100-<GPUs>, dgx-h200-<GPUs>, gb200-nvl72, "
        "gcp-a3-mega-<GPUs>, gcp-a3-ultra-<GPUs>, gcp-a4-<GPUs>, gcp-a4x-<GPUs>, gcp-a4x-max-<GPUs>, "
        "jean-zay-a100-<GPUs>, megascale-a100-<GPUs>, meta-h100-roce-<GPUs>, oci-gb200-<GPUs>, oci-gb300-<GPUs>, "
        "selene-<GPUs>, tpu-v2-<chips>, tpu-v3-<chips>, tpu-v4-<chips>, tpu-v5e-<chips>, tpu-v5p-<chips>), a .json file, "
        "inline JSON or builder:key=value,... with builder one of " + kBuilders);
  CHECK(error_of("/nonexistent/t.json", "--topology") ==
        "--topology: cannot open '/nonexistent/t.json'; expected a readable JSON file");
  CHECK(error_of("{\"builder\": ", "--topology").rfind("--topology: invalid JSON (", 0) == 0);
  // fuzz_topology_json: 3000 levels overflowed the stack in nlohmann::json's recursive copy.
  CHECK(error_of("{\"nodes\": " + std::string(3000, '[') + std::string(3000, ']') + "}", "--topology") ==
        "--topology: byte 521: JSON nested more than 512 levels; expected a JSON object describing a topology");
  // fuzz_topology_json: nlohmann reports a number beyond a double as out_of_range, not parse_error.
  CHECK(error_of("{\"n\": 1e999}", "--topology") ==
        "--topology: byte 6: invalid JSON ([json.exception.out_of_range.406] number overflow parsing '1e999'); "
        "expected a JSON object describing a topology");
}

TEST_CASE("JSON errors name the file and the JSON pointer") {
  CHECK(json_error_of({{"n", 4}}) == "topo.json: /builder: missing key 'builder'; expected one of " + kBuilders);
  CHECK(json_error_of({{"builder", "ring"}}) == "topo.json: /builder: unknown builder 'ring'; expected one of " + kBuilders);
  CHECK(json_error_of(nlohmann::json::array()) == "topo.json: /: a JSON array; expected an object with a \"builder\" key");
  CHECK(json_error_of({{"builder", "switch"}, {"n", 4}, {"bw", 100}, {"lat", "1us"}}) ==
        "topo.json: /bw: 100 without a unit; expected a rate with a unit such as \"100GB/s\"");
  CHECK(json_error_of({{"builder", "switch"}, {"n", 4}, {"bw", "1GB/s"}, {"lat", 1e-6}}) ==
        "topo.json: /lat: 1e-06 without a unit; expected a time with a unit such as \"1us\"");
  CHECK(json_error_of({{"builder", "switch"}, {"n", 4}, {"bw", "1GB/s"}, {"lat", "1us"}, {"name", 3}}) ==
        "topo.json: /name: 3 is not a string; expected a string");
  CHECK(json_error_of({{"builder", "torus"}, {"dims", {4, -1}}, {"bw", "1GB/s"}, {"lat", "1us"}}) ==
        "topo.json: /dims: dimension -1 in [4,-1]; expected dimensions as [32, 32] or \"32x32\", each a whole number of at least 1");
  CHECK(json_error_of({{"builder", "torus"}, {"dims", nlohmann::json::array()}, {"bw", "1GB/s"}, {"lat", "1us"}}) ==
        "topo.json: /dims: no dimension; expected dimensions as [32, 32] or \"32x32\", each a whole number of at least 1");
  const nlohmann::json hier = {{"builder", "hierarchical"}, {"nodes", 2}, {"intra", {{"builder", "switch"}, {"n", 4}, {"bw", "1GB/s"}, {"lat", "1us"}, {"bogus", 1}}},
                               {"inter", "switch:n=8,bw=1GB/s,lat=1us"}};
  CHECK(json_error_of(hier) == "topo.json: /intra/bogus: unknown key 'bogus' for builder 'switch'; expected one of n, bw, lat, class");
  nlohmann::json mismatch = hier;
  mismatch["intra"].erase("bogus");
  mismatch["inter"] = "switch:n=6,bw=1GB/s,lat=1us";
  CHECK(json_error_of(mismatch) == "topo.json: /inter: an inter topology of 6 devices; expected nodes x devices per node = 2 x 4 = 8 devices");
}

TEST_CASE("custom graph errors") {
  CHECK(json_error_of(custom_8()).empty());
  auto j = custom_8();
  j["links"][3]["dst"] = "gpu9";
  CHECK(json_error_of(j) == "topo.json: /links/3/dst: unknown node 'gpu9'; expected one of the 8 nodes declared in /nodes");
  j = custom_8();
  j["links"][2]["bw"] = "0GB/s";
  CHECK(json_error_of(j) == "topo.json: /links/2/bw: non-positive rate '0GB/s'; expected a rate greater than zero");
  j = custom_8();
  j["links"][1].erase("lat");
  CHECK(json_error_of(j) == "topo.json: /links/1/lat: missing key 'lat'; expected a time such as \"1us\"");
  j = custom_8();
  j["links"][0]["speed"] = "1GB/s";
  CHECK(json_error_of(j) == "topo.json: /links/0/speed: unknown key 'speed' in a link; expected one of src, dst, bw, lat, class, duplex");
  j = custom_8();
  j["links"][0]["class"] = "fiber";
  CHECK(json_error_of(j) == "topo.json: /links/0/class: unknown link class 'fiber'; expected one of ici, nvlink, pcie, ib, ethernet, loopback");
  j = custom_8();
  j["links"][0]["dst"] = "gpu0";
  CHECK(json_error_of(j) == "topo.json: /links/0/dst: a link from 'gpu0' to itself; expected a node other than src");
  j = custom_8();
  j["nodes"][5]["name"] = "gpu1";
  CHECK(json_error_of(j) == "topo.json: /nodes/5/name: duplicate node 'gpu1'; expected a name not already used by /nodes/1");
  j = custom_8();
  j["nodes"][2]["kind"] = "router";
  CHECK(json_error_of(j) == "topo.json: /nodes/2/kind: kind 'router'; expected device or switch");
  j = custom_8();
  j["links"].erase(6);  // gpu6 loses its only link
  CHECK(json_error_of(j) ==
        "topo.json: /links: a disconnected graph: device 'gpu0' cannot reach device 'gpu6'; expected every device connected to every other");
  j = custom_8();
  j["links"][6]["duplex"] = false;  // gpu6 can send but not receive
  CHECK(json_error_of(j) ==
        "topo.json: /links: no path through switches from device 'gpu0' to device 'gpu6'; expected links that connect every "
        "device pair through switches (or \"devices_forward\": true)");
  j = custom_8();
  j["devices_forward"] = true;
  j["links"][6]["duplex"] = false;
  CHECK(json_error_of(j) ==
        "topo.json: /links: no directed path from device 'gpu0' to device 'gpu6'; expected links that let every device reach "
        "every other (duplex, or a directed cycle)");
}

TEST_CASE("custom graph: a device node may name its own kind (issue 16), kept per rank") {
  auto j = custom_8();
  CHECK(topology_from_json(j, "topo.json").rank_devices().empty());  // uniform: no per-rank vector
  // A switch first: node index and rank differ, and the location names the node.
  nlohmann::json k = {{"builder", "custom"},
                      {"device_model", "h100"},
                      {"nodes", {{{"name", "sw"}, {"kind", "switch"}}, {{"name", "g0"}}, {{"name", "g1"}, {"device", "a100"}}}},
                      {"links", {{{"src", "g0"}, {"dst", "sw"}, {"bw", "10GB/s"}, {"lat", "1us"}},
                                 {{"src", "g1"}, {"dst", "sw"}, {"bw", "10GB/s"}, {"lat", "1us"}}}}};
  const Topology t = topology_from_json(k, "topo.json");
  REQUIRE(t.rank_devices().size() == 2);
  CHECK(t.rank_devices()[0].model.empty());
  CHECK(t.rank_devices()[1].model == "a100");
  CHECK(t.rank_devices()[1].where == "topo.json: /nodes/2/device");
  CHECK(t.device_model_of(0) == "h100");
  CHECK(t.device_model_of(1) == "a100");
  // Hierarchical copies carry the intra topology's kinds, copy after copy.
  const nlohmann::json h = {{"builder", "hierarchical"}, {"nodes", 3}, {"intra", k}, {"inter", "switch:n=6,bw=1GB/s,lat=1us"}};
  const Topology ht = topology_from_json(h, "topo.json");
  REQUIRE(ht.rank_devices().size() == 6);
  CHECK(ht.device_model_of(4) == "h100");
  CHECK(ht.device_model_of(5) == "a100");
  CHECK(ht.rank_devices()[5].where == "topo.json: /intra/nodes/2/device");
  // Errors name the node's key.
  k["nodes"][0]["device"] = "h100";
  CHECK(json_error_of(k) == "topo.json: /nodes/0/device: a device kind on switch 'sw'; expected \"device\" on device nodes only");
  k["nodes"][0].erase("device");
  k["nodes"][1]["device"] = 3;
  CHECK(json_error_of(k) == "topo.json: /nodes/1/device: 3 is not a string; expected a device name (shardsim list devices)");
  k["nodes"][1]["device"] = "";
  CHECK(json_error_of(k) == "topo.json: /nodes/1/device: an empty name; expected a device name (shardsim list devices)");
  k["nodes"][1].erase("device");
  k["nodes"][1]["devices"] = "h100";
  CHECK(json_error_of(k) == "topo.json: /nodes/1/devices: unknown key 'devices' in a node; expected one of name, kind, group, "
                            "coords, in_network_reduction, device");
}

TEST_CASE("the builder table drives the schema") {
  CHECK(builder_names() == kBuilders);
  for (const auto& b : builders()) {
    CAPTURE(b.name);
    CHECK(!b.description.empty());
    for (const auto& p : b.params) CHECK(!p.doc.empty());
  }
  const auto* torus = find_builder("torus");
  REQUIRE(torus != nullptr);
  CHECK(torus->params.size() == 5);
  CHECK(*torus->params[3].default_text == "1");
  CHECK(find_builder("ring") == nullptr);
}

}  // TEST_SUITE
}  // namespace shardsim::topo
