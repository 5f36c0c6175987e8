// The planner's mesh search (analysis/plan/mesh_plan.hpp): issue 13's must-shows (GPT-3 13B on
// a TPU v3 pod finds feasible configurations; GPT-3 175B and Llama-3 405B on 1,024 H100 choose
// tp 8 inside a node and pp across nodes, as the published runs), rejections grouped by cause,
// and the pruning being exact against the unpruned search.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <set>

#include "../../shell_run.hpp"
#include "analysis/plan/mesh_plan.hpp"
#include "models/parallel/memory_stage.hpp"
#include "models/parallel/mesh.hpp"
#include "traces/models/model_config.hpp"
#include "sim/error.hpp"

using namespace shardsim::plan;

namespace {

const std::string kModels = std::string(SHARDSIM_SOURCE_DIR) + "/tests/data/models/";

const RejectionGroup* cause(const MeshPlanResult& p, const std::string& prefix) {
  for (const auto& g : p.rejected) {
    if (g.cause.rfind(prefix, 0) == 0) return &g;
  }
  return nullptr;
}

// The plan's first Pareto member (the fastest), shown; the plan must have one.
const MeshCandidate& best_of(const MeshPlanResult& p) {
  REQUIRE(!p.pareto.empty());
  const auto& best = p.feasible[p.pareto.front()];
  MESSAGE(fmt::format("best: {} micro-batch {} {} {} {} step {:.3f} s MFU {:.3f} (simulated {} of {} meshes)", best.mesh,
                      best.micro_batch, best.schedule, best.recompute, best.strategy, best.step_time_s, best.mfu,
                      p.simulated, p.considered));
  return best;
}

// A plan on dgx-h100-1024, narrowed to zero1 and micro-batch 1 to keep the suite quick (the
// full search is a benchmark, tests/bench).
MeshPlanRequest on_dgx_h100_1024(std::string model, double tokens, std::uint64_t global_batch) {
  MeshPlanRequest r;
  r.plan.model = std::move(model);
  r.plan.tokens = tokens;
  r.plan.global_batch = global_batch;
  r.plan.hardware = {"dgx-h100-1024"};
  r.plan.strategies = {"zero1"};
  r.micro_batches = {1};
  return r;
}

// Every pp group spans distinct NVLink domains of 8 (dgx-h100: 8 GPUs per node), in the
// planner's rank order.
bool pp_across_nodes(const MeshCandidate& c) {
  shardsim::parallel::MeshSizes z;
  z.dp = c.dp;
  z.tp = c.tp;
  z.pp = c.pp;
  z.cp = c.cp;
  z.ep = c.ep;
  const auto ranks = shardsim::parallel::Mesh(z).group(shardsim::parallel::Axis::pp, 0).ranks;
  std::set<std::uint64_t> nodes;
  for (const auto rank : ranks) nodes.insert(static_cast<std::uint64_t>(rank) / 8);
  return c.pp > 1 && nodes.size() == ranks.size();
}

}  // namespace

TEST_CASE("GPT-3 13B, 300B tokens, global batch 1024 on tpu-v3-1024: feasible with model parallelism") {
  MeshPlanRequest r;
  r.plan.model = "gpt3-13b";
  r.plan.tokens = 300e9;
  r.plan.global_batch = 1024;
  r.plan.hardware = {"tpu-v3-1024"};
  const auto p = make_mesh_plan(r);
  const auto& best = best_of(p);
  // 13B with mixed-precision Adam is 16 x 13e9 = 208 GB of model states: it needs tp x pp
  // (or zero3) to fit 32 GiB chips at all.
  CHECK((best.tp * best.pp > 1 || best.strategy == "zero3"));
  CHECK(best.memory_peak_bytes <= best.hbm_bytes);
  CHECK(best.mfu > 0.2);
  CHECK(best.mfu < 0.7);
  CHECK(p.steps == 143052);  // ceil(300e9 / (1024 x 2048))
  // Something was rejected for memory, and grouped under its term.
  const auto* mem = cause(p, "does not fit in HBM");
  REQUIRE(mem != nullptr);
  CHECK(mem->count > 0);
}

TEST_CASE("the shardsim executable plans what the library plans (TPU and GPU presets)") {
  // Regression: the executable's static registrations once built the device presets before
  // device.cpp's namespace-scope tile lists existed, so the CLI ran every GEMM without tiles
  // (GPT-3 13B on tpu-v3-1024: 2.076 s in the CLI, 2.152 s here).
  struct Case {
    const char* model;
    double tokens;
    std::uint64_t batch;
    const char* hardware;
    bool narrow;  // zero1 and micro-batch 1 only (quick)
  };
  for (const Case& c : {Case{"gpt3-13b", 300e9, 1024, "tpu-v3-1024", false},
                        Case{"gpt3-1.3b", 1e9, 64, "dgx-h100-64", true}}) {
    MeshPlanRequest r;
    r.plan.model = c.model;
    r.plan.tokens = c.tokens;
    r.plan.global_batch = c.batch;
    r.plan.hardware = {c.hardware};
    if (c.narrow) {
      r.plan.strategies = {"zero1"};
      r.micro_batches = {1};
    }
    const auto p = make_mesh_plan(r);
    const auto& best = best_of(p);
    const auto cli = shardsim::testing::run_shardsim(fmt::format("plan --model {} --tokens {} --global-batch {} --hardware {}{} --json",
                                                                 c.model, c.tokens, c.batch, c.hardware,
                                                                 c.narrow ? " --strategies zero1 --micro-batches 1" : ""));
    INFO(c.hardware << ": " << cli.out.substr(0, 400));
    REQUIRE(cli.status == 0);
    const auto j = nlohmann::json::parse(cli.out);
    CHECK(j.at("pareto").at(0).at("mesh").get<std::string>() == best.mesh);
    CHECK(j.at("pareto").at(0).at("step_time_s").get<double>() == best.step_time_s);
  }
}

TEST_CASE("GPT-3 175B on dgx-h100-1024: NeMo's H100 layout, tp 4 inside a node, pp 8 across nodes") {
  const auto p = make_mesh_plan(on_dgx_h100_1024("gpt3-175b", 300e9, 1536));
  const auto& best = best_of(p);
  // NeMo's published GPT-3 175B runs on DGX H100 (tests/data/published/training/
  // dgxc-megatron-tp-pp.json, 128-2048 GPUs) use tp 4, pp 8, interleaved. The model finds tp 8
  // slower by more than the tie margin (its GEMMs are half as wide and it moves twice the tp
  // bytes per GPU: dp=16,tp=8,pp=8 interleaved:4 5.35 s against 5.18 s, 3.4 %), so the tie rule
  // does not apply and the fastest stands.
  CHECK(best.tp == 4);
  CHECK(best.pp == 8);
  CHECK(best.schedule.rfind("interleaved", 0) == 0);
  CHECK(best.tie_of.empty());
  CHECK(pp_across_nodes(best));
  // tp beyond the node is rejected by placement, by name.
  const auto* place = cause(p, "tp=16 leaves the NVLink domain of 8");
  REQUIRE(place != nullptr);
}

TEST_CASE("Llama-3.1 405B (config.json) on dgx-h100-1024: tp 8, pp 8 across nodes, cp 2 (NeMo's recipe), by the tie rule") {
  auto r = on_dgx_h100_1024(kModels + "llama-3-405b/config.json", 15e12, 2048);
  r.plan.seq = 8192;
  const auto p = make_mesh_plan(r);
  const auto& best = best_of(p);
  // The published 405B layouts keep tp 8 inside the node and pp across nodes (Llama 3, arXiv
  // 2407.21783 Table 4: tp 8, pp 16; NeMo's dgxc record: tp 8, pp 9, cp 2; NeMo's recipe tp 8,
  // pp 8, cp 2). The model times the fastest layouts alike within 0.3 % (tp x cp = 16 and
  // tp x pp = 64 in each: the same weights, activations and FLOPs per GPU), so the tie rule of
  // mesh_plan.hpp (within 1 %: the largest tp, Narayanan et al. 2021 takeaway #1) decides.
  CHECK(best.tp == 8);
  CHECK(best.pp == 8);
  CHECK(best.cp == 2);
  CHECK(pp_across_nodes(best));
  REQUIRE(!best.tie_of.empty());
  // The winner is within the margin of every simulated candidate, and the fastest has tp < 8.
  double fastest = best.step_time_s;
  std::uint64_t fastest_tp = best.tp;
  for (const auto& c : p.feasible) {
    if (c.step_time_s < fastest) {
      fastest = c.step_time_s;
      fastest_tp = c.tp;
    }
  }
  CHECK(best.step_time_s <= fastest * 1.01);
  CHECK(fastest_tp < 8);
  // Without the rule (margin 0) the fastest alone: tp 4 with cp 4, so the choice above is the
  // rule's, and this case fails if the rule is removed.
  r.tie_margin = 0;
  const auto bare = make_mesh_plan(r);
  const auto& f = best_of(bare);
  CHECK(f.tp < 8);
  CHECK(f.step_time_s == fastest);
  CHECK(f.tie_of.empty());
}

TEST_CASE("Llama-3.1 405B on Meta's 16K-H100 RoCE cluster: tp inside the node, pp across nodes") {
  // Llama 3 paper (arXiv 2407.21783) Table 4: 16,384 H100, seq 8192, 16M tokens per batch:
  // TP 8, CP 1, PP 16, DP 128. The planner picks dp=8,tp=8,pp=32,cp=8, gpipe (5.110 s, the
  // fastest itself on this build; dp=16,tp=4,pp=32,cp=8 is 1.2 % slower; the CLI once picked
  // tp=8 because it ran its GEMMs without tiles, a static-initialisation bug now covered by the
  // executable-vs-library case above). Checked: tp inside the node, deep pp.
  MeshPlanRequest r;
  r.plan.model = kModels + "llama-3-405b/config.json";
  r.plan.seq = 8192;
  r.plan.tokens = 15e12;
  r.plan.global_batch = 2048;
  r.plan.hardware = {"meta-h100-roce-16384"};
  const auto p = make_mesh_plan(r);
  const auto& best = best_of(p);
  CHECK(best.tp >= 4);
  CHECK(best.tp <= 8);
  CHECK(best.pp >= 8);
  // The tp collectives are hidden behind the GEMMs: little exposed tp time.
  CHECK(best.tp_comm_s < 0.05 * best.step_time_s);
}

TEST_CASE("llama-3-405b/config.json: 406B parameters (tests/data/models/SOURCE.txt), within 1 %") {
  const auto m = shardsim::models::resolve_model(kModels + "llama-3-405b/config.json", "--model");
  CHECK(m.layers == 126);
  CHECK(m.kv_heads == 8);
  CHECK(m.parameter_count() == doctest::Approx(406e9).epsilon(0.01).scale(0));
}

TEST_CASE("stage_layers: the Llama 3 rule, one layer fewer on the first and last stages") {
  CHECK(shardsim::parallel::stage_layers(126, 16) ==
        std::vector<std::uint64_t>{7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7});
  CHECK(shardsim::parallel::stage_layers(96, 8) == std::vector<std::uint64_t>(8, 12));
  CHECK(shardsim::parallel::stage_layers(10, 4) == std::vector<std::uint64_t>{2, 3, 3, 2});
  CHECK(shardsim::parallel::stage_layers(9, 4) == std::vector<std::uint64_t>{2, 2, 3, 2});
}

TEST_CASE("pruning by the lower bound is exact: the same Pareto set as simulating everything") {
  MeshPlanRequest r;
  r.plan.model = "gpt3-1.3b";
  r.plan.steps = 100;
  r.plan.global_batch = 256;
  r.plan.hardware = {"dgx-h100-16", "dgx-h100-32"};
  const auto pruned = make_mesh_plan(r);
  r.prune_by_bound = false;
  const auto all = make_mesh_plan(r);
  CHECK(pruned.simulated < all.simulated);
  REQUIRE(pruned.pareto.size() == all.pareto.size());
  for (std::size_t i = 0; i < all.pareto.size(); ++i) {
    const auto& a = all.feasible[all.pareto[i]];
    const auto& b = pruned.feasible[pruned.pareto[i]];
    CHECK(a.mesh == b.mesh);
    CHECK(a.schedule == b.schedule);
    CHECK(a.step_time_s == b.step_time_s);
  }
  // The bound holds for every candidate.
  double fastest = all.feasible.front().step_time_s;
  for (const auto& c : all.feasible) {
    CHECK(c.step_time_s >= c.bound_s * (1 - 1e-9));
    CHECK(c.bound_s > 0);
    fastest = std::min(fastest, c.step_time_s);
  }
  // The first Pareto member is the fastest or, by the tie rule, one within 1 % of it.
  CHECK(all.feasible[all.pareto.front()].step_time_s <= fastest * (1 + r.tie_margin));
  // Exact with the rule off too, and then the first is the fastest.
  r.tie_margin = 0;
  const auto all0 = make_mesh_plan(r);
  r.prune_by_bound = true;
  const auto pruned0 = make_mesh_plan(r);
  REQUIRE(pruned0.pareto.size() == all0.pareto.size());
  for (std::size_t i = 0; i < all0.pareto.size(); ++i) {
    CHECK(all0.feasible[all0.pareto[i]].mesh == pruned0.feasible[pruned0.pareto[i]].mesh);
    CHECK(all0.feasible[all0.pareto[i]].step_time_s == pruned0.feasible[pruned0.pareto[i]].step_time_s);
  }
  CHECK(all0.feasible[all0.pareto.front()].step_time_s == fastest);
}

TEST_CASE("mesh plan: bad input names the flag") {
  MeshPlanRequest r;
  r.plan.model = "gpt3-13b";
  r.plan.global_batch = 1024;
  r.plan.hardware = {"tpu-v3-1024"};
  CHECK_THROWS_WITH(make_mesh_plan(r), "--tokens/--steps: neither; expected exactly one of --tokens and --steps");
  r.plan.steps = 1;
  r.plan.strategies = {};
  r.tie_margin = -0.01;
  CHECK_THROWS_WITH(make_mesh_plan(r), "--tie-margin: -0.01; expected a fraction of the fastest step in [0, 0.5) (0.01: 1 %)");
  r.tie_margin = 0.01;
  r.plan.strategies = {"hsdp"};
  CHECK_THROWS_WITH(make_mesh_plan(r), "--shard-group: missing for --strategy hsdp; expected the size k of the groups that shard (zero3) inside");
  // The CLI: exit 2 naming the flag.
  const auto neg = shardsim::testing::run_shardsim("plan --model gpt3-1.3b --steps 1 --global-batch 64 --hardware dgx-h100-64 --tie-margin 0.7");
  CHECK(neg.status == 2);
  CHECK(neg.out.find("--tie-margin: 0.7; expected a fraction of the fastest step in [0, 0.5)") != std::string::npos);
  const auto dp = shardsim::testing::run_shardsim("plan --search dp --model gpt3-1.3b --steps 1 --global-batch 64 --hardware dgx-h100-64 --tie-margin 0.02");
  CHECK(dp.status == 2);
  CHECK(dp.out.find("--tie-margin: with --search dp; expected --search mesh") != std::string::npos);
}
