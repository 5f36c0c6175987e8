// Dimension-wise torus all-reduce, the TPU scheme (Ying et al. 2018, "Image Classification
// at Supercomputer Scale", arXiv 1811.06992, sec. 3.3: 2-D gradient summation; Kumar et al.
// 2019, "Scale MLPerf-0.6 models on Google TPU-v3 Pods", arXiv 1909.09756, sec. 3.2):
// reduce-scatter along dimension 0, then 1, ..., then all-gather in the reverse order. Along
// each dimension the rings are bidirectional: half of the data travels in +d, half in -d, so
// both directions of every link carry bytes (a dimension of size 2 has one neighbour and
// uses one direction with the whole data).
//
// With dims k_0..k_{D-1}, S_d = S / (k_0 ... k_{d-1}) the data entering dimension d, and
// alpha_d, B_d from the step of dimension d (detail::step_hop):
//   reduce-scatter  = sum_d (k_d-1) (alpha_d + S_d/(2 k_d B_d)) + (k_d-1) S_d/(k_d gamma)
//   all-gather      = sum_d (k_d-1) (alpha_d + S_d/(2 k_d B_d))
//   all-reduce      = both     (k_d = 2: S_d/(k_d B_d) instead of S_d/(2 k_d B_d))
// Every ring hop is one link (wraparound), every directed link carries one flow per step:
// no contention, so the flow evaluator reproduces this exactly.
//
// Applies when the group is the whole torus (any order; rank r keeps segment r) and every
// dimension longer than 2 wraps around. Sub-tori are not supported: use ring.
#include <fmt/format.h>

#include <numeric>

#include "models/collectives/detail.hpp"

namespace shardsim::coll::detail {
namespace {

using U = std::uint32_t;

struct Geometry {
  std::vector<int> dims;
  std::vector<U> rank_of_device;  // group index of each device
  std::vector<U> device_of_rank;
  [[nodiscard]] std::size_t n() const { return device_of_rank.size(); }
  [[nodiscard]] int digit(std::size_t device, std::size_t d) const {
    std::size_t stride = 1;
    for (std::size_t j = d + 1; j < dims.size(); ++j) stride *= static_cast<std::size_t>(dims[j]);
    return static_cast<int>((device / stride) % static_cast<std::size_t>(dims[d]));
  }
  // Device with digit d of `device` moved by `delta` (mod k_d).
  [[nodiscard]] std::size_t shift(std::size_t device, std::size_t d, int delta) const {
    std::size_t stride = 1;
    for (std::size_t j = d + 1; j < dims.size(); ++j) stride *= static_cast<std::size_t>(dims[j]);
    const int k = dims[d];
    const int x = digit(device, d);
    const int y = ((x + delta) % k + k) % k;
    return device - static_cast<std::size_t>(x) * stride + static_cast<std::size_t>(y) * stride;
  }
};

Geometry geometry(const topo::Topology& t, const CollectiveOp& op) {
  Geometry g;
  g.dims = t.torus_dims();
  g.rank_of_device.assign(t.num_devices(), 0);
  for (U r = 0; r < op.group.size(); ++r) {
    g.rank_of_device[static_cast<std::size_t>(op.group[r])] = r;
    g.device_of_rank.push_back(static_cast<U>(op.group[r]));
  }
  return g;
}

class Torus final : public Algorithm {
 public:
  [[nodiscard]] std::string name() const override { return "torus"; }
  [[nodiscard]] std::string description() const override {
    return "dimension-wise (TPU 2D/3D): reduce-scatter along each dimension in turn with bidirectional rings, "
           "all-gather in reverse";
  }
  [[nodiscard]] std::vector<OpKind> ops() const override {
    return {OpKind::allreduce, OpKind::reducescatter, OpKind::allgather};
  }
  [[nodiscard]] std::optional<std::string> unsupported(const topo::Topology& t,
                                                       const CollectiveOp& op) const override {
    validate_op(t, op);
    if (t.torus_dims().empty()) return fmt::format("topology '{}' is not a torus", t.name());
    const auto total = std::accumulate(t.torus_dims().begin(), t.torus_dims().end(), std::size_t{1},
                                       [](std::size_t a, int k) { return a * static_cast<std::size_t>(k); });
    if (total != t.num_devices() || op.group.size() != t.num_devices()) {
      return fmt::format("torus needs the group to be the whole {} torus ({} ranks), got {} ranks", dims_text(t),
                         total, op.group.size());
    }
    for (std::size_t d = 0; d < t.torus_dims().size(); ++d) {
      const bool wrap = d < t.torus_wrap().size() && t.torus_wrap()[d];
      if (t.torus_dims()[d] > 2 && !wrap) {
        return fmt::format("dimension {} (size {}) has no wraparound, so its rings would reuse links", d,
                           t.torus_dims()[d]);
      }
    }
    return std::nullopt;
  }

  [[nodiscard]] Schedule build(const topo::Topology& t, const CollectiveOp& op, const CostParams&) const override {
    require(t, op);
    Schedule s;
    s.algorithm = name();
    s.ranks = op.group.size();
    const auto g = geometry(t, op);
    for (const auto& ph : phases(g, op)) s.steps.push_back(step(g, ph, static_cast<double>(op.size_bytes)));
    return s;
  }

  [[nodiscard]] AnalyticalCost analytical(const topo::Topology& t, const CollectiveOp& op,
                                          const CostParams& p) const override {
    require(t, op);
    Cost c(p);
    const auto g = geometry(t, op);
    const double S = static_cast<double>(op.size_bytes);
    std::string terms;
    for (const auto& ph : phases(g, op)) {
      const Step st = step(g, ph, S);
      const Hop h = step_hop(t, op, st.transfers, p);
      c.steps(st.repeat, h, st.transfers.front().bytes, st.reduce_bytes);
      terms += fmt::format("{}{} dim {}: {} x (alpha {} + {} B / {})", terms.empty() ? "" : " + ",
                           ph.reduce ? "RS" : "AG", ph.dim, st.repeat, fs(h.alpha_s), st.transfers.front().bytes,
                           fbw(h.bw_Bps));
    }
    return c.done(fmt::format("sum over dims of (k_d-1)(alpha_d + S_d/(2 k_d B_d)) [+ gamma]: {}",
                              terms.empty() ? "nothing to do" : terms));
  }

  [[nodiscard]] DataPlan data_plan(const topo::Topology& t, const CollectiveOp& op) const override {
    require(t, op);
    const auto g = geometry(t, op);
    const std::size_t D = g.dims.size();
    const U dirs = U{1} << D;
    DataPlan plan;
    plan.units = static_cast<U>(g.n()) * dirs;
    for (U u = 0; u < plan.units; ++u) plan.owner.push_back(u / dirs);
    for (const auto& ph : phases(g, op)) {
      const int k = g.dims[ph.dim];
      const bool uni = k == 2;
      for (int s = 0; s + 1 < k; ++s) {
        std::vector<PlanTransfer> step_out;
        for (int sign : {+1, -1}) {
          if (uni && sign < 0) continue;
          for (std::size_t dev = 0; dev < g.n(); ++dev) {
            const int x = g.digit(dev, ph.dim);
            const int want = ((ph.reduce ? x - sign * (s + 1) : x - sign * s) % k + k) % k;
            PlanTransfer pt;
            pt.src = g.rank_of_device[dev];
            pt.dst = g.rank_of_device[g.shift(dev, ph.dim, sign)];
            pt.reduce = ph.reduce;
            for (std::size_t seg_dev = 0; seg_dev < g.n(); ++seg_dev) {
              bool ok = g.digit(seg_dev, ph.dim) == want;
              for (std::size_t j = 0; j < ph.dim && ok; ++j) ok = g.digit(seg_dev, j) == g.digit(dev, j);
              if (!ok) continue;
              for (U b = 0; b < dirs; ++b) {
                const bool bit = (b >> ph.dim) & 1U;
                if (!uni && bit != (sign < 0)) continue;
                pt.units.push_back(g.rank_of_device[seg_dev] * dirs + b);
              }
            }
            step_out.push_back(std::move(pt));
          }
        }
        plan.steps.push_back(std::move(step_out));
      }
    }
    return plan;
  }

 private:
  struct Phase {
    std::size_t dim = 0;
    bool reduce = false;
    double fraction = 1;  // S_d / S
  };

  static std::string dims_text(const topo::Topology& t) {
    std::string s;
    for (int k : t.torus_dims()) s += (s.empty() ? "" : "x") + std::to_string(k);
    return s;
  }

  void require(const topo::Topology& t, const CollectiveOp& op) const {
    if (auto why = unsupported(t, op)) {
      throw ConfigError("algorithm torus", *why, "a group spanning a whole wraparound torus");
    }
  }

  static std::vector<Phase> phases(const Geometry& g, const CollectiveOp& op) {
    std::vector<Phase> rs;
    double f = 1;
    for (std::size_t d = 0; d < g.dims.size(); ++d) {
      if (g.dims[d] > 1) rs.push_back({d, true, f});
      f /= g.dims[d];
    }
    std::vector<Phase> out;
    if (op.kind != OpKind::allgather) out = rs;
    if (op.kind != OpKind::reducescatter) {
      for (auto it = rs.rbegin(); it != rs.rend(); ++it) out.push_back({it->dim, false, it->fraction});
    }
    return out;
  }

  // One step of a phase (repeated k_d - 1 times): every rank sends to its +d neighbour and,
  // unless k_d = 2, to its -d neighbour.
  static Step step(const Geometry& g, const Phase& ph, double S) {
    const int k = g.dims[ph.dim];
    const double Sd = S * ph.fraction;
    const bool uni = k == 2;
    Step st;
    st.repeat = static_cast<U>(k - 1);
    st.reduce_bytes = ph.reduce ? Sd / k : 0.0;
    st.label = fmt::format("{} dim {}", ph.reduce ? "reduce-scatter" : "all-gather", ph.dim);
    const double bytes = uni ? Sd / k : Sd / (2.0 * k);
    for (int sign : {+1, -1}) {
      if (uni && sign < 0) continue;
      for (std::size_t dev = 0; dev < g.n(); ++dev) {
        st.transfers.push_back(xfer(g.rank_of_device[dev], g.rank_of_device[g.shift(dev, ph.dim, sign)], bytes));
      }
    }
    return st;
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_torus() { return std::make_unique<Torus>(); }

}  // namespace shardsim::coll::detail
