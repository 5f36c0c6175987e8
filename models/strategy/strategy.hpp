#pragma once
// Weight-update strategies (DESIGN 5), registered by name with a description and their
// parameters (STYLE 4); `shardsim list strategies` prints this table. `trace` is listed with
// them but is not a weight-update strategy: it replays an imported trace's own collectives
// and update ops as recorded (step.hpp), so "all strategies" (compare, memory, plan) means
// the weight-update ones.
// Layering: this folder is below models/memory and models/step (both include it; it includes
// neither), so the memory model and the step model depend on each other one way only
// (memory <- step). The namespace stays `step`: the strategies are the step's vocabulary.
#include <cstdint>
#include <string>
#include <vector>

namespace shardsim::step {

enum class Strategy : std::uint8_t { replicated, sharded, zero1, zero2, zero3, trace };

struct StrategyParam {
  std::string key, type, unit, default_value, doc;
};

struct StrategyInfo {
  Strategy strategy = Strategy::replicated;
  std::string name;
  std::string description;
  std::string source;
  std::vector<StrategyParam> params;
};

/// The weight-update strategies, in the order `compare --strategies all` runs them.
const std::vector<StrategyInfo>& strategies();
/// The `trace` strategy's entry (replay of the trace's own collectives).
const StrategyInfo& trace_strategy();
const char* to_string(Strategy s);

/// Which names strategy_from_string accepts: the weight-update strategies only (memory,
/// plan: they need a weight-update model), or those and `trace` (step, compare).
enum class StrategySet : std::uint8_t { weight_update, with_trace };
/// Throws ConfigError naming `where` and listing the valid names of `set`.
Strategy strategy_from_string(const std::string& s, const std::string& where,
                              StrategySet set = StrategySet::weight_update);

/// How many ways each model-state component is split across the data-parallel group for a
/// strategy, given N (group size) and k (sharding subgroup of `sharded`; k divides N).
/// `trace`: nothing sharded (the native trace does not say how its job shards state).
struct ShardFactors {
  std::uint64_t params = 1, grads = 1, optimizer = 1;
};
ShardFactors shard_factors(Strategy s, std::uint64_t n, std::uint64_t k);

}  // namespace shardsim::step
