// Collectives in flight (issue 12): CollectiveRuns sharing one simulator and one flow network,
// against closed forms derived here. Isolated times come from evaluate_flow (one run on a
// private pair) and are themselves checked against alpha-beta closed forms first.
#include <doctest/doctest.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "models/collectives/algorithm.hpp"
#include "models/collectives/collective_run.hpp"
#include "models/collectives/flow_eval.hpp"
#include "topologies/load.hpp"

using namespace shardsim;
using namespace shardsim::coll;

namespace {

topo::Node named(std::string name) {
  topo::Node n;
  n.name = std::move(name);
  return n;
}

CollectiveOp op_on(OpKind kind, std::vector<int> group, double S) {
  CollectiveOp op;
  op.kind = kind;
  op.size_bytes = static_cast<std::uint64_t>(S);
  op.group = std::move(group);
  return op;
}

struct Job {
  CollectiveOp op;
  std::string algorithm = "ring";
};

// Runs every job on one simulator and one network, all started at `at`; returns each job's
// duration (finish - at) in seconds. Also checks that each callback came once, at its
// finish time.
std::vector<double> run_together(const topo::Topology& t, const std::vector<Job>& jobs, Time at = Time::zero()) {
  sim::Simulator sim;
  sim::FlowNetwork net(sim);
  add_topology_links(net, t);
  const CostParams p;
  std::vector<Schedule> scheds;
  scheds.reserve(jobs.size());
  for (const auto& j : jobs) scheds.push_back(find_algorithm(j.algorithm, j.op.kind, "test").build(t, j.op, p));
  std::vector<std::unique_ptr<CollectiveRun>> runs;
  std::vector<int> calls(jobs.size(), 0);
  std::vector<Time> done(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    runs.push_back(std::make_unique<CollectiveRun>(sim, net, t, jobs[i].op, scheds[i], FlowOptions{p, {}}));
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    runs[i]->start(at, [&, i](Time d) {
      ++calls[i];
      done[i] = d;
      CHECK(d == sim.now());
    });
  }
  sim.run();
  std::vector<double> out;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    CHECK(calls[i] == 1);
    CHECK(runs[i]->done());
    CHECK(runs[i]->finish_time() == done[i]);
    out.push_back((done[i] - at).to_seconds());
  }
  return out;
}

double isolated(const topo::Topology& t, const Job& j) {
  const CostParams p;
  const Schedule s = find_algorithm(j.algorithm, j.op.kind, "test").build(t, j.op, p);
  return evaluate_flow(t, j.op, s, FlowOptions{p, {}}).time_s;
}

double route_latency(const topo::Topology& t, int a, int b) {
  return t.route(t.device(static_cast<std::size_t>(a)), t.device(static_cast<std::size_t>(b))).latency_s;
}

}  // namespace

TEST_CASE("one run on a shared pair gives evaluate_flow's time, events and transfers") {
  const auto t = topo::make_topology("torus:dims=4x4,bw=100GB/s,lat=1us", "test");
  std::vector<int> all(16);
  std::iota(all.begin(), all.end(), 0);
  const auto op = op_on(OpKind::allreduce, all, 16 << 20);
  const CostParams p;
  const Schedule s = find_algorithm("ring", op.kind, "test").build(t, op, p);
  const auto ref = evaluate_flow(t, op, s, FlowOptions{p, {}});

  sim::Simulator sim;
  sim::FlowNetwork net(sim);
  add_topology_links(net, t);
  CollectiveRun run(sim, net, t, op, s, FlowOptions{p, {}});
  sim.enable_fingerprint();
  run.start(Time::zero(), nullptr);
  sim.run();
  CHECK(run.done());
  CHECK(run.finish_time().to_seconds() == ref.time_s);
  CHECK(sim.event_count() == ref.events);
  CHECK(sim.fingerprint() == ref.fingerprint);
  CHECK(run.transfers() == ref.transfers);
}

TEST_CASE("a run started later finishes its duration later, and calls back from an event") {
  const auto t = topo::make_topology("torus:dims=8,bw=100GB/s,lat=1us", "test");
  const Job j{op_on(OpKind::allreduce, {0, 1, 2, 3, 4, 5, 6, 7}, 8 << 20)};
  const double iso = isolated(t, j);
  const Time at = Time::from_us(250);
  const auto d = run_together(t, {j}, at);
  CHECK(d[0] == doctest::Approx(iso).epsilon(1e-12).scale(0));

  // Starting in the past or twice is refused; a run with nothing to do calls back at once,
  // but from an event, not from inside start().
  sim::Simulator sim;
  sim::FlowNetwork net(sim);
  add_topology_links(net, t);
  const Schedule empty{};  // 0 ranks, no steps
  CollectiveRun idle(sim, net, t, op_on(OpKind::allreduce, {}, 0), empty, {});
  bool called = false;
  idle.start(Time::zero(), [&](Time done) {
    called = true;
    CHECK(done == Time::zero());
  });
  CHECK_FALSE(called);
  CHECK_THROWS_AS(idle.start(Time::zero(), nullptr), std::logic_error);
  sim.run();
  CHECK(called);
  CHECK(idle.done());
  sim.schedule_at(Time::from_us(5), [] {});
  sim.run();
  const Schedule s = find_algorithm("ring", j.op.kind, "test").build(t, j.op, {});
  CollectiveRun late(sim, net, t, j.op, s, {});
  CHECK_THROWS_AS(late.start(Time::from_us(1), nullptr), std::logic_error);
}

TEST_CASE("a network without the topology's links is refused") {
  const auto t = topo::make_topology("torus:dims=4,bw=100GB/s,lat=1us", "test");
  const auto op = op_on(OpKind::allreduce, {0, 1, 2, 3}, 1 << 20);
  const Schedule s = find_algorithm("ring", op.kind, "test").build(t, op, {});
  sim::Simulator sim;
  sim::FlowNetwork net(sim);
  net.add_link(1e9);
  const std::string msg = "flow network has 1 links but topology '" + t.name() + "' has 8";
  CHECK_THROWS_WITH_AS(CollectiveRun(sim, net, t, op, s, {}), msg.c_str(), std::invalid_argument);
}

// Two leaves of two hosts, one spine; host links 100 GB/s, each leaf<->spine link 50 GB/s.
// Groups {0, 2} and {1, 3} each span the two leaves: every transfer of either crosses the
// sending leaf's single uplink and the receiving leaf's single downlink from the spine.
TEST_CASE("two 2-rank all-reduces through one leaf uplink: the bandwidth term doubles, latency does not") {
  const auto t = topo::make_topology("fat_tree:hosts=4,hosts_per_leaf=2,bw=100GB/s,uplink_bw=50GB/s,spines=1,lat=1us",
                                     "test");
  const double S = 64.0 * (1 << 20), B_up = 50e9;
  const Job a{op_on(OpKind::allreduce, {0, 2}, S)}, b{op_on(OpKind::allreduce, {1, 3}, S)};
  // Ring all-reduce on 2 ranks: 2 steps; in each, both ranks send S/2 to each other over
  // host -> leaf -> spine -> leaf -> host (4 links of 1 us), bottleneck the 50 GB/s uplink.
  const double alpha = route_latency(t, 0, 2);
  CHECK(alpha == doctest::Approx(4e-6).scale(0));
  CHECK(route_latency(t, 1, 3) == alpha);
  const double beta = (S / 2) / B_up;
  const double iso_a = isolated(t, a), iso_b = isolated(t, b);
  CHECK(iso_a == doctest::Approx(2 * (alpha + beta)).epsilon(1e-9).scale(0));
  CHECK(iso_b == iso_a);
  // Together: in each step the two groups' flows 0->2 and 1->3 share leaf 0's uplink (and
  // 2->0, 3->1 leaf 1's), 25 GB/s each, for the whole step, since both groups' steps start at
  // the same instants. Each step takes alpha + 2 beta: the bandwidth term doubles.
  const auto d = run_together(t, {a, b});
  CHECK(d[0] == d[1]);
  CHECK(d[0] == doctest::Approx(2 * (alpha + 2 * beta)).epsilon(1e-9).scale(0));
  CHECK(d[0] - iso_a == doctest::Approx(2 * beta).epsilon(1e-9).scale(0));
  CHECK(d[0] < 2 * iso_a);  // not simply twice: the latency is paid once per step
}

TEST_CASE("two all-reduces on disjoint links take exactly their isolated time") {
  const auto t = topo::make_topology("fat_tree:hosts=4,hosts_per_leaf=2,bw=100GB/s,uplink_bw=50GB/s,spines=1,lat=1us",
                                     "test");
  const double S = 64.0 * (1 << 20);
  // {0, 1} under leaf 0, {2, 3} under leaf 1: host -> leaf -> host, no link in common.
  const Job a{op_on(OpKind::allreduce, {0, 1}, S)}, b{op_on(OpKind::allreduce, {2, 3}, S)};
  const double alpha = route_latency(t, 0, 1);
  CHECK(alpha == doctest::Approx(2e-6).scale(0));
  const double iso_a = isolated(t, a), iso_b = isolated(t, b);
  CHECK(iso_a == doctest::Approx(2 * (alpha + (S / 2) / 100e9)).epsilon(1e-9).scale(0));
  const auto d = run_together(t, {a, b});
  CHECK(d[0] == iso_a);  // exactly: same flows, same rates, same rounding
  CHECK(d[1] == iso_b);
}

// A DGX-style node pair: rail_optimized with 2 nodes of 2 GPUs. Tensor parallel = the 2 GPUs of
// node 0 over NVSwitch; data parallel = GPU 0 of each node over rail 0 (NIC -> rail leaf ->
// NIC). The NVLink and the NIC paths have no link in common.
TEST_CASE("TP all-reduce in an NVSwitch node and DP reduce-scatter on the NICs: no interference") {
  const auto t = topo::make_topology(
      "rail_optimized:nodes=2,gpus_per_node=2,nvlink_bw=450GB/s,nvlink_lat=250ns,nic_bw=400Gb/s,ib_lat=1us", "test");
  const Job tp{op_on(OpKind::allreduce, {0, 1}, 256.0 * (1 << 20))};
  const Job dp{op_on(OpKind::reducescatter, {0, 2}, 512.0 * (1 << 20))};
  const double iso_tp = isolated(t, tp), iso_dp = isolated(t, dp);
  // Closed forms: TP ring on 2 ranks, 2 steps of S/2 over GPU -> NVSwitch -> GPU at 450 GB/s;
  // DP reduce-scatter on 2 ranks, 1 step of S/2 over GPU -> leaf -> GPU at 50 GB/s.
  CHECK(iso_tp == doctest::Approx(2 * (route_latency(t, 0, 1) + 128.0 * (1 << 20) / 450e9)).epsilon(1e-9).scale(0));
  CHECK(iso_dp == doctest::Approx(route_latency(t, 0, 2) + 256.0 * (1 << 20) / 50e9).epsilon(1e-9).scale(0));
  const auto d = run_together(t, {tp, dp});
  CHECK(d[0] == iso_tp);
  CHECK(d[1] == iso_dp);
}

// The same two collectives where the node's NIC hangs off the NVSwitch (a test topology): GPU
// g0's NVLink port carries both its TP flow and its DP flow. Max-min (Bertsekas and Gallager
// 6.5.2): the DP flow's bottleneck is the 100 GB/s NIC link, which it has alone, so it keeps
// 100 GB/s; TP takes the rest of g0's 400 GB/s port, 300 GB/s, in both directions.
TEST_CASE("TP and DP sharing the GPU's NVLink port: the max-min slowdown") {
  const double B = 400e9, B_nic = 100e9, lat = 1e-6;
  topo::Topology t;
  const auto g0 = t.add_device(named("g0"));
  const auto g1 = t.add_device(named("g1"));
  const auto h0 = t.add_device(named("h0"));  // the other node's GPU, behind its NIC
  const auto nvs = t.add_switch(named("nvswitch"));
  const auto nic = t.add_switch(named("nic"));
  t.add_duplex(g0, nvs, B, lat, topo::LinkClass::nvlink);
  t.add_duplex(g1, nvs, B, lat, topo::LinkClass::nvlink);
  // No latency on the NIC link: DP's route latency equals TP's, so their flows start together.
  t.add_duplex(nvs, nic, B_nic, 0.0, topo::LinkClass::pcie);
  t.add_duplex(nic, h0, B, lat, topo::LinkClass::ib);
  const double S_tp = 256.0 * (1 << 20), S_dp = 1024.0 * (1 << 20);
  const Job tp{op_on(OpKind::allreduce, {0, 1}, S_tp)};
  const Job dp{op_on(OpKind::reducescatter, {0, 2}, S_dp)};
  const double a_tp = route_latency(t, 0, 1), a_dp = route_latency(t, 0, 2);
  CHECK(a_tp == doctest::Approx(2e-6).scale(0));
  CHECK(a_dp == a_tp);
  const double iso_tp = isolated(t, tp), iso_dp = isolated(t, dp);
  CHECK(iso_tp == doctest::Approx(2 * (a_tp + (S_tp / 2) / B)).epsilon(1e-9).scale(0));
  CHECK(iso_dp == doctest::Approx(a_dp + (S_dp / 2) / B_nic).epsilon(1e-9).scale(0));
  // DP's single step (S_dp/2 at 100 GB/s: 5.4 ms) outlasts TP, so TP's two steps each run
  // beside it at B - B_nic.
  REQUIRE(iso_dp > 2 * (a_tp + (S_tp / 2) / (B - B_nic)));
  const auto d = run_together(t, {tp, dp});
  CHECK(d[0] == doctest::Approx(2 * (a_tp + (S_tp / 2) / (B - B_nic))).epsilon(1e-9).scale(0));
  CHECK(d[0] / iso_tp > 1.3);  // (1/300) / (1/400) on the bandwidth term
  CHECK(d[1] == doctest::Approx(iso_dp).epsilon(1e-12).scale(0));  // DP keeps its bottleneck rate
}

TEST_CASE("runs on a shared network: a run destroyed in its callback, a later run reuses the network") {
  const auto t = topo::make_topology("torus:dims=4,bw=100GB/s,lat=1us", "test");
  const Job j{op_on(OpKind::allreduce, {0, 1, 2, 3}, 4 << 20)};
  const double iso = isolated(t, j);
  const Schedule s = find_algorithm("ring", j.op.kind, "test").build(t, j.op, {});
  sim::Simulator sim;
  sim::FlowNetwork net(sim);
  add_topology_links(net, t);
  auto first = std::make_unique<CollectiveRun>(sim, net, t, j.op, s, FlowOptions{});
  std::unique_ptr<CollectiveRun> second;
  Time first_done, second_done;
  first->start(Time::zero(), [&](Time d) {
    first_done = d;
    first.reset();  // destroyed inside its own callback
    second = std::make_unique<CollectiveRun>(sim, net, t, j.op, s, FlowOptions{});
    second->start(d, [&](Time d2) { second_done = d2; });
  });
  sim.run();
  CHECK(first == nullptr);
  CHECK(first_done.to_seconds() == doctest::Approx(iso).epsilon(1e-12).scale(0));
  CHECK((second_done - first_done).to_seconds() == doctest::Approx(iso).epsilon(1e-12).scale(0));
  CHECK(net.active_flows() == 0);
  CHECK(net.client_count() == 2);  // the default client and `second`
}
