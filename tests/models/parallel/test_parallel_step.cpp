// The parallel step (models/step/parallel_graphs.hpp) against closed forms: the pipeline
// bubble of GPipe, 1F1B and interleaved 1F1B (Narayanan et al. 2021), MoE all-to-alls,
// the breakdown adding up to the step, folding equal to the unfolded run, and bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "models/compute/device.hpp"
#include "models/compute/transformer_cost.hpp"
#include "models/optimizer/optimizer.hpp"
#include "models/parallel/layer_compute.hpp"
#include "models/step/parallel_graphs.hpp"
#include "sim/error.hpp"
#include "helpers.hpp"
#include "step_helpers.hpp"

using namespace shardsim;
using namespace shardsim::step;
using parallel::MeshSizes;
using parallel::PipelineSchedule;
using parallel::Recompute;
using parallel::ScheduleKind;

namespace {

using shardsim::parallel::test::config;
using shardsim::parallel::test::error_of;
using shardsim::parallel::test::no_contention;
using shardsim::parallel::test::toy;
using shardsim::parallel::test::zero_comm;

parallel::ModelSpec toy_moe() {
  auto m = toy(8);
  m.name = "toy-moe";
  m.experts = 8;
  m.top_k = 2;
  m.gated_ffn = true;
  m.ffn = 2048;
  return m;
}

const ParallelRankTimes& stage0(const ParallelStepResult& r) {
  for (const auto& x : r.per_rank) {
    if (x.stage == 0) return x;
  }
  FAIL("no stage 0");
  return r.per_rank.front();
}

}  // namespace

TEST_CASE("pipeline bubble over ideal time is (p-1)/m for GPipe and 1F1B, (p-1)/(v m) interleaved") {
  // Symmetric stages (no output layer, free communication): the bubble of stage 0 is (p - 1)
  // stage-times of a micro-batch (t_f + t_b), or (p - 1)(t_f + t_b)/v with v chunks, against
  // an ideal m (t_f + t_b) (Narayanan et al. 2021, sec. 2.2.1 and 2.2.2).
  const auto m = toy(16);
  const auto& dev = compute::find_device("h100", "test");
  auto comm = zero_comm();
  for (const std::uint64_t p : {2ULL, 4ULL}) {
    for (const std::uint64_t mb : {4ULL, 8ULL, 16ULL}) {
      for (const auto& [kind, v] : {std::pair{ScheduleKind::gpipe, 1ULL}, std::pair{ScheduleKind::one_f_one_b, 1ULL},
                                    std::pair{ScheduleKind::interleaved, 2ULL}, std::pair{ScheduleKind::interleaved, 4ULL}}) {
        if (kind == ScheduleKind::interleaved && mb % p != 0) continue;
        auto c = config(m, MeshSizes{1, 1, p, 1, 1}, mb);
        c.schedule = PipelineSchedule{kind, v};
        c.output_layer = false;
        CAPTURE(p);
        CAPTURE(mb);
        CAPTURE(c.schedule.str());
        const auto r = simulate_parallel_step(c, dev, comm);
        const auto& s0 = stage0(r);
        const double ideal = s0.forward_s + s0.backward_s;
        const double expected = static_cast<double>(p - 1) / static_cast<double>(v * mb);
        CHECK(ideal == doctest::Approx(static_cast<double>(mb) * (r.layer_forward_s + r.layer_backward_s) *
                                       static_cast<double>(m.layers / p)).epsilon(1e-6).scale(0));
        CHECK(s0.pp_bubble_s / ideal == doctest::Approx(expected).epsilon(1e-6).scale(0));
        // The parts add up to the rank's step time.
        CHECK(s0.forward_s + s0.backward_s + s0.update_s + s0.pp_bubble_s + s0.tp_comm_s + s0.dp_exposed_s ==
              doctest::Approx(s0.step_time_s).epsilon(1e-12).scale(0));
      }
    }
  }
}

TEST_CASE("compute: full recomputation adds one forward per layer, selective the attention core") {
  const auto m = toy(8);
  const auto& dev = compute::find_device("h100", "test");
  auto comm = zero_comm();
  auto c = config(m, MeshSizes{1, 2, 1, 1, 1}, 4);
  const auto none = simulate_parallel_step(c, dev, comm);
  c.recompute = Recompute::full;
  const auto full = simulate_parallel_step(c, dev, comm);
  c.recompute = Recompute::selective;
  const auto sel = simulate_parallel_step(c, dev, comm);
  CHECK(full.slowest.forward_s == doctest::Approx(none.slowest.forward_s).scale(0));
  // 4 micro-batches x 8 layers, each recomputed once (the output layer is not).
  CHECK(full.slowest.backward_s - none.slowest.backward_s == doctest::Approx(4 * 8 * none.layer_forward_s).epsilon(1e-12).scale(4 * 8));  // 32 ps: each recomputed forward rounds to a whole ps (sim Time)
  const auto core = parallel::layer_compute(m, dev, {1, 2048, 2, 1, false, true, Recompute::selective}).recompute_s;
  CHECK(sel.slowest.backward_s - none.slowest.backward_s == doctest::Approx(4 * 8 * core).epsilon(1e-12).scale(4 * 8));  // 32 ps: one whole-ps rounding per recompute
  CHECK(core > 0);
  CHECK(core < none.layer_forward_s);
}

TEST_CASE("MoE: a dispatch and a combine all-to-all per layer in forward and in backward on the ep group") {
  const auto m = toy_moe();
  const auto& dev = compute::find_device("h100", "test");
  std::uint64_t a2a = 0, a2a_bytes = 0;
  FunctionComm comm([&](coll::OpKind k, std::uint64_t bytes, const std::vector<int>& g) {
    if (k == coll::OpKind::alltoall) {
      CHECK(g.size() == 4);
      ++a2a;
      a2a_bytes = bytes;
    }
    return k == coll::OpKind::alltoall ? 2e-4 : 0.0;
  });
  for (const double imbalance : {1.0, 1.5}) {
    auto c = config(m, MeshSizes{2, 1, 1, 1, 4}, 8 * 2);  // 8 replicas (dp x ep), 2 micro-batches
    c.moe_imbalance = imbalance;
    c.fold = Fold::none;
    a2a = 0;
    const auto r = simulate_parallel_step(c, dev, comm);
    // One a2a node per ep group instance, costed once per (size, group) by the step's memo:
    // 2 ep groups x 1 distinct size.
    CHECK(a2a == 2);
    CHECK(a2a_bytes == static_cast<std::uint64_t>(2048.0 * 2 * 1024 * 2 * imbalance));
    // 4 per layer and micro-batch, each 0.2 ms, all blocking.
    CHECK(r.slowest.ep_alltoall_s == doctest::Approx(4 * 8 * 2 * 2e-4).epsilon(1e-6).scale(0));
  }
}

TEST_CASE("3D step: folded equals every rank; parts add up; data-parallel reduction per stage") {
  const auto m = toy(8);
  const auto& dev = compute::find_device("h100", "test");
  // Time = latency + bytes / bandwidth of the group (the same on every instance: symmetric).
  FunctionComm comm([](coll::OpKind k, std::uint64_t bytes, const std::vector<int>& g) {
    const double bw = g.size() == 2 && k == coll::OpKind::broadcast ? 25e9 : 100e9;
    return 5e-6 + static_cast<double>(bytes) / bw * (k == coll::OpKind::allreduce ? 2.0 : 1.0);
  });
  for (const auto* strategy : {"replicated", "zero1", "zero3"}) {
    CAPTURE(strategy);
    auto c = config(m, MeshSizes{2, 2, 2, 1, 1}, 16);
    c.schedule = PipelineSchedule{ScheduleKind::interleaved, 2};
    c.strategy = parallel::dp_strategy_from_string(strategy, 0, "--strategy");
    const auto folded = simulate_parallel_step(c, dev, comm);
    c.fold = Fold::none;
    const auto every = simulate_parallel_step(c, dev, comm);
    CHECK(folded.fold == "stage representatives");
    CHECK(folded.step.ranks_simulated == 2);
    CHECK(every.step.ranks_simulated == 8);
    CHECK(folded.step.step_time_s == every.step.step_time_s);
    CHECK(folded.slowest.pp_bubble_s == doctest::Approx(every.slowest.pp_bubble_s).epsilon(1e-12).scale(0));
    CHECK(folded.slowest.dp_exposed_s == doctest::Approx(every.slowest.dp_exposed_s).epsilon(1e-12).scale(0));
    for (const auto& x : every.per_rank) {
      const double sum = x.forward_s + x.backward_s + x.update_s + x.tp_comm_s + x.ep_alltoall_s + x.cp_exposed_s +
                         x.pp_bubble_s + x.dp_exposed_s;
      CHECK(sum == doctest::Approx(x.step_time_s).epsilon(1e-12).scale(0));
      CHECK(x.dp_comm_s > 0);
    }
    CHECK(folded.slowest.tp_comm_s > 0);
    CHECK(folded.slowest.pp_bubble_s > 0);
  }
}

TEST_CASE("sharded weight update: 1/N of the update, the all-reduce's volume as reduce-scatter + all-gather") {
  const auto m = toy(8);
  const auto& dev = compute::find_device("h100", "test");
  FunctionComm comm([](coll::OpKind, std::uint64_t bytes, const std::vector<int>&) { return static_cast<double>(bytes) / 50e9; });
  auto c = config(m, MeshSizes{8, 1, 1, 1, 1}, 8);
  const auto rep = simulate_parallel_step(c, dev, comm);
  c.strategy = parallel::dp_strategy_from_string("zero1", 0, "--strategy");
  const auto z1 = simulate_parallel_step(c, dev, comm);
  const double launch = dev.launch_s;
  CHECK((z1.step.update_s - launch) == doctest::Approx((rep.step.update_s - launch) / 8).epsilon(1e-6).scale(0));
  // Replicated: all-reduces of S; zero1: reduce-scatter of S and all-gather of S; busbw
  // bytes are equal (2(n-1)/n S against 2 x (n-1)/n S).
  CHECK(z1.step.comm_bytes == doctest::Approx(rep.step.comm_bytes).epsilon(1e-6).scale(0));
}

TEST_CASE("parallel step: bad input names the flag and the numbers") {
  const auto m = toy(16);
  const auto& dev = compute::find_device("h100", "test");
  auto comm = zero_comm();
  auto c = config(m, MeshSizes{1, 3, 1, 1, 1}, 4);
  CHECK(error_of([&] { simulate_parallel_step(c, dev, comm); }) ==
        "--mesh: tp=3 does not divide the 16 attention heads of toy; expected a tp that divides the number of heads");
  c = config(m, MeshSizes{1, 1, 3, 1, 1}, 4);
  CHECK(error_of([&] { simulate_parallel_step(c, dev, comm); }) ==
        "--mesh: pp=3 does not divide the 16 layers of toy; expected a pp that divides the number of layers");
  c = config(m, MeshSizes{2, 1, 1, 1, 1}, 8);
  c.micro_batch = 3;
  CHECK(error_of([&] { simulate_parallel_step(c, dev, comm); }) ==
        "--micro-batch: 3 does not divide the per-replica batch 4 (--global-batch 8 / 2 replicas); expected a "
        "micro-batch that divides the per-replica batch");
  c = config(m, MeshSizes{1, 1, 1, 1, 1}, 4);
  c.schedule = PipelineSchedule{ScheduleKind::interleaved, 2};
  CHECK(error_of([&] { simulate_parallel_step(c, dev, comm); }) ==
        "--schedule: interleaved:2 with pp=1; expected pp >= 2 for the interleaved schedule");
  struct Sized final : CommModel {
    double time_s(coll::OpKind, std::uint64_t, const std::vector<int>&) override { return 0; }
    [[nodiscard]] std::optional<std::size_t> devices() const override { return 8; }
  } sized;
  c = config(m, MeshSizes{2, 2, 1, 1, 1}, 4);
  CHECK(error_of([&] { simulate_parallel_step(c, dev, sized); }) ==
        "--mesh: dp x tp x pp x cp x ep = 4 devices on a topology of 8; expected a mesh whose product is the device count");
}

TEST_CASE("layer_compute is the per-op model: a dense layer's forward is compute::layer_time's") {
  // tp = 1, cp = 1: the parts add up to models/compute's layer (fused QKV, no rotary kernels).
  const auto m = toy(4);
  const auto& dev = compute::find_device("h100", "test");
  const auto lc = parallel::layer_compute(m, dev, {2, 2048, 1, 1, false, true, Recompute::none});
  compute::LayerShape s;
  s.hidden = m.hidden;
  s.heads = s.kv_heads = m.heads;
  s.ffn = m.ffn;
  s.seq = 2048;
  s.micro_batch = 2;
  const auto lt = compute::layer_time(dev, s);
  CHECK(lc.fwd_s() == doctest::Approx(lt.forward_s).epsilon(1e-12).scale(0));
  CHECK(lc.bwd_s() == doctest::Approx(lt.backward_s).epsilon(1e-12).scale(0));
  // tp not dividing the hidden size: named.
  CHECK(error_of([&] { parallel::layer_compute(m, dev, {1, 2048, 3, 1, false, true, Recompute::none}); }) ==
        "--mesh: tp=3 with hidden 1024 and FFN width 4096 of toy; expected a tp that divides the hidden size and the FFN "
        "width (Megatron-LM splits both)");
}

TEST_CASE("gradient reduction after the backward (Megatron-LM 2021 --DDP-impl local): one all-reduce, fully exposed") {
  // overlap_grad_reduce = false: every gradient of the stage (its layers and the embedding /
  // head extras) in one all-reduce after the last backward; nothing hides it, so the step is
  // forward + backward + that all-reduce + the update. With overlap the same bytes go in buckets
  // during the last micro-batch's backward, and less is exposed.
  const auto m = toy(8);
  const auto dev = no_contention("h100");  // the schedule's closed form: compute not slowed by NCCL
  const double bw = 50e9;
  std::set<std::uint64_t> sizes;  // distinct all-reduce sizes asked (the fold check asks again)
  FunctionComm comm([&](coll::OpKind k, std::uint64_t bytes, const std::vector<int>& g) {
    CHECK(k == coll::OpKind::allreduce);
    CHECK(g.size() == 8);
    sizes.insert(bytes);
    return static_cast<double>(bytes) / bw;
  });
  auto c = config(m, MeshSizes{8, 1, 1, 1, 1}, 16);  // 2 micro-batches per replica
  c.overlap_grad_reduce = false;
  const auto off = simulate_parallel_step(c, dev, comm);
  const double elements =
      8 * parallel::layer_shard_elements(m, 1, 1).dense + parallel::stage_extra_elements(m, 1, 1, 0);
  const auto bytes = static_cast<std::uint64_t>(elements * 2);
  REQUIRE(sizes.size() == 1);
  CHECK(*sizes.begin() == bytes);
  const auto& x = off.slowest;
  CHECK(x.dp_exposed_s == doctest::Approx(static_cast<double>(bytes) / bw).epsilon(1e-6).scale(0));
  CHECK(x.step_time_s == doctest::Approx(x.forward_s + x.backward_s + x.update_s + static_cast<double>(bytes) / bw).epsilon(1e-12).scale(0));
  c.overlap_grad_reduce = true;
  sizes.clear();
  const auto on = simulate_parallel_step(c, dev, comm);
  CHECK(sizes.size() > 1);  // buckets of max(40 M, 8 M) elements (and the last, smaller one)
  CHECK(on.slowest.dp_comm_s == doctest::Approx(off.slowest.dp_comm_s).epsilon(1e-6).scale(0));  // the same bytes
  CHECK(on.slowest.dp_exposed_s < off.slowest.dp_exposed_s);
  CHECK(on.step.step_time_s == doctest::Approx(off.step.step_time_s - (off.slowest.dp_exposed_s - on.slowest.dp_exposed_s)).epsilon(1e-6).scale(0));
}

TEST_CASE("context parallelism: the ring's K,V exchange is exposed only where it exceeds the core's other blocks") {
  // Ring attention (parallel_graphs.hpp): per layer and micro-batch the exchange C (an
  // all-gather of S = cp x 2 x 2 b s_q k d / t bytes in forward; K,V with dK,dV, 2 S, in
  // backward) runs beside cp - 1 of the attention core's cp blocks, so the compute stream waits
  // max(0, C - (cp-1)/cp core) forward and max(0, C_b - (cp-1)/cp core_b) backward; with
  // pipelined ring steps t_step = C / (cp - 1) that is (cp-1) max(0, t_step - t_b), t_b = core/cp.
  const auto m = toy(4);
  const auto dev = no_contention("h100");  // the schedule's closed form: compute not slowed by NCCL
  const std::uint64_t mb = 2;
  for (const std::uint64_t cp : {2ULL, 4ULL}) {
    const auto lc = parallel::layer_compute(m, dev, {1, 2048, 1, cp, false, true, Recompute::none});
    const double f = static_cast<double>(cp - 1) / static_cast<double>(cp);
    const auto S = static_cast<std::uint64_t>(cp * 2 * (2048 / cp) * 1 * 16 * 64 * 2);
    for (const double scale : {0.3, 0.8, 1.5, 4.0}) {
      // Forward exchange time = scale x the blocks beside it: hidden, hidden, partly, mostly exposed.
      const double bw = static_cast<double>(S) / (scale * f * lc.core_fwd_s);
      std::set<std::uint64_t> sizes;
      FunctionComm comm([&](coll::OpKind k, std::uint64_t bytes, const std::vector<int>& g) {
        if (k != coll::OpKind::allgather) return 0.0;  // the dp all-reduce (over the cp group) is free here
        CHECK(g.size() == cp);
        sizes.insert(bytes);
        return static_cast<double>(bytes) / bw;
      });
      auto c = config(m, MeshSizes{1, 1, 1, cp, 1}, mb);
      c.output_layer = false;
      const auto r = simulate_parallel_step(c, dev, comm);
      CAPTURE(cp);
      CAPTURE(scale);
      CHECK(sizes == std::set<std::uint64_t>{S, 2 * S});
      const double cf = static_cast<double>(S) / bw, cb = static_cast<double>(2 * S) / bw;
      const double per_layer = std::max(0.0, cf - f * lc.core_fwd_s) + std::max(0.0, cb - f * lc.core_bwd_s);
      const auto& x = r.slowest;
      CHECK(x.cp_exposed_s == doctest::Approx(static_cast<double>(m.layers * mb) * per_layer).epsilon(1e-6).scale(1e-6));
      if (scale < 1 && cb <= f * lc.core_bwd_s) CHECK(x.cp_exposed_s == 0.0);
      // The layer's compute is unchanged by the split; the parts add up.
      CHECK(x.forward_s == doctest::Approx(static_cast<double>(m.layers * mb) * lc.fwd_s()).epsilon(1e-6).scale(0));
      CHECK(x.forward_s + x.backward_s + x.update_s + x.cp_exposed_s + x.dp_exposed_s ==
            doctest::Approx(x.step_time_s).epsilon(1e-12).scale(0));
    }
  }
}

TEST_CASE("uneven pipeline stages: the Llama 3 rule over (virtual) stages, in memory and in the step") {
  // Llama 3 405B (Dubey et al. 2024, sec. 3.3.2): 126 layers on pp = 16 with interleaving, one
  // layer fewer on the first and last stages. Over 32 virtual stages (v = 2): 4 each, less one on
  // the first (chunk 0 of stage 0) and the last (chunk 1 of stage 15): stages of 7, 8 x 14, 7.
  const auto vs = parallel::virtual_stage_layers(126, 16, 2);
  CHECK(vs.size() == 32);
  CHECK(vs.front() == 3);
  CHECK(vs.back() == 3);
  CHECK(std::count(vs.begin(), vs.end(), 4ULL) == 30);
  const auto cl = parallel::chunk_layers(126, 16, 2);
  CHECK(cl[0] == std::vector<std::uint64_t>{3, 4});
  CHECK(cl[15] == std::vector<std::uint64_t>{4, 3});
  for (std::uint64_t i = 1; i < 15; ++i) CHECK(cl[i] == std::vector<std::uint64_t>{4, 4});
  CHECK(parallel::virtual_stage_layers(126, 16, 1) == parallel::stage_layers(126, 16));

  const auto& dev = compute::find_device("h100", "test");
  auto comm = zero_comm();
  // Memory: 10 layers on pp = 4 (1F1B) are 2, 3, 3, 2; a middle stage of 3 layers holds what a
  // middle stage of the even 12-layer split (3 each) holds, activations for min(p - i, m) micro-batches.
  const auto m10 = toy(10), m12 = toy(12);
  auto c = config(m10, MeshSizes{1, 1, 4, 1, 1}, 8);
  CHECK(error_of([&] { simulate_parallel_step(c, dev, comm); }) ==
        "--mesh: pp=4 does not divide the 10 layers of toy; expected a pp that divides the number of layers");
  c.uneven_stages = true;
  const auto mem10 = parallel::parallel_memory(memory_input(c, 0));
  auto c12 = config(m12, MeshSizes{1, 1, 4, 1, 1}, 8);
  const auto mem12 = parallel::parallel_memory(memory_input(c12, 0));
  std::vector<std::uint64_t> layers;
  for (const auto& st : mem10.stages) layers.push_back(st.layers);
  CHECK(layers == std::vector<std::uint64_t>{2, 3, 3, 2});
  for (const std::uint64_t i : {1ULL, 2ULL}) {
    CAPTURE(i);
    CHECK(mem10.stages[i].params == mem12.stages[i].params);
    CHECK(mem10.stages[i].optimizer == mem12.stages[i].optimizer);
    CHECK(mem10.stages[i].activations ==
          doctest::Approx(static_cast<double>((4 - i) * 3) * mem10.layer_activation_bytes).epsilon(1e-12).scale(0));
  }

  // Step, GPipe, free communication, no output layer: 5 layers on pp = 2 are 2, 3 (stage 1 is
  // the bottleneck). Stage 1 runs its m forwards after stage 0's first (F0 = 2 f), then its m
  // backwards; stage 0's last backward follows stage 1's last: F0 + m (F1 + B1) + B0 before
  // stage 0's update, with f, b one layer's forward and backward.
  const auto m5 = toy(5);
  const std::uint64_t mb = 4;
  auto g = config(m5, MeshSizes{1, 1, 2, 1, 1}, mb);
  g.schedule = PipelineSchedule{ScheduleKind::gpipe, 1};
  g.output_layer = false;
  g.uneven_stages = true;
  const auto r = simulate_parallel_step(g, dev, comm);
  const double f = r.layer_forward_s, b = r.layer_backward_s;
  const auto& s0 = stage0(r);
  CHECK(s0.forward_s == doctest::Approx(mb * 2 * f).epsilon(1e-6).scale(0));
  CHECK(s0.step_time_s - s0.update_s == doctest::Approx(2 * f + mb * 3 * (f + b) + 2 * b).epsilon(1e-6).scale(0));

  // Interleaved (v = 2) with uneven virtual stages: 14 layers over pp = 2 x v = 2 are 3, 4, 4, 3;
  // each stage runs 7 layers per micro-batch.
  const auto m14 = toy(14);
  auto iv = config(m14, MeshSizes{1, 1, 2, 1, 1}, mb);
  iv.schedule = PipelineSchedule{ScheduleKind::interleaved, 2};
  CHECK(error_of([&] { simulate_parallel_step(iv, dev, comm); }) ==
        "--mesh: pp x v = 2 x 2 = 4 does not divide the 14 layers of toy; expected pp x virtual stages dividing the "
        "number of layers");
  iv.uneven_stages = true;
  iv.output_layer = false;
  const auto ri = simulate_parallel_step(iv, dev, comm);
  REQUIRE(ri.per_rank.size() == 2);
  for (const auto& x : ri.per_rank) CHECK(x.forward_s == doctest::Approx(mb * 7 * ri.layer_forward_s).epsilon(1e-6).scale(0));
  CHECK(ri.memory.stages[0].layers == 7);
  CHECK(ri.memory.stages[1].layers == 7);
}

TEST_CASE("pipeline p2p as Megatron runs it: blocking sends add 2(m-1)T to a 2-stage GPipe step; scatter/gather splits them") {
  // Two symmetric stages (no output layer), m micro-batches, stage time f forward and b backward
  // per micro-batch, a transfer of T (<= f, b) and nothing else communicating. Sends beside the
  // compute: stage 1's last forward ends (m + 1) f + T, the gradients come back one backward
  // apart, the step is (m + 1)(f + b) + 2T. Blocking sends (Megatron's _communicate waits for
  // them): stage 0 forwards every f + T, stage 1 backwards every b + T: (m + 1)(f + b) + 2 m T.
  const auto m = toy(16);
  const auto dev = no_contention("h100");  // the schedule's closed form: compute not slowed by NCCL
  const std::uint64_t mb = 4;
  auto c = config(m, MeshSizes{1, 1, 2, 1, 1}, mb);
  c.schedule = PipelineSchedule{ScheduleKind::gpipe, 1};
  c.output_layer = false;
  auto zero = zero_comm();
  const auto probe = simulate_parallel_step(c, dev, zero);
  const double f = probe.layer_forward_s * 8, b = probe.layer_backward_s * 8;
  const double T = 0.25 * std::min(f, b);
  FunctionComm comm([&](coll::OpKind k, std::uint64_t, const std::vector<int>&) {
    return k == coll::OpKind::broadcast ? T : 0.0;
  });
  const double mf = static_cast<double>(mb);
  const auto async = simulate_parallel_step(c, dev, comm);
  CHECK(async.step.step_time_s - async.slowest.update_s ==
        doctest::Approx((mf + 1) * (f + b) + 2 * T).epsilon(1e-9).scale(0));
  c.p2p_blocking = true;
  const auto blocking = simulate_parallel_step(c, dev, comm);
  CHECK(blocking.step.step_time_s - async.step.step_time_s == doctest::Approx(2 * (mf - 1) * T).epsilon(1e-6).scale(0));

  // Scatter/gather with tp = 2 and no sequence parallelism: each rank sends half the activation
  // (2 b s h / 2 bytes), and the receiver all-gathers the whole of it over its tp group, once
  // per receive; without it, the whole activation travels and a non-sequence-parallel tp
  // group only all-reduces.
  auto c2 = config(m, MeshSizes{1, 2, 2, 1, 1}, mb);
  c2.output_layer = false;
  const std::uint64_t act = 2ULL * 2048 * m.hidden;  // b s h x 2 bytes, micro-batch 1
  std::set<std::uint64_t> p2p_bytes;
  int gathers = 0;
  FunctionComm spy([&](coll::OpKind k, std::uint64_t bytes, const std::vector<int>& g) {
    if (k == coll::OpKind::broadcast) p2p_bytes.insert(bytes);
    if (k == coll::OpKind::allgather) {
      CHECK(bytes == act);
      CHECK(g.size() == 2);
      ++gathers;
    }
    return 0.0;
  });
  simulate_parallel_step(c2, dev, spy);
  CHECK(p2p_bytes == std::set<std::uint64_t>{act});
  CHECK(gathers == 0);
  p2p_bytes.clear();
  c2.p2p_scatter_gather = true;
  simulate_parallel_step(c2, dev, spy);
  CHECK(p2p_bytes == std::set<std::uint64_t>{act / 2});
  CHECK(gathers > 0);
  // With sequence parallelism the activation is already split: no effect (as in Megatron).
  c2.sequence_parallel = true;
  p2p_bytes.clear();
  simulate_parallel_step(c2, dev, spy);
  CHECK(p2p_bytes == std::set<std::uint64_t>{act / 2});
}

TEST_CASE("mesh step: compute beside a NCCL collective runs on the SMs it leaves (the data-parallel step's rule)") {
  // The ring's K,V exchange C beside cp - 1 of the attention core's cp blocks (W of work, no
  // GEMMs): with NCCL holding 32 of the H100's 132 SMs the blocks run at 100/132 while C is in
  // flight. With C >= W x 1.32 every block is slowed: the forward grows by 0.32 W per layer and
  // only C - 1.32 W is exposed. The same with comm_units 0 is the plain closed form (above).
  const auto m = toy(4);
  const auto& dev = compute::find_device("h100", "test");
  REQUIRE(dev.comm_units == 32);
  const std::uint64_t mb = 2, cp = 2;
  const auto lc = parallel::layer_compute(m, dev, {1, 2048, 1, cp, false, true, Recompute::none});
  const double W = 0.5 * lc.core_fwd_s, slow = 132.0 / 100.0;
  const double cf = 4.0 * W;  // forward exchange; the backward's (2 S) is twice as long
  FunctionComm comm([&](coll::OpKind k, std::uint64_t bytes, const std::vector<int>&) {
    if (k != coll::OpKind::allgather) return 0.0;
    const auto S = static_cast<std::uint64_t>(cp * 2 * (2048 / cp) * 1 * 16 * 64 * 2);
    return bytes == S ? cf : 2 * cf;
  });
  auto c = config(m, MeshSizes{1, 1, 1, cp, 1}, mb);
  c.output_layer = false;
  const auto r = simulate_parallel_step(c, dev, comm);
  const double n = static_cast<double>(m.layers * mb);
  const auto& x = r.slowest;
  CHECK(x.forward_s == doctest::Approx(n * (lc.fwd_s() + (slow - 1) * W)).epsilon(1e-6).scale(0));
  const double Wb = 0.5 * lc.core_bwd_s;
  REQUIRE(2 * cf >= slow * Wb);
  CHECK(x.backward_s == doctest::Approx(n * (lc.bwd_s() + (slow - 1) * Wb)).epsilon(1e-6).scale(0));
  CHECK(x.cp_exposed_s == doctest::Approx(n * ((cf - slow * W) + (2 * cf - slow * Wb))).epsilon(1e-6).scale(0));
  // Without the SMs taken: the blocks keep their time.
  const auto plain = simulate_parallel_step(c, no_contention("h100"), comm);
  CHECK(plain.slowest.forward_s == doctest::Approx(n * lc.fwd_s()).epsilon(1e-6).scale(0));
  // TransformerEngine's overlapped tp traffic takes no SMs: with tp overlap the layer's compute
  // is what it is without contention (no other collective beside it here).
  auto t = config(m, MeshSizes{1, 4, 1, 1, 1}, mb);
  t.sequence_parallel = true;
  t.tp_comm_overlap = true;
  t.output_layer = false;
  FunctionComm slow_tp([&](coll::OpKind k, std::uint64_t, const std::vector<int>&) {
    return k == coll::OpKind::allgather || k == coll::OpKind::reducescatter ? 1e-3 : 0.0;
  });
  const auto a = simulate_parallel_step(t, dev, slow_tp);
  const auto b = simulate_parallel_step(t, no_contention("h100"), slow_tp);
  CHECK(a.slowest.forward_s + a.slowest.backward_s ==
        doctest::Approx(b.slowest.forward_s + b.slowest.backward_s).epsilon(1e-12).scale(0));
}
