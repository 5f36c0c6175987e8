// Per-stage memory against closed forms: Korthikanti et al. 2022 Table 2 per layer, in-flight
// micro-batches of GPipe / 1F1B / interleaved 1F1B, model states per stage and strategy, the
// GPT-3 175B setting of the paper, and every validation message.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "models/compute/device.hpp"
#include "models/optimizer/optimizer.hpp"
#include "models/parallel/memory_stage.hpp"
#include "sim/error.hpp"
#include "helpers.hpp"

using namespace shardsim;
using namespace shardsim::parallel;

namespace {

using shardsim::parallel::test::error_of;

// GPT-3 175B as Korthikanti et al. 2022, Table 3: 96 layers, h 12288, 96 heads, s 2048, GPT-2
// vocabulary, learned positions, biases, LayerNorm, tied embeddings, dropout.
ModelSpec gpt3_175b() {
  ModelSpec m;
  m.name = "gpt3-175b";
  m.layers = 96;
  m.hidden = 12288;
  m.heads = m.kv_heads = 96;
  m.ffn = 4 * 12288;
  m.vocab = 50257;
  m.max_positions = 2048;
  m.learned_positions = true;
  m.tied_embeddings = true;
  m.qkv_bias = m.linear_bias = true;
  m.dropout = true;
  m.default_seq = 2048;
  return m;
}

// A small decoder with simple counts: RMSNorm, no biases, untied, no dropout, GELU MLP.
ModelSpec toy() { return shardsim::parallel::test::toy_decoder(8, 512); }

double rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

}  // namespace

TEST_CASE("one layer: Korthikanti et al. 2022, Table 2, for GPT-3 175B shapes") {
  const ModelSpec m = gpt3_175b();
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  const double sbh = s * b * h;
  ActivationShape x;
  x.seq = 2048;
  x.micro_batch = 1;
  x.flash_attention = false;  // the paper's Megatron (2022) materialises the scores
  // No parallelism: sbh (34 + 5as/h).
  CHECK(rel(layer_activation_bytes(m, x), sbh * (34 + 5 * a * s / h)) < 1e-12);
  x.tp = 8;
  CHECK(rel(layer_activation_bytes(m, x), sbh * (10 + 24 / t + 5 * a * s / (h * t))) < 1e-12);
  x.sequence_parallel = true;
  CHECK(rel(layer_activation_bytes(m, x), sbh * (34 / t + 5 * a * s / (h * t))) < 1e-12);
  x.recompute = Recompute::selective;
  CHECK(rel(layer_activation_bytes(m, x), sbh * 34 / t) < 1e-12);
  x.sequence_parallel = false;
  CHECK(rel(layer_activation_bytes(m, x), sbh * (10 + 24 / t)) < 1e-12);
  x.recompute = Recompute::full;
  CHECK(rel(layer_activation_bytes(m, x), 2 * sbh) < 1e-12);
  x.sequence_parallel = true;
  CHECK(rel(layer_activation_bytes(m, x), 2 * sbh / t) < 1e-12);
  // Recompute working sets: selective recomputes the attention core, full the whole layer.
  CHECK(rel(recompute_working_bytes(m, x), sbh * (34 / t + 5 * a * s / (h * t))) < 1e-12);
  x.recompute = Recompute::selective;
  CHECK(rel(recompute_working_bytes(m, x), 5 * a * s * s * b / t) < 1e-12);
  // Flash attention: the 5as^2b score terms become the fp32 log-sum-exp, 4 a s b.
  x.recompute = Recompute::none;
  x.flash_attention = true;
  CHECK(rel(layer_activation_bytes(m, x), sbh * 34 / t + 4 * a * s * b / t) < 1e-12);
  // Context parallelism splits the sequence: cp = 2 halves every flash-attention term.
  x.cp = 2;
  CHECK(rel(layer_activation_bytes(m, x), (sbh * 34 / t + 4 * a * s * b / t) / 2) < 1e-12);
  // Output layer on the last stage (Korthikanti sec. 4.4, with SP): 4 sbh/t (1 + v/h), v
  // padded to 51200 at t = 8.
  x.cp = 1;
  CHECK(rel(output_activation_bytes(m, x), 4 * sbh / t * (1 + 51200 / h)) < 1e-12);
  CHECK(rel(embedding_activation_bytes(m, x), sbh / t) < 1e-12);
}

TEST_CASE("GQA and SwiGLU: the paper's accounting term by term") {
  ModelSpec m = toy();
  m.kv_heads = 4;  // K and V are 4/16 of Q
  m.gated_ffn = true;
  ActivationShape x;
  x.seq = 512;
  x.micro_batch = 2;
  x.tp = 4;
  const double s = 512, b = 2, h = 1024, f = 4096, a = 16, t = 4;
  // R = 8 sbh; T = 2 sbh (Q) + 4 sbh (k/a) (K, V) + 2 sbh (O) + 6 sbf; C = 4 a s b (flash).
  const double R = 8 * s * b * h, T = 2 * s * b * h + 4 * s * b * h * 4 / 16 + 2 * s * b * h + 6 * s * b * f;
  CHECK(rel(layer_activation_bytes(m, x), R + (T + 4 * a * s * b) / t) < 1e-12);
}

TEST_CASE("eager kernels: the reference RMSNorm's fp32 copies and repeat_kv's K / V, term by term") {
  ModelSpec m = toy();  // RMSNorm
  m.kv_heads = 4;
  m.gated_ffn = true;
  ActivationShape x;
  x.seq = 512;
  x.micro_batch = 2;
  x.tp = 4;
  const double s = 512, b = 2, h = 1024, t = 4;
  const double fused = layer_activation_bytes(m, x);
  x.eager_kernels = true;
  // R gains 2 norms x 4 bytes sbh (replicated over tp); T gains K and V at every query head:
  // 4 sbh (1 - 4/16), split over tp.
  CHECK(rel(layer_activation_bytes(m, x) - fused, 8 * s * b * h + 4 * s * b * h * (1 - 4.0 / 16) / t) < 1e-12);
  // LayerNorm models keep PyTorch's one native kernel; MHA has nothing to repeat.
  m.rmsnorm = false;
  m.kv_heads = m.heads;
  const double mha_ln = layer_activation_bytes(m, x);
  x.eager_kernels = false;
  CHECK(layer_activation_bytes(m, x) == mha_ln);
}

TEST_CASE("in-flight micro-batches: GPipe m, 1F1B min(p - i, m), interleaved 2(p-1) + (v-1)p + 1") {
  for (std::uint64_t p : {1, 2, 4, 8}) {
    for (std::uint64_t m : {1, 2, 3, 8, 16}) {
      const auto g = in_flight({ScheduleKind::gpipe, 1}, p, m);
      const auto o = in_flight({ScheduleKind::one_f_one_b, 1}, p, m);
      for (std::uint64_t i = 0; i < p; ++i) {
        CHECK(g[i] == m);
        CHECK(o[i] == std::min(p - i, m));
      }
    }
  }
  // Interleaved (m a multiple of p, m > p): stage i holds (p - i - 1) 2 + (v - 1) p + 1 chunk
  // micro-batches; stage 0 keeps L/p (1 + (p-1)/(pv)) p layers' worth (Korthikanti 4.2.3).
  for (std::uint64_t p : {2, 4, 8}) {
    for (std::uint64_t v : {2, 3}) {
      const std::uint64_t m = 4 * p;
      const auto f = in_flight({ScheduleKind::interleaved, v}, p, m);
      for (std::uint64_t i = 0; i < p; ++i) CHECK(f[i] == (p - i - 1) * 2 + (v - 1) * p + 1);
      const double layers_per_chunk = 1;  // L = p v
      CHECK(static_cast<double>(f[0]) * layers_per_chunk ==
            doctest::Approx(static_cast<double>(p * v) / static_cast<double>(p) * static_cast<double>(p) *
                            (1.0 + static_cast<double>(p - 1) / static_cast<double>(p * v))).scale(0));
    }
  }
  // m == p: Megatron runs every forward first: m v in flight.
  CHECK(in_flight({ScheduleKind::interleaved, 2}, 4, 4) == std::vector<std::uint64_t>{8, 8, 8, 8});
  // The peak with weights: the output chunk of the last stage is live once under 1F1B.
  CHECK(peak_weighted({ScheduleKind::one_f_one_b, 1}, 4, 8, 3, {5.0}) == 5.0);
  // Interleaved, last stage, v = 2: chunk 1 (the model's last) has one micro-batch live at
  // the peak, chunk 0 all p of its warm-up group: weights {1, 100} -> p + 100.
  CHECK(peak_weighted({ScheduleKind::interleaved, 2}, 4, 8, 3, {1.0, 100.0}) == 4 + 100.0);
}

TEST_CASE("per-stage memory of a small model: closed form for every term") {
  const ModelSpec m = toy();
  ParallelMemoryInput in;
  in.model = &m;
  in.mesh = MeshSizes{2, 2, 4, 1, 1};  // dp, tp, pp
  in.micro_batch = 8;
  in.global_batch = 128;  // 64 per replica, m = 8
  in.schedule = {ScheduleKind::one_f_one_b, 1};
  in.recompute = Recompute::none;
  in.sequence_parallel = true;
  in.flash_attention = false;
  in.optimizer = &opt::find_optimizer("adam", "test");
  in.precision = opt::Precision::mixed;
  const auto r = parallel_memory(in);
  REQUIRE(r.stages.size() == 4);
  CHECK(r.micro_batches == 8);
  const double s = 512, b = 8, h = 1024, f = 4096, a = 16, t = 2, V = 32000;  // 32000 = 125 x 256: no padding
  // No dropout: R = 8 sbh, T = 8 sbh + 4 sbf, C = 2 a s^2 b; SP: (R + T + C) / t.
  const double layer = (16 * s * b * h + 4 * s * b * f + 2 * a * s * s * b) / t;
  CHECK(rel(r.layer_activation_bytes, layer) < 1e-12);
  const double layer_params = (4 * h * h + 2 * h * f) / t + 2 * h;  // q k v o, fc1 fc2 split; two norms
  for (std::uint64_t i = 0; i < 4; ++i) {
    const auto& st = r.stages[i];
    double params = 2 * layer_params;  // L/p = 2 layers
    if (i == 0) params += V * h / t;
    if (i == 3) params += h + h * V / t;
    CHECK(rel(st.params, 2 * params) < 1e-12);      // 16-bit weights
    CHECK(rel(st.grads, 2 * params) < 1e-12);       // 16-bit gradients
    CHECK(rel(st.optimizer, 12 * params) < 1e-12);  // fp32 master + 2 Adam moments
    double act = static_cast<double>(4 - i) * 2 * layer;
    if (i == 3) act += 4 * s * b * h / t + 4 * s * b * V / t;  // norm + projection inputs, fp32 logits
    CHECK(st.in_flight == 4 - i);
    CHECK(rel(st.activations, act) < 1e-12);
    CHECK(st.recompute_working == 0);
    CHECK(rel(st.buffers, 2 * 2 * s * b * h / t) < 1e-12);  // pipeline send + receive
    CHECK(rel(st.peak, 16 * params + act + st.buffers) < 1e-12);
  }
  // zero1 over dp = 2: the optimizer state halves, nothing else changes.
  in.strategy = dp_strategy_from_string("zero1", 0, "--strategy");
  const auto z1 = parallel_memory(in);
  CHECK(rel(z1.stages[1].optimizer, r.stages[1].optimizer / 2) < 1e-12);
  CHECK(z1.stages[1].params == r.stages[1].params);
  // zero3: everything / 2, plus two gathered layers of 16-bit weights.
  in.strategy = dp_strategy_from_string("zero3", 0, "--strategy");
  const auto z3 = parallel_memory(in);
  CHECK(rel(z3.stages[1].model_states(), r.stages[1].model_states() / 2) < 1e-12);
  CHECK(rel(z3.stages[1].buffers - r.stages[1].buffers, 2 * layer_params * 2) < 1e-12);
  // HSDP with k = 2 on dp = 4: the same per-rank states as zero3 on dp = 2.
  in.mesh = MeshSizes{4, 2, 4, 1, 1};
  in.global_batch = 256;
  in.strategy = dp_strategy_from_string("hsdp", 2, "--strategy");
  const auto hs = parallel_memory(in);
  CHECK(rel(hs.stages[1].model_states(), z3.stages[1].model_states()) < 1e-12);
  in.strategy = dp_strategy_from_string("zero3", 0, "--strategy");
  CHECK(rel(parallel_memory(in).stages[1].model_states(), r.stages[1].model_states() / 4) < 1e-12);

  // The fit message names the stage and the term: with HBM below stage 0's activations.
  in.strategy = {};
  in.mesh = MeshSizes{2, 2, 4, 1, 1};
  in.global_batch = 128;
  const double act0 = 4 * 2 * layer;
  in.hbm_bytes = act0 * 0.9;
  const auto small = parallel_memory(in);
  REQUIRE(small.does_not_fit.has_value());
  const double gib = 1024.0 * 1024.0 * 1024.0;
  CHECK(*small.does_not_fit == fmt::format("stage 0 activations {:.1f} GiB > HBM {:.1f} GiB", act0 / gib, act0 * 0.9 / gib));
  // HBM above every single term but below the total: the total, and the largest term.
  const double states0 = 16 * (2 * layer_params + V * h / t);
  const double total0 = states0 + act0 + r.stages[0].buffers;
  in.hbm_bytes = total0 - 1;
  const auto tight = parallel_memory(in);
  REQUIRE(tight.does_not_fit.has_value());
  const double biggest = std::max(12 * (2 * layer_params + V * h / t), act0);
  CHECK(*tight.does_not_fit == fmt::format("stage 0 total {:.1f} GiB > HBM {:.1f} GiB (largest term: {} {:.1f} GiB)",
                                           total0 / gib, (total0 - 1) / gib,
                                           biggest == act0 ? "activations" : "optimizer state", biggest / gib));
  in.hbm_bytes = total0 + 1;
  CHECK_FALSE(parallel_memory(in).does_not_fit.has_value());
}

TEST_CASE("GPT-3 175B on tp=8, pp=8 (Korthikanti et al. 2022): fits with SP + selective, not without") {
  // The paper (Table 3 and Figure 1/7): 175B on t = 8, p = 8, 64 A100 80GB, micro-batch 1,
  // global batch 64, s 2048. Without recomputation and sequence parallelism the activations
  // alone are about 55 GB and parameters + optimizer state about 45 GB, above the 80 GB line;
  // sequence parallelism with selective recomputation brings activations to about 10 GB.
  const ModelSpec m = gpt3_175b();
  const auto& a100 = compute::find_device("a100-80gb", "test");
  ParallelMemoryInput in;
  in.model = &m;
  in.mesh = MeshSizes{1, 8, 8, 1, 1};
  in.micro_batch = 1;
  in.global_batch = 64;
  in.schedule = {ScheduleKind::one_f_one_b, 1};
  in.flash_attention = false;
  in.optimizer = &opt::find_optimizer("adam", "test");
  in.hbm_bytes = static_cast<double>(a100.hbm_bytes);
  in.recompute = Recompute::selective;
  in.sequence_parallel = true;
  const auto good = parallel_memory(in);
  CHECK_FALSE(good.does_not_fit.has_value());
  // Stage 0 activations: p micro-batches x L/p layers x 34 sbh / t = L x 34 sbh / t (+ the
  // embedding dropout masks, p x sbh / t).
  const double sbh = 2048.0 * 12288.0;
  CHECK(rel(good.stages[0].activations, 96 * 34 * sbh / 8 + 8 * sbh / 8) < 1e-12);
  CHECK(good.stages[0].activations / 1e9 == doctest::Approx(10.3).epsilon(0.01).scale(0));
  in.recompute = Recompute::none;
  in.sequence_parallel = false;
  const auto bad = parallel_memory(in);
  REQUIRE(bad.does_not_fit.has_value());
  CHECK(bad.does_not_fit->rfind("stage 0 total ", 0) == 0);
  CHECK(bad.does_not_fit->find("(largest term: activations") != std::string::npos);
  // Stage 0 activations: L x sbh (10 + 24/t + 5as/(ht)) + p sbh (dropout mask, replicated).
  CHECK(rel(bad.stages[0].activations, 96 * sbh * (10 + 24.0 / 8 + 5 * 96 * 2048.0 / (12288.0 * 8)) + 8 * sbh) < 1e-12);
}

TEST_CASE("validation messages name the flag and the numbers") {
  const ModelSpec g = gpt3_175b();
  ModelSpec llama = toy();
  llama.name = "llama-like";
  llama.kv_heads = 4;
  const PipelineSchedule f1{ScheduleKind::one_f_one_b, 1};
  CHECK(error_of([&] { check_mesh_for_model(g, MeshSizes{1, 5, 1, 1, 1}, f1, 2048); }) ==
        "--mesh: tp=5 does not divide the 96 attention heads of gpt3-175b; expected a tp that divides the number of heads");
  CHECK(error_of([&] { check_mesh_for_model(llama, MeshSizes{1, 8, 1, 1, 1}, f1, 512); }) ==
        "--mesh: tp=8 does not divide the 4 KV heads of llama-like; expected a tp that divides the number of KV heads "
        "(Megatron-LM splits whole query groups)");
  CHECK(error_of([&] { check_mesh_for_model(g, MeshSizes{1, 8, 5, 1, 1}, f1, 2048); }) ==
        "--mesh: pp=5 does not divide the 96 layers of gpt3-175b; expected a pp that divides the number of layers");
  CHECK(error_of([&] { check_mesh_for_model(g, MeshSizes{1, 8, 8, 1, 1}, {ScheduleKind::interleaved, 5}, 2048); }) ==
        "--mesh: pp x v = 8 x 5 = 40 does not divide the 96 layers of gpt3-175b; expected pp x virtual stages dividing "
        "the number of layers");
  CHECK(error_of([&] { check_mesh_for_model(g, MeshSizes{1, 1, 1, 1, 2}, f1, 2048); }) ==
        "--mesh: ep=2 for gpt3-175b, which has no experts; expected ep=1 for a dense model");
  CHECK(error_of([&] { check_mesh_for_model(g, MeshSizes{1, 1, 1, 3, 1}, f1, 2048); }) ==
        "--mesh: cp=3 does not divide the sequence length 2048; expected a cp that divides the sequence length");
  CHECK(error_of([] { (void)micro_batches(MeshSizes{16, 8, 8, 1, 1}, 1000, 1); }) ==
        "--global-batch: 1000 is not a multiple of the 16 data-parallel replicas (dp x ep = 16 x 1); expected a global "
        "batch divisible by dp x ep");
  CHECK(error_of([] { (void)micro_batches(MeshSizes{16, 8, 8, 1, 1}, 1024, 3); }) ==
        "--micro-batch: 3 does not divide the per-replica batch 64 (--global-batch 1024 / 16 replicas); expected a "
        "micro-batch that divides the per-replica batch");
  CHECK(micro_batches(MeshSizes{16, 8, 8, 1, 1}, 1024, 4) == 16);
  CHECK(error_of([] { (void)schedule_from_string("interleaved:1", "--schedule"); }) ==
        "--schedule: 'interleaved:1'; expected gpipe, 1f1b or interleaved:V with V >= 2 virtual stages");
  CHECK(schedule_from_string("interleaved:3", "--schedule").virtual_stages == 3);
  CHECK(error_of([] { (void)recompute_from_string("some", "--recompute"); }) ==
        "--recompute: unknown recompute 'some'; expected one of none, selective, full");
  CHECK(error_of([] { (void)dp_strategy_from_string("hsdp", 0, "--strategy"); }) ==
        "--shard-group: missing for --strategy hsdp; expected the size k of the groups that shard (zero3) inside");
  // Interleaved needs m to be a multiple of p.
  ParallelMemoryInput in;
  in.model = &g;
  in.mesh = MeshSizes{2, 8, 4, 1, 1};
  in.global_batch = 12;  // 6 per replica
  in.schedule = {ScheduleKind::interleaved, 2};
  in.optimizer = &opt::find_optimizer("adam", "test");
  CHECK(error_of([&] { (void)parallel_memory(in); }) ==
        "--schedule: interleaved:2 with 6 micro-batches per replica and pp=4; expected a number of micro-batches that "
        "is a multiple of pp (Megatron-LM's interleaved schedule)");
}
