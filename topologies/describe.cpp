#include "topologies/describe.hpp"

#include <fmt/format.h>

#include <boost/graph/push_relabel_max_flow.hpp>
#include <algorithm>
#include <limits>

#include "sim/units.hpp"

namespace shardsim::topo {
namespace {

constexpr std::size_t kMaxBfsDevices = 4096;
constexpr std::size_t kOutlineListMax = 16;  // config_outline: longer lists are summarised

std::string cfg_builder(const Topology& t) {
  return t.config().contains("builder") && t.config().at("builder").is_string() ? t.config().at("builder").get<std::string>() : "";
}

double cfg_rate(const Topology& t, const char* key) {
  return units::parse_rate_Bps(t.config().at(key).get<std::string>(), key);
}

long cfg_int(const Topology& t, const char* key) { return t.config().at(key).get<long>(); }

struct Bisection {
  double bps;
  std::string method;
};

std::optional<Bisection> closed_form_bisection(const Topology& t) {
  const std::string b = cfg_builder(t);
  const auto n = static_cast<long>(t.num_devices());
  if (b == "torus" && t.num_links() > 0) {
    const double bw = t.link(0).bandwidth_Bps;
    std::optional<double> best;
    for (std::size_t d = 0; d < t.torus_dims().size(); ++d) {
      const long k = t.torus_dims()[d];
      if (k < 2 || k % 2 != 0) continue;
      const double v = static_cast<double>(n / k) * (t.torus_wrap()[d] ? 2.0 : 1.0) * bw;
      if (!best || v < *best) best = v;
    }
    if (best) return Bisection{*best, "closed form: min over even dimensions d of (N/k_d) x (2 if wrapped else 1) x link bw"};
    return std::nullopt;
  }
  if (b == "switch" || b == "nvswitch_node") {
    return Bisection{static_cast<double>(n / 2) * cfg_rate(t, "bw"), "closed form: floor(n/2) x bw"};
  }
  if (b == "bus") return Bisection{cfg_rate(t, "bw"), "closed form: bw of the shared medium"};
  if (b == "fat_tree") {
    const long per = cfg_int(t, "hosts_per_leaf");
    const long leaves = n / per;
    const double bw = cfg_rate(t, "bw");
    if (leaves == 1) return Bisection{static_cast<double>(n / 2) * bw, "closed form: floor(hosts/2) x bw (one leaf)"};
    if (leaves % 2 == 0) {
      const double up = static_cast<double>(cfg_int(t, "spines")) * cfg_rate(t, "uplink_bw");
      return Bisection{static_cast<double>(leaves / 2) * std::min(static_cast<double>(per) * bw, up),
                       "closed form: (leaves/2) x min(hosts_per_leaf x bw, spines x uplink_bw)"};
    }
    return std::nullopt;
  }
  if (b == "rail_optimized") {
    const long nodes = cfg_int(t, "nodes");
    const long g = cfg_int(t, "gpus_per_node");
    if (nodes == 1) return Bisection{static_cast<double>(g / 2) * cfg_rate(t, "nvlink_bw"), "closed form: floor(g/2) x nvlink_bw (one node)"};
    if (nodes % 2 == 0) {
      return Bisection{static_cast<double>(nodes / 2 * g) * cfg_rate(t, "nic_bw"), "closed form: (nodes/2) x g x nic_bw"};
    }
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

double max_flow_Bps(const Topology& t, const std::vector<NodeId>& from, const std::vector<NodeId>& to) {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using G = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, double,
                      boost::property<boost::edge_residual_capacity_t, double,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  // A device that does not forward is split into an "in" vertex (links arrive) and an
  // "out" vertex (links leave) with no edge between them, so no flow passes through it.
  const std::size_t n = t.num_nodes();
  std::vector<std::size_t> in(n), out(n);
  std::size_t next = 0;
  for (NodeId v = 0; v < n; ++v) {
    in[v] = next++;
    out[v] = (t.node(v).kind == NodeKind::device && !t.devices_forward()) ? next++ : in[v];
  }
  const std::size_t s = next++, sink = next++;
  G g(next);
  auto cap = boost::get(boost::edge_capacity, g);
  auto rev = boost::get(boost::edge_reverse, g);
  double total = 1;
  for (const Link& l : t.links()) total += l.bandwidth_Bps;
  auto add = [&](std::size_t a, std::size_t b, double c) {
    auto e = boost::add_edge(a, b, g).first;
    auto r = boost::add_edge(b, a, g).first;
    cap[e] = c;
    cap[r] = 0;
    rev[e] = r;
    rev[r] = e;
  };
  for (const Link& l : t.links()) add(out[l.src], in[l.dst], l.bandwidth_Bps);
  for (NodeId v : from) add(s, out[v], total);
  for (NodeId v : to) add(in[v], sink, total);
  return boost::push_relabel_max_flow(g, s, sink);
}

double rank_halves_max_flow_Bps(const Topology& t) {
  const auto& d = t.devices();
  const std::size_t half = d.size() / 2;
  return max_flow_Bps(t, std::vector<NodeId>(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(half)),
                      std::vector<NodeId>(d.begin() + static_cast<std::ptrdiff_t>(half), d.end()));
}

TopologySummary describe(const Topology& t) {
  TopologySummary s;
  s.name = t.name();
  s.description = t.description();
  s.builder = cfg_builder(t);
  s.device_model = t.device_model();
  s.devices = t.num_devices();
  s.switches = t.num_nodes() - t.num_devices();
  s.directed_links = t.num_links();
  for (auto c : {LinkClass::ici, LinkClass::nvlink, LinkClass::pcie, LinkClass::ib, LinkClass::ethernet, LinkClass::loopback}) {
    LinkClassStats st;
    st.cls = c;
    for (const Link& l : t.links()) {
      if (l.cls != c) continue;
      ++st.directed_links;
      if (std::find(st.bandwidths_Bps.begin(), st.bandwidths_Bps.end(), l.bandwidth_Bps) == st.bandwidths_Bps.end()) {
        st.bandwidths_Bps.push_back(l.bandwidth_Bps);
      }
    }
    std::sort(st.bandwidths_Bps.begin(), st.bandwidths_Bps.end());
    if (st.directed_links > 0) s.classes.push_back(std::move(st));
  }
  s.injection_Bps = t.injection_Bps(t.device(0));
  if (s.devices >= 2) {
    if (auto b = closed_form_bisection(t)) {
      s.bisection_Bps = b->bps;
      s.bisection_method = b->method;
    } else {
      s.bisection_Bps = rank_halves_max_flow_Bps(t);
      s.bisection_method = "max-flow between the two halves of the rank order";
    }
  }
  if (!t.torus_dims().empty()) {
    int hops = 0;
    for (std::size_t d = 0; d < t.torus_dims().size(); ++d) {
      hops += t.torus_wrap()[d] ? t.torus_dims()[d] / 2 : t.torus_dims()[d] - 1;
    }
    s.diameter_hops = hops;
    s.diameter_method = "closed form: sum over d of (floor(k_d/2) if wrapped else k_d - 1)";
  } else if (s.devices <= kMaxBfsDevices) {
    int hops = 0;
    for (NodeId src : t.devices()) {
      const auto dist = hop_distances(t, src);
      for (NodeId dst : t.devices()) hops = std::max(hops, dist[dst]);
    }
    s.diameter_hops = hops;
    s.diameter_method = "breadth-first search from every device";
  } else {
    s.diameter_method = fmt::format("not computed (more than {} devices)", kMaxBfsDevices);
  }
  return s;
}

std::string to_dot(const Topology& t) {
  std::string out = fmt::format("digraph \"{}\" {{\n", t.name());
  for (NodeId v = 0; v < t.num_nodes(); ++v) {
    const Node& n = t.node(v);
    out += fmt::format("  n{} [label=\"{}\", shape={}];\n", v, n.name, n.kind == NodeKind::device ? "box" : "ellipse");
  }
  const auto& links = t.links();
  for (LinkId l = 0; l < links.size(); ++l) {
    const Link& a = links[l];
    const bool pair = l + 1 < links.size() && links[l + 1].src == a.dst && links[l + 1].dst == a.src &&
                      links[l + 1].bandwidth_Bps == a.bandwidth_Bps && links[l + 1].latency_s == a.latency_s &&
                      links[l + 1].cls == a.cls;
    out += fmt::format("  n{} -> n{} [label=\"{} {}\"{}];\n", a.src, a.dst, units::format_rate(a.bandwidth_Bps),
                       to_string(a.cls), pair ? ", dir=both" : "");
    if (pair) ++l;
  }
  out += "}\n";
  return out;
}

std::string config_outline(const nlohmann::json& config, bool* elided) {
  if (elided) *elided = false;
  if (!config.is_object()) return config.dump();
  std::string out = "{";
  for (auto it = config.begin(); it != config.end(); ++it) {
    if (out.size() > 1) out += ",";
    out += nlohmann::json(it.key()).dump() + ":";
    const auto& v = it.value();
    // A short list of scalars (torus dims, wrap flags) stays: it is part of what was built.
    const bool short_scalars = v.is_array() && v.size() <= kOutlineListMax &&
                               std::none_of(v.begin(), v.end(), [](const auto& e) { return e.is_structured(); });
    if (v.is_structured() && !short_scalars) {
      if (elided) *elided = true;
      const char* what = v.is_array() ? (v.size() == 1 ? "entry" : "entries") : (v.size() == 1 ? "key" : "keys");
      out += v.is_array() ? fmt::format("[{} {}]", v.size(), what) : fmt::format("{{{} {}}}", v.size(), what);
    } else {
      out += v.dump();
    }
  }
  return out + "}";
}

nlohmann::json to_json(const TopologySummary& s, const Topology& t) {
  nlohmann::json j;
  j["name"] = s.name;
  j["description"] = s.description;
  j["builder"] = s.builder;
  j["device_model"] = s.device_model;
  j["devices"] = s.devices;
  j["switches"] = s.switches;
  j["directed_links"] = s.directed_links;
  j["links_by_class"] = nlohmann::json::array();
  for (const auto& c : s.classes) {
    j["links_by_class"].push_back({{"class", to_string(c.cls)}, {"directed_links", c.directed_links}, {"bandwidths_Bps", c.bandwidths_Bps}});
  }
  j["injection_Bps"] = s.injection_Bps;
  j["bisection_Bps"] = s.bisection_Bps ? nlohmann::json(*s.bisection_Bps) : nlohmann::json(nullptr);
  j["bisection_method"] = s.bisection_method;
  j["diameter_hops"] = s.diameter_hops ? nlohmann::json(*s.diameter_hops) : nlohmann::json(nullptr);
  j["diameter_method"] = s.diameter_method;
  j["torus_dims"] = t.torus_dims();
  j["torus_wrap"] = t.torus_wrap();
  j["device_groups"] = t.device_groups().size();
  j["router"] = t.router().name();
  j["config"] = t.config();
  return j;
}

}  // namespace shardsim::topo
