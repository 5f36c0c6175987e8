#pragma once
// Calibration profiles (DESIGN 6): alpha and beta per link class, fitted by least squares
// from point-to-point records only (pingpong, exchange), with residuals and provenance.
//
// Model per point-to-point record (Hockney alpha-beta; Thakur, Rabenseifner, Gropp 2005):
//     t(S) = alpha + S / (eff x B_decl)          when the record names its topology
//     t(S) = alpha + S / B                       when it does not
// B_decl = the declared bottleneck bandwidth of the route rank 0 -> peer on the record's
// topology, and the record's link class = the class of that bottleneck link. Each class gets
// one fit per kind, minimising the squared RELATIVE residual sum ((t_fit - t) / t)^2, i.e.
// rows weighted by 1/t, so small and large messages count alike (Eigen ColPivHouseholderQR).
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

/// The topology a record names (JSON object -> topology_from_json, string -> make_topology).
topo::Topology record_topology(const nlohmann::json& topology, const std::string& where);

/// Declared bottleneck of the route between two ranks: bandwidth and link class.
std::pair<double, topo::LinkClass> route_bottleneck(const topo::Topology& t, std::size_t a, std::size_t b);

}  // namespace shardsim::calib
