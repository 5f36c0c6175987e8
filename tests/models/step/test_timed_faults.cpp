// Faults in time (models/step/timed_faults.hpp, issue 16): a collective re-timed at the fault
// instant by the progress rule (closed forms by hand), a timed fault slowing a step, a timed
// down link that cuts a group named with the instant, and the seeded fault process.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "models/step/step.hpp"
#include "models/step/timed_faults.hpp"
#include "models/step/topology_comm.hpp"
#include "sim/error.hpp"
#include "tests/models/step/star8.hpp"
#include "tests/models/step/toy_device.hpp"
#include "tests/models/step/units_workload.hpp"
#include "topologies/faults.hpp"

using namespace shardsim;

namespace {

std::vector<int> ranks(int a, int b) {
  std::vector<int> g;
  for (int r = a; r <= b; ++r) g.push_back(r);
  return g;
}

constexpr std::uint64_t kS = 64ULL << 20;

}  // namespace

TEST_CASE("a link halved mid-collective: the collective ends where the progress rule puts it") {
  const auto t = test::star8();
  const auto half = topo::apply_faults(t, topo::parse_faults(t, "link:d3-sw:0.5", "--faults"));
  step::TopologyComm intact(t, step::Fidelity::analytical, "ring"), faulty(half, step::Fidelity::analytical, "ring");
  const auto all = ranks(0, 7), far = ranks(4, 7);
  const double T0 = intact.time_s(coll::OpKind::allreduce, kS, all);
  const double T1 = faulty.time_s(coll::OpKind::allreduce, kS, all);
  REQUIRE(T1 > T0);
  SUBCASE("from half-way to the end: T0/2 + T1/2") {
    step::TimedFaultComm c(t, "", {{"link:d3-sw:0.5", T0 / 2, std::nullopt}}, step::Fidelity::analytical, "ring", 2);
    CHECK(c.states() == 2);
    CHECK(c.time_s(coll::OpKind::allreduce, kS, all) == T0);  // state 0: intact
    const Time e = c.end(coll::OpKind::allreduce, kS, all, "g", Time::zero());
    CHECK(e.to_seconds() == doctest::Approx(T0 / 2 + T1 / 2).epsilon(1e-9).scale(0));
    // A group that does not cross d3-sw keeps its time.
    CHECK(c.end(coll::OpKind::allreduce, kS, far, "g", Time::zero()).to_seconds() ==
          doctest::Approx(intact.time_s(coll::OpKind::allreduce, kS, far)).epsilon(1e-9).scale(0));
    // A collective that starts after the fault takes T1.
    const Time later = Time::from_seconds(T0);
    CHECK((c.end(coll::OpKind::allreduce, kS, all, "g", later) - later).to_seconds() == doctest::Approx(T1).epsilon(1e-9).scale(0));
  }
  SUBCASE("for a quarter of T0 from T0/4: T0/4 + T0/4 at rate 1/T1, the rest at 1/T0") {
    step::TimedFaultComm c(t, "", {{"link:d3-sw:0.5", T0 / 4, T0 / 2}}, step::Fidelity::analytical, "ring", 2);
    CHECK(c.states() == 3);
    const double left = 1.0 - 0.25 - (T0 / 4) / T1;
    const Time e = c.end(coll::OpKind::allreduce, kS, all, "g", Time::zero());
    CHECK(e.to_seconds() == doctest::Approx(T0 / 2 + left * T0).epsilon(1e-9).scale(0));
  }
}

TEST_CASE("a timed fault slows a data-parallel step; from time 0 it is the static fault") {
  const auto t = test::star8();
  const auto w = test::units_workload("two-units", 1e9, 1000, {100, 300});
  auto c = test::step_config(step::Strategy::replicated, 8, 2000);
  c.fold = false;
  const auto dev = test::toy_device();
  step::TopologyComm intact(t, step::Fidelity::analytical, "ring");
  const auto base = step::simulate_step(w, dev, c, intact);
  const auto half = topo::apply_faults(t, topo::parse_faults(t, "link:d3-sw:0.5", "--faults"));
  step::TopologyComm faulty(half, step::Fidelity::analytical, "ring");
  const auto fixed = step::simulate_step(w, dev, c, faulty);
  REQUIRE(fixed.step_time_s > base.step_time_s);
  step::TimedFaultComm from0(t, "", {{"link:d3-sw:0.5", 0, std::nullopt}}, step::Fidelity::analytical, "ring", 2);
  CHECK(step::simulate_step(w, dev, c, from0).step_time_s == doctest::Approx(fixed.step_time_s).epsilon(1e-9).scale(0));
  // A fault that begins after every collective has ended changes nothing.
  step::TimedFaultComm late(t, "", {{"link:d3-sw:0.5", 100.0, std::nullopt}}, step::Fidelity::analytical, "ring", 2);
  CHECK(step::simulate_step(w, dev, c, late).step_time_s == doctest::Approx(base.step_time_s).epsilon(1e-9).scale(0));
}

TEST_CASE("a timed down link that cuts a group in flight is an error naming the link, the group and the instant") {
  const auto t = test::star8();
  step::TimedFaultComm c(t, "", {{"down:d3-sw", 1e-3, std::nullopt}}, step::Fidelity::analytical, "ring", 2);
  // Before the fault: fine; a collective still in flight at 1 ms, or starting after, is cut.
  CHECK(c.time_s(coll::OpKind::allreduce, 1024, ranks(0, 7)) > 0);
  CHECK_THROWS_WITH_AS(c.end(coll::OpKind::allreduce, kS, ranks(0, 7), "dp 0", Time::zero()),
                       "--faults: down:d3-sw disconnects process group 'dp 0' (ranks 0-7) at 0.001 s: no path between "
                       "ranks 0 (d0) and 3 (d3) over the links that are up; expected faults that leave every process "
                       "group connected",
                       ConfigError);
  // A group without d3 is not cut.
  CHECK(c.end(coll::OpKind::allreduce, kS, ranks(4, 7), "dp 1", Time::zero()) > Time::zero());
}

TEST_CASE("the fault process: Poisson arrivals over the step from the seed") {
  const auto t = test::star8();
  const auto plan = step::parse_fault_plan(t, "link:d1-sw:0.5;random:5:down:2ms", "--faults");
  CHECK(plan.fixed == "link:d1-sw:0.5");
  REQUIRE(plan.random);
  CHECK(plan.random->rate == 5);
  CHECK(plan.random->fraction == 0);
  CHECK(plan.random->duration_s == doctest::Approx(2e-3).scale(0));
  const auto a = step::draw_faults(t, *plan.random, 1.0, 7), b = step::draw_faults(t, *plan.random, 1.0, 7);
  const auto d = step::draw_faults(t, *plan.random, 1.0, 8);
  auto same = [](const std::vector<step::TimedFault>& x, const std::vector<step::TimedFault>& y) {
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x[i].item != y[i].item || x[i].begin_s != y[i].begin_s || x[i].end_s != y[i].end_s) return false;
    }
    return true;
  };
  CHECK(same(a, b));
  CHECK_FALSE(same(a, d));
  // Arrivals in [0, H), in order, each on a link of the star, lasting the duration; the mean
  // count over many seeds is the rate (Poisson: mean 5, standard error sqrt(5/400) = 0.11).
  double total = 0;
  for (std::uint64_t seed = 1; seed <= 400; ++seed) {
    const auto f = step::draw_faults(t, *plan.random, 1.0, seed);
    total += static_cast<double>(f.size());
    double prev = 0;
    for (const auto& x : f) {
      CHECK(x.begin_s >= prev);
      CHECK(x.begin_s < 1.0);
      CHECK(x.item.rfind("down:d", 0) == 0);
      REQUIRE(x.end_s);
      CHECK(*x.end_s == doctest::Approx(x.begin_s + 2e-3).scale(0));
      CHECK_NOTHROW(topo::parse_faults(t, x.item, "--faults"));
      prev = x.begin_s;
    }
  }
  CHECK(total / 400 == doctest::Approx(5.0).epsilon(0.08).scale(0));
}

TEST_CASE("timed fault specs: bad items are clear errors") {
  const auto t = test::star8();
  auto plan_of = [&](const char* spec) { return step::parse_fault_plan(t, spec, "--faults"); };
  CHECK_THROWS_WITH_AS(plan_of("random:0"), "--faults: rate '0' in 'random:0'; expected a rate of faults per step > 0",
                       ConfigError);
  CHECK_THROWS_WITH_AS(plan_of("random:2:1.5"),
                       "--faults: fraction '1.5' in 'random:2:1.5'; expected a fraction of the rate in (0, 1] or 'down'",
                       ConfigError);
  CHECK_THROWS_WITH_AS(plan_of("random:1;random:2"), "--faults: a second fault process 'random:2'; expected one random: item",
                       ConfigError);
  CHECK_THROWS_WITH_AS(plan_of("link:d3-sw:0.5@1ms+0s"),
                       "--faults: duration '0s' in 'link:d3-sw:0.5@1ms+0s'; expected a positive time", ConfigError);
  CHECK_THROWS_AS(plan_of("link:d9-sw:0.5@1ms"), ConfigError);  // an unknown node, from topo::parse_faults
  const auto plan = step::parse_fault_plan(t, "link:d3-sw:0.5@1ms+2ms;down:d2-sw", "--faults");
  CHECK(plan.fixed == "down:d2-sw");
  REQUIRE(plan.timed.size() == 1);
  CHECK(plan.timed[0].item == "link:d3-sw:0.5");
  CHECK(plan.timed[0].begin_s == doctest::Approx(1e-3).scale(0));
  CHECK(*plan.timed[0].end_s == doctest::Approx(3e-3).scale(0));
}
