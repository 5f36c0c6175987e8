// OSU tables into records (formulas in traces/logs/osu.cpp).
#include <doctest/doctest.h>

#include "sim/error.hpp"
#include "traces/logs/parse.hpp"

using shardsim::ConfigError;
using namespace shardsim::logs;

TEST_CASE("osu_latency: one-way time is the logged latency") {
  const auto recs = parse_log("# OSU MPI Latency Test v5.6.3\n# Size          Latency (us)\n0  0.45\n1048576   2500.00\n", "lat.txt");
  REQUIRE(recs.size() == 2);
  CHECK(recs[1].collective == "pingpong");
  CHECK(recs[1].ranks == 2);
  CHECK(recs[1].peer == 1);
  CHECK(recs[1].time_us == 2500.0);
  CHECK(recs[1].algbw_GBps == doctest::Approx(1048576.0 / 2500e3).scale(0));
}

TEST_CASE("osu_bibw: one exchange takes 2 x size / bandwidth (MB/s = 1e6 B/s)") {
  const auto recs = parse_log("# OSU MPI Bi-Directional Bandwidth Test v7.3\n# Size      Bandwidth (MB/s)\n1048576   100.00\n", "bibw.txt");
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].collective == "exchange");
  CHECK(recs[0].time_us == doctest::Approx(2.0 * 1048576 / 100e6 * 1e6).scale(0));  // 20971.52 us
}

TEST_CASE("osu_allgather: S = ranks x per-rank size; extra -f columns are counted") {
  ParseOptions o;
  o.ranks = 4;
  const auto recs = parse_log(
      "# OSU MPI Allgather Latency Test v7.3\n# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n"
      "262144   1000.0  900.0  1100.0  100\n",
      "ag.txt", o);
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].bytes == 1048576);  // 4 x 262144
  CHECK(recs[0].busbw_GBps == doctest::Approx(1048576.0 / 1000e3 * 0.75).scale(0));
}

TEST_CASE("OSU errors carry the line number") {
  CHECK_THROWS_WITH_AS(parse_log("# OSU MPI Allreduce Latency Test v5\n# Size  Avg Latency(us)\n4  1.0\n", "ar.txt"),
                       "ar.txt:3: an OSU collective table without the number of ranks; expected --ranks", ConfigError);
  CHECK_THROWS_WITH_AS(parse_log("# OSU MPI Latency Test v5\n# Size  Latency (us)\n4\n", "l.txt"),
                       "l.txt:3: a row of 1 columns; expected 2 columns as in the '# Size' header (truncated or "
                       "corrupted row?)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_log("# OSU MPI Latency Test v5\n# Size  Latency (us)\n4 -nan\n", "l.txt"),
                       "l.txt:3: latency '-nan'; expected a finite number >= 0", ConfigError);
  CHECK_THROWS_WITH_AS(parse_log("# OSU MPI Put Latency Test v5\n# Size  Latency (us)\n4 1\n", "p.txt"),
                       "p.txt:1: unknown collective in 'OSU MPI Put Latency Test v5'; expected an OSU latency, bandwidth, "
                       "bi-directional bandwidth, allreduce, reduce_scatter, allgather, broadcast, reduce or all-to-all test",
                       ConfigError);
  // fuzz_logs: a header without a value column let a one-column row read past its tokens.
  CHECK_THROWS_WITH_AS(parse_log("# OSU MPI Latency Test v5\n# Size  Lat (us)\n4\n", "l.txt"),
                       "l.txt:2: a column header 'Size  Lat (us)' without a value column; expected an OSU column header "
                       "such as '# Size  Latency (us)'",
                       ConfigError);
}

TEST_CASE("osu_bw (corpus file): one-direction stream, time per message = size / bandwidth (MB/s = 1e6 B/s)") {
  const std::string path = SHARDSIM_SOURCE_DIR "/tests/data/published/collectives/oci-bmopt336-cpu-2x1-osu-bw.txt";
  const auto recs = parse_log_file(path);
  REQUIRE(recs.size() == 1);  // "268435456  12254.16"
  CHECK(recs[0].collective == "stream");
  CHECK(is_point_to_point(recs[0].collective));
  CHECK(recs[0].ranks == 2);
  CHECK(recs[0].peer == 1);
  CHECK(recs[0].bytes == 268435456ULL);
  CHECK(recs[0].dtype == "char");
  // osu_bw.c: bw = size x window x iterations / t / 1e6, so one message takes size / (bw x 1e6) s,
  // half of what the same figure means for osu_bibw (both directions counted).
  CHECK(recs[0].time_us == doctest::Approx(268435456.0 / 12254.16e6 * 1e6).scale(0));  // 21905.9 us
  CHECK(recs[0].algbw_GBps == doctest::Approx(12.25416).scale(0));
  CHECK(recs[0].busbw_GBps == recs[0].algbw_GBps);
  const auto bibw = parse_log("# OSU MPI Bi-Directional Bandwidth Test v7.5\n# Size      Bandwidth (MB/s)\n268435456  12254.16\n", "bibw.txt");
  CHECK(bibw.at(0).time_us == doctest::Approx(2 * recs[0].time_us).scale(0));
  CHECK(canonical_collective("unidirectional") == "stream");
}
