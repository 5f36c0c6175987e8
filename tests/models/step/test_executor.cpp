// The task graph and its executor (models/step/task_graph.hpp, executor.hpp): validation
// messages, the start rule on hand-made graphs (times derived by hand), signals, and the
// equivalence with the former double-based list scheduler of trace replay on random traces
// (every op within 1 ps per op on its path: durations round to the picosecond once each).
#include <doctest/doctest.h>

#include <cstdint>
#include <random>

#include "models/step/executor.hpp"
#include "models/step/step.hpp"
#include "models/step/task_graph.hpp"
#include "sim/error.hpp"
#include "tests/models/step/toy_device.hpp"

using namespace shardsim;
using step::NodeId;
using step::NodePhase;
using step::TaskGraph;

namespace {

double s(Time t) { return t.to_seconds(); }

}  // namespace

TEST_CASE("task graph validation names the op") {
  {
    TaskGraph g({0, 1}, 2);
    const auto grp = g.add_group({"dp", {0, 1, 9}});
    g.add_collective(grp, 1, coll::OpKind::allreduce, 1024, 1.0, {}, "ar0");
    CHECK_THROWS_WITH_AS(g.validate(8),
                         "op 'ar0': process group 'dp' names rank 9, outside the topology's 8 devices; expected ranks "
                         "0..7",
                         ConfigError);
    CHECK_NOTHROW(g.validate(10));
  }
  {
    TaskGraph g({0}, 1);
    const NodeId b = 1;
    g.add_compute(0, 0, NodePhase::forward, 1.0, std::span<const NodeId>(&b, 1), "a");  // a waits for b ...
    const NodeId a = 0;
    g.add_compute(0, 0, NodePhase::forward, 1.0, std::span<const NodeId>(&a, 1), "b");  // ... and b for a
    CHECK_THROWS_WITH_AS(g.validate(1),
                         "op 'b': dependency cycle op 'b' -> op 'a' -> op 'b'; expected dependencies and stream order "
                         "without cycles",
                         ConfigError);
  }
  {
    // Stream order alone: c depends on d, which comes after c on the same stream.
    TaskGraph g({0}, 1);
    const NodeId d = 1;
    g.add_compute(0, 0, NodePhase::forward, 1.0, std::span<const NodeId>(&d, 1), "c");
    g.add_compute(0, 0, NodePhase::forward, 1.0, {}, "d");
    CHECK_THROWS_WITH_AS(g.validate(1), "op 'd': dependency cycle op 'd' -> op 'c' -> op 'd'; expected dependencies and "
                                        "stream order without cycles",
                         ConfigError);
  }
  {
    TaskGraph g({0, 1}, 2);
    g.add_send(0, 1, 1, 1024, 7, 1.0, {}, "s");
    CHECK_THROWS_WITH_AS(g.validate(2),
                         "op 's': send of 1024 bytes from rank 0 to rank 1 (tag 7) without a matching receive; expected "
                         "a recv on rank 1 from rank 0 with tag 7",
                         ConfigError);
    g.add_recv(1, 1, 0, 1024, 7, {}, "r");
    CHECK_NOTHROW(g.validate(2));
    g.add_recv(1, 1, 0, 1024, 8, {}, "r8");
    CHECK_THROWS_WITH_AS(g.validate(2),
                         "op 'r8': receive on rank 1 from rank 0 (tag 8) without a matching send; expected a send on "
                         "rank 0 to rank 1 with tag 8",
                         ConfigError);
  }
}

TEST_CASE("executor: a collective starts when every member rank reached it; send/recv rendezvous") {
  // rank 0: compute 1 s; rank 1: compute 3 s. On rank 1's communication stream a collective of
  // its own (group {1}) takes 4 s first. The all-reduce of {0, 1} (2 s) depends on both
  // computes: ready at 3, but rank 1's stream is busy until 4 -> [4, 6]. Then rank 0 computes
  // 1 s -> [6, 7] and sends 0.5 s to rank 1, whose recv is ready at 6 (after the all-reduce
  // on its stream) -> [7, 7.5].
  TaskGraph g({0, 1}, 2);
  const auto pair = g.add_group({"pair", {0, 1}});
  const auto solo = g.add_group({"solo", {1}});
  const NodeId c0 = g.add_compute(0, 0, NodePhase::forward, 1.0, {}, "c0");
  const NodeId c1 = g.add_compute(1, 0, NodePhase::forward, 3.0, {}, "c1");
  const NodeId x = g.add_collective(solo, 1, coll::OpKind::allreduce, 8, 4.0, {}, "solo");
  const std::vector<NodeId> both{c0, c1};
  const NodeId ar = g.add_collective(pair, 1, coll::OpKind::allreduce, 8, 2.0, both, "ar");
  const NodeId d0 = g.add_compute(0, 0, NodePhase::backward, 1.0, std::span<const NodeId>(&ar, 1), "d0");
  const NodeId snd = g.add_send(0, 1, 1, 64, 0, 0.5, std::span<const NodeId>(&d0, 1), "send");
  const NodeId rcv = g.add_recv(1, 1, 0, 64, 0, {}, "recv");
  g.validate(2);
  step::Executor ex(g);
  std::vector<int> started_on(2, 0);
  ex.node_started.connect([&](NodeId, int rank, std::uint32_t, Time) { ++started_on[static_cast<std::size_t>(rank)]; });
  const auto r = ex.run();
  CHECK(s(r.start[x]) == 0.0);
  CHECK(s(r.start[ar]) == 4.0);
  CHECK(s(r.end[ar]) == 6.0);
  CHECK(s(r.start[d0]) == 6.0);
  CHECK(s(r.start[snd]) == 7.0);
  CHECK(s(r.start[rcv]) == 7.0);
  CHECK(s(r.end[rcv]) == 7.5);
  CHECK(s(r.makespan) == 7.5);
  // Signals: rank 0 runs c0, ar, d0, send; rank 1 runs c1, solo, ar, recv.
  CHECK(started_on == std::vector<int>{4, 4});
  // One timer per node, the send/recv pair sharing one.
  CHECK(r.events == 6);
}

TEST_CASE("executor: a send/recv deadlock (which validate does not see) is an error naming the op") {
  TaskGraph g({0, 1}, 2);
  g.add_recv(0, 1, 1, 8, 0, {}, "r0");  // rank 0 waits for rank 1's send ...
  g.add_send(0, 1, 1, 8, 1, 1.0, {}, "s0");
  g.add_recv(1, 1, 0, 8, 1, {}, "r1");  // ... which comes after rank 1's recv of rank 0's send
  g.add_send(1, 1, 0, 8, 0, 1.0, {}, "s1");
  CHECK_NOTHROW(g.validate(2));
  step::Executor ex(g);
  CHECK_THROWS_WITH_AS(ex.run(),
                       "op 'r0': never started (its dependencies, streams or send/recv partner deadlock); expected a "
                       "graph in which every op can run",
                       ConfigError);
}

namespace {

// The former replay (models/step/replay.cpp before the executor), in double seconds.
struct RefOp {
  double start = 0, end = 0;
};
std::vector<RefOp> reference_replay(const step::Workload& w, const std::vector<double>& dur) {
  std::vector<RefOp> out(w.recorded.size());
  double compute_free = 0, comm_free = 0;
  for (std::size_t i = 0; i < w.recorded.size(); ++i) {
    double ready = 0;
    for (const auto d : w.recorded[i].deps) ready = std::max(ready, out[d].end);
    double& free = w.recorded[i].collective ? comm_free : compute_free;
    out[i].start = std::max(free, ready);
    out[i].end = free = out[i].start + dur[i];
  }
  return out;
}

}  // namespace

TEST_CASE("trace replay on the executor equals the former list scheduler within 1 ps per op") {
  const auto dev = test::toy_device();
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 20; ++trial) {
    step::Workload w;
    w.name = "random";
    std::vector<double> dur;
    const std::size_t n = 150;
    for (std::size_t i = 0; i < n; ++i) {
      step::RecordedOp o;
      o.name = "op" + std::to_string(i);
      const auto k = rng() % 3;
      for (std::size_t d = 0; i > 0 && d < rng() % 4; ++d) o.deps.push_back(rng() % i);
      if (k == 0) {
        const auto size = 1000 + rng() % 100000;
        o.collective = step::RecordedCollective{coll::OpKind::allreduce, size, static_cast<std::uint32_t>(2 + rng() % 3)};
        dur.push_back(1e-6 * static_cast<double>(size) / 7.0);  // as the FunctionComm below
      } else {
        o.phase = k == 1 ? step::OpPhase::forward : step::OpPhase::backward;
        o.flops = static_cast<double>(rng() % 1000000000) * 1.37;  // toy device: 1e12 FLOP/s
        dur.push_back(dev.op_time_s(o.flops, 0, compute::MathType::bf16));
      }
      w.recorded.push_back(o);
    }
    step::FunctionComm comm([](coll::OpKind, std::uint64_t size, const std::vector<int>&) {
      return 1e-6 * static_cast<double>(size) / 7.0;
    });
    step::StepConfig c;
    c.strategy = step::Strategy::trace;
    c.optimizer = &opt::find_optimizer("adam", "t");
    c.dp = 12;  // whole blocks of 2, 3 and 4 ranks
    c.record_timeline = true;
    const auto r = step::simulate_step(w, dev, c, comm);
    const auto ref = reference_replay(w, dur);
    REQUIRE(r.timeline.size() == n);
    double last = 0;
    for (std::size_t i = 0; i < n; ++i) {
      CAPTURE(trial);
      CAPTURE(i);
      const double tol = static_cast<double>(i + 1) * 1e-12;
      CHECK(std::abs(r.timeline[i].start_s - ref[i].start) <= tol);
      CHECK(std::abs(r.timeline[i].end_s - ref[i].end) <= tol);
      last = std::max(last, ref[i].end);
    }
    CHECK(std::abs(r.step_time_s - last) <= static_cast<double>(n) * 1e-12);
    CHECK(r.ranks == 12);
    CHECK(r.ranks_simulated == 1);  // every rank runs the same trace on equal groups: folded
  }
}
