// Timed faults at flow fidelity (models/step/timed_faults.hpp, issue 16): the collectives in
// flight share one flow network whose capacities change at the fault instant, and a link that
// goes down moves its flows onto the remaining paths. Closed forms by hand:
//  - bus (every flow crosses the one medium, no latency): a ring all-reduce of n ranks is
//    2(n-1) steps of n flows of S/n on the medium, S/B per step (test_concurrent.cpp), so the
//    medium carries a fixed amount of work at its rate whatever the grouping: halving it at t_f
//    turns the W seconds of work left at rate B into 2 (W - t_f);
//  - two planes of different rates: a ring all-reduce of 2 ranks is 2 steps, each a route
//    latency L then S/2 bytes each way; a plane going down mid-step moves both flows to the
//    other plane with the bytes they have left.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "models/step/executor.hpp"
#include "models/step/task_graph.hpp"
#include "models/step/timed_faults.hpp"
#include "models/step/topology_comm.hpp"
#include "sim/error.hpp"
#include "tests/models/step/star8.hpp"
#include "topologies/faults.hpp"
#include "topologies/load.hpp"

using namespace shardsim;

namespace {

// Ends of all-reduces of `bytes` on `groups`, all ready at 0, each on its own stream of its
// ranks, run on comm's concurrent runner.
std::vector<Time> run_together(step::CommModel& comm, const std::vector<std::vector<int>>& groups, std::uint64_t bytes) {
  std::vector<int> all;
  for (const auto& g : groups) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  step::TaskGraph g(all, 2);
  std::vector<step::NodeId> nodes;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto gi = g.add_group({fmt::format("g{}", i), groups[i]});
    // No duration: the runner times every collective (time-varying), checked below.
    nodes.push_back(g.add_collective(gi, 1, coll::OpKind::allreduce, bytes, 0.0, {}, fmt::format("ar{}", i)));
  }
  g.validate(static_cast<std::size_t>(all.back()) + 1);
  sim::Simulator sim;
  auto runner = comm.concurrent_runner();
  REQUIRE(runner);
  CHECK(runner->time_varying());
  step::Executor ex(g, runner.get());
  const auto r = ex.run(sim);
  std::vector<Time> ends;
  for (const auto n : nodes) ends.push_back(r.end[n]);
  return ends;
}

// d0 and d1 on plane A (swA, 1 GB/s) and plane B (swB, 0.5 GB/s), 1 us per link; their links
// to swA first, so intact routes go through swA.
topo::Topology planes() {
  topo::Topology t;
  for (int i = 0; i < 2; ++i) t.add_device(topo::Node{fmt::format("d{}", i), topo::NodeKind::device, {}, {}, false});
  const auto a = t.add_switch(topo::Node{"swA", topo::NodeKind::switch_node, {}, {}, false});
  const auto b = t.add_switch(topo::Node{"swB", topo::NodeKind::switch_node, {}, {}, false});
  for (int i = 0; i < 2; ++i) t.add_duplex(static_cast<topo::NodeId>(i), a, 1e9, 1e-6, topo::LinkClass::ethernet);
  for (int i = 0; i < 2; ++i) t.add_duplex(static_cast<topo::NodeId>(i), b, 0.5e9, 1e-6, topo::LinkClass::ethernet);
  t.set_name("planes");
  return t;
}

constexpr double kPs = 1e-12;

}  // namespace

TEST_CASE("flow fidelity: the medium halved mid-way slows every collective in flight, which keep sharing it") {
  const auto bus = topo::make_topology("bus:n=8,bw=1GB/s,lat=0s", "t");
  const std::uint64_t S = 1 << 20;
  const double B = 1e9, s = static_cast<double>(S);
  const std::string half = "link:medium_in->medium_out:0.5";
  SUBCASE("one collective of 2 ranks: 2 S / B of work; halved at half of it, it ends at T/2 + T") {
    const double T = 2 * s / B;
    step::TimedFaultComm c(bus, "", {{half, T / 2, std::nullopt}}, step::Fidelity::flow, "ring", 2);
    const auto e = run_together(c, {{0, 1}}, S);
    CHECK(std::abs(e[0].to_seconds() - (T / 2 + T)) <= 2 * kPs);  // one picosecond per step
    step::TimedFaultComm none(bus, "", {}, step::Fidelity::flow, "ring", 2);
    CHECK(std::abs(run_together(none, {{0, 1}}, S)[0].to_seconds() - T) <= 2 * kPs);
  }
  SUBCASE("two 4-rank collectives at once: 2 x 6 S / B of work on the medium; halved at t_f") {
    const double W = 2 * 6 * s / B, tf = 0.3 * W;
    step::TimedFaultComm c(bus, "", {{half, tf, std::nullopt}}, step::Fidelity::flow, "ring", 2);
    const auto e = run_together(c, {{0, 1, 2, 3}, {4, 5, 6, 7}}, S);
    const double want = tf + 2 * (W - tf);
    CHECK(std::abs(e[0].to_seconds() - want) <= 6 * kPs);
    CHECK(e[0] == e[1]);
    // The analytical progress rule times each alone by its closed forms, T0 intact and T1
    // with the medium halved: the sharing is what the flow fidelity adds.
    step::TimedFaultComm a(bus, "", {{half, tf, std::nullopt}}, step::Fidelity::analytical, "ring", 2);
    const auto halved = topo::apply_faults(bus, topo::parse_faults(bus, half, "--faults"));
    step::TopologyComm a0(bus, step::Fidelity::analytical, "ring"), a1(halved, step::Fidelity::analytical, "ring");
    const double T0 = a0.time_s(coll::OpKind::allreduce, S, {0, 1, 2, 3});
    const double T1 = a1.time_s(coll::OpKind::allreduce, S, {0, 1, 2, 3});
    const double progress = tf < T0 ? tf + (1 - tf / T0) * T1 : T0;
    CHECK(run_together(a, {{0, 1, 2, 3}, {4, 5, 6, 7}}, S)[0].to_seconds() == doctest::Approx(progress).epsilon(1e-9).scale(0));
    CHECK(progress < want);
  }
}

TEST_CASE("flow fidelity: a plane down mid-step moves the flows to the other plane with the bytes they have left") {
  const auto t = planes();
  const std::uint64_t S = 8 << 20;
  const double s = static_cast<double>(S), L = 2e-6, BA = 1e9, BB = 0.5e9;
  step::TopologyComm intact(t, step::Fidelity::flow, "ring");
  // Two steps of L + (S/2) / BA each.
  REQUIRE(intact.time_s(coll::OpKind::allreduce, S, {0, 1}) == doctest::Approx(2 * (L + s / 2 / BA)).epsilon(1e-9).scale(0));
  // d0-swA down at t_f inside step 1's transfer: both flows of step 1 cross it (d0->swA and
  // swA->d0) and move to plane B. Step 1 ends at t1 = t_f + (S/2 - BA (t_f - L)) / BB; step 2's
  // transfers start on the intact routes' latency L (plane B's is L too) and go round at BB.
  const double tf = L + 0.25 * s / 2 / BA;
  const double t1 = tf + (s / 2 - BA * (tf - L)) / BB;
  const double want = t1 + L + s / 2 / BB;
  step::TimedFaultComm c(t, "", {{"down:d0-swA", tf, std::nullopt}}, step::Fidelity::flow, "ring", 2);
  const auto e = run_together(c, {{0, 1}}, S);
  CHECK(std::abs(e[0].to_seconds() - want) <= 4 * kPs);
  // With the link back up at t1 + L / 2 (before step 2's flows start), step 2 is on plane A.
  step::TimedFaultComm back(t, "", {{"down:d0-swA", tf, t1 + L / 2}}, step::Fidelity::flow, "ring", 2);
  CHECK(std::abs(run_together(back, {{0, 1}}, S)[0].to_seconds() - (t1 + L + s / 2 / BA)) <= 4 * kPs);
  // A collective planned after the fault takes plane B throughout: 2 (L + (S/2) / BB).
  step::TimedFaultComm from0(t, "", {{"down:d0-swA", 0, std::nullopt}}, step::Fidelity::flow, "ring", 2);
  CHECK(std::abs(run_together(from0, {{0, 1}}, S)[0].to_seconds() - 2 * (L + s / 2 / BB)) <= 4 * kPs);
}

TEST_CASE("flow fidelity: a link down with no other path is an error naming the link, the group and the instant") {
  const auto t = test::star8();
  const std::uint64_t S = 64ULL << 20;
  // Ring all-reduce of 0-7: every step, after 2 us of latency, d3 sends S/8 to d4 over d3->sw
  // for 8.4 ms; at 1 ms that flow has no path left.
  step::TimedFaultComm c(t, "", {{"down:d3-sw", 1e-3, std::nullopt}}, step::Fidelity::flow, "ring", 2);
  CHECK_THROWS_WITH_AS(run_together(c, {{0, 1, 2, 3, 4, 5, 6, 7}}, S),
                       "--faults: down:d3-sw disconnects process group 'g0' (ranks 0-7) at 0.001 s: no path between "
                       "d3 and d4 over the links that are up; expected faults that leave every process group connected",
                       ConfigError);
  // A group that does not hold d3 runs through it, at its intact time.
  step::TopologyComm intact(t, step::Fidelity::flow, "ring");
  const auto e = run_together(c, {{4, 5, 6, 7}}, S);
  CHECK(std::abs(e[0].to_seconds() - intact.time_s(coll::OpKind::allreduce, S, {4, 5, 6, 7})) <= kPs);
  // A collective that starts in the cut state: the same error, at its start.
  step::TimedFaultComm from0(t, "", {{"down:d3-sw", 0, std::nullopt}}, step::Fidelity::flow, "ring", 2);
  CHECK_THROWS_WITH_AS(run_together(from0, {{0, 1, 2, 3}}, S),
                       "--faults: down:d3-sw disconnects process group 'g0' (ranks 0-3) at 0 s: no path between "
                       "ranks 0 (d0) and 3 (d3) over the links that are up; expected faults that leave every process "
                       "group connected",
                       ConfigError);
}
