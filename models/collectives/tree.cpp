// Double binary tree all-reduce (Sanders, Speck and Traeff 2009, "Two-tree algorithms for
// full bandwidth broadcast, reduction and scan", Parallel Computing 35(12); NCCL 2.4,
// "Massively Scale Your Deep Learning Training with NCCL 2.4", NVIDIA blog, 2019): two
// binary trees over the ranks, each carrying half of the data; tree A is the in-order
// balanced tree over the ring positions (root = middle position), tree B its mirror
// (position p plays the role of n-1-p), so most interior ranks of one tree are leaves of the
// other. Each tree reduces towards its root, level by level, then broadcasts back down; both
// trees run in the same steps. Data are pipelined in C chunks (CostParams::chunks; 0 =
// ceil(S / 1 MiB), at most 64).
//
// Steps: L reduce levels (deepest first) then L broadcast levels, L = tree depth
// = floor(log2 n). In steady state all 2L stages run at once and share the ranks' ports, so
// the closed form is port-bound rather than a sum of stages:
//   t = (2L + C-1) alpha + (2L-1) S/(2 C B) + P / B + R / gamma
// the first piece crossing the 2L stages (fill), then the busiest port's bytes P (sent or
// received by one rank over both trees and both phases: 2S to 2.5S) at the route
// bottleneck B; R = the most bytes one rank reduces. alpha = largest route latency + step
// overhead over the tree edges. This assumes the port is the bottleneck (a non-blocking
// switch) and perfect overlap of the stages; the flow evaluator is the reference, and it
// also charges each step's reduction to every receiving rank (Step::reduce_bytes is the most
// any rank of the step reduces).
#include <fmt/format.h>

#include "models/collectives/detail.hpp"

namespace shardsim::coll::detail {

namespace {
void in_order(int lo, int hi, int parent, int d, BinaryTrees& tr) {
  if (lo > hi) return;
  const int mid = lo + (hi - lo) / 2;
  tr.parent[0][static_cast<std::size_t>(mid)] = parent;
  tr.depth[0][static_cast<std::size_t>(mid)] = d;
  tr.levels = std::max(tr.levels, d);
  in_order(lo, mid - 1, mid, d + 1, tr);
  in_order(mid + 1, hi, mid, d + 1, tr);
}
}  // namespace

BinaryTrees make_double_trees(std::size_t n) {
  BinaryTrees tr;
  for (auto& v : tr.parent) v.assign(n, -1);
  for (auto& v : tr.depth) v.assign(n, 0);
  in_order(0, static_cast<int>(n) - 1, -1, 0, tr);
  const int last = static_cast<int>(n) - 1;
  for (std::size_t p = 0; p < n; ++p) {
    const auto q = static_cast<std::size_t>(last - static_cast<int>(p));
    tr.parent[1][p] = tr.parent[0][q] < 0 ? -1 : last - tr.parent[0][q];
    tr.depth[1][p] = tr.depth[0][q];
  }
  return tr;
}

namespace {

using U = std::uint32_t;

class DoubleBinaryTree final : public Algorithm {
 public:
  [[nodiscard]] std::string name() const override { return "double-binary-tree"; }
  [[nodiscard]] std::string description() const override {
    return "NCCL's two complementary binary trees, each on half the data, reduce then broadcast, pipelined in chunks";
  }
  [[nodiscard]] std::vector<OpKind> ops() const override { return {OpKind::allreduce}; }
  [[nodiscard]] std::vector<ParamInfo> params() const override {
    return {pipeline_chunks_param()};
  }
  [[nodiscard]] std::optional<std::string> unsupported(const topo::Topology& t,
                                                       const CollectiveOp& op) const override {
    validate_op(t, op);
    return std::nullopt;
  }

  [[nodiscard]] Schedule build(const topo::Topology& t, const CollectiveOp& op, const CostParams& p) const override {
    validate_op(t, op);
    Schedule s;
    s.algorithm = name();
    s.ranks = op.group.size();
    s.chunks = pipeline_chunks(op, p);
    for (auto& l : levels(t, op)) s.steps.push_back(std::move(l.step));
    return s;
  }

  [[nodiscard]] AnalyticalCost analytical(const topo::Topology& t, const CollectiveOp& op,
                                          const CostParams& p) const override {
    validate_op(t, op);
    Cost c(p);
    const std::size_t n = op.group.size();
    if (n < 2) return c.done("n = 1: nothing to do");
    const U C = pipeline_chunks(op, p);
    const auto lv = levels(t, op);
    double alpha = 0, bw = std::numeric_limits<double>::infinity(), red = 0;
    std::vector<double> in(n, 0), out(n, 0), reduced(n, 0);
    for (const auto& l : lv) {
      for (const auto& x : l.step.transfers) {
        const auto& r = route_of(t, op, x);
        alpha = std::max(alpha, r.latency_s + p.step_overhead_s);
        bw = std::min(bw, r.bottleneck_Bps);
        out[x.src] += x.bytes;
        in[x.dst] += x.bytes;
        if (l.step.label == "reduce") reduced[x.dst] += x.bytes;
      }
    }
    double port = 0;
    for (std::size_t r = 0; r < n; ++r) port = std::max({port, in[r], out[r]});
    for (double v : reduced) red = std::max(red, v);
    const double stages = static_cast<double>(lv.size());
    const double half = static_cast<double>(op.size_bytes) / 2;
    c.c.latency_s = (stages + C - 1) * alpha;
    c.c.bandwidth_s = (stages - 1) * half / C / bw + port / bw;
    c.c.reduce_s = gamma_s(red, p.reduce_Bps);
    return c.done(fmt::format("(2L + C-1) alpha + (2L-1) S/(2 C B) + P/B [+ R/gamma], 2L = {}, C = {}, alpha = {}, "
                              "B = {}, P = {} B (busiest port over both trees), S = {} B",
                              lv.size(), C, fs(alpha), fbw(bw), port, op.size_bytes));
  }

  [[nodiscard]] DataPlan data_plan(const topo::Topology& t, const CollectiveOp& op) const override {
    validate_op(t, op);
    DataPlan d;
    d.units = 2;
    d.owner = {0, 0};
    for (const auto& l : levels(t, op)) {
      std::vector<PlanTransfer> v;
      const bool reduce = l.step.label == "reduce";
      for (std::size_t i = 0; i < l.step.transfers.size(); ++i) {
        v.push_back(PlanTransfer{l.step.transfers[i].src, l.step.transfers[i].dst, {l.tree[i]}, reduce});
      }
      d.steps.push_back(std::move(v));
    }
    return d;
  }

 private:
  struct Level {
    Step step;
    std::vector<U> tree;  // tree (0 = A, 1 = B) of each transfer
  };

  static std::vector<Level> levels(const topo::Topology& t, const CollectiveOp& op) {
    std::vector<Level> out;
    const std::size_t n = op.group.size();
    if (n < 2) return out;
    const auto ring = ring_of(t, op);
    const auto tr = make_double_trees(n);
    const double half = static_cast<double>(op.size_bytes) / 2;
    auto level = [&](int l, bool up) {
      Level lv;
      Step& st = lv.step;
      st.label = up ? "reduce" : "broadcast";
      std::vector<double> recv(n, 0);
      for (int k = 0; k < 2; ++k) {
        for (std::size_t p = 0; p < n; ++p) {
          if (tr.depth[k][p] != l || tr.parent[k][p] < 0) continue;
          const auto par = static_cast<std::size_t>(tr.parent[k][p]);
          st.transfers.push_back(up ? xfer(ring[p], ring[par], half) : xfer(ring[par], ring[p], half));
          lv.tree.push_back(static_cast<U>(k));
          recv[up ? par : p] += half;
        }
      }
      if (up) {
        for (double r : recv) st.reduce_bytes = std::max(st.reduce_bytes, r);
      }
      return lv;
    };
    for (int l = tr.levels; l >= 1; --l) out.push_back(level(l, true));
    for (int l = 1; l <= tr.levels; ++l) out.push_back(level(l, false));
    return out;
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_double_binary_tree() { return std::make_unique<DoubleBinaryTree>(); }

}  // namespace shardsim::coll::detail
