// Calibration: the least-squares fit recovers known alpha and efficiency exactly, the profile
// round-trips through JSON, and maps onto a topology's links.
#include <doctest/doctest.h>

#include "analysis/calibration/profile.hpp"
#include "sim/error.hpp"

using namespace shardsim;

namespace {

const nlohmann::json kSwitch = {{"builder", "switch"}, {"n", 4}, {"bw", "400Mbit"}, {"lat", "20us"}, {"class", "ethernet"}};
constexpr double kB = 400e6 / 8;  // 400 Mbit/s = 5e7 B/s

logs::BenchRecord rec(const std::string& kind, std::uint64_t bytes, double alpha_s, double eff) {
  logs::BenchRecord r;
  r.source = "synthetic";
  r.host = "h";
  r.date = "2025-01-01T00:00:00Z";
  r.backend = "mpi";
  r.collective = kind;
  r.ranks = 4;
  r.peer = 1;
  r.bytes = bytes;
  r.time_us = (alpha_s + static_cast<double>(bytes) / (eff * kB)) * 1e6;
  r.topology = kSwitch;
  return r;
}

std::vector<logs::BenchRecord> synthetic() {
  std::vector<logs::BenchRecord> v;
  for (std::uint64_t s = 64 << 10; s <= (4u << 20); s *= 2) {
    v.push_back(rec("pingpong", s, 100e-6, 0.93));
    v.push_back(rec("exchange", s, 150e-6, 0.87));
  }
  logs::BenchRecord coll = rec("pingpong", 1 << 20, 0, 1);
  coll.collective = "allreduce";  // collectives never enter the fit
  coll.time_us = 1e9;
  v.push_back(coll);
  return v;
}

}  // namespace

TEST_CASE("fit recovers alpha from ping-pong and efficiency from the exchange") {
  const auto recs = synthetic();
  const auto p = calib::fit_profile(recs, {});
  REQUIRE(p.classes.size() == 1);
  const auto& c = p.classes[0];
  CHECK(c.cls == topo::LinkClass::ethernet);
  CHECK(c.alpha_s == doctest::Approx(100e-6).epsilon(1e-9));
  CHECK(*c.efficiency == doctest::Approx(0.87).epsilon(1e-9));
  CHECK(*c.fits.at("pingpong").efficiency == doctest::Approx(0.93).epsilon(1e-9));
  CHECK(c.fits.at("exchange").alpha_s == doctest::Approx(150e-6).epsilon(1e-9));
  CHECK(c.fits.at("exchange").points == 7);  // 64 KiB .. 4 MiB
  CHECK(c.fits.at("exchange").rms_rel_residual < 1e-9);
  CHECK(c.min_bytes == 65536);
  CHECK(c.max_bytes == 4194304);
  CHECK(p.residuals.size() == 14);
  CHECK_FALSE(c.bandwidth_Bps.has_value());
}

TEST_CASE("profile JSON round trip and strict loading") {
  const auto p = calib::fit_profile(synthetic(), {});
  const auto j = calib::to_json(p);
  const auto back = calib::profile_from_json(j, "p.json");
  REQUIRE(back.classes.size() == 1);
  CHECK(back.classes[0].alpha_s == p.classes[0].alpha_s);
  CHECK(*back.classes[0].efficiency == *p.classes[0].efficiency);
  auto bad = j;
  bad["classes"]["ethernet"]["beta"] = 1;
  CHECK_THROWS_WITH_AS(calib::profile_from_json(bad, "p.json"),
                       "p.json/classes/ethernet/beta: unknown key 'beta'; expected a profile key", ConfigError);
  bad = j;
  bad["classes"]["ethernet"]["bandwidth_Bps"] = 5e7;
  CHECK_THROWS_WITH_AS(calib::profile_from_json(bad, "p.json"),
                       "p.json/classes/ethernet: both or neither of efficiency and bandwidth_Bps; expected exactly one of them",
                       ConfigError);
}

TEST_CASE("a profile maps onto the links of its class") {
  const auto p = calib::fit_profile(synthetic(), {});
  const auto t = calib::record_topology(kSwitch, "test");
  const auto c = calib::calibrated_topology(t, p);
  REQUIRE(c.num_links() == t.num_links());
  for (topo::LinkId l = 0; l < c.num_links(); ++l) {
    CHECK(c.link(l).bandwidth_Bps == doctest::Approx(t.link(l).bandwidth_Bps * 0.87).epsilon(1e-9));
    CHECK(c.link(l).latency_s == 0.0);
  }
  CHECK(c.rank_route(0, 3).links == t.rank_route(0, 3).links);
  CHECK(calib::calibrated_cost(t, p).step_overhead_s == doctest::Approx(100e-6).epsilon(1e-9));
}

TEST_CASE("fit errors") {
  std::vector<logs::BenchRecord> one{rec("pingpong", 1 << 20, 1e-4, 0.9)};
  CHECK_THROWS_WITH_AS(calib::fit_profile(one, {}),
                       "calibrate: ethernet pingpong: 1 point(s) at 1 distinct size(s); expected at least 2 distinct "
                       "sizes to fit alpha and beta",
                       ConfigError);
  auto coll = one;
  coll[0].collective = "allreduce";
  CHECK_THROWS_WITH_AS(calib::fit_profile(coll, {}),
                       "calibrate: no pingpong or exchange record in range; expected point-to-point records (shardsim "
                       "bench mpi --collective pingpong,exchange)",
                       ConfigError);
}
