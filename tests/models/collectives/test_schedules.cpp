// Schedules: the registry, input errors, and correctness of every algorithm's data movement
// by a symbolic run (which partial sums each rank holds), plus volume conservation.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <numeric>

#include "models/collectives/algorithm.hpp"
#include "plan_check.hpp"
#include "sim/error.hpp"
#include "topologies/load.hpp"

using namespace shardsim;
using namespace shardsim::coll;
using shardsim::coll::test::check_plan;
using shardsim::coll::test::make_op;

namespace {

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

bool has(const Algorithm& a, OpKind k) {
  auto ops = a.ops();
  return std::find(ops.begin(), ops.end(), k) != ops.end();
}

}  // namespace

TEST_CASE("registry: names in order, each described, parameters documented") {
  std::vector<std::string> names;
  for (const auto& a : algorithms()) {
    names.push_back(a->name());
    CHECK_FALSE(a->description().empty());
    CHECK_FALSE(a->ops().empty());
    for (const auto& p : a->params()) {
      CHECK_FALSE(p.key.empty());
      CHECK_FALSE(p.type.empty());
      CHECK_FALSE(p.doc.empty());
    }
  }
  CHECK(names == std::vector<std::string>{"ring", "ring-bidir", "ring-channels", "torus", "hierarchical", "double-binary-tree", "tree-channels", "nvls-tree",
                                          "rabenseifner", "direct", "in-network"});
  // Every op the issue asks for has an algorithm; broadcast and all-to-all at least ring/direct.
  CHECK(&find_algorithm("ring", OpKind::broadcast, "x") != nullptr);
  CHECK(&find_algorithm("direct", OpKind::alltoall, "x") != nullptr);
}

TEST_CASE("find_algorithm: unknown names and ops list the valid ones") {
  CHECK(error_of([] { find_algorithm("rign", OpKind::allreduce, "--algorithm"); }) ==
        "--algorithm: unknown algorithm 'rign' for allreduce; expected one of ring, ring-bidir, ring-channels, torus, "
        "hierarchical, double-binary-tree, tree-channels, nvls-tree, rabenseifner, direct, in-network");
  CHECK(error_of([] { find_algorithm("torus", OpKind::broadcast, "--algorithm"); }) ==
        "--algorithm: algorithm 'torus' does not implement broadcast; expected one of ring, ring-channels, direct");
  CHECK(error_of([] { find_algorithm("ring", OpKind::alltoall, "--algorithm"); }) ==
        "--algorithm: algorithm 'ring' does not implement alltoall; expected one of direct");
  CHECK(find_algorithm("torus", OpKind::reducescatter, "x").name() == "torus");
}

TEST_CASE("validate_op rejects bad groups with exact messages") {
  auto t = topo::make_topology("switch:n=4,bw=100GB/s,lat=1us", "test");
  auto op = make_op(OpKind::allreduce, 4, 1024);
  op.group = {};
  CHECK(error_of([&] { validate_op(t, op); }) == "collective group: an empty group; expected at least one rank");
  op.group = {0, 4};
  CHECK(error_of([&] { validate_op(t, op); }) ==
        "collective group: rank 4; expected ranks 0..3 of topology 'switch:n=4,bw=100GB/s,lat=1us'");
  op.group = {1, 1};
  CHECK(error_of([&] { validate_op(t, op); }) == "collective group: rank 1 twice; expected distinct ranks");
  op.group = {0, 1};
  op.root = 2;
  CHECK(error_of([&] { validate_op(t, op); }) == "collective group: root 2; expected a group index in 0..1");
  // Every entry point validates.
  CHECK(error_of([&] { (void)lower_bound_s(t, op); }) == "collective group: root 2; expected a group index in 0..1");
  CHECK(error_of([&] { (void)algorithms().front()->build(t, op, {}); }) ==
        "collective group: root 2; expected a group index in 0..1");
}

TEST_CASE("unsupported cases give their reason; building them throws it") {
  auto sw = topo::make_topology("switch:n=6,bw=100GB/s,lat=1us", "test");
  auto op = make_op(OpKind::allreduce, 6, 1 << 20);
  CHECK(find_algorithm("rabenseifner", op.kind, "x").unsupported(sw, op) == "n = 6 is not a power of two");
  CHECK(find_algorithm("torus", op.kind, "x").unsupported(sw, op) ==
        "topology 'switch:n=6,bw=100GB/s,lat=1us' is not a torus");
  CHECK(find_algorithm("hierarchical", op.kind, "x").unsupported(sw, op) ==
        "topology 'switch:n=6,bw=100GB/s,lat=1us' has no device groups");
  CHECK(find_algorithm("in-network", op.kind, "x").unsupported(sw, op) ==
        "topology 'switch:n=6,bw=100GB/s,lat=1us' has no switch with in_network_reduction");
  CHECK(error_of([&] { (void)find_algorithm("rabenseifner", op.kind, "x").build(sw, op, {}); }) ==
        "algorithm rabenseifner: n = 6 is not a power of two; expected a power-of-two group");

  auto tor = topo::make_topology("torus:dims=4x4,bw=100GB/s,lat=1us", "test");
  auto part = make_op(OpKind::allreduce, 8, 1 << 20);
  CHECK(find_algorithm("torus", op.kind, "x").unsupported(tor, part) ==
        "torus needs the group to be the whole 4x4 torus (16 ranks), got 8 ranks");
  auto mesh = topo::make_topology("torus:dims=4x4,bw=100GB/s,lat=1us,wrap=1x0", "test");
  CHECK(find_algorithm("torus", op.kind, "x").unsupported(mesh, make_op(OpKind::allreduce, 16, 1)) ==
        "dimension 1 (size 4) has no wraparound, so its rings would reuse links");

  auto nvl = topo::make_topology("nvswitch_node:n=8,bw=450GB/s,lat=1us", "test");
  CHECK(find_algorithm("in-network", op.kind, "x").unsupported(nvl, make_op(OpKind::allreduce, 8, 1)) ==
        "topology 'nvswitch_node:n=8,bw=450GB/s,lat=1us' has no switch with in_network_reduction");
  auto nvls = topo::make_topology("nvswitch_node:n=8,bw=450GB/s,lat=1us,nvls=1", "test");
  CHECK_FALSE(find_algorithm("in-network", op.kind, "x").unsupported(nvls, make_op(OpKind::allreduce, 8, 1)));
}

namespace {

// Runs every algorithm that implements `k` and applies on `t` with group `group`, checks its
// plan; returns how many were checked.
int check_all(const topo::Topology& t, OpKind k, std::vector<int> group, double S) {
  int checked = 0;
  CollectiveOp op = make_op(k, group.size(), S);
  op.group = std::move(group);
  op.root = static_cast<int>(op.group.size() / 2);
  for (const auto& a : algorithms()) {
    if (!has(*a, k) || a->unsupported(t, op)) continue;
    const auto s = a->build(t, op, {});
    const auto plan = a->data_plan(t, op);
    INFO(a->name(), " ", to_string(k), " on ", t.name(), " n=", op.group.size());
    CHECK(check_plan(op, plan, s) == "");
    CHECK(s.ranks == op.group.size());
    ++checked;
  }
  return checked;
}

std::vector<int> iota_group(std::size_t n) {
  std::vector<int> g(n);
  std::iota(g.begin(), g.end(), 0);
  return g;
}

}  // namespace

TEST_CASE("every algorithm delivers the data: symbolic run on switches, tori, clusters") {
  const double S = 1 << 20;
  for (OpKind k : {OpKind::allreduce, OpKind::reducescatter, OpKind::allgather, OpKind::broadcast, OpKind::reduce,
                   OpKind::alltoall, OpKind::sendrecv}) {
    for (std::size_t n : {1, 2, 3, 5, 8, 16}) {
      auto t = topo::make_topology(fmt::format("switch:n={},bw=100GB/s,lat=1us", n), "test");
      CHECK(check_all(t, k, iota_group(n), S) >= 1);
    }
  }
  // Tori: dimension-wise (incl. a dimension of 2 and a 3-D one), ring along the snake.
  for (const char* spec : {"torus:dims=4x4,bw=1GB/s,lat=1us", "torus:dims=3x5,bw=1GB/s,lat=1us",
                           "torus:dims=2x4,bw=1GB/s,lat=1us", "torus:dims=2x3x4,bw=1GB/s,lat=1us",
                           "torus:dims=8,bw=1GB/s,lat=1us"}) {
    auto t = topo::make_topology(spec, "test");
    for (OpKind k : {OpKind::allreduce, OpKind::reducescatter, OpKind::allgather}) {
      CHECK(check_all(t, k, iota_group(t.num_devices()), S) >= 3);  // ring, ring-bidir, torus at least
    }
    // A group in a scrambled order: rank r still ends with segment r.
    auto g = iota_group(t.num_devices());
    std::reverse(g.begin(), g.end());
    std::rotate(g.begin(), g.begin() + 3, g.end());
    CHECK(check_all(t, OpKind::reducescatter, g, S) >= 3);
  }
  // Clusters with device groups: hierarchical over rails.
  auto rail = topo::make_topology("rail_optimized:nodes=4,gpus_per_node=4,nvlink_bw=450GB/s,nvlink_lat=1us,"
                                  "nic_bw=50GB/s,ib_lat=2us",
                                  "test");
  for (OpKind k : {OpKind::allreduce, OpKind::reducescatter, OpKind::allgather}) {
    CHECK(check_all(rail, k, iota_group(16), S) >= 4);
  }
  // Broadcast and reduce per channel (ring-channels), the root in the middle of the group.
  CHECK(check_all(rail, OpKind::broadcast, iota_group(16), S) == 3);  // ring, ring-channels, direct
  CHECK(check_all(rail, OpKind::reduce, iota_group(16), S) == 2);     // ring, ring-channels
  CHECK(check_all(rail, OpKind::allreduce, {0, 1, 4, 5, 8, 9}, S) >= 3);  // 2 GPUs of 3 nodes
  // In-network reduction.
  auto nvls = topo::make_topology("nvswitch_node:n=8,bw=450GB/s,lat=1us,nvls=1", "test");
  CHECK(check_all(nvls, OpKind::allreduce, iota_group(8), S) == 6);  // all but torus, hierarchical
}

TEST_CASE("a faulty plan is caught by the checker") {
  auto t = topo::make_topology("switch:n=4,bw=100GB/s,lat=1us", "test");
  auto op = make_op(OpKind::allreduce, 4, 1024);
  const auto& ring = find_algorithm("ring", op.kind, "x");
  auto s = ring.build(t, op, {});
  auto plan = ring.data_plan(t, op);
  plan.steps.back().front().units = {(plan.steps.back().front().units[0] + 1) % 4};
  CHECK(test::check_plan(op, plan, s) != "");
  auto plan2 = ring.data_plan(t, op);
  plan2.steps.pop_back();
  CHECK(test::check_plan(op, plan2, s) == "schedule has 6 steps, plan 5");
}

TEST_CASE("volumes: ring all-reduce sends 2(n-1)/n S per rank; RS + AG = AR for every algorithm") {
  const double S = 3 * 5 * 7 * 64.0 * 1024;
  for (std::size_t n : {2, 3, 8, 16}) {
    auto t = topo::make_topology(fmt::format("switch:n={},bw=100GB/s,lat=1us", n), "test");
    auto ar = make_op(OpKind::allreduce, n, S);
    const auto s = find_algorithm("ring", ar.kind, "x").build(t, ar, {});
    for (double b : test::sent_per_rank(s)) CHECK(b == doctest::Approx(2.0 * static_cast<double>(n - 1) / static_cast<double>(n) * S).scale(0));
    CHECK(s.total_steps() == 2 * (n - 1));
  }
  for (const char* spec : {"switch:n=8,bw=100GB/s,lat=1us", "torus:dims=4x4,bw=1GB/s,lat=1us",
                           "rail_optimized:nodes=4,gpus_per_node=2,nvlink_bw=450GB/s,nvlink_lat=1us,"
                           "nic_bw=50GB/s,ib_lat=2us"}) {
    auto t = topo::make_topology(spec, "test");
    const std::size_t n = t.num_devices();
    for (const auto& a : algorithms()) {
      auto ar = make_op(OpKind::allreduce, n, S), rs = make_op(OpKind::reducescatter, n, S),
           ag = make_op(OpKind::allgather, n, S);
      if (!has(*a, OpKind::reducescatter) || a->unsupported(t, ar)) continue;
      INFO(a->name(), " on ", spec);
      const double v_ar = a->build(t, ar, {}).total_bytes();
      CHECK(a->build(t, rs, {}).total_bytes() + a->build(t, ag, {}).total_bytes() == doctest::Approx(v_ar).scale(0));
      // Bandwidth-optimal algorithms move exactly 2(n-1)/n S per rank.
      CHECK(v_ar == doctest::Approx(2.0 * static_cast<double>(n - 1) * S).scale(0));
    }
  }
}

TEST_CASE("schedules stay O(n) for 16k ranks (repeat, not unrolled)") {
  auto t = topo::make_topology("torus:dims=128x128,bw=100GB/s,lat=1us", "test");
  auto op = make_op(OpKind::allreduce, 16384, 1 << 30);
  const auto ring = find_algorithm("ring", op.kind, "x").build(t, op, {});
  CHECK(ring.steps.size() == 2);
  CHECK(ring.steps[0].transfers.size() == 16384);
  CHECK(ring.total_steps() == 2 * 16383);
  const auto torus = find_algorithm("torus", op.kind, "x").build(t, op, {});
  CHECK(torus.steps.size() == 4);
  CHECK(torus.total_steps() == 4 * 127);
  CHECK(find_algorithm("direct", op.kind, "x").unsupported(t, op) ==
        "n = 16384 needs 268419072 transfers per step; direct is limited to 1024 ranks");
}
