#include <doctest/doctest.h>

#include <map>
#include <span>
#include <utility>
#include <vector>

#include "sim/flow_network.hpp"
#include "sim/simulator.hpp"
#include "flow_fixture.hpp"

using namespace shardsim;
using shardsim::sim::FlowNetwork;
using shardsim::sim::Simulator;

namespace {
using Fixture = shardsim::test::FlowFixture;
}  // namespace

TEST_CASE("one flow alone takes bytes / capacity") {
  Fixture f;
  auto l = f.net.add_link(1e9);
  const std::vector<FlowNetwork::LinkIndex> r{l};
  f.net.start(r, 1e6, 7);
  f.sim.run();
  CHECK(f.done_at.at(7) == doctest::Approx(1e-3).epsilon(1e-9).scale(0));
}

TEST_CASE("two flows share a link fairly; the survivor speeds up") {
  // Flow a: 2 MB, flow b: 1 MB, both on a 1 GB/s link from t=0. Each gets 0.5 GB/s until b
  // ends at 2 ms (1 MB at 0.5 GB/s); a has 1 MB left, alone at 1 GB/s: ends at 3 ms.
  Fixture f;
  auto l = f.net.add_link(1e9);
  const std::vector<FlowNetwork::LinkIndex> r{l};
  f.net.start(r, 2e6, 1);
  f.net.start(r, 1e6, 2);
  f.sim.run();
  CHECK(f.done_at.at(2) == doctest::Approx(2e-3).epsilon(1e-9).scale(0));
  CHECK(f.done_at.at(1) == doctest::Approx(3e-3).epsilon(1e-9).scale(0));
}

TEST_CASE("max-min fairness by progressive filling (Bertsekas-Gallager example)") {
  // Link A cap 1, link B cap 2 (GB/s). f1 on A, f2 on A+B, f3 on B.
  // Filling: A saturates first at share 0.5 -> f1 = f2 = 0.5; B has 1.5 left for f3.
  Fixture f;
  auto a = f.net.add_link(1e9);
  auto b = f.net.add_link(2e9);
  const std::vector<FlowNetwork::LinkIndex> r1{a}, r2{a, b}, r3{b};
  auto f1 = f.net.start(r1, 1e9, 1);
  auto f2 = f.net.start(r2, 1e9, 2);
  auto f3 = f.net.start(r3, 1e9, 3);
  f.sim.run_until(Time::from_ns(1));
  CHECK(f.net.rate(f1) == doctest::Approx(0.5e9).scale(0));
  CHECK(f.net.rate(f2) == doctest::Approx(0.5e9).scale(0));
  CHECK(f.net.rate(f3) == doctest::Approx(1.5e9).scale(0));
}

TEST_CASE("rates are re-solved transitively: freeing link A changes a flow that never used A") {
  // A cap 1, B cap 1. h on A, f on A+B, g on B. Shares: A: h=f=0.5; B: g = 0.5 (f took 0.5).
  // h is tiny and ends first; then f and g split B: 0.5 each -- still 0.5. Make B cap 2:
  // before: f=0.5 (A-bound), g=1.5. After h ends: A alone for f -> f would take 1 but B
  // gives f=g=1. g drops from 1.5 to 1.0 though g shares no link with h.
  Fixture f;
  auto a = f.net.add_link(1e9);
  auto b = f.net.add_link(2e9);
  const std::vector<FlowNetwork::LinkIndex> rh{a}, rf{a, b}, rg{b};
  f.net.start(rh, 0.5e6, 1);  // at 0.5 GB/s: ends at 1 ms
  auto ff = f.net.start(rf, 1e9, 2);
  auto fg = f.net.start(rg, 1e9, 3);
  f.sim.run_until(Time::from_us(500));
  CHECK(f.net.rate(fg) == doctest::Approx(1.5e9).scale(0));
  f.sim.run_until(Time::from_us(1500));
  CHECK(f.done_at.at(1) == doctest::Approx(1e-3).epsilon(1e-9).scale(0));
  CHECK(f.net.rate(ff) == doctest::Approx(1e9).scale(0));
  CHECK(f.net.rate(fg) == doctest::Approx(1e9).scale(0));
}

TEST_CASE("n flows on one shared link take n times longer than one") {
  Fixture f;
  auto l = f.net.add_link(10e9);
  const std::vector<FlowNetwork::LinkIndex> r{l};
  for (std::uint64_t i = 0; i < 16; ++i) f.net.start(r, 1e6, i);
  f.sim.run();
  for (std::uint64_t i = 0; i < 16; ++i) CHECK(f.done_at.at(i) == doctest::Approx(16e6 / 10e9).epsilon(1e-9).scale(0));
  CHECK(f.net.stats().flows_completed == 16);
  CHECK(f.net.active_flows() == 0);
}

TEST_CASE("zero-byte flows and empty routes complete at the current time") {
  Fixture f;
  auto l = f.net.add_link(1e9);
  const std::vector<FlowNetwork::LinkIndex> r{l}, none{};
  f.sim.schedule_at(Time::from_us(3), [&] {
    f.net.start(r, 0, 1);
    f.net.start(none, 1e6, 2);
  });
  f.sim.run();
  CHECK(f.done_at.at(1) == doctest::Approx(3e-6).scale(0));
  CHECK(f.done_at.at(2) == doctest::Approx(3e-6).scale(0));
  CHECK_THROWS_AS(f.net.add_link(0), std::invalid_argument);
  CHECK_THROWS_AS(f.net.add_link(-1), std::invalid_argument);
}

TEST_CASE("flows started from completion callbacks chain correctly") {
  Simulator sim;
  FlowNetwork net(sim);
  auto l = net.add_link(1e9);
  const std::vector<FlowNetwork::LinkIndex> r{l};
  int chained = 0;
  net.set_completion_handler([&](std::uint64_t tag) {
    if (tag < 9) {
      net.start(r, 1e6, tag + 1);
      ++chained;
    }
  });
  net.start(r, 1e6, 0);
  sim.run();
  CHECK(chained == 9);
  CHECK(sim.now().to_seconds() == doctest::Approx(10e-3).epsilon(1e-9).scale(0));
}

TEST_CASE("starting flows as a batch is starting them one by one") {
  // Same flows, same order: same ids, same completion times, same event trace.
  auto run = [](bool batch) {
    Simulator sim;
    sim.enable_fingerprint();
    FlowNetwork net(sim);
    auto a = net.add_link(1e9);
    auto b = net.add_link(2e9);
    const std::vector<FlowNetwork::LinkIndex> r1{a}, r2{a, b}, r3{b}, none{};
    std::vector<std::pair<std::uint64_t, double>> done;
    net.set_batch_completion_handler([&](std::span<const std::uint64_t> tags) {
      for (auto t : tags) done.emplace_back(t, sim.now().to_seconds());
    });
    const std::vector<FlowNetwork::StartRequest> req{{r1, 1e6, 1}, {r2, 2e6, 2}, {r3, 3e6, 3}, {none, 1e6, 4}, {r2, 0, 5}};
    sim.schedule_at(Time::from_us(1), [&] {
      if (batch) {
        net.start(req);
      } else {
        for (const auto& q : req) net.start(q.route, q.bytes, q.tag);
      }
    });
    sim.run();
    return std::make_pair(done, sim.fingerprint());
  };
  const auto one = run(false), all = run(true);
  CHECK(one.first.size() == 5);
  CHECK(one.first == all.first);
  CHECK(one.second == all.second);
}

TEST_CASE("a route naming a link that does not exist is refused before anything starts") {
  Fixture f;
  auto l = f.net.add_link(1e9);
  const std::vector<FlowNetwork::LinkIndex> bad{l, l + 1};
  CHECK_THROWS_AS(f.net.start(bad, 1e6, 1), std::out_of_range);
  CHECK(f.net.active_flows() == 0);
  const std::vector<FlowNetwork::LinkIndex> r{l};
  f.net.start(r, 1e6, 2);
  f.sim.run();
  CHECK(f.done_at.at(2) == doctest::Approx(1e-3).epsilon(1e-9).scale(0));
}

// Clients: one contention system, completions dispatched per client with no extra event.

TEST_CASE("a registered client alone sees exactly what the default client sees") {
  // Same flows through the default client and through an added one: same batches (local
  // tags), same event trace.
  auto run = [](bool own_client) {
    Simulator sim;
    sim.enable_fingerprint();
    FlowNetwork net(sim);
    auto a = net.add_link(1e9);
    auto b = net.add_link(2e9);
    const std::vector<FlowNetwork::LinkIndex> r1{a}, r2{a, b}, r3{b};
    std::vector<std::vector<std::uint64_t>> batches;
    auto h = [&](std::span<const std::uint64_t> tags) { batches.emplace_back(tags.begin(), tags.end()); };
    FlowNetwork::ClientId c = FlowNetwork::kDefaultClient;
    if (own_client) {
      c = net.add_client(h);
    } else {
      net.set_batch_completion_handler(h);
    }
    const std::vector<FlowNetwork::StartRequest> req{{r1, 1e6, 11}, {r2, 1e6, 12}, {r3, 3e6, 13}, {r1, 0, 14}};
    net.start(c, req);
    sim.schedule_at(Time::from_us(100), [&] { net.start(c, r2, 5e5, 15); });
    sim.run();
    return std::make_tuple(batches, sim.fingerprint(), sim.event_count());
  };
  const auto def = run(false), own = run(true);
  CHECK(std::get<0>(def).size() >= 3);
  CHECK(std::get<0>(def) == std::get<0>(own));
  CHECK(std::get<1>(def) == std::get<1>(own));
  CHECK(std::get<2>(def) == std::get<2>(own));
}

TEST_CASE("clients share links max-min and each gets its own completions, once per instant") {
  // Clients A and B each put one 1 MB flow on a 1 GB/s link: 0.5 GB/s each, both end at 2 ms,
  // in one timer event. A's and B's handlers are each called once, with their own tags.
  Simulator sim;
  FlowNetwork net(sim);
  auto l = net.add_link(1e9);
  const std::vector<FlowNetwork::LinkIndex> r{l};
  std::vector<std::pair<char, std::vector<std::uint64_t>>> calls;
  std::vector<double> when;
  const auto ca = net.add_client([&](std::span<const std::uint64_t> tags) {
    calls.emplace_back('A', std::vector<std::uint64_t>(tags.begin(), tags.end()));
    when.push_back(sim.now().to_seconds());
  });
  const auto cb = net.add_client([&](std::span<const std::uint64_t> tags) {
    calls.emplace_back('B', std::vector<std::uint64_t>(tags.begin(), tags.end()));
    when.push_back(sim.now().to_seconds());
  });
  CHECK(ca != cb);
  CHECK(net.client_count() == 3);
  std::vector<std::uint64_t> flow_tags;
  net.on_flow_done.connect([&](std::uint64_t tag, Time, Time, double) { flow_tags.push_back(tag); });
  net.start(cb, r, 1e6, 7);  // B's flow gets the lower flow id: it completes first
  net.start(ca, r, 1e6, 7);  // same local tag, other client
  net.start(ca, r, 0, FlowNetwork::kMaxTag);
  sim.run();
  REQUIRE(calls.size() == 3);
  // The zero-byte flow completes at the settle, alone; then one batch per client, B first
  // (its completion comes first in flow-id order).
  CHECK(calls[0] == std::make_pair('A', std::vector<std::uint64_t>{FlowNetwork::kMaxTag}));
  CHECK(calls[1] == std::make_pair('B', std::vector<std::uint64_t>{7}));
  CHECK(calls[2] == std::make_pair('A', std::vector<std::uint64_t>{7}));
  CHECK(when[1] == doctest::Approx(2e-3).epsilon(1e-9).scale(0));
  CHECK(when[2] == when[1]);
  // The signal carries network tags: client in the high bits.
  REQUIRE(flow_tags.size() == 3);
  CHECK(FlowNetwork::client_of(flow_tags[1]) == cb);
  CHECK(FlowNetwork::tag_of(flow_tags[1]) == 7);
  CHECK(FlowNetwork::client_of(flow_tags[2]) == ca);
}

TEST_CASE("a removed client's flows keep their share, their completions are dropped, its id comes back after") {
  // A: 2 MB, B: 1 MB on a 1 GB/s link. B is removed at 1 ms; its flow still shares the link
  // until it ends at 2 ms, so A still ends at 3 ms (as in the two-flow case above).
  Simulator sim;
  FlowNetwork net(sim);
  auto l = net.add_link(1e9);
  const std::vector<FlowNetwork::LinkIndex> r{l};
  double a_done = 0;
  int b_calls = 0;
  const auto ca = net.add_client([&](std::span<const std::uint64_t>) { a_done = sim.now().to_seconds(); });
  const auto cb = net.add_client([&](std::span<const std::uint64_t>) { ++b_calls; });
  net.start(ca, r, 2e6, 1);
  net.start(cb, r, 1e6, 2);
  sim.schedule_at(Time::from_ms(1), [&] {
    net.remove_client(cb);
    CHECK(net.client_count() == 2);
    // Not reusable while its flow is in flight.
    const auto c = net.add_client(nullptr);
    CHECK(c != cb);
    net.remove_client(c);
  });
  sim.run();
  CHECK(b_calls == 0);
  CHECK(a_done == doctest::Approx(3e-3).epsilon(1e-9).scale(0));
  const auto again = net.add_client(nullptr);
  CHECK(again == cb);  // freed last (when its flow ended), reused first
  CHECK(net.client_count() == 3);
}

TEST_CASE("a client may remove itself inside its handler") {
  Simulator sim;
  FlowNetwork net(sim);
  auto l = net.add_link(1e9);
  const std::vector<FlowNetwork::LinkIndex> r{l};
  int calls = 0;
  FlowNetwork::ClientId self = 0;
  self = net.add_client([&](std::span<const std::uint64_t> tags) {
    ++calls;
    CHECK(tags.size() == 2);
    net.remove_client(self);
  });
  net.start(self, r, 1e6, 1);
  net.start(self, r, 1e6, 2);
  sim.run();
  CHECK(calls == 1);
  CHECK(net.client_count() == 1);
  CHECK_THROWS_AS(net.start(self, r, 1e6, 3), std::out_of_range);
}

TEST_CASE("bad client calls are refused") {
  Simulator sim;
  FlowNetwork net(sim);
  auto l = net.add_link(1e9);
  const std::vector<FlowNetwork::LinkIndex> r{l};
  CHECK_THROWS_WITH_AS(net.start(5, r, 1e6, 1), "flow network: client 5 is not registered", std::out_of_range);
  CHECK_THROWS_WITH_AS(net.remove_client(FlowNetwork::kDefaultClient),
                       "flow network: the default client cannot be removed", std::out_of_range);
  CHECK_THROWS_AS(net.start(r, 1e6, FlowNetwork::kMaxTag + 1), std::out_of_range);
  CHECK(net.active_flows() == 0);
}
