#pragma once
// Calibration profiles (DESIGN 6): alpha and beta per link class, fitted by least squares
// from point-to-point records only (pingpong, exchange), with residuals and provenance.
//
// Model per point-to-point record (Hockney alpha-beta; Thakur, Rabenseifner, Gropp 2005):
//     t(S) = alpha + T_decl(S) / eff              when the record names its topology
//     t(S) = alpha + S / B                        when it does not
// T_decl(S) = the time the pattern takes on the record's topology at the declared bandwidths,
// with the sharing the prediction itself applies (max-min fair flows, no latency):
//     pingpong: one flow 0 -> peer:          S / (bottleneck of that route)
//     exchange: flows 0 -> peer, peer -> 0:  max over links of (flows on it) x S / bandwidth
// so that on a bus, where both directions of an exchange cross the one medium, T_decl = 2 S / B
// and eff is the medium's efficiency, not half of it (which the prediction would then apply
// to flows that it already makes share the medium). The record's link class is the class of
// the link that sets T_decl. Per class (Eigen ColPivHouseholderQR, least squares):
//     pingpong: alpha and eff, residuals relative ((t_fit - t) / t, rows weighted by 1/t) so
//               the small sizes, which are latency, set the intercept; an intercept below 0
//               (a shaper's burst lets a short message through faster than the rate) is
//               refitted with alpha = 0;
//     exchange: eff only, alpha fixed to the pingpong's, residuals absolute, so the large
//               sizes, which are bandwidth, set it (as osu_latency gives the latency and
//               osu_bibw's large sizes the bandwidth). Without pingpong records, exchange
//               fits both, relative.
// The profile takes
//     alpha      from the pingpong fit (intercept; one-way time of an empty message),
//     efficiency from the exchange fit when there is one (both directions loaded at once, as
//                in every step of ring and recursive-halving collectives), else from pingpong.
// A profile maps onto a Topology (calibrated_topology): every link of a calibrated class gets
// bandwidth x efficiency (or the absolute bandwidth) and latency 0, and calibrated_cost() puts
// alpha into CostParams::step_overhead_s (one message per rank per step). Links of other
// classes keep their declared values.
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/collectives/algorithm.hpp"
#include "topologies/topology.hpp"
#include "traces/logs/record.hpp"

namespace shardsim::calib {

struct KindFit {
  double alpha_s = 0;
  bool alpha_fixed = false;              ///< alpha taken from pingpong, not fitted here
  std::string weighting = "relative";    ///< "relative" (rows / t) or "absolute"
  std::optional<double> efficiency;     ///< with a topology: achieved / declared
  std::optional<double> bandwidth_Bps;  ///< without a topology
  int points = 0;
  double rms_rel_residual = 0;
  double max_abs_rel_residual = 0;
};

struct ClassCalibration {
  topo::LinkClass cls = topo::LinkClass::ethernet;
  double alpha_s = 0;
  std::optional<double> efficiency;
  std::optional<double> bandwidth_Bps;
  std::uint64_t min_bytes = 0, max_bytes = 0;  ///< the fitted size range
  std::map<std::string, KindFit> fits;        ///< "pingpong", "exchange"
};

struct Residual {
  std::string source, kind;
  int peer = 1;
  std::uint64_t bytes = 0;
  double measured_us = 0, fitted_us = 0, rel_error = 0;
};

struct Profile {
  std::vector<ClassCalibration> classes;
  std::vector<Residual> residuals;
  nlohmann::json provenance;  ///< files, hosts, dates, created, records
  [[nodiscard]] const ClassCalibration* find(topo::LinkClass c) const;
};

struct FitOptions {
  std::uint64_t min_bytes = 0;  ///< records below are left out of the fit
  std::uint64_t max_bytes = UINT64_MAX;
  std::vector<std::string> files;  ///< for provenance
};

/// Fits a profile. Only pingpong and exchange records are used; throws ConfigError when a
/// class has fewer than 2 distinct sizes, or there is no point-to-point record at all.
Profile fit_profile(const std::vector<logs::BenchRecord>& records, const FitOptions& o);

nlohmann::json to_json(const Profile& p);
/// Strict (unknown keys are errors); `where` names the file.
Profile profile_from_json(const nlohmann::json& j, const std::string& where);
Profile load_profile(const std::string& path);

/// The topology with the profile applied (see the header comment). Keeps node and link ids
/// and the original router (routes are by link id).
topo::Topology calibrated_topology(const topo::Topology& t, const Profile& p);
/// CostParams with step_overhead_s = alpha of the class of the rank 0 -> rank 1 bottleneck.
coll::CostParams calibrated_cost(const topo::Topology& t, const Profile& p, coll::CostParams base = {});

/// A profile applied for a simulation: the calibrated topology and the cost parameters with
/// the calibrated alpha as step overhead. The one entry point for every command that takes
/// --profile (collective, validate; step). Throws ConfigError naming `where` when the profile
/// calibrates none of the topology's link classes (applying it would silently change nothing).
struct AppliedProfile {
  topo::Topology topology;
  coll::CostParams cost;
};
AppliedProfile apply_profile(const topo::Topology& t, const Profile& p, coll::CostParams base = {},
                             const std::string& where = "--profile");

/// The topology a record names (JSON object -> topology_from_json, string -> make_topology).
topo::Topology record_topology(const nlohmann::json& topology, const std::string& where);

/// Declared bottleneck of the route between two ranks: bandwidth and link class.
std::pair<double, topo::LinkClass> route_bottleneck(const topo::Topology& t, std::size_t a, std::size_t b);

/// T_decl of a point-to-point record (see the header comment): seconds, and the class of the
/// link that sets it. `kind` is "pingpong" or "exchange"; rank 0 is one end.
std::pair<double, topo::LinkClass> declared_p2p_time(const topo::Topology& t, const std::string& kind, std::size_t peer,
                                                     double bytes);

}  // namespace shardsim::calib
