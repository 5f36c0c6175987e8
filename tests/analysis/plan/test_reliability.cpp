// Goodput under failures (analysis/plan/reliability.hpp, issue 16): the Llama 3 rates give
// the paper's interruption count back, the intervals follow Young and Daly, and Daly's
// interval is (near) the optimum of the wall-clock model it comes with.
#include <doctest/doctest.h>

#include <cmath>

#include "analysis/plan/reliability.hpp"
#include "sim/error.hpp"

using namespace shardsim;

TEST_CASE("the Llama 3 rates give 419 unexpected interruptions in 54 days on 16,384 GPUs") {
  const auto r = plan::llama3_rates();
  const double per_h = plan::job_failures_per_h(r, 16384, 8);
  CHECK(per_h * 54 * 24 == doctest::Approx(419).epsilon(1e-12).scale(0));
  CHECK(3600 / per_h / 3600 == doctest::Approx(1296.0 / 419).epsilon(1e-12).scale(0));  // ~3.1 h between failures
  // Linear in the devices (hosts of 8): half the GPUs, half the failures.
  CHECK(plan::job_failures_per_h(r, 8192, 8) == doctest::Approx(per_h / 2).epsilon(1e-12).scale(0));
  // A partial host counts as a host.
  CHECK(plan::job_failures_per_h(r, 9, 8) - plan::job_failures_per_h(r, 8, 8) ==
        doctest::Approx(r.gpu_per_h + r.nic_per_h + r.link_per_h + r.software_per_h + r.host_per_h).epsilon(1e-12).scale(0));
  // GPUs are the largest share: 268 of 419.
  CHECK(r.gpu_per_h * 16384 * 1296 == doctest::Approx(268).epsilon(1e-12).scale(0));
}

TEST_CASE("Young's and Daly's intervals") {
  const double delta = 60, M = 3 * 3600.0;
  CHECK(plan::young_interval(delta, M) == doctest::Approx(std::sqrt(2 * 60 * 10800.0)).epsilon(1e-15).scale(0));  // 1138.4 s
  const double x = delta / (2 * M);
  CHECK(plan::daly_interval(delta, M) ==
        doctest::Approx(std::sqrt(2 * delta * M) * (1 + std::sqrt(x) / 3 + x / 9) - delta).epsilon(1e-15).scale(0));
  // Daly tends to Young when checkpoints are cheap against the MTBF.
  CHECK(plan::daly_interval(1e-3, M) / plan::young_interval(1e-3, M) == doctest::Approx(1).epsilon(1e-3).scale(0));
  // delta >= 2M: checkpoint every MTBF.
  CHECK(plan::daly_interval(3 * M, M) == M);
}

TEST_CASE("Daly's wall-clock model: the no-failure limit, first order, and its optimum") {
  const double delta = 60, R = 600, tau = 1800;
  // No failures: only the checkpoint overhead, (tau + delta) / tau.
  CHECK(plan::wall_per_work(tau, delta, R, 1e15) == doctest::Approx((tau + delta) / tau).epsilon(1e-9).scale(0));
  // Rare failures: first order in 1/M, T_w/T_s = (tau + delta)/tau x (1 + R/M + (tau + delta)/(2M)):
  // each failure loses the restart and on average half an interval.
  const double M = 1e8;
  const double first = (tau + delta) / tau * (1 + R / M + (tau + delta) / (2 * M));
  CHECK(plan::wall_per_work(tau, delta, R, M) == doctest::Approx(first).epsilon(1e-9).scale(0));
  // Daly's interval is within a hair of the model's minimum: 10% either side is no better.
  const double M2 = 3 * 3600.0;
  const double best = plan::daly_interval(delta, M2);
  const double w = plan::wall_per_work(best, delta, R, M2);
  CHECK(w <= plan::wall_per_work(best * 1.1, delta, R, M2));
  CHECK(w <= plan::wall_per_work(best * 0.9, delta, R, M2));
  // And far better than checkpointing every 10 hours (a checkpoint lost every ~3 hours).
  CHECK(w < plan::wall_per_work(36000, delta, R, M2));
}

TEST_CASE("reliability(): 1 TB of state at 100 GB/s on 16,384 GPUs") {
  plan::ReliabilityInput in;
  in.devices = 16384;
  in.state_bytes = 1e12;
  in.write_Bps = 100e9;
  in.restart_s = 600;
  const auto r = plan::reliability(in);
  CHECK(r.checkpoint_s == doctest::Approx(10).epsilon(1e-15).scale(0));
  CHECK(r.restore_s == doctest::Approx(610).epsilon(1e-15).scale(0));
  CHECK(r.mtbf_s == doctest::Approx(1296.0 * 3600 / 419).epsilon(1e-12).scale(0));
  CHECK(r.interval_s == r.daly_interval_s);
  CHECK(r.goodput == doctest::Approx(1 / plan::wall_per_work(r.interval_s, 10, 610, r.mtbf_s)).epsilon(1e-15).scale(0));
  // About 1 - sqrt(2 delta / M) - R / M = 1 - 0.041 - 0.055: ~0.90 (Meta reports "more than
  // 90% effective training time").
  CHECK(r.goodput > 0.88);
  CHECK(r.goodput < 0.92);
  in.interval_s = 4 * 3600.0;
  CHECK(plan::reliability(in).goodput < r.goodput);
}

TEST_CASE("reliability(): bad input names the flag") {
  plan::ReliabilityInput in;
  in.devices = 8;
  in.state_bytes = 1e9;
  CHECK_THROWS_WITH_AS(plan::reliability(in), "--storage-bandwidth: 0 B/s; expected a positive bandwidth", ConfigError);
  in.write_Bps = 1e9;
  in.interval_s = 0.0;
  CHECK_THROWS_WITH_AS(plan::reliability(in), "--checkpoint-interval: 0 s; expected a positive interval", ConfigError);
  in.interval_s.reset();
  in.state_bytes = 0;
  CHECK_THROWS_WITH_AS(plan::reliability(in), "--state-bytes: 0; expected a positive checkpoint size", ConfigError);
}
