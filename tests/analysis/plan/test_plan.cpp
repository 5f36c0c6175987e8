// Capacity planner: search space, every rejection reason, the Pareto set, validation.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>

#include "analysis/plan/fit.hpp"
#include "analysis/plan/plan.hpp"
#include "models/compute/device.hpp"
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
    CHECK(c.time_to_train_s == doctest::Approx(10 * c.step_time_s).epsilon(1e-12).scale(0));
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
    CHECK(*a.cost_usd == doctest::Approx(static_cast<double>(a.devices) * a.time_to_train_s / 3600.0 * 2.0).scale(0));
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
  CHECK(*c.cost_usd == doctest::Approx(8 * c.time_to_train_s).scale(0));
  CHECK(c.rejected == fmt::format("over budget: ${:.0f} > $0", *c.cost_usd));
}

TEST_CASE("does not fit: peak against HBM, the largest term, how far over, the step if it fit") {
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
  CHECK(p.pareto.empty());
  // Mixed-precision AdamW replicated (ZeRO Table 1): weights 2P, gradients 2P, optimizer state
  // 12P bytes, so the optimizer state is the largest term, and P = 175e9 puts the peak (at
  // least 16P = 2.8 TB) far over the H100's 80 GiB.
  const auto& m = c.memory;
  const double P = m.at("params").get<double>() / 2;
  CHECK(P == doctest::Approx(175e9).epsilon(0.01).scale(0));
  CHECK(m.at("optimizer").get<double>() == doctest::Approx(12 * P).scale(0));
  const double peak = m.at("peak").get<double>();
  CHECK(peak == doctest::Approx(m.at("params").get<double>() + m.at("grads").get<double>() + m.at("optimizer").get<double>() +
                                m.at("activations").get<double>() + m.at("buffers").get<double>()).scale(0));
  CHECK(c.hbm_bytes == 80.0 * (1ULL << 30));
  CHECK(c.step_time_s > 0);
  CHECK(c.rejected == does_not_fit_text(m, c.hbm_bytes, c.step_time_s) +
                          " with gradient accumulation 1 (micro-batch 1)");
  // The line itself, with the numbers above written out (units::format_bytes: 3 significant
  // digits in the largest binary unit; units::format_seconds: 4).
  auto tib = [](double b) { return fmt::format("{:.3g} TiB", b / std::pow(1024.0, 4)); };
  const std::string step = c.step_time_s >= 1 ? fmt::format("{:.4g} s", c.step_time_s)
                                              : fmt::format("{:.4g} ms", c.step_time_s * 1e3);
  CHECK(c.rejected == fmt::format("does not fit: peak {} > HBM 80 GiB (optimizer {} is the largest term; {} over); "
                                  "if it fit: step {} with gradient accumulation 1 (micro-batch 1)",
                                  tib(peak), tib(12 * P), tib(peak - 80.0 * (1ULL << 30)), step));
}

TEST_CASE("does_not_fit_text names the largest term (the first of equals) and the overflow") {
  const nlohmann::json m = {{"params", 1.0 * (1ULL << 30)}, {"grads", 1.0 * (1ULL << 30)}, {"optimizer", 6.0 * (1ULL << 30)},
                            {"activations", 6.0 * (1ULL << 30)}, {"buffers", 0.0}, {"peak", 14.0 * (1ULL << 30)}};
  CHECK(does_not_fit_text(m, 10.0 * (1ULL << 30), 1.2345) ==
        "does not fit: peak 14 GiB > HBM 10 GiB (optimizer 6 GiB is the largest term; 4 GiB over); if it fit: step 1.234 s");
  nlohmann::json a = m;
  a["activations"] = 61.2 * (1ULL << 30);
  a["peak"] = 69.2 * (1ULL << 30);
  CHECK(does_not_fit_text(a, 64.0 * (1ULL << 30), 0.0125) ==
        "does not fit: peak 69.2 GiB > HBM 64 GiB (activations 61.2 GiB is the largest term; 5.2 GiB over); "
        "if it fit: step 12.5 ms");
}

TEST_CASE("a preset's device resolves as in step: dgx-a100 carries a100-80gb (issue 12)") {
  // The dgx-a100 presets name the family "a100"; plan used to look that name up as a preset
  // ("unknown device 'a100'") while step mapped it. One function now serves both.
  CHECK(shardsim::compute::device_for_model("a100", "--hardware").name == "a100-80gb");
  CHECK(shardsim::compute::device_for_model("h100", "--hardware").name == "h100");
  CHECK_THROWS_WITH(shardsim::compute::device_for_model("abacus", "--hardware"),
                    doctest::Contains("--hardware: unknown device 'abacus'; expected one of "));
  PlanRequest r = small();
  r.hardware = {"dgx-a100-8"};
  r.global_batch = 8;
  r.strategies = {"zero3"};
  const auto p = make_plan(r);
  REQUIRE(p.candidates.size() == 1);
  CHECK(p.candidates[0].device == "a100-80gb");
  CHECK(p.candidates[0].hbm_bytes == 80.0 * (1ULL << 30));
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
  // Seconds are a deadline's own unit, not a simulated time: beyond the simulator's range
  // (9.2e6 s) they still parse.
  CHECK(parse_duration_s("3600s", "--deadline") == 3600.0);
  CHECK(parse_duration_s("1e8s", "--deadline") == 1e8);
  CHECK(parse_duration_s("500ms", "--deadline") == 0.5);
  CHECK_THROWS_WITH(parse_duration_s("3600", "--deadline"),
                    "--deadline: '3600' has no unit; expected a time such as 1us, 936ns, 2ms, 0.5s (units ps ns us ms s)");
  CHECK(format_duration(41.25 * 86400) == "41.2 days");
}
