// In-network all-reduce (NVLink SHARP / NVLS in NVSwitch 3, NVIDIA Hopper architecture
// whitepaper 2022, "NVLink SHARP"; Graham et al. 2016, "Scalable Hierarchical Aggregation
// Protocol (SHArP)", COMHPC): every rank sends its buffer to a switch that reduces, and the
// switch multicasts the result back. Two steps (SHARP) or four (NVLS), pipelined in C chunks
// (CostParams::chunks; 0 = ceil(S / 1 MiB), at most 64), moving S' per rank and direction:
//   t = (alpha_up + S'/(C B_up)) + (alpha_down + S'/(C B_down)) + (C-1) max(up, down)
// (SHARP's upward and downward pieces use opposite link directions, so its two stages do not
// share links; NVLS below.)
// - SHARP on a network switch (ib / ethernet links, NCCL's CollNet): the switch reduces the
//   streams and sends the result down, S' = S.
// - NVLS on an NVSwitch (nvlink links): NCCL's kernel (NVIDIA/nccl src/device/all_reduce.h,
//   RunWorkElement<AllReduce, NVLS, Simple>; buffers in src/transport/nvls.cc
//   ncclNvlsBufferSetup) copies each rank's buffer into its own multicast-bound memory
//   (local); every rank is the head of 1/n of the data (unit u = rank u's share): it pulls
//   its share reduced over the switch (multimem ld_reduce) and stores the result to the
//   multicast address (multimem st), which writes it into every rank. Four steps:
//     reduce in switch (each rank serves its whole buffer, S), to heads (S/n),
//     to switch (the head's store, S/n), multicast (every share to every rank, S);
//   each rank's NVLink carries S' = S (1 + 1/n) each way. Closed form: the two-stage one with
//   S' (each direction's pieces of all four steps follow each other on its link), plus alpha
//   for each of the two middle steps: t = (C+1)(alpha + S'/(C B)) + 2 alpha on symmetric links.
//   (Before, NVLS ran SHARP's two steps, S each way: 1/n too few bytes.)
// Against 2(n-1)/n S/B for the best algorithm without in-network reduction.
//
// Applies when a switch flagged in_network_reduction is directly linked (both directions)
// to every rank of the group; the lowest-numbered such switch is used. Transfers to and from
// it carry Transfer::dst_is_node / src_is_node.
#include <fmt/format.h>

#include <optional>

#include "models/collectives/detail.hpp"

namespace shardsim::coll::detail {

namespace {
std::optional<topo::LinkId> find_link(const topo::Topology& t, topo::NodeId a, topo::NodeId b) {
  for (topo::LinkId l : t.out_links(a)) {
    if (t.link(l).dst == b) return l;
  }
  return std::nullopt;
}
bool linked(const topo::Topology& t, topo::NodeId a, topo::NodeId b) { return find_link(t, a, b).has_value(); }
// The link a -> b; a precondition (reaches_all) guarantees it exists.
topo::LinkId link_between(const topo::Topology& t, topo::NodeId a, topo::NodeId b) { return *find_link(t, a, b); }
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
    for (auto& st : stages(t, op)) s.steps.push_back(std::move(st.step));
    return s;
  }

  [[nodiscard]] AnalyticalCost analytical(const topo::Topology& t, const CollectiveOp& op,
                                          const CostParams& p) const override {
    const auto st = stages(t, op);
    const U C = pipeline_chunks(op, p);
    Cost c(p);
    if (st.empty()) return c.done("n = 1: nothing to do");
    // Both directions of a rank's link carry S' per run (S' = S, or S (1 + 1/n) for NVLS, whose
    // middle steps add S/n each way): two pipelined stages of S', plus alpha for each middle step.
    const double S1 = st.front().step.transfers.front().bytes;
    const double extra = st.size() == 4 ? st[1].step.transfers.front().bytes : 0.0;
    const Hop up = step_hop(t, op, st.front().step.transfers, p), down = step_hop(t, op, st.back().step.transfers, p);
    c.pipeline({{up, S1 + extra, 0}, {down, S1 + extra, 0}}, C);
    for (std::size_t k = 1; k + 1 < st.size(); ++k) c.c.latency_s += step_hop(t, op, st[k].step.transfers, p).alpha_s;
    return c.done(fmt::format("(alpha_up + S'/(C B_up)) + (alpha_down + S'/(C B_down)) + (C-1) max(...){}, C = {}, "
                              "alpha_up = {}, B_up = {}, alpha_down = {}, B_down = {}, S' = {:.0f} B{}",
                              st.size() == 4 ? " + 2 alpha" : "", C, fs(up.alpha_s), fbw(up.bw_Bps), fs(down.alpha_s),
                              fbw(down.bw_Bps), S1 + extra, st.size() == 4 ? " (NVLS: S (1 + 1/n))" : " (S)"));
  }

  [[nodiscard]] DataPlan data_plan(const topo::Topology& t, const CollectiveOp& op) const override {
    const auto st = stages(t, op);
    DataPlan d;
    d.units = st.size() == 4 ? static_cast<U>(op.group.size()) : 1;
    d.owner.assign(d.units, 0);
    for (const auto& x : st) {
      std::vector<PlanTransfer> v;
      for (std::size_t i = 0; i < x.step.transfers.size(); ++i) {
        const auto& tr = x.step.transfers[i];
        // Into the switch in the first step: it reduces; everything else copies.
        v.push_back(PlanTransfer{tr.src, tr.dst, x.units[i], x.step.label == "reduce in switch", tr.src_is_node,
                                 tr.dst_is_node});
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

  // SHARP: two stages on one unit (the whole buffer); NVLS: four on n units (see the header).
  std::vector<Stage> stages(const topo::Topology& t, const CollectiveOp& op) const {
    const topo::NodeId sw = reducer(t, op);
    std::vector<Stage> out;
    const auto n = static_cast<U>(op.group.size());
    if (n < 2) return out;
    const bool nvls = t.link(link_between(t, t.device(static_cast<std::size_t>(op.group.front())), sw)).cls ==
                      topo::LinkClass::nvlink;
    const double S = static_cast<double>(op.size_bytes);
    std::vector<U> all;
    for (U u = 0; u < (nvls ? n : 1); ++u) all.push_back(u);
    auto stage = [&](const char* label, bool to_switch, bool whole) {
      Stage x;
      x.step.label = label;
      for (U r = 0; r < n; ++r) {
        const double bytes = whole ? S : S / n;
        Transfer tr = to_switch ? xfer(r, sw, bytes) : xfer(sw, r, bytes);
        (to_switch ? tr.dst_is_node : tr.src_is_node) = true;
        x.step.transfers.push_back(tr);
        x.units.push_back(whole ? all : std::vector<U>{r});
      }
      out.push_back(std::move(x));
    };
    stage("reduce in switch", true, true);
    if (nvls) {
      stage("to heads", false, false);
      stage("to switch", true, false);
    }
    stage("multicast", false, true);
    return out;
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_in_network() { return std::make_unique<InNetwork>(); }

}  // namespace shardsim::coll::detail
