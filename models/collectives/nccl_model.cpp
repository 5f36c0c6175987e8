// NCCL backend: topology -> nccl::System -> NCCL's choice (see nccl_model.hpp).
#include "models/collectives/nccl_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <vector>

#include "models/collectives/algorithm.hpp"
#include "models/collectives/detail.hpp"
#include "sim/error.hpp"

namespace shardsim::coll {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<nccl::Arch> arch_of(const std::string& device_model) {
  const std::string m = lower(device_model);
  auto has = [&](const char* k) { return m.find(k) != std::string::npos; };
  if (has("b200") || has("b100") || has("b300") || has("gb200") || has("gb300")) return nccl::Arch::blackwell;
  if (has("h100") || has("h200") || has("h800") || has("gh200") || has("h20")) return nccl::Arch::hopper;
  if (has("a100") || has("a800")) return nccl::Arch::ampere;
  if (has("v100")) return nccl::Arch::volta;
  return std::nullopt;
}

// NVLinks per GPU (datasheets: V100 6, A100 12, H100/H200 18, B200/GB200 18): NCCL's NVLS
// channel bandwidth is one link's (per-GPU NVLink / links).
int nvlinks_per_gpu(nccl::Arch a) {
  switch (a) {
    case nccl::Arch::volta: return 6;
    case nccl::Arch::ampere: return 12;
    case nccl::Arch::hopper:
    case nccl::Arch::blackwell: return 18;
  }
  return 18;
}

bool is_nic(topo::LinkClass c) { return c == topo::LinkClass::ib || c == topo::LinkClass::ethernet; }

// What the topology says about each rank of the group.
struct RankView {
  double nvlink_Bps = 0;   // line rate, sum of nvlink out-links
  double nic_eff_Bps = 0;  // sum of NIC out-links x wire efficiency
  double nic_max_Bps = 0;  // its fastest NIC x wire efficiency
  int nics = 0;
  bool nvls = false;       // its NVLink switch reduces
  bool collnet = false;    // a NIC's switch reduces
  std::size_t domain = 0;  // NVLink domain (node)
};

struct View {
  std::vector<RankView> ranks;
  std::optional<std::string> why_not;
  nccl::Arch arch = nccl::Arch::hopper;
};

View view_of(const topo::Topology& t, const CollectiveOp& op) {
  View v;
  const auto arch = arch_of(t.device_model());
  if (!arch) {
    v.why_not = t.device_model().empty() ? "the topology names no GPU device model"
                                       : fmt::format("device model '{}' is not an NVIDIA GPU NCCL runs on", t.device_model());
    return v;
  }
  v.arch = *arch;
  const auto comp = detail::nvlink_domains(t);
  for (int r : op.group) {
    const auto d = t.device(static_cast<std::size_t>(r));
    RankView rv;
    rv.domain = comp[d];
    for (auto l : t.out_links(d)) {
      const auto& L = t.link(l);
      if (L.cls == topo::LinkClass::nvlink) {
        rv.nvlink_Bps += L.bandwidth_Bps;
        const auto& peer = t.node(L.dst);
        if (peer.kind == topo::NodeKind::switch_node && peer.in_network_reduction) rv.nvls = true;
      } else if (is_nic(L.cls)) {
        rv.nic_eff_Bps += L.bandwidth_Bps * nic_efficiency(L.cls);
        rv.nic_max_Bps = std::max(rv.nic_max_Bps, L.bandwidth_Bps * nic_efficiency(L.cls));
        ++rv.nics;
        const auto& peer = t.node(L.dst);
        if (peer.kind == topo::NodeKind::switch_node && peer.in_network_reduction) rv.collnet = true;
      }
    }
    v.ranks.push_back(rv);
  }
  return v;
}

// Point-to-point (all-to-all, sendrecv: not tuned by NCCL, the header): baseLat + hwLat of
// Ring/Simple, NET when any byte crosses nodes, else NVLink; plus `bandwidth_s`.
NcclPrediction p2p_prediction(NcclPrediction out, bool across, double bytes, double bandwidth_s, std::string why,
                              std::string formula_tail) {
  const double lat_us = 8.4 + (across ? 14.0 : 3.4);
  out.choice = nccl::Choice{nccl::Algo::ring, nccl::Proto::simple, lat_us + bandwidth_s * 1e6, lat_us,
                            bandwidth_s > 0 ? bytes / bandwidth_s / 1e9 : 0.0};
  out.name = "p2p/Simple";
  out.schedule = "direct";
  out.latency_s = lat_us * 1e-6;
  out.bandwidth_s = bandwidth_s;
  out.time_s = out.latency_s + out.bandwidth_s;
  out.why = std::move(why);
  out.formula = fmt::format("{} + {}", detail::fs(out.latency_s), formula_tail);
  return out;
}

// Sendrecv (the header): rank i -> i+1; the slowest pair sets the time.
NcclPrediction sendrecv_predict(const topo::Topology& t, const CollectiveOp& op, NcclPrediction out) {
  const View v = view_of(t, op);
  const double S = static_cast<double>(op.size_bytes);
  const std::size_t n = v.ranks.size();
  const double nvl_eff = nvlink_efficiency(out.system.arch);
  double slowest = 0;  // seconds of the slowest pair's bytes
  bool across = false;
  std::string pair;
  for (std::size_t i = 0; i < n && n > 1; ++i) {
    const auto& a = v.ranks[i];
    const auto& b = v.ranks[(i + 1) % n];
    const bool inter = a.domain != b.domain;
    across = across || inter;
    const double rate = inter ? std::min(a.nic_eff_Bps, b.nic_eff_Bps)
                              : std::min(a.nvlink_Bps, b.nvlink_Bps) * nvl_eff;
    if (S / rate > slowest) {
      slowest = S / rate;
      pair = fmt::format("{} -> {} over {}", op.group[i], op.group[(i + 1) % n], inter ? "the network" : "NVLink");
    }
  }
  return p2p_prediction(std::move(out), across, S, slowest,
                        "sendrecv: NCCL send/recv to the next rank (no tuning model); slowest pair " + pair,
                        fmt::format("S / slowest pair's rate ({})", detail::fs(slowest)));
}

const char* schedule_for(nccl::Algo a, OpKind op) {
  if (op == OpKind::alltoall || op == OpKind::sendrecv) return "direct";
  switch (a) {
    case nccl::Algo::ring:  // one ring per channel over every NIC ("ring" where the group is one node)
      return "ring-channels";
    case nccl::Algo::tree: return "tree-channels";  // per channel over every NIC (one node: double-binary-tree)
    case nccl::Algo::nvls:
    case nccl::Algo::collnet_direct:
    case nccl::Algo::collnet_chain:
      // in-network runs the all-reduce; NVLS all-gather / reduce-scatter (multicast, or the
      // switch's reduction of each rank's share) have no schedule of their own: at flow fidelity
      // the per-channel rings stand in (each rank's bytes cross its NVLink once either way).
      return op == OpKind::allreduce ? "in-network" : "ring-channels";
    case nccl::Algo::nvls_tree: return "nvls-tree";
    case nccl::Algo::pat: return "rabenseifner";
  }
  return "ring";
}

}  // namespace

double nccl_tests_launch_floor_s(int gpus_per_thread) {
  return gpus_per_thread > 1 ? gpus_per_thread * (33.7e-6 / 8) : 0.0;
}

double nic_efficiency(topo::LinkClass c) {
  switch (c) {
    case topo::LinkClass::ib: return 4096.0 / (4096.0 + 26.0);
    case topo::LinkClass::ethernet: return 4096.0 / (4096.0 + 82.0);
    default: return 1.0;
  }
}

double link_efficiency(const topo::Topology& t, const topo::Link& l) {
  if (l.cls == topo::LinkClass::nvlink) {
    const auto a = arch_of(t.device_model());
    return a ? nvlink_efficiency(*a) : 1.0;
  }
  return nic_efficiency(l.cls);
}

double nvls_arch_factor(nccl::Arch a) {
  // nvlsEfficiency[Hopper] = 0.85, [Blackwell] = 0.74 (NVIDIA/nccl 2.32.3 src/tuning/nvls.cc);
  // 2.23's NVLS bandwidth has no architecture term and was set on Hopper (see the header).
  return a == nccl::Arch::blackwell ? 0.74 / 0.85 : 1.0;
}

double nvlink_efficiency(nccl::Arch a) {
  switch (a) {
    case nccl::Arch::volta:
    case nccl::Arch::ampere: return 20.0 / 25.0;
    case nccl::Arch::hopper: return 20.6 / 25.0;
    case nccl::Arch::blackwell: return 40.1 / 50.0;
  }
  return 0.8;
}

std::uint32_t nccl_algo_mask(const std::string& names, const std::string& where) {
  std::uint32_t mask = 0;
  std::string item;
  auto flush = [&] {
    if (item.empty()) return;
    const std::string l = lower(item);
    bool found = false;
    for (std::size_t a = 0; a < nccl::kAlgos; ++a) {
      if (lower(nccl::to_string(static_cast<nccl::Algo>(a))) == l) {
        mask |= 1u << a;
        found = true;
      }
    }
    if (!found) {
      throw ConfigError(where, fmt::format("unknown NCCL algorithm '{}'", item),
                        "a comma list of Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT");
    }
    item.clear();
  };
  for (char c : names) {
    if (c == ',') {
      flush();
    } else if (c != ' ') {
      item += c;
    }
  }
  flush();
  if (mask == 0) throw ConfigError(where, "an empty list", "a comma list of NCCL algorithm names");
  return mask;
}

std::optional<std::string> nccl_unsupported(const topo::Topology& t, const CollectiveOp& op) {
  validate_op(t, op);
  const View v = view_of(t, op);
  if (v.why_not) return v.why_not;
  if (op.group.size() < 2) return std::nullopt;
  std::map<std::size_t, int> local;
  for (const auto& r : v.ranks) ++local[r.domain];
  const bool multi = local.size() > 1;
  for (std::size_t i = 0; i < v.ranks.size(); ++i) {
    const auto& r = v.ranks[i];
    if (local[r.domain] > 1 && r.nvlink_Bps <= 0) {
      return fmt::format("rank {} shares a node without an NVLink link (PCIe-only nodes are not modelled)", op.group[i]);
    }
    if (multi && r.nics == 0) return fmt::format("rank {} has no NIC (ib or ethernet link) to reach other nodes", op.group[i]);
  }
  return std::nullopt;
}

nccl::System nccl_system(const topo::Topology& t, const CollectiveOp& op, const NcclOptions& o) {
  if (auto why = nccl_unsupported(t, op)) throw ConfigError("NCCL model", *why, "an NVIDIA GPU topology (a GPU preset)");
  const View v = view_of(t, op);
  nccl::System s;
  s.arch = v.arch;
  s.cpu = o.cpu;
  s.ranks = static_cast<int>(op.group.size());
  std::map<std::size_t, int> local;
  std::map<std::size_t, double> nic_sum;
  std::map<std::size_t, int> nics;
  std::map<std::size_t, int> local_with_nic;
  double nvl = std::numeric_limits<double>::infinity();
  double one_nic = std::numeric_limits<double>::infinity();
  bool nvls = true, collnet = true;
  for (const auto& r : v.ranks) {
    if (r.nics > 0) one_nic = std::min(one_nic, r.nic_max_Bps / 1e9);
    ++local[r.domain];
    if (r.nics > 0) ++local_with_nic[r.domain];
    nic_sum[r.domain] += r.nic_eff_Bps;
    nics[r.domain] += r.nics;
    nvls = nvls && r.nvls;
    collnet = collnet && r.collnet;
  }
  for (const auto& r : v.ranks) {
    if (local[r.domain] > 1) nvl = std::min(nvl, r.nvlink_Bps * nvlink_efficiency(v.arch) / 1e9);
  }
  s.nodes = static_cast<int>(local.size());
  int max_local = 0, min_local = s.ranks, nics_per_node = 0, min_local_with_nic = s.ranks;
  double net = std::numeric_limits<double>::infinity();
  for (const auto& [d, k] : local) {
    max_local = std::max(max_local, k);
    min_local = std::min(min_local, k);
    min_local_with_nic = std::min(min_local_with_nic, local_with_nic[d]);
    net = std::min(net, nic_sum[d] / 1e9);
    nics_per_node = std::max(nics_per_node, nics[d]);
  }
  s.local_ranks = max_local;
  s.intra_nvlink = true;
  const double agg = s.nodes == 1 ? nvl : std::min(nvl, net);
  s.ring_GBps = agg;
  s.tree_inter_GBps = agg;
  s.tree_intra_GBps = s.nodes == 1 ? nvl : std::min(nvl, 2 * net);
  s.channels = std::clamp(2 * std::max(max_local, nics_per_node), 2, 32);
  s.nvls = nvls && v.arch >= nccl::Arch::hopper && min_local > 2;
  s.nvls_channels = 16;
  if (s.nvls) {
    // Heads: GPUs of a node with a NIC, at most the NVLS channels (NCCL_NVLS_NCHANNELS CTAs
    // serve the heads' channels, ctasPerChannel = nvlsChannels / heads, src/tuning/pipeline_model).
    if (s.nodes > 1) s.nvls_heads = std::min(min_local_with_nic, s.nvls_channels);
    s.nvls_intra_GBps = nvl / nvlinks_per_gpu(v.arch) * nvls_arch_factor(v.arch);
    // A channel's tree leaves the node through its head GPU's one NIC (NCCL's NVLS graph has
    // one network device per head, src/graph/search.cc): at most one NIC's rate per channel.
    s.nvls_inter_GBps = s.nodes == 1 ? s.nvls_intra_GBps : std::min(net / s.nvls_channels, one_nic);
  }
  s.collnet = collnet && s.nodes > 1;
  if (s.collnet) {
    s.collnet_channels = std::max(1, nics_per_node);
    s.collnet_intra_GBps = std::min(nvl, net) / s.collnet_channels;
    s.collnet_inter_GBps = net / s.collnet_channels;
  }
  return s;
}

NcclPrediction nccl_predict(const topo::Topology& t, const CollectiveOp& op, const NcclOptions& o) {
  NcclPrediction out;
  out.system = nccl_system(t, op, o);
  const auto& s = out.system;
  const auto bytes = op.size_bytes;
  if (op.kind == OpKind::sendrecv) return sendrecv_predict(t, op, out);
  if (op.kind == OpKind::alltoall) {
    // Not tuned by NCCL (see the header): point-to-point at the collectives' effective rates.
    const View v = view_of(t, op);
    const double n = static_cast<double>(s.ranks);
    const double S = static_cast<double>(bytes);
    const double g = static_cast<double>(s.local_ranks);
    double nvl = std::numeric_limits<double>::infinity(), nic_rank = std::numeric_limits<double>::infinity();
    for (const auto& r : v.ranks) {
      nvl = std::min(nvl, r.nvlink_Bps * nvlink_efficiency(s.arch));
      nic_rank = std::min(nic_rank, r.nic_eff_Bps);
    }
    const double intra_s = g > 1 ? S * (g - 1) / n / nvl : 0.0;
    const double inter_s = s.nodes > 1 ? S * (n - g) / n / nic_rank : 0.0;
    return p2p_prediction(std::move(out), s.nodes > 1, S, std::max(intra_s, inter_s),
                          "all-to-all: NCCL grouped send/recv (no tuning model)",
                          fmt::format("max(intra {}, inter {})", detail::fs(intra_s), detail::fs(inter_s)));
  }
  const auto c = nccl::choose(s, op.kind, bytes, o.allowed);
  if (!c) {
    throw ConfigError("NCCL model", fmt::format("no NCCL algorithm available for {} here", to_string(op.kind)),
                      "an algorithm NCCL enables for this collective and system (NCCL_ALGO)");
  }
  out.choice = *c;
  out.name = fmt::format("{}/{}", nccl::to_string(c->algo), nccl::to_string(c->proto));
  out.schedule = schedule_for(c->algo, op.kind);
  out.latency_s = c->latency_us * 1e-6;
  out.bandwidth_s = static_cast<double>(bytes) / (c->bw_GBps * 1e9);
  out.time_s = c->time_us * 1e-6;
  out.formula = fmt::format("NCCL {}: {} + {} B / {:.1f} GB/s", out.name, detail::fs(out.latency_s), bytes, c->bw_GBps);
  const auto table = nccl::tune(s, op.kind);
  for (std::size_t a = 0; a < nccl::kAlgos; ++a) {
    if (o.allowed != 0 && (o.allowed & (1u << a)) == 0) continue;
    for (std::size_t p = 0; p < nccl::kProtos; ++p) {
      const auto al = static_cast<nccl::Algo>(a);
      const auto pr = static_cast<nccl::Proto>(p);
      const auto time = nccl::algo_time_us(s, table, op.kind, al, pr, bytes);
      if (!time) continue;
      out.why += fmt::format("{}{}/{}: {}{}", out.why.empty() ? "" : ", ", nccl::to_string(al), nccl::to_string(pr),
                             detail::fs(*time * 1e-6), al == c->algo && pr == c->proto ? " (chosen)" : "");
    }
  }
  out.why = fmt::format("NCCL tuning model ({} nodes x {} ranks, {}): {}", s.nodes, s.local_ranks,
                        nccl::to_string(s.arch), out.why);
  return out;
}

std::optional<NcclAuto> nccl_auto(const topo::Topology& t, const CollectiveOp& op, const NcclOptions& o) {
  if (nccl_unsupported(t, op)) return std::nullopt;
  NcclAuto a;
  a.pred = nccl_predict(t, op, o);
  a.schedule = &find_algorithm(a.pred.schedule, op.kind, "--algorithm auto");
  if (a.schedule->unsupported(t, op)) {
    const char* fallback = op.kind == OpKind::alltoall              ? "direct"
                           : a.pred.schedule == "tree-channels" ? "double-binary-tree"
                           : a.pred.schedule == "nvls-tree"     ? "hierarchical"
                                                                : "ring";
    a.schedule = &find_algorithm(fallback, op.kind, "--algorithm auto");
  }
  a.cost.time_s = a.pred.time_s;
  a.cost.latency_s = a.pred.latency_s;
  a.cost.bandwidth_s = a.pred.bandwidth_s;
  a.cost.formula = a.pred.formula;
  return a;
}

}  // namespace shardsim::coll
