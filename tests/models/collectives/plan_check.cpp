#include "plan_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

namespace shardsim::coll::test {

CollectiveOp make_op(OpKind k, std::size_t n, double S) {
  CollectiveOp op;
  op.kind = k;
  op.size_bytes = static_cast<std::uint64_t>(S);
  op.group.resize(n);
  std::iota(op.group.begin(), op.group.end(), 0);
  return op;
}

std::vector<double> sent_per_rank(const Schedule& s) {
  std::vector<double> out(s.ranks, 0);
  for (const auto& st : s.steps) {
    for (const auto& x : st.transfers) {
      if (!x.src_is_node) out[x.src] += x.bytes * st.repeat;
    }
  }
  return out;
}

namespace {
using Key = std::tuple<std::uint32_t, std::uint32_t, bool, bool>;
bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)}); }
}  // namespace

std::string check_plan(const CollectiveOp& op, const DataPlan& plan, const Schedule& s) {
  const std::size_t n = op.group.size();
  if (n > 64) return "checker handles at most 64 ranks";
  if (plan.owner.size() != plan.units) return "owner size differs from units";
  const std::uint64_t full = n == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1;
  // A unit is S / units bytes, except for all-to-all: unit a*n + b is what rank a sends to
  // rank b, S/n bytes (a rank's buffer holds n of the n^2 units); and for sendrecv: unit r is
  // rank r's whole buffer, S bytes.
  const double unit_bytes = op.kind == OpKind::alltoall   ? static_cast<double>(op.size_bytes) / static_cast<double>(n)
                            : op.kind == OpKind::sendrecv ? static_cast<double>(op.size_bytes)
                                                          : static_cast<double>(op.size_bytes) / plan.units;
  // Participants: ranks 0..n-1, then switch nodes as they appear.
  std::map<std::uint32_t, std::size_t> nodes;
  auto who = [&](std::uint32_t e, bool node) -> std::size_t {
    if (!node) return e;
    auto it = nodes.find(e);
    if (it != nodes.end()) return it->second;
    return nodes[e] = n + nodes.size();
  };
  for (const auto& st : plan.steps) {
    for (const auto& x : st) {
      who(x.src, x.src_is_node);
      who(x.dst, x.dst_is_node);
    }
  }
  std::vector<std::vector<std::uint64_t>> holds(n + nodes.size(), std::vector<std::uint64_t>(plan.units, 0));
  for (std::uint32_t u = 0; u < plan.units; ++u) {
    switch (op.kind) {
      case OpKind::allreduce:
      case OpKind::reducescatter:
      case OpKind::reduce:
        for (std::size_t r = 0; r < n; ++r) holds[r][u] = std::uint64_t{1} << r;
        break;
      default: holds[plan.owner[u]][u] = full;
    }
  }
  // Unrolled schedule steps.
  std::vector<const Step*> unrolled;
  for (const auto& st : s.steps) {
    for (std::uint32_t k = 0; k < st.repeat; ++k) unrolled.push_back(&st);
  }
  if (unrolled.size() != plan.steps.size()) {
    return fmt::format("schedule has {} steps, plan {}", unrolled.size(), plan.steps.size());
  }
  for (std::size_t k = 0; k < plan.steps.size(); ++k) {
    const auto& pst = plan.steps[k];
    const Step& sst = *unrolled[k];
    // Same transfers and bytes.
    std::vector<std::pair<Key, double>> a, b;
    for (const auto& x : pst) a.push_back({Key{x.src, x.dst, x.src_is_node, x.dst_is_node}, static_cast<double>(x.units.size()) * unit_bytes});
    for (const auto& x : sst.transfers) b.push_back({Key{x.src, x.dst, x.src_is_node, x.dst_is_node}, x.bytes});
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a.size() != b.size()) return fmt::format("step {}: plan has {} transfers, schedule {}", k, a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i].first != b[i].first || !close(a[i].second, b[i].second)) {
        return fmt::format("step {}: plan transfer {}->{} of {} B, schedule {}->{} of {} B", k, std::get<0>(a[i].first),
                           std::get<1>(a[i].first), a[i].second, std::get<0>(b[i].first), std::get<1>(b[i].first),
                           b[i].second);
      }
    }
    // Symbolic run: senders read the state before the step.
    const auto before = holds;
    std::vector<double> reduced(n, 0);
    for (const auto& x : pst) {
      const std::size_t src = who(x.src, x.src_is_node), dst = who(x.dst, x.dst_is_node);
      for (std::uint32_t u : x.units) {
        const std::uint64_t v = before[src][u];
        if (v == 0) return fmt::format("step {}: {} sends unit {} it does not hold", k, x.src, u);
        if (x.reduce) {
          if (holds[dst][u] & v) return fmt::format("step {}: unit {} reduced twice into {}", k, u, x.dst);
          holds[dst][u] |= v;
          if (!x.dst_is_node) reduced[x.dst] += unit_bytes;
        } else {
          holds[dst][u] = v;
        }
      }
    }
    const double most = *std::max_element(reduced.begin(), reduced.end());
    if (!close(most, sst.reduce_bytes)) {
      return fmt::format("step {}: reduce_bytes {} but a rank reduces up to {} B", k, sst.reduce_bytes, most);
    }
  }
  for (std::uint32_t u = 0; u < plan.units; ++u) {
    for (std::size_t r = 0; r < n; ++r) {
      bool need = true;
      if (op.kind == OpKind::reducescatter) need = plan.owner[u] == r;
      if (op.kind == OpKind::reduce) need = r == static_cast<std::size_t>(op.root);
      if (op.kind == OpKind::sendrecv) need = r == (plan.owner[u] + 1) % n;
      if (op.kind == OpKind::alltoall) need = u % n == r;
      if (need && holds[r][u] != full) {
        return fmt::format("rank {} ends with unit {} incomplete (mask {:#x})", r, u, holds[r][u]);
      }
    }
  }
  return "";
}

}  // namespace shardsim::coll::test
