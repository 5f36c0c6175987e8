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
#include "sim/registry.hpp"
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

/// The data movement of a schedule, unrolled, for checking correctness on small groups
/// (tests, --explain): the buffer is split into `units` equal units (S / units bytes each);
/// every transfer names the units it carries. A reducing transfer adds the sender's partial
/// sums into the receiver's (their contribution sets must be disjoint); a copying one
/// overwrites the receiver's copy. `owner[u]` is the group rank whose reduce-scatter output
/// (or all-gather input) holds unit u. Transfers of one step read the state before the step.
/// Exceptions to the unit size: all-to-all unit a*n + b is what rank a sends to rank b (S/n
/// bytes); sendrecv unit r is rank r's whole buffer (S bytes), which rank r + 1 must end with.
/// Endpoint flags have the meaning of Transfer's (a switch NodeId instead of a group rank).
struct PlanTransfer {
  std::uint32_t src = 0;
  std::uint32_t dst = 0;
  std::vector<std::uint32_t> units;
  bool reduce = false;
  bool src_is_node = false;
  bool dst_is_node = false;
};
struct DataPlan {
  std::uint32_t units = 0;
  std::vector<std::uint32_t> owner;
  std::vector<std::vector<PlanTransfer>> steps;  ///< one entry per unrolled step (repeats expanded)
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
  /// The unrolled data movement of build() (same steps, same transfers, same bytes, in the
  /// same order per step), for correctness checks. O(steps x n x units per transfer): meant
  /// for groups of at most a few hundred ranks.
  [[nodiscard]] virtual DataPlan data_plan(const topo::Topology& t, const CollectiveOp& op) const = 0;
};

/// All registered algorithms, in registration order.
const std::vector<std::unique_ptr<Algorithm>>& algorithms();
/// The algorithms as a registry (sim/registry.hpp) with their parameters: entry i describes
/// algorithms()[i].
const Registry& algorithm_registry();
/// Throws ConfigError naming `where`, listing the valid names for this op.
const Algorithm& find_algorithm(const std::string& name, OpKind op, const std::string& where);

/// Bandwidth lower bound (DESIGN 2): all-reduce 2(n-1)/n S/B_inj, reduce-scatter, all-gather
/// (n-1)/n S/B_inj, all-to-all (n-1)/n S/B_inj; B_inj = the smallest injection bandwidth
/// over the group's devices; 0 for n = 1 (Patarasuk and Yuan 2009, "Bandwidth optimal
/// all-reduce algorithms for clusters of workstations", JPDC 69(2), sec. 3).
/// Broadcast and reduce: S/B_inj (a non-root rank must receive, or send, all S bytes).
/// All-reduce with a switch that has in_network_reduction: S/B_inj (every rank must still
/// receive the S reduced bytes; the switch removes the factor 2(n-1)/n).
/// Throws ConfigError for an invalid group (see validate_op).
double lower_bound_s(const topo::Topology& t, const CollectiveOp& op);

/// Checks the op against the topology; throws ConfigError("collective group", ...) for an
/// empty group, a rank that is not a device of the topology, a repeated rank, or a root
/// outside the group.
void validate_op(const topo::Topology& t, const CollectiveOp& op);

/// Placement of `ranks` ranks, `ranks_per_node` on each node (Topology::device_groups, in
/// order; a topology without groups is one node): the first ranks_per_node devices of node 0,
/// then of node 1, ... (block placement, as mpirun -N / srun --ntasks-per-node). Throws
/// ConfigError naming `where` when ranks_per_node does not divide ranks, a node has fewer
/// devices, or there are too few nodes.
std::vector<int> placed_group(const topo::Topology& t, std::size_t ranks, std::size_t ranks_per_node,
                              const std::string& where);

struct AutoChoice {
  const Algorithm* algorithm = nullptr;
  AnalyticalCost cost;
  std::string why;  ///< "ring: 1.2 ms, torus-2d: 0.7 ms (chosen), hierarchical: n/a (...)"
};
/// Picks the applicable algorithm with the smallest analytical time (ties: registration
/// order). `why` lists every algorithm that implements the op, in registration order, as
/// "name: <time>" or "name: n/a (<reason>)", the chosen one marked " (chosen)". Throws
/// ConfigError when no algorithm applies (the message carries `why`).
/// `flow_only` does not change the choice: the flow evaluator runs every algorithm (switch
/// endpoints included), so auto picks the same under both fidelities. Kept for callers.
AutoChoice choose_auto(const topo::Topology& t, const CollectiveOp& op, const CostParams& p, bool flow_only = false);

}  // namespace shardsim::coll
