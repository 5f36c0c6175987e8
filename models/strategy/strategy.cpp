#include "models/strategy/strategy.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace shardsim::step {

namespace {

std::vector<StrategyInfo> make() {
  const StrategyParam bucket{"bucket", "size", "bytes", "25MiB",
                             "gradient bucket / fused buffer size (PyTorch DDP bucket_cap_mb=25)"};
  const StrategyParam accum{"grad-accum", "int", "", "1", "micro-batches per step (communication once per step)"};
  const StrategyParam ckpt{"checkpointing", "bool", "", "false", "activation checkpointing per unit (recompute forward)"};
  std::vector<StrategyInfo> v;
  v.push_back({Strategy::replicated, "replicated",
               "DDP: bucketed all-reduce overlapped with backward, full update on every replica",
               "Li et al. 2020, PyTorch Distributed (VLDB)", {bucket, accum, ckpt}});
  v.push_back({Strategy::sharded, "sharded",
               "cross-replica weight-update sharding: reduce-scatter, 1/k update, all-gather deferred into the next "
               "forward; fused buffers padded to a multiple of k",
               "Xu et al. 2020, arXiv 2004.13336",
               {bucket, accum, ckpt,
                {"shard-group", "int", "", "N", "k: shard over subgroups of k consecutive ranks (k divides N)"},
                {"no-defer", "bool", "", "false", "all-gather at the end of the step instead of in the next forward"}}});
  v.push_back({Strategy::zero1, "zero1", "ZeRO stage 1: optimizer state sharded; reduce-scatter, 1/N update, all-gather",
               "Rajbhandari et al. 2020, sec. 5.1", {bucket, accum, ckpt}});
  v.push_back({Strategy::zero2, "zero2", "ZeRO stage 2: + gradients sharded (reduce-scatter per bucket in backward)",
               "Rajbhandari et al. 2020, sec. 5.2", {bucket, accum, ckpt}});
  v.push_back({Strategy::zero3, "zero3",
               "ZeRO stage 3 / FSDP: + parameters sharded; per unit all-gather before forward and backward, "
               "reduce-scatter after backward, next unit prefetched",
               "Rajbhandari et al. 2020, sec. 5.3; Zhao et al. 2023 (PyTorch FSDP)",
               {accum, ckpt, {"no-prefetch", "bool", "", "false", "issue each all-gather only when its unit starts"}}});
  return v;
}

}  // namespace

const std::vector<StrategyInfo>& strategies() {
  static const std::vector<StrategyInfo> v = make();
  return v;
}

const StrategyInfo& trace_strategy() {
  static const StrategyInfo info{
      Strategy::trace, "trace",
      "replay of the trace's own collectives and update ops as recorded, with its dependencies, on the topology "
      "(default for a --trace with collectives)",
      "execution-trace replay as in Chakra, Sridharan et al. 2023, and ASTRA-sim 2.0, Won et al. 2023",
      {}};
  return info;
}

const char* to_string(Strategy s) {
  switch (s) {
    case Strategy::replicated: return "replicated";
    case Strategy::sharded: return "sharded";
    case Strategy::zero1: return "zero1";
    case Strategy::zero2: return "zero2";
    case Strategy::zero3: return "zero3";
    case Strategy::trace: return "trace";
  }
  return "?";
}

Strategy strategy_from_string(const std::string& s, const std::string& where, StrategySet set) {
  const bool trace = set == StrategySet::with_trace;
  for (const auto& i : strategies()) {
    if (i.name == s) return i.strategy;
  }
  if (trace && s == trace_strategy().name) return Strategy::trace;
  std::string valid;
  for (const auto& i : strategies()) valid += (valid.empty() ? "" : ", ") + i.name;
  if (trace) valid += ", " + trace_strategy().name;
  throw ConfigError(where, fmt::format("unknown strategy '{}'", s), "one of " + valid);
}

ShardFactors shard_factors(Strategy s, std::uint64_t n, std::uint64_t k) {
  switch (s) {
    case Strategy::replicated: return {1, 1, 1};
    case Strategy::sharded: return {1, 1, k};
    case Strategy::zero1: return {1, 1, n};
    case Strategy::zero2: return {1, n, n};
    case Strategy::zero3: return {n, n, n};
    case Strategy::trace: return {1, 1, 1};
  }
  return {1, 1, 1};
}

}  // namespace shardsim::step
