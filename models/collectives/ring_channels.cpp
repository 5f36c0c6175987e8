// NCCL's ring across nodes: one ring per channel, the channels striped over every NIC of a
// node (NCCL src/graph/search.cc builds one ring graph per channel, each entering and leaving
// a node through one NIC, and ncclTopoCompute spreads the channels over the node's NICs; see
// docs/collectives.md, issue 14). A node is an NVLink domain (devices joined by `nvlink`
// links, as the NCCL backend reads it, nccl_model.hpp).
//
// With C = the group's ranks per node (one NIC per GPU on every preset), channel c is the ring
// over the nodes in ring_of order, each node's ranks in ring_of order rotated by c: the ring
// enters a node at its local rank c and leaves it from local rank c-1 to the next node's local
// rank c, so the hop between nodes crosses on rail c (rail_optimized, PXN: NVLink to the local
// GPU of rail c, then its NIC; nccl 2.12 release notes). Every channel carries S/C:
//   all-reduce      = 2(n-1) (alpha + S/(C n B_c)), B_c = a channel's bottleneck bandwidth:
//                     min(NIC, NVLink / C) per channel, so a step moves S/n at
//                     min(C x NIC, NVLink) (each NIC carries one channel, each GPU's NVLink
//                     port all C);
//   reduce-scatter  = (n-1) (alpha + S/(C n B_c)) + (n-1) S/(n gamma);  all-gather the same
//                     without gamma.
//   broadcast       = per channel a pipelined chain from the root along that channel's ring
//                     (NCCL's ring broadcast), S/C each, in K = `chunks` pieces (default one
//                     per 512 KiB of a channel's data, ceil(S / (C x 512 KiB)) in [1, 256]:
//                     NCCL's BROADCAST_CHUNKSTEPS and REDUCE_CHUNKSTEPS are 1, one step of the
//                     4 MiB / 8-step channel buffer, src/include/collectives.h): the slowest
//                     channel's pipeline, sum of its n-1 hops' piece times + (K-1) x its
//                     slowest hop's (detail::Cost::pipeline), ~ S/(C B_c) + the fill
//   reduce          = per channel the chain along the ring from the rank after the root round to
//                     the root (NCCL's ring reduce), every piece also reduced at gamma
// alpha and B_c come from detail::step_hop over one step of all C rings at once.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "models/collectives/detail.hpp"

namespace shardsim::coll::detail {

std::vector<std::size_t> nvlink_domains(const topo::Topology& t) {
  const std::size_t nn = t.num_nodes();
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> comp(nn, kNone);
  std::size_t next = 0;
  for (std::size_t s = 0; s < nn; ++s) {
    if (comp[s] != kNone) continue;
    std::vector<topo::NodeId> stack{static_cast<topo::NodeId>(s)};
    comp[s] = next;
    while (!stack.empty()) {
      const auto u = stack.back();
      stack.pop_back();
      for (auto l : t.out_links(u)) {
        const auto& L = t.link(l);
        if (L.cls != topo::LinkClass::nvlink || comp[L.dst] != kNone) continue;
        comp[L.dst] = next;
        stack.push_back(L.dst);
      }
    }
    ++next;
  }
  return comp;
}

NodeLayout node_layout(const topo::Topology& t, const CollectiveOp& op) {
  NodeLayout out;
  const auto comp = nvlink_domains(t);
  std::map<std::size_t, std::size_t> index;
  for (std::uint32_t r : ring_of(t, op)) {
    const auto d = comp[t.device(static_cast<std::size_t>(op.group[r]))];
    auto [it, fresh] = index.emplace(d, out.nodes.size());
    if (fresh) out.nodes.emplace_back();
    out.nodes[it->second].push_back(r);
  }
  if (out.nodes.size() < 2) {
    out.why_not = "the group lies in one NVLink domain (one node): nothing to stripe over NICs";
    return out;
  }
  for (const auto& n : out.nodes) {
    if (n.size() != out.nodes.front().size()) {
      out.why_not = "the group's nodes (NVLink domains) hold different numbers of its ranks";
      return out;
    }
  }
  return out;
}

namespace {

using U = std::uint32_t;

// Broadcast / reduce pieces per channel (header comment).
U chain_chunks(const CollectiveOp& op, std::size_t channels, const CostParams& p) {
  if (p.chunks > 0) return p.chunks;
  const double k = std::ceil(static_cast<double>(op.size_bytes) / (static_cast<double>(channels) * 512.0 * 1024.0));
  return static_cast<U>(std::clamp(k, 1.0, 256.0));
}

struct Layout {
  std::vector<std::vector<U>> rings;  ///< one per channel
  std::optional<std::string> why_not;
};

Layout layout_of(const topo::Topology& t, const CollectiveOp& op) {
  Layout out;
  auto nl = node_layout(t, op);
  if (nl.why_not) {
    // The one-node message names the ring (the schedule NCCL's ring falls back to there).
    out.why_not = nl.nodes.size() < 2 ? *nl.why_not + " (ring)" : *nl.why_not;
    return out;
  }
  const auto& nodes = nl.nodes;
  const std::size_t c = nodes.front().size();
  if (c < 2) {
    out.why_not = "one rank per node (NVLink domain): one channel, the plain ring";
    return out;
  }
  for (std::size_t ch = 0; ch < c; ++ch) {
    std::vector<U> ring;
    for (const auto& n : nodes) {
      for (std::size_t k = 0; k < c; ++k) ring.push_back(n[(ch + k) % c]);
    }
    out.rings.push_back(std::move(ring));
  }
  return out;
}

class RingChannels final : public Algorithm {
 public:
  [[nodiscard]] std::string name() const override { return "ring-channels"; }
  [[nodiscard]] std::string description() const override {
    return "NCCL's ring across nodes: one ring per channel (one per GPU of a node), each crossing between "
           "nodes on its own NIC/rail, each on S/C of the data";
  }
  [[nodiscard]] std::vector<OpKind> ops() const override {
    return {OpKind::allreduce, OpKind::reducescatter, OpKind::allgather, OpKind::broadcast, OpKind::reduce};
  }
  [[nodiscard]] std::vector<ParamInfo> params() const override {
    return {{"chunks", "int", "", "0",
             "broadcast and reduce pipelining pieces per channel (0: ceil(S / (C x 512 KiB)), at most 256); "
             "ignored by the other ops"}};
  }
  [[nodiscard]] std::optional<std::string> unsupported(const topo::Topology& t,
                                                       const CollectiveOp& op) const override {
    validate_op(t, op);
    return layout_of(t, op).why_not;
  }

  [[nodiscard]] Schedule build(const topo::Topology& t, const CollectiveOp& op, const CostParams& p) const override {
    const auto L = checked(t, op);
    Schedule s;
    s.algorithm = name();
    s.ranks = op.group.size();
    const double S = static_cast<double>(op.size_bytes), n = static_cast<double>(op.group.size());
    const double C = static_cast<double>(L.rings.size());
    if (op.kind == OpKind::broadcast || op.kind == OpKind::reduce) {
      s.chunks = chain_chunks(op, L.rings.size(), p);
      s.steps = chain_steps(L, op);
      return s;
    }
    const U rep = static_cast<U>(op.group.size() - 1);
    auto phase = [&](bool reduce, const char* label) {
      // The reduction of S/n per step per rank is counted once (on the first channel's step).
      Step st = ring_step(L.rings[0], +1, S / (C * n), reduce ? S / n : 0.0, rep, label);
      for (std::size_t c = 1; c < L.rings.size(); ++c) merge_into(st, ring_step(L.rings[c], +1, S / (C * n), 0.0, rep, label));
      s.steps.push_back(std::move(st));
    };
    if (op.kind != OpKind::allgather) phase(true, "reduce-scatter");
    if (op.kind != OpKind::reducescatter) phase(false, "all-gather");
    return s;
  }

  [[nodiscard]] AnalyticalCost analytical(const topo::Topology& t, const CollectiveOp& op,
                                          const CostParams& p) const override {
    const auto L = checked(t, op);
    Cost c(p);
    const double S = static_cast<double>(op.size_bytes), nn = static_cast<double>(op.group.size());
    const double C = static_cast<double>(L.rings.size());
    if (op.kind == OpKind::broadcast || op.kind == OpKind::reduce) {
      // The channels run side by side: the slowest channel's pipeline over its own hops (each
      // hop's route alone; a GPU's NVLink port carries C channels, not counted here: NVLink / C
      // exceeds a NIC's rate on every preset, and the flow evaluator counts it).
      const U K = chain_chunks(op, L.rings.size(), p);
      AnalyticalCost worst;
      std::size_t worst_c = 0;
      for (std::size_t ch = 0; ch < L.rings.size(); ++ch) {
        Cost cc(p);
        std::vector<Cost::Stage> stages;
        for (const auto& [src, dst] : ring_chain(L.rings[ch], op)) {
          stages.push_back({step_hop(t, op, {xfer(src, dst, S / C)}, p), S / C, op.kind == OpKind::reduce ? S / C : 0.0});
        }
        cc.pipeline(stages, K);
        auto one = cc.done("");
        if (ch == 0 || one.time_s > worst.time_s) {
          worst = one;
          worst_c = ch;
        }
      }
      worst.formula = fmt::format("slowest channel ({}) of C = {}: (n-1 + K-1) pipeline of S/(C K) pieces{} over its own hops, "
                                  "n = {}, K = {}, S = {} B",
                                  worst_c, L.rings.size(), op.kind == OpKind::reduce ? " reduced at gamma" : "",
                                  op.group.size(), K, op.size_bytes);
      return worst;
    }
    Step st = ring_step(L.rings[0], +1, 0, 0, 1, "");
    for (std::size_t k = 1; k < L.rings.size(); ++k) merge_into(st, ring_step(L.rings[k], +1, 0, 0, 1, ""));
    const Hop h = step_hop(t, op, st.transfers, p);
    const double steps = op.kind == OpKind::allreduce ? 2.0 * (nn - 1) : nn - 1;
    const double red_steps = op.kind == OpKind::allgather ? 0.0 : nn - 1;
    c.steps(steps, h, S / (C * nn), 0);
    c.steps(red_steps, Hop{0, h.bw_Bps, 0, 0}, 0, S / nn);
    return c.done(fmt::format("{} (alpha + S/(C n B_c)){} with n = {}, C = {} channels, alpha = {}, B_c = {}, S = {} B",
                              op.kind == OpKind::allreduce ? "2(n-1)" : "(n-1)",
                              red_steps > 0 ? " + (n-1) S/(n gamma)" : "", op.group.size(), L.rings.size(),
                              fs(h.alpha_s), fbw(h.bw_Bps), op.size_bytes));
  }

  [[nodiscard]] DataPlan data_plan(const topo::Topology& t, const CollectiveOp& op) const override {
    const auto L = checked(t, op);
    const std::size_t n = op.group.size();
    DataPlan d;
    if (op.kind == OpKind::broadcast || op.kind == OpKind::reduce) {
      // Unit c: channel c's S/C of the buffer; step k's transfer c is channel c's hop k.
      d.units = static_cast<U>(L.rings.size());
      d.owner.assign(d.units, static_cast<U>(op.root));
      for (const auto& st : chain_steps(L, op)) {
        std::vector<PlanTransfer> step;
        for (std::size_t c = 0; c < st.transfers.size(); ++c) {
          step.push_back(PlanTransfer{st.transfers[c].src, st.transfers[c].dst, {static_cast<U>(c)}, op.kind == OpKind::reduce});
        }
        d.steps.push_back(std::move(step));
      }
      return d;
    }
    // Unit c n + r: channel c's share of rank r's slice, owned (fully reduced) by rank r.
    d.units = static_cast<U>(L.rings.size() * n);
    for (U u = 0; u < d.units; ++u) d.owner.push_back(u % static_cast<U>(n));
    auto phase = [&](bool reduce) {
      for (std::size_t s = 0; s + 1 < n; ++s) {
        const auto ss = static_cast<std::ptrdiff_t>(s);
        std::vector<PlanTransfer> step;
        for (std::size_t c = 0; c < L.rings.size(); ++c) {
          const auto& ring = L.rings[c];
          auto at = [&](std::size_t q, std::ptrdiff_t off) {
            const auto m = static_cast<std::ptrdiff_t>(n);
            return ring[static_cast<std::size_t>(((static_cast<std::ptrdiff_t>(q) + off) % m + m) % m)];
          };
          for (std::size_t q = 0; q < n; ++q) {
            const U unit = reduce ? at(q, -ss - 1) : at(q, -ss);
            step.push_back(PlanTransfer{ring[q], at(q, 1), {static_cast<U>(c * n) + unit}, reduce});
          }
        }
        d.steps.push_back(std::move(step));
      }
    };
    if (op.kind != OpKind::allgather) phase(true);
    if (op.kind != OpKind::reducescatter) phase(false);
    return d;
  }

 private:
  // Step k of every channel's chain (detail::ring_chain of each channel's ring) at once, S/C per channel; a reduce step's reduce_bytes is
  // the most any rank reduces in it (one S/C per channel it receives on).
  static std::vector<Step> chain_steps(const Layout& L, const CollectiveOp& op) {
    const std::size_t n = op.group.size();
    const double piece = static_cast<double>(op.size_bytes) / static_cast<double>(L.rings.size());
    std::vector<std::vector<std::pair<U, U>>> chains;
    for (const auto& ring : L.rings) chains.push_back(ring_chain(ring, op));
    std::vector<Step> out;
    for (std::size_t k = 0; k + 1 < n; ++k) {
      Step st;
      std::map<U, int> received;
      for (const auto& ch : chains) {
        st.transfers.push_back(xfer(ch[k].first, ch[k].second, piece));
        ++received[ch[k].second];
      }
      if (op.kind == OpKind::reduce) {
        int most = 0;
        for (const auto& [rank, count] : received) most = std::max(most, count);
        st.reduce_bytes = most * piece;
      }
      st.label = op.kind == OpKind::reduce ? "chain-reduce" : "chain";
      out.push_back(std::move(st));
    }
    return out;
  }
  Layout checked(const topo::Topology& t, const CollectiveOp& op) const {
    validate_op(t, op);
    auto L = layout_of(t, op);
    if (L.why_not) throw ConfigError("--algorithm ring-channels", *L.why_not, "a group spanning nodes, the same ranks on each");
    return L;
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_ring_channels() { return std::make_unique<RingChannels>(); }

}  // namespace shardsim::coll::detail
