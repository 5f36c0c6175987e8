// Capacity planner: search space, every rejection reason, the Pareto set, validation.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>

#include "analysis/plan/plan.hpp"
#include "sim/error.hpp"

using namespace shardsim::plan;

namespace {

PlanRequest small() {
  PlanRequest r;
  r.model = "gpt3-125m";  // default seq 2048
  r.steps = 10;
  r.global_batch = 24;
  r.hardware = {"dgx-h100-8", "dgx-h100-16"};
  r.strategies = {"replicated", "zero3"};
  return r;
}

std::string error_of(const PlanRequest& r) {
  try {
    make_plan(r);
  } catch (const shardsim::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("search order, batch not divisible, time to train = steps x step time") {
  const auto p = make_plan(small());
  // Per preset: replicated x 2 buckets, zero3 x 1 (works per unit): 3 candidates, 2 presets.
  REQUIRE(p.candidates.size() == 6);
  CHECK(p.steps == 10);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& c = p.candidates[i];
    CHECK(c.hardware == "dgx-h100-8");
    CHECK(c.devices == 8);
    CHECK(c.batch_per_device == 3);  // 24 / 8
    CHECK(c.feasible);
    CHECK(c.time_to_train_s == doctest::Approx(10 * c.step_time_s).epsilon(1e-12));
    CHECK(!c.cost_usd.has_value());
  }
  CHECK(p.candidates[0].strategy == "replicated");
  CHECK(p.candidates[0].bucket_bytes == 25ULL << 20);
  CHECK(p.candidates[1].bucket_bytes == 100ULL << 20);
  CHECK(p.candidates[2].strategy == "zero3");
  for (std::size_t i = 3; i < 6; ++i) {
    CHECK(!p.candidates[i].feasible);
    CHECK(p.candidates[i].rejected == "batch not divisible: global batch 24 over 16 devices");
  }
}

TEST_CASE("steps from tokens: ceil(tokens / (global batch x seq))") {
  auto r = small();
  r.steps.reset();
  r.tokens = 1e6;
  r.global_batch = 8;
  r.hardware = {"dgx-h100-8"};
  r.strategies = {"zero3"};
  // 1e6 / (8 x 2048) = 61.04 -> 62 steps.
  CHECK(make_plan(r).steps == 62);
}

TEST_CASE("the Pareto set: no member dominated, every other feasible candidate dominated") {
  auto r = small();
  r.global_batch = 32;
  r.price_per_device_hour = 2.0;
  const auto p = make_plan(r);
  auto dominates = [](const Candidate& b, const Candidate& a) {
    return b.time_to_train_s <= a.time_to_train_s && b.devices <= a.devices && *b.cost_usd <= *a.cost_usd &&
           (b.time_to_train_s < a.time_to_train_s || b.devices < a.devices || *b.cost_usd < *a.cost_usd);
  };
  REQUIRE(!p.pareto.empty());
  for (const auto& a : p.candidates) {
    if (!a.feasible) continue;
    // cost = devices x hours x price
    CHECK(*a.cost_usd == doctest::Approx(static_cast<double>(a.devices) * a.time_to_train_s / 3600.0 * 2.0));
    bool dominated = false;
    for (auto j : p.pareto) dominated = dominated || dominates(p.candidates[j], a);
    if (a.pareto) CHECK_FALSE(dominated);
  }
  for (std::size_t k = 1; k < p.pareto.size(); ++k) {
    CHECK(p.candidates[p.pareto[k - 1]].time_to_train_s <= p.candidates[p.pareto[k]].time_to_train_s);
  }
}

TEST_CASE("over the deadline and over budget are explained") {
  auto r = small();
  r.hardware = {"dgx-h100-8"};
  r.strategies = {"zero3"};
  r.deadline_s = 1e-6;
  auto p = make_plan(r);
  REQUIRE(p.candidates.size() == 1);
  CHECK(p.pareto.empty());
  CHECK(p.candidates[0].rejected == "over the deadline: " + format_duration(p.candidates[0].time_to_train_s) + " > 1e-06 s");
  r.deadline_s.reset();
  r.price_per_device_hour = 3600.0;  // 1 USD per device-second
  r.budget_usd = 1e-3;
  p = make_plan(r);
  const auto& c = p.candidates[0];
  // cost = 8 devices x time_to_train seconds x 1 USD/s
  CHECK(*c.cost_usd == doctest::Approx(8 * c.time_to_train_s));
  CHECK(c.rejected == fmt::format("over budget: ${:.0f} > $0", *c.cost_usd));
}

TEST_CASE("does not fit names every memory component, largest first") {
  PlanRequest r;
  r.model = "gpt3-175b";
  r.steps = 1;
  r.global_batch = 8;  // one sample per GPU: no accumulation left to try
  r.hardware = {"dgx-h100-8"};
  r.strategies = {"replicated"};
  r.bucket_bytes = {25ULL << 20};
  const auto p = make_plan(r);
  REQUIRE(p.candidates.size() == 1);
  const auto& c = p.candidates[0];
  CHECK(!c.feasible);
  // Mixed-precision AdamW: optimizer state 12 B/param is the largest component (ZeRO Table 1).
  CHECK(c.rejected.rfind("does not fit: peak ", 0) == 0);
  CHECK(c.rejected.find("> HBM 80.0 GiB (optimizer ") != std::string::npos);
  CHECK(c.rejected.find("with gradient accumulation 1 (micro-batch 1)") != std::string::npos);
  CHECK(p.pareto.empty());
}

TEST_CASE("sharded searches k = N and the largest divisor of N not above sqrt(N)") {
  auto r = small();
  r.hardware = {"dgx-h100-16"};
  r.global_batch = 16;
  r.strategies = {"sharded"};
  r.bucket_bytes = {25ULL << 20};
  const auto p = make_plan(r);
  REQUIRE(p.candidates.size() == 2);
  CHECK(p.candidates[0].shard_group == 16);
  CHECK(p.candidates[1].shard_group == 4);  // 16 = 4 x 4
}

TEST_CASE("plan input errors name the flag") {
  auto r = small();
  r.tokens = 1e9;
  CHECK(error_of(r) == "--tokens/--steps: both; expected exactly one of --tokens and --steps");
  r = small();
  r.budget_usd = 10;
  CHECK(error_of(r) == "--budget: a budget without --price-per-device-hour; expected --price-per-device-hour X (USD)");
  r = small();
  r.model = "resnet50";
  r.steps.reset();
  r.tokens = 1e9;
  CHECK(error_of(r) == "--tokens: model resnet50 has no sequence length; expected --steps for a model without tokens");
  r = small();
  r.hardware = {"abacus"};
  CHECK(error_of(r).rfind("--hardware: unknown preset 'abacus'; expected a preset family (", 0) == 0);
  CHECK(parse_tokens("300B", "--tokens") == 3e11);
  CHECK(parse_tokens("2T", "--tokens") == 2e12);
  CHECK(parse_duration_s("30d", "--deadline") == 30 * 86400.0);
  CHECK(parse_duration_s("90min", "--deadline") == 5400.0);
  CHECK(parse_duration_s("12h", "--deadline") == 43200.0);
  CHECK_THROWS_WITH(parse_duration_s("xd", "--deadline"), "--deadline: 'xd'; expected a duration such as 30d, 12h, 90min or 3600s");
  CHECK(format_duration(41.25 * 86400) == "41.2 days");
}
