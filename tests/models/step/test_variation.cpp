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
  CHECK(r.forward_s == doctest::Approx(kForward_s).epsilon(1e-12));
  CHECK(r.backward_s == doctest::Approx(kBackward_s).epsilon(1e-12));
  CHECK(r.update_s == doctest::Approx(kUpdate_s).epsilon(1e-12));
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
    CHECK(r.step_time_s - base.step_time_s == doctest::Approx(extra).epsilon(1e-9));
    // A folded rank must never hide a slow one: every rank is simulated (rank 5 is not the
    // representative; a fold would report rank 0's undelayed time).
    CHECK(r.ranks_simulated == 8);
    CHECK(r.per_rank[static_cast<std::size_t>(slow)].backward_s == doctest::Approx(2 * kBackward_s).epsilon(1e-12));
    // The others finish their compute on time and then wait for it.
    const auto& other = r.per_rank[slow == 0 ? 1 : 0];
    CHECK(other.backward_s == doctest::Approx(kBackward_s).epsilon(1e-12));
    CHECK(other.exposed_comm_s > extra - kUpdate_s);
  }
}

TEST_CASE("equal factors on every rank still fold, and scale the step exactly") {
  auto c = config();
  c.compute_scale.assign(8, 2.0);
  const auto r = run(c);
  CHECK(r.ranks_simulated == 1);
  CHECK(r.update_s == doctest::Approx(2 * kUpdate_s).epsilon(1e-12));
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
  for (const double x : s.step_time_s) CHECK(x - base.step_time_s == doctest::Approx(extra).epsilon(1e-9));
}

TEST_CASE("quantiles interpolate between order statistics (Hyndman and Fan, definition 7)") {
  const std::vector<double> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  CHECK(step::quantile_sorted(v, 0.5) == 5.5);   // h = 4.5
  CHECK(step::quantile_sorted(v, 0.9) == doctest::Approx(9.1));  // h = 8.1
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
  CHECK(f[4] == doctest::Approx(2.0).epsilon(1e-15));
  // The step equals the one with ranks 4-7 at half speed.
  auto c = config();
  c.compute_scale = f;
  auto h = config();
  h.compute_scale = {1, 1, 1, 1, 2, 2, 2, 2};
  CHECK(run(c).step_time_s == doctest::Approx(run(h).step_time_s).epsilon(1e-12));
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
