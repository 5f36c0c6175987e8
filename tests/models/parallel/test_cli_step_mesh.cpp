// `shardsim step --mesh ...` and `shardsim plan` (mesh search) end to end: the JSON's per-axis
// times and per-stage memory, the closed-form tp bytes, and bad input exiting 2 naming the flag
// and the numbers.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "../../shell_run.hpp"

#include <string>

namespace {

using Run = shardsim::testing::ShellRun;

Run run(const std::string& args) { return shardsim::testing::run_shardsim(args); }

}  // namespace

TEST_CASE("step --mesh: GPT-3 175B tp=8 pp=8 dp=16 interleaved: per-axis times and per-stage memory") {
  const auto r = run("step --model gpt3-175b --topology dgx-h100-1024 --mesh tp=8,pp=8 --micro-batch 1 --global-batch "
                     "1536 --schedule interleaved:2 --recompute full --strategy zero1 --json");
  REQUIRE_MESSAGE(r.status == 0, r.out);
  const auto j = nlohmann::json::parse(r.out);
  const auto& p = j.at("parallel");
  CHECK(p.at("mesh").at("dp") == 16);  // derived: 1024 / (8 x 8)
  CHECK(p.at("micro_batches") == 96);  // 1536 / 16 / 1
  CHECK(p.at("stages").size() == 8);
  CHECK(p.at("fold") == "stage representatives");
  CHECK(j.at("ranks") == 1024);
  CHECK(j.at("ranks_simulated") == 8);
  const auto& a = p.at("axes");
  // Full recomputation: 6 all-reduces of S = s b h x 2 bytes per layer and micro-batch, 12 layers
  // per stage (Shoeybi et al. 2019; Korthikanti et al. 2022).
  CHECK(a.at("tp_collectives") == 6 * 12 * 96);
  CHECK(a.at("tp_bytes").get<double>() == doctest::Approx(6.0 * 12 * 96 * 2048 * 12288 * 2).scale(0));
  double sum = 0;
  for (const char* k : {"forward_s", "backward_s", "update_s", "tp_comm_s", "ep_alltoall_s", "cp_exposed_s", "pp_bubble_s",
                        "dp_exposed_s"}) {
    CHECK(a.at(k).get<double>() >= 0);
    sum += a.at(k).get<double>();
  }
  CHECK(sum == doctest::Approx(j.at("step_time_s").get<double>()).epsilon(1e-9).scale(0));
  CHECK(a.at("pp_bubble_s").get<double>() > 0);
  CHECK(a.at("tp_comm_s").get<double>() > 0);
  CHECK(j.at("fits").get<bool>());
}

TEST_CASE("step --mesh: bad input exits 2 naming the flag and the numbers") {
  auto r = run("step --model gpt3-175b --topology dgx-h100-512 --mesh dp=16,tp=8,pp=8");
  CHECK(r.status == 2);
  CHECK(r.out.find("--mesh: dp x tp x pp x cp x ep = 16 x 8 x 8 x 1 x 1 = 1024 devices; expected the device count 512") !=
        std::string::npos);
  r = run("step --model gpt3-13b --topology dgx-h100-1024 --mesh tp=16");
  CHECK(r.status == 2);
  CHECK(r.out.find("--mesh: tp=16 does not divide the 40 attention heads of gpt3-13b") != std::string::npos);
  r = run("step --model gpt3-175b --topology dgx-h100-1024 --mesh tp=8,pp=64");
  CHECK(r.status == 2);
  CHECK(r.out.find("--mesh: pp=64 does not divide the 96 layers of gpt3-175b") != std::string::npos);
  r = run("step --model gpt3-175b --topology dgx-h100-1024 --mesh tp=8,pp=8 --global-batch 1024 --micro-batch 3");
  CHECK(r.status == 2);
  CHECK(r.out.find("--micro-batch: 3 does not divide the per-replica batch 64 (--global-batch 1024 / 16 replicas)") !=
        std::string::npos);
  r = run("step --model gpt3-175b --topology dgx-h100-1024 --micro-batch 2 --batch-per-device 1");
  CHECK(r.status == 2);
  CHECK(r.out.find("--micro-batch: without --mesh") != std::string::npos);
}

TEST_CASE("plan: GPT-3 13B, 300B tokens, global batch 1024 on tpu-v3-1024 finds feasible configurations") {
  const auto r = run("plan --model gpt3-13b --tokens 300B --global-batch 1024 --hardware tpu-v3-1024 --json");
  REQUIRE_MESSAGE(r.status == 0, r.out);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(!j.at("pareto").empty());
  CHECK(j.at("pareto")[0].at("memory_peak_bytes").get<double>() <= 32.0 * (1ULL << 30));
  CHECK(j.at("config").at("search") == "mesh");
  bool memory_cause = false;
  for (const auto& g : j.at("rejected")) memory_cause = memory_cause || g.at("cause").get<std::string>().rfind("does not fit", 0) == 0;
  CHECK(memory_cause);
}
