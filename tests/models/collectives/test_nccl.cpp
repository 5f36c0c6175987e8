// The NCCL backend (models/collectives/nccl_tuning.hpp, nccl_model.hpp): NCCL's latency and
// bandwidth formulas worked by hand from tuning.cc's constants, NIC striping (every NIC of a
// node carries channels), NCCL's selection rule and its NCCL_ALGO restriction.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "models/collectives/flow_eval.hpp"
#include "models/collectives/nccl_model.hpp"
#include "models/collectives/nccl_tuning.hpp"
#include "plan_check.hpp"
#include "sim/error.hpp"
#include "topologies/load.hpp"

using namespace shardsim;
using namespace shardsim::coll;

namespace {

CollectiveOp op_of(OpKind k, std::size_t n, std::uint64_t bytes) {
  CollectiveOp op;
  op.kind = k;
  op.size_bytes = bytes;
  for (std::size_t i = 0; i < n; ++i) op.group.push_back(static_cast<int>(i));
  return op;
}

constexpr double kIbEff = 4096.0 / (4096.0 + 26.0);

// Time of `a`'s schedule for `op` on `t` at flow fidelity, default options.
double flow_time(const topo::Topology& t, const CollectiveOp& op, const Algorithm& a, const FlowOptions& o = {}) {
  return evaluate_flow(t, op, a.build(t, op, {}), o).time_s;
}

// Flow time with links at NCCL's per-class efficiencies (FlowOptions::link_efficiency).
double flow_time_at_nccl_rates(const topo::Topology& t, const CollectiveOp& op, const Algorithm& a) {
  FlowOptions eff;
  eff.link_efficiency = true;
  return flow_time(t, op, a, eff);
}

// Two 8-GPU nodes with NVLink far faster than the NICs, so the ring is NIC-bound.
std::string fast_nvlink_2x8() {
  return R"({"builder":"rail_optimized","nodes":2,"gpus_per_node":8,"nvlink_bw":"4000GB/s","nvlink_lat":"0.25us",)"
         R"("nic_bw":"400Gb/s","ib_lat":"1us","spines":8,"device_model":"h100"})";
}

}  // namespace

TEST_CASE("NCCL system of a DGX H100 pair: NVLink at NCCL's 20.6 GB/s x 18 links, NICs of every GPU") {
  const auto t = topo::make_topology("dgx-h100-16", "t");
  const auto s = nccl_system(t, op_of(OpKind::allreduce, 16, 1 << 20));
  CHECK(s.arch == nccl::Arch::hopper);
  CHECK(s.nodes == 2);
  CHECK(s.local_ranks == 8);
  const double nvl = 450.0 * 20.6 / 25.0;  // = 18 x 20.6 = 370.8 GB/s (topo.h SM90_NVLINK_BW)
  CHECK(nvl == doctest::Approx(18 * 20.6).scale(0));
  CHECK(s.ring_GBps == doctest::Approx(std::min(nvl, 8 * 50.0 * kIbEff)).scale(0));
  // A 2-node tree may run its intra-node part at up to twice the network's rate.
  CHECK(s.tree_intra_GBps == doctest::Approx(std::min(nvl, 2 * 8 * 50.0 * kIbEff)).scale(0));
  CHECK(s.nvls);
  CHECK(s.nvls_channels == 16);
  CHECK(s.nvls_intra_GBps == doctest::Approx(20.6).scale(0));
  CHECK(s.nvls_inter_GBps == doctest::Approx(8 * 50.0 * kIbEff / 16).scale(0));
  CHECK_FALSE(s.collnet);
}

TEST_CASE("NIC striping: a NIC-bound ring runs at the node's NIC sum, not one NIC") {
  const auto t = topo::make_topology(fast_nvlink_2x8(), "t");
  const auto s = nccl_system(t, op_of(OpKind::allreduce, 16, 1 << 30));
  CHECK(s.ring_GBps == doctest::Approx(8 * 50.0 * kIbEff).scale(0));
  // 2 nodes x 1 GPU: that GPU's one NIC.
  CollectiveOp two;
  two.kind = OpKind::allreduce;
  two.size_bytes = 1 << 30;
  two.group = {0, 8};
  const auto s2 = nccl_system(t, two);
  CHECK(s2.nodes == 2);
  CHECK(s2.local_ranks == 1);
  CHECK(s2.ring_GBps == doctest::Approx(50.0 * kIbEff).scale(0));
  // Ring/Simple across 2 nodes of 8: algbw = busBw x n / (2(n-1)); a large buffer's time is
  // S / algbw plus the latency (x 1.4 plateau).
  const std::uint64_t S = 8ull << 30;
  const auto ring_only = nccl_algo_mask("Ring", "t");
  NcclOptions o;
  o.allowed = ring_only;
  const auto p = nccl_predict(t, op_of(OpKind::allreduce, 16, S), o);
  CHECK(p.name == "Ring/Simple");
  const double algbw = 8 * 50.0 * kIbEff * 16 / 30.0;
  // Latency: baseLat 8.4 + 28 intra steps x max(hwLat NVLink ring Simple 3.4, 3 x 1 us net
  // overhead) + 2 inter steps x hwLat NET ring Simple 14; x 1.4.
  const double lat_us = (8.4 + 28 * 3.4 + 2 * 14.0) * 1.4;
  CHECK(p.time_s == doctest::Approx((lat_us + static_cast<double>(S) / (1000 * algbw)) * 1e-6).epsilon(1e-9).scale(0));
}

TEST_CASE("small messages: NCCL's Tree/LL latency on 2 x 8 GPUs, worked from tuning.cc") {
  const auto t = topo::make_topology("dgx-h100-16", "t");
  const auto p = nccl_predict(t, op_of(OpKind::allreduce, 16, 8));
  CHECK(p.name == "Tree/LL");
  // baseLat Tree/LL 6.8 + 2 x ((8 - 1) x hwLat NVLink Tree/LL 0.6 + log2(2) x hwLat NET Tree/LL 5.0).
  const double lat_us = 6.8 + 2 * (7 * 0.6 + 1 * 5.0);
  // Bandwidth: min(bwIntra x .92, ...) / 3.8 capped at llMaxBw (Intel, 2 nodes: 39.0), x .5 to
  // algorithm bandwidth; the tree correction for 8 B (log2(8 >> 6) = 0) is 1.0.
  const double bus = std::min(18 * 20.6, 2 * 8 * 50.0 * kIbEff) * 0.92;
  const double bw = std::min(bus / 3.8, 39.0) * 0.5;
  CHECK(p.time_s == doctest::Approx((lat_us + 8.0 / (1000 * bw)) * 1e-6).epsilon(1e-9).scale(0));
  // The measured in-place time of this size on 2 x 8 H100 (nccl-tests#309) is 24.70 us; the
  // model without NCCL's latency terms gave 7 us.
  CHECK(p.time_s * 1e6 == doctest::Approx(25.2).epsilon(0.001).scale(0));
}

TEST_CASE("NVLS on one H100 node: 16 channels x one NVLink's 20.6 GB/s x 5/6, latency 25 us") {
  const auto t = topo::make_topology("dgx-h100-8", "t");
  const std::uint64_t S = 8ull << 30;
  const auto p = nccl_predict(t, op_of(OpKind::allreduce, 8, S));
  CHECK(p.name == "NVLS/Simple");
  const double algbw = 16 * 20.6 * 5.0 / 6.0;
  CHECK(p.time_s == doctest::Approx((25.0 + static_cast<double>(S) / (1000 * algbw)) * 1e-6).epsilon(1e-9).scale(0));
  // busbw 2 (n-1)/n x algbw = 480.7 GB/s (measured 475-480 on 8 x H100, corpus).
  CHECK(algbw * 14 / 8 == doctest::Approx(480.7).epsilon(0.001).scale(0));
  // A100 has no NVLink SHARP: NCCL_ALGO=NVLS leaves nothing, NCCL falls back to the ring.
  const auto a = topo::make_topology("dgx-a100-8", "t");
  NcclOptions o;
  o.allowed = nccl_algo_mask("NVLS", "t");
  CHECK(nccl_predict(a, op_of(OpKind::allreduce, 8, S), o).choice.algo == nccl::Algo::ring);
}

TEST_CASE("NCCL's choice is the smallest time of every available algorithm and protocol") {
  const auto t = topo::make_topology("dgx-h100-32", "t");
  for (std::uint64_t S = 8; S <= (16ull << 30); S *= 8) {
    const auto op = op_of(OpKind::allreduce, 32, S);
    const auto s = nccl_system(t, op);
    const auto table = nccl::tune(s, op.kind);
    const auto c = nccl::choose(s, op.kind, S);
    REQUIRE(c);
    int available = 0;
    for (std::size_t a = 0; a < nccl::kAlgos; ++a) {
      for (std::size_t p = 0; p < nccl::kProtos; ++p) {
        const auto time = nccl::algo_time_us(s, table, op.kind, static_cast<nccl::Algo>(a), static_cast<nccl::Proto>(p), S);
        if (!time) continue;
        ++available;
        CHECK(c->time_us <= *time);
      }
    }
    // Tree and Ring x 3 protocols, NVLSTree/Simple: NVLS needs CollNet across nodes, PAT a
    // reduce-scatter or all-gather, CollNet network reduction.
    CHECK(available == 7);
  }
}

TEST_CASE("PAT: reduce-scatter at one GPU per node only") {
  const auto t = topo::make_topology(fast_nvlink_2x8(), "t");
  CollectiveOp one;
  one.kind = OpKind::reducescatter;
  one.size_bytes = 1 << 20;
  one.group = {0, 8};
  const auto s1 = nccl_system(t, one);
  const auto t1 = nccl::tune(s1, one.kind);
  CHECK(t1[static_cast<std::size_t>(nccl::Algo::pat)][2].bw_GBps > 0);
  // Latency 8 + log2(2) x (hwLat NET Tree/Simple 14 / 3.5) + 2 x 2.8.
  CHECK(t1[static_cast<std::size_t>(nccl::Algo::pat)][2].latency_us == doctest::Approx(8 + 14.0 / 3.5 + 5.6).scale(0));
  const auto s8 = nccl_system(t, op_of(OpKind::reducescatter, 16, 1 << 20));
  CHECK(nccl::tune(s8, OpKind::reducescatter)[static_cast<std::size_t>(nccl::Algo::pat)][2].bw_GBps == 0);
}

TEST_CASE("the NCCL model applies only to NVIDIA GPU topologies") {
  const auto tpu = topo::make_topology("tpu-v4-64", "t");
  CHECK(nccl_unsupported(tpu, op_of(OpKind::allreduce, 8, 1024)).value() ==
        "device model 'tpu-v4' is not an NVIDIA GPU NCCL runs on");
  const auto sw = topo::make_topology("switch:n=4,bw=10GB/s,lat=1us", "t");
  CHECK(nccl_unsupported(sw, op_of(OpKind::allreduce, 4, 1024)).value() == "the topology names no GPU device model");
  CHECK_THROWS_WITH_AS(nccl_system(sw, op_of(OpKind::allreduce, 4, 1024)),
                       "NCCL model: the topology names no GPU device model; expected an NVIDIA GPU topology (a GPU preset)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(nccl_algo_mask("Ring,Bogus", "--nccl-algo"),
                       "--nccl-algo: unknown NCCL algorithm 'Bogus'; expected a comma list of Tree, Ring, CollNetDirect, "
                       "CollNetChain, NVLS, NVLSTree, PAT",
                       ConfigError);
  CHECK(nccl_algo_mask("ring, nvlstree", "t") == ((1u << 1) | (1u << 5)));
}

TEST_CASE("ring-channels at flow fidelity: one ring per rail, every NIC busy, NCCL's Ring/Simple bandwidth") {
  // 2 nodes x 8 GPUs, NVLink 4000 GB/s per GPU, one 50 GB/s NIC per GPU: NIC-bound. Channel c
  // crosses between nodes on rail c only, so each of the 8 rails carries 1/8 of every step:
  // a ring step moves S/n per rank at 8 x 50 GB/s, and the bandwidth term of the all-reduce is
  // 2(n-1)/n S / (8 x 50 GB/s). The plain ring crosses on one rail: 8x that.
  const auto t = topo::make_topology(fast_nvlink_2x8(), "t");
  const std::uint64_t S = 4ull << 30;
  const auto op = op_of(OpKind::allreduce, 16, S);
  const auto& rc = find_algorithm("ring-channels", OpKind::allreduce, "test");
  REQUIRE_FALSE(rc.unsupported(t, op));
  const double channels_s = flow_time(t, op, rc);
  const double ring_s = flow_time(t, op, find_algorithm("ring", OpKind::allreduce, "test"));
  const double n = 16, nic = 50e9;
  const double bw_term = 2 * (n - 1) / n * static_cast<double>(S) / (8 * nic);
  // Latency: 30 steps of a few microseconds (< 0.5 % of 20 ms).
  CHECK(channels_s >= bw_term);
  CHECK(channels_s <= bw_term * 1.005);
  CHECK(ring_s >= 8 * bw_term);
  // The closed form of ring-channels (step_hop over all channels at once) agrees.
  CHECK(rc.analytical(t, op, {}).time_s == doctest::Approx(channels_s).epsilon(0.005).scale(0));
  // NCCL's Ring/Simple: busbw = min(NVLink x 0.824, 8 NICs x IB wire efficiency) = 397.5 GB/s
  // (nccl_model.hpp) against the flow's 400 GB/s line rate (0.63 %), plus NCCL's latency terms
  // (about 0.5 % at 4 GiB): the two fidelities agree within 2 %.
  NcclOptions o;
  o.allowed = nccl_algo_mask("Ring", "test");
  const auto p = nccl_predict(t, op, o);
  CHECK(p.name == "Ring/Simple");
  CHECK(p.system.ring_GBps == doctest::Approx(8 * 50 * kIbEff).scale(0));
  CHECK(std::abs(channels_s - p.time_s) / p.time_s < 0.02);
  // auto schedules NCCL's ring as ring-channels across nodes, the plain ring inside one.
  CHECK(nccl_auto(t, op, o)->schedule->name() == "ring-channels");
  CHECK(nccl_auto(t, op_of(OpKind::allreduce, 8, S), o)->schedule->name() == "ring");
  CHECK(rc.unsupported(t, op_of(OpKind::allreduce, 8, S)).value() ==
        "the group lies in one NVLink domain (one node): nothing to stripe over NICs (ring)");
}

TEST_CASE("ring-channels broadcast and reduce: one chain per rail, S/C each, pipelined; flow = closed form") {
  // The same 2 x 8 NIC-bound cluster. Broadcast: per channel a chain from the root round its
  // ring, S/8 each, in K = 256 pieces (S = 4 GiB: ceil(S / (8 x 512 KiB)) capped at 256). Every
  // channel crosses each node boundary on its own rail once, so each NIC carries S/8 over the
  // run: the bandwidth term is S / (8 x 50 GB/s), plus a fill of (n-2) pieces of S/(8 x 256).
  const auto t = topo::make_topology(fast_nvlink_2x8(), "t");
  const std::uint64_t S = 4ull << 30;
  const double nic = 50e9, n = 16;
  for (const OpKind k : {OpKind::broadcast, OpKind::reduce}) {
    CAPTURE(to_string(k));
    auto op = op_of(k, 16, S);
    op.root = 5;
    const auto& rc = find_algorithm("ring-channels", k, "test");
    REQUIRE_FALSE(rc.unsupported(t, op));
    const double flow_s = flow_time(t, op, rc);
    const double bw_term = static_cast<double>(S) / (8 * nic);
    CHECK(flow_s >= bw_term);
    // Each piece also pays its route's latency on the crossing (PXN's NVLink hop and the NIC's
    // two IB links: 2.5 us, against 42 us for 2 MiB at 50 GB/s).
    CHECK(flow_s <= (bw_term + 256 * 2.5e-6) * (1 + (n - 2) / 256) * 1.01);
    // The plain ring's chain crosses on one rail: about 8x slower.
    CHECK(flow_time(t, op, find_algorithm("ring", k, "test")) >= 7 * bw_term);
    // The closed form pipelines each channel on its own; the flow's steps hold a rank's channels
    // together (a rank enters step k when its step k-1 is done on every channel): 1.1 % apart.
    CHECK(rc.analytical(t, op, {}).time_s == doctest::Approx(flow_s).epsilon(0.02).scale(0));
    // NCCL's ring for broadcast / reduce runs as ring-channels across nodes.
    CHECK(nccl_auto(t, op, {})->schedule->name() == "ring-channels");
  }
}

TEST_CASE("NVLS on Blackwell: the Hopper-set NVLS channel x nvlsEfficiency 0.74 / 0.85 (NCCL 2.32)") {
  // 8 GPUs of the NVL72 preset: NVLink 5 at 18 x 50 GB/s, NCCL's 40.1 GB/s per link.
  const auto t = topo::make_topology("gb200-nvl72", "t");
  const std::uint64_t S = 8ull << 30;
  const auto op = op_of(OpKind::allreduce, 8, S);
  const auto s = nccl_system(t, op);
  CHECK(s.arch == nccl::Arch::blackwell);
  CHECK(s.nvls_intra_GBps == doctest::Approx(40.1 * 0.74 / 0.85).scale(0));
  NcclOptions o;
  o.allowed = nccl_algo_mask("NVLS", "t");
  const auto p = nccl_predict(t, op, o);
  CHECK(p.name == "NVLS/Simple");
  const double algbw = 16 * 40.1 * 0.74 / 0.85 * 5.0 / 6.0;  // 465.7 GB/s
  CHECK(p.choice.bw_GBps == doctest::Approx(algbw).scale(0));
  // busbw 2 (n-1)/n x algbw = 815 GB/s (measured 839-842 on 8 x GB300, corpus); Hopper keeps
  // the 2.23 figure (the H100 test above).
  CHECK(algbw * 14 / 8 == doctest::Approx(815.0).epsilon(0.001).scale(0));
  CHECK(nvls_arch_factor(nccl::Arch::hopper) == 1.0);
}

TEST_CASE("NVLSTree across 2 H100 nodes: 8 heads x perChMaxNVLSTreeBw 57.7 GB/s (NCCL 2.32)") {
  const auto t = topo::make_topology("dgx-h100-16", "t");
  const std::uint64_t S = 16ull << 30;
  const auto op = op_of(OpKind::allreduce, 16, S);
  const auto s = nccl_system(t, op);
  CHECK(s.nvls_heads == 8);  // every GPU has its NIC; at most the node's 8 GPUs
  NcclOptions o;
  o.allowed = nccl_algo_mask("NVLSTree", "t");
  const auto p = nccl_predict(t, op, o);
  CHECK(p.name == "NVLSTree/Simple");
  // Without the cap: 16 channels x min(20.6, 24.8) x 5/6 = 274.7 GB/s of algbw (busbw 515);
  // with it: bus 8 x 57.7 = 461.6 GB/s, algbw = bus x n / (2 (n-1)) = 246.2 GB/s (measured
  // busbw 466-469 at 8-16 GiB on 2 x 8 H100, corpus).
  const double uncapped = 16 * 20.6 * 5.0 / 6.0;
  const double capped = 8 * 57.7 * 16.0 / 30.0;
  CHECK(capped < uncapped);
  CHECK(p.choice.bw_GBps == doctest::Approx(capped).scale(0));
  // One NVLink domain: no heads, NVLSTree off.
  CHECK(nccl_system(t, op_of(OpKind::allreduce, 8, S)).nvls_heads == 0);
}

TEST_CASE("NVLSTree channel crosses on one NIC: nvls_inter <= one NIC's rate") {
  // Two NVLink domains of 32 GPUs, one 400 Gb/s NIC per GPU: the node's NIC sum / 16 channels
  // (2 NICs' worth) exceeds what one channel's head NIC carries.
  const auto t = topo::make_topology(
      R"({"builder":"rail_optimized","nodes":2,"gpus_per_node":32,"nvlink_bw":"900GB/s","nvlink_lat":"0.25us",)"
      R"("nic_bw":"400Gb/s","ib_lat":"1us","spines":32,"device_model":"gb200","nvls":true})",
      "t");
  const auto s = nccl_system(t, op_of(OpKind::allreduce, 64, 1 << 30));
  const double one_nic = 50.0 * kIbEff;
  CHECK(32 * one_nic / 16 > one_nic);
  CHECK(s.nvls_inter_GBps == doctest::Approx(one_nic).scale(0));
  CHECK(s.nvls_heads == 16);
}

TEST_CASE("tree-channels at flow fidelity: NCCL's Tree per rail, 2 nodes NIC-bound at S/g per NIC") {
  // 2 nodes x 8 GPUs, NVLink 4000 GB/s, one 50 GB/s NIC per GPU. Channel c (S/8) climbs its
  // chain to local rank c, then crosses on rail c: on 2 nodes tree A's child sends its half up
  // and receives it back, tree B the other way round, so each NIC carries S/(2g) twice per
  // direction: S/g = 512 MiB at 50 GB/s = 10.7 ms for S = 4 GiB (the chains move 1.75 S per
  // GPU over NVLink: 1.9 ms). The plain double binary tree crosses on one NIC.
  const auto t = topo::make_topology(fast_nvlink_2x8(), "t");
  const std::uint64_t S = 4ull << 30;
  const auto op = op_of(OpKind::allreduce, 16, S);
  const auto& tc = find_algorithm("tree-channels", OpKind::allreduce, "test");
  REQUIRE_FALSE(tc.unsupported(t, op));
  const double flow_s = flow_time(t, op, tc);
  const double nic_bound = static_cast<double>(S) / 8 / 50e9;
  CHECK(flow_s >= nic_bound);
  // Fill (16 stages of 256 pieces) and 271 route latencies of ~2.5 us: under 6 %.
  CHECK(flow_s <= nic_bound * 1.06);
  // The closed form (busiest link + fill + latencies) agrees with the flow run.
  CHECK(tc.analytical(t, op, {}).time_s == doctest::Approx(flow_s).epsilon(0.04).scale(0));
  const auto& dbt = find_algorithm("double-binary-tree", OpKind::allreduce, "test");
  CHECK(flow_time(t, op, dbt) >= 3 * flow_s);
  // NCCL's Tree runs it at flow fidelity; one node falls back to the plain double binary tree.
  NcclOptions o;
  o.allowed = nccl_algo_mask("Tree", "test");
  CHECK(nccl_auto(t, op, o)->pred.name == "Tree/Simple");
  CHECK(nccl_auto(t, op, o)->schedule->name() == "tree-channels");
  CHECK(nccl_auto(t, op_of(OpKind::allreduce, 8, S), o)->schedule->name() == "double-binary-tree");
  CHECK(tc.unsupported(t, op_of(OpKind::allreduce, 8, S)).value() ==
        "the group lies in one NVLink domain (one node): nothing to stripe over NICs (tree-channels)");
}

TEST_CASE("nvls-tree: NCCL's NVLSTree at flow fidelity delivers the data and agrees with its closed form") {
  // Symbolic run: 3 nodes x 4 GPUs (a tree with an interior node), 2 x 2.
  for (const char* spec : {"rail_optimized:nodes=3,gpus_per_node=4,nvlink_bw=450GB/s,nvlink_lat=1us,nic_bw=50GB/s,"
                           "ib_lat=2us,nvls=1,device_model=h100",
                           "rail_optimized:nodes=2,gpus_per_node=2,nvlink_bw=450GB/s,nvlink_lat=1us,nic_bw=50GB/s,"
                           "ib_lat=2us,nvls=1,device_model=h100"}) {
    const auto t = topo::make_topology(spec, "t");
    const auto op = op_of(OpKind::allreduce, t.num_devices(), 1 << 20);
    const auto& a = find_algorithm("nvls-tree", OpKind::allreduce, "test");
    REQUIRE_FALSE(a.unsupported(t, op));
    CAPTURE(spec);
    CHECK(test::check_plan(op, a.data_plan(t, op), a.build(t, op, {})) == "");
    // Tree-channels on the same cluster: its plan too.
    const auto& tc = find_algorithm("tree-channels", OpKind::allreduce, "test");
    CHECK(test::check_plan(op, tc.data_plan(t, op), tc.build(t, op, {})) == "");
  }
  // 2 nodes x 8 GPUs, NVLink 4000 GB/s with NVLS, one 50 GB/s NIC per GPU: every head's NIC
  // carries S/g per direction (2 nodes), the NVLink ports S + S/g: NIC-bound, S/(8 x 50 GB/s).
  const auto t = topo::make_topology(
      R"({"builder":"rail_optimized","nodes":2,"gpus_per_node":8,"nvlink_bw":"4000GB/s","nvlink_lat":"0.25us",)"
      R"("nic_bw":"400Gb/s","ib_lat":"1us","spines":8,"device_model":"h100","nvls":true})",
      "t");
  const std::uint64_t S = 4ull << 30;
  const auto op = op_of(OpKind::allreduce, 16, S);
  const auto& a = find_algorithm("nvls-tree", OpKind::allreduce, "test");
  const double flow_s = flow_time(t, op, a);
  const double nic_bound = static_cast<double>(S) / 8 / 50e9;
  CHECK(flow_s >= nic_bound);
  CHECK(flow_s <= nic_bound * 1.06);  // fill (8 stages of 64 pieces) and latencies
  CHECK(a.analytical(t, op, {}).time_s == doctest::Approx(flow_s).epsilon(0.04).scale(0));
  // NCCL's NVLSTree runs it; without a reducing switch it is unsupported (auto falls back).
  NcclOptions o;
  o.allowed = nccl_algo_mask("NVLSTree", "test");
  CHECK(nccl_auto(t, op, o)->schedule->name() == "nvls-tree");
  const auto plain = topo::make_topology(fast_nvlink_2x8(), "t");
  CHECK(a.unsupported(plain, op).value() ==
        "node 0 of the group has no switch with in_network_reduction linked to all its ranks");
}

TEST_CASE("link efficiency in the flow network: NCCL's Ring meets its analytical time at flow fidelity") {
  // FlowOptions::link_efficiency runs the links at the rates NCCL's model counts on: NVLink x
  // 20.6/25 on Hopper, IB x 4096/4122. NCCL's Ring/Simple and its flow schedule (ring-channels)
  // then differ only by their latency terms: NCCL's 1.4 x (28 x 3.4 + 2 x 14 + 8.4) = 184 us,
  // the flow's 30 steps of route latency (~2.5 us).
  const std::uint64_t S = 4ull << 30;
  NcclOptions o;
  o.allowed = nccl_algo_mask("Ring", "test");
  FlowOptions eff;
  eff.link_efficiency = true;
  // NIC-bound (fast NVLink): 8 NICs x 50 GB/s x IB efficiency.
  const auto nic = topo::make_topology(fast_nvlink_2x8(), "t");
  const auto op = op_of(OpKind::allreduce, 16, S);
  const auto a = nccl_auto(nic, op, o);
  REQUIRE(a->schedule->name() == "ring-channels");
  const double line_s = flow_time(nic, op, *a->schedule);
  const double eff_s = flow_time(nic, op, *a->schedule, eff);
  CHECK(eff_s / line_s == doctest::Approx(1 / kIbEff).epsilon(0.001).scale(0));
  CHECK(std::abs(eff_s - a->pred.time_s) < 184e-6);
  // NVLink-bound (DGX H100 pair): 18 x 20.6 = 370.8 GB/s, flow and NCCL alike.
  const auto dgx = topo::make_topology("dgx-h100-16", "t");
  const auto d = nccl_auto(dgx, op, o);
  const double d_s = flow_time(dgx, op, *d->schedule, eff);
  CHECK(std::abs(d_s - d->pred.time_s) < 184e-6);
  // At line rate the same schedule is NIC-bound instead (8 x 50 = 400 GB/s < 450 GB/s NVLink).
  const double dgx_line_s = flow_time(dgx, op, *d->schedule);
  CHECK(dgx_line_s == doctest::Approx(30.0 / 16 * static_cast<double>(S) / 400e9).epsilon(0.01).scale(0));
  CHECK(dgx_line_s < d_s * 0.95);
  CHECK(link_efficiency(dgx, dgx.link(dgx.out_links(dgx.device(0)).front())) == doctest::Approx(20.6 / 25).scale(0));
}

TEST_CASE("NVLS at the two fidelities: the flow schedule at the NVLink rate, NCCL's model at its NVLS factors") {
  // Why `in-network` at flow fidelity runs NCCL's NVLS faster than NCCL's analytical model
  // (docs/validation.md, "NCCL's schedules at flow fidelity"), and a check that nothing else
  // differs (no efficiency applied twice, no latency or pipeline term hiding in the gap):
  // - flow, links at NCCL's rates (FlowOptions::link_efficiency): NCCL's NVLS kernel moves
  //   S (1 + 1/n) over each GPU's NVLink each way (in_network.cpp), pipelined in C = 64
  //   chunks: t = S (1 + 1/n) / (18 links x NCCL's per-link rate), plus at most 3 pieces of fill;
  // - NCCL: algbw = nvls_channels 16 x one link x 5/6 (tuning.cc's NVLS bus-to-algorithm
  //   ratio) x nvls_arch_factor, plus 25 us.
  // The bandwidth terms differ by 18/16 x 6/5 / nvls_arch_factor / (1 + 1/n): 1.20 on Hopper,
  // 1.38 on Blackwell: NCCL's measured NVLS kernel efficiency, which a flow network of link
  // capacities does not represent. Ratios, not seconds: doctest's Approx adds its scale (1) to
  // the tolerance, so it cannot compare milliseconds.
  struct Case {
    const char* preset;
    nccl::Arch arch;
    double per_link_GBps;  // NCCL's NVLink bandwidth per link (topo.h)
  };
  for (const Case c : {Case{"dgx-h100-8", nccl::Arch::hopper, 20.6}, Case{"gb200-nvl72", nccl::Arch::blackwell, 40.1}}) {
    CAPTURE(c.preset);
    const auto t = topo::make_topology(c.preset, "t");
    const std::uint64_t S = 4ull << 30;
    const auto op = op_of(OpKind::allreduce, 8, S);
    NcclOptions o;
    o.allowed = nccl_algo_mask("NVLS", "t");
    const auto a = nccl_auto(t, op, o);
    REQUIRE(a->pred.name == "NVLS/Simple");
    REQUIRE(a->schedule->name() == "in-network");
    const double flow_s = flow_time_at_nccl_rates(t, op, *a->schedule);
    const double nvlink_Bps = 18 * c.per_link_GBps * 1e9;
    const double bound_s = static_cast<double>(S) * (1 + 1.0 / 8) / nvlink_Bps;
    CHECK(flow_s / bound_s >= 1.0);
    CHECK(flow_s / bound_s <= 1.0 + 3.0 / 64 / (1 + 1.0 / 8));
    CHECK(a->pred.latency_s * 1e6 == doctest::Approx(25.0).scale(0));
    const double factors = 18.0 / 16 * 6.0 / 5 / nvls_arch_factor(c.arch);
    CHECK(a->pred.bandwidth_s / bound_s == doctest::Approx(factors / (1 + 1.0 / 8)).epsilon(1e-6).scale(0));
    CHECK(factors / (1 + 1.0 / 8) == doctest::Approx(c.arch == nccl::Arch::hopper ? 1.2 : 1.378).epsilon(0.001).scale(0));
  }
}

TEST_CASE("Tree across 2 H100 nodes at the two fidelities: the chain's 2 (g-1)/g S against NCCL's 2 S / 0.92") {
  // tree-channels at flow fidelity (links at NCCL's rates) is NVLink-bound on a DGX H100 pair:
  // per GPU the channel chains move 2 (g-1)/g S over its NVLink (tree_channels.cpp), the NICs
  // carry S/g per direction each (2 nodes: the two trees' roots are on opposite nodes). NCCL's
  // Tree model instead counts 2 S per GPU (bus-to-algorithm ratio 0.5) at 0.92 of the graph
  // bandwidth (tuning.cc: "busBw * .92" for Tree all-reduce), min(NVLink, 2 x NIC sum) on 2 nodes.
  // The bandwidth terms differ by exactly 2 / (2 (g-1)/g) / 0.92 = 1.242 for g = 8: the 24 %
  // docs/validation.md tabulates. NCCL's factor is its kernels' measured efficiency; the flow
  // network moves the schedule's bytes at link capacity.
  const auto t = topo::make_topology("dgx-h100-16", "t");
  const std::uint64_t S = 4ull << 30;
  const auto op = op_of(OpKind::allreduce, 16, S);
  NcclOptions o;
  o.allowed = nccl_algo_mask("Tree", "t");
  const auto a = nccl_auto(t, op, o);
  REQUIRE(a->pred.name == "Tree/Simple");
  REQUIRE(a->schedule->name() == "tree-channels");
  const double flow_s = flow_time_at_nccl_rates(t, op, *a->schedule);
  const double g = 8, nvlink_Bps = 18 * 20.6e9, Sd = static_cast<double>(S);
  const double chain_s = 2 * (g - 1) / g * Sd / nvlink_Bps;
  CHECK(flow_s / chain_s >= 1.0);
  CHECK(flow_s / chain_s <= 1.01);
  CHECK(a->pred.bandwidth_s / (2 * Sd / (0.92 * nvlink_Bps)) == doctest::Approx(1.0).epsilon(1e-6).scale(0));
  CHECK(a->pred.bandwidth_s / chain_s == doctest::Approx(g / (g - 1) / 0.92).epsilon(1e-6).scale(0));
}

TEST_CASE("all-to-all: grouped send/recv, the NVLink share and the network share of a rank's bytes, the slower bounds") {
  // nccl_model.hpp: time = baseLat Ring/Simple 8.4 + hwLat (NVLink 3.4 on one node, NET 14
  // across nodes) + max(S (g-1)/n over the rank's NVLink at NCCL's 20.6 GB/s x 18, S (n-g)/n
  // over the rank's own NIC(s)); nccl-tests' alltoall busbw = S / t x (n-1)/n (nccl-tests#130).
  const std::uint64_t S = 8ull << 30;
  const double nvl = 18 * 20.6e9;
  const double nic = 50e9 * kIbEff;  // one 400 Gb/s NIC per H100 (dgx-h100 preset)
  SUBCASE("one node: NVLink only") {
    const auto t = topo::make_topology("dgx-h100-8", "t");
    const auto p = nccl_predict(t, op_of(OpKind::alltoall, 8, S));
    CHECK(p.name == "p2p/Simple");
    CHECK(p.schedule == "direct");
    const double want = (8.4 + 3.4) * 1e-6 + static_cast<double>(S) * 7.0 / 8.0 / nvl;
    CHECK(p.time_s == doctest::Approx(want).epsilon(1e-12).scale(0));
  }
  SUBCASE("N nodes: the network share binds; busbw -> N/(N-1) x one GPU's NIC (nccl-tests#130)") {
    for (const int nodes : {2, 4}) {
      const auto t = topo::make_topology(nodes == 2 ? "dgx-h100-16" : "dgx-h100-32", "t");
      const int n = 8 * nodes;
      const auto p = nccl_predict(t, op_of(OpKind::alltoall, static_cast<std::size_t>(n), S));
      const double inter = static_cast<double>(S) * (n - 8) / n / nic;
      const double intra = static_cast<double>(S) * 7.0 / n / nvl;
      CHECK(inter > intra);
      CHECK(p.time_s == doctest::Approx((8.4 + 14.0) * 1e-6 + inter).epsilon(1e-12).scale(0));
      // Bandwidth term only: busbw = S / inter x (n-1)/n = N/(N-1) x nic x (n-1)/n. The
      // rank's own NIC, not the node's 8 (nccl-tests#267: a GPU's all-to-all does not use the
      // other GPUs' NICs): with the node's NIC sum it would be 8 x this.
      const double busbw = static_cast<double>(S) / p.bandwidth_s * (n - 1) / n;
      CHECK(busbw == doctest::Approx(nodes / (nodes - 1.0) * nic * (n - 1) / n).epsilon(1e-12).scale(0));
    }
  }
}

TEST_CASE("sendrecv: a ring shift, the slowest pair's bytes over NVLink or the network") {
  // nccl_model.hpp: rank i sends S to rank i+1; time = baseLat Ring/Simple 8.4 + hwLat (NVLink
  // 3.4 on one node, NET 14 when a pair crosses nodes) + S / the slowest pair's rate: NVLink at
  // NCCL's 20.6 GB/s x 18 inside a node, the GPU's own NIC across nodes. busbw = algbw.
  const std::uint64_t S = 1ull << 30;
  SUBCASE("one node: every pair over NVLink") {
    const auto t = topo::make_topology("dgx-h100-8", "t");
    const auto p = nccl_predict(t, op_of(OpKind::sendrecv, 8, S));
    CHECK(p.name == "p2p/Simple");
    CHECK(p.schedule == "direct");
    CHECK(p.time_s == doctest::Approx((8.4 + 3.4) * 1e-6 + static_cast<double>(S) / (18 * 20.6e9)).epsilon(1e-12).scale(0));
  }
  SUBCASE("two nodes: ranks 7 -> 8 and 15 -> 0 cross on one NIC each") {
    const auto t = topo::make_topology("dgx-h100-16", "t");
    const auto p = nccl_predict(t, op_of(OpKind::sendrecv, 16, S));
    CHECK(p.time_s == doctest::Approx((8.4 + 14.0) * 1e-6 + static_cast<double>(S) / (50e9 * kIbEff)).epsilon(1e-12).scale(0));
    CHECK(p.why.find("7 -> 8 over the network") != std::string::npos);
  }
  SUBCASE("no tuning entry: NCCL's table is empty for sendrecv, as for all-to-all") {
    const auto t = topo::make_topology("dgx-h100-16", "t");
    const auto table = nccl::tune(nccl_system(t, op_of(OpKind::sendrecv, 16, S)), OpKind::sendrecv);
    for (const auto& row : table) {
      for (const auto& e : row) CHECK(e.bw_GBps == 0);
    }
  }
}
