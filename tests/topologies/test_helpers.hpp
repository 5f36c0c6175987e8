#pragma once
// Shared checks for the topology tests.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/error.hpp"
#include "topologies/load.hpp"

namespace shardsim::topo::test {

/// The nodes a route visits, source first.
inline std::vector<NodeId> route_nodes(const Topology& t, std::size_t a, std::size_t b) {
  const Route& r = t.rank_route(a, b);
  std::vector<NodeId> n{t.device(a)};
  for (LinkId l : r.links) n.push_back(t.link(l).dst);
  return n;
}

/// A valid directed path from rank a to rank b whose latency is the sum of its links'.
inline bool route_is_valid(const Topology& t, std::size_t a, std::size_t b) {
  const Route& r = t.rank_route(a, b);
  if (a == b) return r.links.empty();
  if (r.links.empty()) return false;
  NodeId at = t.device(a);
  double lat = 0;
  for (LinkId l : r.links) {
    if (t.link(l).src != at) return false;
    at = t.link(l).dst;
    lat += t.link(l).latency_s;
  }
  return at == t.device(b) && lat == doctest::Approx(r.latency_s).scale(0);
}

/// The ConfigError message of building `spec`, or "" when it builds.
inline std::string error_of(const std::string& spec, const std::string& where = "test") {
  try {
    (void)make_topology(spec, where);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

inline std::string json_error_of(const nlohmann::json& j, const std::string& file = "topo.json") {
  try {
    (void)topology_from_json(j, file);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace shardsim::topo::test
