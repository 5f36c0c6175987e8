#pragma once
// Capacity planning over device meshes (issue 13 item 6): for a transformer (a zoo name or a
// config.json, traces/models) and hardware presets, search every factorization of each
// preset's device count into (dp, tp, pp, cp, ep) with micro-batch, pipeline schedule,
// recomputation and weight-update strategy, and simulate the step of each candidate that can
// run (models/step/parallel_graphs.hpp).
//
// Search, per preset of N devices (a family means each of its sizes, up to max_devices):
//   mesh       parallel::enumerate_factorizations(N): tp divides heads and KV heads, pp divides
//              the layers (with uneven_stages, the default: any pp up to half the layers, the
//              stages balanced as Llama 3's, parallel::stage_layers), ep the experts (dense:
//              1), cp the sequence; cp <= max_cp
//   micro-batch each of micro_batches dividing the per-replica batch G / (dp ep)
//   schedule   1f1b when pp = 1; with pp > 1: 1f1b, gpipe and interleaved:v for each v of
//              virtual_stages with pp v dividing the layers and m a multiple of pp
//   strategy   each of strategies (default replicated, zero1, zero3)
//   sequence parallelism on exactly when tp > 1 (Korthikanti et al. 2022: same bytes, less
//              activation memory); tensor-parallel communication overlap with the GEMMs on
//              (step::ParallelStepConfig::tp_comm_overlap: NeMo's performance recipes for
//              GPT-3 175B and Llama 3.1 405B turn on TransformerEngine userbuffers; without
//              sequence parallelism only Megatron-LM's default asynchronous all-reduce of the
//              input gradient in backward)
//   recompute  the least of none, selective, full with which the worst stage fits (more
//              recomputation only adds compute; memory is reported, not an objective)
// Pruning before any simulation, each a rejection with its cause:
//   placement  parallel::placement_issues ("tp=16 leaves the NVLink domain of 8");
//   shape      tp not dividing the hidden size or the FFN width (parallel::layer_compute);
//   batch      G not a multiple of dp ep, no listed micro-batch dividing G / (dp ep);
//   memory     parallel::parallel_memory's line for the last recompute mode tried ("stage 0
//              activations 93.1 GiB > HBM 32.0 GiB");
//   bound      a lower bound of the step above the fastest step already simulated on the same
//              preset: it cannot be on the Pareto set (same devices, cost proportional to
//              time), so this is exact. The bound (mesh_plan.cpp): max over stages j of
//              m T_j + sum_{i<j} T_i / v (T_i: stage i's compute and the least exposure of its
//              tp / ep collectives per micro-batch, v chunks), and for zero3 the sum of the
//              busiest stage's data-parallel stream. Candidates are simulated best first
//              (least bound; the zero3 part is added when one first comes up).
// Ties (tie_margin, default 1 %): candidates of one preset whose step is within tie_margin of
// that preset's fastest are a tie, broken by Narayanan et al. 2021 (SC'21, arXiv 2104.04473)
// sec. 3.3, takeaway #1: "tensor model parallelism should generally be used up to degree g when
// using g-GPU servers, and then pipeline model parallelism can be used to scale up to larger
// models across servers": the largest tp wins (placement already keeps tp inside the NVLink
// domain), then the least step time, then enumeration order. The winner stands on the Pareto
// set for the preset in place of the fastest, with the fastest's objectives (tie_of names it);
// its own step time is what is reported. Why 1 %: the model does not resolve less. The same
// step at flow fidelity moves by 0.24 % from its analytical time, more than the gap between
// two such layouts (Llama 3.1 405B on dgx-h100-1024, s 8192, global batch 2048: dp=4,tp=4,
// pp=16,cp=4 65.317 s and dp=8,tp=8,pp=8,cp=2 65.496 s analytical, 0.27 % apart; 65.309 and
// 65.342 s at flow, 0.05 %), and the terms the step leaves out (parallel_graphs.hpp: the
// SMs and HBM the overlapped tp collectives take, the sequence-parallel all-gather for the
// weight gradient, the cp ring's last hop) differ between such layouts by about as much.
// Pruning skips only bounds above (1 + tie_margin) x the fastest, so every tie is simulated.
// tie_margin 0: the fastest alone (ties of equal time: enumeration order).
// Simulation: analytical collectives on the preset's topology (their times remembered across
// the candidates of a preset: the same (op, size, group) returns what it returned), folded to one rank per stage
// assuming every group instance times alike (step::Fold::assume_symmetric; presets are
// symmetric). Pareto set over (time to train, devices, cost) as plan.hpp.
// Rejections are grouped by cause: placement issue text; "does not fit: <term>" (the largest
// memory term); batch; bound.
// Deterministic: the enumeration order is fixed and ties keep it.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/plan/plan.hpp"

namespace shardsim::plan {

struct MeshPlanRequest {
  /// Model (zoo name or config.json), seq, tokens or steps, global batch, deadline, budget,
  /// price, hardware, strategies (empty = replicated, zero1, zero3), max devices, optimizer,
  /// precision as the data-parallel search; fidelity must be analytical; bucket_bytes is not
  /// read (Megatron's bucket rule, parallel_graphs.hpp).
  PlanRequest plan;
  std::vector<std::uint64_t> micro_batches = {1, 2, 4, 8};
  std::vector<std::uint64_t> virtual_stages = {2, 4};
  std::uint64_t max_devices = 0;
  std::uint64_t max_cp = 0;              ///< 0: 8 for sequences of 8192 and more, else 1
  bool uneven_stages = true;             ///< pp need not divide the layers (parallel::stage_layers)
  bool prune_by_bound = true;            ///< false: simulate every candidate that fits (tests)
  double tie_margin = 0.01;              ///< ties within this fraction of the fastest (header)
};

struct MeshCandidate {
  std::string hardware, device, mesh, schedule, recompute, strategy;
  std::uint64_t devices = 0, dp = 1, tp = 1, pp = 1, cp = 1, ep = 1, micro_batch = 1, micro_batches = 1;
  bool sequence_parallel = false;
  double step_time_s = 0, time_to_train_s = 0, mfu = 0;
  double bound_s = 0;  ///< the lower bound it was ordered and pruned by
  double tp_comm_s = 0, pp_bubble_s = 0, dp_exposed_s = 0, ep_alltoall_s = 0;
  double memory_peak_bytes = 0, hbm_bytes = 0;
  std::optional<double> cost_usd;
  bool pareto = false;
  /// On the Pareto set by the tie rule (header): the fastest it tied with and the rule; empty
  /// when it is the fastest itself or not a tie winner.
  std::string tie_of;
};

struct RejectionGroup {
  std::string cause;
  std::uint64_t count = 0;
  std::string example;  ///< the first candidate's configuration and line
};

struct MeshPlanResult {
  std::uint64_t steps = 0;
  std::uint64_t considered = 0, simulated = 0;
  std::vector<MeshCandidate> feasible;   ///< simulated and within deadline and budget
  std::vector<std::size_t> pareto;       ///< into feasible, by time to train then devices
  std::vector<RejectionGroup> rejected;  ///< by cause, in order of first occurrence
  nlohmann::json config;
};

/// Validates (ConfigError naming the flag) and searches.
MeshPlanResult make_mesh_plan(const MeshPlanRequest& r);
nlohmann::json to_json(const MeshPlanResult& p);

}  // namespace shardsim::plan
