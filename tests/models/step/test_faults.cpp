// Link and NIC faults (topologies/faults.hpp, issue 16): a link at half rate changes exactly
// the collectives that cross it, routes re-form around a down link, and a fault that cuts a
// process group is an error naming the link and the group.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "models/step/step.hpp"
#include "models/step/topology_comm.hpp"
#include "sim/error.hpp"
#include "tests/models/step/star8.hpp"
#include "tests/models/step/toy_device.hpp"
#include "tests/models/step/units_workload.hpp"
#include "topologies/faults.hpp"
#include "topologies/topology.hpp"

using namespace shardsim;

namespace {

using test::star8;

// 4 devices, each on two switches swA and swB (its links to swA first, so intact routes go
// through swA), 1 GB/s and 1 us per link.
topo::Topology two_planes() {
  topo::Topology t;
  for (int i = 0; i < 4; ++i) t.add_device(topo::Node{fmt::format("d{}", i), topo::NodeKind::device, {}, {}, false});
  const auto a = t.add_switch(topo::Node{"swA", topo::NodeKind::switch_node, {}, {}, false});
  const auto b = t.add_switch(topo::Node{"swB", topo::NodeKind::switch_node, {}, {}, false});
  for (int i = 0; i < 4; ++i) t.add_duplex(static_cast<topo::NodeId>(i), a, 1e9, 1e-6, topo::LinkClass::ethernet);
  for (int i = 0; i < 4; ++i) t.add_duplex(static_cast<topo::NodeId>(i), b, 1e9, 1e-6, topo::LinkClass::ethernet);
  t.set_name("two-planes");
  return t;
}

std::vector<int> ranks(int from, int to) {
  std::vector<int> g;
  for (int i = from; i <= to; ++i) g.push_back(i);
  return g;
}

}  // namespace

TEST_CASE("a link at half rate changes exactly the collectives that cross it") {
  const auto t = star8();
  const auto f = topo::apply_faults(t, topo::parse_faults(t, "link:d3-sw:0.5", "--faults"));
  CHECK(f.link(2 * 3).bandwidth_Bps == 0.5e9);      // d3->sw
  CHECK(f.link(2 * 3 + 1).bandwidth_Bps == 0.5e9);  // sw->d3
  CHECK(f.link(2 * 4).bandwidth_Bps == 1e9);
  const std::uint64_t S = 64ULL << 20;
  for (const auto fid : {step::Fidelity::analytical, step::Fidelity::flow}) {
    CAPTURE(static_cast<int>(fid));
    step::TopologyComm intact(t, fid, "ring"), faulty(f, fid, "ring");
    // A ring all-reduce of n ranks moves 2 (n-1)/n S over its slowest link, one chunk of S/n
    // per step: at half rate on that link its bandwidth term doubles, its latency term stays
    // (Patarasuk and Yuan 2009; DESIGN 2). Groups that do not hold d3 do not cross d3-sw.
    for (const auto& [g, crosses] : {std::pair{ranks(0, 3), true}, std::pair{ranks(4, 7), false},
                                     std::pair{ranks(0, 7), true}, std::pair{ranks(0, 2), false}}) {
      const std::size_t g_size = g.size();  // a copy: clang 14 cannot capture a binding in CAPTURE
      const int g_front = g.front();
      CAPTURE(g_size);
      CAPTURE(g_front);
      const double n = static_cast<double>(g.size());
      const double tb = intact.time_s(coll::OpKind::allreduce, S, g);
      const double tf = faulty.time_s(coll::OpKind::allreduce, S, g);
      if (crosses) {
        const double extra = 2 * (n - 1) / n * static_cast<double>(S) * (1 / 0.5e9 - 1 / 1e9);
        CHECK(tf - tb == doctest::Approx(extra).epsilon(1e-6).scale(0));
      } else {
        CHECK(tf == tb);
      }
    }
  }
}

TEST_CASE("a half-rate link in one sharding subgroup slows that subgroup's collectives only, and unfolds the step") {
  const auto t = star8();
  const auto f = topo::apply_faults(t, topo::parse_faults(t, "link:d3-sw:0.5", "--faults"));
  const auto w = test::units_workload("one-unit", 1e9, 1 << 20, {100});
  step::StepConfig c;
  c.strategy = step::Strategy::sharded;
  c.optimizer = &opt::find_optimizer("sgd", "t");
  c.dp = 8;
  c.shard_group = 4;
  step::TopologyComm ci(t, step::Fidelity::analytical, "ring"), cf(f, step::Fidelity::analytical, "ring");
  const auto ri = step::simulate_step(w, test::toy_device(), c, ci);
  const auto rf = step::simulate_step(w, test::toy_device(), c, cf);
  CHECK(ri.ranks_simulated == 1);
  CHECK(rf.ranks_simulated == 8);
  // Rank 5's groups (shard subgroup {4-7}, cross-subgroup pair {1, 5}) do not cross d3-sw:
  // its collectives take exactly their intact time. Rank 7's cross pair {3, 7} and rank 0's
  // subgroup {0-3} do cross it, and take longer.
  CHECK(rf.per_rank[5].comm_s == ri.per_rank[0].comm_s);
  CHECK(rf.per_rank[7].comm_s > ri.per_rank[0].comm_s);
  CHECK(rf.per_rank[0].comm_s > ri.per_rank[0].comm_s);
  CHECK(rf.step_time_s > ri.step_time_s);
}

TEST_CASE("routes re-form around a down link over the remaining paths") {
  const auto t = two_planes();
  const auto f = topo::apply_faults(t, topo::parse_faults(t, "down:d0-swA", "--faults"));
  // Intact: d0 -> swA -> d1 (links 0 and 3); with d0-swA down: d0 -> swB -> d1.
  const auto& intact = t.rank_route(0, 1);
  REQUIRE(intact.links.size() == 2);
  CHECK(t.link(intact.links[0]).dst == 4);  // swA
  const auto& r = f.rank_route(0, 1);
  REQUIRE(r.links.size() == 2);
  CHECK(f.link(r.links[0]).dst == 5);  // swB
  CHECK(f.link(r.links[1]).dst == 1);
  // Pairs that did not use the link keep their route.
  CHECK(f.rank_route(1, 2).links == t.rank_route(1, 2).links);
  // Same bandwidth, same hops: a ring takes the intact time, at both fidelities.
  for (const auto fid : {step::Fidelity::analytical, step::Fidelity::flow}) {
    step::TopologyComm ci(t, fid, "ring"), cf(f, fid, "ring");
    CHECK(cf.time_s(coll::OpKind::allreduce, 1 << 24, ranks(0, 3)) ==
          doctest::Approx(ci.time_s(coll::OpKind::allreduce, 1 << 24, ranks(0, 3))).epsilon(1e-12).scale(0));
  }
  // Both planes cut at d0: no path left.
  const auto cut = topo::apply_faults(t, topo::parse_faults(t, "down:d0-swA;down:d0->swB", "--faults"));
  CHECK_THROWS_WITH_AS(static_cast<void>(cut.rank_route(0, 1)),
                       "--faults: down:d0-swA disconnects d0 and d1; expected faults that leave a path between them",
                       topo::RouteCutError);
  CHECK(cut.rank_route(1, 0).links.size() == 2);  // d0 can still receive over swB
}

TEST_CASE("a fault that disconnects a process group is an error naming the link and the group") {
  const auto t = star8();
  const auto f = topo::apply_faults(t, topo::parse_faults(t, "link:d1-sw:0.5;down:d3-sw", "--faults"));
  const auto w = test::units_workload("one-unit", 1e9, 1000, {100});
  step::StepConfig c;
  c.optimizer = &opt::find_optimizer("sgd", "t");
  c.dp = 8;
  for (const auto fid : {step::Fidelity::analytical, step::Fidelity::flow}) {
    step::TopologyComm comm(f, fid, "ring");
    CHECK_THROWS_WITH_AS(step::simulate_step(w, test::toy_device(), c, comm),
                         "--faults: down:d3-sw disconnects process group 'dp 0' (ranks 0-7): no path between ranks 0 "
                         "(d0) and 3 (d3) over the links that are up; expected faults that leave every process group "
                         "connected",
                         ConfigError);
  }
  // A group without d3 is not cut.
  c.dp = 3;
  step::TopologyComm comm(f, step::Fidelity::analytical, "ring");
  CHECK(step::simulate_step(w, test::toy_device(), c, comm).step_time_s > 0);
}

TEST_CASE("fault specs: bad items are clear errors") {
  const auto t = star8();
  auto err = [&](const std::string& spec) {
    try {
      topo::parse_faults(t, spec, "--faults");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(err("link:d3-sw:0") == "--faults: fraction '0' in 'link:d3-sw:0'; expected a fraction of the rate in (0, 1] "
                               "(down:NAME takes a link down)");
  CHECK(err("link:d3-d4:0.5") == "--faults: no link between 'd3' and 'd4' in 'link:d3-d4:0.5'; expected two nodes "
                                 "joined by a link (shardsim topo show --dot lists them)");
  CHECK(err("down:d9-sw") == "--faults: 'd9-sw' in 'down:d9-sw' is not A-B or A->B of two nodes of the topology; "
                             "expected a link named by its two node names (shardsim topo show --dot lists them)");
  CHECK(err("cut:d3-sw") == "--faults: 'cut:d3-sw'; expected link:A-B:FRACTION, nic:DEVICE:FRACTION, down:A-B or "
                            "down:nic:DEVICE, separated by ';'");
  CHECK(err("nic:sw:0.5") == "--faults: 'sw' in 'nic:sw:0.5' is not a device of the topology; expected a device name "
                             "(shardsim topo show --dot lists them)");
  // A NIC: every network link of the device, both ways.
  const auto fs = topo::parse_faults(t, "nic:d2:0.25;down:d5->sw", "--faults");
  REQUIRE(fs.faults.size() == 2);
  CHECK(fs.faults[0].links == std::vector<topo::LinkId>{4, 5});
  CHECK(fs.faults[1].links == std::vector<topo::LinkId>{10});
  CHECK(fs.any_down());
  const auto f = topo::apply_faults(t, fs);
  CHECK(f.link(4).bandwidth_Bps == 0.25e9);
  CHECK(topo::faults_of(f) != nullptr);
  CHECK(topo::faults_of(t) == nullptr);
  CHECK(f.config().at("faults") == "nic:d2:0.25;down:d5->sw");
}
