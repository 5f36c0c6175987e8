// IMB-MPI1 tables. The input is written here by hand after the output format shown in the
// Intel MPI Benchmarks User Guide (section headers, "#bytes #repetitions t_min[usec] t_max[usec]
// t_avg[usec]" for collectives, "t[usec] Mbytes/sec" for PingPong); the numbers are made up.
#include <doctest/doctest.h>

#include "sim/error.hpp"
#include "traces/logs/parse.hpp"

using shardsim::ConfigError;
using namespace shardsim::logs;

namespace {

const std::string kImb =
    "#------------------------------------------------------------\n"
    "#    Intel(R) MPI Benchmarks 2021.3, MPI-1 part\n"
    "#------------------------------------------------------------\n"
    "# List of Benchmarks to run:\n"
    "# PingPong\n# Allreduce\n# Allgather\n# Barrier\n"
    "\n"
    "#---------------------------------------------------\n"
    "# Benchmarking PingPong\n"
    "# #processes = 2\n"
    "# ( 2 additional processes waiting in MPI_Barrier)\n"
    "#---------------------------------------------------\n"
    "       #bytes #repetitions      t[usec]   Mbytes/sec\n"
    "            0         1000         1.50         0.00\n"
    "      1048576           40       100.00     10485.76\n"
    "\n"
    "#----------------------------------------------------------------\n"
    "# Benchmarking Allreduce\n"
    "# #processes = 4\n"
    "#----------------------------------------------------------------\n"
    "       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]\n"
    "            0         1000         0.03         0.04         0.03\n"
    "      1048576           40       180.00       200.00       190.00\n"
    "\n"
    "#----------------------------------------------------------------\n"
    "# Benchmarking Allgather\n"
    "# #processes = 4\n"
    "#----------------------------------------------------------------\n"
    "       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]\n"
    "       262144           40       400.00       500.00       450.00\n"
    "\n"
    "#---------------------------------------------------\n"
    "# Benchmarking Barrier\n"
    "# #processes = 4\n"
    "#---------------------------------------------------\n"
    " #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]\n"
    "         1000         2.00         2.50         2.20\n";

}  // namespace

TEST_CASE("IMB: PingPong, Allreduce and Allgather sections; Barrier skipped") {
  CHECK(detect_format(kImb) == LogFormat::imb);
  const auto recs = parse_log(kImb, "imb.txt");
  REQUIRE(recs.size() == 5);  // 2 PingPong + 2 Allreduce + 1 Allgather rows
  CHECK(recs[1].collective == "pingpong");
  CHECK(recs[1].ranks == 2);
  CHECK(recs[1].peer == 1);
  CHECK(recs[1].time_us == 100.0);  // t[usec] is half the round trip already
  CHECK(recs[2].collective == "allreduce");
  CHECK(recs[2].ranks == 4);
  CHECK(recs[2].backend == "imb");
  CHECK(recs[3].bytes == 1048576);
  CHECK(recs[3].time_us == 200.0);  // t_max, not t_avg (190) or t_min (180)
  CHECK(recs[3].busbw_GBps == doctest::Approx(1048576.0 / 200e3 * 2 * 3 / 4).scale(0));
  CHECK(recs[4].collective == "allgather");
  CHECK(recs[4].bytes == 4 * 262144);  // IMB #bytes is per process; S = n x #bytes
  CHECK(recs[4].busbw_GBps == doctest::Approx(4.0 * 262144 / 500e3 * 3 / 4).scale(0));
}

TEST_CASE("IMB errors name the line") {
  std::string bad = kImb;
  bad.replace(bad.find("180.00"), 6, "180.00 7");
  CHECK_THROWS_WITH_AS(parse_log(bad, "imb.txt"),
                       "imb.txt:25: a row of 6 columns; expected 5 columns as in the '#bytes' header (truncated or "
                       "corrupted row?)",
                       ConfigError);
  std::string nan = kImb;
  nan.replace(nan.find("200.00"), 6, "   nan");
  CHECK_THROWS_WITH_AS(parse_log(nan, "imb.txt"), "imb.txt:25: time 'nan'; expected a finite number >= 0", ConfigError);
  std::string no_procs = kImb;
  no_procs.replace(no_procs.find("# #processes = 4"), 16, "#");
  CHECK_THROWS_WITH_AS(parse_log(no_procs, "imb.txt"),
                       "imb.txt:24: a result row without '# #processes = N' in its section; expected the line, or --ranks",
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_log("# Benchmarking Barrier\n# #processes = 2\n #repetitions t_min[usec]\n 10 1.0\n", "b.txt"),
                       "b.txt: no result rows of a benchmark read here; expected an IMB Allreduce, Reduce, Reduce_scatter, "
                       "Allgather, Bcast, Alltoall or PingPong table",
                       ConfigError);
}
