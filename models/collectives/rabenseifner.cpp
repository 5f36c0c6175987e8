// Recursive halving and doubling (Thakur, Rabenseifner and Gropp 2005, "Optimization of
// Collective Communication Operations in MPICH", IJHPCA 19(1): sec. 4.5 reduce-scatter by
// recursive halving, sec. 4.4 all-gather by recursive doubling, sec. 4.6 Rabenseifner's
// all-reduce = the two). Ranks are taken in ring order (positions q = 0..n-1), n a power
// of two:
//   reduce-scatter step j = 0..log n - 1: q exchanges with q xor n/2^(j+1) half of what it
//                  holds, S/2^(j+1), and reduces it;
//   all-gather     step j = 0..log n - 1: q exchanges with q xor 2^j all it holds, 2^j S/n.
//   all-reduce     = 2 log n alpha + 2 (n-1)/n S / B + (n-1)/n S / gamma   (uniform alpha, B)
// Here each step's alpha_j, B_j come from its own pairs (detail::step_hop): on a torus the
// partners of the early halving steps are far apart, so the sum is
//   sum_j (alpha_j + S/(2^(j+1) B_j)) + ... (all-gather mirrored).
// Not a power of two: unsupported (MPICH then folds the extra ranks into partners first; we
// leave those n to ring and the others).
#include <fmt/format.h>

#include <bit>

#include "models/collectives/detail.hpp"

namespace shardsim::coll::detail {
namespace {

using U = std::uint32_t;

class Rabenseifner final : public Algorithm {
 public:
  [[nodiscard]] std::string name() const override { return "rabenseifner"; }
  [[nodiscard]] std::string description() const override {
    return "recursive halving reduce-scatter + recursive doubling all-gather (power-of-two n)";
  }
  [[nodiscard]] std::vector<OpKind> ops() const override {
    return {OpKind::allreduce, OpKind::reducescatter, OpKind::allgather};
  }
  [[nodiscard]] std::optional<std::string> unsupported(const topo::Topology& t,
                                                       const CollectiveOp& op) const override {
    validate_op(t, op);
    if (!is_power_of_two(op.group.size())) {
      return fmt::format("n = {} is not a power of two", op.group.size());
    }
    return std::nullopt;
  }

  [[nodiscard]] Schedule build(const topo::Topology& t, const CollectiveOp& op, const CostParams&) const override {
    require(t, op);
    Schedule s;
    s.algorithm = name();
    s.ranks = op.group.size();
    s.steps = steps(t, op);
    return s;
  }

  [[nodiscard]] AnalyticalCost analytical(const topo::Topology& t, const CollectiveOp& op,
                                          const CostParams& p) const override {
    require(t, op);
    Cost c(p);
    std::string terms;
    for (const auto& st : steps(t, op)) {
      const Hop h = step_hop(t, op, st.transfers, p);
      c.steps(1, h, st.transfers.front().bytes, st.reduce_bytes);
      terms += fmt::format("{}({} + {} B / {})", terms.empty() ? "" : " + ", fs(h.alpha_s), st.transfers.front().bytes,
                           fbw(h.bw_Bps));
    }
    return c.done(fmt::format("sum_j (alpha_j + S_j / B_j) [+ gamma] over log n = {} steps per phase: {}",
                              log2(op.group.size()), terms.empty() ? "nothing to do" : terms));
  }

  [[nodiscard]] DataPlan data_plan(const topo::Topology& t, const CollectiveOp& op) const override {
    require(t, op);
    const std::size_t n = op.group.size();
    const auto ring = ring_of(t, op);
    DataPlan d;
    d.units = static_cast<U>(n);
    for (U u = 0; u < n; ++u) d.owner.push_back(u);
    // Units are named by group rank; position v's segment is unit ring[v].
    auto units = [&](std::size_t q, std::size_t span, std::size_t dist, bool other_half) {
      std::vector<U> out;
      for (std::size_t v = 0; v < n; ++v) {
        if ((v ^ q) >= span) continue;
        if (other_half && (v & dist) == (q & dist)) continue;
        out.push_back(ring[v]);
      }
      return out;
    };
    if (op.kind != OpKind::allgather) {
      for (std::size_t dist = n / 2; dist >= 1; dist /= 2) {
        std::vector<PlanTransfer> st;
        for (std::size_t q = 0; q < n; ++q) st.push_back({ring[q], ring[q ^ dist], units(q, 2 * dist, dist, true), true});
        d.steps.push_back(std::move(st));
      }
    }
    if (op.kind != OpKind::reducescatter) {
      for (std::size_t dist = 1; dist < n; dist *= 2) {
        std::vector<PlanTransfer> st;
        for (std::size_t q = 0; q < n; ++q) st.push_back({ring[q], ring[q ^ dist], units(q, dist, dist, false), false});
        d.steps.push_back(std::move(st));
      }
    }
    return d;
  }

 private:
  static std::size_t log2(std::size_t n) {
    std::size_t l = 0;
    while ((std::size_t{1} << l) < n) ++l;
    return l;
  }

  void require(const topo::Topology& t, const CollectiveOp& op) const {
    if (auto why = unsupported(t, op)) throw ConfigError("algorithm rabenseifner", *why, "a power-of-two group");
  }

  static std::vector<Step> steps(const topo::Topology& t, const CollectiveOp& op) {
    std::vector<Step> out;
    const std::size_t n = op.group.size();
    if (n < 2) return out;
    out.reserve(2 * static_cast<std::size_t>(std::bit_width(n)));
    const auto ring = ring_of(t, op);
    const double S = static_cast<double>(op.size_bytes), nn = static_cast<double>(n);
    auto exchange = [&](std::size_t dist, double bytes, bool reduce, const char* label) {
      Step st;
      st.transfers.reserve(n);
      for (std::size_t q = 0; q < n; ++q) st.transfers.push_back(xfer(ring[q], ring[q ^ dist], bytes));
      st.reduce_bytes = reduce ? bytes : 0;
      st.label = label;
      return st;
    };
    if (op.kind != OpKind::allgather) {
      double held = S;
      for (std::size_t dist = n / 2; dist >= 1; dist /= 2) {
        held /= 2;
        out.push_back(exchange(dist, held, true, "recursive halving"));
      }
    }
    if (op.kind != OpKind::reducescatter) {
      double held = S / nn;
      for (std::size_t dist = 1; dist < n; dist *= 2) {
        out.push_back(exchange(dist, held, false, "recursive doubling"));
        held *= 2;
      }
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_rabenseifner() { return std::make_unique<Rabenseifner>(); }

}  // namespace shardsim::coll::detail
