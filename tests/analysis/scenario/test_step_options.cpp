// StepOptions (analysis/scenario/step_options.hpp): one table drives JSON parsing, the
// `config` echo and the sweep keys; exact messages for every value rule; run_step from JSON and
// from the struct are one path.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>

#include "analysis/scenario/scenario.hpp"
#include "analysis/scenario/step_run.hpp"
#include "sim/error.hpp"

using nlohmann::json;
using shardsim::ConfigError;
using namespace shardsim::analysis;

namespace {

std::string error_of(const json& j) {
  try {
    (void)parse_step_options(j);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("the table: unique keys and short flags, help for each, defaults from the struct") {
  std::set<std::string> keys, shorts;
  for (const auto& s : step_option_table()) {
    CHECK_MESSAGE(keys.insert(s.key).second, s.key);
    if (*s.short_flag) CHECK_MESSAGE(shorts.insert(s.short_flag).second, s.short_flag);
    CHECK_MESSAGE(std::string(s.help).size() > 5, s.key);
    const auto t = type_name(s);
    if (t == "count" || t == "number") CHECK_MESSAGE(std::string(s.expected).rfind("a positive", 0) == 0, s.key);
  }
  CHECK(keys.size() == step_option_keys().size());
  const auto& t = step_option_table();
  auto row = [&](const std::string& k) {
    return *std::find_if(t.begin(), t.end(), [&](const StepOptionSpec& s) { return k == s.key; });
  };
  CHECK(default_text(row("optimizer")) == "adam");
  CHECK(default_text(row("grad-accum")) == "1");
  CHECK(default_text(row("no-defer")) == "false");
  CHECK(default_text(row("dp")) == "-");
  CHECK(type_name(row("dp")) == "count");
  CHECK(type_name(row("batch-per-device")) == "number");
  CHECK(type_name(row("checkpointing")) == "flag");
  // The sweep command `step` accepts exactly the table's keys.
  CHECK(find_scenario_command("step")->keys == step_option_keys());
}

TEST_CASE("unknown keys name the JSON path, the key and every valid key") {
  std::string valid;
  for (const auto& k : step_option_keys()) valid += (valid.empty() ? "" : ", ") + k;
  CHECK(error_of(json{{"topology", "dgx-h100-8"}, {"colour", "red"}}) ==
        "/colour: unknown key 'colour' for a step; expected one of " + valid);
  CHECK(valid.find("model, trace, topology") == 0);
  CHECK(error_of(json::array()) == "step options: []; expected a JSON object of options");
}

TEST_CASE("value rules: strings, flags, counts and numbers, with exact messages") {
  CHECK(error_of(json{{"dp", 0}}) == "--dp: 0; expected a positive data-parallel size");
  CHECK(error_of(json{{"dp", 2.5}}) == "--dp: 2.5; expected a positive data-parallel size");
  CHECK(error_of(json{{"dp", true}}) == "--dp: true; expected a positive data-parallel size");
  CHECK(error_of(json{{"batch-per-device", -1}}) == "--batch-per-device: -1; expected a positive batch");
  CHECK(error_of(json{{"seq", "0.5"}}) == "--seq: 0.5; expected a positive sequence length");
  CHECK(error_of(json{{"grad-accum", 0}}) == "--grad-accum: 0; expected a positive number of micro-batches");
  CHECK(error_of(json{{"checkpointing", "yes"}}) == "--checkpointing: \"yes\"; expected true or false");
  CHECK(error_of(json{{"model", json::array()}}) == "--model: []; expected a string");
  CHECK(error_of(json{{"dp", 1e16}}) == "--dp: 1e+16; expected a positive data-parallel size");

  const auto o = parse_step_options(json{{"model", "gpt3-125m"}, {"dp", "8"}, {"seq", 1024}, {"bucket", "4MiB"},
                                         {"device", nullptr}, {"trace", ""}, {"no-fusion", true}, {"grad-accum", "1K"}});
  CHECK(o.model == "gpt3-125m");
  CHECK(o.dp == 8u);
  CHECK(o.seq == 1024.0);
  CHECK(o.bucket == "4MiB");
  CHECK(!o.device.has_value());  // null: unset
  CHECK(!o.trace.has_value());   // "": unset, as an empty flag
  CHECK(o.no_fusion);
  CHECK(o.grad_accum == 1000u);  // a count suffix is decimal (units::parse_count)
  CHECK(o.optimizer == "adam");  // the struct's default

  StepOptions bad;
  bad.grad_accum = 0;
  CHECK_THROWS_WITH_AS(validate_step_options(bad), "--grad-accum: 0; expected a positive number of micro-batches",
                       ConfigError);
  bad = StepOptions{};
  bad.batch_per_device = 0.5;
  CHECK_THROWS_WITH_AS(validate_step_options(bad), "--batch-per-device: 0.5; expected a positive batch", ConfigError);
}

TEST_CASE("config echo: options with a default always, optional ones when set; parsing it gives the options back") {
  StepOptions o;
  o.topology = "bus:n=4,bw=50GB/s,lat=1us";
  o.model = "gpt3-125m";
  o.batch_per_device = 2;
  const json j = to_json(o);
  CHECK(j == json{{"model", "gpt3-125m"}, {"topology", "bus:n=4,bw=50GB/s,lat=1us"}, {"optimizer", "adam"},
                  {"precision", "mixed"}, {"batch-per-device", 2.0}, {"fidelity", "analytical"}, {"algorithm", "auto"},
                  {"compute", "roofline"}, {"grad-accum", 1}, {"checkpointing", false}, {"no-defer", false},
                  {"no-fusion", false}, {"no-prefetch", false}});
  CHECK(to_json(parse_step_options(j)) == j);
}

TEST_CASE("run_step: JSON and struct give the same report; compare rejects --strategy") {
  const json flags = {{"model", "gpt3-125m"}, {"topology", "bus:n=4,bw=50GB/s,lat=1us"}, {"device", "h100"},
                      {"batch-per-device", 1}, {"strategy", "zero1"}};
  StepOptions o;
  o.model = "gpt3-125m";
  o.topology = "bus:n=4,bw=50GB/s,lat=1us";
  o.device = "h100";
  o.batch_per_device = 1;
  o.strategy = "zero1";
  const json a = find_scenario_command("step")->run(flags), b = to_json(run_step(o));
  CHECK(a == b);
  CHECK(a.at("strategy") == "zero1");
  CHECK(a.at("dp") == 4);
  CHECK(a.at("config").at("strategy") == "zero1");
  CHECK(a.at("step_time_s").get<double>() > 0);

  json cmp = flags;
  CHECK_THROWS_WITH_AS(parse_compare_options(cmp), "compare: unknown flag 'strategy'; expected --strategies", ConfigError);
  cmp.erase("strategy");
  cmp["strategies"] = "zero1";
  const json rows = find_scenario_command("compare")->run(cmp);
  REQUIRE(rows.size() == 1);
  json row = rows.at(0);
  CHECK(row.at("speedup_vs_replicated").get<double>() > 0);
  row.erase("speedup_vs_replicated");
  CHECK(row == a);  // the same step, through compare

  o.model.reset();
  CHECK_THROWS_WITH_AS(run_step(o), "--model/--trace: both or neither given; expected exactly one of them", ConfigError);
}
