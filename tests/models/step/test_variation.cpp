// Per-rank compute variation (models/step/variation.hpp, issue 16): a slow rank delays a
// synchronous data-parallel step by exactly its extra compute, is never hidden by folding,
// and sampled steps are reproducible from the seed alone.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "models/step/rank_program.hpp"
#include "models/step/step.hpp"
#include "models/step/topology_comm.hpp"
#include "models/step/variation.hpp"
#include "sim/error.hpp"
#include "tests/models/step/star8.hpp"
#include "tests/models/step/toy_device.hpp"
#include "tests/models/step/units_workload.hpp"
#include "topologies/load.hpp"
#include "topologies/topology.hpp"

using namespace shardsim;

namespace {

using test::star8;

// Two units of 1,000 parameters. On the toy device (1 TFLOP/s, 56,000 B/s HBM):
// forward 1e9 FLOPs per unit = 1 ms, backward 2e9 = 2 ms, Adam update of 2,000 parameters x
// 28 B = 56,000 B = 1 s. The gradient buckets (2 kB) take microseconds: hidden but the last.
constexpr double kForward_s = 2 * 1e9 / 1e12, kBackward_s = 2 * 2e9 / 1e12, kUpdate_s = 2000.0 * 28 / 56000;

step::Workload workload() { return test::units_workload("two-units", 1e9, 1000, {100, 300}); }

step::StepConfig config() { return test::step_config(step::Strategy::replicated, 8, 2000); }  // one bucket per unit

step::StepResult run(const step::StepConfig& c) {
  const auto t = star8();
  step::TopologyComm comm(t, step::Fidelity::analytical, "ring");
  return step::simulate_step(workload(), test::toy_device(), c, comm);
}

}  // namespace

TEST_CASE("the toy step's compute is what the device gives by hand") {
  const auto r = run(config());
  CHECK(r.forward_s == doctest::Approx(kForward_s).epsilon(1e-12).scale(0));
  CHECK(r.backward_s == doctest::Approx(kBackward_s).epsilon(1e-12).scale(0));
  CHECK(r.update_s == doctest::Approx(kUpdate_s).epsilon(1e-12).scale(0));
  CHECK(r.ranks_simulated == 1);  // identical ranks fold
}

TEST_CASE("one rank at half speed delays a synchronous data-parallel step by its extra compute") {
  const auto base = run(config());
  for (const int slow : {0, 5}) {
    CAPTURE(slow);
    auto c = config();
    c.compute_scale.assign(8, 1.0);
    c.compute_scale[static_cast<std::size_t>(slow)] = 1.0 / 0.5;  // half speed: twice the time
    const auto r = run(c);
    // Every collective waits for the slow rank, and its update runs after the last one: the
    // step grows by the slow rank's extra forward, backward and update time, (1/0.5 - 1) x
    // (F + B + U), the communication after its backward being the same.
    const double extra = (1 / 0.5 - 1) * (kForward_s + kBackward_s + kUpdate_s);
    CHECK(r.step_time_s - base.step_time_s == doctest::Approx(extra).epsilon(1e-9).scale(0));
    // A folded rank must never hide a slow one: every rank is simulated (rank 5 is not the
    // representative; a fold would report rank 0's undelayed time).
    CHECK(r.ranks_simulated == 8);
    CHECK(r.per_rank[static_cast<std::size_t>(slow)].backward_s == doctest::Approx(2 * kBackward_s).epsilon(1e-12).scale(0));
    // The others finish their compute on time and then wait for it.
    const auto& other = r.per_rank[slow == 0 ? 1 : 0];
    CHECK(other.backward_s == doctest::Approx(kBackward_s).epsilon(1e-12).scale(0));
    CHECK(other.exposed_comm_s > extra - kUpdate_s);
  }
}

TEST_CASE("equal factors on every rank still fold, and scale the step exactly") {
  auto c = config();
  c.compute_scale.assign(8, 2.0);
  const auto r = run(c);
  CHECK(r.ranks_simulated == 1);
  CHECK(r.update_s == doctest::Approx(2 * kUpdate_s).epsilon(1e-12).scale(0));
  c.fold = false;
  const auto u = run(c);
  CHECK(u.ranks_simulated == 8);
  CHECK(u.step_time_s == r.step_time_s);
}

TEST_CASE("splitmix64 and xoshiro256** reproduce their reference outputs") {
  // splitmix64 from state 0: the first outputs of Vigna's splitmix64.c.
  std::uint64_t st = 0;
  CHECK(step::splitmix64(st) == 0xe220a8397b1dcdafULL);
  CHECK(step::splitmix64(st) == 0x6e789e6aa1b965f4ULL);
  CHECK(step::splitmix64(st) == 0x06c45d188009454fULL);
  // Uniforms lie in [0, 1) and have mean 1/2; normals mean 0, variance 1 (1e5 draws: the
  // standard errors are 0.0009, 0.0032 and 0.0045; checked at about 4.5 of them).
  step::Rng rng(42);
  double su = 0, sn = 0, sn2 = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = rng.uniform();
    REQUIRE(u >= 0);
    REQUIRE(u < 1);
    su += u;
    const double z = rng.normal();
    sn += z;
    sn2 += z * z;
  }
  CHECK(std::abs(su / n - 0.5) < 0.004);
  CHECK(std::abs(sn / n) < 0.015);
  CHECK(std::abs(sn2 / n - 1) < 0.02);
}

TEST_CASE("jitter distributions: lognormal has mean 1 and the given sigma of its log") {
  const auto d = step::parse_jitter("lognormal:0.1", "--compute-jitter");
  double s = 0, sl = 0, sl2 = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    auto rng = step::stream_rng(7, static_cast<std::uint64_t>(i), 3);
    const double f = d.sample(rng);
    s += f;
    sl += std::log(f);
    sl2 += std::log(f) * std::log(f);
  }
  const double mean_log = sl / n, var_log = sl2 / n - mean_log * mean_log;
  CHECK(std::abs(s / n - 1) < 0.002);                  // E = exp(mu + sigma^2/2) = 1
  CHECK(std::abs(mean_log + 0.005) < 0.002);           // mu = -sigma^2/2
  CHECK(std::abs(std::sqrt(var_log) - 0.1) < 0.002);   // sigma
}

TEST_CASE("an empirical histogram draws its factors with their weights") {
  const std::string path = "test_variation_hist.txt";
  {
    std::ofstream f(path);
    f << "# factor weight\n1.0 3\n2.0, 1\n";
  }
  const auto d = step::parse_jitter(path, "--compute-jitter");
  int twos = 0;
  const int n = 40000;
  for (int i = 0; i < n; ++i) {
    auto rng = step::stream_rng(1, 0, static_cast<std::uint64_t>(i));
    const double f = d.sample(rng);
    REQUIRE((f == 1.0 || f == 2.0));
    twos += f == 2.0;
  }
  CHECK(std::abs(static_cast<double>(twos) / n - 0.25) < 0.01);  // 1/4, sd 0.0022
  {
    std::ofstream f(path);
    f << "1.0 3\nfast 1\n";
  }
  CHECK_THROWS_WITH_AS(step::parse_jitter(path, "--compute-jitter"),
                       "test_variation_hist.txt: line 2: factor 'fast'; expected a positive finite factor", ConfigError);
  std::remove(path.c_str());
}

TEST_CASE("bad variation specs are clear errors") {
  CHECK_THROWS_WITH_AS(step::parse_jitter("lognormal:-1", "--compute-jitter"),
                       "--compute-jitter: sigma '-1' in 'lognormal:-1'; expected a number in [0, 10] (e.g. lognormal:0.05)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(step::parse_jitter("gamma:2", "--compute-jitter"),
                       "--compute-jitter: 'gamma:2' is neither lognormal:SIGMA, normal:SIGMA nor a readable file; expected "
                       "lognormal:SIGMA, normal:SIGMA or a histogram file of FACTOR WEIGHT lines",
                       ConfigError);
  CHECK_THROWS_WITH_AS(step::parse_slow_ranks("3:0", "--slow-ranks"),
                       "--slow-ranks: speed '0' in '3:0'; expected a positive speed fraction (0.5: half speed)", ConfigError);
  CHECK_THROWS_WITH_AS(step::parse_slow_ranks("3:0.5,3:0.7", "--slow-ranks"),
                       "--slow-ranks: rank 3 given twice; expected each rank once", ConfigError);
  const auto s = step::parse_slow_ranks("3:0.5,1:0.25", "--slow-ranks");
  REQUIRE(s.size() == 2);
  CHECK(s[1].rank == 1);
  CHECK(s[1].speed == 0.25);
  step::ComputeVariation v;
  v.slow = s;
  CHECK_THROWS_WITH_AS(v.check(2), "--slow-ranks: rank 3 in a step of 2 ranks; expected ranks 0..1", ConfigError);
}

TEST_CASE("sampled steps: same seed, same times; another seed, other times; the slow rank in every step") {
  const auto t = star8();
  step::TopologyComm comm(t, step::Fidelity::analytical, "ring");
  step::ComputeVariation v;
  v.jitter = step::parse_jitter("lognormal:0.05", "t");
  v.seed = 11;
  const auto a = step::simulate_step_samples(workload(), test::toy_device(), config(), comm, v, 50);
  const auto b = step::simulate_step_samples(workload(), test::toy_device(), config(), comm, v, 50);
  REQUIRE(a.step_time_s.size() == 50);
  CHECK(a.step_time_s == b.step_time_s);
  v.seed = 12;
  const auto c = step::simulate_step_samples(workload(), test::toy_device(), config(), comm, v, 50);
  CHECK(a.step_time_s != c.step_time_s);
  // Each sampled step (a one-pass evaluation of the graph, variation.cpp) is exactly the
  // executor's step with that step's factors, for a replicated and a partially sharded step.
  for (const auto strategy : {step::Strategy::replicated, step::Strategy::sharded}) {
    auto cc = config();
    cc.strategy = strategy;
    cc.shard_group = strategy == step::Strategy::sharded ? 4 : 0;
    v.seed = 11;
    const auto sampled = step::simulate_step_samples(workload(), test::toy_device(), cc, comm, v, 5);
    for (std::uint64_t k = 0; k < 5; ++k) {
      v.factors(k, 8, cc.compute_scale);
      CHECK(step::simulate_step(workload(), test::toy_device(), cc, comm).step_time_s == sampled.step_time_s[k]);
    }
  }
  v.seed = 12;
  // Step 0 of the sampled run is the full result's step.
  CHECK(a.first.step_time_s == a.step_time_s[0]);
  CHECK(a.first.ranks_simulated == 8);
  // The quantiles are ordered and within the samples.
  CHECK(a.min_s <= a.p50_s);
  CHECK(a.p50_s <= a.p90_s);
  CHECK(a.p90_s <= a.p99_s);
  CHECK(a.p99_s <= a.max_s);

  // Each step is max over ranks of its compute (the update dominates: 1 s x factor), so the
  // mean step is above the mean rank (factor mean 1) and grows with the ranks synchronised.
  const auto base = run(config());
  CHECK(a.mean_s > base.step_time_s);
  auto c2 = config();
  c2.dp = 2;
  v.seed = 11;
  const auto two = step::simulate_step_samples(workload(), test::toy_device(), c2, comm, v, 50);
  CHECK(two.mean_s < a.mean_s);

  // Slow ranks without jitter: every step the same, delayed as the single step above.
  step::ComputeVariation slow;
  slow.slow = step::parse_slow_ranks("5:0.5", "t");
  const auto s = step::simulate_step_samples(workload(), test::toy_device(), config(), comm, slow, 3);
  const double extra = (1 / 0.5 - 1) * (kForward_s + kBackward_s + kUpdate_s);
  for (const double x : s.step_time_s) CHECK(x - base.step_time_s == doctest::Approx(extra).epsilon(1e-9).scale(0));
}

TEST_CASE("quantiles interpolate between order statistics (Hyndman and Fan, definition 7)") {
  const std::vector<double> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  CHECK(step::quantile_sorted(v, 0.5) == 5.5);   // h = 4.5
  CHECK(step::quantile_sorted(v, 0.9) == doctest::Approx(9.1).scale(0));  // h = 8.1
  CHECK(step::quantile_sorted(v, 1.0) == 10);
  CHECK(step::quantile_sorted(v, 0.0) == 1);
}

TEST_CASE("Executor::set_compute_scale rejects wrong sizes and factors") {
  step::TaskGraph g({0, 1}, 1);
  g.add_compute(0, 0, step::NodePhase::forward, 1.0, {});
  g.add_compute(1, 0, step::NodePhase::forward, 1.0, {});
  step::Executor ex(g);
  const std::vector<double> one{2.0};
  CHECK_THROWS_AS(ex.set_compute_scale(one), std::invalid_argument);
  const std::vector<double> bad{1.0, 0.0};
  CHECK_THROWS_AS(ex.set_compute_scale(bad), std::invalid_argument);
  const std::vector<double> ok{1.0, 3.0};
  ex.set_compute_scale(ok);
  const auto r = ex.run();
  CHECK(r.end[0] == Time::from_seconds(1.0));
  CHECK(r.end[1] == Time::from_seconds(3.0));
  ex.set_compute_scale({});
  CHECK(ex.run().makespan == Time::from_seconds(1.0));
}

TEST_CASE("heterogeneous ranks: a device at half the speed is a factor 2, and a speed split balances them") {
  auto slow = test::toy_device();
  slow.name = "toy-half";
  slow.peak_flops[compute::MathType::bf16] = 0.5e12;
  slow.peak_flops[compute::MathType::fp32] = 0.5e12;
  slow.hbm_Bps = 28000;
  // Every op's roofline time doubles on it: one factor 2 per rank on it.
  const auto base = test::toy_device();
  std::vector<const compute::Device*> per_rank(8, &base);
  for (int r = 4; r < 8; ++r) per_rank[static_cast<std::size_t>(r)] = &slow;
  const auto f = step::device_factors(workload(), true, per_rank, base);
  CHECK(f[0] == 1.0);
  CHECK(f[4] == doctest::Approx(2.0).epsilon(1e-15).scale(0));
  // The step equals the one with ranks 4-7 at half speed.
  auto c = config();
  c.compute_scale = f;
  auto h = config();
  h.compute_scale = {1, 1, 1, 1, 2, 2, 2, 2};
  CHECK(run(c).step_time_s == doctest::Approx(run(h).step_time_s).epsilon(1e-12).scale(0));
  // Speeds 1,1,1,1,.5,.5,.5,.5 (total 6) share 8 x 3 = 24 samples: 4 each on the fast ranks,
  // 2 each on the slow ones; every rank's compute is then 4/3 of the even split's.
  const auto b = step::balanced_batches(f, 3);
  CHECK(b == std::vector<std::uint64_t>{4, 4, 4, 4, 2, 2, 2, 2});
  // Largest remainder: 3 samples at speeds 1, 1, 0.5 are shares 1.2, 1.2, 0.6 -> 1, 1, 1;
  // 4 samples at speeds 1, 0.5 are 2.67, 1.33 -> 3, 1.
  CHECK(step::balanced_batches({1, 1, 2}, 1) == std::vector<std::uint64_t>{1, 1, 1});
  CHECK(step::balanced_batches({1, 2}, 2) == std::vector<std::uint64_t>{3, 1});
  const auto devs2 = step::parse_rank_devices("0-3:h100,7:a100-80gb", 8, base, "--rank-devices");
  CHECK(devs2[0]->name == "h100");
  CHECK(devs2[4] == &base);
  CHECK(devs2[7]->name == "a100-80gb");
  CHECK_THROWS_WITH_AS(step::parse_rank_devices("6-9:h100", 8, base, "--rank-devices"),
                       "--rank-devices: ranks '6-9' in '6-9:h100'; expected a or a-b within 0..7", ConfigError);
}

namespace {

// The example of mixed generations (examples/topologies): 8 H100 (ranks 0-7) and 8 A100 80GB
// (ranks 8-15), each node on its NVSwitch, all on one InfiniBand switch.
topo::Topology mixed16() {
  return topo::make_topology(std::string(SHARDSIM_SOURCE_DIR) + "/examples/topologies/mixed-h100-a100.json", "test");
}

// Compute-bound ops of one size (1 TFLOP, no HBM bytes): every op has the same A100/H100 ratio,
// so the first-order factor of the whole rank (device_factors) is that of each op. Two units
// of 1,000 parameters, one 2 kB bucket each: the all-reduces take microseconds.
constexpr double kOpFlops = 1e12;
step::Workload uniform_ops() {
  step::Workload w = workload();
  for (auto& o : w.ops) {
    o.flops = kOpFlops;
    o.bytes = 0;
  }
  return w;
}

// Roofline of one compute-bound bf16 op (device.hpp; DESIGN 5): F / (peak x eff) + launch.
double op_s(const compute::Device& d) {
  return kOpFlops / (d.peak_flops.at(compute::MathType::bf16) * d.flops_eff) + d.launch_s;
}

}  // namespace

TEST_CASE("topology device kinds: 8 H100 + 8 A100, the A100 ranks set the synchronous step") {
  const auto t = mixed16();
  const auto& h100 = compute::find_device("h100", "test");
  const auto& a100 = compute::find_device("a100-80gb", "test");
  const auto devs = step::topology_rank_devices(t, 16, h100);
  REQUIRE(devs.size() == 16);
  for (std::size_t r = 0; r < 16; ++r) CHECK(devs[r] == (r < 8 ? &h100 : &a100));
  // One mechanism: the same vector as --rank-devices gives on the uniform topology.
  CHECK(devs == step::parse_rank_devices("8-15:a100-80gb", 16, h100, "--rank-devices"));
  // --rank-devices over it: the flag wins for the ranks it names, the others keep theirs.
  auto over = devs;
  step::apply_rank_devices("0:a100-80gb,15:h100", over, "--rank-devices");
  CHECK(over[0] == &a100);
  CHECK(over[1] == &h100);
  CHECK(over[14] == &a100);
  CHECK(over[15] == &h100);

  // The factor by hand from the datasheet peaks (989.5 vs 312 TFLOP/s bf16 dense, both at
  // flops_eff 0.7, 4 us launch each; models/compute/device.cpp): about 3.17.
  const double f = op_s(a100) / op_s(h100);
  CHECK(f == doctest::Approx((1e12 / (312e12 * 0.7) + 4e-6) / (1e12 / (989.5e12 * 0.7) + 4e-6)).epsilon(1e-12).scale(0));
  const auto w = uniform_ops();
  const auto factors = step::device_factors(w, true, devs, h100);
  CHECK(factors[0] == 1.0);
  CHECK(factors[8] == doctest::Approx(f).epsilon(1e-12).scale(0));

  step::TopologyComm comm(t, step::Fidelity::analytical, "ring");
  auto c = config();
  c.dp = 16;
  // Without the SMs a collective in flight takes from compute (Device::comm_units, issue 15),
  // so that the closed forms below are the device factors' alone (the unit-0 backward overlaps
  // the unit-1 all-reduce, a few microseconds that contention would stretch).
  auto base = h100;
  base.comm_units = 0;
  base.p2p_comm_units = 0;
  const auto uniform = step::simulate_step(w, base, c, comm);
  CHECK(uniform.forward_s == doctest::Approx(2 * op_s(h100)).epsilon(1e-9).scale(0));
  c.compute_scale = factors;
  const auto mixed = step::simulate_step(w, base, c, comm);
  // The headline figures are the slowest rank's: an A100's compute, by hand.
  CHECK(mixed.forward_s == doctest::Approx(2 * op_s(a100)).epsilon(1e-9).scale(0));
  CHECK(mixed.backward_s == doctest::Approx(2 * op_s(a100)).epsilon(1e-9).scale(0));
  CHECK(mixed.update_s == doctest::Approx(f * uniform.update_s).epsilon(1e-9).scale(0));
  // Every collective waits for the A100 ranks and their update runs last: the step grows by
  // their extra forward, backward and update, (f - 1) x (F + B + U) of the H100 step (the
  // gradient all-reduces, microseconds, are the same after their backward).
  const double extra = (f - 1) * (uniform.forward_s + uniform.backward_s + uniform.update_s);
  CHECK(mixed.step_time_s - uniform.step_time_s == doctest::Approx(extra).epsilon(1e-9).scale(0));
  // The H100 ranks compute at their own speed, then wait.
  CHECK(mixed.ranks_simulated == 16);
  CHECK(mixed.per_rank[0].backward_s == doctest::Approx(2 * op_s(h100)).epsilon(1e-9).scale(0));
  CHECK(mixed.per_rank[0].exposed_comm_s > (f - 1) * uniform.backward_s);
  // All sixteen ranks on A100s give the same step: the faster half changes nothing.
  c.compute_scale.assign(16, factors[8]);
  CHECK(step::simulate_step(w, base, c, comm).step_time_s == doctest::Approx(mixed.step_time_s).epsilon(1e-12).scale(0));
}

TEST_CASE("topology device kinds: an unknown kind names its node and lists the devices") {
  const std::string j =
      R"({"builder": "custom", "device_model": "h100", "nodes": [{"name": "sw", "kind": "switch"}, {"name": "g0"},)"
      R"( {"name": "g1", "device": "a200"}], "links": [{"src": "g0", "dst": "sw", "bw": "1GB/s", "lat": "1us"},)"
      R"( {"src": "g1", "dst": "sw", "bw": "1GB/s", "lat": "1us"}]})";
  const auto t = topo::make_topology(j, "t.json");
  const auto& h100 = compute::find_device("h100", "test");
  const std::string expected = "t.json: /nodes/2/device: unknown device 'a200'; expected " + one_of(compute::device_registry().names());
  CHECK_THROWS_WITH_AS(step::topology_rank_devices(t, 2, h100), expected.c_str(), ConfigError);
  // Checked beyond the step's ranks too: a bad file is a bad file.
  CHECK_THROWS_WITH_AS(step::topology_rank_devices(t, 1, h100), expected.c_str(), ConfigError);
  // The family name resolves as a topology's device_model does (DGX A100: the 80 GB part).
  const auto ok = topo::make_topology(j.substr(0, j.find("a200")) + "a100" + j.substr(j.find("a200") + 4), "t.json");
  CHECK(step::topology_rank_devices(ok, 2, h100)[1]->name == "a100-80gb");
}

TEST_CASE("heterogeneous ranks: each rank's compute shares its own device's SMs with NCCL, its memory fits its own HBM") {
  // Two units on the toy device, every all-reduce 1 ms (FunctionComm). Backward of unit 1
  // (2 ms) ends at 4 ms; its bucket's all-reduce runs 4-5 ms beside the backward of unit 0.
  // On a device whose collectives take half its units (comm_units 50 of 100, executor.hpp),
  // that backward does 0.5 ms of work in 4-5 ms and the other 1.5 ms after: it ends at 6.5 ms
  // instead of 6; the last all-reduce 6.5-7.5 ms, then the 1 s update. Without contention:
  // 7 ms + 1 s. One rank of that kind paces the synchronous step (every collective waits for
  // it), so the step is its 1.0075 s.
  auto a = test::toy_device();
  a.compute_units = 100;  // no comm_units: no contention
  auto b = a;
  b.name = "toy-b";
  b.comm_units = 50;
  step::FunctionComm comm([](coll::OpKind, std::uint64_t, const std::vector<int>&) { return 1e-3; });
  auto c = config();
  const auto uniform = step::simulate_step(workload(), a, c, comm);
  CHECK(uniform.step_time_s == doctest::Approx(7e-3 + 1.0).epsilon(1e-12).scale(0));
  c.rank_devices.assign(8, &a);
  c.rank_devices[3] = &b;
  const auto mixed = step::simulate_step(workload(), a, c, comm);
  CHECK(mixed.step_time_s == doctest::Approx(7.5e-3 + 1.0).epsilon(1e-12).scale(0));
  CHECK(mixed.ranks_simulated == 8);  // rank 3 is not folded with the others
  // Every rank ends with it: the last all-reduce waits for rank 3, the update follows it.
  for (const auto& x : mixed.per_rank) {
    CAPTURE(x.rank);
    CHECK(x.step_time_s == mixed.step_time_s);
  }
  // The same with every rank of kind b (the base device's units would give the uniform step).
  auto all_b = config();
  all_b.rank_devices.assign(8, &b);
  CHECK(step::simulate_step(workload(), a, all_b, comm).step_time_s == mixed.step_time_s);
  // Sampled steps (the one-pass timer) time it the same.
  step::ComputeVariation none;
  CHECK(step::simulate_step_samples(workload(), a, c, comm, none, 2).step_time_s.back() == mixed.step_time_s);

  // Memory: 2,000 parameters x 16 B (mixed-precision Adam) + 400 B of activations + two
  // 2,000 B buckets = 36,400 B on every rank; rank 5 on a device of 30,000 B does not fit.
  CHECK(mixed.fits);
  auto small = a;
  small.name = "toy-small";
  small.hbm_bytes = 30000;
  auto m = config();
  m.rank_devices.assign(8, &a);
  m.rank_devices[5] = &small;
  const auto r = step::simulate_step(workload(), a, m, comm);
  CHECK(r.memory.peak == doctest::Approx(36400).scale(0));
  CHECK_FALSE(r.fits);
  REQUIRE(r.does_not_fit);
  CHECK(r.does_not_fit->find("rank 5 (toy-small): peak") == 0);
  CHECK(r.hbm_bytes == 30000);
}
