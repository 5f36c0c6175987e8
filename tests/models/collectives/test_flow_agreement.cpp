// The analytical closed forms against the flow evaluator: equal within 1 % where nothing
// contends, the flow model alone right where links are shared; no algorithm beats the
// bandwidth lower bound in either model.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <numeric>
#include <set>

#include "models/collectives/algorithm.hpp"
#include "models/collectives/detail.hpp"
#include "models/collectives/flow_eval.hpp"
#include "plan_check.hpp"
#include "topologies/load.hpp"

using namespace shardsim;
using namespace shardsim::coll;
using shardsim::coll::test::make_op;

namespace {

constexpr double MiB = 1024.0 * 1024.0;

struct Both {
  double analytical = 0;
  double flow = 0;
};

Both run(const char* algo, const topo::Topology& t, const CollectiveOp& op, const CostParams& p = {}) {
  const auto& a = find_algorithm(algo, op.kind, "test");
  Both b;
  b.analytical = a.analytical(t, op, p).time_s;
  FlowOptions o;
  o.cost = p;
  b.flow = evaluate_flow(t, op, a.build(t, op, p), o).time_s;
  return b;
}

}  // namespace

TEST_CASE("ring: analytical = flow within 1% along one torus dimension and inside a switch") {
  for (std::size_t n : {2, 4, 8, 16, 64, 256}) {
    const double S = 64 * MiB;
    // Row 0 of a 2 x n torus: the snake ring order restricted to it walks the row, and the
    // wraparound link closes the ring: every hop is one link, every link carries one flow.
    auto tor = topo::make_topology(fmt::format("torus:dims=2x{},bw=100GB/s,lat=1us", n), "test");
    for (OpKind k : {OpKind::allreduce, OpKind::reducescatter, OpKind::allgather}) {
      auto op = make_op(k, n, S);
      const auto b = run("ring", tor, op);
      INFO("torus row n=", n, " ", to_string(k));
      CHECK(b.flow == doctest::Approx(b.analytical).epsilon(0.01).scale(0));
    }
    auto sw = topo::make_topology(fmt::format("switch:n={},bw=100GB/s,lat=1us", n), "test");
    auto op = make_op(OpKind::allreduce, n, S);
    CostParams p;
    p.reduce_Bps = 200e9;
    p.step_overhead_s = 2e-6;
    const auto b = run("ring", sw, op, p);
    INFO("switch n=", n);
    CHECK(b.flow == doctest::Approx(b.analytical).epsilon(0.01).scale(0));
    // And the closed form itself: 2(n-1)(2 lat + overhead + S/(nB)) + (n-1) S/(n gamma).
    const double nn = static_cast<double>(n);
    CHECK(b.analytical == doctest::Approx(2 * (nn - 1) * (4e-6 + S / nn / 100e9) + (nn - 1) * S / nn / 200e9).scale(0));
  }
}

TEST_CASE("other algorithms agree with the flow model where nothing contends") {
  const double S = 64 * MiB;
  auto sw = topo::make_topology("switch:n=16,bw=100GB/s,lat=1us", "test");
  struct Case {
    const char* algo;
    OpKind kind;
  };
  for (Case c : {Case{"rabenseifner", OpKind::allreduce}, Case{"rabenseifner", OpKind::reducescatter},
                 Case{"direct", OpKind::allreduce}, Case{"direct", OpKind::alltoall},
                 Case{"direct", OpKind::broadcast}, Case{"ring", OpKind::broadcast}, Case{"ring", OpKind::reduce},
                 Case{"ring-bidir", OpKind::allreduce}}) {
    const auto b = run(c.algo, sw, make_op(c.kind, 16, S));
    INFO(c.algo, " ", to_string(c.kind));
    CHECK(b.flow == doctest::Approx(b.analytical).epsilon(0.01).scale(0));
  }
  // Bidirectional ring on a 1-D torus: each direction of each link carries one half.
  auto ring16 = topo::make_topology("torus:dims=16,bw=100GB/s,lat=1us", "test");
  const auto bd = run("ring-bidir", ring16, make_op(OpKind::allreduce, 16, S));
  CHECK(bd.flow == doctest::Approx(bd.analytical).epsilon(0.01).scale(0));
  CHECK(bd.analytical == doctest::Approx(30 * (1e-6 + S / 32 / 100e9)).scale(0));
  // Hierarchical on a rail-optimized cluster (one NIC per GPU: rails do not share links).
  auto rail = topo::make_topology("rail_optimized:nodes=4,gpus_per_node=4,nvlink_bw=450GB/s,nvlink_lat=1us,"
                                  "nic_bw=50GB/s,ib_lat=2us",
                                  "test");
  const auto h = run("hierarchical", rail, make_op(OpKind::allreduce, 16, S));
  CHECK(h.flow == doctest::Approx(h.analytical).epsilon(0.01).scale(0));
}

TEST_CASE("in-network (NVLS) at flow fidelity: the switch is an endpoint; flow = analytical") {
  // 8 GPUs on an NVLS NVSwitch, 450 GB/s and 1 us per GPU<->switch link. NCCL's NVLS kernel:
  // every rank serves its buffer to the switch's reduction (S), receives its share reduced (S/8),
  // stores it (S/8), and receives every share by multicast (S): S (1 + 1/8) over each link
  // direction, at least S (1 + 1/8) / B at flow fidelity (in_network.cpp).
  auto nvls = topo::make_topology("nvswitch_node:n=8,bw=450GB/s,lat=1us,nvls=1", "test");
  const double B = 450e9, alpha = 1e-6;
  for (std::uint32_t C : {1u, 4u, 0u}) {
    for (double S : {64.0 * 1024, 16 * MiB, 256 * MiB}) {
      CostParams p;
      p.chunks = C;
      const auto op = make_op(OpKind::allreduce, 8, S);
      const auto b = run("in-network", nvls, op, p);
      INFO("C = ", C, " S = ", S);
      // A ratio (Approx adds its scale, 1, to the tolerance: it cannot compare seconds). With 4
      // chunks the middle steps' small pieces overlap the big ones less than the closed form's
      // steady state assumes: flow up to 4.5 % slower; 1 chunk (serial) and 16+ within 1 %.
      CHECK(b.flow / b.analytical == doctest::Approx(1.0).epsilon(C == 4 ? 0.045 : 0.01).scale(0));
      CHECK(b.flow >= S * 9 / 8 / B);
      if (C != 0) CHECK(b.flow <= (C + 3) * S * 9 / 8 / (C * B) + (C + 3) * alpha);
      // Pipelined, about S / B per rank against 2(n-1)/n S / B for the ring: the flow model
      // shows the gain (unpipelined, C = 1, up and down take 2 S / B and the ring wins).
      if (S >= 16 * MiB && C != 1) CHECK(b.flow < run("ring", nvls, op, p).flow);
    }
  }
}

TEST_CASE("no algorithm beats the lower bound, analytically or in the flow model") {
  const char* specs[] = {"switch:n=8,bw=100GB/s,lat=1us", "torus:dims=4x4,bw=100GB/s,lat=1us",
                         "bus:n=8,bw=10GB/s,lat=1us", "fat_tree:hosts=8,hosts_per_leaf=4,bw=100GB/s,uplink_bw=100GB/s,lat=1us",
                         "rail_optimized:nodes=2,gpus_per_node=4,nvlink_bw=450GB/s,nvlink_lat=1us,nic_bw=50GB/s,ib_lat=2us",
                         "nvswitch_node:n=8,bw=450GB/s,lat=1us,nvls=1"};
  int checked = 0;
  for (const char* spec : specs) {
    auto t = topo::make_topology(spec, "test");
    const std::size_t n = t.num_devices();
    for (OpKind k : {OpKind::allreduce, OpKind::reducescatter, OpKind::allgather, OpKind::broadcast, OpKind::reduce,
                     OpKind::alltoall}) {
      for (double S : {64.0 * 1024, 16 * MiB}) {
        auto op = make_op(k, n, S);
        const double lb = lower_bound_s(t, op);
        for (const auto& a : algorithms()) {
          auto ops = a->ops();
          if (std::find(ops.begin(), ops.end(), k) == ops.end() || a->unsupported(t, op)) continue;
          INFO(a->name(), " ", to_string(k), " S=", S, " on ", spec);
          CHECK(a->analytical(t, op, {}).time_s >= lb * (1 - 1e-9));
          CHECK(evaluate_flow(t, op, a->build(t, op, {}), {}).time_s >= lb * (1 - 1e-9));
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("a shared bus serialises the ring: flow 2(n-1) S/B, the switch 2(n-1)/n S/B") {
  const double S = 8 * MiB, B = 10e9, lat = 1e-6;
  for (std::size_t n : {4, 8}) {
    const double nn = static_cast<double>(n);
    auto bus = topo::make_topology(fmt::format("bus:n={},bw=10GB/s,lat=1us", n), "test");
    // Each of the 2(n-1) steps puts n flows of S/n on the one medium: S / B, after the
    // medium's latency (the access links have none).
    const auto b = run("ring", bus, make_op(OpKind::allreduce, n, S));
    CHECK(b.flow == doctest::Approx(2 * (nn - 1) * (lat + S / B)).epsilon(1e-6).scale(0));
    // The analytical form does not see the sharing (DESIGN 4): it says 2(n-1)(lat + S/(nB)).
    CHECK(b.analytical == doctest::Approx(2 * (nn - 1) * (lat + S / nn / B)).scale(0));
    auto sw = topo::make_topology(fmt::format("switch:n={},bw=10GB/s,lat=1us", n), "test");
    CHECK(run("ring", sw, make_op(OpKind::allreduce, n, S)).flow ==
          doctest::Approx(2 * (nn - 1) * (2 * lat + S / nn / B)).epsilon(1e-6).scale(0));
  }
}

TEST_CASE("a 4:1 oversubscribed fat-tree slows an inter-leaf ring fourfold") {
  // 2 leaves of 4 hosts, host links 100 GB/s, one 100 GB/s uplink per leaf: 400:100 = 4:1.
  // Ring in the order 0,4,1,5,2,6,3,7: every hop crosses leaves, so each leaf uplink (and
  // each spine downlink) carries the 4 flows of its leaf's hosts: 25 GB/s each. Route:
  // host-leaf-spine-leaf-host, 4 links of 1 us. Flow: 2(n-1)(4 lat + (S/n)/(B/4)).
  auto t = topo::make_topology("fat_tree:hosts=8,hosts_per_leaf=4,bw=100GB/s,uplink_bw=100GB/s,lat=1us", "test");
  const double S = 64 * MiB, B = 100e9, lat = 1e-6;
  auto op = make_op(OpKind::allreduce, 8, S);
  op.group = {0, 4, 1, 5, 2, 6, 3, 7};
  const auto b = run("ring", t, op);
  CHECK(b.flow == doctest::Approx(14 * (4 * lat + S / 8 / (B / 4))).epsilon(1e-6).scale(0));
  CHECK(b.analytical == doctest::Approx(14 * (4 * lat + S / 8 / B)).scale(0));
  // Non-blocking uplinks (4 x 100 GB/s): the same ring runs at full speed.
  auto nb = topo::make_topology("fat_tree:hosts=8,hosts_per_leaf=4,bw=100GB/s,uplink_bw=400GB/s,lat=1us", "test");
  CHECK(run("ring", nb, op).flow == doctest::Approx(14 * (4 * lat + S / 8 / B)).epsilon(1e-6).scale(0));
}

TEST_CASE("torus all-reduce on k x k: both dimensions, both directions, beats the 1-D ring") {
  for (int k : {4, 8}) {
    auto t = topo::make_topology(fmt::format("torus:dims={}x{},bw=100GB/s,lat=1us", k, k), "test");
    const std::size_t n = t.num_devices();
    const double S = 256 * MiB;
    auto op = make_op(OpKind::allreduce, n, S);
    const auto& torus = find_algorithm("torus", op.kind, "test");
    const auto s = torus.build(t, op, {});
    // Directed links carrying bytes: every link of the torus, in both directions: 2 dims x
    // k^2 chips x 2 directions = 4 k^2.
    std::set<topo::LinkId> used;
    for (const auto& st : s.steps) {
      for (const auto& x : st.transfers) {
        for (auto l : detail::route_of(t, op, x).links) used.insert(l);
      }
    }
    CHECK(used.size() == static_cast<std::size_t>(4 * k * k));
    CHECK(t.num_links() == static_cast<std::size_t>(4 * k * k));
    // Per dimension and direction: count the links whose endpoints differ in that digit by +1.
    int per[2][2] = {{0, 0}, {0, 0}};
    for (auto l : used) {
      const auto& lk = t.link(l);
      const auto a = static_cast<int>(lk.src), b = static_cast<int>(lk.dst);
      const int dim = a / k == b / k ? 1 : 0;
      const int da = dim == 0 ? a / k : a % k, db = dim == 0 ? b / k : b % k;
      per[dim][(db - da + k) % k == 1 ? 0 : 1]++;
    }
    CHECK(per[0][0] == k * k);
    CHECK(per[0][1] == k * k);
    CHECK(per[1][0] == k * k);
    CHECK(per[1][1] == k * k);
    // Closed form, hand-derived: 2 [ (k-1)(lat + S/(2k B)) + (k-1)(lat + S/(2k^2 B)) ].
    const double kk = k, B = 100e9, lat = 1e-6;
    const double expect = 2 * ((kk - 1) * (lat + S / (2 * kk) / B) + (kk - 1) * (lat + S / (2 * kk * kk) / B));
    const auto b = run("torus", t, op);
    CHECK(b.analytical == doctest::Approx(expect).scale(0));
    CHECK(b.flow == doctest::Approx(expect).epsilon(0.01).scale(0));
    // The 1-D ring over the same chips (snake order): 2(n-1)(lat + S/(nB)), about 2 S/B,
    // against about S/B for the torus.
    const auto r = run("ring", t, op);
    CHECK(r.flow == doctest::Approx(2 * (static_cast<double>(n) - 1.0) * (lat + S / static_cast<double>(n) / B)).epsilon(0.01).scale(0));
    CHECK(b.flow < 0.6 * r.flow);
  }
}
