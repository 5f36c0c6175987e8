// Published end-to-end training steps with tensor and pipeline parallelism (issue 13), beyond
// Megatron-LM's SC'21 Table 1 (test_megatron_accuracy.cpp, the template of this file), predicted
// by the mesh step (models/step/parallel_graphs.hpp, analytical collectives, step::TopologyComm)
// from presets, a model JSON and each record's stated settings; nothing is fitted to the
// records. Error = predicted / measured - 1 of the iteration time (+: predicted too slow).
// The records are tests/data/published/training/*.json; where each setting below comes from:
//  a. Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
//     (arXiv 2205.05198; korthikanti2022-selective-recompute.SOURCE.txt): Table 3's layouts (tp
//     8, pp 1/8/35/64, dp 1; micro-batch 4 for 22B, 1 otherwise; global batch = Table 3's), sec.
//     6.3's 530B on 2,240 GPUs (dp 8, batch 2,240); sec. 6: sequence 2,048, vocabulary 51,200,
//     interleaving with three stages per device (v = 3) for 175B and 530B (1F1B otherwise: the
//     1T schedule is not stated), mixed precision, Selene (8 A100 80GB per node, 8 x 200 Gb/s HDR
//     InfiniBand): the dgx-a100-N preset up to its 1,120 GPUs, selene-N above; "Full Recompute"
//     = full recomputation without sequence parallelism, "Present Work" = sequence parallelism
//     and selective recomputation (sec. 6.3); the gradient all-reduce is not overlapped with the
//     backward (sec. 6.3: overlap_grad_reduce = false); no flash attention (2022: Megatron's
//     fused softmax over the stored scores); Adam (Megatron-LM's optimizer); the pipeline
//     transfers as Megatron-LM of 2021-2022 ran them (blocking; scatter/gather over the tp
//     ranks, which the model, like Megatron, skips with sequence parallelism).
//     Models: tests/data/models/megatron-gpt/gpt-{22b,175b,529.6b,1008.0b}.json (the 530B and 1T
//     shapes are SC'21 Table 1's 529.6B and 1008.0B: layers, hidden and heads checked below).
//     The 2,240-GPU full-recompute record has no time, only the abstract's MFU 42.1 %: its
//     measured time is the paper's Eq. 7 (72 B L s h^2 (1 + s/6h + V/12hL)) / (MFU x GPUs x
//     312 TFLOP/s) (the SOURCE: Eq. 7 at 312 TFLOP/s reproduces every published MFU within 0.2
//     points).
//  b. BLOOM 176B (bigscience tr11-176B-ml README and slurm; bigscience2022-bloom-176b.SOURCE.txt):
//     the two records with an iteration time (global batch 2,048 and 16): 384 A100 80GB (48
//     nodes), tp 4, pp 12, dp 8, micro-batch 2 (README "Replica setup"; slurm), sequence 2,048,
//     --checkpoint-activations (full recomputation), no sequence parallelism (Hugging Face blog
//     "The Technology Behind BLOOM Training": developed after BLOOM), no flash attention (2022),
//     --bf16 (mixed precision) with DeepSpeed's BF16_Optimizer, its own ZeRO stage 1 (zero1);
//     DeepSpeed's pipeline engine: 1F1B, activations sent 1/tp per tp rank and all-gathered at
//     the receiver (deepspeed/runtime/pipe/engine.py is_pipe_partitioned), blocking sends
//     (p2p_blocking, p2p_scatter_gather as in a.), gradients reduced after the last backward
//     (deepspeed/runtime/pipe/schedule.py TrainSchedule: ReduceGrads after the last micro-batch;
//     overlap_grad_reduce = false); 70 layers on 12 stages as 5, 6 x 10, 5 (the README's
//     partition with the embedding counted as a layer on the first and last stage; here
//     uneven_stages, parallel::stage_layers). Model: tests/data/models/bloom-176b.json. Preset:
//     topologies/presets/jean-zay-a100.json (4 x 100 Gb/s Omni-Path per 8-GPU node).
//  c. MegaScale (Jiang et al. 2024, arXiv 2402.15627; jiang2024-megascale.SOURCE.txt), the
//     Megatron-LM baseline rows only (the MegaScale rows run a modified model with LAMB): Table
//     1/2 (175B, tp 8, pp 8, dp = GPUs / 64, global batch 768 or 6,144), Table 3's baseline (256
//     GPUs, batch 256, MFU 47.7 %: measured time from MFU as in a., with MegaScale's (6N + 12 L h
//     s) FLOPs per token at 312 TFLOP/s, N = the model's parameter count), sec. 6.1 (interleaved
//     schedule with six stages per device, sequence 2,048, vocabulary 64,000, Megatron-LM commit
//     285068c8 of 2023-01). Model: tests/data/models/megascale-gpt-175b.json. Preset:
//     topologies/presets/megascale-a100.json (8 x 200 Gb/s RoCE per 8-GPU server, three-tier
//     non-blocking Clos modelled as one non-blocking tier) for every row, 256-12,288 GPUs
//     (dgx-a100-N has the same bandwidths but InfiniBand framing and stops at 1,120 GPUs).
//     Settings the SOURCE does not state, chosen as Megatron-LM of January 2023 runs by default,
//     and what fits in memory (kMegaScaleChoices, printed in the table's header): A100 80GB;
//     mixed precision (bf16 or fp16: the step times both alike); micro-batch 1 (Megatron-LM's
//     GPT-3 175B example, examples/pretrain_gpt3_175B.sh); the optimizer replicated (the
//     distributed optimizer is opt-in, --use-distributed-optimizer); gradients all-reduced
//     after the backward (--overlap-grad-reduce came later in 2023); no flash attention
//     (--use-flash-attn is opt-in); blocking pipeline transfers (--overlap-p2p-communication is
//     opt-in); recomputation: none and no sequence parallelism (the defaults) if that fits in
//     80 GB, else selective recomputation with sequence parallelism (the README: "Selective
//     recomputation is the default and is recommended in almost all cases", with
//     --sequence-parallel); the test prints which applied and why. These rows form their own
//     table and median, not pooled with a. and b.
//  d. Stored, not predicted (printed with the reason): MT-NLG 530B (secondary transcriptions,
//     micro-batch unknown, DeepSpeed's pipeline engine of 2021), NeMo 24.07 H100 FP8 (the step
//     models 16-bit mixed precision only), BLOOM's global-batch-192 record (a rounded "@ 73
//     TFLOPs" without a time), and MegaScale's own rows (a modified model, LAMB).
// Asserted: every predicted record fits in its GPU's memory; the median |error| of each table
// and of a. and b. pooled below what is measured rounded up by about a point (the measured
// figures are next to the bounds in the test cases). Label accuracy: prints the tables;
// SHARDSIM_ACCURACY_BREAKDOWN=1 prints each step's parts and CPU time to stderr.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/compute/device.hpp"
#include "models/optimizer/optimizer.hpp"
#include "models/parallel/memory_stage.hpp"
#include "models/step/parallel_graphs.hpp"
#include "models/step/topology_comm.hpp"
#include "topologies/load.hpp"
#include "traces/models/model_config.hpp"

using namespace shardsim;
using nlohmann::json;

namespace {

const std::string kDir = SHARDSIM_SOURCE_DIR "/tests/data/";
// A100 dense 16-bit peak (NVIDIA A100 datasheet), the peak of the records' MFU (their SOURCEs).
constexpr double kA100Peak = 312e12;

json load_records(const std::string& file, std::size_t expected) {
  std::ifstream f(kDir + "published/training/" + file);
  REQUIRE_MESSAGE(f.good(), file);
  json records = json::parse(f);
  REQUIRE_MESSAGE(records.size() == expected, file);
  return records;
}

parallel::ModelSpec load_model(const std::string& file, const json& md) {
  auto model = models::load_model_file(kDir + "models/" + file);
  REQUIRE(model.layers == md.at("layers").get<std::uint64_t>());
  REQUIRE(model.hidden == md.at("hidden").get<std::uint64_t>());
  REQUIRE(model.heads == md.at("heads").get<std::uint64_t>());
  REQUIRE(model.vocab == md.at("vocab").get<std::uint64_t>());
  return model;
}

struct Row {
  std::string id, preset, layout, measured_text;
  std::uint64_t gpus = 0;
  double measured_s = 0, predicted_s = 0, error = 0;
  std::optional<std::string> does_not_fit;
};

// The step of `c` on `preset`; the row's error against `measured_s`.
Row predict(const json& r, const std::string& preset, step::ParallelStepConfig c, double measured_s,
            const std::string& measured_text) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto topo = topo::make_topology(preset, "test");
  const auto& dev = compute::device_for_model(topo.device_model(), "test");
  step::TopologyComm comm(topo, step::Fidelity::analytical);
  const auto t1 = std::chrono::steady_clock::now();
  const auto res = step::simulate_parallel_step(c, dev, comm);
  if (std::getenv("SHARDSIM_ACCURACY_BREAKDOWN") != nullptr) {
    const auto& s = res.slowest;
    const auto t2 = std::chrono::steady_clock::now();
    fmt::print(stderr,
               "{}: step {:.3f} s = forward {:.3f} + backward {:.3f} + update {:.3f} + tp {:.3f} + pp bubble {:.3f} + dp "
               "exposed {:.3f} (dp comm {:.3f}); stage {}, {} ranks simulated ({}); peak {:.1f} GiB; wall: topology "
               "{:.2f} s, step {:.2f} s\n",
               r.at("id").get<std::string>(), s.step_time_s, s.forward_s, s.backward_s, s.update_s, s.tp_comm_s,
               s.pp_bubble_s, s.dp_exposed_s, s.dp_comm_s, s.stage, res.per_rank.size(), res.fold,
               res.memory.worst().peak / (1024.0 * 1024 * 1024), std::chrono::duration<double>(t1 - t0).count(),
               std::chrono::duration<double>(t2 - t1).count());
  }
  Row row;
  row.id = r.at("id").get<std::string>();
  row.gpus = r.at("gpus").get<std::uint64_t>();
  REQUIRE(c.mesh.dp * c.mesh.tp * c.mesh.pp == row.gpus);
  row.preset = preset;
  const bool v = c.schedule.kind == parallel::ScheduleKind::interleaved;
  row.layout = fmt::format("tp {}, pp {}{}, dp {}, mb {}, GBS {}, {}{}", c.mesh.tp, c.mesh.pp,
                           v ? fmt::format(", v {}", c.schedule.virtual_stages) : "", c.mesh.dp, c.micro_batch,
                           c.global_batch, parallel::to_string(c.recompute), c.sequence_parallel ? ", SP" : "");
  row.measured_s = measured_s;
  row.measured_text = measured_text;
  row.predicted_s = res.step.step_time_s;
  row.error = row.predicted_s / measured_s - 1;
  row.does_not_fit = res.memory.does_not_fit;
  return row;
}

double median_abs(const std::vector<Row>& rows) {
  std::vector<double> v;
  for (const auto& r : rows) v.push_back(std::abs(r.error));
  REQUIRE(!v.empty());
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void print_table(const std::string& title, const std::vector<Row>& rows) {
  fmt::print("\n{}\n\n| record | GPUs | preset | layout | measured | predicted | error |\n|---|---|---|---|---|---|---|\n", title);
  for (const auto& r : rows) {
    fmt::print("| {} | {} | {} | {} | {} | {:.2f} s | {:+.1f} % |\n", r.id, r.gpus, r.preset, r.layout, r.measured_text,
               r.predicted_s, 100 * r.error);
  }
  fmt::print("median |error| {:.1f} % ({} records)\n", 100 * median_abs(rows), rows.size());
}

void print_not_predicted(const std::string& id, const std::string& reason) {
  fmt::print("| {} | not predicted | {} |\n", id, reason);
}

// --- a. Korthikanti et al. 2022 -------------------------------------------------------------

std::string korthikanti_model_file(const std::string& name) {
  // The paper's size labels; 530B and 1T are SC'21 Table 1's 529.6B and 1008.0B shapes.
  if (name == "gpt-22b") return "megatron-gpt/gpt-22b.json";
  if (name == "gpt-175b") return "megatron-gpt/gpt-175b.json";
  if (name == "gpt-530b") return "megatron-gpt/gpt-529.6b.json";
  if (name == "gpt-1t") return "megatron-gpt/gpt-1008.0b.json";
  FAIL("unknown Korthikanti model " << name);
  return {};
}

// What every record states the same way: the model, its dp x tp x pp layout, the micro-batch
// (when recorded) and global batch, sequence 2,048.
step::ParallelStepConfig record_config(const json& r, const parallel::ModelSpec& model) {
  const auto& par = r.at("parallelism");
  step::ParallelStepConfig c;
  c.model = &model;
  c.mesh = parallel::MeshSizes{par.at("dp").get<std::uint64_t>(), par.at("tp").get<std::uint64_t>(),
                               par.at("pp").get<std::uint64_t>(), 1, 1};
  if (r.contains("micro_batch") && r.at("micro_batch").is_number_unsigned()) c.micro_batch = r.at("micro_batch").get<std::uint64_t>();
  c.global_batch = r.at("global_batch_sequences").get<std::uint64_t>();
  c.seq = 2048;
  return c;
}

std::vector<Row> korthikanti_rows() {
  std::vector<Row> rows;
  for (const auto& r : load_records("korthikanti2022-selective-recompute.json", 10)) {
    const auto& md = r.at("model");
    const auto model = load_model(korthikanti_model_file(md.at("name").get<std::string>()), md);
    // The paper's size label (1T recorded as 1,000) within 1 %.
    CHECK_MESSAGE(std::abs(model.parameter_count() / 1e9 / md.at("params_billion").get<double>() - 1) <= 0.01,
                  r.at("id").get<std::string>());
    const auto& par = r.at("parallelism");
    const std::uint64_t gpus = r.at("gpus").get<std::uint64_t>();
    step::ParallelStepConfig c = record_config(r, model);
    if (par.contains("virtual_stages")) {
      c.schedule = parallel::PipelineSchedule{parallel::ScheduleKind::interleaved, par.at("virtual_stages").get<std::uint64_t>()};
    }
    const bool present_work = r.at("sequence_parallel").get<bool>();
    c.sequence_parallel = present_work;
    c.recompute = present_work ? parallel::Recompute::selective : parallel::Recompute::full;
    c.flash_attention = false;
    c.optimizer = &opt::find_optimizer("adam", "test");
    c.overlap_grad_reduce = false;
    c.p2p_blocking = true;
    c.p2p_scatter_gather = true;
    const std::string preset = fmt::format("{}-{}", gpus <= 1120 ? "dgx-a100" : "selene", gpus);
    const auto& meas = r.at("measured");
    if (meas.contains("iteration_time_s")) {
      const double t = meas.at("iteration_time_s").get<double>();
      rows.push_back(predict(r, preset, c, t, fmt::format("{:.2f} s", t)));
    } else {
      // Eq. 7 (model FLOPs) / (MFU x GPUs x peak).
      const double B = static_cast<double>(c.global_batch), s = 2048, L = static_cast<double>(model.layers),
                   h = static_cast<double>(model.hidden), V = static_cast<double>(model.vocab);
      const double flops = 72 * B * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L));
      const double mfu = meas.at("mfu_percent").get<double>() / 100;
      const double t = flops / (mfu * static_cast<double>(gpus) * kA100Peak);
      rows.push_back(predict(r, preset, c, t, fmt::format("{:.2f} s (MFU {:.1f} %)", t, 100 * mfu)));
    }
  }
  return rows;
}

// --- b. BLOOM 176B ----------------------------------------------------------------------------

std::vector<Row> bloom_rows() {
  std::vector<Row> rows;
  for (const auto& r : load_records("bigscience2022-bloom-176b.json", 3)) {
    const auto& meas = r.at("measured");
    if (!meas.contains("iteration_time_s")) continue;  // GBS 192: "@ 73 TFLOPs" only (printed below)
    const auto& md = r.at("model");
    const auto model = load_model("bloom-176b.json", md);
    // 176.247B (the BLOOM paper via the SOURCE); the embedding LayerNorm (28,672) is not in the
    // model format.
    CHECK(std::abs(model.parameter_count() / 1e9 / md.at("params_billion").get<double>() - 1) <= 1e-3);
    step::ParallelStepConfig c = record_config(r, model);
    c.uneven_stages = true;
    c.recompute = parallel::Recompute::full;
    c.sequence_parallel = false;
    c.flash_attention = false;
    c.strategy = parallel::dp_strategy_from_string("zero1", 0, "test");
    c.optimizer = &opt::find_optimizer("adam", "test");
    c.overlap_grad_reduce = false;
    c.p2p_blocking = true;
    c.p2p_scatter_gather = true;
    const double t = meas.at("iteration_time_s").get<double>();
    rows.push_back(predict(r, fmt::format("jean-zay-a100-{}", r.at("gpus").get<std::uint64_t>()), c, t,
                           fmt::format("{:.2f} s", t)));
  }
  REQUIRE(rows.size() == 2);
  return rows;
}

// --- c. MegaScale's Megatron-LM baseline --------------------------------------------------------

const char* const kMegaScaleChoices =
    "A100 80GB (megascale-a100 preset), mixed precision, Adam, micro-batch 1, optimizer replicated, gradient "
    "all-reduce after the backward, no flash attention, blocking p2p; recompute none without SP if it fits in 80 GB, "
    "else selective with SP";

// Ranks are folded to one per stage (Fold::exact, parallel_graphs.hpp) after a check that every
// collective role times alike on all its group instances, which costs most of the time at 6,144
// GPUs and more (22.9 s of CPU at 12,288 GPUs). Above `exact_up_to` GPUs the rows skip that check
// (Fold::assume_symmetric, as the planner on symmetric presets); the test checks on the 3,072-GPU
// row that both give the same step time.
std::vector<Row> megascale_rows(std::string& recompute_note, std::uint64_t exact_up_to) {
  std::vector<Row> rows;
  for (const auto& r : load_records("jiang2024-megascale.json", 17)) {
    if (r.at("system").get<std::string>().rfind("Megatron-LM", 0) != 0) continue;
    const auto& md = r.at("model");
    const auto model = load_model("megascale-gpt-175b.json", md);
    const auto& par = r.at("parallelism");
    const std::uint64_t gpus = r.at("gpus").get<std::uint64_t>();
    step::ParallelStepConfig c = record_config(r, model);
    c.micro_batch = 1;
    c.schedule = parallel::PipelineSchedule{parallel::ScheduleKind::interleaved, par.at("virtual_stages").get<std::uint64_t>()};
    c.flash_attention = false;
    c.optimizer = &opt::find_optimizer("adam", "test");
    c.overlap_grad_reduce = false;
    c.p2p_blocking = true;
    c.p2p_scatter_gather = true;
    c.fold = gpus <= exact_up_to ? step::Fold::exact : step::Fold::assume_symmetric;
    const std::string preset = fmt::format("megascale-a100-{}", gpus);
    // Megatron-LM's defaults (no recomputation, no sequence parallelism) when they fit.
    const auto& dev = compute::device_for_model("a100-80gb", "test");
    const auto defaults = parallel::parallel_memory(step::memory_input(c, static_cast<double>(dev.hbm_bytes)));
    if (defaults.does_not_fit) {
      c.recompute = parallel::Recompute::selective;
      c.sequence_parallel = true;
      recompute_note = "Megatron-LM's default (no recompute, no SP) does not fit: " + *defaults.does_not_fit;
    } else {
      recompute_note = "Megatron-LM's default (no recompute, no SP) fits in 80 GB";
    }
    const auto& meas = r.at("measured");
    if (meas.contains("iteration_time_s")) {
      const double t = meas.at("iteration_time_s").get<double>();
      rows.push_back(predict(r, preset, c, t, fmt::format("{:.2f} s", t)));
    } else {
      // Table 3's baseline: (6N + 12 L h s) per token x tokens / (MFU x GPUs x peak).
      const double L = static_cast<double>(model.layers), h = static_cast<double>(model.hidden), s = 2048;
      const double flops = static_cast<double>(c.global_batch) * s * (6 * model.parameter_count() + 12 * L * h * s);
      const double mfu = meas.at("mfu_percent").get<double>() / 100;
      const double t = flops / (mfu * static_cast<double>(gpus) * kA100Peak);
      rows.push_back(predict(r, preset, c, t, fmt::format("{:.2f} s (MFU {:.1f} %)", t, 100 * mfu)));
    }
  }
  REQUIRE(rows.size() == 9);
  return rows;
}

bool all_fit(const std::vector<Row>& rows) {
  bool ok = true;
  for (const auto& r : rows) {
    CHECK_MESSAGE(!r.does_not_fit.has_value(), r.id << ": " << r.does_not_fit.value_or(""));
    ok = ok && !r.does_not_fit;
  }
  return ok;
}

}  // namespace

TEST_CASE("Korthikanti et al. 2022 and BLOOM 176B: iteration time from presets and the records' settings") {
  const std::vector<Row> k = korthikanti_rows();
  const std::vector<Row> b = bloom_rows();
  print_table("Korthikanti et al. 2022 (arXiv 2205.05198) Table 5 and sec. 6.3, A100 80GB Selene", k);
  print_table("BLOOM 176B (tr11-176B-ml), 384 A100 80GB on Jean Zay", b);
  std::vector<Row> pooled = k;
  pooled.insert(pooled.end(), b.begin(), b.end());
  fmt::print("pooled (Korthikanti + BLOOM, {} records): median |error| {:.1f} %\n", pooled.size(), 100 * median_abs(pooled));
  CHECK(all_fit(pooled));
  // Measured 2026-12-02 (main at 056cd93, the sequence-parallel backward as TE / Megatron-Core
  // run it): median |error| Korthikanti 5.8 % (signed -12.2 to +0.6 %, every row but one
  // predicted too fast; 4.9 % before that change, which hides the reduce-scatter behind the
  // weight-gradient GEMM), BLOOM 32.4 % (-19.0 % and -45.9 %), pooled 6.7 %; bounded about a
  // point above.
  CHECK(median_abs(k) <= 0.07);
  CHECK(median_abs(b) <= 0.335);
  CHECK(median_abs(pooled) <= 0.075);
}

TEST_CASE("MegaScale's Megatron-LM baseline (arXiv 2402.15627 Table 2/3): its own table, settings chosen where unstated") {
  std::string recompute_note;
  const std::vector<Row> m = megascale_rows(recompute_note, 3072);
  print_table(fmt::format("MegaScale Megatron-LM baseline, 175B (chosen where the paper is silent: {}; {})",
                          kMegaScaleChoices, recompute_note),
              m);
  CHECK(all_fit(m));
  // Measured 2026-12-02 (main at 056cd93): median |error| 8.5 % (signed -15.8 to -1.4 %, growing
  // with the GPUs at a fixed batch; 7.2 % before the sequence-parallel backward change); bounded
  // about a point above.
  CHECK(median_abs(m) <= 0.095);
  // The folding shortcut of the rows above 3,072 GPUs gives what the checked fold gives.
  std::string note;
  const std::vector<Row> symmetric = megascale_rows(note, 1024);
  const auto row_3072 = [](const std::vector<Row>& rows) {
    const auto it = std::find_if(rows.begin(), rows.end(), [](const Row& r) { return r.gpus == 3072; });
    REQUIRE(it != rows.end());
    return it->predicted_s;
  };
  CHECK(row_3072(symmetric) == row_3072(m));
}

TEST_CASE("Records stored and not predicted, with the reason") {
  fmt::print("\n| record | | reason |\n|---|---|---|\n");
  for (const auto& r : load_records("smith2022-mtnlg-530b.json", 3)) {
    print_not_predicted(r.at("id").get<std::string>(),
                        "secondary transcriptions only; micro-batch not found; DeepSpeed's pipeline engine of 2021");
  }
  for (const auto& r : load_records("nemo2407-h100-fp8.json", 6)) {
    CHECK(r.at("precision").get<std::string>().rfind("fp8", 0) == 0);
    print_not_predicted(r.at("id").get<std::string>(), "FP8; the step models 16-bit mixed precision only");
  }
  for (const auto& r : load_records("bigscience2022-bloom-176b.json", 3)) {
    if (!r.at("measured").contains("iteration_time_s")) {
      print_not_predicted(r.at("id").get<std::string>(), "no iteration time (a rounded '@ 73 TFLOPs' in prose)");
    }
  }
  for (const auto& r : load_records("jiang2024-megascale.json", 17)) {
    if (r.at("system").get<std::string>().rfind("Megatron-LM", 0) == 0) continue;
    print_not_predicted(r.at("id").get<std::string>(),
                        "MegaScale's modified model (parallel block, sliding-window attention) and LAMB");
  }
}
