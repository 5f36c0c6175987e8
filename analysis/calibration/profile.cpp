#include "analysis/calibration/profile.hpp"

#include <Eigen/Dense>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>

#include "sim/error.hpp"
#include "topologies/load.hpp"

namespace shardsim::calib {
namespace {

struct Point {
  const logs::BenchRecord* rec;
  double x;  // T_decl (s) or S (bytes)
  topo::LinkClass cls;
};

// Routes of the calibrated copy are the original's: link ids are kept, so the original
// router, run on the original topology, returns valid ids for the copy.
class DelegatingRouter final : public topo::Router {
 public:
  explicit DelegatingRouter(std::shared_ptr<const topo::Topology> orig) : orig_(std::move(orig)) {}
  void route(const topo::Topology&, topo::NodeId src, topo::NodeId dst, std::vector<topo::LinkId>& out) const override {
    orig_->router().route(*orig_, src, dst, out);
  }
  [[nodiscard]] std::string name() const override { return orig_->router().name(); }

 private:
  std::shared_ptr<const topo::Topology> orig_;
};

// Relative residuals: rows weighted by 1/t. Absolute: unweighted, the largest times dominate.
enum class Weighting { relative, absolute };

// t = alpha + slope x, by least squares; with `fixed_alpha` only the slope is fitted. A free
// fit whose intercept comes out negative is redone with alpha = 0 (a negative time per message
// has no meaning; the slope of the unconstrained line would then be too shallow).
KindFit fit_kind(const std::vector<Point>& pts, bool with_topology, const std::string& where,
                 std::optional<double> fixed_alpha, Weighting weighting) {
  std::set<double> xs;
  for (const auto& p : pts) xs.insert(p.x);
  if (xs.size() < 2) {
    throw ConfigError(where, fmt::format("{} point(s) at {} distinct size(s)", pts.size(), xs.size()),
                      "at least 2 distinct sizes to fit alpha and beta");
  }
  const auto m = static_cast<Eigen::Index>(pts.size());
  const auto weight = [&](double t) { return weighting == Weighting::relative ? 1.0 / t : 1.0; };
  double alpha = 0, slope = 0;
  const auto fit_slope = [&](double a0) {
    Eigen::MatrixXd a(m, 1);
    Eigen::VectorXd b(m);
    for (Eigen::Index i = 0; i < m; ++i) {
      const auto& p = pts[static_cast<size_t>(i)];
      const double t = p.rec->time_us * 1e-6;
      a(i, 0) = weight(t) * p.x;
      b(i) = weight(t) * (t - a0);
    }
    return a.colPivHouseholderQr().solve(b)(0);
  };
  if (fixed_alpha) {
    alpha = *fixed_alpha;
    slope = fit_slope(alpha);
  } else {
    Eigen::MatrixXd a(m, 2);
    Eigen::VectorXd b(m);
    for (Eigen::Index i = 0; i < m; ++i) {
      const auto& p = pts[static_cast<size_t>(i)];
      const double t = p.rec->time_us * 1e-6;
      a(i, 0) = weight(t);
      a(i, 1) = weight(t) * p.x;
      b(i) = weight(t) * t;
    }
    const Eigen::Vector2d sol = a.colPivHouseholderQr().solve(b);
    alpha = sol(0);
    slope = sol(1);
    if (alpha < 0) {
      alpha = 0;
      slope = fit_slope(0);
    }
  }
  if (!(slope > 0)) {
    throw ConfigError(where, fmt::format("a fitted slope of {} s per unit", slope), "time growing with size");
  }
  KindFit f;
  f.alpha_s = alpha;
  f.alpha_fixed = fixed_alpha.has_value();
  f.weighting = weighting == Weighting::relative ? "relative" : "absolute";
  if (with_topology) f.efficiency = 1.0 / slope;
  else f.bandwidth_Bps = 1.0 / slope;
  f.points = static_cast<int>(m);
  double ss = 0;
  for (const auto& p : pts) {
    const double t = p.rec->time_us * 1e-6;
    const double r = (alpha + slope * p.x - t) / t;
    ss += r * r;
    f.max_abs_rel_residual = std::max(f.max_abs_rel_residual, std::fabs(r));
  }
  f.rms_rel_residual = std::sqrt(ss / static_cast<double>(m));
  return f;
}

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::optional<double> get_opt(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = j.at(key);
  if (v.is_null()) return std::nullopt;
  if (!v.is_number() || !(v.get<double>() > 0)) throw ConfigError(where + "/" + key, v.dump(), "a number > 0 or null");
  return v.get<double>();
}

void check_keys(const nlohmann::json& j, const std::vector<std::string>& keys, const std::string& where) {
  if (!j.is_object()) throw ConfigError(where, j.dump(), "a JSON object");
  for (const auto& [k, v] : j.items()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) throw ConfigError(where + "/" + k, "unknown key '" + k + "'", "a profile key");
  }
  for (const auto& k : keys) {
    if (!j.contains(k)) throw ConfigError(where, "missing key '" + k + "'", "a complete profile");
  }
}

}  // namespace

const ClassCalibration* Profile::find(topo::LinkClass c) const {
  for (const auto& k : classes) {
    if (k.cls == c) return &k;
  }
  return nullptr;
}

topo::Topology record_topology(const nlohmann::json& topology, const std::string& where) {
  if (topology.is_string()) return topo::make_topology(topology.get<std::string>(), where);
  if (topology.is_object()) return topo::topology_from_json(topology, where);
  throw ConfigError(where, "no topology", "records that name their topology, or --topology");
}

std::pair<double, topo::LinkClass> route_bottleneck(const topo::Topology& t, std::size_t a, std::size_t b) {
  const auto& r = t.rank_route(a, b);
  double bw = std::numeric_limits<double>::infinity();
  topo::LinkClass cls = topo::LinkClass::loopback;
  for (const auto l : r.links) {
    if (t.link(l).bandwidth_Bps < bw) {
      bw = t.link(l).bandwidth_Bps;
      cls = t.link(l).cls;
    }
  }
  return {bw, cls};
}

std::pair<double, topo::LinkClass> declared_p2p_time(const topo::Topology& t, const std::string& kind, std::size_t peer,
                                                     double bytes) {
  if (kind == "pingpong") {
    const auto [bw, cls] = route_bottleneck(t, 0, peer);
    return {bytes / bw, cls};
  }
  // exchange: equal flows that start together; under max-min sharing the flows of the most
  // loaded link (load = flows x bytes / bandwidth) finish last, at that load.
  std::map<topo::LinkId, int> flows;
  for (const auto l : t.rank_route(0, peer).links) ++flows[l];
  for (const auto l : t.rank_route(peer, 0).links) ++flows[l];
  double worst = 0;
  topo::LinkClass cls = topo::LinkClass::loopback;
  for (const auto& [l, n] : flows) {
    const double s = n * bytes / t.link(l).bandwidth_Bps;
    if (s > worst) {
      worst = s;
      cls = t.link(l).cls;
    }
  }
  return {worst, cls};
}

Profile fit_profile(const std::vector<logs::BenchRecord>& records, const FitOptions& o) {
  std::map<std::pair<topo::LinkClass, std::string>, std::vector<Point>> groups;
  std::set<std::string> hosts, dates;
  bool any_topology = false, any_plain = false;
  std::map<std::string, topo::Topology> topo_cache;
  for (const auto& r : records) {
    if (r.collective != "pingpong" && r.collective != "exchange") continue;
    if (r.bytes < o.min_bytes || r.bytes > o.max_bytes || r.bytes == 0 || r.time_us <= 0) continue;
    Point p{&r, static_cast<double>(r.bytes), topo::LinkClass::ethernet};
    if (!r.topology.is_null()) {
      const std::string key = r.topology.dump();
      auto it = topo_cache.find(key);
      if (it == topo_cache.end()) it = topo_cache.emplace(key, record_topology(r.topology, r.source + ": topology")).first;
      const auto [x, cls] = declared_p2p_time(it->second, r.collective, static_cast<std::size_t>(r.peer.value_or(1)),
                                              static_cast<double>(r.bytes));
      p.x = x;
      p.cls = cls;
      any_topology = true;
    } else {
      any_plain = true;
    }
    groups[{p.cls, r.collective}].push_back(p);
    if (!r.host.empty()) hosts.insert(r.host);
    if (!r.date.empty()) dates.insert(r.date);
  }
  if (groups.empty()) {
    throw ConfigError("calibrate", "no pingpong or exchange record in range",
                      "point-to-point records (shardsim bench mpi --collective pingpong,exchange)");
  }
  if (any_topology && any_plain) {
    throw ConfigError("calibrate", "records with and without a topology", "all records with a topology, or none");
  }
  Profile prof;
  for (const auto& [key, pts] : groups) {
    const auto [cls, kind] = key;
    ClassCalibration* c = nullptr;
    for (auto& k : prof.classes) {
      if (k.cls == cls) c = &k;
    }
    if (!c) {
      prof.classes.push_back(ClassCalibration{});
      c = &prof.classes.back();
      c->cls = cls;
      c->min_bytes = UINT64_MAX;
    }
    for (const auto& p : pts) {
      c->min_bytes = std::min(c->min_bytes, p.rec->bytes);
      c->max_bytes = std::max(c->max_bytes, p.rec->bytes);
    }
  }
  // Per class: pingpong first (alpha, relative residuals: the small sizes set the intercept),
  // then exchange with alpha fixed to the pingpong's and absolute residuals (the large sizes,
  // where the time is bandwidth, set the efficiency, as osu_bibw's large sizes do; the jitter
  // of latency-bound small exchanges must not set beta). Without pingpong records, exchange
  // alone fits both, relative.
  for (auto& c : prof.classes) {
    const std::string w = fmt::format("calibrate: {} ", topo::to_string(c.cls));
    const auto pp = groups.find({c.cls, "pingpong"});
    const auto ex = groups.find({c.cls, "exchange"});
    if (pp != groups.end()) c.fits["pingpong"] = fit_kind(pp->second, any_topology, w + "pingpong", std::nullopt, Weighting::relative);
    if (ex != groups.end()) {
      c.fits["exchange"] = pp != groups.end()
                               ? fit_kind(ex->second, any_topology, w + "exchange", c.fits.at("pingpong").alpha_s,
                                          Weighting::absolute)
                               : fit_kind(ex->second, any_topology, w + "exchange", std::nullopt, Weighting::relative);
    }
  }
  for (auto& c : prof.classes) {
    const KindFit& beta = c.fits.count("exchange") ? c.fits.at("exchange") : c.fits.at("pingpong");
    const KindFit& alpha = c.fits.count("pingpong") ? c.fits.at("pingpong") : c.fits.at("exchange");
    c.alpha_s = alpha.alpha_s;
    c.efficiency = beta.efficiency;
    c.bandwidth_Bps = beta.bandwidth_Bps;
    for (const auto& [kind, f] : c.fits) {
      const double slope = f.efficiency ? 1.0 / *f.efficiency : 1.0 / *f.bandwidth_Bps;
      for (const auto& p : groups.at({c.cls, kind})) {
        Residual r;
        r.source = p.rec->source;
        r.kind = kind;
        r.peer = p.rec->peer.value_or(1);
        r.bytes = p.rec->bytes;
        r.measured_us = p.rec->time_us;
        r.fitted_us = (f.alpha_s + slope * p.x) * 1e6;
        r.rel_error = (r.fitted_us - r.measured_us) / r.measured_us;
        prof.residuals.push_back(r);
      }
    }
  }
  prof.provenance = {{"files", o.files},
                     {"hosts", std::vector<std::string>(hosts.begin(), hosts.end())},
                     {"dates", dates.empty() ? nlohmann::json::array() : nlohmann::json::array({*dates.begin(), *dates.rbegin()})},
                     {"records", prof.residuals.size()},
                     {"method", "least squares on t = alpha + T_decl(S)/eff (Eigen ColPivHouseholderQR): alpha from pingpong "
                                "(weights 1/t), eff from exchange with that alpha (unweighted)"}};
  return prof;
}

nlohmann::json to_json(const Profile& p) {
  nlohmann::json classes = nlohmann::json::object();
  for (const auto& c : p.classes) {
    nlohmann::json fits = nlohmann::json::object();
    for (const auto& [kind, f] : c.fits) {
      fits[kind] = {{"alpha_s", f.alpha_s}, {"alpha_fixed", f.alpha_fixed}, {"weighting", f.weighting},
                    {"efficiency", opt(f.efficiency)}, {"bandwidth_Bps", opt(f.bandwidth_Bps)},
                    {"points", f.points}, {"rms_rel_residual", f.rms_rel_residual},
                    {"max_abs_rel_residual", f.max_abs_rel_residual}};
    }
    classes[topo::to_string(c.cls)] = {{"alpha_s", c.alpha_s}, {"efficiency", opt(c.efficiency)},
                                       {"bandwidth_Bps", opt(c.bandwidth_Bps)}, {"min_bytes", c.min_bytes},
                                       {"max_bytes", c.max_bytes}, {"fits", fits}};
  }
  nlohmann::json res = nlohmann::json::array();
  for (const auto& r : p.residuals) {
    res.push_back({{"source", r.source}, {"kind", r.kind}, {"peer", r.peer}, {"bytes", r.bytes},
                   {"measured_us", r.measured_us}, {"fitted_us", r.fitted_us}, {"rel_error", r.rel_error}});
  }
  return {{"profile_version", 1}, {"classes", classes}, {"residuals", res}, {"provenance", p.provenance}};
}

Profile profile_from_json(const nlohmann::json& j, const std::string& where) {
  check_keys(j, {"profile_version", "classes", "residuals", "provenance"}, where);
  if (j.at("profile_version") != 1) throw ConfigError(where + "/profile_version", j.at("profile_version").dump(), "1");
  Profile p;
  p.provenance = j.at("provenance");
  if (!j.at("classes").is_object() || j.at("classes").empty()) {
    throw ConfigError(where + "/classes", j.at("classes").dump(), "an object with at least one link class");
  }
  for (const auto& [name, c] : j.at("classes").items()) {
    const std::string w = where + "/classes/" + name;
    check_keys(c, {"alpha_s", "efficiency", "bandwidth_Bps", "min_bytes", "max_bytes", "fits"}, w);
    ClassCalibration k;
    k.cls = topo::link_class_from_string(name, w);
    if (!c.at("alpha_s").is_number() || c.at("alpha_s").get<double>() < 0) {
      throw ConfigError(w + "/alpha_s", c.at("alpha_s").dump(), "a number >= 0");
    }
    k.alpha_s = c.at("alpha_s").get<double>();
    k.efficiency = get_opt(c, "efficiency", w);
    k.bandwidth_Bps = get_opt(c, "bandwidth_Bps", w);
    if (k.efficiency.has_value() == k.bandwidth_Bps.has_value()) {
      throw ConfigError(w, "both or neither of efficiency and bandwidth_Bps", "exactly one of them");
    }
    k.min_bytes = c.at("min_bytes").get<std::uint64_t>();
    k.max_bytes = c.at("max_bytes").get<std::uint64_t>();
    p.classes.push_back(k);
  }
  return p;
}

Profile load_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path, "cannot open the file", "a profile JSON written by shardsim calibrate");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(path, fmt::format("invalid JSON ({})", e.what()), "a profile JSON");
  }
  return profile_from_json(j, path);
}

topo::Topology calibrated_topology(const topo::Topology& t, const Profile& p) {
  // A copy keeps the structure, the collective hints and the provenance; only the calibrated
  // classes' links change, through the topology's own setters. Routes stay the original's
  // (a router may weigh links by bandwidth).
  topo::Topology c = t;
  for (topo::LinkId l = 0; l < t.num_links(); ++l) {
    const auto& link = t.link(l);
    const ClassCalibration* k = p.find(link.cls);
    if (!k) continue;
    c.set_link_bandwidth(l, k->efficiency ? link.bandwidth_Bps * *k->efficiency : *k->bandwidth_Bps);
    c.set_link_latency(l, 0.0);  // the class's alpha carries the per-message latency (calibrated_cost)
  }
  c.set_router(std::make_shared<DelegatingRouter>(std::make_shared<const topo::Topology>(t)));
  return c;
}

coll::CostParams calibrated_cost(const topo::Topology& t, const Profile& p, coll::CostParams base) {
  if (t.num_devices() < 2) return base;
  const auto [bw, cls] = route_bottleneck(t, 0, 1);
  (void)bw;
  if (const auto* k = p.find(cls)) base.step_overhead_s = k->alpha_s;
  return base;
}

AppliedProfile apply_profile(const topo::Topology& t, const Profile& p, coll::CostParams base, const std::string& where) {
  std::set<std::string> have, calibrated;
  bool any = false;
  for (const auto& l : t.links()) {
    have.insert(topo::to_string(l.cls));
    any = any || p.find(l.cls) != nullptr;
  }
  if (!any) {
    for (const auto& c : p.classes) calibrated.insert(topo::to_string(c.cls));
    std::string h, k;
    for (const auto& x : have) h += (h.empty() ? "" : ", ") + x;
    for (const auto& x : calibrated) k += (k.empty() ? "" : ", ") + x;
    throw ConfigError(where, fmt::format("a profile of link class(es) {} for a topology of {}", k, h),
                      "a profile calibrating at least one link class of the topology");
  }
  return {calibrated_topology(t, p), calibrated_cost(t, p, base)};
}

}  // namespace shardsim::calib
