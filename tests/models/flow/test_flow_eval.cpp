// The flow evaluator on hand-built topologies and schedules, against closed forms derived
// here (independent of the algorithm library).
#include <doctest/doctest.h>

#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "models/collectives/flow_eval.hpp"

using namespace shardsim;
using namespace shardsim::coll;

namespace {

topo::Node named(std::string name) {
  topo::Node n;
  n.name = std::move(name);
  return n;
}

// n devices in a bidirectional ring, each link bw/lat.
topo::Topology ring_topology(int n, double bw, double lat) {
  topo::Topology t;
  for (int i = 0; i < n; ++i) t.add_device(named("d" + std::to_string(i)));
  for (int i = 0; i < n; ++i) t.add_duplex(static_cast<topo::NodeId>(i), static_cast<topo::NodeId>((i + 1) % n), bw, lat, topo::LinkClass::ici);
  return t;
}

// n devices on one shared medium of capacity bw: device -> hub_in (fast) -> hub_out (bw) -> device.
topo::Topology bus_topology(int n, double bw, double lat) {
  topo::Topology t;
  for (int i = 0; i < n; ++i) t.add_device(named("d" + std::to_string(i)));
  auto in = t.add_switch(named("in"));
  auto out = t.add_switch(named("out"));
  t.add_link(in, out, bw, lat, topo::LinkClass::ethernet);
  for (int i = 0; i < n; ++i) {
    t.add_link(static_cast<topo::NodeId>(i), in, 1e15, 0, topo::LinkClass::ethernet);
    t.add_link(out, static_cast<topo::NodeId>(i), 1e15, 0, topo::LinkClass::ethernet);
  }
  return t;
}

CollectiveOp op_for(int n, double S) {
  CollectiveOp op;
  op.size_bytes = static_cast<std::uint64_t>(S);
  op.group.resize(static_cast<std::size_t>(n));
  std::iota(op.group.begin(), op.group.end(), 0);
  return op;
}

// A hand-written schedule of the given steps over `ranks` ranks.
Schedule schedule_of(std::size_t ranks, std::string algorithm, std::vector<Step> steps) {
  Schedule s;
  s.ranks = ranks;
  s.algorithm = std::move(algorithm);
  s.steps = std::move(steps);
  return s;
}

// Ring all-reduce: 2(n-1) identical steps, each rank sends S/n to its right neighbour.
Schedule ring_allreduce(int n, double S, double reduce_bytes_per_step) {
  Schedule s;
  s.algorithm = "test-ring";
  s.ranks = static_cast<std::size_t>(n);
  Step st;
  for (int i = 0; i < n; ++i) st.transfers.push_back({static_cast<std::uint32_t>(i), static_cast<std::uint32_t>((i + 1) % n), S / n});
  st.repeat = static_cast<std::uint32_t>(n - 1);
  st.reduce_bytes = reduce_bytes_per_step;
  s.steps.push_back(st);
  st.reduce_bytes = 0;
  s.steps.push_back(st);
  return s;
}

}  // namespace

TEST_CASE("ring all-reduce on a contention-free ring: 2(n-1)(alpha + S/(nB))") {
  for (int n : {2, 4, 8, 16, 64}) {
    const double bw = 100e9, lat = 1e-6, S = 64.0 * (1 << 20);
    auto t = ring_topology(n, bw, lat);
    auto op = op_for(n, S);
    auto r = evaluate_flow(t, op, ring_allreduce(n, S, 0), {});
    const double expected = 2.0 * (n - 1) * (lat + S / n / bw);
    CHECK(r.time_s == doctest::Approx(expected).epsilon(1e-6).scale(0));
    CHECK(r.transfers == static_cast<std::uint64_t>(2 * (n - 1) * n));
  }
}

TEST_CASE("reduction time is charged to the receiving rank after each step") {
  const int n = 4;
  const double bw = 10e9, S = 4e6, gamma_Bps = 5e9;
  auto t = ring_topology(n, bw, 0);
  auto op = op_for(n, S);
  FlowOptions o;
  o.cost.reduce_Bps = gamma_Bps;
  auto r = evaluate_flow(t, op, ring_allreduce(n, S, S / n), o);
  // (n-1) reduce-scatter steps pay S/n/gamma each; the all-gather steps do not.
  const double expected = 2.0 * (n - 1) * (S / n / bw) + (n - 1) * (S / n / gamma_Bps);
  CHECK(r.time_s == doctest::Approx(expected).epsilon(1e-6).scale(0));
}

TEST_CASE("a shared bus serialises the ring: 2(n-1) S / B, not 2(n-1)/n S / B") {
  const int n = 8;
  const double bw = 1e9, S = 8e6;
  auto t = bus_topology(n, bw, 0);
  auto op = op_for(n, S);
  auto r = evaluate_flow(t, op, ring_allreduce(n, S, 0), {});
  CHECK(r.time_s == doctest::Approx(2.0 * (n - 1) * S / bw).epsilon(1e-6).scale(0));
}

TEST_CASE("chunks pipeline a broadcast chain: (n-1 + C-1)(alpha + S/(C B))") {
  const int n = 6;
  const double bw = 10e9, lat = 2e-6, S = 6e6;
  auto t = ring_topology(n, bw, lat);
  auto op = op_for(n, S);
  for (std::uint32_t C : {1u, 4u, 16u}) {
    Schedule s;
    s.ranks = n;
    s.chunks = C;
    s.algorithm = "chain";
    for (int k = 0; k + 1 < n; ++k) {
      Step st;
      st.transfers.push_back({static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(k + 1), S});
      s.steps.push_back(st);
    }
    auto r = evaluate_flow(t, op, s, {});
    const double expected = (n - 1 + C - 1) * (lat + S / C / bw);
    CHECK(r.time_s == doctest::Approx(expected).epsilon(1e-6).scale(0));
  }
}

TEST_CASE("a receiver that lags still credits early arrivals to the right step") {
  // Step 0: 0 -> 1 (small) and 1 -> 2 (big). Step 1: 0 -> 1 again. Rank 1 is busy sending
  // the big transfer when rank 0's step-1 transfer arrives; it must count it for step 1.
  auto t = ring_topology(3, 1e9, 0);
  auto op = op_for(3, 0);
  Step a;
  a.transfers = {{0, 1, 1e3}, {1, 2, 1e6}};
  Step b;
  b.transfers = {{0, 1, 1e3}, {1, 2, 1e3}};
  const Schedule s = schedule_of(3, "lag", {a, b});
  auto r = evaluate_flow(t, op, s, {});
  // Rank 1 finishes step 0 at 1 ms (big send), then sends 1 KB: 1.001 ms.
  CHECK(r.time_s == doctest::Approx(1e-3 + 1e-6).epsilon(1e-6).scale(0));
}

TEST_CASE("a receiver that lags several steps keeps every early arrival") {
  // Step 0: 1 -> 2 (1 MB, 1 ms). Steps 1..5: 0 -> 1 (1 KB, 1 us each). Rank 0 is not in
  // step 0 and runs steps 1..5 back to back while rank 1 is still sending; rank 1 counts the
  // five arrivals for steps 1..5 (up to four steps ahead of its next one) and passes through
  // them at 1 ms.
  auto t = ring_topology(3, 1e9, 0);
  auto op = op_for(3, 0);
  Step a;
  a.transfers = {{1, 2, 1e6}};
  Step b;
  b.transfers = {{0, 1, 1e3}};
  b.repeat = 5;
  const Schedule s = schedule_of(3, "lag5", {a, b});
  std::vector<double> ends;
  FlowOptions o;
  o.on_transfer = [&](const TransferRecord& r) { ends.push_back(r.end.to_seconds()); };
  auto r = evaluate_flow(t, op, s, o);
  CHECK(r.transfers == 6);
  REQUIRE(ends.size() == 6);
  for (int i = 0; i < 5; ++i) CHECK(ends[static_cast<std::size_t>(i)] == doctest::Approx((i + 1) * 1e-6).epsilon(1e-6).scale(0));
  CHECK(ends[5] == doctest::Approx(1e-3).epsilon(1e-6).scale(0));
  CHECK(r.time_s == doctest::Approx(1e-3).epsilon(1e-6).scale(0));
}

TEST_CASE("same input, same event trace") {
  auto t = bus_topology(5, 1e9, 1e-6);
  auto op = op_for(5, 1e6);
  auto a = evaluate_flow(t, op, ring_allreduce(5, 1e6, 0), {});
  auto b = evaluate_flow(t, op, ring_allreduce(5, 1e6, 0), {});
  CHECK(a.fingerprint == b.fingerprint);
  CHECK(a.time_s == b.time_s);
  CHECK(a.events == b.events);
}

TEST_CASE("on_transfer sees every transfer with consistent times") {
  auto t = ring_topology(4, 1e9, 1e-6);
  auto op = op_for(4, 4e6);
  std::size_t count = 0;
  FlowOptions o;
  o.on_transfer = [&](const TransferRecord& rec) {
    ++count;
    CHECK(rec.issue <= rec.start);
    CHECK(rec.start < rec.end);
    CHECK(rec.bytes == doctest::Approx(1e6).scale(0));
  };
  evaluate_flow(t, op, ring_allreduce(4, 4e6, 0), o);
  CHECK(count == 2 * 3 * 4);
}
