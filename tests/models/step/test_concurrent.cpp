// Concurrent collectives in a step (models/step/executor.hpp with TopologyComm's
// concurrent_runner): at flow fidelity the collectives of different process groups that
// overlap in time run on one shared flow network.
//  - On a bus every flow crosses the one medium, so two 4-rank ring all-reduces at once each
//    get half of it at every step: each takes twice its isolated time (ring all-reduce on a
//    bus: 2(n-1) steps of n flows of S/n bytes sharing bw B, S/B per step, no latency).
//  - On a non-blocking switch the two groups use disjoint links: each takes exactly its
//    isolated time.
//  - With timers (analytical) the two never interact.
#include <doctest/doctest.h>

#include "models/step/executor.hpp"
#include "models/step/task_graph.hpp"
#include "models/step/topology_comm.hpp"
#include "tests/models/step/units_workload.hpp"
#include "topologies/load.hpp"

using namespace shardsim;

namespace {

struct Pair {
  Time a, b;
  std::uint64_t events = 0;
};

// Two all-reduces of `bytes`, on {0-3} and {4-7}, both ready at 0.
Pair run_pair(step::TopologyComm& comm, std::uint64_t bytes) {
  step::TaskGraph g({0, 1, 2, 3, 4, 5, 6, 7}, 2);
  const auto lo = g.add_group({"lo", {0, 1, 2, 3}});
  const auto hi = g.add_group({"hi", {4, 5, 6, 7}});
  const auto a = g.add_collective(lo, 1, coll::OpKind::allreduce, bytes, comm.time_s(coll::OpKind::allreduce, bytes, {0, 1, 2, 3}), {}, "lo");
  const auto b = g.add_collective(hi, 1, coll::OpKind::allreduce, bytes, comm.time_s(coll::OpKind::allreduce, bytes, {4, 5, 6, 7}), {}, "hi");
  g.validate(8);
  sim::Simulator sim;
  auto runner = comm.concurrent_runner();
  step::Executor ex(g, runner.get());
  const auto r = ex.run(sim);
  return {r.end[a] - r.start[a], r.end[b] - r.start[b], r.events};
}

}  // namespace

TEST_CASE("two groups sharing one medium each take twice their isolated time") {
  const auto bus = topo::make_topology("bus:n=8,bw=1GB/s,lat=0s", "t");
  const std::uint64_t S = 1 << 20;
  step::TopologyComm flow(bus, step::Fidelity::flow, "ring");
  const double alone = flow.time_s(coll::OpKind::allreduce, S, {0, 1, 2, 3});
  CHECK(alone == doctest::Approx(6.0 * static_cast<double>(S) / 1e9).epsilon(1e-9).scale(0));  // 2(n-1) steps of S/B
  const auto both = run_pair(flow, S);
  // Each of the 6 steps ends at a flow completion rounded up to the picosecond: 2 x alone within
  // one picosecond per step.
  CHECK(std::abs(both.a.to_seconds() - 2 * alone) <= 6e-12);
  CHECK(both.a == both.b);
  CHECK(both.events > 2);  // flow events, not two timers
  // Analytical timers: each its own closed form, as if alone.
  step::TopologyComm analytical(bus, step::Fidelity::analytical, "ring");
  const auto timers = run_pair(analytical, S);
  CHECK(timers.a == Time::from_seconds(analytical.time_s(coll::OpKind::allreduce, S, {0, 1, 2, 3})));
  CHECK(timers.events == 2);
}

TEST_CASE("two groups on disjoint links take exactly their isolated time") {
  const auto sw = topo::make_topology("switch:n=8,bw=1GB/s,lat=1us", "t");
  const std::uint64_t S = 1 << 20;
  step::TopologyComm flow(sw, step::Fidelity::flow, "ring");
  const auto both = run_pair(flow, S);
  CHECK(both.a == Time::from_seconds(flow.time_s(coll::OpKind::allreduce, S, {0, 1, 2, 3})));
  CHECK(both.b == Time::from_seconds(flow.time_s(coll::OpKind::allreduce, S, {4, 5, 6, 7})));
}

TEST_CASE("a sharded step at flow fidelity: the two subgroups' collectives share the bus") {
  // dp 8, k 4: subgroups {0-3} and {4-7}, so the step is not folded (two instances of each
  // subgroup collective, which may overlap on the shared network). Both subgroups all-gather
  // their first deferred buffer at step start, together: each takes twice its isolated time.
  const auto bus = topo::make_topology("bus:n=8,bw=1GB/s,lat=0s", "t");
  const auto w = test::units_workload("two-units", 1e9, 1000000, {0, 0});
  compute::Device dev;
  dev.name = "toy";
  dev.peak_flops[compute::MathType::bf16] = 1e12;
  dev.hbm_Bps = 1e12;
  dev.hbm_bytes = 1ULL << 40;
  auto c = test::step_config(step::Strategy::sharded, 8, 2000000);  // one buffer per unit: 10^6 bf16 weights, 2 MB
  c.shard_group = 4;
  c.record_timeline = true;
  step::TopologyComm comm(bus, step::Fidelity::flow, "ring");
  const auto r = step::simulate_step(w, dev, c, comm);
  CHECK(r.ranks_simulated == 8);
  const double alone = comm.time_s(coll::OpKind::allgather, 2000000, {0, 1, 2, 3});
  CHECK(alone == doctest::Approx(3.0 * 2e6 / 1e9).epsilon(1e-9).scale(0));  // (n-1) steps of S/B
  bool found = false;
  for (const auto& i : r.timeline) {
    if (i.rank == 0 && i.stream == "comm") {  // rank 0's first collective: the deferred all-gather
      CHECK(i.start_s == 0.0);
      CHECK(std::abs((i.end_s - i.start_s) - 2 * alone) <= 3e-12);
      found = true;
      break;
    }
  }
  CHECK(found);
}
