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
  if (t.ring_order().empty()) return members;
  // Position of each device in the topology's ring; members sorted by it (stable, so members
  // the ring does not mention keep their given order, after the others).
  std::vector<std::size_t> pos(t.num_devices(), t.ring_order().size());
  for (std::size_t i = 0; i < t.ring_order().size(); ++i) {
    const auto d = static_cast<std::size_t>(t.ring_order()[i]);
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

namespace {

// step_hop without the cache.
Hop compute_hop(const topo::Topology& t, const CollectiveOp& op, const std::vector<Transfer>& transfers,
                const CostParams& p) {
  Hop h;
  auto self = [](const Transfer& x) { return !x.src_is_node && !x.dst_is_node && x.src == x.dst; };
  if (transfers.size() == 1) {  // one transfer: no sharing, the route's own figures
    if (!self(transfers.front())) {
      const auto& r = route_of(t, op, transfers.front());
      h.latency_s = r.latency_s;
      h.bw_Bps = r.bottleneck_Bps;
      h.pairs = 1;
    }
    h.alpha_s = h.latency_s + p.step_overhead_s;
    return h;
  }
  // When no endpoint sends twice and none receives twice (ring, halving-doubling and tree
  // steps), every share below is 1: B is the smallest link bandwidth on any route.
  const std::uint64_t n = op.group.size();
  auto key = [n](std::uint32_t e, bool node) { return node ? n + e : std::uint64_t{e}; };
  {
    thread_local std::vector<std::uint32_t> sent, recv;
    thread_local std::uint32_t stamp = 0;
    const std::size_t keys = n + t.num_nodes();
    if (sent.size() < keys) {
      sent.assign(keys, 0);
      recv.assign(keys, 0);
      stamp = 0;
    }
    if (++stamp == 0) {  // wrapped: clear the stamps
      std::fill(sent.begin(), sent.end(), 0);
      std::fill(recv.begin(), recv.end(), 0);
      stamp = 1;
    }
    bool permutation = true;
    for (const auto& x : transfers) {
      if (self(x)) continue;
      auto& s = sent[key(x.src, x.src_is_node)];
      auto& d = recv[key(x.dst, x.dst_is_node)];
      if (s == stamp || d == stamp) {
        permutation = false;
        break;
      }
      s = d = stamp;
    }
    if (permutation) {
      for (const auto& x : transfers) {
        if (self(x)) continue;
        const auto& r = route_of(t, op, x);
        h.latency_s = std::max(h.latency_s, r.latency_s);
        h.bw_Bps = std::min(h.bw_Bps, r.bottleneck_Bps);
        ++h.pairs;
      }
      h.alpha_s = h.latency_s + p.step_overhead_s;
      return h;
    }
  }
  // General case: a transfer's share of link l is the larger of the number of the step's
  // transfers from its source that cross l and the number to its destination that cross l.
  // Group the transfers by source (then by destination) with one sort of (endpoint, index)
  // keys; within a group (a rank's few concurrent sends) compare routes directly.
  thread_local std::vector<std::uint64_t> order;
  thread_local std::vector<std::uint32_t> share;  // per (transfer, route position)
  thread_local std::vector<std::uint32_t> first;  // per transfer: offset into share
  thread_local std::vector<const topo::Route*> routes;
  const auto m = static_cast<std::uint32_t>(transfers.size());
  routes.assign(m, nullptr);
  first.assign(m + 1, 0);
  for (std::uint32_t i = 0; i < m; ++i) {
    if (!self(transfers[i])) routes[i] = &route_of(t, op, transfers[i]);
    first[i + 1] = first[i] + (routes[i] ? static_cast<std::uint32_t>(routes[i]->links.size()) : 0);
  }
  share.assign(first[m], 1);
  for (int side = 0; side < 2; ++side) {
    order.clear();
    for (std::uint32_t i = 0; i < m; ++i) {
      if (!routes[i]) continue;
      const auto& x = transfers[i];
      order.push_back((side == 0 ? key(x.src, x.src_is_node) : key(x.dst, x.dst_is_node)) << 32 | i);
    }
    std::sort(order.begin(), order.end());
    for (std::size_t g = 0; g < order.size();) {
      std::size_t e = g + 1;
      while (e < order.size() && (order[e] >> 32) == (order[g] >> 32)) ++e;
      if (e - g > 1) {
        for (std::size_t a = g; a < e; ++a) {
          const auto i = static_cast<std::uint32_t>(order[a]);
          const auto& li = routes[i]->links;
          for (std::size_t k = 0; k < li.size(); ++k) {
            std::uint32_t c = 0;
            for (std::size_t b = g; b < e; ++b) {
              const auto& lj = routes[static_cast<std::uint32_t>(order[b])]->links;
              c += std::find(lj.begin(), lj.end(), li[k]) != lj.end() ? 1u : 0u;
            }
            share[first[i] + k] = std::max(share[first[i] + k], c);
          }
        }
      }
      g = e;
    }
  }
  for (std::uint32_t i = 0; i < m; ++i) {
    if (!routes[i]) continue;
    const auto& r = *routes[i];
    h.latency_s = std::max(h.latency_s, r.latency_s);
    for (std::size_t k = 0; k < r.links.size(); ++k) {
      h.bw_Bps = std::min(h.bw_Bps, t.link(r.links[k]).bandwidth_Bps / share[first[i] + k]);
    }
    ++h.pairs;
  }
  h.alpha_s = h.latency_s + p.step_overhead_s;
  return h;
}


// A step's Hop depends on the topology, the group and which endpoints the transfers join,
// not on their sizes; the algorithms' closed forms ask for the same patterns at every message
// size and for every op of a training step. Remember recent answers per thread, keyed by
// topology generation and verified against the full group and endpoint lists (no hash-only
// match), so a sweep pays for each pattern once. Cleared when it reaches kMaxEntries.
struct HopKey {
  std::uint64_t generation = 0;
  std::vector<int> group;
  std::vector<std::uint64_t> ends;  // per transfer: src << 32 | dst, top bit = switch node
  bool operator==(const HopKey&) const = default;
};

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {  // boost::hash_combine's 64-bit form
  return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 12) + (h >> 4));
}

}  // namespace

Hop step_hop(const topo::Topology& t, const CollectiveOp& op, const std::vector<Transfer>& transfers,
             const CostParams& p) {
  constexpr std::size_t kMaxEntries = 4096;
  thread_local std::unordered_map<std::uint64_t, std::vector<std::pair<HopKey, Hop>>> cache;
  thread_local std::size_t entries = 0;
  thread_local HopKey key;
  key.generation = t.generation();
  key.ends.clear();
  std::uint64_t h = mix(t.generation(), op.group.size());
  for (int g : op.group) h = mix(h, static_cast<std::uint64_t>(g));
  for (const auto& x : transfers) {
    const std::uint64_t e = std::uint64_t{x.src | (x.src_is_node ? 0x80000000u : 0u)} << 32 |
                            (x.dst | (x.dst_is_node ? 0x80000000u : 0u));
    key.ends.push_back(e);
    h = mix(h, e);
  }
  auto& slot = cache[h];
  for (const auto& [k, hop] : slot) {
    if (k.generation == key.generation && k.ends == key.ends && k.group == op.group) {
      Hop out = hop;
      out.alpha_s = out.latency_s + p.step_overhead_s;
      return out;
    }
  }
  CostParams no_overhead = p;
  no_overhead.step_overhead_s = 0;
  Hop out = compute_hop(t, op, transfers, no_overhead);
  if (entries >= kMaxEntries) {
    cache.clear();
    entries = 0;
  }
  key.group = op.group;
  cache[h].emplace_back(key, out);
  ++entries;
  out.alpha_s = out.latency_s + p.step_overhead_s;
  return out;
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

std::vector<std::pair<std::uint32_t, std::uint32_t>> ring_chain(const std::vector<std::uint32_t>& ring,
                                                                 const CollectiveOp& op) {
  const std::size_t n = ring.size();
  std::size_t r = 0;
  while (r < n && ring[r] != static_cast<std::uint32_t>(op.root)) ++r;
  if (op.kind == OpKind::reduce) ++r;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
  for (std::size_t k = 0; k + 1 < n; ++k) out.emplace_back(ring[(r + k) % n], ring[(r + k + 1) % n]);
  return out;
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

ParamInfo pipeline_chunks_param() {
  return {"chunks", "int", "", "0", "pipelining pieces (0: ceil(S / 1 MiB), at most 64)"};
}

bool is_power_of_two(std::size_t n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace detail

const std::vector<std::unique_ptr<Algorithm>>& algorithms() {
  static const std::vector<std::unique_ptr<Algorithm>> all = [] {
    std::vector<std::unique_ptr<Algorithm>> v;
    v.push_back(detail::make_ring());
    v.push_back(detail::make_ring_bidir());
    v.push_back(detail::make_ring_channels());
    v.push_back(detail::make_torus());
    v.push_back(detail::make_hierarchical());
    v.push_back(detail::make_double_binary_tree());
    v.push_back(detail::make_tree_channels());
    v.push_back(detail::make_nvls_tree());
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
std::vector<std::string> names_for(OpKind k) {
  std::vector<std::string> names;
  for (const auto& a : algorithms()) {
    if (implements(*a, k)) names.push_back(a->name());
  }
  return names;
}
}  // namespace

const Algorithm& find_algorithm(const std::string& name, OpKind op, const std::string& where) {
  for (const auto& a : algorithms()) {
    if (a->name() != name) continue;
    if (implements(*a, op)) return *a;
    throw ConfigError(where, fmt::format("algorithm '{}' does not implement {}", name, to_string(op)),
                      one_of(names_for(op)));
  }
  throw ConfigError(where, fmt::format("unknown algorithm '{}' for {}", name, to_string(op)), one_of(names_for(op)));
}

const Registry& algorithm_registry() {
  static const Registry r = [] {
    Registry reg("algorithm", "algorithms", "collective algorithms");
    for (const auto& a : algorithms()) {
      RegistryEntry e{a->name(), a->description(), "", {}};
      for (const auto& p : a->params()) e.params.push_back({p.key, p.type, p.unit, p.default_value, p.doc});
      reg.add(std::move(e));
    }
    return reg;
  }();
  return r;
}

void validate_op(const topo::Topology& t, const CollectiveOp& op) {
  const std::string where = "collective group";
  if (op.group.empty()) throw ConfigError(where, "an empty group", "at least one rank");
  std::vector<char> seen(t.num_devices(), 0);
  for (int r : op.group) {
    if (r < 0 || static_cast<std::size_t>(r) >= t.num_devices()) {
      throw ConfigError(where, fmt::format("rank {}", r),
                        fmt::format("ranks 0..{} of topology '{}'", t.num_devices() - 1, t.name()));
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
    case OpKind::reduce:
    case OpKind::sendrecv: return S / inj;
  }
  return 0;
}

std::vector<int> placed_group(const topo::Topology& t, std::size_t ranks, std::size_t ranks_per_node,
                              const std::string& where) {
  if (ranks_per_node == 0 || ranks % ranks_per_node != 0) {
    throw ConfigError(where, fmt::format("{} ranks per node for {} ranks", ranks_per_node, ranks),
                      "a divisor of the rank count");
  }
  std::vector<std::vector<int>> nodes = t.device_groups();
  if (nodes.empty()) {
    nodes.emplace_back(t.num_devices());
    for (std::size_t i = 0; i < t.num_devices(); ++i) nodes[0][i] = static_cast<int>(i);
  }
  const std::size_t need = ranks / ranks_per_node;
  if (need > nodes.size()) {
    throw ConfigError(where, fmt::format("{} nodes of {} ranks on topology '{}' of {} node{}", need, ranks_per_node, t.name(),
                                         nodes.size(), nodes.size() == 1 ? "" : "s"),
                      fmt::format("at most {} ranks ({} per node)", nodes.size() * ranks_per_node, ranks_per_node));
  }
  std::vector<int> group;
  for (std::size_t k = 0; k < need; ++k) {
    if (nodes[k].size() < ranks_per_node) {
      throw ConfigError(where, fmt::format("{} ranks on node {} of topology '{}', which has {} devices", ranks_per_node, k,
                                           t.name(), nodes[k].size()),
                        fmt::format("at most {} ranks per node", nodes[k].size()));
    }
    group.insert(group.end(), nodes[k].begin(), nodes[k].begin() + static_cast<std::ptrdiff_t>(ranks_per_node));
  }
  return group;
}

AutoChoice choose_auto(const topo::Topology& t, const CollectiveOp& op, const CostParams& p, [[maybe_unused]] bool flow_only) {
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
