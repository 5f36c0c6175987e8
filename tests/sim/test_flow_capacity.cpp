// Capacity changes at the current time (sim/flow_network.hpp, issue 16's faults in time):
// closed forms by hand of a flow re-rated mid-way, max-min re-solved for two flows, a flow
// moved off a down link onto a second path, and the errors.
#include <doctest/doctest.h>

#include <map>
#include <stdexcept>
#include <vector>

#include "sim/flow_network.hpp"
#include "sim/simulator.hpp"
#include "flow_fixture.hpp"

using namespace shardsim;
using shardsim::sim::FlowNetwork;
using shardsim::sim::Simulator;

namespace {
using Fixture = shardsim::test::FlowFixture;
using Route = std::vector<FlowNetwork::LinkIndex>;
}  // namespace

TEST_CASE("a flow whose only link halves at T/2 ends at T/2 + T") {
  // B bytes at C: T = B / C. At T/2 half the bytes are left; at C/2 they take T.
  const double C = 1e9, B = 1e6, T = B / C;
  for (const bool change : {true, false}) {
    Fixture f;
    const auto l = f.net.add_link(C);
    f.net.start(Route{l}, B, 1);
    if (change) f.sim.schedule_at(Time::from_seconds(T / 2), [&] { f.net.set_capacity(l, C / 2); });
    f.sim.run();
    CHECK(f.done_at.at(1) == doctest::Approx(change ? T / 2 + T : T).epsilon(1e-9).scale(0));
    CHECK(f.net.capacity(l) == (change ? C / 2 : C));
  }
}

TEST_CASE("two flows sharing a link, the other link of one of them cut mid-way: max-min re-solved") {
  // Link A (cA) carries f1 and f2, link B (cB) carries f2 too. cB >= cA / 2: A is the
  // bottleneck, both at r = cA / 2. At t1 B drops to cB2 < cA / 2: progressive filling
  // freezes f2 at cB2 on B, f1 takes the rest of A, cA - cB2. f1 ends at
  // e1 = t1 + (b - r t1) / (cA - cB2); f2 has b - r t1 - cB2 (e1 - t1) left, then alone on A
  // and B at min(cA, cB2) = cB2.
  const double cA = 2e9, cB = 2e9, cB2 = 0.5e9, b = 4e6, t1 = 1e-3;
  const double r = cA / 2;
  const double e1 = t1 + (b - r * t1) / (cA - cB2);
  const double e2 = e1 + (b - r * t1 - cB2 * (e1 - t1)) / cB2;
  Fixture f;
  const auto a = f.net.add_link(cA), bl = f.net.add_link(cB);
  const auto f1 = f.net.start(Route{a}, b, 1);
  const auto f2 = f.net.start(Route{a, bl}, b, 2);
  f.sim.run_until(Time::from_seconds(t1));
  CHECK(f.net.rate(f1) == doctest::Approx(r).scale(0));
  f.net.set_capacity(bl, cB2);
  f.sim.run_until(Time::from_seconds(t1) + Time::from_ps(1));
  CHECK(f.net.rate(f1) == doctest::Approx(cA - cB2).scale(0));
  CHECK(f.net.rate(f2) == doctest::Approx(cB2).scale(0));
  f.sim.run();
  CHECK(f.done_at.at(1) == doctest::Approx(e1).epsilon(1e-9).scale(0));
  CHECK(f.done_at.at(2) == doctest::Approx(e2).epsilon(1e-9).scale(0));
  // Unchanged, both would end at b / r: the re-solve moved both ends.
  CHECK(e1 < b / r);
  CHECK(e2 > b / r);
}

TEST_CASE("a link down mid-flow: the flow finishes on the second path the rerouter gives") {
  // Path 1: L0 (C). Path 2: L1 then L2 (C1, C2). B bytes from 0 on L0; L0 down at t1: the
  // B - C t1 bytes left go at min(C1, C2): end t1 + (B - C t1) / min(C1, C2).
  const double C = 1e9, C1 = 0.4e9, C2 = 0.8e9, B = 2e6, t1 = 0.5e-3;
  Fixture f;
  const auto l0 = f.net.add_link(C), l1 = f.net.add_link(C1), l2 = f.net.add_link(C2);
  std::vector<std::pair<Route, std::uint64_t>> asked;
  f.net.set_rerouter([&](std::span<const FlowNetwork::LinkIndex> route, std::uint64_t tag, std::vector<FlowNetwork::LinkIndex>& out) {
    asked.emplace_back(Route(route.begin(), route.end()), tag);
    out = {l1, l2};
  });
  f.net.start(Route{l0}, B, 1);
  f.sim.schedule_at(Time::from_seconds(t1), [&] { f.net.set_capacity(l0, 0); });
  f.sim.run();
  const double end = t1 + (B - C * t1) / std::min(C1, C2);
  CHECK(f.done_at.at(1) == doctest::Approx(end).epsilon(1e-9).scale(0));
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].first == Route{l0});
  CHECK(FlowNetwork::tag_of(asked[0].second) == 1);
  CHECK(f.net.stats().flows_rerouted == 1);
  CHECK(f.net.down_links() == 1);

  SUBCASE("a start across a down link is rerouted; a link back up is used again") {
    const double s = f.sim.now().to_seconds();
    f.net.start(Route{l0}, B, 2);
    f.sim.run();
    CHECK(f.done_at.at(2) - s == doctest::Approx(B / std::min(C1, C2)).epsilon(1e-9).scale(0));
    CHECK(asked.size() == 2);
    f.net.set_capacity(l0, C);
    CHECK(f.net.down_links() == 0);
    const double s3 = f.sim.now().to_seconds();
    f.net.start(Route{l0}, B, 3);
    f.sim.run();
    CHECK(f.done_at.at(3) - s3 == doctest::Approx(B / C).epsilon(1e-9).scale(0));
    CHECK(asked.size() == 2);
  }
}

TEST_CASE("a link down with flows moves them in its list order, sharing what they land on") {
  // Two flows of B on L0 (C each at C/2), down at t1: both move to L1 (C1), sharing it:
  // each has B - C t1 / 2 left at C1 / 2, ending together.
  const double C = 1e9, C1 = 0.5e9, B = 1e6, t1 = 0.4e-3;
  Fixture f;
  const auto l0 = f.net.add_link(C), l1 = f.net.add_link(C1);
  std::vector<std::uint64_t> order;
  f.net.set_rerouter([&](std::span<const FlowNetwork::LinkIndex>, std::uint64_t tag, std::vector<FlowNetwork::LinkIndex>& out) {
    order.push_back(FlowNetwork::tag_of(tag));
    out = {l1};
  });
  f.net.start(Route{l0}, B, 1);
  f.net.start(Route{l0}, B, 2);
  f.sim.schedule_at(Time::from_seconds(t1), [&] { f.net.set_capacity(l0, 0); });
  f.sim.run();
  const double end = t1 + (B - C / 2 * t1) / (C1 / 2);
  CHECK(f.done_at.at(1) == doctest::Approx(end).epsilon(1e-9).scale(0));
  CHECK(f.done_at.at(2) == doctest::Approx(end).epsilon(1e-9).scale(0));
  CHECK(order == std::vector<std::uint64_t>{1, 2});
}

TEST_CASE("capacity changes: bad calls and a link down with nowhere to go are errors") {
  Fixture f;
  const auto l0 = f.net.add_link(1e9);
  CHECK_THROWS_AS(f.net.set_capacity(5, 1e9), std::out_of_range);
  f.net.add_link(1e9);
  CHECK_THROWS_AS(f.net.set_capacity(l0, -1), std::invalid_argument);
  f.net.start(Route{l0}, 1e6, 1);
  f.sim.run_until(Time::from_ns(10));
  CHECK_THROWS_WITH_AS(f.net.set_capacity(l0, 0), "flow network: link 0 down with 1 flows on it and no rerouter",
                       std::logic_error);
  CHECK(f.net.down_links() == 0);  // refused before anything changed
  f.net.set_rerouter([&](std::span<const FlowNetwork::LinkIndex>, std::uint64_t, std::vector<FlowNetwork::LinkIndex>& out) {
    out = {l0};  // back onto the link that is going down
  });
  CHECK_THROWS_WITH_AS(f.net.set_capacity(l0, 0), "flow network: the rerouter gave flow (tag 1) link 0, which is down",
                       std::logic_error);
  // Whatever the rerouter throws (no path left) passes through.
  Fixture g;
  const auto m0 = g.net.add_link(1e9);
  g.net.add_link(1e9);
  g.net.set_rerouter([](std::span<const FlowNetwork::LinkIndex>, std::uint64_t, std::vector<FlowNetwork::LinkIndex>&) {
    throw std::runtime_error("no path");
  });
  g.net.start(Route{m0}, 1e6, 1);
  g.sim.run_until(Time::from_ns(10));
  CHECK_THROWS_WITH_AS(g.net.set_capacity(m0, 0), "no path", std::runtime_error);
}
