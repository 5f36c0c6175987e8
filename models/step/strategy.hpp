#pragma once
// Weight-update strategies (DESIGN 5), registered by name with a description and their
// parameters (STYLE 4); `shardsim list strategies` prints this table.
#include <cstdint>
#include <string>
#include <vector>

namespace shardsim::step {

enum class Strategy : std::uint8_t { replicated, sharded, zero1, zero2, zero3 };

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

const std::vector<StrategyInfo>& strategies();
const char* to_string(Strategy s);
/// Throws ConfigError naming `where` and listing the valid names.
Strategy strategy_from_string(const std::string& s, const std::string& where);

/// How many ways each model-state component is split across the data-parallel group for a
/// strategy, given N (group size) and k (sharding subgroup of `sharded`; k divides N).
struct ShardFactors {
  std::uint64_t params = 1, grads = 1, optimizer = 1;
};
ShardFactors shard_factors(Strategy s, std::uint64_t n, std::uint64_t k);

}  // namespace shardsim::step
