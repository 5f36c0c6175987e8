// In-network all-reduce (NVLink SHARP / NVLS in NVSwitch 3, NVIDIA Hopper architecture
// whitepaper 2022, "NVLink SHARP"; Graham et al. 2016, "Scalable Hierarchical Aggregation
// Protocol (SHArP)", COMHPC): every rank sends its whole buffer to a switch that reduces at
// line rate, and the switch multicasts the result back. Two steps, pipelined in C chunks
// (CostParams::chunks; 0 = ceil(S / 1 MiB), at most 64):
//   t = (alpha_up + S/(C B_up)) + (alpha_down + S/(C B_down)) + (C-1) max(up, down)
// Each rank's uplink and downlink carry S once: about S/B, against 2(n-1)/n S/B for the best
// algorithm without in-network reduction. The upward pieces and the downward pieces use
// opposite link directions, so the pipeline stages do not share links.
//
// Applies when a switch flagged in_network_reduction is directly linked (both directions)
// to every rank of the group; the lowest-numbered such switch is used. Transfers to and from
// it carry Transfer::dst_is_node / src_is_node.
#include <fmt/format.h>

#include "models/collectives/detail.hpp"

namespace shardsim::coll::detail {

namespace {
bool linked(const topo::Topology& t, topo::NodeId a, topo::NodeId b) {
  for (topo::LinkId l : t.out_links(a)) {
    if (t.link(l).dst == b) return true;
  }
  return false;
}
}  // namespace

bool linked_both(const topo::Topology& t, topo::NodeId a, topo::NodeId b) { return linked(t, a, b) && linked(t, b, a); }

namespace {

using U = std::uint32_t;

class InNetwork final : public Algorithm {
 public:
  [[nodiscard]] std::string name() const override { return "in-network"; }
  [[nodiscard]] std::string description() const override {
    return "NVLS/SHARP-style: ranks send to a reducing switch, which multicasts the sum back";
  }
  [[nodiscard]] std::vector<OpKind> ops() const override { return {OpKind::allreduce}; }
  [[nodiscard]] std::vector<ParamInfo> params() const override {
    return {pipeline_chunks_param()};
  }
  [[nodiscard]] std::optional<std::string> unsupported(const topo::Topology& t,
                                                       const CollectiveOp& op) const override {
    validate_op(t, op);
    bool any = false;
    for (topo::NodeId v = 0; v < t.num_nodes(); ++v) {
      const auto& nd = t.node(v);
      if (nd.kind != topo::NodeKind::switch_node || !nd.in_network_reduction) continue;
      any = true;
      if (reaches_all(t, op, v)) return std::nullopt;
    }
    if (!any) return fmt::format("topology '{}' has no switch with in_network_reduction", t.name());
    return fmt::format("no switch with in_network_reduction is directly linked to all {} ranks", op.group.size());
  }

  [[nodiscard]] Schedule build(const topo::Topology& t, const CollectiveOp& op, const CostParams& p) const override {
    Schedule s;
    s.algorithm = name();
    s.ranks = op.group.size();
    s.chunks = pipeline_chunks(op, p);
    s.steps = steps(t, op);
    return s;
  }

  [[nodiscard]] AnalyticalCost analytical(const topo::Topology& t, const CollectiveOp& op,
                                          const CostParams& p) const override {
    Cost c(p);
    const U C = pipeline_chunks(op, p);
    std::vector<Cost::Stage> stages;
    for (const auto& st : steps(t, op)) stages.push_back({step_hop(t, op, st.transfers, p), st.transfers.front().bytes, 0});
    c.pipeline(stages, C);
    if (stages.empty()) return c.done("n = 1: nothing to do");
    return c.done(fmt::format("(alpha_up + S/(C B_up)) + (alpha_down + S/(C B_down)) + (C-1) max(...), C = {}, "
                              "alpha_up = {}, B_up = {}, alpha_down = {}, B_down = {}, S = {} B",
                              C, fs(stages[0].hop.alpha_s), fbw(stages[0].hop.bw_Bps), fs(stages[1].hop.alpha_s),
                              fbw(stages[1].hop.bw_Bps), op.size_bytes));
  }

  [[nodiscard]] DataPlan data_plan(const topo::Topology& t, const CollectiveOp& op) const override {
    DataPlan d;
    d.units = 1;
    d.owner = {0};
    for (const auto& st : steps(t, op)) {
      std::vector<PlanTransfer> v;
      for (const auto& x : st.transfers) {
        v.push_back(PlanTransfer{x.src, x.dst, {0}, x.dst_is_node, x.src_is_node, x.dst_is_node});
      }
      d.steps.push_back(std::move(v));
    }
    return d;
  }

 private:
  static bool reaches_all(const topo::Topology& t, const CollectiveOp& op, topo::NodeId sw) {
    for (int r : op.group) {
      const topo::NodeId d = t.device(static_cast<std::size_t>(r));
      if (!linked_both(t, d, sw)) return false;
    }
    return true;
  }

  topo::NodeId reducer(const topo::Topology& t, const CollectiveOp& op) const {
    if (auto why = unsupported(t, op)) {
      throw ConfigError("algorithm in-network", *why, "a switch with in_network_reduction linked to every rank");
    }
    for (topo::NodeId v = 0; v < t.num_nodes(); ++v) {
      const auto& nd = t.node(v);
      if (nd.kind == topo::NodeKind::switch_node && nd.in_network_reduction && reaches_all(t, op, v)) return v;
    }
    return 0;  // unreachable: unsupported() found one
  }

  std::vector<Step> steps(const topo::Topology& t, const CollectiveOp& op) const {
    const topo::NodeId sw = reducer(t, op);
    std::vector<Step> out;
    const auto n = static_cast<U>(op.group.size());
    if (n < 2) return out;
    const double S = static_cast<double>(op.size_bytes);
    Step up, down;
    up.label = "reduce in switch";
    down.label = "multicast";
    for (U r = 0; r < n; ++r) {
      Transfer a = xfer(r, sw, S);
      a.dst_is_node = true;
      up.transfers.push_back(a);
      Transfer b = xfer(sw, r, S);
      b.src_is_node = true;
      down.transfers.push_back(b);
    }
    out.push_back(std::move(up));
    out.push_back(std::move(down));
    return out;
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_in_network() { return std::make_unique<InNetwork>(); }

}  // namespace shardsim::coll::detail
