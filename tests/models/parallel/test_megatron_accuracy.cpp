// Megatron-LM's weak-scaling table (Narayanan et al., SC'21, arXiv 2104.04473, Table 1: GPT
// 1.7B-1T on 32-3,072 A100 80GB of NVIDIA Selene; tests/data/published/training/
// narayanan2021-megatron-table1.json) predicted by the mesh step (models/step/parallel_graphs.hpp)
// from presets and the paper's own settings, nothing fitted to the records:
//  - models: tests/data/models/megatron-gpt/gpt-*.json (the table's layers, hidden, heads; GPT:
//    FFN 4h, LayerNorm, biases, dropout, learned positions of 2,048, tied embeddings, vocabulary
//    51,200);
//  - per row, the paper's launch script (NVIDIA/Megatron-LM examples/sc21/run_table_1.sh and
//    CONFIG.sh): tp, pp, micro-batch (MBS), global batch (GBS), sequence 2,048, fp16 mixed
//    precision with Adam, full recomputation ("--recompute-method uniform", one layer per
//    checkpoint), the interleaved schedule where the script sets
//    --num-layers-per-virtual-pipeline-stage (v = layers / pp / that), DDP "torch" (gradient
//    all-reduce overlapped with the backward) for the rows with pp = 1 and "local" (one
//    all-reduce after the backward, ParallelStepConfig::overlap_grad_reduce = false) for the
//    others; no sequence parallelism and no flash attention (neither existed in 2021:
//    Megatron's fused softmax over the stored s^2 scores); the pipeline transfers as that
//    code ran them: blocking, and split over the tp ranks (ParallelStepConfig::p2p_blocking,
//    p2p_scatter_gather);
//  - hardware: the dgx-a100-N preset up to 1,120 GPUs (its SuperPOD limit), the selene-N preset
//    above (topologies/presets/selene.json: the paper's sec. 5 system description), device
//    a100-80gb, analytical collectives (NCCL's algorithm choice).
// Throughput is counted as the paper counts it (sec. 5.1, eq. 3, hardware FLOPs with the
// recomputed forward): F = 96 B s l h^2 (1 + s / 6h + V / 16 l h) per step, TFLOP/s per GPU =
// F / (step time x GPUs); error = (predicted - measured) / measured of that figure.
// The unfused attention's kernels reach the bandwidth fitted to Megatron's attention measured on
// an A100 (compute::kUnfusedMemEff{Fwd,Bwd}, attention.hpp: Dao et al. 2022 App. E.5, another
// source than this table).
// Compute beside a NCCL collective runs on the SMs its channels leave (the data-parallel
// all-reduce overlapped with the backward of the pp = 1 rows; models/step/executor.hpp).
// Asserted at what is reached (measured 2026-12-02: median |error| 8.7 %, signed errors +1.0 to
// +14.5 %; every row still predicted too fast; docs/validation.md, issue 13 section): median
// |error| <= 9.5 %, largest <= 15 %, every signed error in [0, +15 %], and every row predicted
// to fit in 80 GB. The second test predicts NVIDIA's NeMo H100 rows and pools them with these.
// Label accuracy; prints the table that docs/validation.md carries.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
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

// examples/sc21/run_table_1.sh: micro-batch (MBS) and layers per virtual pipeline stage (0: not
// interleaved), keyed by the record's model name.
struct Launch {
  std::uint64_t micro_batch = 1, layers_per_virtual_stage = 0;
};
const std::map<std::string, Launch> kLaunch = {
    {"gpt-1.7b", {16, 0}},   {"gpt-3.6b", {16, 0}},  {"gpt-7.5b", {16, 0}}, {"gpt-18.4b", {8, 0}},
    {"gpt-39.1b", {4, 0}},   {"gpt-76.1b", {2, 5}},  {"gpt-145.6b", {2, 5}}, {"gpt-310.1b", {1, 3}},
    {"gpt-529.6b", {1, 1}},  {"gpt-1008.0b", {1, 0}}};

struct Row {
  std::string id, layout;
  std::uint64_t gpus = 0;
  double measured = 0, predicted = 0, step_s = 0, error = 0;
  bool fits = false;
};

Row predict(const json& r) {
  const auto& md = r.at("model");
  const std::string name = md.at("name").get<std::string>();
  const auto model = models::load_model_file(kDir + "models/megatron-gpt/" + name + ".json");
  REQUIRE(model.layers == md.at("layers").get<std::uint64_t>());
  REQUIRE(model.hidden == md.at("hidden").get<std::uint64_t>());
  REQUIRE(model.heads == md.at("heads").get<std::uint64_t>());
  // The table's parameter count, rounded to 0.1 billion (the paper's eq. 2 gives the same).
  CHECK_MESSAGE(std::abs(model.parameter_count() / 1e9 - md.at("params_billion").get<double>()) <= 0.05, name);
  const auto& par = r.at("parallelism");
  const auto gpus = r.at("gpus").get<std::uint64_t>();
  const auto tp = par.at("tp").get<std::uint64_t>(), pp = par.at("pp").get<std::uint64_t>();
  const Launch launch = kLaunch.at(name);
  const std::string preset = fmt::format("{}-{}", gpus <= 1120 ? "dgx-a100" : "selene", gpus);
  const auto topo = topo::make_topology(preset, "test");
  const auto& dev = compute::device_for_model(topo.device_model(), "test");
  step::TopologyComm comm(topo, step::Fidelity::analytical);

  step::ParallelStepConfig c;
  c.model = &model;
  c.mesh = parallel::MeshSizes{gpus / (tp * pp), tp, pp, 1, 1};
  c.micro_batch = launch.micro_batch;
  c.global_batch = r.at("global_batch_sequences").get<std::uint64_t>();
  c.seq = 2048;
  const std::uint64_t v = launch.layers_per_virtual_stage ? model.layers / pp / launch.layers_per_virtual_stage : 1;
  if (v > 1) c.schedule = parallel::PipelineSchedule{parallel::ScheduleKind::interleaved, v};
  c.recompute = parallel::Recompute::full;
  c.flash_attention = false;
  c.optimizer = &opt::find_optimizer("adam", "test");
  c.overlap_grad_reduce = pp == 1;
  // Megatron-LM 2021's pipeline transfers (megatron/p2p_communication.py _communicate):
  // batch_isend_irecv, req.wait() on every op, then torch.cuda.synchronize(); and the
  // scatter/gather optimization, on by default (--no-scatter-gather-tensors-in-pipeline turns it
  // off; Narayanan et al. 2021 sec. 4.1), the script not turning it off.
  c.p2p_blocking = true;
  c.p2p_scatter_gather = true;
  const auto res = step::simulate_parallel_step(c, dev, comm);

  const double B = static_cast<double>(c.global_batch), s = 2048, l = static_cast<double>(model.layers),
               h = static_cast<double>(model.hidden), V = static_cast<double>(model.vocab);
  const double flops = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  Row row;
  row.id = r.at("id").get<std::string>();
  row.gpus = gpus;
  row.layout = fmt::format("tp {}, pp {}{}, dp {}, mb {}, GBS {}", tp, pp, v > 1 ? fmt::format(", v {}", v) : "",
                           c.mesh.dp, c.micro_batch, c.global_batch);
  row.step_s = res.step.step_time_s;
  row.measured = r.at("measured").at("tflops_per_gpu").get<double>();
  row.predicted = flops / (row.step_s * static_cast<double>(gpus)) / 1e12;
  row.error = (row.predicted - row.measured) / row.measured;
  row.fits = !res.memory.does_not_fit.has_value();
  return row;
}

std::vector<Row> megatron_rows() {
  std::ifstream f(kDir + "published/training/narayanan2021-megatron-table1.json");
  REQUIRE(f.good());
  const json records = json::parse(f);
  REQUIRE(records.size() == 10);
  std::vector<Row> rows;
  for (const auto& r : records) rows.push_back(predict(r));
  return rows;
}

// NVIDIA dgxc-benchmarking's NeMo BF16 rows (tests/data/published/training/dgxc-megatron-tp-pp.json)
// that a preset covers (dgx-h100-N up to 1,024 GPUs): the record's layout (tp, pp, cp), micro-batch
// 1, its global batch and sequence (GPT-3 2,048, Llama 3.1 8,192), the virtual stages the recipe
// ran (`as_run.vp`: the GPT-3 yaml at the commit of the table has 6, its header says 12), and what
// NeMo's recipes set: sequence parallelism, the distributed optimizer (zero1), bf16, no
// recomputation, and tp overlap: `Tp::off` none, `Tp::te` TransformerEngine's default userbuffers
// config, `Tp::as_run` the recipe's own (`as_run.userbuffers_config`, stored beside the record).
// Error = (predicted - measured) / measured of the step time.
enum class Tp { off, te, as_run };

Row predict_nemo(const json& r, Tp tp_mode) {
  const auto& par = r.at("parallelism");
  const auto& as_run = r.at("as_run");
  const std::uint64_t gpus = r.at("gpus").get<std::uint64_t>();
  const std::string name = r.at("model").at("name").get<std::string>();
  const auto model = models::resolve_model(
      name == "gpt3-175b" ? std::string("gpt3-175b") : kDir + "models/llama-3-405b/config.json", "test");
  const auto topo = topo::make_topology(fmt::format("dgx-h100-{}", gpus), "test");
  const auto& dev = compute::device_for_model(topo.device_model(), "test");
  step::TopologyComm comm(topo, step::Fidelity::analytical);
  const std::uint64_t tp = par.at("tp").get<std::uint64_t>(), pp = par.at("pp").get<std::uint64_t>(),
                      cp = par.at("cp").get<std::uint64_t>(), vp = as_run.at("vp").get<std::uint64_t>();
  step::ParallelStepConfig c;
  c.model = &model;
  c.mesh = parallel::MeshSizes{gpus / (tp * pp * cp), tp, pp, cp, 1};
  c.micro_batch = r.at("micro_batch").get<std::uint64_t>();
  c.global_batch = r.at("global_batch_sequences").get<std::uint64_t>();
  c.seq = r.at("model").at("seq_len").get<std::uint64_t>();
  c.schedule = parallel::PipelineSchedule{parallel::ScheduleKind::interleaved, vp};
  c.sequence_parallel = true;
  c.tp_comm_overlap = tp_mode != Tp::off;
  if (tp_mode == Tp::as_run) {
    c.tp_overlap = step::load_tp_overlap_file(
        kDir + "published/training/" + as_run.at("userbuffers_config").get<std::string>(), "test");
  }
  c.strategy = parallel::dp_strategy_from_string("zero1", 0, "test");
  c.optimizer = &opt::find_optimizer("adam", "test");
  const auto res = step::simulate_parallel_step(c, dev, comm);
  Row row;
  row.id = r.at("id").get<std::string>();
  row.gpus = gpus;
  row.layout = fmt::format("tp {}, pp {}, cp {}, vp {}, dp {}", tp, pp, cp, vp, c.mesh.dp);
  row.step_s = res.step.step_time_s;
  row.measured = r.at("measured").at("step_time_s").get<double>();
  row.predicted = row.step_s;
  row.error = (row.step_s - row.measured) / row.measured;
  row.fits = !res.memory.does_not_fit.has_value();
  return row;
}

double median_abs(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

TEST_CASE("Megatron-LM Table 1 (SC'21): TFLOP/s per GPU predicted from presets and the launch script") {
  const std::vector<Row> rows = megatron_rows();

  std::vector<double> abs_err;
  double largest = 0;
  fmt::print("| record | GPUs | layout | measured TFLOP/s | predicted | step | error |\n|---|---|---|---|---|---|---|\n");
  for (const auto& r : rows) {
    fmt::print("| {} | {} | {} | {:.0f} | {:.1f} | {:.3f} s | {:+.1f} % |\n", r.id, r.gpus, r.layout, r.measured, r.predicted, r.step_s, 100 * r.error);
    CHECK_MESSAGE(r.fits, r.id);
    abs_err.push_back(std::abs(r.error));
    largest = std::max(largest, std::abs(r.error));
  }
  std::sort(abs_err.begin(), abs_err.end());
  const double median = (abs_err[4] + abs_err[5]) / 2;
  fmt::print("median |error| {:.1f} %, largest {:.1f} %\n", 100 * median, 100 * largest);
  // What is reached (docs/validation.md).
  CHECK(median <= 0.095);
  CHECK(largest <= 0.15);
  // The signed errors' range (every row still too fast: the sign of the compute model's bias).
  for (const auto& r : rows) {
    CHECK_MESSAGE(r.error >= 0.0, r.id);
    CHECK_MESSAGE(r.error <= 0.15, r.id);
  }
}

TEST_CASE("NeMo on H100 (dgxc-benchmarking BF16): step time with and without tp overlap; pooled with Table 1") {
  std::ifstream f(kDir + "published/training/dgxc-megatron-tp-pp.json");
  REQUIRE(f.good());
  const json records = json::parse(f);
  std::vector<double> nemo_off, nemo_te, nemo_run;
  fmt::print("| record | GPUs | layout as run | measured step | no tp overlap | error | tp overlap, TE defaults | error | "
             "tp overlap, the recipe's config | error |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : records) {
    if (r.at("precision").get<std::string>() != "bf16" || r.at("gpus").get<std::uint64_t>() > 1024) continue;
    const Row off = predict_nemo(r, Tp::off), te = predict_nemo(r, Tp::te), run = predict_nemo(r, Tp::as_run);
    CHECK_MESSAGE(run.fits, run.id);
    fmt::print("| {} | {} | {} | {:.3f} s | {:.3f} s | {:+.1f} % | {:.3f} s | {:+.1f} % | {:.3f} s | {:+.1f} % |\n", off.id,
               off.gpus, off.layout, off.measured, off.step_s, 100 * off.error, te.step_s, 100 * te.error, run.step_s,
               100 * run.error);
    nemo_off.push_back(std::abs(off.error));
    nemo_te.push_back(std::abs(te.error));
    nemo_run.push_back(std::abs(run.error));
  }
  REQUIRE(nemo_run.size() == 5);
  std::vector<double> pooled_off, pooled_run;
  for (const auto& r : megatron_rows()) {
    pooled_off.push_back(std::abs(r.error));
    pooled_run.push_back(std::abs(r.error));
  }
  pooled_off.insert(pooled_off.end(), nemo_off.begin(), nemo_off.end());
  pooled_run.insert(pooled_run.end(), nemo_run.begin(), nemo_run.end());
  fmt::print("NeMo: median |error| {:.1f} % without tp overlap, {:.1f} % with TE's default userbuffers, {:.1f} % with the "
             "recipes' own; pooled with Table 1 (15 records): {:.1f} % without, {:.1f} % as run\n",
             100 * median_abs(nemo_off), 100 * median_abs(nemo_te), 100 * median_abs(nemo_run), 100 * median_abs(pooled_off),
             100 * median_abs(pooled_run));
  // What is reached (docs/validation.md): NeMo's recipes run with their own userbuffers config,
  // the pooled median as run is the figure that counts.
  CHECK(median_abs(nemo_run) <= 0.115);
  CHECK(median_abs(pooled_run) <= 0.105);
  CHECK(median_abs(pooled_off) <= 0.08);
}
