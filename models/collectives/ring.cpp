// Ring algorithms (Thakur, Rabenseifner and Gropp 2005, "Optimization of Collective
// Communication Operations in MPICH", IJHPCA 19(1), sec. 4.5 (all-gather ring), 4.4
// (reduce-scatter) and Patarasuk and Yuan 2009 (bandwidth-optimal ring all-reduce); NCCL's
// ring, nccl-tests doc/PERFORMANCE.md):
//   all-reduce      = reduce-scatter + all-gather: 2(n-1) steps of S/n
//                     t = 2(n-1) (alpha + S/(n B)) + (n-1) S/(n gamma)
//   reduce-scatter  = (n-1) (alpha + S/(n B)) + (n-1) S/(n gamma)
//   all-gather      = (n-1) (alpha + S/(n B))
//   broadcast       = pipelined chain from the root along the ring, C chunks:
//                     t = (n-1 + C-1) (alpha + S/(C B))   (the pipeline of detail::Cost)
//   reduce          = a pipelined chain round the ring from the rank after the root to the
//                     root, each rank adding its data to every chunk it forwards (NCCL's ring
//                     reduce, src/device/reduce.h: the ring ends at the root; busbw = algbw,
//                     nccl-tests doc/PERFORMANCE.md): t = (n-1 + C-1) (alpha + S/(C B) + S/(C gamma))
// ring-bidir runs two rings in opposite directions, each on half the data (NCCL builds
// several rings per node, alternating direction, to use both directions of every link):
//   all-reduce      = 2(n-1) (alpha + S/(2n B)) + (n-1) S/(n gamma), B over both directions.
// alpha and B come from detail::step_hop over one step of the ring (route latency + step
// overhead; bottleneck bandwidth, split when a rank's two sends share its port).
// Ring order: Topology::ring_order restricted to the group.
#include <fmt/format.h>

#include "models/collectives/detail.hpp"

namespace shardsim::coll::detail {
namespace {

using U = std::uint32_t;

double size_of(const CollectiveOp& op) { return static_cast<double>(op.size_bytes); }

class Ring final : public Algorithm {
 public:
  explicit Ring(bool bidir) : bidir_(bidir) {}
  [[nodiscard]] std::string name() const override { return bidir_ ? "ring-bidir" : "ring"; }
  [[nodiscard]] std::string description() const override {
    return bidir_ ? "two rings in opposite directions, each on half the data (both directions of every link)"
                  : "unidirectional ring: reduce-scatter + all-gather in 2(n-1) steps of S/n; broadcast and "
                    "reduce as a pipelined chain";
  }
  [[nodiscard]] std::vector<OpKind> ops() const override {
    if (bidir_) return {OpKind::allreduce, OpKind::reducescatter, OpKind::allgather};
    return {OpKind::allreduce, OpKind::reducescatter, OpKind::allgather, OpKind::broadcast, OpKind::reduce};
  }
  [[nodiscard]] std::vector<ParamInfo> params() const override {
    if (bidir_) return {};
    return {{"chunks", "int", "", "0",
             "broadcast and reduce pipelining pieces (0: ceil(S / 1 MiB), at most 64); ignored by the other ops, "
             "whose ring steps already pipeline"}};
  }
  [[nodiscard]] std::optional<std::string> unsupported(const topo::Topology& t,
                                                       const CollectiveOp& op) const override {
    validate_op(t, op);
    return std::nullopt;
  }

  [[nodiscard]] Schedule build(const topo::Topology& t, const CollectiveOp& op,
                               const CostParams& p) const override {
    validate_op(t, op);
    Schedule s;
    s.algorithm = name();
    s.ranks = op.group.size();
    const std::size_t n = op.group.size();
    if (n < 2) return s;
    const auto ring = ring_of(t, op);
    const double S = size_of(op), nn = static_cast<double>(n);
    const U rep = static_cast<U>(n - 1);
    if (is_chain(op)) {
      s.chunks = pipeline_chunks(op, p);
      for (const auto& x : ring_chain(ring, op)) {
        Step st;
        st.transfers.push_back(xfer(x.first, x.second, S));
        st.reduce_bytes = op.kind == OpKind::reduce ? S : 0.0;
        st.label = op.kind == OpKind::reduce ? "chain-reduce" : "chain";
        s.steps.push_back(std::move(st));
      }
      return s;
    }
    auto phase = [&](bool reduce, const char* label) {
      if (bidir_ && n > 2) {
        Step st = ring_step(ring, +1, S / (2 * nn), reduce ? S / nn : 0.0, rep, label);
        merge_into(st, ring_step(ring, -1, S / (2 * nn), 0.0, rep, label));
        s.steps.push_back(std::move(st));
      } else {
        s.steps.push_back(ring_step(ring, +1, S / nn, reduce ? S / nn : 0.0, rep, label));
      }
    };
    if (op.kind != OpKind::allgather) phase(true, "reduce-scatter");
    if (op.kind != OpKind::reducescatter) phase(false, "all-gather");
    return s;
  }

  [[nodiscard]] AnalyticalCost analytical(const topo::Topology& t, const CollectiveOp& op,
                                          const CostParams& p) const override {
    validate_op(t, op);
    Cost c(p);
    const std::size_t n = op.group.size();
    if (n < 2) return c.done("n = 1: nothing to do");
    const auto ring = ring_of(t, op);
    const double S = size_of(op), nn = static_cast<double>(n);
    if (is_chain(op)) {
      const bool red = op.kind == OpKind::reduce;
      const U C = pipeline_chunks(op, p);
      std::vector<Cost::Stage> stages;
      std::vector<Transfer> all;
      for (const auto& x : ring_chain(ring, op)) {
        stages.push_back({step_hop(t, op, {xfer(x.first, x.second, S)}, p), S, red ? S : 0.0});
        all.push_back(xfer(x.first, x.second, S));
      }
      c.pipeline(stages, C);
      const Hop h = step_hop(t, op, all, p);
      return c.done(fmt::format("(n-1 + C-1) (alpha + S/(C B){}) with n = {}, C = {}, alpha = {}, B = {}, S = {} B",
                                red ? " + S/(C gamma)" : "", n, C, fs(h.alpha_s), fbw(h.bw_Bps), op.size_bytes));
    }
    const bool two = bidir_ && n > 2;
    Step st = ring_step(ring, +1, 0, 0, 1, "");
    if (two) merge_into(st, ring_step(ring, -1, 0, 0, 1, ""));
    const Hop h = step_hop(t, op, st.transfers, p);
    const double piece = two ? S / (2 * nn) : S / nn;
    const double steps = op.kind == OpKind::allreduce ? 2.0 * (nn - 1) : nn - 1;
    const double red_steps = op.kind == OpKind::allgather ? 0.0 : nn - 1;
    c.steps(steps, h, piece, 0);
    c.steps(red_steps, Hop{0, h.bw_Bps, 0, 0}, 0, S / nn);
    const char* shape = op.kind == OpKind::allreduce ? "2(n-1)" : "(n-1)";
    return c.done(fmt::format("{} (alpha + S/({}n B)){} with n = {}, alpha = {}, B = {}, S = {} B", shape,
                              two ? "2" : "", red_steps > 0 ? " + (n-1) S/(n gamma)" : "", n, fs(h.alpha_s),
                              fbw(h.bw_Bps), op.size_bytes));
  }

  [[nodiscard]] DataPlan data_plan(const topo::Topology& t, const CollectiveOp& op) const override {
    validate_op(t, op);
    DataPlan d;
    const std::size_t n = op.group.size();
    const auto ring = ring_of(t, op);
    if (is_chain(op)) {
      d.units = 1;
      d.owner = {static_cast<U>(op.root)};
      for (const auto& x : ring_chain(ring, op)) {
        d.steps.push_back({PlanTransfer{x.first, x.second, {0}, op.kind == OpKind::reduce}});
      }
      return d;
    }
    const bool two = bidir_ && n > 2;
    d.units = static_cast<U>(two ? 2 * n : n);
    for (U u = 0; u < d.units; ++u) d.owner.push_back(u % static_cast<U>(n));
    if (n < 2) return d;
    auto at = [&](std::size_t p, std::ptrdiff_t off) {
      const auto nn = static_cast<std::ptrdiff_t>(n);
      return ring[static_cast<std::size_t>(((static_cast<std::ptrdiff_t>(p) + off) % nn + nn) % nn)];
    };
    // Unit of ring position q (clockwise half) is ring[q]; the counter-clockwise half is n + ring[q].
    auto phase = [&](bool reduce) {
      for (std::size_t s = 0; s + 1 < n; ++s) {
        const auto ss = static_cast<std::ptrdiff_t>(s);
        std::vector<PlanTransfer> step;
        for (std::size_t q = 0; q < n; ++q) {
          const U cw = reduce ? at(q, -ss - 1) : at(q, -ss);
          step.push_back(PlanTransfer{ring[q], at(q, 1), {cw}, reduce});
        }
        if (two) {
          for (std::size_t q = 0; q < n; ++q) {
            const U ccw = reduce ? at(q, ss + 1) : at(q, ss);
            step.push_back(PlanTransfer{ring[q], at(q, -1), {static_cast<U>(n) + ccw}, reduce});
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
  // Broadcast and reduce run as a pipelined chain (detail::ring_chain).
  static bool is_chain(const CollectiveOp& op) { return op.kind == OpKind::broadcast || op.kind == OpKind::reduce; }
  bool bidir_;
};

}  // namespace

std::unique_ptr<Algorithm> make_ring() { return std::make_unique<Ring>(false); }
std::unique_ptr<Algorithm> make_ring_bidir() { return std::make_unique<Ring>(true); }

}  // namespace shardsim::coll::detail
