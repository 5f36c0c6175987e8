// The published corpus (tests/data/published/collectives, read in place) through the log
// parsers: elided rank lists, the collective from command lines and file names, logs holding
// several runs, osu_bw. Expected values come from the file names / SOURCE files (NxG = N nodes of
// G GPUs) and from nccl-tests' busbw definitions (doc/PERFORMANCE.md), not from the parser.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <regex>
#include <vector>
#include <string>
#include <tuple>
#include <fstream>
#include <sstream>

#include "sim/error.hpp"
#include "traces/logs/parse.hpp"

using shardsim::ConfigError;
using namespace shardsim::logs;

namespace {

const std::string kCorpus = SHARDSIM_SOURCE_DIR "/tests/data/published/collectives/";

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Drops every line containing `what`.
std::string drop_lines(const std::string& text, const std::string& what) {
  std::istringstream in(text);
  std::string out, l;
  while (std::getline(in, l)) {
    if (l.find(what) == std::string::npos) out += l + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("GB300 16x4 all_reduce_perf: elided rank list counts 64 ranks (largest index 63), 4 per node") {
  const std::string path = kCorpus + "oci-gb300-nvl72-16x4-all_reduce_perf.txt";
  const auto recs = parse_log_file(path);  // no --ranks
  REQUIRE(recs.size() == 2);  // the file keeps the two largest rows (8 GiB, 16 GiB)
  for (const auto& r : recs) {
    CHECK(r.collective == "allreduce");
    CHECK(r.ranks == 16 * 4);
    CHECK(r.ranks_per_node == 4);
  }
  // Logged: 8589934592 B in 18842 us, algbw 455.88, busbw 897.52 GB/s; busbw = algbw x 2(n-1)/n.
  CHECK(recs[0].bytes == 8589934592ULL);
  CHECK(recs[0].time_us == 18842);
  CHECK(recs[0].busbw_GBps == doctest::Approx(8589934592.0 / 18842e3 * 2 * 63 / 64).scale(0));
  // Within the log's rounding: time to 0.5 us of 18842 / 36350, busbw to 0.005 GB/s.
  CHECK(std::fabs(recs[0].busbw_GBps - 897.52) <= 897.52 * 0.5 / 18842 + 0.005);
  CHECK(std::fabs(recs[1].busbw_GBps - 930.48) <= 930.48 * 0.5 / 36350 + 0.005);
  // Counting the 4 printed rank lines instead (the old rule) is inconsistent with the log.
  ParseOptions four;
  four.ranks = 4;
  CHECK_THROWS_WITH_AS(parse_log_file(path, four),
                       (path + ":16: busbw (for 4 ranks) 897.52 disagrees with size/time = 683.8394 GB/s; expected a "
                               "consistent row (size, time, algbw, busbw)")
                           .c_str(),
                       ConfigError);
}

TEST_CASE("every GB300 file (8, 6 of them with elided rank lists) parses without --ranks; ranks = nodes x 4") {
  for (const auto& [file, nodes, coll] :
       {std::tuple{"oci-gb300-nvl72-1x4-all_reduce_perf.txt", 1, "allreduce"},
        {"oci-gb300-nvl72-1x4-alltoall_perf.txt", 1, "alltoall"},
        {"oci-gb300-nvl72-2x4-all_reduce_perf.txt", 2, "allreduce"},
        {"oci-gb300-nvl72-2x4-alltoall_perf.txt", 2, "alltoall"},
        {"oci-gb300-nvl72-16x4-all_reduce_perf.txt", 16, "allreduce"},
        {"oci-gb300-nvl72-16x4-alltoall_perf.txt", 16, "alltoall"},
        {"oci-gb300-nvl72-32x4-2racks-all_reduce_perf.txt", 32, "allreduce"},
        {"oci-gb300-nvl72-32x4-2racks-alltoall_perf.txt", 32, "alltoall"}}) {
    const std::string name = file;  // CAPTURE takes a lambda capture: clang 14 refuses structured bindings there
    CAPTURE(name);
    const auto recs = parse_log_file(kCorpus + name);
    REQUIRE(!recs.empty());
    for (const auto& r : recs) {
      CHECK(r.collective == coll);
      CHECK(r.ranks == nodes * 4);
      CHECK(r.ranks_per_node == 4);
      const int n = nodes * 4;
      const double f = std::string(coll) == "allreduce" ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
      CHECK(r.busbw_GBps == doctest::Approx(static_cast<double>(r.bytes) / (r.time_us * 1e3) * f).scale(0));
    }
  }
}

TEST_CASE("elided rank list: ranks per node only when the printed lines fit block placement") {
  const std::string rows =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "     1048576        262144     float     sum      -1   100.00   10.49   20.64      0   100.00   10.49   20.64      0\n";
  const auto parse = [&](const std::string& ranks) { return parse_log("# Collective test starting: all_reduce_perf\n" + ranks + rows, "x.txt"); };
  // 64 ranks; 2-rank blocks would need 32 hosts: the printed lines say host B holds rank 62 on device 2.
  const std::string good =
      "#  Rank  0 Group  0 Pid 1 on A device  0 [0x01] GPU\n#  Rank  1 Group  0 Pid 2 on A device  1 [0x02] GPU\n...\n"
      "#  Rank 62 Group  0 Pid 3 on B device  2 [0x03] GPU\n#  Rank 63 Group  0 Pid 4 on B device  3 [0x04] GPU\n";
  const auto ok = parse(good);
  CHECK(ok.at(0).ranks == 64);  // busbw 20.64 = 10.49 x 2 x 63/64
  CHECK(ok.at(0).ranks_per_node == 4);
  // Rank 62 on device 0: not block placement of 4 per host -> unknown.
  std::string bad_device = good;
  bad_device.replace(bad_device.find("on B device  2"), 14, "on B device  0");
  CHECK(!parse(bad_device).at(0).ranks_per_node);
  // Ranks 62, 63 on host A too: blocks 0 and 15 on one host -> unknown.
  std::string same_host = good;
  while (same_host.find("on B") != std::string::npos) same_host.replace(same_host.find("on B"), 4, "on A");
  CHECK(!parse(same_host).at(0).ranks_per_node);
  CHECK_THROWS_WITH_AS(parse("#  Rank  x Group  0 Pid 1 on A device  0 [0x01] GPU\n"),
                       "x.txt:2: rank index 'x'; expected an unsigned integer", ConfigError);
}

TEST_CASE("collective from the command line and from the file name") {
  const std::string log = slurp(kCorpus + "h100-ib400-cluster8-2x8-all_reduce_perf.txt");
  const auto by_file = parse_log(log, "h100-ib400-cluster8-2x8-all_reduce_perf.txt");
  REQUIRE(by_file.size() == 14);
  CHECK(by_file[0].ranks == 16);
  CHECK(by_file[0].ranks_per_node == 8);
  // The same table under a name that says nothing: the command line names the binary.
  const auto by_cmd =
      parse_log("mpirun -np 16 -H a:8,b:8 -x NCCL_DEBUG=WARN /opt/nccl-tests/build/all_reduce_perf_mpi -b 1M -e 8G -f 2\n" + log,
                "run.log");
  REQUIRE(by_cmd.size() == 14);
  CHECK(by_cmd[0].collective == "allreduce");
  CHECK(by_cmd[0].busbw_GBps == by_file[0].busbw_GBps);
  // Launcher prefixes and quotes around the binary (a GB300 alltoall table without its
  // "# Collective test starting" line).
  const std::string a2a = drop_lines(slurp(kCorpus + "oci-gb300-nvl72-1x4-alltoall_perf.txt"), "Collective test");
  CHECK_THROWS_AS(parse_log(a2a, "run.log"), ConfigError);
  const auto tagged = parse_log("[1,0]<stdout>:+ srun --mpi=pmix \"./alltoall_perf\" -b 512K\n" + a2a, "run.log");
  CHECK(tagged.at(0).collective == "alltoall");
  CHECK(tagged.at(0).ranks == 4);
  // "# Collective test starting" wins over a command line; --collective over both.
  CHECK(parse_log("./alltoall_perf -b 1M\n# Collective test starting: all_reduce_perf\n" + log, "run.log").at(0).collective ==
        "allreduce");
  // An unknown *_perf binary on a command line names nothing.
  CHECK_THROWS_WITH_AS(parse_log("./hypercube_perf -b 1M\n" + log, "run.log"),
                       "run.log:25: a result row but no collective named (no '# Collective test starting' line); "
                       "expected a log that names its nccl-tests binary, a file named after it, or --collective",
                       ConfigError);
  CHECK(parse_log(log, "logs/nccl_allreduce_2x8.log").at(0).collective == "allreduce");
  CHECK(collective_from_file_name("/x/nccl_allreduce_16gpu.log") == "allreduce");
  CHECK(collective_from_file_name("nccl-all_gather.txt") == "allgather");
  CHECK(collective_from_file_name("NCCL_AllToAll_run3.txt") == "alltoall");
  CHECK(collective_from_file_name("nccl_bcast.log") == "broadcast");
  CHECK(collective_from_file_name("nccl_reduce_scatter_8.log") == "reducescatter");
  CHECK(collective_from_file_name("nccl_reduce.log") == "reduce");
  CHECK(collective_from_file_name("bench_reduce_scatter_perf_4n.txt") == "reducescatter");
  CHECK(collective_from_file_name("a/all_reduce_perf/run.txt") == std::nullopt);  // directories do not count
  CHECK(collective_from_file_name("nccl_allreducer.log") == std::nullopt);
  CHECK(collective_from_file_name("results.txt") == std::nullopt);
}

TEST_CASE("a log holding two runs gives two record sets, each with its own collective and ranks") {
  const std::string a = kCorpus + "oci-gb300-nvl72-2x4-all_reduce_perf.txt";
  const std::string b = kCorpus + "oci-gb300-nvl72-16x4-alltoall_perf.txt";
  const auto ra = parse_log_file(a);
  const auto rb = parse_log_file(b);
  const std::string both = slurp(a) + slurp(b);
  const auto runs = parse_nccl_tests_runs(both, "both.log");
  REQUIRE(runs.size() == 2);
  REQUIRE(runs[0].size() == ra.size());
  REQUIRE(runs[1].size() == rb.size());
  for (size_t i = 0; i < ra.size(); ++i) {
    CHECK(runs[0][i].collective == "allreduce");
    CHECK(runs[0][i].ranks == 8);
    CHECK(runs[0][i].bytes == ra[i].bytes);
    CHECK(runs[0][i].busbw_GBps == ra[i].busbw_GBps);
  }
  for (size_t i = 0; i < rb.size(); ++i) {
    CHECK(runs[1][i].collective == "alltoall");
    CHECK(runs[1][i].ranks == 64);
    CHECK(runs[1][i].busbw_GBps == rb[i].busbw_GBps);
  }
  CHECK(parse_log(both, "both.log").size() == ra.size() + rb.size());
  // Two old-style logs (no test-starting line, "# nThread" header): 2x8 and 4x8 of one binary.
  const std::string c = slurp(kCorpus + "h100-ib400-cluster8-2x8-all_reduce_perf.txt");
  const std::string d = slurp(kCorpus + "h100-ib400-cluster8-4x8-all_reduce_perf.txt");
  const auto runs2 = parse_nccl_tests_runs(c + d, "sweep-all_reduce_perf.log");
  REQUIRE(runs2.size() == 2);
  CHECK(runs2[0].at(0).ranks == 16);
  CHECK(runs2[1].at(0).ranks == 32);
  CHECK(runs2[1].at(0).ranks_per_node == 8);
  // A second command line after the first table names the second run's binary.
  const std::string e = drop_lines(slurp(kCorpus + "oci-gb300-nvl72-2x4-alltoall_perf.txt"), "Collective test");
  const auto runs3 = parse_nccl_tests_runs("./all_reduce_perf -b 1M\n" + c + "./alltoall_perf -b 512K\n" + e, "sweep.log");
  REQUIRE(runs3.size() == 2);
  CHECK(runs3[0].at(0).collective == "allreduce");
  CHECK(runs3[1].at(0).collective == "alltoall");
  CHECK(runs3[1].at(0).ranks == 8);
  // Naming the wrong binary for the second table is caught by the busbw check.
  CHECK_THROWS_AS(parse_nccl_tests_runs("./all_reduce_perf -b 1M\n" + c + "./alltoall_perf -b 1M\n" + d, "sweep.log"),
                  ConfigError);
  // A run cut off after its header is an error naming the line where it starts.
  const int c_lines = static_cast<int>(std::count(c.begin(), c.end(), '\n'));
  CHECK_THROWS_WITH_AS(parse_nccl_tests_runs(c + drop_lines(d, "float"), "sweep-all_reduce_perf.log"),
                       ("sweep-all_reduce_perf.log:" + std::to_string(c_lines + 1) +
                        ": a run header without result rows; expected result rows after every run's header (truncated log?)")
                           .c_str(),
                       ConfigError);
}

TEST_CASE("every nccl-tests / OSU table of the corpus parses; ranks = N x G of the file name '<N>x<G>'") {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(kCorpus)) {
    const std::string f = e.path().filename().string();
    if (f.ends_with(".txt") && !f.ends_with(".SOURCE.txt")) files.push_back(f);
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 20);
  const std::regex shape("-(\\d+)x(\\d+)-");
  int parsed = 0;
  for (const auto& f : files) {
    CAPTURE(f);
    std::smatch m;
    REQUIRE(std::regex_search(f, m, shape));
    const int nodes = std::stoi(m[1].str()), per_node = std::stoi(m[2].str());
    ParseOptions o;
    const bool osu_collective = f.find("osu-allreduce") != std::string::npos || f.find("osu-alltoall") != std::string::npos;
    if (osu_collective) o.ranks = nodes * per_node;  // OSU tables carry no rank count
    std::ifstream in(kCorpus + f);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const bool listed = text.find("#  Rank") != std::string::npos || text.find("# Rank") != std::string::npos;
    if (f.find("_perf") != std::string::npos && !listed) {
      // Published without a rank list: the ranks come from busbw / algbw where the log's 2
      // decimals pin them down (GCP's all-gather tables); else the parse asks for --ranks (OCI's
      // GB200 all-to-all: 127 and 129 fit; sendrecv: busbw = algbw says nothing).
      try {
        const auto solved = parse_log_file(kCorpus + f, o);
        REQUIRE(!solved.empty());
        CHECK(solved.front().ranks == nodes * per_node);
      } catch (const ConfigError& e) {
        CHECK(std::string(e.what()).find("--ranks") != std::string::npos);
      }
      o.ranks = nodes * per_node;
      o.ranks_per_node = per_node;
    }
    const auto recs = parse_log_file(kCorpus + f, o);
    REQUIRE(!recs.empty());
    for (const auto& r : recs) {
      if (f.find("osu-latency") != std::string::npos || f.find("osu-bw") != std::string::npos) {
        CHECK(r.ranks == 2);
      } else {
        CHECK(r.ranks == nodes * per_node);
      }
      if (f.find("_perf") != std::string::npos) {
        CHECK(r.ranks_per_node == per_node);
        // The file name's binary (collective_from_file_name) agrees with what the log's header
        // or command line gave the parser.
        const auto want = collective_from_file_name(f);
        REQUIRE(want);
        CHECK(r.collective == *want);
      }
    }
    ++parsed;
  }
  MESSAGE("corpus tables parsed: " << parsed);
}

TEST_CASE("2019-era nccl-tests logs: 'Rank r Pid p' lines without Group, an error column, no root for all-reduce") {
  // DGX-2 V100 tables (wohlbier/nccl-tests README): broadcast / reduce have busbw = algbw, so the
  // rank count comes from the 12 rank lines alone; "nGpus 12" is the one-thread -g 12 run.
  for (const auto& [file, coll] : {std::pair{"dgx2-v100-1x12-broadcast_perf.txt", "broadcast"},
                                   {"dgx2-v100-1x12-reduce_perf.txt", "reduce"},
                                   {"dgx2-v100-1x12-all_reduce_perf.txt", "allreduce"}}) {
    const std::string name = file;
    CAPTURE(name);
    const auto recs = parse_log_file(kCorpus + name);
    REQUIRE(recs.size() == 31);
    for (const auto& r : recs) {
      CHECK(r.collective == coll);
      CHECK(r.ranks == 12);
      CHECK(r.ranks_per_node == 12);
      CHECK(r.gpus_per_thread == 12);
    }
    CHECK(recs.back().bytes == 8589934592ull);
  }
}
