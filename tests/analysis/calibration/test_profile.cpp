// Calibration: the least-squares fit recovers known alpha and efficiency exactly (also on a
// bus, where an exchange's two directions share the medium, and when a shaper's burst makes
// the ping-pong intercept negative), the profile round-trips through JSON, and maps onto a
// topology's links; `collective --profile` (run_collective) predicts on the mapped topology.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>

#include "analysis/calibration/profile.hpp"
#include "analysis/commands/collective_run.hpp"
#include "sim/error.hpp"

using namespace shardsim;

namespace {

const nlohmann::json kSwitch = {{"builder", "switch"}, {"n", 4}, {"bw", "400Mbit"}, {"lat", "20us"}, {"class", "ethernet"}};
constexpr double kB = 400e6 / 8;  // 400 Mbit/s = 5e7 B/s

const nlohmann::json kBus = {{"builder", "bus"}, {"n", 4}, {"bw", "400Mbit"}, {"lat", "20us"}, {"class", "ethernet"}};

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
    v.push_back(rec("exchange", s, 100e-6, 0.87));
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
  CHECK(c.alpha_s == doctest::Approx(100e-6).epsilon(1e-9).scale(0));
  CHECK(*c.efficiency == doctest::Approx(0.87).epsilon(1e-9).scale(0));
  CHECK(*c.fits.at("pingpong").efficiency == doctest::Approx(0.93).epsilon(1e-9).scale(0));
  CHECK(c.fits.at("exchange").alpha_s == doctest::Approx(100e-6).epsilon(1e-9).scale(0));
  CHECK(c.fits.at("exchange").alpha_fixed);
  CHECK(c.fits.at("exchange").weighting == "absolute");
  CHECK_FALSE(c.fits.at("pingpong").alpha_fixed);
  CHECK(c.fits.at("exchange").points == 7);  // 64 KiB .. 4 MiB
  CHECK(c.fits.at("exchange").rms_rel_residual < 1e-9);
  CHECK(c.min_bytes == 65536);
  CHECK(c.max_bytes == 4194304);
  CHECK(p.residuals.size() == 14);
  CHECK_FALSE(c.bandwidth_Bps.has_value());
}

TEST_CASE("exchange on a bus: both directions share the medium, so T_decl = 2 S / B") {
  const auto t = calib::record_topology(kBus, "test");
  CHECK(calib::declared_p2p_time(t, "exchange", 1, 1e6).first == doctest::Approx(2e6 / kB).epsilon(1e-12).scale(0));
  CHECK(calib::declared_p2p_time(t, "pingpong", 1, 1e6).first == doctest::Approx(1e6 / kB).epsilon(1e-12).scale(0));
  const auto sw = calib::record_topology(kSwitch, "test");
  CHECK(calib::declared_p2p_time(sw, "exchange", 1, 1e6).first == doctest::Approx(1e6 / kB).epsilon(1e-12).scale(0));
  const nlohmann::json two = {{"builder", "fat_tree"}, {"hosts", 4},        {"hosts_per_leaf", 2}, {"bw", "400Mbit"},
                              {"uplink_bw", "200Mbit"}, {"spines", 1},      {"lat", "20us"},       {"class", "ethernet"}};
  const auto ft = calib::record_topology(two, "test");
  CHECK(calib::declared_p2p_time(ft, "exchange", 1, 1e6).first == doctest::Approx(1e6 / kB).epsilon(1e-12).scale(0));
  CHECK(calib::declared_p2p_time(ft, "exchange", 2, 1e6).first == doctest::Approx(2e6 / kB).epsilon(1e-12).scale(0));
  // Measured on a bus: each direction at half the medium's achieved rate.
  std::vector<logs::BenchRecord> v;
  for (std::uint64_t s = 64 << 10; s <= (4u << 20); s *= 2) {
    auto p = rec("pingpong", s, 100e-6, 0.95);
    auto x = rec("exchange", s, 100e-6, 0.95 / 2);
    p.topology = x.topology = kBus;
    v.push_back(p);
    v.push_back(x);
  }
  const auto prof = calib::fit_profile(v, {});
  CHECK(*prof.classes.at(0).efficiency == doctest::Approx(0.95).epsilon(1e-9).scale(0));
}

TEST_CASE("a negative ping-pong intercept is refitted with alpha = 0; exchange jitter at small sizes barely moves eff") {
  std::vector<logs::BenchRecord> v;
  for (std::uint64_t s = 64 << 10; s <= (4u << 20); s *= 2) {
    v.push_back(rec("pingpong", s, -1e-3, 0.95));  // a shaper burst: the first 50 KB are free
    auto x = rec("exchange", s, 0, 0.95);
    if (s == (64u << 10)) x.time_us *= 2;  // one latency-bound exchange took twice as long
    v.push_back(x);
  }
  const auto prof = calib::fit_profile(v, {});
  const auto& c = prof.classes.at(0);
  CHECK(c.alpha_s == 0.0);
  CHECK(c.fits.at("pingpong").alpha_s == 0.0);
  CHECK(*c.efficiency == doctest::Approx(0.95).epsilon(1e-3).scale(0));
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
    CHECK(c.link(l).bandwidth_Bps == doctest::Approx(t.link(l).bandwidth_Bps * 0.87).epsilon(1e-9).scale(0));
    CHECK(c.link(l).latency_s == 0.0);
  }
  CHECK(c.rank_route(0, 3).links == t.rank_route(0, 3).links);
  CHECK(calib::calibrated_cost(t, p).step_overhead_s == doctest::Approx(100e-6).epsilon(1e-9).scale(0));
}

TEST_CASE("a calibrated topology keeps the structure hints and provenance of the original") {
  const auto p = calib::fit_profile(synthetic(), {});
  auto t = calib::record_topology(kSwitch, "test");
  t.set_device_groups({{0, 1}, {2, 3}});
  t.set_ring_order({0, 2, 3, 1});
  t.set_devices_forward(true);
  t.set_device_model("h100");
  t.set_description("four hosts");
  const auto c = calib::calibrated_topology(t, p);
  CHECK(c.device_groups() == t.device_groups());
  CHECK(c.ring_order() == t.ring_order());
  CHECK(c.devices_forward());
  CHECK(c.device_model() == "h100");
  CHECK(c.name() == t.name());
  CHECK(c.description() == "four hosts");
  CHECK(c.config() == t.config());
  CHECK(c.generation() != t.generation());  // its links changed
}

TEST_CASE("apply_profile: topology and step overhead; a profile of another link class is an error") {
  const auto p = calib::fit_profile(synthetic(), {});
  const auto t = calib::record_topology(kSwitch, "test");
  const auto a = calib::apply_profile(t, p);
  CHECK(a.topology.link(0).bandwidth_Bps == doctest::Approx(t.link(0).bandwidth_Bps * 0.87).epsilon(1e-9).scale(0));
  CHECK(a.cost.step_overhead_s == doctest::Approx(100e-6).epsilon(1e-9).scale(0));
  auto nv = calib::record_topology(
      nlohmann::json{{"builder", "switch"}, {"n", 4}, {"bw", "400Gb/s"}, {"lat", "1us"}, {"class", "nvlink"}}, "test");
  CHECK_THROWS_WITH_AS(calib::apply_profile(nv, p, {}, "--profile"),
                       "--profile: a profile of link class(es) ethernet for a topology of nvlink; expected a profile "
                       "calibrating at least one link class of the topology",
                       ConfigError);
}

TEST_CASE("collective --profile predicts on the calibrated topology with alpha as step overhead") {
  const auto p = calib::fit_profile(synthetic(), {});
  const std::string path = std::string(SHARDSIM_BINARY_DIR) + "/test_profile_collective.json";
  {
    std::ofstream out(path);
    out << calib::to_json(p).dump();
  }
  cli::CollectiveOptions o;
  o.topology = "switch:n=4,bw=400Mbit,lat=20us";
  o.bytes = "4MiB";
  o.algorithm = "ring";
  o.profile = path;
  const auto r = cli::run_collective(o).at(0);
  // ring all-reduce, 4 ranks: 2 (n-1) steps of S/n at 0.87 x 400 Mbit/s, alpha 100 us each.
  const double expected = 6 * (100e-6 + (4.0 * (1 << 20) / 4) / (0.87 * kB));
  CHECK(r.time_s == doctest::Approx(expected).epsilon(1e-6).scale(0));
  CHECK(r.config.at("profile").at("file") == path);
  CHECK(r.config.at("step_overhead_s").get<double>() == doctest::Approx(100e-6).epsilon(1e-9).scale(0));
  o.step_overhead = "5us";
  CHECK_THROWS_WITH_AS(cli::run_collective(o),
                       "--profile: both --profile and --step-overhead; expected one of them (the profile's alpha is "
                       "the step overhead)",
                       ConfigError);
  std::remove(path.c_str());
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
