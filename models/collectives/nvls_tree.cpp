// NCCL's NVLSTree all-reduce (NVLS inside each node, a double binary tree across nodes between
// the NVLS heads; NVIDIA/nccl src/device/all_reduce.h runTreeNvls / ncclNvlsTree*, src/graph/
// trees.cc; NCCL 2.18 release notes "NVLS Tree"): the schedule NCCL's NVLSTree choice runs at
// flow fidelity (nccl_model.hpp). Needs every node (NVLink domain) of the group to have a switch
// with in_network_reduction linked to each of its ranks.
//
// With g = the group's ranks per node, channel c (c = 0..g-1) carries S/g and has one head per
// node, local rank c (NCCL's NVLS graph: one head GPU per channel, each with its own NIC).
// Steps (Transfer::dst_is_node / src_is_node name the switch, as in-network does):
//   1. every rank sends its whole buffer to its node's switch, which reduces (multimem
//      ld_reduce): S per rank;
//   2. the switch hands channel c's node sum to head c: S/g per head;
//   3. L tree reduce levels, then L broadcast levels, between the heads of channel c over the
//      nodes (append_channel_trees: trees A and B on S/(2g) each), L = tree depth over N nodes;
//   4. head c sends channel c's result to its switch: S/g;
//   5. the switch multicasts everything to every rank: S per rank.
// Pipelined in C chunks (pipeline_chunks). Closed form, link-bound as tree-channels':
//   t = (stages + C - 1) alpha + max over links (bytes / bandwidth) + (stages - 1) x piece
// Per GPU its NVLink carries S + S/g each way (as NVLS on one node); each head's NIC S/g per
// direction on 2 nodes (2 S/g on more).
#include <fmt/format.h>

#include "models/collectives/detail.hpp"

namespace shardsim::coll::detail {
namespace {

using U = std::uint32_t;

// The reducing switch of each node (lowest id linked both ways to all its ranks), or why not.
struct Switches {
  NodeLayout nl;
  std::vector<topo::NodeId> sw;
  std::optional<std::string> why_not;
};

Switches switches_of(const topo::Topology& t, const CollectiveOp& op) {
  Switches out;
  out.nl = node_layout(t, op);
  if (out.nl.why_not) {
    out.why_not = *out.nl.why_not + " (nvls-tree)";
    return out;
  }
  for (std::size_t k = 0; k < out.nl.nodes.size(); ++k) {
    bool found = false;
    for (topo::NodeId v = 0; v < t.num_nodes() && !found; ++v) {
      const auto& nd = t.node(v);
      if (nd.kind != topo::NodeKind::switch_node || !nd.in_network_reduction) continue;
      bool all = true;
      for (U r : out.nl.nodes[k]) {
        const topo::NodeId d = t.device(static_cast<std::size_t>(op.group[r]));
        all = all && linked_both(t, d, v);
      }
      if (all) {
        out.sw.push_back(v);
        found = true;
      }
    }
    if (!found) {
      out.why_not = fmt::format("node {} of the group has no switch with in_network_reduction linked to all its ranks",
                                k);
      return out;
    }
  }
  return out;
}

class NvlsTree final : public Algorithm {
 public:
  [[nodiscard]] std::string name() const override { return "nvls-tree"; }
  [[nodiscard]] std::string description() const override {
    return "NCCL's NVLSTree: NVLS (switch reduction and multicast) inside each node, a double binary tree "
           "across nodes between the channels' head GPUs, each on its own NIC/rail, pipelined";
  }
  [[nodiscard]] std::vector<OpKind> ops() const override { return {OpKind::allreduce}; }
  [[nodiscard]] std::vector<ParamInfo> params() const override {
    return {pipeline_chunks_param()};
  }
  [[nodiscard]] std::optional<std::string> unsupported(const topo::Topology& t,
                                                       const CollectiveOp& op) const override {
    validate_op(t, op);
    return switches_of(t, op).why_not;
  }

  [[nodiscard]] Schedule build(const topo::Topology& t, const CollectiveOp& op, const CostParams& p) const override {
    const auto st = stages(t, op);
    Schedule s;
    s.algorithm = name();
    s.ranks = op.group.size();
    s.chunks = pipeline_chunks(op, p);
    for (const auto& x : st) s.steps.push_back(x.step);
    return s;
  }

  [[nodiscard]] AnalyticalCost analytical(const topo::Topology& t, const CollectiveOp& op,
                                          const CostParams& p) const override {
    return pipelined_link_bound(t, op, p, stages(t, op), pipeline_chunks(op, p));
  }

  [[nodiscard]] DataPlan data_plan(const topo::Topology& t, const CollectiveOp& op) const override {
    const auto st = stages(t, op);
    const auto g = static_cast<U>(node_layout(t, op).nodes.front().size());
    DataPlan d;
    d.units = 2 * g;  // channel c's halves on trees A and B: 2c, 2c+1
    d.owner.assign(d.units, 0);
    for (const auto& x : st) {
      std::vector<PlanTransfer> v;
      for (std::size_t i = 0; i < x.step.transfers.size(); ++i) {
        const auto& tr = x.step.transfers[i];
        // Into a switch: it reduces; the tree's reduce levels add; everything else copies.
        const bool reduce = x.step.label == "reduce in switch" || x.step.label == "reduce";
        v.push_back(PlanTransfer{tr.src, tr.dst, x.units[i], reduce, tr.src_is_node, tr.dst_is_node});
      }
      d.steps.push_back(std::move(v));
    }
    return d;
  }

 private:
  static std::vector<Stage> stages(const topo::Topology& t, const CollectiveOp& op) {
    validate_op(t, op);
    const auto sws = switches_of(t, op);
    if (sws.why_not) {
      throw ConfigError("--algorithm nvls-tree", *sws.why_not,
                        "a group spanning nodes, the same ranks on each, each node with a reducing NVSwitch");
    }
    const auto& nodes = sws.nl.nodes;
    const std::size_t N = nodes.size(), g = nodes.front().size();
    const double S = static_cast<double>(op.size_bytes), per_channel = S / static_cast<double>(g);
    std::vector<U> all_units;
    for (U u = 0; u < 2 * g; ++u) all_units.push_back(u);
    std::vector<Stage> out;
    auto to_switch = [&](bool whole) {
      Stage s;
      s.step.label = whole ? "reduce in switch" : "to switch";
      for (std::size_t k = 0; k < N; ++k) {
        for (std::size_t c = 0; c < g; ++c) {
          Transfer x = xfer(nodes[k][c], sws.sw[k], whole ? S : per_channel);
          x.dst_is_node = true;
          s.step.transfers.push_back(x);
          s.units.push_back(whole ? all_units : std::vector<U>{static_cast<U>(2 * c), static_cast<U>(2 * c + 1)});
        }
      }
      out.push_back(std::move(s));
    };
    auto from_switch = [&](bool whole) {
      Stage s;
      s.step.label = whole ? "multicast" : "to heads";
      for (std::size_t k = 0; k < N; ++k) {
        for (std::size_t c = 0; c < g; ++c) {
          Transfer x = xfer(sws.sw[k], nodes[k][c], whole ? S : per_channel);
          x.src_is_node = true;
          s.step.transfers.push_back(x);
          s.units.push_back(whole ? all_units : std::vector<U>{static_cast<U>(2 * c), static_cast<U>(2 * c + 1)});
        }
      }
      out.push_back(std::move(s));
    };
    to_switch(true);
    from_switch(false);
    append_channel_trees(out, nodes, per_channel / 2, op.group.size(), true);
    append_channel_trees(out, nodes, per_channel / 2, op.group.size(), false);
    to_switch(false);
    from_switch(true);
    return out;
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_nvls_tree() { return std::make_unique<NvlsTree>(); }

}  // namespace shardsim::coll::detail
