#include "topologies/faults.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>

#include "sim/text/strings.hpp"

namespace shardsim::topo {

bool FaultSet::any_down() const {
  return std::any_of(faults.begin(), faults.end(), [](const LinkFault& f) { return f.fraction == 0; });
}

namespace {

class FaultRouter final : public Router {
 public:
  FaultRouter(std::shared_ptr<const Router> inner, FaultSet f, std::vector<char> down)
      : inner_(std::move(inner)), faults_(std::move(f)), down_(std::move(down)) {}

  void route(const Topology& t, NodeId src, NodeId dst, std::vector<LinkId>& out) const override {
    thread_local std::vector<LinkId> tmp;
    tmp.clear();
    inner_->route(t, src, dst, tmp);
    if (std::none_of(tmp.begin(), tmp.end(), [&](LinkId l) { return down_[l] != 0; })) {
      out.insert(out.end(), tmp.begin(), tmp.end());
      return;
    }
    if (!shortest_path(t, src, dst, &down_, out)) {
      throw RouteCutError(down_on(tmp), fmt::format("{} and {}", t.node(src).name, t.node(dst).name));
    }
  }
  [[nodiscard]] std::string name() const override { return inner_->name() + "+faults"; }

  // The down items on an intact route (all down items when the route has none of them).
  [[nodiscard]] std::string down_on(const std::vector<LinkId>& route) const {
    std::string s;
    for (const auto& f : faults_.faults) {
      if (f.fraction != 0) continue;
      if (std::any_of(f.links.begin(), f.links.end(),
                      [&](LinkId l) { return std::find(route.begin(), route.end(), l) != route.end(); })) {
        s += (s.empty() ? "" : ", ") + f.item;
      }
    }
    if (!s.empty()) return s;
    for (const auto& f : faults_.faults) {
      if (f.fraction == 0) s += (s.empty() ? "" : ", ") + f.item;
    }
    return s;
  }

  [[nodiscard]] const FaultSet& faults() const { return faults_; }
  [[nodiscard]] const Router& inner() const { return *inner_; }
  [[nodiscard]] bool any_down() const { return std::any_of(down_.begin(), down_.end(), [](char c) { return c != 0; }); }
  /// Per link: non-zero where the link is down (the skip mask of shortest_path, hop_distances).
  [[nodiscard]] const std::vector<char>& down() const { return down_; }

 private:
  std::shared_ptr<const Router> inner_;
  FaultSet faults_;
  std::vector<char> down_;  // per link
};

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    const auto i = s.find(sep);
    out.push_back(s.substr(0, i));
    if (i == std::string_view::npos) return out;
    s = s.substr(i + 1);
  }
}

bool network_class(LinkClass c) { return c == LinkClass::ib || c == LinkClass::ethernet; }

struct Names {
  std::unordered_map<std::string, std::vector<NodeId>> ids;
  explicit Names(const Topology& t) {
    for (NodeId n = 0; n < t.num_nodes(); ++n) ids[t.node(n).name].push_back(n);
  }
  [[nodiscard]] std::optional<NodeId> find(std::string_view name, const std::string& where, const std::string& item) const {
    auto it = ids.find(std::string(name));
    if (it == ids.end()) return std::nullopt;
    if (it->second.size() > 1) {
      throw ConfigError(where, fmt::format("node name '{}' in '{}' names {} nodes", name, item, it->second.size()),
                        "a node name that is unique in the topology");
    }
    return it->second.front();
  }
};

// The directed links of "A-B" (both ways) or "A->B"; throws naming the item.
std::vector<LinkId> links_named(const Topology& t, const Names& names, std::string_view link, const std::string& where,
                                const std::string& item) {
  auto between = [&](NodeId a, NodeId b, bool both) {
    std::vector<LinkId> out;
    for (LinkId l : t.out_links(a)) {
      if (t.link(l).dst == b) out.push_back(l);
    }
    if (both) {
      for (LinkId l : t.out_links(b)) {
        if (t.link(l).dst == a) out.push_back(l);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  const auto arrow = link.find("->");
  std::vector<std::pair<std::string_view, std::string_view>> tries;
  if (arrow != std::string_view::npos) {
    tries.emplace_back(link.substr(0, arrow), link.substr(arrow + 2));
  } else {
    for (std::size_t i = link.find('-'); i != std::string_view::npos; i = link.find('-', i + 1)) {
      tries.emplace_back(link.substr(0, i), link.substr(i + 1));
    }
  }
  for (const auto& [a, b] : tries) {
    const auto na = names.find(a, where, item), nb = names.find(b, where, item);
    if (!na || !nb) continue;
    auto out = between(*na, *nb, arrow == std::string_view::npos);
    if (out.empty()) {
      throw ConfigError(where, fmt::format("no link between '{}' and '{}' in '{}'", a, b, item),
                        "two nodes joined by a link (shardsim topo show --dot lists them)");
    }
    return out;
  }
  throw ConfigError(where, fmt::format("'{}' in '{}' is not A-B or A->B of two nodes of the topology", link, item),
                    "a link named by its two node names (shardsim topo show --dot lists them)");
}

std::vector<LinkId> nic_links(const Topology& t, const Names& names, std::string_view dev, const std::string& where,
                              const std::string& item) {
  const auto n = names.find(dev, where, item);
  if (!n || t.node(*n).kind != NodeKind::device) {
    throw ConfigError(where, fmt::format("'{}' in '{}' is not a device of the topology", dev, item),
                      "a device name (shardsim topo show --dot lists them)");
  }
  std::vector<LinkId> out;
  for (LinkId l = 0; l < t.num_links(); ++l) {
    const auto& k = t.link(l);
    if ((k.src == *n || k.dst == *n) && network_class(k.cls)) out.push_back(l);
  }
  if (out.empty()) {
    throw ConfigError(where, fmt::format("device '{}' in '{}' has no network (ib, ethernet) link", dev, item),
                      "a device with a NIC, or link:A-B:FRACTION for another link");
  }
  return out;
}

}  // namespace

FaultSet parse_faults(const Topology& t, const std::string& spec, const std::string& where) {
  FaultSet fs;
  fs.spec = spec;
  if (spec.empty()) return fs;
  const Names names(t);
  const std::string expected = "link:A-B:FRACTION, nic:DEVICE:FRACTION, down:A-B or down:nic:DEVICE, separated by ';'";
  for (const std::string_view raw : split(spec, ';')) {
    if (raw.empty()) continue;
    const std::string item(raw);
    LinkFault f;
    f.item = item;
    auto parts = split(raw, ':');
    auto fraction = [&](std::string_view s) {
      const auto v = text::to_double(s);
      if (!v || !(*v > 0) || *v > 1) {
        throw ConfigError(where, fmt::format("fraction '{}' in '{}'", s, item),
                          "a fraction of the rate in (0, 1] (down:NAME takes a link down)");
      }
      return *v;
    };
    if (parts[0] == "link" && parts.size() == 3) {
      f.links = links_named(t, names, parts[1], where, item);
      f.fraction = fraction(parts[2]);
    } else if (parts[0] == "nic" && parts.size() == 3) {
      f.links = nic_links(t, names, parts[1], where, item);
      f.fraction = fraction(parts[2]);
    } else if (parts[0] == "down" && parts.size() == 2) {
      f.links = links_named(t, names, parts[1], where, item);
      f.fraction = 0;
    } else if (parts[0] == "down" && parts.size() == 3 && parts[1] == "nic") {
      f.links = nic_links(t, names, parts[2], where, item);
      f.fraction = 0;
    } else {
      throw ConfigError(where, fmt::format("'{}'", item), expected);
    }
    fs.faults.push_back(std::move(f));
  }
  return fs;
}

Topology apply_faults(const Topology& t, const FaultSet& f) {
  Topology out = t;  // set_router below clears the copied route cache
  if (f.empty()) return out;
  std::vector<double> fraction(t.num_links(), 1.0);
  for (const auto& x : f.faults) {
    for (const LinkId l : x.links) fraction[l] = x.fraction;  // the last item naming a link wins
  }
  std::vector<char> down(t.num_links(), 0);
  for (LinkId l = 0; l < t.num_links(); ++l) {
    if (fraction[l] == 0) {
      down[l] = 1;
    } else if (fraction[l] != 1) {
      out.set_link_bandwidth(l, t.link(l).bandwidth_Bps * fraction[l]);
    }
  }
  out.set_router(std::make_shared<FaultRouter>(t.shared_router(), f, std::move(down)));
  out.set_name(fmt::format("{} with faults {}", t.name(), f.spec));
  out.set_config_entry("faults", f.spec);
  return out;
}

const FaultSet* faults_of(const Topology& t) {
  const auto* fr = dynamic_cast<const FaultRouter*>(&t.router());
  return fr ? &fr->faults() : nullptr;
}

void check_group(const Topology& t, const std::vector<int>& group) {
  const auto* fr = dynamic_cast<const FaultRouter*>(&t.router());
  if (fr == nullptr || !fr->any_down() || group.size() < 2) return;
  for (const int a : group) {
    const NodeId na = t.device(static_cast<std::size_t>(a));
    const auto dist = hop_distances(t, na, &fr->down());  // over the links that are up
    for (const int b : group) {
      const NodeId nb = t.device(static_cast<std::size_t>(b));
      if (a == b || dist[nb] >= 0) continue;
      std::vector<LinkId> intact;
      std::string down;
      try {
        fr->inner().route(t, na, nb, intact);
        down = fr->down_on(intact);
      } catch (const std::runtime_error&) {
        down = fr->down_on({});
      }
      throw RouteCutError(down, fmt::format("ranks {} ({}) and {} ({})", a, t.node(na).name, b, t.node(nb).name));
    }
  }
}

std::string rank_list(const std::vector<int>& g) {
  bool consecutive = true;
  for (std::size_t i = 1; i < g.size(); ++i) consecutive = consecutive && g[i] == g[i - 1] + 1;
  if (consecutive && g.size() > 2) return fmt::format("{}-{}", g.front(), g.back());
  std::string s;
  for (std::size_t i = 0; i < g.size() && i < 8; ++i) s += (i ? "," : "") + std::to_string(g[i]);
  if (g.size() > 8) s += fmt::format(",... ({} ranks)", g.size());
  return s;
}

ConfigError group_cut_error(const RouteCutError& e, const std::string& group, const std::vector<int>& ranks,
                            const std::string& when) {
  return ConfigError("--faults",
                     fmt::format("{} disconnects process group '{}' (ranks {}){}: no path between {} over the links that are up",
                                 e.down(), group, rank_list(ranks), when.empty() ? "" : " " + when, e.pair()),
                     "faults that leave every process group connected");
}

}  // namespace shardsim::topo
