// `shardsim memory --model ...` end to end (the shardsim binary): per-stage JSON, a Hugging
// Face config, placement on a DGX cluster, and bad input exiting 2 with the exact message.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "../../shell_run.hpp"

#include <string>

namespace {

using Run = shardsim::testing::ShellRun;

Run run(const std::string& args) { return shardsim::testing::run_shardsim(args); }

const std::string kGpt3 =
    "memory --model gpt3-175b --mesh dp=1,tp=8,pp=8 --micro-batch 1 --global-batch 64 --no-flash-attention "
    "--device a100-80gb --json ";

}  // namespace

TEST_CASE("memory --model: GPT-3 175B on tp=8, pp=8 fits with SP + selective, not without") {
  auto r = run(kGpt3 + "--recompute selective --sequence-parallel");
  REQUIRE_MESSAGE(r.status == 0, r.out);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("fits").get<bool>());
  REQUIRE(j.at("stages").size() == 8);
  CHECK(j.at("stages")[0].at("in_flight") == 8);
  CHECK(j.at("stages")[7].at("in_flight") == 1);
  CHECK(j.at("micro_batches") == 64);
  // 96 x 34 sbh / t + p sbh / t (embedding dropout masks), s b h = 2048 x 12288.
  const double sbh = 2048.0 * 12288.0;
  CHECK(j.at("stages")[0].at("memory_bytes").at("activations").get<double>() ==
        doctest::Approx(96 * 34 * sbh / 8 + sbh).epsilon(1e-12).scale(0));
  r = run(kGpt3);
  REQUIRE_MESSAGE(r.status == 0, r.out);
  j = nlohmann::json::parse(r.out);
  CHECK_FALSE(j.at("fits").get<bool>());
  CHECK(j.at("does_not_fit").get<std::string>().rfind("stage 0 total ", 0) == 0);
}

TEST_CASE("memory --model with a Hugging Face config on a DGX H100 cluster: placement and strategies") {
  const std::string cfg = std::string(SHARDSIM_SOURCE_DIR) + "/tests/data/models/llama-3-70b/config.json";
  auto r = run("memory --model " + cfg + " --hardware dgx-h100-64 --mesh tp=8,pp=4 --micro-batch 1 --global-batch 32 " +
               "--seq 8192 --recompute selective --sequence-parallel --schedule interleaved:2 --strategy all --json");
  REQUIRE_MESSAGE(r.status == 0, r.out);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.size() == 5);  // replicated, sharded, zero1, zero2, zero3
  CHECK(j[0].at("mesh").at("dp") == 2);
  CHECK(j[0].at("device") == "h100");
  CHECK(j[0].at("placement")[0].at("where") == "inside the NVLink domain of 8");
  CHECK(j[0].at("placement_issues").empty());
  // zero1 over dp = 2 halves the optimizer state of every stage.
  for (std::size_t s = 0; s < 4; ++s) {
    CHECK(j[2].at("stages")[s].at("memory_bytes").at("optimizer").get<double>() ==
          doctest::Approx(j[0].at("stages")[s].at("memory_bytes").at("optimizer").get<double>() / 2).scale(0));
  }
  const auto wide = run("memory --model " + cfg + " --hardware dgx-h100-64 --mesh tp=16 --json");
  REQUIRE_MESSAGE(wide.status == 2, wide.out);
  CHECK(wide.out ==
        "shardsim: error: --mesh: tp=16 does not divide the 8 KV heads of llama-3-70b; expected a tp that divides the "
        "number of KV heads (Megatron-LM splits whole query groups)\n");
}

TEST_CASE("memory --model: bad input exits 2 naming the flag and the numbers") {
  auto r = run("memory --model gpt3-175b --hardware dgx-h100-512 --mesh dp=16,tp=8,pp=8");
  CHECK(r.status == 2);
  CHECK(r.out == "shardsim: error: --mesh: dp x tp x pp x cp x ep = 16 x 8 x 8 x 1 x 1 = 1024 devices; expected the "
                 "device count 512\n");
  r = run("memory --model gpt3-175b --mesh dp=2,tp=8,pp=8 --global-batch 64 --micro-batch 3");
  CHECK(r.status == 2);
  CHECK(r.out == "shardsim: error: --micro-batch: 3 does not divide the per-replica batch 32 (--global-batch 64 / 2 "
                 "replicas); expected a micro-batch that divides the per-replica batch\n");
  r = run("memory --params 7e9 --mesh tp=2");
  CHECK(r.status == 2);
  CHECK(r.out == "shardsim: error: --mesh: given without --model; expected --model NAME|config.json (or drop it for "
                 "--params)\n");
}

TEST_CASE("memory --eager-kernels: the eager tensors per layer; without --model exits 2") {
  const std::string base = "memory --model llama3-8b --mesh dp=1 --seq 8192 --json";
  auto a = run(base), b = run(base + " --eager-kernels");
  REQUIRE_MESSAGE(a.status == 0, a.out);
  REQUIRE_MESSAGE(b.status == 0, b.out);
  // 8 s h (two norms' fp32 copies) + 4 s (h - kv) (K and V at 32 heads instead of 8), b = 1.
  const double s = 8192, h = 4096, kv = 1024;
  CHECK(nlohmann::json::parse(b.out).at("layer_activation_bytes").get<double>() -
            nlohmann::json::parse(a.out).at("layer_activation_bytes").get<double>() ==
        doctest::Approx(8 * s * h + 4 * s * (h - kv)).epsilon(1e-12));
  const auto e = run("memory --params 8e9 --eager-kernels");
  CHECK(e.status == 2);
  CHECK(e.out.find("--eager-kernels: given without --model") != std::string::npos);
}
