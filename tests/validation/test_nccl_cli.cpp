// Issue 14, the small pieces: --ranks-per-node placement in `collective` (run_collective) and
// `validate --algorithm auto` (validation::predict), on GPU presets.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "analysis/commands/collective_run.hpp"
#include "analysis/validation/published.hpp"
#include "analysis/validation/validate.hpp"
#include "models/collectives/algorithm.hpp"
#include "models/collectives/nccl_model.hpp"
#include "sim/error.hpp"
#include "topologies/load.hpp"

using namespace shardsim;

TEST_CASE("placed_group: block placement over the topology's nodes, with exact errors") {
  const auto t = topo::make_topology("dgx-h100-32", "t");
  CHECK(coll::placed_group(t, 2, 1, "--ranks-per-node") == std::vector<int>{0, 8});
  CHECK(coll::placed_group(t, 4, 2, "--ranks-per-node") == std::vector<int>{0, 1, 8, 9});
  CHECK(coll::placed_group(t, 16, 8, "--ranks-per-node") == [] {
    std::vector<int> v(16);
    for (int i = 0; i < 16; ++i) v[static_cast<std::size_t>(i)] = i;
    return v;
  }());
  CHECK_THROWS_WITH_AS(coll::placed_group(t, 4, 3, "--ranks-per-node"),
                       "--ranks-per-node: 3 ranks per node for 4 ranks; expected a divisor of the rank count", ConfigError);
  CHECK_THROWS_WITH_AS(coll::placed_group(t, 5, 1, "--ranks-per-node"),
                       "--ranks-per-node: 5 nodes of 1 ranks on topology 'dgx-h100-32' of 4 nodes; expected at most 4 "
                       "ranks (1 per node)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(coll::placed_group(t, 18, 9, "--ranks-per-node"),
                       "--ranks-per-node: 9 ranks on node 0 of topology 'dgx-h100-32', which has 8 devices; expected at "
                       "most 8 ranks per node",
                       ConfigError);
  // A topology without nodes is one node.
  const auto one = topo::make_topology("dgx-h100-8", "t");
  CHECK(coll::placed_group(one, 4, 4, "x") == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("collective --ranks 2 --ranks-per-node 1: two nodes x one GPU, through one NIC each") {
  cli::CollectiveOptions o;
  o.topology = "dgx-h100-16";
  o.bytes = "1GiB";
  o.ranks = 2;
  o.ranks_per_node = 1;
  const auto placed = cli::run_collective(o);
  o.ranks_per_node = 0;
  const auto packed = cli::run_collective(o);
  REQUIRE(placed.size() == 1);
  REQUIRE(packed.size() == 1);
  // 2 ranks in 2 nodes: NCCL's ring over one 400 Gb/s NIC at InfiniBand's wire efficiency;
  // 2 ranks of one node: NVLink at NCCL's 370.8 GB/s. busbw = algbw for n = 2.
  CHECK(placed[0].algorithm == "nccl:Ring/Simple");
  const double nic = 50.0 * 4096.0 / (4096.0 + 26.0);
  // Ring/Simple latency across 2 nodes of 1: base 8.4 + 2 inter steps x (NET Tree/Simple 14,
  // ppn 1) x 1.4 plateau; 0 intra steps.
  const double t_us = (8.4 + 2 * 14.0) * 1.4 + static_cast<double>(1ull << 30) / (1000 * nic);
  CHECK(placed[0].time_s == doctest::Approx(t_us * 1e-6).epsilon(1e-9).scale(0));
  CHECK(packed[0].busbw_GBps > 5 * placed[0].busbw_GBps);
  CHECK(placed[0].config["ranks_per_node"] == 1);
  o.ranks_per_node = 1;
  o.ranks = 0;
  o.groups = "0-1";
  CHECK_THROWS_WITH_AS(cli::run_collective(o),
                       "--ranks-per-node: with --groups; expected one of --groups and --ranks-per-node", ConfigError);
}

namespace {
// A record of `ranks` (ranks_per_node per node) and the options predicting it with NCCL's model
// on dgx-h100-16, analytically.
logs::BenchRecord record_of(const char* collective, int ranks, int ranks_per_node, double time_us) {
  logs::BenchRecord r;
  r.source = "t";
  r.collective = collective;
  r.ranks = ranks;
  r.ranks_per_node = ranks_per_node;
  r.bytes = 1ull << 30;
  r.time_us = time_us;
  return r;
}
validation::Options nccl_auto_options() {
  validation::Options o;
  o.topology = "dgx-h100-16";
  o.algorithm = "auto";
  o.analytical = true;
  return o;
}
}  // namespace

TEST_CASE("validate --algorithm auto: NCCL's time on a GPU preset, the record's ranks per node") {
  const auto r = record_of("allreduce", 2, 1, 1000);
  auto o = nccl_auto_options();
  const auto rows = validation::predict({r}, o);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].model_algorithm == "nccl:Ring/Simple");
  coll::CollectiveOp op;
  op.size_bytes = r.bytes;
  op.group = {0, 8};
  const auto t = topo::make_topology("dgx-h100-16", "t");
  CHECK(rows[0].predicted_us == doctest::Approx(coll::nccl_predict(t, op).time_s * 1e6).scale(0));
  // An algorithm that cannot run says so and points to auto.
  o.algorithm = "in-network";
  CHECK_THROWS_WITH_AS(validation::predict({r}, o),
                       "t (allreduce 1073741824 B): --algorithm in-network cannot run here: no switch with "
                       "in_network_reduction is directly linked to all 2 ranks; expected an algorithm that applies to "
                       "this topology and group, or --algorithm auto",
                       ConfigError);
}

TEST_CASE("validate --algorithm auto predicts nccl-tests sendrecv records; other runs keep them as the fit") {
  auto r = record_of("sendrecv", 16, 8, 25000);
  r.backend = "nccl-tests";
  auto o = nccl_auto_options();
  const auto rows = validation::predict({r}, o);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].model_algorithm == "nccl:p2p/Simple");
  coll::CollectiveOp op;
  op.kind = coll::OpKind::sendrecv;
  op.size_bytes = r.bytes;
  for (int i = 0; i < 16; ++i) op.group.push_back(i);
  const auto t = topo::make_topology("dgx-h100-16", "t");
  CHECK(rows[0].predicted_us == doctest::Approx(coll::nccl_predict(t, op).time_s * 1e6).scale(0));
  // Flow fidelity runs the ring shift ("direct"): 7 -> 8 and 15 -> 0 cross the network.
  o.analytical = false;
  const auto flow = validation::predict({r}, o);
  REQUIRE(flow.size() == 1);
  CHECK(flow[0].model_algorithm == "nccl:p2p/Simple (flow: direct)");
  CHECK(flow[0].predicted_us > 0.9 * rows[0].predicted_us);
  // A log of one thread driving the 16 GPUs (-g 16): its launches bound the time from below.
  r.gpus_per_thread = 16;
  r.bytes = 1024;
  o.analytical = true;
  const auto g16 = validation::predict({r}, o);
  REQUIRE(g16.size() == 1);
  CHECK(g16[0].predicted_us == doctest::Approx(16 * 33.7 / 8).epsilon(1e-12));
  CHECK(g16[0].model_algorithm == "nccl:p2p/Simple (-g 16 launch floor)");
  // A record that does not say takes --gpus-per-thread; one that says keeps its own.
  r.gpus_per_thread.reset();
  CHECK(validation::predict({r}, o).at(0).model_algorithm == "nccl:p2p/Simple");
  o.gpus_per_thread = 8;
  CHECK(validation::predict({r}, o).at(0).predicted_us == doctest::Approx(33.7).epsilon(1e-12));
  r.gpus_per_thread = 16;
  CHECK(validation::predict({r}, o).at(0).predicted_us == doctest::Approx(16 * 33.7 / 8).epsilon(1e-12));
  o.gpus_per_thread.reset();
  // Without auto a sendrecv record is a point-to-point record: skipped (calibration's input).
  o.algorithm = "ring";
  CHECK(validation::predict({r}, o).empty());
}

TEST_CASE("validate --published: an unknown corpus format is an error listing the readers' formats") {
  const auto dir = std::filesystem::temp_directory_path() / "shardsim_published_format_test";
  std::filesystem::create_directories(dir);
  const auto index = (dir / "index.json").string();
  std::ofstream(index) << R"({"files": [{"file": "x.txt", "format": "nccl-test", "collective": "all_reduce", "ranks": 8}]})";
  CHECK_THROWS_WITH_AS(validation::predict_published(index),
                       (index + ": /files/0/format: 'nccl-test'; expected one of nccl-tests, csv-summary, csv-busbw, osu").c_str(),
                       ConfigError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("validate: an MPI record without a forced algorithm is predicted with OpenMPI's fixed decision") {
  logs::BenchRecord r;
  r.source = "t";
  r.backend = "mpi";
  r.ranks = 4;
  r.bytes = 1 << 20;
  r.time_us = 1000;
  r.topology = {{"builder", "switch"}, {"n", 4}, {"bw", "400Mbit"}, {"lat", "20us"}, {"class", "ethernet"}};
  // Each decision's prediction is the forced algorithm's (the same schedule): 4 ranks, 1 MiB.
  struct Case {
    std::string coll, label, forced;
  };
  for (const auto& c : {Case{"allreduce", "ompi-decision:rabenseifner", "rabenseifner"},
                        Case{"reducescatter", "ompi-decision:ring", "ring"},
                        Case{"broadcast", "ompi-decision:pipeline(chain)", "pipeline"},
                        Case{"alltoall", "ompi-decision:linear", "linear"}}) {
    CAPTURE(c.coll);
    r.collective = c.coll;
    r.algorithm.reset();
    const auto decided = validation::predict({r}, validation::Options{});
    REQUIRE(decided.size() == 1);
    CHECK(decided[0].model_algorithm == c.label);
    r.algorithm = c.forced;
    const auto forced_rows = validation::predict({r}, validation::Options{});
    REQUIRE(forced_rows.size() == 1);
    CHECK(decided[0].predicted_us == forced_rows[0].predicted_us);
  }
  // A choice shardsim does not model is an error naming it.
  r.collective = "allgather";
  r.algorithm.reset();
  r.ranks = 2;
  r.topology["n"] = 2;
  CHECK_THROWS_WITH_AS(validation::predict({r}, validation::Options{}),
                       doctest::Contains("OpenMPI's fixed decision for allgather on 2 ranks at total_dsize 524288 B is "
                                         "'two_proc' (id 6): OpenMPI allgather 'two_proc': two ranks only"),
                       ConfigError);
}
