// The `trace` strategy: a trace's own ops replayed as recorded (models/step/replay.hpp).
//  - on a hand-made trace with round numbers, every start and end derived by hand;
//  - on the Chakra ET fixture (astra-sim's all_reduce 4npus_1MB: one 1 MiB all-reduce on 4
//    ranks), the step time equals what `shardsim collective` computes for that op on the same
//    topology (cli::run_collective, the function behind the command), to the picosecond, at both
//    fidelities, on a switch and on a DGX H100 preset restricted to 4 ranks.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "analysis/commands/collective_run.hpp"
#include "models/step/step.hpp"
#include "models/step/topology_comm.hpp"
#include "sim/error.hpp"
#include "tests/models/step/toy_device.hpp"
#include "topologies/load.hpp"
#include "traces/importers/native.hpp"
#include "traces/trace/workload.hpp"

using namespace shardsim;
using shardsim::test::toy_device;
using step::OpPhase;
using step::Strategy;

namespace {

step::RecordedOp compute_op(const char* name, OpPhase p, double flops, double bytes, std::vector<std::size_t> deps,
                            std::optional<double> measured = std::nullopt) {
  step::RecordedOp o;
  o.name = name;
  o.phase = p;
  o.flops = flops;
  o.bytes = bytes;
  o.measured_s = measured;
  o.deps = std::move(deps);
  return o;
}

step::RecordedOp collective_op(const char* name, std::uint64_t bytes, std::uint32_t group, std::vector<std::size_t> deps) {
  step::RecordedOp o;
  o.name = name;
  o.phase = OpPhase::backward;
  o.collective = step::RecordedCollective{coll::OpKind::allreduce, bytes, group};
  o.deps = std::move(deps);
  return o;
}

// forward 1 s; an all-reduce after it (3 s) overlaps the backward (2 s, which depends only on
// the forward); the gradient all-reduce waits for the backward and for the stream; the update
// (56,000 bytes: 1 s) waits for the gradient all-reduce.
step::Workload toy_trace() {
  step::Workload w;
  w.name = "toy";
  w.recorded = {compute_op("fwd", OpPhase::forward, 1e12, 0, {}),
                collective_op("ar.act", 1000, 4, {0}),
                compute_op("bwd", OpPhase::backward, 2e12, 0, {0}),
                collective_op("ar.grad", 2000, 4, {2}),
                compute_op("upd", OpPhase::update, 0, 56000, {3}, 0.25)};
  return w;
}

step::StepConfig trace_config() {
  step::StepConfig c;
  c.strategy = Strategy::trace;
  c.optimizer = &opt::find_optimizer("adam", "t");
  c.dp = 4;
  return c;
}

// A CommModel on a topology of `devices` devices: every all-reduce takes 3 s.
class FixedComm final : public step::CommModel {
 public:
  explicit FixedComm(std::size_t devices) : devices_(devices) {}
  double time_s(coll::OpKind, std::uint64_t, const std::vector<int>& group) override {
    groups.push_back(group);
    return 3.0;
  }
  [[nodiscard]] std::optional<std::size_t> devices() const override { return devices_; }
  std::vector<std::vector<int>> groups;

 private:
  std::size_t devices_;
};

std::string fixture(const std::string& rel) { return std::string(SHARDSIM_FIXTURES_DIR) + "/" + rel; }

std::vector<std::string> chakra_allreduce_files() {
  std::vector<std::string> files;
  for (int r = 0; r < 4; ++r) files.push_back(fixture(fmt::format("chakra_et/all_reduce_4npus_1MB/all_reduce.{}.et", r)));
  return files;
}

}  // namespace

TEST_CASE("trace replay: two streams, dependencies honoured, collectives FIFO") {
  // compute: fwd [0,1], bwd [1,3], upd [7,8]; comm: ar.act [1,4], ar.grad [max(4,3), 7].
  FixedComm comm(8);
  auto c = trace_config();
  c.record_timeline = true;
  const auto r = step::simulate_step(toy_trace(), toy_device(), c, comm);
  CHECK(r.strategy == "trace");
  CHECK(r.step_time_s == 8.0);
  CHECK(r.forward_s == 1.0);
  CHECK(r.backward_s == 2.0);
  CHECK(r.update_s == 1.0);
  CHECK(r.exposed_comm_s == 4.0);  // 8 - (1 + 2 + 1): the compute stream waits [3,7]
  CHECK(r.comm_s == 6.0);
  CHECK(r.collectives == 2);
  CHECK(r.comm_bytes == doctest::Approx((1000 + 2000) * 2.0 * 3 / 4).scale(0));  // S x 2(n-1)/n
  REQUIRE(comm.groups.size() == 2);
  CHECK(comm.groups[0] == std::vector<int>{0, 1, 2, 3});  // ranks 0..g-1 of the topology
  REQUIRE(r.timeline.size() == 5);
  CHECK(r.timeline[1].stream == "comm");
  CHECK(r.timeline[1].name == "ar.act (allreduce 1000 B, 4 ranks)");
  CHECK(r.timeline[1].start_s == 1.0);
  CHECK(r.timeline[3].start_s == 4.0);  // ready at 3, the stream is busy until 4
  CHECK(r.timeline[4].name == "upd (update)");
  CHECK(r.timeline[4].start_s == 7.0);
  CHECK(r.fits);
  CHECK(r.memory.buffers == 2000);  // the largest recorded collective
}

TEST_CASE("trace replay: measured durations where the trace has them, roofline otherwise") {
  // fwd 1 s (roofline: no measurement), upd 0.25 s measured: fwd [0,1], ar.act [1,4], bwd
  // [1,3], ar.grad [4,7], upd [7,7.25].
  FixedComm comm(8);
  auto c = trace_config();
  c.measured_compute = true;
  auto r = step::simulate_step(toy_trace(), toy_device(), c, comm);
  CHECK(r.update_s == 0.25);
  CHECK(r.step_time_s == 7.25);
  // A measured forward of 0.5 s moves everything after it: ar.act [0.5,3.5], bwd [0.5,2.5],
  // ar.grad [3.5,6.5], upd [6.5,6.75].
  auto w = toy_trace();
  w.recorded[0].measured_s = 0.5;
  r = step::simulate_step(w, toy_device(), c, comm);
  CHECK(r.forward_s == 0.5);
  CHECK(r.step_time_s == 6.75);
  CHECK(r.exposed_comm_s == doctest::Approx(6.75 - 0.5 - 2 - 0.25).scale(0));
  // Roofline ignores the measurements.
  c.measured_compute = false;
  CHECK(step::simulate_step(w, toy_device(), c, comm).step_time_s == 8.0);
}

TEST_CASE("trace replay: errors name the op or the flag") {
  FixedComm small(2);
  CHECK_THROWS_WITH_AS(step::simulate_step(toy_trace(), toy_device(), trace_config(), small),
                       "--topology: 2 devices, but op 'ar.act' (ops/1 of trace 'toy') runs allreduce on 4 ranks; "
                       "expected a topology with at least 4 devices (a trace collective of g ranks runs on devices "
                       "0..g-1)",
                       ConfigError);
  FixedComm comm(8);
  auto c = trace_config();
  c.grad_accum = 2;
  CHECK_THROWS_WITH_AS(step::simulate_step(toy_trace(), toy_device(), c, comm),
                       "--grad-accum: 2 with --strategy trace; expected 1 (the trace strategy replays one recorded step "
                       "as is)",
                       ConfigError);
  c = trace_config();
  c.checkpointing = true;
  CHECK_THROWS_WITH_AS(step::simulate_step(toy_trace(), toy_device(), c, comm),
                       "--checkpointing: with --strategy trace; expected no checkpointing (the trace records what ran)",
                       ConfigError);
  c = trace_config();
  c.shard_group = 2;
  CHECK_THROWS_WITH_AS(step::simulate_step(toy_trace(), toy_device(), c, comm),
                       "--shard-group: 2 with --strategy trace; expected no shard group (the trace's collectives run "
                       "as recorded)",
                       ConfigError);
  step::Workload empty;
  empty.name = "empty";
  CHECK_THROWS_WITH_AS(step::simulate_step(empty, toy_device(), trace_config(), comm),
                       "empty: no recorded ops; expected at least one op", ConfigError);
  CHECK_THROWS_WITH_AS(step::strategy_from_string("trace", "--strategy"),
                       "--strategy: unknown strategy 'trace'; expected one of replicated, sharded, zero1, zero2, zero3",
                       ConfigError);
  CHECK(step::strategy_from_string("trace", "--strategy", step::StrategySet::with_trace) == Strategy::trace);
}

TEST_CASE("to_workload keeps the whole trace for replay: collectives, update ops, dependencies as indices") {
  trace::Trace t;
  t.name = "t";
  auto add = [&](std::uint64_t id, const char* name, trace::Phase p, std::vector<std::uint64_t> deps) -> trace::Op& {
    trace::Op op;
    op.id = id;
    op.name = name;
    op.phase = p;
    op.flops = 10;
    op.deps = std::move(deps);
    t.ops.push_back(op);
    return t.ops.back();
  };
  add(10, "a", trace::Phase::other, {});
  add(7, "ar", trace::Phase::backward, {10}).collective = trace::Collective{coll::OpKind::reducescatter, 64, 8};
  add(3, "u", trace::Phase::update, {7, 10}).duration_s = 0.5;
  trace::validate(t, "t");
  const auto w = trace::to_workload(t);
  CHECK(w.ops.size() == 1);  // the strategies' view: no collective, no update op
  CHECK(w.dropped_collectives == 1);
  REQUIRE(w.recorded.size() == 3);
  CHECK(w.recorded_collectives() == 1);
  CHECK(w.recorded[0].phase == OpPhase::forward);  // "other" counts as forward
  CHECK(w.recorded[1].collective->kind == coll::OpKind::reducescatter);
  CHECK(w.recorded[1].collective->size_bytes == 64);
  CHECK(w.recorded[1].collective->group_size == 8);
  CHECK(w.recorded[1].deps == std::vector<std::size_t>{0});
  CHECK(w.recorded[2].phase == OpPhase::update);
  CHECK(w.recorded[2].deps == std::vector<std::size_t>{1, 0});
  CHECK(w.recorded[2].measured_s == 0.5);
}

TEST_CASE("Chakra fixture: one 1 MiB all-reduce on 4 ranks takes what `shardsim collective` says, to the picosecond") {
  const auto tr = importers::import_files(importers::Format::chakra, chakra_allreduce_files(), {});
  const auto w = trace::to_workload(tr);
  REQUIRE(w.recorded.size() == 1);
  REQUIRE(w.recorded[0].collective);
  CHECK(w.recorded[0].collective->kind == coll::OpKind::allreduce);
  CHECK(w.recorded[0].collective->size_bytes == 1048576);
  CHECK(w.recorded[0].collective->group_size == 4);  // four rank files
  const auto& dev = compute::find_device("h100", "--device");
  // 100 GB/s per direction and 1 us per link (two links per route): nothing special, any
  // topology works; dgx-h100-8 is a real preset, its first 4 GPUs used, as --ranks 4 does.
  for (const std::string spec : {"switch:n=4,bw=100GB/s,lat=1us", "dgx-h100-8"}) {
    const auto topo = topo::make_topology(spec, "--topology");
    for (const auto fidelity : {step::Fidelity::analytical, step::Fidelity::flow}) {
      for (const std::string alg : {"auto", "ring"}) {
        const std::string fid = fidelity == step::Fidelity::flow ? "flow" : "analytical";
        CAPTURE(spec);
        CAPTURE(fid);
        CAPTURE(alg);
        step::TopologyComm comm(topo, fidelity, alg, {}, coll::CollectiveOp{}.element_bytes);
        const auto r = step::simulate_step(w, dev, trace_config(), comm);
        cli::CollectiveOptions o;
        o.topology = spec;
        o.op = "allreduce";
        o.bytes = "1MiB";
        o.ranks = 4;
        o.algorithm = alg;
        o.fidelity = fid;
        const auto expected = cli::run_collective(o).at(0).time_s;
        CHECK(expected > 0);
        // The executor runs in integer picoseconds: the collective's time rounded once
        // (test_executor.cpp checks the executor against the former double schedule op by op).
        CHECK(std::abs(r.step_time_s - expected) <= 0.5e-12);
        CHECK(r.comm_s == expected);
        CHECK(std::abs(r.exposed_comm_s - expected) <= 0.5e-12);  // no compute in the trace
        CHECK(r.collectives == 1);
      }
    }
  }
}

TEST_CASE("Chakra fixture: one rank file with --group-size 4 is the same job") {
  const auto files = chakra_allreduce_files();
  importers::ImportOptions io;
  io.group_size = 4;
  const auto one = trace::to_workload(importers::import_files(importers::Format::chakra, {files[0]}, io));
  const auto all = trace::to_workload(importers::import_files(importers::Format::chakra, files, {}));
  const auto topo = topo::make_topology("switch:n=4,bw=100GB/s,lat=1us", "--topology");
  step::TopologyComm comm(topo, step::Fidelity::flow, "auto", {}, coll::CollectiveOp{}.element_bytes);
  const auto& dev = compute::find_device("h100", "--device");
  CHECK(step::simulate_step(one, dev, trace_config(), comm).step_time_s ==
        step::simulate_step(all, dev, trace_config(), comm).step_time_s);
  // Without --group-size a single file is a group of one rank: no communication.
  const auto alone = trace::to_workload(importers::import_files(importers::Format::chakra, {files[0]}, {}));
  CHECK(step::simulate_step(alone, dev, trace_config(), comm).step_time_s == 0.0);
}

TEST_CASE("Chakra fixture: every one of the 4 ranks replays to the collective's time") {
  const auto w = trace::to_workload(importers::import_files(importers::Format::chakra, chakra_allreduce_files(), {}));
  const std::string spec = "switch:n=4,bw=100GB/s,lat=1us";
  const auto topo = topo::make_topology(spec, "--topology");
  const auto& dev = compute::find_device("h100", "--device");
  for (const auto fidelity : {step::Fidelity::analytical, step::Fidelity::flow}) {
    const std::string fid = fidelity == step::Fidelity::flow ? "flow" : "analytical";
    CAPTURE(fid);
    cli::CollectiveOptions o;
    o.topology = spec;
    o.op = "allreduce";
    o.bytes = "1MiB";
    o.ranks = 4;
    o.fidelity = fid;
    const double expected = cli::run_collective(o).at(0).time_s;
    for (const bool fold : {true, false}) {
      CAPTURE(fold);
      step::TopologyComm comm(topo, fidelity, "auto", {}, coll::CollectiveOp{}.element_bytes);
      auto c = trace_config();
      c.fold = fold;
      c.record_timeline = true;
      const auto r = step::simulate_step(w, dev, c, comm);
      CHECK(r.ranks == 4);
      CHECK(r.ranks_simulated == (fold ? 1 : 4));
      REQUIRE(r.per_rank.size() == r.ranks_simulated);
      for (const auto& x : r.per_rank) {
        // The executor's time is the collective's rounded to the picosecond once.
        CHECK(std::abs(x.step_time_s - expected) <= 0.5e-12);
        CHECK(x.comm_s == expected);
      }
      // One timeline interval per simulated rank, each on its own rank's track.
      REQUIRE(r.timeline.size() == r.ranks_simulated);
      for (std::size_t k = 0; k < r.timeline.size(); ++k) CHECK(r.timeline[k].rank == static_cast<int>(k));
    }
  }
}
