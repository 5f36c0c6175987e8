// Training throughput of published data-parallel / FSDP runs (tests/data/published/training:
// llm-foundry MPT on H100 / A100, torchtitan Llama on A100 / H100) predicted from presets and
// cited constants only (nothing here is fitted to these records; docs/validation.md):
//  - the model from the record (layers, hidden, heads, KV heads, FFN, vocabulary, sequence),
//    as the zoo builds it (traces/zoo): MPT = GeLU MLP, fused QKV, tied embeddings, learned
//    positions (the SOURCE: NumParams grows by seq x d_model), no dropout (the MPT pretraining
//    yamls set attn_pdrop = resid_pdrop = 0); Llama = SwiGLU, RMSNorm, rotary, three Q/K/V
//    GEMMs (torchtitan), untied head; flash attention (the records' "attention" field);
//  - the step: zero3 (FSDP FULL_SHARD / FSDP2), mixed-precision AdamW, the record's micro
//    batch and gradient accumulation (torchtitan: global / dp), full recomputation where the
//    record has it; torchtitan's selective recomputation: "layer" (every second layer
//    checkpointed) as the mean of the runs without and with full recomputation (time and
//    memory), "op" as the run without plus the kernels its policy recomputes
//    (selective_op_recompute_s below; memory: the mean);
//  - the system: dgx-h100-N / dgx-a100-N (topologies/presets), analytical collectives; device
//    h100, a100-80gb, a100-40gb. torchtitan's H100s are 96 GB HBM2e parts at 500 W (the
//    record's gpu_type and its SOURCE: 2.4 TB/s): the h100-hbm2e-500w preset (that memory, the
//    SXM peaks, the 700 W sustained rates x (500/700)^(1/3), P ~ f^3; device.cpp).
// The throughput error is the MFU error: predicted MFU = measured MFU x predicted / measured
// tokens per second per GPU (the same definition on both sides). Gradients are reduce-scattered in
// fp32 where the record says so (MPT "MP Mode" DEFAULT, torchtitan's FSDP2 fp32 reduce;
// StepConfig::reduce_bytes), in bf16 for PURE. Compute overlapped by an FSDP
// collective runs on the SMs NCCL's channels leave (Device::comm_units, models/step/executor.hpp);
// on Hopper the GEMMs among it are persistent kernels of one CTA per SM, which then run in two
// waves (Device::persistent_gemm; pytorch/pytorch#143988).
// GEMMs and attention run at the presets' sustained (power-limited) rates (device.cpp).
// torchtitan's eager rows run the reference RMSNorm op by op and repeat_kv's copies
// (zoo::TransformerConfig::eager_kernels); its torch.compile rows the fused count. MPT's rows
// run attention as llm-foundry's attn_impl: triton kernel (config_of).
// FSDP's passes around each unit's collectives: fsdp1 for MPT (composer), fsdp2 for torchtitan.
// Asserted: median |relative MFU error| <= 10 % (issue 15's target; 9.5 % is reached) and largest
// <= 23 % (22.7 % reached), and every configuration that ran is predicted to fit. SHARDSIM_ACCURACY_BREAKDOWN=1 prints each simulated step's parts to stderr.
// Label accuracy; prints the table that docs/validation.md carries.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/compute/gemm.hpp"
#include "models/compute/transformer_cost.hpp"
#include "models/step/step.hpp"
#include "models/step/topology_comm.hpp"
#include "topologies/load.hpp"
#include "traces/trace/workload.hpp"
#include "traces/zoo/zoo.hpp"

using namespace shardsim;
using nlohmann::json;

namespace {

const std::string kDir = SHARDSIM_PUBLISHED_DIR "/training/";

struct Prediction {
  std::string id;
  double measured_tps = 0, predicted_tps = 0, measured_mfu = 0, predicted_mfu = 0;
  double peak_GiB = 0, hbm_GiB = 0;
  bool fits = true;
  std::string note;
};

double gib(double b) { return b / double(1ULL << 30); }

// `r`: the record. torchtitan's rows run its Llama in eager PyTorch unless torch.compile is on:
// train_configs/llama3_8b.toml sets norm_type = "rmsnorm" (the reference RMSNorm, every op its
// own kernel; torchtitan @ 0011fb9 and the first release's file), and the model copies K / V to
// every query head (repeat_kv); with torch.compile the block's elementwise ops are fused.
// torchtitan's records are its Llama models (SwiGLU: the model carries gated_ffn); MPT's are not.
bool torchtitan(const json& r) { return r.at("model").contains("gated_ffn"); }

zoo::TransformerConfig config_of(const json& r) {
  const json& m = r.at("model");
  zoo::TransformerConfig c;
  c.layers = m.at("layers").get<std::uint64_t>();
  c.d_model = m.at("hidden").get<std::uint64_t>();
  c.heads = m.at("heads").get<std::uint64_t>();
  c.kv_heads = m.at("kv_heads").get<std::uint64_t>();
  c.ffn = m.at("ffn_hidden").get<std::uint64_t>();
  c.vocab = m.at("vocab").get<std::uint64_t>();
  const bool llama = torchtitan(r);
  c.gated_ffn = llama;
  c.rmsnorm = llama;
  c.biases = false;
  c.tied_embeddings = !llama;
  c.learned_positions = llama ? 0 : m.at("seq_len").get<std::uint64_t>();
  c.dropout = false;
  c.flash_attention = true;
  // MPT's benchmarks ran llm-foundry's attn_impl: triton (scripts/train/benchmarking/
  // submit_benchmarks.py of the tables' era, llm-foundry @ 431051c and @ a7c7567:
  // `--attn_impl ... default='triton'`, written into model.attn_config; sweep.sh never sets it):
  // HazyResearch's 2022 Triton FlashAttention (compute::AttentionShape::triton).
  c.triton_attention = !llama;
  c.fused_qkv = !llama;
  c.eager_kernels = llama && !r.value("torch_compile", false);
  return c;
}

struct Run {
  double step_s = 0, peak = 0, hbm = 0;
};

// torchtitan's selective op recomputation, per transformer block (its _save_list policy,
// torchtitan parallelize_llama.py from the first release on: the outputs of aten.mm, of the
// flash / efficient SDPA and of reduce-scatter are saved "except every second mm", counted in
// the block; everything else is recomputed). A Llama block runs its mms in the order wq, wk,
// wv, wo, w1, w3, w2, so the 2nd, 4th and 6th (wk, wo, w3) and every non-matmul kernel (norms,
// rotary, SiLU, the gating product, residual adds) are recomputed; attention is not. The time
// of that recomputation for one layer, forward kernels on `dev` (gemm.hpp, op_cost.hpp).
double selective_op_recompute_s(const compute::Device& dev, const zoo::TransformerConfig& cfg, std::uint64_t mb,
                                std::uint64_t seq) {
  double t = 0;
  for (const auto& o : compute::layer_ops(zoo::layer_shape(cfg, mb, seq))) {
    const auto& g = o.shape.gemms;
    // attn.qkv: [q, k, v] (three GEMMs, torchtitan) -> k; attn.out: wo; mlp.up: [w1, w3] -> w3.
    if (o.name == "attn.qkv" && g.size() == 3) t += compute::gemm_time_s(dev, g[1], compute::MathType::bf16);
    if (o.name == "attn.out" && g.size() == 1) t += compute::gemm_time_s(dev, g[0], compute::MathType::bf16);
    if (o.name == "mlp.up" && g.size() == 2) t += compute::gemm_time_s(dev, g[1], compute::MathType::bf16);
    t += o.shape.ew_bytes_fwd / (dev.hbm_Bps * dev.mem_eff) + o.shape.ew_kernels_fwd * dev.launch_s;
  }
  return t;
}

// `selective_op`: no checkpointing plus torchtitan's selective op recomputation of every layer.
// `fused`: the fused kernels whatever the record runs (for memory under torchtitan's op policy,
// which recomputes the eager norms' and repeat_kv's outputs instead of keeping them).
Run simulate(const json& r, bool checkpointing, bool selective_op = false, bool fused = false) {
  const auto& m = r.at("model");
  const std::uint64_t seq = m.at("seq_len").get<std::uint64_t>();
  const std::uint64_t mb = r.at("micro_batch").get<std::uint64_t>();
  const std::uint64_t gpus = r.at("gpus").get<std::uint64_t>();
  const std::string gpu = r.at("gpu_type").get<std::string>();
  std::uint64_t accum = r.contains("grad_accum") ? r.at("grad_accum").get<std::uint64_t>() : 0;
  if (accum == 0) accum = r.at("global_batch_sequences").get<std::uint64_t>() / (gpus * mb);
  zoo::TransformerConfig cfg = config_of(r);
  if (fused) cfg.eager_kernels = false;
  const auto w = trace::to_workload(zoo::transformer_trace(m.at("name").get<std::string>(), cfg, mb, seq));
  const bool h100 = gpu.rfind("H100", 0) == 0;
  // torchtitan's H100s: 96 GB HBM2e parts at 500 W (the record's gpu_type, its SOURCE).
  const char* preset = !h100 ? (gpu.find("40GB") != std::string::npos ? "a100-40gb" : "a100-80gb")
                       : gpu.find("96GB-HBM2e") != std::string::npos ? "h100-hbm2e-500w"
                                                                      : "h100";
  const compute::Device& dev = compute::find_device(preset, "t");
  const auto topo = topo::make_topology(fmt::format("{}-{}", h100 ? "dgx-h100" : "dgx-a100", gpus), "t");
  step::TopologyComm comm(topo, step::Fidelity::analytical);
  step::StepConfig c;
  c.strategy = step::Strategy::zero3;
  c.optimizer = &opt::find_optimizer("adamw", "t");
  c.dp = gpus;
  c.grad_accum = static_cast<std::uint32_t>(accum);
  // fp32 gradient reduction where the record says so: composer's fsdp mixed_precision DEFAULT
  // (reduce_dtype torch.float32; PURE reduces in bf16) and torchtitan's FSDP2 policy ("fp32
  // reduce" in the record's precision).
  const std::string wu = r.at("parallelism").at("weight_update").get<std::string>();
  const std::string prec = r.at("precision").get<std::string>();
  if (wu.find("mixed precision DEFAULT") != std::string::npos || prec.find("fp32 reduce") != std::string::npos) {
    c.reduce_bytes = 4;
  }
  c.checkpointing = checkpointing;
  // FSDP's own passes around each unit's collectives (StepConfig::fsdp, strategy_graphs.cpp):
  // composer's FSDP (torch.distributed.fsdp, PyTorch 2.1 for the DEFAULT rows) and torchtitan's
  // FSDP2 (fully_shard).
  c.fsdp = torchtitan(r) ? step::FsdpImpl::fsdp2 : step::FsdpImpl::fsdp1;
  auto s = step::simulate_step(w, dev, c, comm);
  if (selective_op) {
    // On the compute stream before each layer's backward, every micro-batch: added to the step.
    const double extra = static_cast<double>(accum) * m.at("layers").get<double>() *
                         selective_op_recompute_s(dev, cfg, mb, seq);
    s.step_time_s += extra;
    s.backward_s += extra;
  }
  if (std::getenv("SHARDSIM_ACCURACY_BREAKDOWN") != nullptr) {
    // Diagnostics: the step's parts (seconds) and the model's FLOPs per token.
    fmt::print(stderr, "{} ckpt={} accum={} step {:.3f}: fwd {:.3f} bwd {:.3f} update {:.3f} exposed comm {:.3f} comm {:.3f}; mfu {:.3f}\n",
               r.at("id").get<std::string>(), checkpointing, accum, s.step_time_s, s.forward_s, s.backward_s, s.update_s,
               s.exposed_comm_s, s.comm_s, s.mfu);
  }
  return {s.step_time_s / static_cast<double>(accum * mb * seq), s.memory.peak, static_cast<double>(dev.hbm_bytes)};
}

std::vector<Prediction> predict_all() {
  std::vector<Prediction> out;
  for (const char* file : {"llm-foundry-mpt-fsdp.json", "torchtitan-llama.json"}) {
    std::ifstream in(kDir + file);
    REQUIRE(in.good());
    const json records = json::parse(in);
    for (const auto& r : records) {
      const auto& p = r.at("parallelism");
      if (p.at("tp").get<int>() != 1 || p.at("pp").get<int>() != 1 || p.at("cp").get<int>() != 1) continue;
      const std::string rc = r.at("recompute").get<std::string>();
      Run run;
      std::string note;
      if (rc.find("op") != std::string::npos || rc == "selective") {
        // "selective op" (A100 rows), and the H100 rows' "selective": llama3_8b.toml of that
        // era, selective_ac_option = 'op' (torchtitan @ 08a5a9f). Time: the op policy above;
        // memory: the mean of no and full recomputation (it keeps more: the measured peaks
        // of the H100 rows, 82.4 and 67.0 GiB, are above it).
        // Memory: the op policy recomputes the norms and repeat_kv (not in _save_list), so their
        // eager tensors are not kept across layers: the fused kernels' mean.
        const Run a = simulate(r, false, true);
        const Run am = simulate(r, false, false, true), bm = simulate(r, true, false, true);
        run = {a.step_s, (am.peak + bm.peak) / 2, a.hbm};
        note = "selective op: wk, wo, w3 and the elementwise kernels recomputed";
      } else if (rc.rfind("selective", 0) == 0) {
        // "selective layer": every second block fully checkpointed (torchtitan's
        // selective_ac_option = '2'), half the layers' forward recomputed: the mean of none and
        // full, in time and memory.
        const Run a = simulate(r, false), b = simulate(r, true);
        run = {(a.step_s + b.step_s) / 2, (a.peak + b.peak) / 2, a.hbm};
        note = "selective layer = mean of none and full";
      } else {
        run = simulate(r, rc == "full");
      }
      auto add = [&note](const char* s) { note += std::string(note.empty() ? "" : "; ") + s; };
      const zoo::TransformerConfig cfg = config_of(r);
      if (cfg.triton_attention) add("attention: Triton kernel");
      if (cfg.eager_kernels) add("eager: reference RMSNorm, repeat_kv");
      if (r.value("torch_compile", false)) add("torch.compile: fused norms, no repeat_kv copies");
      Prediction x;
      x.id = r.at("id").get<std::string>();
      x.measured_tps = r.at("measured").at("tokens_per_s_per_gpu").get<double>();
      x.predicted_tps = 1.0 / run.step_s;
      if (r.contains("mfu")) {
        x.measured_mfu = r.at("mfu").get<double>();
      } else {
        // torchtitan's definition: (6 (N - embedding) + 12 L h s) FLOPs per token over the SXM
        // peak (the doc's footnote 2).
        const auto& m = r.at("model");
        const double L = m.at("layers").get<double>(), h = m.at("hidden").get<double>(), s = m.at("seq_len").get<double>();
        const double f = m.at("ffn_hidden").get<double>(), V = m.at("vocab").get<double>();
        const double kv = h * m.at("kv_heads").get<double>() / m.at("heads").get<double>();
        const double n = L * (2 * h * h + 2 * h * kv + 3 * h * f + 2 * h) + h + V * h;  // untied head, no embedding
        x.measured_mfu = (6 * n + 12 * L * h * s) * x.measured_tps / 989.5e12;
      }
      x.predicted_mfu = x.measured_mfu * x.predicted_tps / x.measured_tps;
      x.peak_GiB = gib(run.peak);
      x.hbm_GiB = gib(run.hbm);
      x.fits = run.peak <= run.hbm;
      x.note = note;
      out.push_back(x);
    }
  }
  return out;
}

}  // namespace

// Issue 15's target is a median of 10 %; measured on 2026-12-01: 31.6 % without and 28.2 % with
// the SM contention of FSDP collectives, 22.9 % with the sustained GEMM / attention rates as well,
// 20.6 % on 2026-12-02 with torchtitan's H100s as the 500 W part they were, 21.0 % with the fp32
// gradient reduction and torchtitan's selective op policy as well (every prediction too high,
// docs/validation.md; largest 76.2, 58.0, 51.4, 51.4 and 47.0 %), 11.2 % with each run's own kernels
// and FSDP passes (largest 24.7 %), 9.5 % with Hopper's persistent GEMMs beside FSDP's collectives
// (largest 22.7 %). The median bound is the target; the largest is what is reached, so a
// regression fails the test.
TEST_CASE("published FSDP runs: MFU predicted from presets (median |error| bound = what is reached), every run predicted to fit") {
  const auto preds = predict_all();
  REQUIRE(preds.size() >= 8);
  fmt::print("| record | measured MFU | predicted MFU | signed error | predicted peak / HBM (GiB) | fits | note |\n");
  fmt::print("|---|---|---|---|---|---|---|\n");
  std::vector<double> abs_err;
  int misfits = 0;
  for (const auto& p : preds) {
    const double err = p.predicted_mfu / p.measured_mfu - 1.0;
    abs_err.push_back(std::abs(err));
    misfits += p.fits ? 0 : 1;
    fmt::print("| {} | {:.1f} % | {:.1f} % | {:+.1f} % | {:.1f} / {:.0f} | {} | {} |\n", p.id, 100 * p.measured_mfu,
               100 * p.predicted_mfu, 100 * err, p.peak_GiB, p.hbm_GiB, p.fits ? "yes" : "NO", p.note);
  }
  std::vector<double> sorted = abs_err;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  fmt::print("\n{} records; median |MFU error| {:.1f} %; largest {:.1f} %; predicted not to fit: {}\n", n, 100 * median,
             100 * sorted.back(), misfits);
  CHECK(median <= 0.100);
  CHECK(sorted.back() <= 0.230);
  CHECK(misfits == 0);
}
