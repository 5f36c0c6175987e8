#pragma once
// Collective algorithms: each registered by name with a description and parameters
// (STYLE 4); each builds a Schedule and has a closed-form alpha-beta-gamma cost.
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/collectives/collective.hpp"
#include "topologies/topology.hpp"

namespace shardsim::coll {

/// Knobs shared by both evaluators, so analytical and flow agree on what they model.
struct CostParams {
  /// Local reduction throughput per rank (bytes/s); infinity = free (fused with the copy,
  /// as NCCL's reduction kernels are, to first order).
  double reduce_Bps = std::numeric_limits<double>::infinity();
  /// Fixed software overhead per step per rank (alpha beyond wire latency), seconds.
  double step_overhead_s = 0;
  /// Pipelining chunks (1 = none). 0 = algorithm default.
  std::uint32_t chunks = 0;
};

struct AnalyticalCost {
  double time_s = 0;
  double latency_s = 0;    ///< alpha terms
  double bandwidth_s = 0;  ///< beta terms
  double reduce_s = 0;     ///< gamma terms
  std::string formula;     ///< the closed form used, with its values, for --explain
};

struct ParamInfo {
  std::string key, type, unit, default_value, doc;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual std::string description() const = 0;
  [[nodiscard]] virtual std::vector<OpKind> ops() const = 0;
  [[nodiscard]] virtual std::vector<ParamInfo> params() const { return {}; }
  /// nullopt if the algorithm applies to this op on this topology, else the reason it does
  /// not (e.g. "torus-2d needs a group that spans whole torus rows and columns").
  [[nodiscard]] virtual std::optional<std::string> unsupported(const topo::Topology& t,
                                                               const CollectiveOp& op) const = 0;
  [[nodiscard]] virtual Schedule build(const topo::Topology& t, const CollectiveOp& op,
                                       const CostParams& p) const = 0;
  /// Closed form over the bottleneck link class, no contention.
  [[nodiscard]] virtual AnalyticalCost analytical(const topo::Topology& t, const CollectiveOp& op,
                                                  const CostParams& p) const = 0;
};

/// All registered algorithms, in registration order.
const std::vector<std::unique_ptr<Algorithm>>& algorithms();
/// Throws ConfigError naming `where`, listing the valid names for this op.
const Algorithm& find_algorithm(const std::string& name, OpKind op, const std::string& where);

/// Bandwidth lower bound (DESIGN 2): all-reduce 2(n-1)/n S/B_inj, reduce-scatter, all-gather
/// (n-1)/n S/B_inj, all-to-all (n-1)/n S/B_inj, broadcast S/B_inj; B_inj = the smallest
/// injection bandwidth over the group's devices.
double lower_bound_s(const topo::Topology& t, const CollectiveOp& op);

struct AutoChoice {
  const Algorithm* algorithm = nullptr;
  AnalyticalCost cost;
  std::string why;  ///< "ring: 1.2 ms, torus-2d: 0.7 ms (chosen), hierarchical: n/a (...)"
};
/// Picks the applicable algorithm with the smallest analytical time.
AutoChoice choose_auto(const topo::Topology& t, const CollectiveOp& op, const CostParams& p);

}  // namespace shardsim::coll
