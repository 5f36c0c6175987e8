// The algorithm registry, the bandwidth lower bound, the automatic choice and the helpers
// every algorithm shares (detail.hpp).
#include "models/collectives/algorithm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "models/collectives/detail.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"

namespace shardsim::coll {

namespace detail {

std::vector<std::uint32_t> ring_of(const topo::Topology& t, const CollectiveOp& op,
                                   const std::vector<std::uint32_t>& members) {
  if (t.ring_order.empty()) return members;
  // Position of each device in the topology's ring; members sorted by it (stable, so members
  // the ring does not mention keep their given order, after the others).
  std::vector<std::size_t> pos(t.num_devices(), t.ring_order.size());
  for (std::size_t i = 0; i < t.ring_order.size(); ++i) {
    const auto d = static_cast<std::size_t>(t.ring_order[i]);
    if (d < pos.size()) pos[d] = i;
  }
  std::vector<std::uint32_t> out = members;
  std::stable_sort(out.begin(), out.end(), [&](std::uint32_t a, std::uint32_t b) {
    return pos[static_cast<std::size_t>(op.group[a])] < pos[static_cast<std::size_t>(op.group[b])];
  });
  return out;
}

std::vector<std::uint32_t> ring_of(const topo::Topology& t, const CollectiveOp& op) {
  std::vector<std::uint32_t> all(op.group.size());
  for (std::uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  return ring_of(t, op, all);
}

const topo::Route& route_of(const topo::Topology& t, const CollectiveOp& op, const Transfer& x) {
  const topo::NodeId a = x.src_is_node ? x.src : t.device(static_cast<std::size_t>(op.group[x.src]));
  const topo::NodeId b = x.dst_is_node ? x.dst : t.device(static_cast<std::size_t>(op.group[x.dst]));
  return t.route(a, b);
}

Hop step_hop(const topo::Topology& t, const CollectiveOp& op, const std::vector<Transfer>& transfers,
             const CostParams& p) {
  // Endpoint keys: group ranks as themselves, switch nodes offset past every rank.
  const std::uint64_t n = op.group.size();
  auto key = [n](std::uint32_t e, bool node) { return node ? n + e : std::uint64_t{e}; };
  std::unordered_map<std::uint64_t, std::uint32_t> by_src, by_dst;  // (link, endpoint) -> count
  auto lk = [](topo::LinkId l, std::uint64_t e) { return (std::uint64_t{l} << 32) ^ e; };
  for (const auto& x : transfers) {
    if (!x.src_is_node && !x.dst_is_node && x.src == x.dst) continue;
    for (topo::LinkId l : route_of(t, op, x).links) {
      ++by_src[lk(l, key(x.src, x.src_is_node))];
      ++by_dst[lk(l, key(x.dst, x.dst_is_node))];
    }
  }
  Hop h;
  for (const auto& x : transfers) {
    if (!x.src_is_node && !x.dst_is_node && x.src == x.dst) continue;
    const auto& r = route_of(t, op, x);
    h.latency_s = std::max(h.latency_s, r.latency_s);
    for (topo::LinkId l : r.links) {
      const std::uint32_t share = std::max(by_src[lk(l, key(x.src, x.src_is_node))],
                                           by_dst[lk(l, key(x.dst, x.dst_is_node))]);
      h.bw_Bps = std::min(h.bw_Bps, t.link(l).bandwidth_Bps / share);
    }
    ++h.pairs;
  }
  h.alpha_s = h.latency_s + p.step_overhead_s;
  return h;
}

double gamma_s(double bytes, double reduce_Bps) {
  return std::isfinite(reduce_Bps) && bytes > 0 ? bytes / reduce_Bps : 0.0;
}

void Cost::steps(double count, const Hop& h, double bytes, double reduce_bytes) {
  if (count <= 0) return;
  c.latency_s += count * h.alpha_s;
  if (bytes > 0) c.bandwidth_s += count * bytes / h.bw_Bps;
  c.reduce_s += count * gamma_s(reduce_bytes, reduce_Bps);
}

void Cost::pipeline(const std::vector<Stage>& stages, std::uint32_t chunks) {
  const double C = std::max<std::uint32_t>(1, chunks);
  double worst = -1;
  AnalyticalCost w;  // terms of the slowest stage
  for (const auto& s : stages) {
    const double a = s.hop.alpha_s;
    const double b = s.bytes > 0 ? s.bytes / C / s.hop.bw_Bps : 0.0;
    const double g = gamma_s(s.reduce_bytes / C, reduce_Bps);
    c.latency_s += a;
    c.bandwidth_s += b;
    c.reduce_s += g;
    if (a + b + g > worst) {
      worst = a + b + g;
      w.latency_s = a;
      w.bandwidth_s = b;
      w.reduce_s = g;
    }
  }
  if (worst < 0) return;
  c.latency_s += (C - 1) * w.latency_s;
  c.bandwidth_s += (C - 1) * w.bandwidth_s;
  c.reduce_s += (C - 1) * w.reduce_s;
}

AnalyticalCost Cost::done(std::string formula) {
  c.time_s = c.latency_s + c.bandwidth_s + c.reduce_s;
  c.formula = std::move(formula);
  return c;
}

Transfer xfer(std::uint32_t src, std::uint32_t dst, double bytes) {
  Transfer x;
  x.src = src;
  x.dst = dst;
  x.bytes = bytes;
  return x;
}

Step ring_step(const std::vector<std::uint32_t>& ring, int dir, double bytes, double reduce_bytes,
               std::uint32_t repeat, std::string label) {
  Step s;
  const std::size_t n = ring.size();
  s.transfers.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = dir > 0 ? (i + 1) % n : (i + n - 1) % n;
    s.transfers.push_back(xfer(ring[i], ring[j], bytes));
  }
  s.reduce_bytes = reduce_bytes;
  s.repeat = repeat;
  s.label = std::move(label);
  return s;
}

void merge_into(Step& a, const Step& b) {
  a.transfers.insert(a.transfers.end(), b.transfers.begin(), b.transfers.end());
  a.reduce_bytes += b.reduce_bytes;
}

std::string fs(double seconds) { return units::format_seconds(seconds); }
std::string fbw(double Bps) { return units::format_rate(Bps); }

std::uint32_t pipeline_chunks(const CollectiveOp& op, const CostParams& p) {
  if (p.chunks > 0) return p.chunks;
  constexpr std::uint64_t kChunk = 1 << 20;
  const std::uint64_t c = (op.size_bytes + kChunk - 1) / kChunk;
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(c, 1, 64));
}

bool is_power_of_two(std::size_t n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace detail

const std::vector<std::unique_ptr<Algorithm>>& algorithms() {
  static const std::vector<std::unique_ptr<Algorithm>> all = [] {
    std::vector<std::unique_ptr<Algorithm>> v;
    v.push_back(detail::make_ring());
    v.push_back(detail::make_ring_bidir());
    v.push_back(detail::make_torus());
    v.push_back(detail::make_hierarchical());
    v.push_back(detail::make_double_binary_tree());
    v.push_back(detail::make_rabenseifner());
    v.push_back(detail::make_direct());
    v.push_back(detail::make_in_network());
    return v;
  }();
  return all;
}

namespace {
bool implements(const Algorithm& a, OpKind k) {
  const auto ops = a.ops();
  return std::find(ops.begin(), ops.end(), k) != ops.end();
}
std::string names_for(OpKind k) {
  std::string s;
  for (const auto& a : algorithms()) {
    if (implements(*a, k)) s += (s.empty() ? "" : ", ") + a->name();
  }
  return s;
}
}  // namespace

const Algorithm& find_algorithm(const std::string& name, OpKind op, const std::string& where) {
  for (const auto& a : algorithms()) {
    if (a->name() != name) continue;
    if (implements(*a, op)) return *a;
    throw ConfigError(where, fmt::format("algorithm '{}' does not implement {}", name, to_string(op)),
                      "one of " + names_for(op));
  }
  throw ConfigError(where, fmt::format("unknown algorithm '{}' for {}", name, to_string(op)),
                    "one of " + names_for(op));
}

void validate_op(const topo::Topology& t, const CollectiveOp& op) {
  const std::string where = "collective group";
  if (op.group.empty()) throw ConfigError(where, "an empty group", "at least one rank");
  std::vector<char> seen(t.num_devices(), 0);
  for (int r : op.group) {
    if (r < 0 || static_cast<std::size_t>(r) >= t.num_devices()) {
      throw ConfigError(where, fmt::format("rank {}", r),
                        fmt::format("ranks 0..{} of topology '{}'", t.num_devices() - 1, t.name));
    }
    if (seen[static_cast<std::size_t>(r)]) throw ConfigError(where, fmt::format("rank {} twice", r), "distinct ranks");
    seen[static_cast<std::size_t>(r)] = 1;
  }
  if (op.root < 0 || static_cast<std::size_t>(op.root) >= op.group.size()) {
    throw ConfigError(where, fmt::format("root {}", op.root),
                      fmt::format("a group index in 0..{}", op.group.size() - 1));
  }
}

double lower_bound_s(const topo::Topology& t, const CollectiveOp& op) {
  validate_op(t, op);
  const std::size_t n = op.group.size();
  if (n < 2) return 0;
  double inj = std::numeric_limits<double>::infinity();
  for (int r : op.group) inj = std::min(inj, t.injection_Bps(t.device(static_cast<std::size_t>(r))));
  const double S = static_cast<double>(op.size_bytes);
  bool inr = false;
  for (const auto& node : t.nodes()) inr = inr || (node.kind == topo::NodeKind::switch_node && node.in_network_reduction);
  switch (op.kind) {
    case OpKind::allreduce: return (inr ? 1.0 : busbw_factor(op.kind, n)) * S / inj;
    case OpKind::reducescatter:
    case OpKind::allgather:
    case OpKind::alltoall: return busbw_factor(op.kind, n) * S / inj;
    case OpKind::broadcast:
    case OpKind::reduce: return S / inj;
  }
  return 0;
}

AutoChoice choose_auto(const topo::Topology& t, const CollectiveOp& op, const CostParams& p, bool flow_only) {
  validate_op(t, op);
  AutoChoice best;
  std::vector<std::pair<std::string, std::string>> lines;  // name, "time" or "n/a (...)"
  std::size_t chosen = 0;
  for (const auto& a : algorithms()) {
    if (!implements(*a, op.kind)) continue;
    if (auto why = a->unsupported(t, op)) {
      lines.emplace_back(a->name(), fmt::format("n/a ({})", *why));
      continue;
    }
    // direct sends n(n-1) concurrent transfers whose sharing of links between ranks only the
    // flow model sees; its closed form is optimistic wherever paths are shared, so auto uses
    // it only for all-to-all and broadcast (where it is the natural choice).
    if (flow_only && a->name() == "in-network") {
      lines.emplace_back(a->name(), "not considered (the flow evaluator has no switch endpoints)");
      continue;
    }
    if (a->name() == "direct" && op.kind != OpKind::alltoall && op.kind != OpKind::broadcast) {
      lines.emplace_back(a->name(), "not considered (contention its closed form ignores)");
      continue;
    }
    auto c = a->analytical(t, op, p);
    lines.emplace_back(a->name(), detail::fs(c.time_s));
    if (best.algorithm == nullptr || c.time_s < best.cost.time_s) {
      best.algorithm = a.get();
      best.cost = std::move(c);
      chosen = lines.size() - 1;
    }
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    best.why += fmt::format("{}{}: {}{}", i ? ", " : "", lines[i].first, lines[i].second,
                            best.algorithm && i == chosen ? " (chosen)" : "");
  }
  if (best.algorithm == nullptr) {
    throw ConfigError("algorithm auto", fmt::format("no algorithm applies to {} here: {}", to_string(op.kind), best.why),
                      "a topology and group one of them supports");
  }
  return best;
}

}  // namespace shardsim::coll
