// nccl-tests parsers against the stored fixtures (read in place) and corrupted variants.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "sim/error.hpp"
#include "traces/logs/parse.hpp"

using shardsim::ConfigError;
using namespace shardsim::logs;

namespace {

const std::string kDir = SHARDSIM_FIXTURES_DIR "/nccl_tests/";
const std::string kP4de = kDir + "all_reduce_perf_2x_p4de_srun_prefix.txt";
const std::string kP5 = kDir + "all_reduce_perf_2x_p5_mpirun_tagged_excerpt.txt";

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Replaces the `n`-th line (1-based) of `text`.
std::string replace_line(const std::string& text, int n, const std::string& line) {
  std::istringstream in(text);
  std::string out, l;
  int i = 0;
  while (std::getline(in, l)) out += (++i == n ? line : l) + "\n";
  return out;
}

}  // namespace

TEST_CASE("srun-prefixed all_reduce_perf fixture: 29 rows, 16 ranks solved from busbw/algbw") {
  const auto recs = parse_log_file(kP4de);
  REQUIRE(recs.size() == 29);  // 8 B .. 2 GiB, factor 2: 2^3 .. 2^31
  for (const auto& r : recs) {
    CHECK(r.collective == "allreduce");
    CHECK(r.ranks == 16);  // 78.33 / 41.78 = 1.8748 = 2(n-1)/n -> n = 2/(2-1.8748) = 16.0
    CHECK(r.backend == "nccl-tests");
    CHECK(r.dtype == "float");
  }
  CHECK(recs.front().bytes == 8);
  CHECK(recs.front().time_us == 164.3);
  CHECK(recs.back().bytes == 2147483648ULL);
  CHECK(recs.back().time_us == 51406);
  CHECK(recs.back().algbw_GBps == doctest::Approx(2147483648.0 / 51406e3).scale(0));           // 41.775
  CHECK(recs.back().busbw_GBps == doctest::Approx(2147483648.0 / 51406e3 * 30 / 16).scale(0));  // 78.33
  CHECK(recs[17].bytes == 1048576);
  CHECK(recs[17].time_us == 309.4);
}

TEST_CASE("mpirun-tagged fixture: elision line and footers skipped, in-place columns on request") {
  const auto recs = parse_log_file(kP5);
  REQUIRE(recs.size() == 7);
  CHECK(recs[0].bytes == 0);
  CHECK(recs[0].time_us == 15.51);
  CHECK(recs[0].algbw_GBps == 0);
  CHECK(recs[6].bytes == 2147483648ULL);
  CHECK(recs[6].time_us == 9197.5);
  CHECK(recs[6].ranks == 16);  // 437.79 / 233.49 = 1.87498 -> 16
  ParseOptions o;
  o.in_place = true;
  const auto inplace = parse_log_file(kP5, o);
  CHECK(inplace[6].time_us == 9195.2);
}

TEST_CASE("header lines give collective, ranks, hosts and ranks per node") {
  const std::string log =
      "# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21903\n"
      "# Collective test starting: reduce_scatter_perf\n"
      "# nThread 1 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#  Rank  0 Group  0 Pid   6899 on     nodeA device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid   6900 on     nodeA device  1 [0000:05:00] NVIDIA H100 80GB HBM3\n"
      "#  Rank  2 Group  0 Pid   6901 on     nodeB device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n"
      "#  Rank  3 Group  0 Pid   6902 on     nodeB device  1 [0000:05:00] NVIDIA H100 80GB HBM3\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "NCCL INFO some noise\n"
      "        1024            64     float     sum      -1    10.24    0.10    0.07      0    10.00    0.10    0.08      0\n";
  const auto recs = parse_log(log, "rs.log");
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].collective == "reducescatter");
  CHECK(recs[0].ranks == 4);
  CHECK(recs[0].ranks_per_node == 2);
  CHECK(recs[0].host == "nodeA");
  CHECK(recs[0].algbw_GBps == doctest::Approx(0.1).scale(0));  // 1024 B / 10.24 us
  CHECK(recs[0].busbw_GBps == doctest::Approx(0.075).scale(0));
  CHECK(recs[0].gpus_per_thread == 1);
  // One thread driving 4 GPUs (-g 4): the header's nGpus is kept for the launch floor.
  std::string g4 = log;
  g4.replace(g4.find("nGpus 1"), 7, "nGpus 4");
  CHECK(parse_log(g4, "rs.log").at(0).gpus_per_thread == 4);
  // No header: unknown, not 1.
  ParseOptions four;
  four.ranks = 4;
  four.collective = "reducescatter";
  CHECK_FALSE(parse_log(log.substr(log.find("#       size")), "rs_perf.log", four).at(0).gpus_per_thread.has_value());
}

TEST_CASE("corrupted logs fail with the line number, never a wrong record") {
  const std::string base = slurp(kP4de);
  // Line 3 is the first row (8 B).
  CHECK_THROWS_WITH_AS(parse_log(replace_line(base, 3, "0:            8             2     float     sum      -1    164.3    0.00"), "all_reduce_perf_x.txt"),
                       "all_reduce_perf_x.txt:3: a row of 7 columns; expected 13 columns as in the column header (truncated or "
                       "corrupted row?)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(
      parse_log(replace_line(base, 4, "0:           16             4     float     sum      -1    161.4    0.00    0.00      0    160.6    0.00    0.00      0   7"), "all_reduce_perf_x.txt"),
      "all_reduce_perf_x.txt:4: a row of 14 columns; expected 13 columns as in the column header (truncated or corrupted row?)",
      ConfigError);
  CHECK_THROWS_WITH_AS(
      parse_log(replace_line(base, 5, "0:           32             8     float     sum      -1      nan    0.00    0.00      0    160.9    0.00    0.00      0"), "all_reduce_perf_x.txt"),
      "all_reduce_perf_x.txt:5: time 'nan'; expected a finite number >= 0", ConfigError);
  CHECK_THROWS_WITH_AS(
      parse_log(replace_line(base, 6, "0:           64            16     float     sum      -1    161.0    9.00    0.00      0    160.6    0.00    0.00      0"), "all_reduce_perf_x.txt"),
      "all_reduce_perf_x.txt:6: algbw 9 disagrees with size/time = 0.0004 GB/s; expected a consistent row (size, time, algbw, busbw)",
      ConfigError);
  CHECK_THROWS_WITH_AS(parse_log("# Collective test starting: hypercube_perf\n" + base, "all_reduce_perf_x.txt"),
                       "all_reduce_perf_x.txt:1: unknown collective 'hypercube_perf'; expected an nccl-tests binary: all_reduce_perf, "
                       "reduce_scatter_perf, all_gather_perf, broadcast_perf, reduce_perf, alltoall_perf, sendrecv_perf",
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_log(base, "unnamed.txt"),
                       "unnamed.txt:3: a result row but no collective named (no '# Collective test starting' line); "
                       "expected a log that names its nccl-tests binary, a file named after it, or --collective",
                       ConfigError);
  ParseOptions o;
  o.collective = "allscatter";
  CHECK_THROWS_WITH_AS(parse_log(base, "all_reduce_perf_x.txt", o),
                       "--collective: unknown collective 'allscatter'; expected one of allreduce, reducescatter, "
                       "allgather, broadcast, reduce, alltoall, pingpong, exchange, sendrecv, stream",
                       ConfigError);
  CHECK_THROWS_WITH_AS(parse_log("# just a comment\n", "empty.txt"),
                       "empty.txt: no result rows; expected an nccl-tests log with at least one row", ConfigError);
  // fuzz_logs: strings that go into the records' JSON must be UTF-8 (`bench parse` failed writing them).
  CHECK_THROWS_WITH_AS(parse_log("#  Rank  0 Group  0 Pid 1 on host\xff device  0 [0x04] H100\n" + base, "all_reduce_perf_x.txt"),
                       "all_reduce_perf_x.txt:1: byte 0xff in the host name is not UTF-8; expected UTF-8 text", ConfigError);
  CHECK_THROWS_WITH_AS(
      parse_log(replace_line(base, 3, "0:            8             2     fl\xc3oat     sum      -1    164.3    0.00    0.00      0    160.6    0.00    0.00      0"), "all_reduce_perf_x.txt"),
      "all_reduce_perf_x.txt:3: byte 0xc3 in the type is not UTF-8; expected UTF-8 text", ConfigError);
}

TEST_CASE("nccl-tests -J JSON report (version 2, src/util.cu)") {
  const std::string json = R"({"version":2,"start_time":"2025-03-01 10:00:00","args":["./build/all_gather_perf","-b","1M"],
    "env":[],"nccl_version":22005,
    "config":{"nthreads":1,"ngpus":1,"devices":[
      {"rank":0,"group":0,"pid":1,"hostname":"gpu-a","device":0,"device_hex":"0000:04:00","device_info":"H100"},
      {"rank":1,"group":0,"pid":2,"hostname":"gpu-a","device":1,"device_hex":"0000:05:00","device_info":"H100"}]},
    "results":[{"size":1048576,"count":262144,"type":"float","redop":"none","root":"    -1",
      "out_of_place":{"time":100.000000,"alg_bw":10.485760,"bus_bw":5.242880,"nwrong":0.0},
      "in_place":{"time":90.000000,"alg_bw":11.650844,"bus_bw":5.825422,"nwrong":0.0},
      "actual_iterations":20,"experiment_name":""}]})";
  const auto recs = parse_log(json, "ag.json");
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].collective == "allgather");
  CHECK(recs[0].ranks == 2);
  CHECK(recs[0].ranks_per_node == 2);
  CHECK(recs[0].host == "gpu-a");
  CHECK(recs[0].date == "2025-03-01 10:00:00");
  CHECK(recs[0].time_us == 100.0);
  CHECK(recs[0].busbw_GBps == doctest::Approx(5.24288).scale(0));  // 10.48576 x (2-1)/2
  std::string nan = json;
  nan.replace(nan.find("\"time\":100.000000"), 17, "\"time\":\"nan\"");
  CHECK_THROWS_WITH_AS(parse_log(nan, "ag.json"),
                       "ag.json#/results/0/out_of_place/time: time 'nan'; expected a finite number >= 0", ConfigError);
  // fuzz_logs: an empty device list gave records of 0 ranks; now the count is solved as when
  // the list is missing (busbw/algbw = 0.5 for all-gather: 2 ranks).
  std::string no_devices = json;
  no_devices.replace(no_devices.find("\"devices\":["), 11, "\"devices\":[],\"x\":[");
  CHECK(parse_log(no_devices, "ag.json").at(0).ranks == 2);
  std::string unknown = json;
  unknown.replace(unknown.find("all_gather_perf"), 15, "gather_perf");
  CHECK_THROWS_WITH_AS(parse_log(unknown, "ag.json"),
                       "ag.json#/args/0: unknown collective './build/gather_perf'; expected an nccl-tests binary: "
                       "all_reduce_perf, reduce_scatter_perf, all_gather_perf, broadcast_perf, reduce_perf, "
                       "alltoall_perf, sendrecv_perf",
                       ConfigError);
}
