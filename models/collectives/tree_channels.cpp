// NCCL's Tree all-reduce across nodes, per channel over every NIC (NCCL src/graph/trees.cc,
// ncclGetDtree / ncclTopoPreset: inside a node a channel is a chain of its GPUs, across nodes
// a double binary tree over the nodes, the chain's head GPU talking to the network on its own
// NIC; NCCL 2.4 blog "Massively Scale Your Deep Learning Training with NCCL 2.4"; issue 14).
// The same schedule NCCL's Tree choice runs at flow fidelity (nccl_model.hpp, schedule_for).
//
// With g = the group's ranks per node (NVLink domain; one NIC per GPU on every preset), channel
// c (c = 0..g-1) carries S/g: on every node its chain is the node's ranks in ring_of order
// rotated by c (head = local rank c, the GPU of rail c), and its inter-node part is trees A and
// B (make_double_trees over the nodes) on half of the channel's data each, between the heads of
// rail c (rail_optimized: same-rail GPUs meet through their rail's switch). Steps:
//   g-1 chain reduce stages (tail -> ... -> head), L tree reduce levels (deepest first),
//   L tree broadcast levels, g-1 chain broadcast stages (head -> ... -> tail),
// L = depth of the tree over N nodes; all pipelined in C chunks: CostParams::chunks, or by
// default one per 512 KiB of a channel's data, ceil(S / (g x 512 KiB)) clamped to [1, 256]
// (NCCL's Tree/Simple chunk is one step of the channel buffer, NCCL_BUFFSIZE 4 MiB / NCCL_STEPS
// 8 = 512 KiB, src/enqueue.cc; the cap bounds the flow run's events). In steady
// state every stage runs at once, so the closed form is link-bound:
//   t = (stages + C - 1) alpha + max over links (bytes the link carries / its bandwidth)
//       + (stages - 1) x (the slowest stage's piece: S / (g C) over its bottleneck)
// (fill, then the busiest link; alpha = largest route latency + step overhead). Per GPU the
// chains move 2 (g-1)/g S over NVLink and each head's NIC 2 S/g per direction (an interior
// node of one tree is a leaf of the other): busbw = min(NVLink x g/(g-1), g x NIC) x (n-1)/n,
// the bound NCCL's Tree tuning uses (nccl_tuning.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "models/collectives/detail.hpp"

namespace shardsim::coll::detail {
namespace {

using U = std::uint32_t;

U tree_chunks(const topo::Topology& t, const CollectiveOp& op, const CostParams& p) {
  if (p.chunks > 0) return p.chunks;
  const double g = static_cast<double>(node_layout(t, op).nodes.front().size());
  const double c = std::ceil(static_cast<double>(op.size_bytes) / (g * 512.0 * 1024.0));
  return static_cast<U>(std::clamp(c, 1.0, 256.0));
}

class TreeChannels final : public Algorithm {
 public:
  [[nodiscard]] std::string name() const override { return "tree-channels"; }
  [[nodiscard]] std::string description() const override {
    return "NCCL's tree across nodes: one chain per channel inside each node (one channel per GPU), a double "
           "binary tree over the nodes between the channel's head GPUs, each on its own NIC/rail, pipelined";
  }
  [[nodiscard]] std::vector<OpKind> ops() const override { return {OpKind::allreduce}; }
  [[nodiscard]] std::vector<ParamInfo> params() const override {
    return {{"chunks", "int", "", "0", "pipelining pieces (0: ceil(S / (g x 512 KiB)), at most 256)"}};
  }
  [[nodiscard]] std::optional<std::string> unsupported(const topo::Topology& t,
                                                       const CollectiveOp& op) const override {
    validate_op(t, op);
    const auto nl = node_layout(t, op);
    if (nl.why_not) return *nl.why_not + " (tree-channels)";
    if (nl.nodes.front().size() < 2) return "one rank per node (NVLink domain): one channel, the plain double-binary-tree";
    return std::nullopt;
  }

  [[nodiscard]] Schedule build(const topo::Topology& t, const CollectiveOp& op, const CostParams& p) const override {
    Schedule s;
    s.algorithm = name();
    s.ranks = op.group.size();
    const auto st = stages(t, op);  // validates the group first
    s.chunks = tree_chunks(t, op, p);
    for (const auto& x : st) s.steps.push_back(x.step);
    return s;
  }

  [[nodiscard]] AnalyticalCost analytical(const topo::Topology& t, const CollectiveOp& op,
                                          const CostParams& p) const override {
    return pipelined_link_bound(t, op, p, stages(t, op), tree_chunks(t, op, p));
  }

  [[nodiscard]] DataPlan data_plan(const topo::Topology& t, const CollectiveOp& op) const override {
    const auto st = stages(t, op);
    const auto g = static_cast<U>(node_layout(t, op).nodes.front().size());
    DataPlan d;
    // Units 2c and 2c+1: channel c's halves on trees A and B. All-reduce: no owner.
    d.units = 2 * g;
    d.owner.assign(d.units, 0);
    for (const auto& x : st) {
      std::vector<PlanTransfer> v;
      const bool reduce = x.step.label != "broadcast";
      for (std::size_t i = 0; i < x.step.transfers.size(); ++i) {
        v.push_back(PlanTransfer{x.step.transfers[i].src, x.step.transfers[i].dst, x.units[i], reduce});
      }
      d.steps.push_back(std::move(v));
    }
    return d;
  }

 private:
  static std::vector<Stage> stages(const topo::Topology& t, const CollectiveOp& op) {
    validate_op(t, op);
    const auto nl = node_layout(t, op);
    if (nl.why_not || nl.nodes.front().size() < 2) {
      throw ConfigError("--algorithm tree-channels", nl.why_not.value_or("one rank per node (NVLink domain)"),
                        "a group spanning nodes, the same ranks (at least 2) on each");
    }
    const auto& nodes = nl.nodes;
    const std::size_t N = nodes.size(), g = nodes.front().size();
    const double S = static_cast<double>(op.size_bytes);
    const double per_channel = S / static_cast<double>(g), per_tree = per_channel / 2;
    // Position p of channel c's chain on node k.
    auto at = [&](std::size_t k, std::size_t c, std::size_t p) { return nodes[k][(c + p) % g]; };
    std::vector<Stage> out;
    auto chain = [&](std::size_t from, std::size_t to, bool reduce) {
      Stage s;
      s.step.label = reduce ? "reduce" : "broadcast";
      if (reduce) s.step.reduce_bytes = per_channel;  // each rank receives on one channel per stage
      for (std::size_t c = 0; c < g; ++c) {
        for (std::size_t k = 0; k < N; ++k) {
          s.step.transfers.push_back(xfer(at(k, c, from), at(k, c, to), per_channel));
          s.units.push_back({static_cast<U>(2 * c), static_cast<U>(2 * c + 1)});
        }
      }
      out.push_back(std::move(s));
    };
    for (std::size_t p = g - 1; p >= 1; --p) chain(p, p - 1, true);
    append_channel_trees(out, nodes, per_tree, op.group.size(), true);
    append_channel_trees(out, nodes, per_tree, op.group.size(), false);
    for (std::size_t p = 0; p + 1 < g; ++p) chain(p, p + 1, false);
    return out;
  }
};

}  // namespace

AnalyticalCost pipelined_link_bound(const topo::Topology& t, const CollectiveOp& op, const CostParams& p,
                                    const std::vector<Stage>& st, std::uint32_t chunks) {
  Cost c(p);
  const double C = static_cast<double>(chunks);
  double alpha = 0, piece_s = 0, red = 0;
  std::map<topo::LinkId, double> load;
  for (const auto& x : st) {
    double stage_bw = std::numeric_limits<double>::infinity(), stage_bytes = 0;
    for (const auto& tr : x.step.transfers) {
      const auto& r = route_of(t, op, tr);
      alpha = std::max(alpha, r.latency_s + p.step_overhead_s);
      stage_bw = std::min(stage_bw, r.bottleneck_Bps);
      stage_bytes = std::max(stage_bytes, tr.bytes);
      for (auto l : r.links) load[l] += tr.bytes;
    }
    piece_s = std::max(piece_s, stage_bytes / C / stage_bw);
    red += x.step.reduce_bytes;
  }
  double busiest_s = 0;
  topo::LinkId busiest = 0;
  for (const auto& [l, bytes] : load) {
    const double s = bytes / t.link(l).bandwidth_Bps;
    if (s > busiest_s) {
      busiest_s = s;
      busiest = l;
    }
  }
  const double n_st = static_cast<double>(st.size());
  c.c.latency_s = (n_st + C - 1) * alpha;
  c.c.bandwidth_s = busiest_s + (n_st - 1) * piece_s;
  c.c.reduce_s = gamma_s(red, p.reduce_Bps);
  return c.done(fmt::format("(stages + C-1) alpha + max_link(load/B) + (stages-1) piece, stages = {}, C = {}, "
                            "alpha = {}, busiest link {} ({} B at {}), piece = {}, S = {} B",
                            st.size(), chunks, fs(alpha), busiest, load.empty() ? 0.0 : load.at(busiest),
                            load.empty() ? std::string("-") : fbw(t.link(busiest).bandwidth_Bps), fs(piece_s),
                            op.size_bytes));
}

void append_channel_trees(std::vector<Stage>& out, const std::vector<std::vector<U>>& nodes, double per_tree,
                          std::size_t ranks, bool up) {
  const std::size_t N = nodes.size(), g = nodes.front().size();
  const auto tr = make_double_trees(N);
  auto level = [&](int l) {
    Stage s;
    s.step.label = up ? "reduce" : "broadcast";
    std::vector<double> recv(ranks, 0);
    for (std::size_t c = 0; c < g; ++c) {
      for (int k = 0; k < 2; ++k) {
        for (std::size_t q = 0; q < N; ++q) {
          if (tr.depth[k][q] != l || tr.parent[k][q] < 0) continue;
          const U child = nodes[q][c], parent = nodes[static_cast<std::size_t>(tr.parent[k][q])][c];
          s.step.transfers.push_back(up ? xfer(child, parent, per_tree) : xfer(parent, child, per_tree));
          s.units.push_back({static_cast<U>(2 * c + static_cast<std::size_t>(k))});
          recv[up ? parent : child] += per_tree;
        }
      }
    }
    if (up) {
      for (double r : recv) s.step.reduce_bytes = std::max(s.step.reduce_bytes, r);
    }
    out.push_back(std::move(s));
  };
  if (up) {
    for (int l = tr.levels; l >= 1; --l) level(l);
  } else {
    for (int l = 1; l <= tr.levels; ++l) level(l);
  }
}

std::unique_ptr<Algorithm> make_tree_channels() { return std::make_unique<TreeChannels>(); }

}  // namespace shardsim::coll::detail
