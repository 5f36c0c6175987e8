// Direct algorithms: every rank talks to every other at once (Thakur, Rabenseifner and Gropp
// 2005, sec. 4.1 for the all-to-all's concurrent sends; NCCL's all-to-all is the same set of
// point-to-point sends). One step each:
//   reduce-scatter  every rank sends S/n to each peer, reduces (n-1) S/n:
//                   t = alpha + (n-1) S/(n B_port) + (n-1) S/(n gamma)
//   all-gather      every rank sends its S/n to each peer: alpha + (n-1) S/(n B_port)
//   all-reduce      reduce-scatter then all-gather (2 steps)
//   all-to-all     every rank sends S/n to each peer: alpha + (n-1) S/(n B_port)
//   broadcast       the root sends S to each peer: alpha + (n-1) S / B_port(root)
//   sendrecv        every rank sends S to the next rank of the group (nccl-tests
//                   sendrecv_perf's ring shift): alpha + S / B_port
// B_port: detail::step_hop splits a link among the transfers of one source (or one
// destination) that cross it, so on a star it is the port bandwidth divided by n-1 and the
// forms above follow; sharing inside the network (multi-hop routes of different pairs) is
// not counted, so on tori and oversubscribed trees the form is optimistic.
// Size: n(n-1) transfers per step; limited to 1024 ranks.
#include <fmt/format.h>

#include "models/collectives/detail.hpp"

namespace shardsim::coll::detail {
namespace {

using U = std::uint32_t;
constexpr std::size_t kMaxRanks = 1024;

class Direct final : public Algorithm {
 public:
  [[nodiscard]] std::string name() const override { return "direct"; }
  [[nodiscard]] std::string description() const override {
    return "every rank sends its piece straight to every other in one step (all-to-all, RS, AG, AR, broadcast; "
           "sendrecv: to the next rank)";
  }
  [[nodiscard]] std::vector<OpKind> ops() const override {
    return {OpKind::allreduce, OpKind::reducescatter, OpKind::allgather, OpKind::alltoall, OpKind::broadcast,
            OpKind::sendrecv};
  }
  [[nodiscard]] std::optional<std::string> unsupported(const topo::Topology& t,
                                                       const CollectiveOp& op) const override {
    validate_op(t, op);
    if (op.group.size() > kMaxRanks) {
      return fmt::format("n = {} needs {} transfers per step; direct is limited to {} ranks", op.group.size(),
                         op.group.size() * (op.group.size() - 1), kMaxRanks);
    }
    return std::nullopt;
  }

  [[nodiscard]] Schedule build(const topo::Topology& t, const CollectiveOp& op, const CostParams&) const override {
    require(t, op);
    Schedule s;
    s.algorithm = name();
    s.ranks = op.group.size();
    s.steps = steps(op);
    return s;
  }

  [[nodiscard]] AnalyticalCost analytical(const topo::Topology& t, const CollectiveOp& op,
                                          const CostParams& p) const override {
    require(t, op);
    Cost c(p);
    std::string terms;
    for (const auto& st : steps(op)) {
      const Hop h = step_hop(t, op, st.transfers, p);
      // Every transfer gets h.bw_Bps (its share of the port); a rank's n-1 run side by side.
      c.steps(1, h, st.transfers.front().bytes, st.reduce_bytes);
      terms += fmt::format("{}{}: alpha {} + {} B / {}", terms.empty() ? "" : " + ", st.label, fs(h.alpha_s),
                           st.transfers.front().bytes, fbw(h.bw_Bps));
    }
    return c.done(fmt::format("alpha + (n-1) S/(n B_port) per step, B_port = link / sends sharing it: {}",
                              terms.empty() ? "nothing to do" : terms));
  }

  [[nodiscard]] DataPlan data_plan(const topo::Topology& t, const CollectiveOp& op) const override {
    require(t, op);
    const auto n = static_cast<U>(op.group.size());
    DataPlan d;
    if (op.kind == OpKind::broadcast) {
      d.units = 1;
      d.owner = {static_cast<U>(op.root)};
      std::vector<PlanTransfer> st;
      for (U r = 0; r < n; ++r) {
        if (r != static_cast<U>(op.root)) st.push_back({static_cast<U>(op.root), r, {0}, false});
      }
      if (n > 1) d.steps.push_back(std::move(st));
      return d;
    }
    if (op.kind == OpKind::sendrecv) {
      // Unit r: rank r's buffer, which rank r + 1 must end with (a copy; the checker's
      // all-to-all-like ownership: unit u is needed by its owner's successor).
      d.units = n;
      for (U u = 0; u < n; ++u) d.owner.push_back(u);
      std::vector<PlanTransfer> st;
      for (U a = 0; a < n; ++a) st.push_back({a, (a + 1) % n, {a}, false});
      if (n > 1) d.steps.push_back(std::move(st));
      return d;
    }
    if (op.kind == OpKind::alltoall) {
      // Unit a*n + b: what rank a holds for rank b.
      d.units = n * n;
      for (U u = 0; u < d.units; ++u) d.owner.push_back(u / n);
      std::vector<PlanTransfer> st;
      for (U a = 0; a < n; ++a) {
        for (U b = 0; b < n; ++b) {
          if (a != b) st.push_back({a, b, {a * n + b}, false});
        }
      }
      if (n > 1) d.steps.push_back(std::move(st));
      return d;
    }
    d.units = n;
    for (U u = 0; u < n; ++u) d.owner.push_back(u);
    if (n < 2) return d;
    if (op.kind != OpKind::allgather) {
      std::vector<PlanTransfer> st;
      for (U a = 0; a < n; ++a) {
        for (U b = 0; b < n; ++b) {
          if (a != b) st.push_back({a, b, {b}, true});
        }
      }
      d.steps.push_back(std::move(st));
    }
    if (op.kind != OpKind::reducescatter) {
      std::vector<PlanTransfer> st;
      for (U a = 0; a < n; ++a) {
        for (U b = 0; b < n; ++b) {
          if (a != b) st.push_back({a, b, {a}, false});
        }
      }
      d.steps.push_back(std::move(st));
    }
    return d;
  }

 private:
  void require(const topo::Topology& t, const CollectiveOp& op) const {
    if (auto why = unsupported(t, op)) throw ConfigError("algorithm direct", *why, "a smaller group");
  }

  static std::vector<Step> steps(const CollectiveOp& op) {
    std::vector<Step> out;
    const auto n = static_cast<U>(op.group.size());
    if (n < 2) return out;
    const double S = static_cast<double>(op.size_bytes), nn = n;
    auto all_pairs = [&](double bytes, double reduce, const char* label) {
      Step st;
      st.transfers.reserve(static_cast<std::size_t>(n) * (n - 1));
      for (U a = 0; a < n; ++a) {
        for (U b = 0; b < n; ++b) {
          if (a != b) st.transfers.push_back(xfer(a, b, bytes));
        }
      }
      st.reduce_bytes = reduce;
      st.label = label;
      return st;
    };
    switch (op.kind) {
      case OpKind::broadcast: {
        Step st;
        for (U r = 0; r < n; ++r) {
          if (r != static_cast<U>(op.root)) st.transfers.push_back(xfer(static_cast<U>(op.root), r, S));
        }
        st.label = "broadcast";
        out.push_back(std::move(st));
        break;
      }
      case OpKind::alltoall: out.push_back(all_pairs(S / nn, 0, "all-to-all")); break;
      case OpKind::sendrecv: {
        Step st;
        for (U a = 0; a < n; ++a) st.transfers.push_back(xfer(a, (a + 1) % n, S));
        st.label = "sendrecv";
        out.push_back(std::move(st));
        break;
      }
      case OpKind::reducescatter: out.push_back(all_pairs(S / nn, (nn - 1) * S / nn, "reduce-scatter")); break;
      case OpKind::allgather: out.push_back(all_pairs(S / nn, 0, "all-gather")); break;
      case OpKind::allreduce:
        out.push_back(all_pairs(S / nn, (nn - 1) * S / nn, "reduce-scatter"));
        out.push_back(all_pairs(S / nn, 0, "all-gather"));
        break;
      case OpKind::reduce: break;
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_direct() { return std::make_unique<Direct>(); }

}  // namespace shardsim::coll::detail
