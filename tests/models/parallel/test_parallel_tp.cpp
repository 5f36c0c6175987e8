// The tensor-parallel part of the parallel step (models/step/parallel_graphs.hpp,
// tp_overlap.hpp) against closed forms: collectives and bytes per layer (Shoeybi et al. 2019;
// Korthikanti et al. 2022), the exposed time of each TransformerEngine userbuffers method, SM
// margins and a bulk kernel's own SMs, and the userbuffers config's errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "models/compute/device.hpp"
#include "models/parallel/layer_compute.hpp"
#include "models/step/parallel_graphs.hpp"
#include "helpers.hpp"
#include "step_helpers.hpp"

using namespace shardsim;
using namespace shardsim::step;
using parallel::MeshSizes;
using parallel::Recompute;
using shardsim::parallel::test::config;
using shardsim::parallel::test::error_of;
using shardsim::parallel::test::no_contention;
using shardsim::parallel::test::toy;
using shardsim::parallel::test::zero_comm;

TEST_CASE("tensor parallelism: 4 all-reduces of b s h elements per layer, 6 with full recomputation; with sequence "
          "parallelism 4 + 6 gathers and scatters, the input re-gathered beside the dgrad GEMM") {
  // Without sequence parallelism (Megatron-LM 2021): 2 all-reduces in forward, 2 in backward
  // (the column-parallel input gradients), all blocking; full recomputation repeats the 2 of the
  // forward. With it (Korthikanti et al. 2022 sec. 4.2.2; TE _Linear / _LayerNormLinear and
  // Megatron-Core's LinearWithGradAccumulationAndAsyncCommunication backward): forward an
  // all-gather and a reduce-scatter around each of the two tensor-parallel regions; backward the
  // row-parallel layers' output gradient all-gathered (blocking), and for each column-parallel
  // layer its saved input all-gathered again beside its input-gradient GEMM D and its input
  // gradient reduce-scattered beside its weight-gradient GEMM W: exposed max(0, C - D) and
  // max(0, C - W). Compute durations fixed (no SMs taken: no_contention).
  const auto m = toy(8);
  const auto dev = no_contention("h100");
  const double t_ar = 1e-4, t_ag = 3e-5, t_rs = 4e-5;
  FunctionComm comm([&](coll::OpKind k, std::uint64_t, const std::vector<int>& g) {
    CHECK(g.size() == 4);
    return k == coll::OpKind::allreduce ? t_ar : k == coll::OpKind::allgather ? t_ag : t_rs;
  });
  const std::uint64_t mb = 3, b = 2, s = 2048, h = 1024;
  for (const bool sp : {false, true}) {
    for (const Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
      auto c = config(m, MeshSizes{1, 4, 1, 1, 1}, mb * b);
      c.micro_batch = b;
      c.recompute = rc;
      c.sequence_parallel = sp;
      CAPTURE(sp);
      CAPTURE(parallel::to_string(rc));
      const auto r = simulate_parallel_step(c, dev, comm);
      const std::uint64_t forwards = rc == Recompute::full ? 2 : 1;
      const std::uint64_t per_layer = sp ? 4 * forwards + 6 : 2 * forwards + 2;
      const std::uint64_t count = per_layer * m.layers * mb;
      CHECK(r.slowest.tp_collectives == count);
      // S = b s h bf16 elements for every all-reduce, reduce-scatter and all-gather.
      CHECK(r.slowest.tp_bytes == doctest::Approx(static_cast<double>(count * b * s * h * 2)).scale(0));
      const double n = static_cast<double>(m.layers * mb);
      if (!sp) {
        CHECK(r.slowest.tp_comm_s == doctest::Approx(static_cast<double>(count) * t_ar).epsilon(1e-6).scale(0));
        continue;
      }
      const auto lc = parallel::layer_compute(m, dev, {b, s, 4, 1, true, true, rc});
      const double beside = std::max(0.0, t_ag - lc.qkv_dgrad_s) + std::max(0.0, t_ag - lc.up_dgrad_s) +
                            std::max(0.0, t_rs - lc.qkv_wgrad_s) + std::max(0.0, t_rs - lc.up_wgrad_s);
      REQUIRE(beside > 0);  // partly exposed: the closed form's max terms are exercised
      REQUIRE(beside < 2 * (t_ag + t_rs));
      const double blocking = static_cast<double>(forwards) * 2 * (t_ag + t_rs) + 2 * t_ag;
      CHECK(r.slowest.tp_comm_s == doctest::Approx(n * (blocking + beside)).epsilon(1e-12).scale(32 * n));  // 32 n ps: whole-ps roundings
    }
  }
}

TEST_CASE("tp communication overlap: exposed time per layer is the closed form of the pipelined and bulk overlaps") {
  // With TransformerEngine's userbuffers (parallel_graphs.hpp, tp_overlap.hpp), per layer and
  // micro-batch, t = tp, C_ag / C_rs the collective times, G the GEMM times of
  // parallel::layer_compute, f = units / (units - 16) for the GEMMs TE's defaults launch beside
  // a 16-SM communication kernel (set_sm_margin: pipeline and bulk), k chunks:
  //   ring exchange (k = t, f = 1): max(C_ag, (k-1)/k G) + G/k   (qkv, fc1 fprop; proj, fc2 dgrad)
  //   pipeline (k = 4): f G/k + max((k-1)/k C_rs, (k-1)/k f G) + C_rs/k  (proj, fc2 fprop)
  //   bulk: max(C, f G)                                           (qkv, fc1 dgrad and wgrad)
  // The exposed tp time is each pair's excess over its GEMM part. Without userbuffers the
  // forward's and the row-parallel backward's collectives are blocking and the bulk pairs run
  // on NCCL at f = 1 (no SMs taken here: no_contention).
  const auto m = toy(4);
  const auto dev = no_contention("h100");
  const double f = 132.0 / 116.0;
  REQUIRE(dev.compute_units == 132);
  const std::uint64_t t = 4, mb = 2;
  for (const double scale : {0.2, 1.0, 5.0}) {
    auto c = config(m, MeshSizes{1, t, 1, 1, 1}, mb);
    c.sequence_parallel = true;
    c.output_layer = false;
    const auto lc = parallel::layer_compute(m, dev, {1, 2048, t, 1, true, true, Recompute::none});
    // Collective times proportional to the layer's GEMMs, so that each regime (hidden, partly
    // exposed, fully exposed) is reached.
    const double c_ag = scale * lc.qkv_fwd_s, c_rs = scale * 0.8 * lc.up_wgrad_s;
    const double S = 2048.0 * 1024 * 2;  // b s h bf16: a reduce-scatter's time in proportion to its bytes
    FunctionComm comm([&](coll::OpKind k, std::uint64_t bytes, const std::vector<int>&) {
      return k == coll::OpKind::allgather ? c_ag : k == coll::OpKind::reducescatter ? c_rs * static_cast<double>(bytes) / S : 0.0;
    });
    const auto off = simulate_parallel_step(c, dev, comm);
    c.tp_comm_overlap = true;
    const auto on = simulate_parallel_step(c, dev, comm);
    CAPTURE(scale);
    auto piped = [&](double cm, double g, double k) { return std::max(0.0, cm - (k - 1) / k * g); };
    // The pipeline's first k - 1 chunks beside the other k - 1 GEMM chunks, the last after both.
    auto pipe_rs = [&](double cm, double g, double k) { return std::max(0.0, (k - 1) / k * (cm - g)) + cm / k; };
    auto beside = [&](double cm, double w) { return std::max(0.0, cm - w); };
    const double tt = static_cast<double>(t);
    const double per_layer = piped(c_ag, lc.qkv_fwd_s, tt) + pipe_rs(c_rs, f * lc.out_fwd_s, 4) + piped(c_ag, lc.up_fwd_s, tt) +
                             pipe_rs(c_rs, f * lc.down_fwd_s, 4) + piped(c_ag, lc.down_dgrad_s, tt) +
                             beside(c_ag, f * lc.up_dgrad_s) + beside(c_rs, f * lc.up_wgrad_s) +
                             piped(c_ag, lc.out_dgrad_s, tt) + beside(c_ag, f * lc.qkv_dgrad_s) + beside(c_rs, f * lc.qkv_wgrad_s);
    const double n = static_cast<double>(m.layers * mb);
    CHECK(on.slowest.tp_comm_s == doctest::Approx(n * per_layer).epsilon(1e-12).scale(16 * n));  // whole-ps pieces; 0 when all is hidden
    const double off_layer = 4 * c_ag + 2 * c_rs + beside(c_ag, lc.up_dgrad_s) + beside(c_rs, lc.up_wgrad_s) +
                             beside(c_ag, lc.qkv_dgrad_s) + beside(c_rs, lc.qkv_wgrad_s);
    CHECK(off.slowest.tp_comm_s == doctest::Approx(n * off_layer).epsilon(1e-12).scale(16 * n));
    // Same bytes (each pipelined reduce-scatter in two collectives: 2 more per layer); the compute
    // grows by the margin's share of the GEMMs beside a kernel.
    CHECK(on.slowest.tp_collectives == off.slowest.tp_collectives + 2 * m.layers * mb);
    CHECK(on.slowest.tp_bytes == doctest::Approx(off.slowest.tp_bytes).epsilon(1e-12));
    const double margin = (f - 1) * (lc.out_fwd_s + lc.down_fwd_s + lc.up_dgrad_s + lc.up_wgrad_s + lc.qkv_dgrad_s + lc.qkv_wgrad_s);
    CHECK(on.slowest.forward_s + on.slowest.backward_s ==
          doctest::Approx(off.slowest.forward_s + off.slowest.backward_s + n * margin).epsilon(1e-12).scale(32 * n));
    CHECK(on.step.step_time_s ==
          doctest::Approx(off.step.step_time_s - (off.slowest.tp_comm_s - on.slowest.tp_comm_s) + n * margin).epsilon(1e-12).scale(64 * n));
    const auto& x = on.slowest;
    CHECK(x.forward_s + x.backward_s + x.update_s + x.tp_comm_s + x.pp_bubble_s + x.dp_exposed_s ==
          doctest::Approx(x.step_time_s).epsilon(1e-12).scale(0));
  }
  // The GEMM parts are parts of the layer: less than the forward / backward they belong to.
  const auto lc = parallel::layer_compute(m, dev, {1, 2048, t, 1, true, true, Recompute::none});
  CHECK(lc.qkv_fwd_s + lc.out_fwd_s < lc.attention_fwd_s);
  CHECK(lc.up_fwd_s + lc.down_fwd_s < lc.mlp_fwd_s);
  CHECK(lc.out_dgrad_s + lc.qkv_wgrad_s + lc.qkv_dgrad_s < lc.attention_bwd_s);
  CHECK(lc.down_dgrad_s + lc.up_wgrad_s + lc.up_dgrad_s < lc.mlp_bwd_s);
}

TEST_CASE("userbuffers config: ring-exchange chunks, aggregate, a pipeline's margin, a bulk kernel's own SMs") {
  // One config changed at a time against the closed form of the test above (no contention),
  // then a bulk kernel without a margin on a device whose collectives hold SMs: its num_sm are
  // taken from the weight-gradient GEMM beside it (the executor's rule with TaskNode::units;
  // a100-80gb: no persistent GEMMs, so the GEMM runs at (units - num_sm) / units while the
  // kernel is in flight: W + C num_sm / units when C < W units / (units - num_sm)).
  const auto m = toy(4);
  const std::uint64_t t = 4, mb = 2;
  auto c = config(m, MeshSizes{1, t, 1, 1, 1}, mb);
  c.sequence_parallel = true;
  c.tp_comm_overlap = true;
  c.output_layer = false;
  const double n = static_cast<double>(m.layers * mb);
  {
    const auto dev = no_contention("h100");
    const auto lc = parallel::layer_compute(m, dev, {1, 2048, t, 1, true, true, Recompute::none});
    const double c_ag = 2.0 * lc.qkv_fwd_s;  // longer than every ring's GEMM: the last chunk shows
    FunctionComm comm([&](coll::OpKind k, std::uint64_t, const std::vector<int>&) {
      return k == coll::OpKind::allgather ? c_ag : 0.0;
    });
    const auto base = simulate_parallel_step(c, dev, comm);
    // qkv_fprop aggregated: t/2 chunks, so G/(t/2) after the all-gather instead of G/t.
    auto agg = c;
    agg.tp_overlap = step::tp_overlap_from_json(nlohmann::json::parse(R"({"qkv_fprop": {"method": "ring_exchange", "aggregate": 1}})"), "test");
    const auto a = simulate_parallel_step(agg, dev, comm);
    // The same GEMM time, split (t/2 - 1)/(t/2) beside the all-gather instead of (t-1)/t: G/4
    // more of the all-gather is exposed.
    CHECK(a.slowest.forward_s == doctest::Approx(base.slowest.forward_s).epsilon(1e-12).scale(16 * n));
    CHECK(a.slowest.tp_comm_s - base.slowest.tp_comm_s ==
          doctest::Approx(n * (lc.qkv_fwd_s / 2 - lc.qkv_fwd_s / 4)).epsilon(1e-12).scale(16 * n));
    // proj_fprop's pipeline on 24 SMs with the margin: G x 132 / 108 instead of 132 / 116.
    auto pipe = c;
    pipe.tp_overlap = step::tp_overlap_from_json(
        nlohmann::json::parse(R"({"proj_fprop": {"method": "pipeline", "num_sm": 24, "set_sm_margin": 1, "num_splits": 4}})"), "test");
    const auto p = simulate_parallel_step(pipe, dev, comm);
    CHECK(p.slowest.forward_s - base.slowest.forward_s ==
          doctest::Approx(n * lc.out_fwd_s * (132.0 / 108.0 - 132.0 / 116.0)).epsilon(1e-12).scale(16 * n));
  }
  {
    const auto& dev = compute::find_device("a100-80gb", "test");
    REQUIRE(!dev.persistent_gemm);
    REQUIRE(dev.comm_units > 0);
    const double u = dev.compute_units;
    const auto lc = parallel::layer_compute(m, dev, {1, 2048, t, 1, true, true, Recompute::none});
    const double c_rs = 0.5 * lc.qkv_wgrad_s;
    FunctionComm comm([&](coll::OpKind k, std::uint64_t, const std::vector<int>&) {
      return k == coll::OpKind::reducescatter ? c_rs : 0.0;
    });
    auto with_margin = c;  // every other overlap as TE's defaults (their kernels take no SMs)
    with_margin.tp_overlap = step::tp_overlap_from_json(
        nlohmann::json::parse(R"({"qkv_wgrad": {"method": "bulk", "num_sm": 8, "set_sm_margin": 1}})"), "test");
    auto no_margin = c;
    no_margin.tp_overlap = step::tp_overlap_from_json(
        nlohmann::json::parse(R"({"qkv_wgrad": {"method": "bulk", "num_sm": 8, "set_sm_margin": 0}})"), "test");
    const auto a = simulate_parallel_step(with_margin, dev, comm);
    const auto b = simulate_parallel_step(no_margin, dev, comm);
    // With the margin: W u / (u - 8) throughout; without: W + C 8 / u (C < W u / (u - 8)).
    REQUIRE(c_rs < lc.qkv_wgrad_s * u / (u - 8));
    CHECK(a.slowest.backward_s - b.slowest.backward_s ==
          doctest::Approx(n * (lc.qkv_wgrad_s * u / (u - 8) - (lc.qkv_wgrad_s + c_rs * 8 / u))).epsilon(1e-6).scale(0));
    CHECK(b.slowest.tp_comm_s == doctest::Approx(a.slowest.tp_comm_s).epsilon(1e-12).scale(16 * n));
  }
  // Bad input: named with the JSON path.
  CHECK(error_of([] { step::tp_overlap_from_json(nlohmann::json::parse(R"({"qkv_fprop": {"method": "bulk"}})"), "cfg.json"); }) ==
        "cfg.json: /qkv_fprop/method: \"bulk\"; expected \"ring_exchange\" (an all-gather into its GEMM)");
  CHECK(error_of([] { step::tp_overlap_from_json(nlohmann::json::parse(R"({"qkv_prop": {"method": "bulk"}})"), "cfg.json"); })
            .find("cfg.json: /qkv_prop: unknown layer 'qkv_prop'") == 0);
  CHECK(error_of([] { step::tp_overlap_from_json(nlohmann::json::parse(R"({"fc2_fprop": {"method": "pipeline", "num_sm": 0}})"), "cfg.json"); }) ==
        "cfg.json: /fc2_fprop/num_sm: 0; expected a positive number of SMs");
  auto big = c;
  big.tp_overlap = step::tp_overlap_from_json(nlohmann::json::parse(R"({"fc2_fprop": {"method": "pipeline", "num_sm": 132}})"), "t");
  CHECK(error_of([&] { FunctionComm z = zero_comm(); simulate_parallel_step(big, compute::find_device("h100", "test"), z); }) ==
        "--tp-overlap-config: fc2_fprop.num_sm: 132 SMs on a device of 132; expected fewer SMs than the device has (the GEMM runs "
        "on the others)");
}
