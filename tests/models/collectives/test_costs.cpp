// Closed forms against numbers derived here by hand, the lower bound, the automatic choice.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "models/collectives/algorithm.hpp"
#include "plan_check.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"
#include "topologies/load.hpp"

using namespace shardsim;
using namespace shardsim::coll;
using shardsim::coll::test::make_op;

namespace {
constexpr double MiB = 1024.0 * 1024.0;
double cost(const char* algo, const topo::Topology& t, const CollectiveOp& op, const CostParams& p = {}) {
  return find_algorithm(algo, op.kind, "test").analytical(t, op, p).time_s;
}
}  // namespace

TEST_CASE("ring closed forms on a switch: alpha = two 1 us links, B = 100 GB/s") {
  // switch: device -> switch -> device, each link 1 us: route latency 2 us.
  auto t = topo::make_topology("switch:n=8,bw=100GB/s,lat=1us", "test");
  const double S = 64 * MiB, B = 100e9, a = 2e-6;
  CHECK(cost("ring", t, make_op(OpKind::allreduce, 8, S)) == doctest::Approx(14 * (a + S / 8 / B)).scale(0));
  CHECK(cost("ring", t, make_op(OpKind::reducescatter, 8, S)) == doctest::Approx(7 * (a + S / 8 / B)).scale(0));
  CHECK(cost("ring", t, make_op(OpKind::allgather, 8, S)) == doctest::Approx(7 * (a + S / 8 / B)).scale(0));
  // gamma: (n-1) S/n reduced at 50 GB/s, plus a 3 us step overhead on every step.
  CostParams p;
  p.reduce_Bps = 50e9;
  p.step_overhead_s = 3e-6;
  const auto c = find_algorithm("ring", OpKind::allreduce, "t").analytical(t, make_op(OpKind::allreduce, 8, S), p);
  CHECK(c.latency_s == doctest::Approx(14 * 5e-6).scale(0));
  CHECK(c.bandwidth_s == doctest::Approx(14 * S / 8 / B).scale(0));
  CHECK(c.reduce_s == doctest::Approx(7 * S / 8 / 50e9).scale(0));
  CHECK(c.time_s == doctest::Approx(c.latency_s + c.bandwidth_s + c.reduce_s).scale(0));
  CHECK(c.formula ==
        "2(n-1) (alpha + S/(n B)) + (n-1) S/(n gamma) with n = 8, alpha = 5 us, B = 100 GB/s, S = 67108864 B");
  // Pipelined chain broadcast, C = 64 chunks of 1 MiB: (n-1 + C-1)(alpha + S/(C B)).
  CHECK(cost("ring", t, make_op(OpKind::broadcast, 8, S)) == doctest::Approx((7 + 63) * (a + S / 64 / B)).scale(0));
  // Reduce: the same chain towards the root, every piece also reduced at gamma = 50 GB/s:
  // (n-1 + C-1)(alpha + S/(C B) + S/(C gamma)); without gamma (infinite) as the broadcast.
  CostParams g;
  g.reduce_Bps = 50e9;
  CHECK(cost("ring", t, make_op(OpKind::reduce, 8, S), g) ==
        doctest::Approx((7 + 63) * (a + S / 64 / B + S / 64 / 50e9)).scale(0));
  CHECK(cost("ring", t, make_op(OpKind::reduce, 8, S)) == doctest::Approx(cost("ring", t, make_op(OpKind::broadcast, 8, S))).scale(0));
  // Bidirectional ring on a switch: a rank's two sends share its one port (B/2 each), so it
  // is no faster than the ring: 2(n-1)(alpha + S/(2n) / (B/2)).
  CHECK(cost("ring-bidir", t, make_op(OpKind::allreduce, 8, S)) == doctest::Approx(14 * (a + S / 8 / B)).scale(0));
}

TEST_CASE("other closed forms on a switch") {
  auto t = topo::make_topology("switch:n=8,bw=100GB/s,lat=1us", "test");
  const double S = 64 * MiB, B = 100e9, a = 2e-6;
  // Rabenseifner: 2 log n alpha + 2 (n-1)/n S / B (Thakur et al. 2005, sec. 4.6).
  CHECK(cost("rabenseifner", t, make_op(OpKind::allreduce, 8, S)) == doctest::Approx(6 * a + 2.0 * 7 / 8 * S / B).scale(0));
  CHECK(cost("rabenseifner", t, make_op(OpKind::reducescatter, 8, S)) == doctest::Approx(3 * a + 7.0 / 8 * S / B).scale(0));
  // Direct: one step, the 7 sends of a rank share its port: alpha + 7 (S/8) / B.
  CHECK(cost("direct", t, make_op(OpKind::reducescatter, 8, S)) == doctest::Approx(a + 7.0 / 8 * S / B).scale(0));
  CHECK(cost("direct", t, make_op(OpKind::alltoall, 8, S)) == doctest::Approx(a + 7.0 / 8 * S / B).scale(0));
  CHECK(cost("direct", t, make_op(OpKind::allreduce, 8, S)) == doctest::Approx(2 * a + 2.0 * 7 / 8 * S / B).scale(0));
  CHECK(cost("direct", t, make_op(OpKind::broadcast, 8, S)) == doctest::Approx(a + 7 * S / B).scale(0));
  // Double binary tree, n = 8: depth L = 3 (in-order tree 3; 1, 5; 0, 2, 4, 6; 7 and its
  // mirror), 2L = 6 stages, C = 64 pieces. Busiest port: rank 6 has one child in tree A and
  // two in tree B: it receives S/2 (A reduce) + S/2 (A broadcast) + S (B reduce) + S/2 (B
  // broadcast) = 2.5 S. t = (6 + 63) alpha + 5 S/(2 C B) + 2.5 S / B.
  const auto c = find_algorithm("double-binary-tree", OpKind::allreduce, "t").analytical(t, make_op(OpKind::allreduce, 8, S), {});
  CHECK(c.latency_s == doctest::Approx((6 + 63) * a).scale(0));
  CHECK(c.bandwidth_s == doctest::Approx(5 * S / 128 / B + 2.5 * S / B).scale(0));
}

TEST_CASE("torus closed form on 4x4: dimension by dimension, both directions") {
  auto t = topo::make_topology("torus:dims=4x4,bw=100GB/s,lat=1us", "test");
  const double S = 64 * MiB, B = 100e9, a = 1e-6;  // neighbours: one link of 1 us
  // dim 0: 3 steps of S/(2*4) per direction; dim 1: 3 steps of (S/4)/(2*4); twice (RS + AG).
  const double rs = 3 * (a + S / 8 / B) + 3 * (a + S / 32 / B);
  CHECK(cost("torus", t, make_op(OpKind::allreduce, 16, S)) == doctest::Approx(2 * rs).scale(0));
  CHECK(cost("torus", t, make_op(OpKind::reducescatter, 16, S)) == doctest::Approx(rs).scale(0));
  CHECK(cost("torus", t, make_op(OpKind::allgather, 16, S)) == doctest::Approx(rs).scale(0));
  // A dimension of 2 has one neighbour: one step of S_d / 2 in one direction.
  auto t2 = topo::make_topology("torus:dims=2x4,bw=100GB/s,lat=1us", "test");
  CHECK(cost("torus", t2, make_op(OpKind::reducescatter, 8, S)) ==
        doctest::Approx((a + S / 2 / B) + 3 * (a + S / 2 / 8 / B)).scale(0));
  // The snake ring over the same 16 chips is 1-hop everywhere: 30 (alpha + S/(16 B)).
  CHECK(cost("ring", t, make_op(OpKind::allreduce, 16, S)) == doctest::Approx(30 * (a + S / 16 / B)).scale(0));
}

TEST_CASE("hierarchical closed form on a rail-optimized cluster") {
  // 4 nodes x 4 GPUs; intra: GPU -> NVSwitch -> GPU (2 x 1 us, 450 GB/s); inter: rail l of
  // node a to rail l of node a+1 through the rail leaf (GPU->NIC... as built: 2 links of
  // 2 us at 50 GB/s).
  auto t = topo::make_topology("rail_optimized:nodes=4,gpus_per_node=4,nvlink_bw=450GB/s,nvlink_lat=1us,"
                               "nic_bw=50GB/s,ib_lat=2us",
                               "test");
  const double S = 64 * MiB;
  const auto& r = t.rank_route(0, 4);
  const auto& i = t.rank_route(0, 1);
  const double ai = i.latency_s, bi = i.bottleneck_Bps, ae = r.latency_s, be = r.bottleneck_Bps;
  CHECK(ai == doctest::Approx(2e-6).scale(0));
  CHECK(bi == doctest::Approx(450e9).scale(0));
  CHECK(be == doctest::Approx(50e9).scale(0));
  CHECK(cost("hierarchical", t, make_op(OpKind::allreduce, 16, S)) ==
        doctest::Approx(2 * 3 * (ai + S / 4 / bi) + 2 * 3 * (ae + S / 16 / be)).scale(0));
}

TEST_CASE("in-network all-reduce on an NVSwitch (NVLS): S (1 + 1/n) each way, pipelined") {
  auto t = topo::make_topology("nvswitch_node:n=8,bw=450GB/s,lat=1us,nvls=1", "test");
  const double S = 64 * MiB, B = 450e9, a = 1e-6;  // one link each way
  // NCCL's NVLS kernel: reduce in switch (S), to heads (S/8), to switch (S/8), multicast (S):
  // S' = S (1 + 1/8) each way; C = 64: (C + 1)(alpha + S'/(C B)) + 2 alpha for the middle steps.
  CHECK(cost("in-network", t, make_op(OpKind::allreduce, 8, S)) / (65 * (a + S * 9 / 8 / 64 / B) + 2 * a) ==
        doctest::Approx(1.0).epsilon(1e-9).scale(0));
  // It beats every other algorithm's bandwidth term and respects its own bound S / B_inj.
  CHECK(lower_bound_s(t, make_op(OpKind::allreduce, 8, S)) == doctest::Approx(S / B).scale(0));
}

TEST_CASE("in-network all-reduce on a network switch (SHARP): S each way, NVLS's middle steps absent") {
  // Four hosts on an InfiniBand switch that reduces (SHARP, NCCL's CollNet): the switch reduces
  // the streams and sends the sum down, S per rank each way; the NVLS head steps (S/n) apply
  // only to an NVLink switch (in_network.cpp). C = 64: (C + 1)(alpha + S/(C B)).
  const std::string spec = R"({"builder": "custom", "name": "sharp4", "nodes": [)"
                           R"({"name": "h0", "kind": "device"}, {"name": "h1", "kind": "device"},)"
                           R"({"name": "h2", "kind": "device"}, {"name": "h3", "kind": "device"},)"
                           R"({"name": "sw", "kind": "switch", "in_network_reduction": true}], "links": [)"
                           R"({"src": "h0", "dst": "sw", "bw": "50GB/s", "lat": "1us", "class": "ib", "duplex": true},)"
                           R"({"src": "h1", "dst": "sw", "bw": "50GB/s", "lat": "1us", "class": "ib", "duplex": true},)"
                           R"({"src": "h2", "dst": "sw", "bw": "50GB/s", "lat": "1us", "class": "ib", "duplex": true},)"
                           R"({"src": "h3", "dst": "sw", "bw": "50GB/s", "lat": "1us", "class": "ib", "duplex": true}]})";
  auto t = topo::make_topology(spec, "test");
  const double S = 64 * MiB, B = 50e9, a = 1e-6;
  const auto op = make_op(OpKind::allreduce, 4, S);
  CHECK(cost("in-network", t, op) / (65 * (a + S / 64 / B)) == doctest::Approx(1.0).epsilon(1e-9).scale(0));
  CHECK(find_algorithm("in-network", OpKind::allreduce, "t").build(t, op, {}).steps.size() == 2);
}

TEST_CASE("lower bounds (DESIGN 2)") {
  const double S = 64 * MiB;
  auto sw = topo::make_topology("switch:n=8,bw=100GB/s,lat=1us", "test");
  CHECK(lower_bound_s(sw, make_op(OpKind::allreduce, 8, S)) == doctest::Approx(2.0 * 7 / 8 * S / 100e9).scale(0));
  CHECK(lower_bound_s(sw, make_op(OpKind::reducescatter, 8, S)) == doctest::Approx(7.0 / 8 * S / 100e9).scale(0));
  CHECK(lower_bound_s(sw, make_op(OpKind::alltoall, 8, S)) == doctest::Approx(7.0 / 8 * S / 100e9).scale(0));
  CHECK(lower_bound_s(sw, make_op(OpKind::broadcast, 8, S)) == doctest::Approx(S / 100e9).scale(0));
  CHECK(lower_bound_s(sw, make_op(OpKind::allreduce, 1, S)) == 0);
  // A 2-D torus chip injects on 4 links.
  auto tor = topo::make_topology("torus:dims=4x4,bw=100GB/s,lat=1us", "test");
  CHECK(lower_bound_s(tor, make_op(OpKind::allreduce, 16, S)) == doctest::Approx(2.0 * 15 / 16 * S / 400e9).scale(0));
}

TEST_CASE("auto choice: smallest analytical time, with every candidate's time or reason") {
  auto tor = topo::make_topology("torus:dims=4x4,bw=100GB/s,lat=1us", "test");
  auto op = make_op(OpKind::allreduce, 16, 256 * MiB);
  const auto c = choose_auto(tor, op, {});
  REQUIRE(c.algorithm != nullptr);
  CHECK(c.algorithm->name() == "torus");
  CHECK(c.cost.time_s == doctest::Approx(cost("torus", tor, op)).scale(0));
  std::string expect;
  for (const char* a : {"ring", "ring-bidir", "torus"}) {
    expect += fmt::format("{}{}: {}", expect.empty() ? "" : ", ", a, units::format_seconds(cost(a, tor, op)));
    if (std::string(a) == "ring-bidir") expect += ", ring-channels: n/a (one rank per node (NVLink domain): one channel, the plain ring)";
  }
  expect += " (chosen), hierarchical: n/a (topology 'torus:dims=4x4,bw=100GB/s,lat=1us' has no device groups)";
  CHECK(c.why.starts_with(expect));
  CHECK(c.why.ends_with("in-network: n/a (topology 'torus:dims=4x4,bw=100GB/s,lat=1us' has no switch with "
                        "in_network_reduction)"));
  // Small messages on a switch: latency decides. Rabenseifner needs 2 log n steps, the ring
  // 2(n-1); direct (2 steps) is not considered for reductions, whose link sharing between
  // ranks its closed form ignores. Past 1024 ranks Rabenseifner's 22 alpha beat the tree's
  // 22 alpha + 13 S/B (fill + busiest port) and the ring's 4094.
  auto sw = topo::make_topology("switch:n=16,bw=100GB/s,lat=1us", "test");
  const auto small = choose_auto(sw, make_op(OpKind::allreduce, 16, 1024), {});
  CHECK(small.algorithm->name() == "rabenseifner");
  CHECK(small.why.find("direct: not considered (contention its closed form ignores)") != std::string::npos);
  auto sw2k = topo::make_topology("switch:n=2048,bw=100GB/s,lat=1us", "test");
  CHECK(choose_auto(sw2k, make_op(OpKind::allreduce, 2048, 1024), {}).algorithm->name() == "rabenseifner");
  // With NVLS the switch reduction wins for large buffers.
  auto nvls = topo::make_topology("nvswitch_node:n=8,bw=450GB/s,lat=1us,nvls=1", "test");
  CHECK(choose_auto(nvls, make_op(OpKind::allreduce, 8, 256 * MiB), {}).algorithm->name() == "in-network");
  // ... and for the flow evaluator too, which runs switch endpoints: the choice does not
  // depend on the fidelity (issue 12), for any size.
  for (double S : {4.0 * 1024, 1 * MiB, 256 * MiB}) {
    const auto op8 = make_op(OpKind::allreduce, 8, S);
    const auto analytical_pick = choose_auto(nvls, op8, {}, false);
    const auto flow_pick = choose_auto(nvls, op8, {}, true);
    INFO("S = ", S);
    CHECK(flow_pick.algorithm == analytical_pick.algorithm);
    CHECK(flow_pick.why == analytical_pick.why);
  }
  CHECK(choose_auto(nvls, make_op(OpKind::allreduce, 8, 256 * MiB), {}, true).algorithm->name() == "in-network");
  // Nothing applies: all-to-all on 2048 ranks.
  std::string err;
  try {
    (void)choose_auto(sw2k, make_op(OpKind::alltoall, 2048, 1024), {});
  } catch (const ConfigError& e) {
    err = e.what();
  }
  CHECK(err ==
        "algorithm auto: no algorithm applies to alltoall here: direct: n/a (n = 2048 needs 4192256 transfers per "
        "step; direct is limited to 1024 ranks); expected a topology and group one of them supports");
}
