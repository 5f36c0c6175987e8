// Hierarchical all-reduce (NCCL's tree/ring over nodes; Jia et al. 2018, "Highly Scalable
// Deep Learning Training System with Mixed-Precision", arXiv 1807.11205, hierarchical
// all-reduce; Thakur et al. 2005 for each ring): with m device groups (Topology::
// device_groups, e.g. the GPUs of a node) of g ranks each,
//   1. reduce-scatter inside every group (ring over the group, g-1 steps of S/g),
//   2. all-reduce of each rank's S/g shard across the groups: one ring per local index l
//      (rank l of every group: the rails), 2(m-1) steps of S/(g m),
//   3. all-gather inside every group (g-1 steps of S/g).
//   t = 2(g-1)(alpha_i + S/(g B_i)) + 2(m-1)(alpha_e + S/(g m B_e))
//       + (g-1) S/(g gamma) + (m-1) S/(g m gamma)
// Reduce-scatter = steps 1 and the reduce-scatter half of 2; all-gather = the all-gather
// half of 2, then 3. alpha_i, B_i: one intra step over all groups; alpha_e, B_e: one rail
// step over all rails (detail::step_hop). The form assumes the g rails do not share links
// (one NIC per rank, as on rail-optimized clusters); where they share a NIC or an uplink,
// only the flow evaluator is right.
#include <fmt/format.h>

#include <variant>

#include "models/collectives/detail.hpp"

namespace shardsim::coll::detail {
namespace {

using U = std::uint32_t;

struct Layout {
  std::vector<std::vector<U>> groups;  // [a][l]: group index of local rank l of group a
  [[nodiscard]] std::size_t m() const { return groups.size(); }
  [[nodiscard]] std::size_t g() const { return groups.empty() ? 0 : groups.front().size(); }
  [[nodiscard]] std::vector<U> rail(std::size_t l) const {
    std::vector<U> r;
    for (const auto& gr : groups) r.push_back(gr[l]);
    return r;
  }
};

std::variant<Layout, std::string> layout(const topo::Topology& t, const CollectiveOp& op) {
  if (t.device_groups().empty()) return fmt::format("topology '{}' has no device groups", t.name());
  std::vector<int> group_of(t.num_devices(), -1);
  for (std::size_t a = 0; a < t.device_groups().size(); ++a) {
    for (int d : t.device_groups()[a]) {
      if (d >= 0 && static_cast<std::size_t>(d) < group_of.size()) group_of[static_cast<std::size_t>(d)] = static_cast<int>(a);
    }
  }
  std::vector<std::vector<U>> members(t.device_groups().size());
  for (U r = 0; r < op.group.size(); ++r) {
    const int a = group_of[static_cast<std::size_t>(op.group[r])];
    if (a < 0) return fmt::format("rank {} is in no device group", op.group[r]);
    members[static_cast<std::size_t>(a)].push_back(r);
  }
  Layout L;
  for (auto& mem : members) {
    if (mem.empty()) continue;
    if (!L.groups.empty() && mem.size() != L.g()) {
      return fmt::format("device groups hold different numbers of the group's ranks ({} and {})", L.g(), mem.size());
    }
    L.groups.push_back(ring_of(t, op, mem));
  }
  if (L.m() < 2) return std::string("all ranks are in one device group; use ring");
  return L;
}

class Hierarchical final : public Algorithm {
 public:
  [[nodiscard]] std::string name() const override { return "hierarchical"; }
  [[nodiscard]] std::string description() const override {
    return "intra-group reduce-scatter, inter-group all-reduce of the shard over rails, intra-group all-gather";
  }
  [[nodiscard]] std::vector<OpKind> ops() const override {
    return {OpKind::allreduce, OpKind::reducescatter, OpKind::allgather};
  }
  [[nodiscard]] std::optional<std::string> unsupported(const topo::Topology& t,
                                                       const CollectiveOp& op) const override {
    validate_op(t, op);
    auto l = layout(t, op);
    if (auto* why = std::get_if<std::string>(&l)) return *why;
    return std::nullopt;
  }

  [[nodiscard]] Schedule build(const topo::Topology& t, const CollectiveOp& op, const CostParams&) const override {
    const Layout L = require(t, op);
    Schedule s;
    s.algorithm = name();
    s.ranks = op.group.size();
    for (auto& p : phases(L, op)) s.steps.push_back(std::move(p.step));
    return s;
  }

  [[nodiscard]] AnalyticalCost analytical(const topo::Topology& t, const CollectiveOp& op,
                                          const CostParams& p) const override {
    const Layout L = require(t, op);
    Cost c(p);
    std::string terms;
    for (const auto& ph : phases(L, op)) {
      const Hop h = step_hop(t, op, ph.step.transfers, p);
      c.steps(ph.step.repeat, h, ph.step.transfers.front().bytes, ph.step.reduce_bytes);
      terms += fmt::format("{}{}: {} x (alpha {} + {} B / {})", terms.empty() ? "" : " + ", ph.step.label,
                           ph.step.repeat, fs(h.alpha_s), ph.step.transfers.front().bytes, fbw(h.bw_Bps));
    }
    return c.done(fmt::format("2(g-1)(alpha_i + S/(g B_i)) + 2(m-1)(alpha_e + S/(g m B_e)) [+ gamma], g = {}, m = {}: {}",
                              L.g(), L.m(), terms));
  }

  [[nodiscard]] DataPlan data_plan(const topo::Topology& t, const CollectiveOp& op) const override {
    const Layout L = require(t, op);
    const std::size_t n = op.group.size(), g = L.g(), m = L.m();
    DataPlan d;
    d.units = static_cast<U>(n);
    for (U u = 0; u < n; ++u) d.owner.push_back(u);
    auto mod = [](std::ptrdiff_t a, std::size_t k) {
      const auto kk = static_cast<std::ptrdiff_t>(k);
      return static_cast<std::size_t>((a % kk + kk) % kk);
    };
    auto slice = [&](std::size_t l) { return L.rail(l); };
    auto intra = [&](bool reduce) {
      for (std::size_t s = 0; s + 1 < g; ++s) {
        std::vector<PlanTransfer> st;
        for (const auto& gr : L.groups) {
          for (std::size_t p = 0; p < g; ++p) {
            const auto ps = static_cast<std::ptrdiff_t>(p), ss = static_cast<std::ptrdiff_t>(s);
            st.push_back(PlanTransfer{gr[p], gr[(p + 1) % g], slice(mod(reduce ? ps - ss - 1 : ps - ss, g)), reduce});
          }
        }
        d.steps.push_back(std::move(st));
      }
    };
    auto inter = [&](bool reduce) {
      for (std::size_t s = 0; s + 1 < m; ++s) {
        std::vector<PlanTransfer> st;
        for (std::size_t l = 0; l < g; ++l) {
          const auto r = L.rail(l);
          for (std::size_t b = 0; b < m; ++b) {
            const auto bs = static_cast<std::ptrdiff_t>(b), ss = static_cast<std::ptrdiff_t>(s);
            st.push_back(PlanTransfer{r[b], r[(b + 1) % m], {r[mod(reduce ? bs - ss - 1 : bs - ss, m)]}, reduce});
          }
        }
        d.steps.push_back(std::move(st));
      }
    };
    if (op.kind != OpKind::allgather) {
      intra(true);
      inter(true);
    }
    if (op.kind != OpKind::reducescatter) {
      inter(false);
      intra(false);
    }
    return d;
  }

 private:
  struct Phase {
    Step step;
  };

  Layout require(const topo::Topology& t, const CollectiveOp& op) const {
    validate_op(t, op);
    auto l = layout(t, op);
    if (auto* why = std::get_if<std::string>(&l)) {
      throw ConfigError("algorithm hierarchical", *why, "a group made of equal parts of two or more device groups");
    }
    return std::get<Layout>(std::move(l));
  }

  static std::vector<Phase> phases(const Layout& L, const CollectiveOp& op) {
    const double S = static_cast<double>(op.size_bytes);
    const double g = static_cast<double>(L.g()), m = static_cast<double>(L.m());
    auto intra = [&](bool reduce) {
      Step st;
      for (const auto& gr : L.groups) merge_into(st, ring_step(gr, +1, S / g, 0, 1, ""));
      st.repeat = static_cast<U>(L.g() - 1);
      st.reduce_bytes = reduce ? S / g : 0;
      st.label = reduce ? "intra reduce-scatter" : "intra all-gather";
      return st;
    };
    auto inter = [&](bool reduce) {
      Step st;
      for (std::size_t l = 0; l < L.g(); ++l) merge_into(st, ring_step(L.rail(l), +1, S / (g * m), 0, 1, ""));
      st.repeat = static_cast<U>(L.m() - 1);
      st.reduce_bytes = reduce ? S / (g * m) : 0;
      st.label = reduce ? "inter reduce-scatter" : "inter all-gather";
      return st;
    };
    std::vector<Phase> out;
    if (op.kind != OpKind::allgather) {
      if (L.g() > 1) out.push_back({intra(true)});
      out.push_back({inter(true)});
    }
    if (op.kind != OpKind::reducescatter) {
      out.push_back({inter(false)});
      if (L.g() > 1) out.push_back({intra(false)});
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_hierarchical() { return std::make_unique<Hierarchical>(); }

}  // namespace shardsim::coll::detail
