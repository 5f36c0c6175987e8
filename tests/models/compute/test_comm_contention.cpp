// Communication kernels take compute units (issue 15): NCCL runs one CTA per channel on an SM
// of its own (NCCL docs, NCCL_MIN/MAX_NCHANNELS), so a kernel overlapping a collective runs on
// units - channels SMs. The one compute-time rule (models/step/executor.hpp: ComputeProgress,
// contended_end) is shared by the executor and the sampled steps' one-pass timer
// (models/step/variation.hpp: StaticTimer); these tests derive its times by hand and check that
// both schedulers give them, on hand-made graphs, on random graphs and on sampled steps.
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "models/compute/device.hpp"
#include "models/step/executor.hpp"
#include "models/step/rank_program.hpp"
#include "models/step/step.hpp"
#include "models/step/task_graph.hpp"
#include "models/step/topology_comm.hpp"
#include "models/step/variation.hpp"
#include "sim/time.hpp"
#include "tests/models/step/star8.hpp"
#include "tests/models/step/toy_device.hpp"
#include "tests/models/step/units_workload.hpp"

using namespace shardsim;
using step::NodeId;
using step::NodePhase;

namespace {

constexpr std::int64_t kS = 1'000'000'000'000;  // picoseconds per second
Time ps(std::int64_t v) { return Time::from_ps(v); }
// units 3, comm units 1: a contended node does 2 of 3 units of work per picosecond (f = 1.5).
const step::CommContention kThird{3, 1, {}};

}  // namespace

TEST_CASE("comm_slowdown: SMs over the SMs NCCL's channels leave") {
  const auto& h100 = compute::find_device("h100", "t");
  const auto& a100 = compute::find_device("a100-80gb", "t");
  CHECK(h100.comm_units == 32);
  CHECK(h100.comm_slowdown() == doctest::Approx(132.0 / 100.0).scale(0));
  CHECK(a100.comm_units == 24);
  CHECK(a100.comm_slowdown() == doctest::Approx(108.0 / 84.0).scale(0));
  CHECK(compute::find_device("tpu-v4", "t").comm_slowdown() == 1.0);  // no channel count cited
  compute::Device d = h100;
  d.comm_units = 0;
  CHECK(d.comm_slowdown() == 1.0);
  d.comm_units = d.compute_units;  // would leave no SM: treated as no model, not a division by 0
  CHECK(d.comm_slowdown() == 1.0);
  CHECK_FALSE((step::CommContention{132, 132, {}}.active()));
  CHECK_FALSE((step::CommContention{0, 0, {}}.active()));
  CHECK((step::CommContention{132, 32, {}}.active()));
}

TEST_CASE("contended_end: the closed forms of the rate rule") {
  const std::vector<step::BusyInterval> busy{{ps(0), ps(2 * kS)}};
  // 1 s of work entirely inside the busy time: 1.5 s.
  CHECK(step::contended_end(ps(0), ps(kS), busy, kThird) == ps(3 * kS / 2));
  // From 1.5 s: 0.5 s at rate 2/3 does 1/3 of the work; the other 2/3 at full rate: 2 + 2/3 s,
  // rounded up to the picosecond.
  CHECK(step::contended_end(ps(3 * kS / 2), ps(kS), busy, kThird) == ps(2 * kS + (2 * kS + 2) / 3));
  // Starting after the busy time, or without contention: plain duration.
  CHECK(step::contended_end(ps(2 * kS), ps(kS), busy, kThird) == ps(3 * kS));
  CHECK(step::contended_end(ps(0), ps(kS), busy, step::CommContention{}) == ps(kS));
  // Busy time in the middle: 1 s of work from 0 with busy [0.5, 1.0): 0.5 s at full rate,
  // 0.5 s at 2/3 does 1/3 s, the last 1/6 s at full rate: 1 + 1/6 s.
  const std::vector<step::BusyInterval> mid{{ps(kS / 2), ps(kS)}};
  CHECK(step::contended_end(ps(0), ps(kS), mid, kThird) == ps(kS + (kS + 5) / 6));
  // Rounded up: 1 ps of work contended is 3 unit-ps at 2 per ps: 2 ps.
  CHECK(step::contended_end(ps(0), ps(1), busy, kThird) == ps(2));
  // Two busy intervals: 3 s of work from 0, busy [1, 2) and [3, 4): 1 s full, 1 s slow (2/3),
  // 1 s full (total 2 2/3), the last 1/3 s slow takes 0.5 s: 3.5 s.
  const std::vector<step::BusyInterval> two{{ps(kS), ps(2 * kS)}, {ps(3 * kS), ps(4 * kS)}};
  CHECK(step::contended_end(ps(0), ps(3 * kS), two, kThird) == ps(3 * kS + kS / 2));
}

TEST_CASE("ComputeProgress: banking the work at extra instants does not move the end") {
  // The executor banks at every collective start and end, the one-pass timer only where the
  // busy union changes: integer work makes both give one end.
  auto a = step::ComputeProgress::start(ps(0), ps(1'000'003), kThird, true);
  auto b = a;
  b.change(ps(17), kThird.rate(true));
  b.change(ps(400'001), kThird.rate(true));
  CHECK(a.end() == b.end());
  CHECK(a.end() == ps((3 * 1'000'003 + 1) / 2));
  a.change(ps(500'000), kThird.rate(false));
  b.change(ps(500'000), kThird.rate(false));
  CHECK(a.end() == b.end());
  // Work already done when the change comes: it ends now.
  auto c = step::ComputeProgress::start(ps(0), ps(10), kThird, false);
  c.change(ps(10), kThird.rate(true));
  CHECK(c.end() == ps(10));
  // A duration whose work overflows int64 is a range error, not a wrapped time.
  CHECK_THROWS_AS(step::ComputeProgress::start(ps(0), Time::max(), kThird, false), TimeRangeError);
}

TEST_CASE("add_busy keeps a sorted union of disjoint, non-touching intervals") {
  std::vector<step::BusyInterval> b;
  step::add_busy(b, ps(10), ps(20));
  step::add_busy(b, ps(30), ps(40));
  step::add_busy(b, ps(5), ps(5));  // empty: nothing
  REQUIRE(b.size() == 2);
  step::add_busy(b, ps(0), ps(2));  // before both
  REQUIRE(b.size() == 3);
  CHECK(b[0].begin == ps(0));
  step::add_busy(b, ps(20), ps(30));  // touches both neighbours: one interval 10..40
  REQUIRE(b.size() == 2);
  CHECK(b[1].begin == ps(10));
  CHECK(b[1].end == ps(40));
  step::add_busy(b, ps(1), ps(50));  // covers everything
  REQUIRE(b.size() == 1);
  CHECK(b[0].begin == ps(0));
  CHECK(b[0].end == ps(50));
  step::add_busy(b, ps(60), ps(70));
  step::add_busy(b, ps(55), ps(58));  // between: inserted in order
  REQUIRE(b.size() == 3);
  CHECK(b[1].begin == ps(55));
}

TEST_CASE("executor: compute that starts while a collective of its rank runs takes f x its duration") {
  // Rank 0: collective (stream 1) 0..2; c0, c1, c2 (stream 0) of 1 s each in a chain.
  // f = 1.5: c0 runs at rate 1/1.5 throughout: 0..1.5; c1 starts at 1.5, does 0.5 / 1.5 = 1/3
  // of its work by 2.0 when the collective ends, the other 2/3 at full rate: ends 2 + 2/3;
  // c2 runs unslowed: ends 3 + 2/3. Rank 1 is not in the group: its c3 (1 s) is never slowed.
  step::TaskGraph g({0, 1}, 2);
  const auto grp = g.add_group({"solo", {0}});
  const NodeId ar = g.add_collective(grp, 1, coll::OpKind::allgather, 1024, 2.0, {}, "ag");
  const NodeId c0 = g.add_compute(0, 0, NodePhase::forward, 1.0, {}, "c0");
  const NodeId c1 = g.add_compute(0, 0, NodePhase::forward, 1.0, std::span<const NodeId>(&c0, 1), "c1");
  const NodeId c2 = g.add_compute(0, 0, NodePhase::forward, 1.0, std::span<const NodeId>(&c1, 1), "c2");
  const NodeId c3 = g.add_compute(1, 0, NodePhase::forward, 1.0, {}, "c3");
  g.validate(2);
  const Time c1_end = ps(2 * kS + (2 * kS + 2) / 3);
  {
    step::Executor ex(g);
    ex.set_comm_contention(kThird);
    const auto r = ex.run();
    CHECK(r.end[ar] == ps(2 * kS));
    CHECK(r.end[c0] == ps(3 * kS / 2));
    CHECK(r.end[c1] == c1_end);
    CHECK(r.end[c2] == c1_end + ps(kS));
    CHECK(r.end[c3] == ps(kS));
    // The one-pass timer gives the same makespan (the collective has the smallest id).
    const auto st = step::StaticTimer::make(g, kThird);
    REQUIRE(st != nullptr);
    const auto t = st->makespan({});
    REQUIRE(t.has_value());
    CHECK(*t == r.makespan);
  }
  {
    step::Executor ex(g);  // default: no contention
    const auto r = ex.run();
    CHECK(r.end[c2] == ps(3 * kS));
  }
}

TEST_CASE("executor: a collective that starts during a compute op slows the rest of it") {
  // Rank 0: c0 (stream 0, 2 s) from 0; w (stream 1, 1 s) from 0, then the collective (stream
  // 1, 2 s) 1..3. f = 1.5: c0 does 1 s of work by 1.0, the remaining 1 s at rate 1/1.5: ends
  // 2.5. Without contention it ends at 2.0.
  step::TaskGraph g({0}, 2);
  const auto grp = g.add_group({"solo", {0}});
  const NodeId c0 = g.add_compute(0, 0, NodePhase::forward, 2.0, {}, "c0");
  const NodeId w = g.add_compute(0, 1, NodePhase::forward, 1.0, {}, "w");
  const NodeId ag = g.add_collective(grp, 1, coll::OpKind::allgather, 1024, 2.0, std::span<const NodeId>(&w, 1), "ag");
  g.validate(1);
  step::Executor ex(g);
  ex.set_comm_contention(kThird);
  const auto r = ex.run();
  CHECK(r.end[w] == ps(kS));
  CHECK(r.start[ag] == ps(kS));
  CHECK(r.end[c0] == ps(5 * kS / 2));
  step::Executor plain(g);
  CHECK(plain.run().end[c0] == ps(2 * kS));
  // Here the collective (id 2) overlaps c0 (id 0), which the one pass timed before it: the
  // pass cannot be exact and says so.
  const auto st = step::StaticTimer::make(g, kThird);
  REQUIRE(st != nullptr);
  CHECK_FALSE(st->makespan({}).has_value());
  // Without contention the pass times it (the plain rule).
  CHECK(step::StaticTimer::make(g)->makespan({}) == std::optional<Time>(ps(3 * kS)));
}

TEST_CASE("one-pass timer and executor agree on random graphs with contention") {
  // Random DAGs (ids topological): 3 ranks, 3 streams; compute on any stream, collectives on
  // groups of 1-3 ranks; random durations and dependencies on earlier nodes. Whenever the pass
  // returns a time it must be the executor's makespan to the picosecond; it must decline some
  // graphs (collectives overlapping earlier compute) and time others where contention matters.
  step::Rng rng(20261201);
  int exact = 0, declined = 0, slowed = 0;
  for (int trial = 0; trial < 400; ++trial) {
    step::TaskGraph g({0, 1, 2}, 3);
    std::vector<std::uint32_t> groups;
    groups.push_back(g.add_group({"all", {0, 1, 2}}));
    groups.push_back(g.add_group({"01", {0, 1}}));
    groups.push_back(g.add_group({"2", {2}}));
    const int nodes = 4 + static_cast<int>(rng.next() % 12);
    std::vector<NodeId> deps;
    for (int i = 0; i < nodes; ++i) {
      deps.clear();
      for (int k = 0; k < i; ++k) {
        if (rng.uniform() < 0.15) deps.push_back(static_cast<NodeId>(k));
      }
      // Durations on a coarse grid so that instants coincide (the rule's edge cases).
      const double dur = static_cast<double>(rng.next() % 5) * 0.25;
      if (rng.uniform() < 0.35) {
        const auto grp = groups[rng.next() % groups.size()];
        g.add_collective(grp, 1 + static_cast<std::uint32_t>(rng.next() % 2), coll::OpKind::allreduce, 1024, dur, deps,
                         "c");
      } else {
        g.add_compute(static_cast<int>(rng.next() % 3), static_cast<std::uint32_t>(rng.next() % 3), NodePhase::forward,
                      dur, deps, "x");
      }
    }
    g.validate(3);
    std::vector<double> scale{1.0, 1.0 + 0.1 * rng.uniform(), 0.9};
    step::Executor ex(g);
    ex.set_compute_scale(scale);
    ex.set_comm_contention(kThird);
    const Time truth = ex.run().makespan;
    step::Executor plain(g);
    plain.set_compute_scale(scale);
    const Time free = plain.run().makespan;
    const auto st = step::StaticTimer::make(g, kThird);
    REQUIRE(st != nullptr);
    const auto t = st->makespan(scale);
    if (t) {
      CHECK(*t == truth);
      ++exact;
      if (truth != free) ++slowed;
    } else {
      ++declined;
    }
  }
  CHECK(exact > 100);
  CHECK(declined > 10);
  CHECK(slowed > 20);
}

TEST_CASE("sampled steps with contention: the one pass is every step's executor step, and contention slows it") {
  // Four units of 250,000 parameters on the toy device with 4 compute units of which a
  // collective takes 1 (f = 4/3). A unit's backward (2 ms) overlaps the all-reduce of the
  // previous unit's 1 MB of fp32 gradients on the 8-rank star (2 x 7/8 x 1 MB / 1 GB/s = 1.75
  // ms plus latency), so contention slows most of the backward.
  const step::Workload w = test::units_workload("four-units", 1e9, 250'000, {100, 100, 100, 100});
  compute::Device dev = test::toy_device();
  dev.hbm_Bps = 28e9;  // Adam's update of 1M parameters x 28 B: 1 ms
  dev.compute_units = 4;
  dev.comm_units = 1;
  step::StepConfig c;
  c.strategy = step::Strategy::replicated;
  c.optimizer = &opt::find_optimizer("adam", "t");
  c.dp = 8;
  c.bucket_bytes = 1'000'000;  // one bucket per unit
  const auto t = test::star8();
  step::TopologyComm comm(t, step::Fidelity::analytical, "ring");
  step::ComputeVariation v;
  v.jitter = step::parse_jitter("lognormal:0.05", "t");
  v.seed = 5;
  for (const auto strategy : {step::Strategy::replicated, step::Strategy::zero3}) {
    c.strategy = strategy;
    const auto sampled = step::simulate_step_samples(w, dev, c, comm, v, 6);
    CHECK(sampled.executor_samples == 0);  // strategy graphs: the one pass is always exact
    auto cc = c;
    for (std::uint64_t k = 0; k < 6; ++k) {
      v.factors(k, 8, cc.compute_scale);
      CHECK(step::simulate_step(w, dev, cc, comm).step_time_s == sampled.step_time_s[k]);
    }
    // Contention is on in both: without the comm units every step is shorter.
    compute::Device free_dev = dev;
    free_dev.comm_units = 0;
    const auto free = step::simulate_step_samples(w, free_dev, c, comm, v, 6);
    for (std::uint64_t k = 0; k < 6; ++k) CHECK(free.step_time_s[k] < sampled.step_time_s[k]);
  }
  // Measured compute carries its own contention: none is added.
  c.measured_compute = true;
  CHECK_FALSE(step::step_contention(dev, c).active());
  c.measured_compute = false;
  CHECK(step::step_contention(dev, c).active());
}

TEST_CASE("persistent GEMMs: the GEMM share of a node runs in ceil(units / (units - comm)) waves while contended") {
  // Hopper's cuBLAS launches one CTA per SM (compute::Device::persistent_gemm): with 32 of 132
  // SMs held by NCCL, 100 CTAs run, then the other 32: two waves, 2x (pytorch/pytorch#143988).
  // A node's contended slowdown is share x 2 + (1 - share) x 132/100 (executor.hpp).
  const step::CommContention h{132, 32, {}, true};
  constexpr std::int64_t K = step::CommContention::kScale;
  CHECK(h.rate(false, 1.0) == K * 132);
  CHECK(h.rate(true) == K * 100);          // no GEMM share: SMs over the SMs left, exactly
  CHECK(h.rate(true, 1.0) == K * 132 / 2);  // all GEMM: two waves
  CHECK(h.rate(true, 0.5) == std::llround(static_cast<double>(K * 132) / (0.5 * 2 + 0.5 * 1.32)));
  // Without persistent kernels (Ampere's cuBLAS: one CTA per tile) the share changes nothing.
  const step::CommContention a{108, 24, {}, false};
  CHECK(a.rate(true, 1.0) == K * 84);
  // The closed forms through contended_end: 1 s of GEMM inside a 3 s collective takes 2 s;
  // 1 s without GEMMs 1.32 s; half GEMM 1.66 s (to the rounding of the rate, 1 part in 10^3).
  const std::vector<step::BusyInterval> busy{{ps(0), ps(3 * kS)}};
  CHECK(step::contended_end(ps(0), ps(kS), busy, h, 1.0) == ps(2 * kS));
  CHECK(step::contended_end(ps(0), ps(kS), busy, h, 0.0) == ps(132 * kS / 100));
  CHECK(step::contended_end(ps(0), ps(kS), busy, h, 0.5).to_seconds() == doctest::Approx(1.66).epsilon(1e-3));
  // Per-rank devices: the flag travels with the rank's own device.
  step::CommContention mixed{132, 32, {{132, 32, 1, 2}, {108, 24, 0, 2}}, false};
  CHECK(mixed.of_rank(0).persistent);
  CHECK_FALSE(mixed.of_rank(1).persistent);
  CHECK_FALSE(mixed.of_rank(5).persistent);  // past the list: the struct's own fields
  // The presets: Hopper persistent, Ampere and Blackwell (cluster launch control) not.
  for (const char* name : {"h100", "h100-hbm2e-500w", "h100-pcie", "h200"}) {
    CAPTURE(name);
    CHECK(compute::find_device(name, "t").persistent_gemm);
  }
  for (const char* name : {"a100-80gb", "a100-40gb", "b200", "gb200", "tpu-v4"}) {
    CAPTURE(name);
    CHECK_FALSE(compute::find_device(name, "t").persistent_gemm);
  }
  // From the presets: an H100's all-GEMM node beside a collective at half rate, an A100's at 84/108.
  const auto hc = step::CommContention::of_device(compute::find_device("h100", "t"));
  const auto ac = step::CommContention::of_device(compute::find_device("a100-80gb", "t"));
  CHECK(hc.rate(true, 1.0) * 2 == hc.rate(false));
  CHECK(ac.rate(true, 1.0) * 108 == ac.rate(false) * 84);
}

TEST_CASE("executor and one-pass timer: a GEMM node beside a collective on a persistent-GEMM rank takes 2x") {
  // Rank 0: a collective (stream 1) 0..3 s; g0 (1 s, all GEMM) then e0 (1 s, no GEMM) on stream
  // 0. g0: 0..2 (two waves); e0 from 2: 1 s of work at 100/132 until 3 (0.758 s of work), the
  // rest at full rate: ends 3 + (1 - 100/132) = 3.2424... s.
  const step::CommContention h{132, 32, {}, true};
  step::TaskGraph g({0}, 2);
  const auto grp = g.add_group({"solo", {0}});
  g.add_collective(grp, 1, coll::OpKind::allgather, 1024, 3.0, {}, "ag");
  const NodeId g0 = g.add_compute(0, 0, NodePhase::forward, 1.0, {}, "gemm");
  g.set_gemm_share(g0, 1.0);
  const NodeId e0 = g.add_compute(0, 0, NodePhase::forward, 1.0, std::span<const NodeId>(&g0, 1), "eltwise");
  g.validate(1);
  CHECK(g.node(g0).gemm_share == 1.0F);
  CHECK(g.node(e0).gemm_share == 0.0F);
  step::Executor ex(g);
  ex.set_comm_contention(h);
  const auto r = ex.run();
  CHECK(r.end[g0] == ps(2 * kS));
  CHECK(r.end[e0].to_seconds() == doctest::Approx(3.0 + 32.0 / 132.0).epsilon(1e-12));
  const auto st = step::StaticTimer::make(g, h);
  REQUIRE(st != nullptr);
  CHECK(st->makespan({}) == std::optional<Time>(r.makespan));
  // Not persistent: the GEMM node is slowed as any kernel, 1.32 s.
  step::Executor plain(g);
  plain.set_comm_contention(step::CommContention{132, 32, {}, false});
  CHECK(plain.run().end[g0] == ps(132 * kS / 100));
  // Shares are clamped to [0, 1].
  g.set_gemm_share(e0, 7.0);
  CHECK(g.node(e0).gemm_share == 1.0F);
  g.set_gemm_share(e0, -1.0);
  CHECK(g.node(e0).gemm_share == 0.0F);
}

TEST_CASE("executor: a point-to-point transfer holds p2p_units on both of its ranks") {
  // NCCL's send/recv run one CTA per channel, 2 channels per network peer (p2p_units 2): on a
  // persistent-GEMM device a GEMM beside the transfer runs in two waves (ceil(132 / 130)), other
  // kernels at 130/132 of their rate, on the sender and on the receiver; without contention
  // nothing changes.
  const step::CommContention h{132, 32, {}, true, 2};
  CHECK(h.rate_units(2, 1.0) == step::CommContention::kScale * 66);
  CHECK(h.rate_units(2, 0.0) == step::CommContention::kScale * 130);
  CHECK(h.rate_units(34, 0.0) == step::CommContention::kScale * 98);  // a collective and a transfer
  CHECK(h.rate_units(500, 0.0) == step::CommContention::kScale * 1);   // capped: one unit left
  step::TaskGraph g({0, 1}, 2);
  const NodeId s = g.add_send(0, 1, 1, 1024, 7, 3.0, {}, "send");
  const NodeId r = g.add_recv(1, 1, 0, 1024, 7, {}, "recv");
  const NodeId g0 = g.add_compute(0, 0, NodePhase::forward, 1.0, {}, "gemm");
  g.set_gemm_share(g0, 1.0);
  const NodeId e1 = g.add_compute(1, 0, NodePhase::forward, 1.0, {}, "eltwise");
  g.validate(2);
  step::Executor ex(g);
  ex.set_comm_contention(h);
  const auto res = ex.run();
  CHECK(res.end[s] == ps(3 * kS));
  CHECK(res.end[r] == ps(3 * kS));
  CHECK(res.end[g0] == ps(2 * kS));
  CHECK(res.end[e1] == ps((132 * kS + 129) / 130));
  step::CommContention no_p2p = h;
  no_p2p.p2p_units = 0;
  step::Executor plain(g);
  plain.set_comm_contention(no_p2p);
  const auto q = plain.run();
  CHECK(q.end[g0] == ps(kS));
  CHECK(q.end[e1] == ps(kS));
  CHECK(compute::find_device("h100", "t").p2p_comm_units == 2);
  CHECK(compute::find_device("a100-80gb", "t").p2p_comm_units == 2);
}
