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

TEST_CASE("step --mesh data=64,model=16 on tpu-v3-1024: GSPMD axes mapped onto the torus dimensions") {
  // tpu-v3-1024 is a 32 x 32 torus, rank = row-major coordinates (dimension 1 fastest). GSPMD
  // names are written slowest first (JAX Mesh(devices.reshape(64, 16), ("data", "model"))):
  // model (tp, 16, stride 1) takes half of dimension 1; data (dp, 64, stride 16) the other half
  // of dimension 1 (2 of 32) and all of dimension 0 (models/parallel/placement.hpp).
  const auto r = run("step --model gpt3-6.7b --topology tpu-v3-1024 --mesh data=64,model=16 --micro-batch 1 "
                     "--global-batch 64 --recompute full --json");
  REQUIRE_MESSAGE(r.status == 0, r.out);
  const auto j = nlohmann::json::parse(r.out);
  const auto& p = j.at("parallel");
  CHECK(p.at("mesh").at("dp") == 64);
  CHECK(p.at("mesh").at("tp") == 16);
  const auto& pl = p.at("placement");
  REQUIRE(pl.size() == 5);
  CHECK(pl[0].at("name") == "model");
  CHECK(pl[0].at("axis") == "tp");
  CHECK(pl[0].at("stride") == 1);
  CHECK(pl[0].at("torus_dims") == nlohmann::json::array({1}));
  CHECK(pl[0].at("torus_extent") == nlohmann::json::array({16}));
  CHECK(pl[0].at("where") == "torus dim 1 (16 of 32)");
  CHECK(pl[1].at("name") == "data");
  CHECK(pl[1].at("axis") == "dp");
  CHECK(pl[1].at("stride") == 16);
  CHECK(pl[1].at("torus_dims") == nlohmann::json::array({0, 1}));
  CHECK(pl[1].at("torus_extent") == nlohmann::json::array({32, 2}));
  CHECK(pl[1].at("where") == "torus dims 0 (32 of 32) x 1 (2 of 32)");
  for (std::size_t k = 2; k < 5; ++k) CHECK(pl[k].at("size") == 1);
  // Megatron names on the same pod place tp the same way.
  const auto m = run("step --model gpt3-6.7b --topology tpu-v3-1024 --mesh dp=64,tp=16 --micro-batch 1 "
                     "--global-batch 64 --recompute full --json");
  REQUIRE_MESSAGE(m.status == 0, m.out);
  const auto jm = nlohmann::json::parse(m.out);
  CHECK(jm.at("parallel").at("placement")[0].at("name") == "tp");
  CHECK(jm.at("parallel").at("placement")[0].at("where") == "torus dim 1 (16 of 32)");
  CHECK(jm.at("step_time_s") == j.at("step_time_s"));
  // A bad axis name: exit 2 naming the flag and the name.
  const auto bad = run("step --model gpt3-6.7b --topology tpu-v3-1024 --mesh data=64,modle=16");
  CHECK(bad.status == 2);
  CHECK(bad.out.find("--mesh: unknown axis 'modle' in 'data=64,modle=16'; expected dp, tp, pp, cp, ep (and order=...), "
                     "or GSPMD names data, model, expert, seq, stage") != std::string::npos);
  // Sizes whose product is not the chip count: both numbers named.
  const auto wrong = run("step --model gpt3-6.7b --topology tpu-v3-1024 --mesh data=32,model=16");
  CHECK(wrong.status == 2);
  CHECK(wrong.out.find("--mesh: dp x tp x pp x cp x ep = 32 x 16 x 1 x 1 x 1 = 512 devices; expected the device count 1024") !=
        std::string::npos);
}

TEST_CASE("step --eager-kernels: the reference RMSNorm and repeat_kv, data-parallel and mesh") {
  // Data parallel, Llama 3 8B, 1 x 8192 tokens, one H100 (dp 1: no collective contends). The
  // forward grows by the eager kernels' extra bytes (transformer_cost.hpp) at the h100 preset's
  // 3.35 TB/s x 0.8 plus their extra launches at 4 us: per layer 2 norms x (36 - 4) T h and the
  // K / V copies 4 T (h + kv); the final norm 32 T h; 32 x (2 x 7 + 2) + 7 more kernels.
  const std::string dp = "step --model llama3-8b --topology dgx-h100-8 --dp 1 --batch-per-device 1 --seq 8192 --json";
  auto a = run(dp), b = run(dp + " --eager-kernels");
  REQUIRE_MESSAGE(a.status == 0, a.out);
  REQUIRE_MESSAGE(b.status == 0, b.out);
  const auto fused = nlohmann::json::parse(a.out), eager = nlohmann::json::parse(b.out);
  const double T = 8192, h = 4096, kv = 1024;
  const double bytes = 32 * (2 * 32 * T * h + 4 * T * (h + kv)) + 32 * T * h;
  const double expected = bytes / (3.35e12 * 0.8) + (32 * (2 * 7 + 2) + 7) * 4e-6;
  CHECK(eager.at("forward_s").get<double>() - fused.at("forward_s").get<double>() ==
        doctest::Approx(expected).epsilon(1e-6));
  CHECK(eager.at("config").at("eager-kernels") == true);
  // The mesh step: the same kernels (and the reference rotary) in every layer shard.
  const std::string mesh = "step --model llama3-8b --topology dgx-h100-8 --mesh tp=2 --global-batch 4 --seq 4096 "
                           "--strategy zero1 --recompute selective --sequence-parallel --json";
  a = run(mesh);
  b = run(mesh + " --eager-kernels");
  REQUIRE_MESSAGE(a.status == 0, a.out);
  REQUIRE_MESSAGE(b.status == 0, b.out);
  const auto mf = nlohmann::json::parse(a.out), me = nlohmann::json::parse(b.out);
  REQUIRE(mf.at("fits").get<bool>());
  CHECK(me.at("forward_s").get<double>() > mf.at("forward_s").get<double>());
  CHECK(me.at("step_time_s").get<double>() > mf.at("step_time_s").get<double>());
}

TEST_CASE("step --fsdp: zero3 only, not on a mesh, a known implementation; exit 2 naming it") {
  const std::string base = "step --model llama3-8b --topology dgx-h100-8 --batch-per-device 1 --seq 2048 ";
  auto r = run(base + "--strategy zero3 --fsdp fsdp1 --json");
  REQUIRE_MESSAGE(r.status == 0, r.out);
  CHECK(nlohmann::json::parse(r.out).at("config").at("fsdp") == "fsdp1");
  r = run(base + "--fsdp fsdp2");
  CHECK(r.status == 2);
  CHECK(r.out.find("--fsdp: fsdp2 with --strategy replicated; expected --strategy zero3") != std::string::npos);
  r = run(base + "--strategy zero3 --fsdp fsdp9");
  CHECK(r.status == 2);
  CHECK(r.out.find("--fsdp: unknown FSDP implementation 'fsdp9'; expected one of none, fsdp1, fsdp2") != std::string::npos);
  r = run("step --model llama3-8b --topology dgx-h100-8 --mesh tp=2 --fsdp fsdp1");
  CHECK(r.status == 2);
  CHECK(r.out.find("--fsdp: with --mesh") != std::string::npos);
}
