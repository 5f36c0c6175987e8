// Replay of a format-v2 trace (models/step/replay.hpp, issue 12): every rank's recorded graph
// on one executor, each collective on its own process group, collectives of different groups
// concurrent on one shared flow network.
//  - tests/data/traces/two_groups_8ranks.json: 8 ranks, groups dp_a = {0,1,4,5} and
//    dp_b = {2,3,6,7}; each rank: forward 1 ms, a 16 MiB all-reduce on its group, update
//    0.5 ms (measured durations). Both all-reduces start at 1 ms.
//    * On a fat tree with two leaves of four hosts and one spine, each group's ring
//      0->1->4->5->0 (2->3->6->7->2) crosses the leaves' uplinks in both directions (1->4 and
//      5->0; 3->6 and 7->2). Ring all-reduce: 2(n-1) = 6 steps, each rank sending S/n; every
//      rank of a step waits for one cross-leaf transfer (rank-local barrier,
//      models/collectives/collective.hpp), so a step takes the cross route's latency (4 links)
//      plus (S/n) / (its rate on the uplink): U alone, U/2 with the other group in flight (two
//      flows on one uplink, max-min fair: SimGrid lmm, sim/flow_network.hpp).
//    * On a non-blocking switch the groups' routes are disjoint: exactly the isolated time,
//      6 x (2 lat + (S/n)/B).
//  - The Chakra fixture imported with every rank's ops replays on its 4 ranks to the time of
//    `shardsim collective` (the function behind it).
//  - A point-to-point send/recv pair: a rendezvous, then the transfer.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <set>

#include "analysis/commands/collective_run.hpp"
#include "models/step/step.hpp"
#include "models/step/topology_comm.hpp"
#include "sim/error.hpp"
#include "topologies/load.hpp"
#include "traces/importers/input.hpp"
#include "traces/importers/native.hpp"
#include "traces/trace/trace.hpp"
#include "traces/trace/workload.hpp"

using namespace shardsim;

namespace {

const std::string kTwoGroups = std::string(SHARDSIM_SOURCE_DIR) + "/tests/data/traces/two_groups_8ranks.json";
constexpr double kS = 16.0 * (1 << 20);  // the trace's all-reduce
constexpr double kForward = 1e-3, kUpdate = 0.5e-3;

step::StepConfig replay_config() {
  step::StepConfig c;
  c.strategy = step::Strategy::trace;
  c.optimizer = &opt::find_optimizer("adam", "t");
  c.dp = 8;
  c.measured_compute = true;
  return c;
}

step::StepResult replay(const step::Workload& w, const std::string& topo_spec, step::Fidelity f,
                        bool timeline = false) {
  const auto topo = topo::make_topology(topo_spec, "--topology");
  step::TopologyComm comm(topo, f, "ring", {}, coll::CollectiveOp{}.element_bytes);
  auto c = replay_config();
  c.record_timeline = timeline;
  return step::simulate_step(w, compute::find_device("h100", "t"), c, comm);
}

double isolated(const std::string& topo_spec, const std::vector<int>& group) {
  const auto topo = topo::make_topology(topo_spec, "--topology");
  step::TopologyComm comm(topo, step::Fidelity::flow, "ring", {}, coll::CollectiveOp{}.element_bytes);
  return comm.time_s(coll::OpKind::allreduce, static_cast<std::uint64_t>(kS), group);
}

}  // namespace

TEST_CASE("v2 trace, two groups of 4 sharing the leaf uplinks: both all-reduces in flight, each at half the uplink") {
  const std::string ft = "fat_tree:hosts=8,hosts_per_leaf=4,bw=100GB/s,uplink_bw=25GB/s,spines=1,lat=1us";
  const double lat = 1e-6, U = 25e9, n = 4;
  const double alone = 6 * (4 * lat + kS / n / U);
  const double both = 6 * (4 * lat + kS / n / (U / 2));
  // The isolated time is the derivation's (the collectives layer on the same ring and route).
  CHECK(isolated(ft, {0, 1, 4, 5}) == doctest::Approx(alone).epsilon(1e-9).scale(0));
  CHECK(isolated(ft, {2, 3, 6, 7}) == doctest::Approx(alone).epsilon(1e-9).scale(0));

  const auto w = trace::to_workload(trace::load_trace(kTwoGroups));
  REQUIRE(w.per_rank);
  const auto r = replay(w, ft, step::Fidelity::flow, true);
  CHECK(r.ranks == 8);
  CHECK(r.ranks_simulated == 8);
  REQUIRE(r.per_rank.size() == 8);
  for (const auto& x : r.per_rank) {
    CAPTURE(x.rank);
    // Six steps, each ending at a flow completion rounded to the picosecond.
    CHECK(std::abs(x.comm_s - both) <= 6e-12);
    CHECK(std::abs(x.step_time_s - (kForward + both + kUpdate)) <= 1e-11);
    CHECK(x.update_s == kUpdate);
  }
  CHECK(r.collectives == 1);  // rank 0's
  // One timeline track per rank: 3 ops on each of the 8 ranks.
  REQUIRE(r.timeline.size() == 24);
  std::set<int> tracks;
  for (const auto& iv : r.timeline) {
    tracks.insert(iv.rank);
    // The all-reduce on the stream of its group, labelled with the group's name.
    if (iv.name.rfind("grad.ar", 0) == 0) CHECK(iv.stream == (iv.rank % 4 < 2 ? "comm dp_a" : "comm dp_b"));
  }
  CHECK(tracks == std::set<int>{0, 1, 2, 3, 4, 5, 6, 7});

  // Analytical fidelity: timers of each group's closed form, as if alone (no interaction).
  const auto a = replay(w, ft, step::Fidelity::analytical);
  const auto topo = topo::make_topology(ft, "--topology");
  step::TopologyComm an(topo, step::Fidelity::analytical, "ring", {}, coll::CollectiveOp{}.element_bytes);
  for (const auto& x : a.per_rank) {
    CHECK(std::abs(x.comm_s - an.time_s(coll::OpKind::allreduce, static_cast<std::uint64_t>(kS), {0, 1, 4, 5})) <= 1e-12);
  }
}

TEST_CASE("v2 trace, two groups of 4 on disjoint links: each all-reduce takes exactly its isolated time") {
  const std::string sw = "switch:n=8,bw=100GB/s,lat=1us";
  const double lat = 1e-6, B = 100e9, n = 4;
  const double alone = 6 * (2 * lat + kS / n / B);
  CHECK(isolated(sw, {0, 1, 4, 5}) == doctest::Approx(alone).epsilon(1e-9).scale(0));
  const auto w = trace::to_workload(trace::load_trace(kTwoGroups));
  const auto r = replay(w, sw, step::Fidelity::flow);
  REQUIRE(r.per_rank.size() == 8);
  const Time expected = Time::from_seconds(isolated(sw, {0, 1, 4, 5}));
  for (const auto& x : r.per_rank) {
    CAPTURE(x.rank);
    CHECK(std::abs(x.comm_s - expected.to_seconds()) <= 1e-12);
    CHECK(std::abs(x.step_time_s - (kForward + alone + kUpdate)) <= 1e-11);
  }
}

TEST_CASE("v2 trace: a rank in two groups runs their collectives on two streams, so they overlap") {
  // Rank 0 is in {0,1} and {0,2}; both all-reduces are ready at 0. On separate streams they
  // run at once (on a switch: disjoint except rank 0's own links, which each direction of the
  // ring uses once per group: 0->1 and 0->2 share rank 0's uplink). On one stream they would
  // take the sum of their times; here the step is shorter than that sum.
  const auto t = trace::parse_trace(R"({"format": "shardsim-trace", "version": 2, "name": "x", "batch_per_replica": 1,
    "ranks": [
      {"rank": 0, "ops": [{"id": 1, "name": "a", "phase": "forward", "collective": {"kind": "allreduce", "size_bytes": 8388608, "ranks": [0, 1]}},
                          {"id": 2, "name": "b", "phase": "forward", "collective": {"kind": "allreduce", "size_bytes": 8388608, "ranks": [0, 2]}}]},
      {"rank": 1, "ops": [{"id": 1, "name": "a", "phase": "forward", "collective": {"kind": "allreduce", "size_bytes": 8388608, "ranks": [0, 1]}}]},
      {"rank": 2, "ops": [{"id": 1, "name": "b", "phase": "forward", "collective": {"kind": "allreduce", "size_bytes": 8388608, "ranks": [0, 2]}}]}]})",
                                    "x.json");
  const std::string sw = "switch:n=3,bw=100GB/s,lat=1us";
  const double one = [&] {
    const auto topo = topo::make_topology(sw, "t");
    step::TopologyComm comm(topo, step::Fidelity::flow, "ring", {}, coll::CollectiveOp{}.element_bytes);
    return comm.time_s(coll::OpKind::allreduce, 8388608, {0, 1});
  }();
  const auto r = replay(trace::to_workload(t), sw, step::Fidelity::flow);
  // Ring all-reduce on 2 ranks: 2 steps of S/2; with both groups, rank 0's uplink and downlink
  // each carry two flows: every step at half rate: 2 x (2 lat + (S/2)/(B/2)).
  const double S = 8388608, B = 100e9, lat = 1e-6;
  CHECK(one == doctest::Approx(2 * (2 * lat + S / 2 / B)).epsilon(1e-9).scale(0));
  CHECK(std::abs(r.step_time_s - 2 * (2 * lat + S / 2 / (B / 2))) <= 1e-11);
  CHECK(r.step_time_s < 2 * one);  // not serialised
}

TEST_CASE("v2 trace: a send/recv pair is a rendezvous, then the transfer") {
  const auto t = trace::parse_trace(R"({"format": "shardsim-trace", "version": 2, "name": "pp", "batch_per_replica": 1,
    "ranks": [
      {"rank": 0, "ops": [{"id": 1, "name": "stage0", "phase": "forward", "duration_s": 0.001},
                          {"id": 2, "name": "send.act", "phase": "forward", "p2p": {"kind": "send", "peer": 1, "size_bytes": 1048576}, "deps": [1]}]},
      {"rank": 1, "ops": [{"id": 1, "name": "recv.act", "phase": "forward", "p2p": {"kind": "recv", "peer": 0, "size_bytes": 1048576}},
                          {"id": 2, "name": "stage1", "phase": "forward", "duration_s": 0.002, "deps": [1]}]}]})",
                                    "pp.json");
  const std::string sw = "switch:n=2,bw=100GB/s,lat=1us";
  const auto topo = topo::make_topology(sw, "t");
  step::TopologyComm comm(topo, step::Fidelity::analytical, "auto", {}, coll::CollectiveOp{}.element_bytes);
  const double transfer = comm.time_s(coll::OpKind::broadcast, 1048576, {0, 1});
  // One transfer of S over two links (host -> switch -> host): 2 lat + S/B.
  CHECK(transfer == doctest::Approx(2e-6 + 1048576 / 100e9).epsilon(1e-9).scale(0));
  const auto r = replay(trace::to_workload(t), sw, step::Fidelity::analytical);
  REQUIRE(r.per_rank.size() == 2);
  CHECK(std::abs(r.per_rank[0].step_time_s - (0.001 + transfer)) <= 1e-12);  // the send ends with the transfer
  CHECK(std::abs(r.per_rank[1].step_time_s - (0.001 + transfer + 0.002)) <= 1e-12);
  CHECK(std::abs(r.per_rank[1].comm_s - transfer) <= 1e-12);  // the receiver waits for the transfer
  CHECK(r.step_time_s == r.per_rank[1].step_time_s);
}

TEST_CASE("v2 trace errors name the op: group beyond the topology, cycle, unmatched send, a member that never issues") {
  auto run = [](const std::string& ranks_json, const std::string& topo = "switch:n=4,bw=100GB/s,lat=1us") {
    const auto t = trace::parse_trace(
        R"({"format": "shardsim-trace", "version": 2, "name": "bad", "batch_per_replica": 1, "ranks": )" + ranks_json + "}",
        "bad.json");
    const auto w = trace::to_workload(t);
    try {
      replay(w, topo, step::Fidelity::analytical);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string ar01 = R"("collective": {"kind": "allreduce", "size_bytes": 1024, "ranks": [0, 1]})";
  const std::string ar012 = R"("collective": {"kind": "allreduce", "size_bytes": 1024, "ranks": [0, 1, 2]})";
  // The two ranks issue their two collectives in opposite orders: NCCL would hang.
  CHECK(run(R"([{"rank": 0, "ops": [{"id": 1, "name": "x", "phase": "forward", )" + ar01 +
            R"(}, {"id": 2, "name": "y", "phase": "forward", )" + ar012 + R"(, "deps": [1]}]},
                 {"rank": 1, "ops": [{"id": 1, "name": "y", "phase": "forward", )" + ar012 +
            R"(}, {"id": 2, "name": "x", "phase": "forward", )" + ar01 + R"(, "deps": [1]}]},
                 {"rank": 2, "ops": [{"id": 1, "name": "y", "phase": "forward", )" + ar012 + "}]}]") ==
        "op 'y (allreduce 1 KiB, ranks 0,1,2)': dependency cycle op 'y (allreduce 1 KiB, ranks 0,1,2)' -> op 'x "
        "(allreduce 1 KiB, ranks 0,1)' -> op 'y (allreduce 1 KiB, ranks 0,1,2)'; expected dependencies and stream "
        "order without cycles");
  // A send that no rank receives.
  CHECK(run(R"([{"rank": 0, "ops": [{"id": 1, "name": "send.act", "phase": "forward", "p2p": {"kind": "send", "peer": 1, "size_bytes": 64, "tag": 3}}]},
                 {"rank": 1, "ops": [{"id": 1, "name": "idle", "phase": "forward", "duration_s": 0.001}]}])") ==
        "op 'send.act': send of 64 bytes from rank 0 to rank 1 (tag 3) without a matching receive; expected a recv on "
        "rank 1 from rank 0 with tag 3");
  // A process group naming a rank outside the topology.
  CHECK(run(R"([{"rank": 0, "ops": [{"id": 1, "name": "ar", "phase": "forward", "collective": {"kind": "allreduce", "size_bytes": 64, "ranks": [0, 4]}}]}])") ==
        "--topology: 4 devices, but op 'ar' (rank 0 of trace 'bad') has a process group member on rank 4; expected a "
        "topology with at least 5 devices (a version 2 trace's rank r runs on device r)");
  // A group member that the trace does not record, and one that issues fewer collectives.
  CHECK(run(R"([{"rank": 0, "ops": [{"id": 1, "name": "ar", "phase": "forward", )" + ar012 + R"(}]},
                 {"rank": 1, "ops": [{"id": 1, "name": "ar", "phase": "forward", )" + ar012 + "}]}]") ==
        "bad/op 'ar' (rank 0 of trace 'bad'): has a process group member on rank 2, which the trace does not record (its "
        "ranks: 0,1); expected peers and process group members that are ranks of the trace");
  CHECK(run(R"([{"rank": 0, "ops": [{"id": 1, "name": "a1", "phase": "forward", )" + ar01 +
            R"(}, {"id": 2, "name": "a2", "phase": "forward", )" + ar01 + R"(}]},
                 {"rank": 1, "ops": [{"id": 1, "name": "a1", "phase": "forward", )" + ar01 + "}]}]") ==
        "bad/op 'a2' (rank 0 of trace 'bad'): collective 2 of process group ranks 0,1 (allreduce on ranks 0,1), which "
        "rank 1 never issues (it issues 1 of the group's 2); expected every member of a process group issuing each of "
        "its collectives");
  CHECK(run(R"([{"rank": 0, "ops": [{"id": 1, "name": "a", "phase": "forward", )" + ar01 + R"(}]},
                 {"rank": 1, "ops": [{"id": 1, "name": "a", "phase": "forward", "collective": {"kind": "allgather", "size_bytes": 1024, "ranks": [0, 1]}}]}])") ==
        "bad/op 'a' (rank 1 of trace 'bad'): collective 1 of process group ranks 0,1 is allgather of 1024 bytes here, "
        "allreduce of 1024 bytes in op 'a' on rank 0; expected the same collective on every member (the n-th "
        "collective of a group matches on every rank)");
}

// Chakra with one file per rank (issue 12): every rank's own ops (format v2).
namespace {

std::vector<std::string> chakra_fixture_files() {
  std::vector<std::string> files;
  for (int r = 0; r < 4; ++r) {
    files.push_back(fmt::format("{}/chakra_et/all_reduce_4npus_1MB/all_reduce.{}.et", SHARDSIM_FIXTURES_DIR, r));
  }
  return files;
}

importers::ChakraNode chakra_node(std::uint64_t id, importers::ChakraNodeType type, std::vector<std::uint64_t> deps) {
  importers::ChakraNode n;
  n.id = id;
  n.name = fmt::format("n{}", id);
  n.type = type;
  n.data_deps = std::move(deps);
  n.duration_us = 10;
  return n;
}

// Four rank files "job.<r>.et" given in the order 2, 0, 3, 1 (as a shell glob may list
// them): per rank, compute (1) -> all-reduce of 1 MiB on the rank's tensor-parallel pair
// (pg "tp0" = ranks 0,1 or "tp1" = 2,3) (2) -> all-reduce of 4 MiB without pg_name, on every
// rank (3); rank 0 sends 64 KiB to rank 2 after (3), which receives it.
std::vector<importers::ChakraTrace> tp_job() {
  using T = importers::ChakraNodeType;
  std::vector<importers::ChakraTrace> files;
  for (const int r : {2, 0, 3, 1}) {
    importers::ChakraTrace t;
    t.source = fmt::format("/tmp/job.{}.et", r);
    t.version = "0.0.4";
    t.nodes.push_back(chakra_node(1, T::comp, {}));
    auto tp = chakra_node(2, T::comm_coll, {1});
    tp.comm_kind = importers::CommKind::all_reduce;
    tp.comm_size_bytes = 1 << 20;
    tp.pg_name = r < 2 ? "tp0" : "tp1";
    t.nodes.push_back(tp);
    auto dp = chakra_node(3, T::comm_coll, {2});
    dp.comm_kind = importers::CommKind::all_reduce;
    dp.comm_size_bytes = 4 << 20;
    t.nodes.push_back(dp);
    if (r == 0 || r == 2) {
      auto p = chakra_node(4, r == 0 ? T::comm_send : T::comm_recv, {3});
      p.comm_size_bytes = 64 << 10;
      (r == 0 ? p.comm_dst : p.comm_src) = r == 0 ? 2 : 0;
      t.nodes.push_back(p);
    }
    files.push_back(t);
  }
  return files;
}

importers::ImportOptions per_rank(std::map<std::string, std::vector<int>> comm_groups = {}) {
  importers::ImportOptions o;
  o.per_rank = comm_groups.empty();
  o.comm_groups = std::move(comm_groups);
  return o;
}

}  // namespace

TEST_CASE("Chakra fixture, every rank's own ops (--per-rank): all 4 ranks replay to `shardsim collective`'s time") {
  importers::ImportOptions io;
  io.per_rank = true;
  const auto t = importers::import_files(importers::Format::chakra, chakra_fixture_files(), io);
  CHECK(t.version == 2);
  CHECK(t.ranks() == std::vector<int>{0, 1, 2, 3});
  REQUIRE(t.ops.size() == 4);
  for (const auto& op : t.ops) CHECK(op.collective->ranks == std::vector<int>{0, 1, 2, 3});  // no pg_name: every rank
  const auto w = trace::to_workload(trace::trace_from_json(trace::to_json(t), "round-trip"));
  const std::string spec = "switch:n=4,bw=100GB/s,lat=1us";
  for (const std::string fid : {"analytical", "flow"}) {
    CAPTURE(fid);
    // `shardsim collective --topology SPEC --op allreduce --bytes 1MiB --ranks 4 --fidelity FID`
    const double expected = [&] {
      cli::CollectiveOptions o;
      o.topology = spec, o.op = "allreduce", o.bytes = "1MiB", o.ranks = 4, o.fidelity = fid;
      return cli::run_collective(o).at(0).time_s;
    }();
    const auto topo = topo::make_topology(spec, "--topology");
    step::TopologyComm comm(topo, step::fidelity_from_string(fid, "t"), "auto", {}, coll::CollectiveOp{}.element_bytes);
    auto c = replay_config();
    c.dp = 4;
    c.record_timeline = true;
    const auto r = step::simulate_step(w, compute::find_device("h100", "t"), c, comm);
    CHECK(r.ranks == 4);
    CHECK(r.ranks_simulated == 4);
    REQUIRE(r.per_rank.size() == 4);
    for (const auto& x : r.per_rank) {
      CHECK(std::abs(x.step_time_s - expected) <= 0.5e-12);  // rounded once to the picosecond
    }
    REQUIRE(r.timeline.size() == 4);  // one interval on each rank's track
    for (std::size_t k = 0; k < 4; ++k) CHECK(r.timeline[k].rank == static_cast<int>(k));
  }
}

TEST_CASE("Chakra per rank: pg names mapped to ranks (inferred or --comm-groups), ranks from file names, send/recv") {
  const auto t = importers::to_native(tp_job(), per_rank());
  CHECK(t.ranks() == std::vector<int>{0, 1, 2, 3});  // from "job.<r>.et", not the order given
  REQUIRE(t.process_groups.size() == 2);
  CHECK(t.process_groups[0].name == "tp0");
  CHECK(t.process_groups[0].ranks == std::vector<int>{0, 1});  // the ranks issuing collectives on "tp0"
  CHECK(t.process_groups[1].ranks == std::vector<int>{2, 3});
  REQUIRE(t.ops.size() == 14);
  CHECK(*t.ops[0].rank == 0);
  CHECK(t.ops[1].collective->group == t.process_groups[0].id);
  CHECK(t.ops[2].collective->ranks == std::vector<int>{0, 1, 2, 3});
  CHECK(!t.ops[2].collective->group);
  CHECK(t.ops[3].p2p->send);
  CHECK(t.ops[3].p2p->peer == 2);
  CHECK(t.ops[8].collective->ranks == std::vector<int>{2, 3});  // rank 2's tp all-reduce
  CHECK(!t.ops[10].p2p->send);
  CHECK(t.config.at("process_groups_from") == "the ranks issuing collectives on each pg_name");

  // Replayed: the two tp all-reduces run at once on disjoint pairs; then the 4-rank one; then
  // the transfer. Analytical timers: every duration is the CommModel's; rank 2's step ends
  // with the receive.
  const std::string spec = "switch:n=4,bw=100GB/s,lat=1us";
  const auto topo = topo::make_topology(spec, "--topology");
  step::TopologyComm comm(topo, step::Fidelity::analytical, "ring", {}, coll::CollectiveOp{}.element_bytes);
  auto c = replay_config();
  c.dp = 4;
  const auto r = step::simulate_step(trace::to_workload(t), compute::find_device("h100", "t"), c, comm);
  const double tp = comm.time_s(coll::OpKind::allreduce, 1 << 20, {0, 1});
  const double dp = comm.time_s(coll::OpKind::allreduce, 4 << 20, {0, 1, 2, 3});
  const double send = comm.time_s(coll::OpKind::broadcast, 64 << 10, {0, 2});
  REQUIRE(r.per_rank.size() == 4);
  CHECK(std::abs(r.per_rank[1].step_time_s - (10e-6 + tp + dp)) <= 3e-12);
  CHECK(std::abs(r.per_rank[2].step_time_s - (10e-6 + tp + dp + send)) <= 4e-12);

  // --comm-groups: the mapping as given; a pg name it lacks, or one that leaves out the
  // op's rank, is an error.
  const auto mapped = importers::to_native(tp_job(), per_rank({{"tp0", {1, 0}}, {"tp1", {2, 3}}}));
  CHECK(mapped.process_groups[0].ranks == std::vector<int>{1, 0});
  CHECK(mapped.config.at("process_groups_from") == "--comm-groups");
  CHECK_THROWS_WITH_AS(importers::to_native(tp_job(), per_rank({{"tp0", {0, 1}}})),
                       "--comm-groups: no process group 'tp1' (the traces' collectives name it); expected every "
                       "pg_name of the traces mapped to its ranks",
                       ConfigError);
  CHECK_THROWS_WITH_AS(importers::to_native(tp_job(), per_rank({{"tp0", {0, 2}}, {"tp1", {1, 3}}})),
                       "/tmp/job.0.et/ranks/1/ops/1/collective: op 'n2' on rank 1 runs on a process group without it "
                       "(0,2); expected a process group that holds the op's rank",
                       ConfigError);
  CHECK_THROWS_WITH_AS(importers::parse_comm_groups(R"({"tp0": [0, 0]})", "g.json"),
                       "g.json/tp0/1: rank 0 twice; expected each rank once", ConfigError);
  CHECK_THROWS_WITH_AS(importers::parse_comm_groups(R"({"tp0": []})", "g.json"),
                       "g.json/tp0: an empty group; expected a non-empty array of ranks", ConfigError);
}

TEST_CASE("Kineto, one file per rank (--per-rank): every rank's NCCL kernels on their process group") {
  // The HTA excerpt is rank 0 of a 2-rank job (distributedInfo: world_size 2, pg "0" = ranks
  // 0,1; a broadcast and an all-reduce kernel with "Process Group Ranks" [0, 1]). Rank 1's
  // file is the same profile with distributedInfo.rank = 1 (the two ranks ran the same ops).
  const std::string path = std::string(SHARDSIM_FIXTURES_DIR) + "/kineto/nccl_allreduce_excerpt.json";
  const std::string text = importers::read_input(path);
  auto j1 = nlohmann::json::parse(text);
  j1["distributedInfo"]["rank"] = 1;
  const std::vector<importers::KinetoTrace> files{importers::decode_kineto(j1.dump(), "rank1.json"),
                                                  importers::decode_kineto(text, path)};
  const auto t = importers::to_native_per_rank(files, per_rank());
  CHECK(t.version == 2);
  CHECK(t.ranks() == std::vector<int>{0, 1});  // from distributedInfo.rank, not the file order
  REQUIRE(t.process_groups.size() == 1);
  CHECK(t.process_groups[0].name == "0");
  CHECK(t.process_groups[0].ranks == std::vector<int>{0, 1});
  REQUIRE(t.ops.size() == 6);
  CHECK(t.ops[0].collective->kind == coll::OpKind::broadcast);
  CHECK(t.ops[0].collective->group == 0u);
  CHECK(t.ops[5].collective->kind == coll::OpKind::allreduce);
  CHECK(*t.ops[5].rank == 1);

  const std::string spec = "switch:n=2,bw=100GB/s,lat=1us";
  const auto topo = topo::make_topology(spec, "--topology");
  step::TopologyComm comm(topo, step::Fidelity::analytical, "ring", {}, coll::CollectiveOp{}.element_bytes);
  auto c = replay_config();
  c.dp = 2;
  const auto r = step::simulate_step(trace::to_workload(t), compute::find_device("h100", "t"), c, comm);
  REQUIRE(r.per_rank.size() == 2);
  const double comm_s = comm.time_s(coll::OpKind::broadcast, 53120ull * 4, {0, 1}) +
                        comm.time_s(coll::OpKind::allreduce, 6637568ull * 4, {0, 1});
  for (const auto& x : r.per_rank) {
    CAPTURE(x.rank);
    CHECK(std::abs(x.comm_s - comm_s) <= 2e-12);
    CHECK(x.step_time_s == r.per_rank[0].step_time_s);  // the same ops on both ranks
  }
  // Several Kineto files need --per-rank (one file is one rank's view).
  CHECK_THROWS_WITH_AS(importers::import_files(importers::Format::kineto, {path, path}, {}),
                       "shardsim trace import: 2 files for --format kineto; expected one file (several only for chakra "
                       "and chakra-json, one per rank)",
                       ConfigError);
}

TEST_CASE("a per-rank workload whose rank's ops are split (not from a valid trace) is an error, not a wrong graph") {
  step::Workload w;
  w.name = "split";
  w.per_rank = true;
  for (const int rank : {0, 1, 0}) {
    step::RecordedOp o;
    o.name = "c";
    o.measured_s = 1e-3;
    o.rank = rank;
    w.recorded.push_back(o);
  }
  CHECK_THROWS_WITH_AS(replay(w, "switch:n=2,bw=100GB/s,lat=1us", step::Fidelity::analytical),
                       "split: the ops of rank 0 in two separate runs; expected each rank's ops together, ranks in "
                       "ascending order (trace format version 2)",
                       ConfigError);
}
