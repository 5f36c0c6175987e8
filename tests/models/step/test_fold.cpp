// Every rank, and folding where exact (models/step/rank_program.hpp, docs/training-step.md):
// on a star of 8 devices the folded run (one representative) equals the unfolded run (every
// rank simulated) in step time, breakdown and every rank's own figures, for four schedules;
// with one slow link the sharding subgroups differ, folding would be wrong, and the step is
// not folded (the slow subgroup's ranks finish later, and the step waits for them).
#include <doctest/doctest.h>

#include "models/step/step.hpp"
#include "models/step/topology_comm.hpp"
#include "tests/models/step/star8.hpp"
#include "tests/models/step/toy_device.hpp"
#include "tests/models/step/units_workload.hpp"
#include "topologies/topology.hpp"

using namespace shardsim;
using step::Strategy;

namespace {

using test::star8;

// Two units of 10^6 parameters; forward 1 ms per unit, backward 2 ms (toy device: 1 TFLOP/s):
// a 2 MB gradient bucket takes milliseconds on the star, so communication is partly exposed.
step::Workload workload() {
  auto w = test::units_workload("two-units", 1e9, 1000000, {100, 300});
  step::RecordedOp fwd, ar, bwd;
  fwd.name = "fwd";
  fwd.flops = 1e9;
  ar.name = "ar";
  ar.phase = step::OpPhase::backward;
  ar.collective = step::RecordedCollective{coll::OpKind::allreduce, 4000000, 4};
  ar.deps = {0};
  bwd.name = "bwd";
  bwd.phase = step::OpPhase::backward;
  bwd.flops = 2e9;
  bwd.deps = {1};
  w.recorded = {fwd, ar, bwd};
  return w;
}

step::StepConfig config(Strategy s) { return test::step_config(s, 8, 2000000); }  // one bucket per unit

step::StepResult run(const topo::Topology& t, step::StepConfig c, bool fold) {
  c.fold = fold;
  step::TopologyComm comm(t, step::Fidelity::analytical, "ring");
  return step::simulate_step(workload(), test::toy_device(), c, comm);
}

void check_same(const step::RankResult& a, const step::RankResult& b) {
  CHECK(a.step_time_s == b.step_time_s);
  CHECK(a.forward_s == b.forward_s);
  CHECK(a.backward_s == b.backward_s);
  CHECK(a.exposed_comm_s == b.exposed_comm_s);
  CHECK(a.update_s == b.update_s);
  CHECK(a.comm_s == b.comm_s);
}

}  // namespace

TEST_CASE("folded equals unfolded where every rank is provably the same") {
  const auto t = star8();
  struct Case {
    const char* name;
    step::StepConfig c;
  };
  std::vector<Case> cases;
  cases.push_back({"replicated", config(Strategy::replicated)});
  auto sharded = config(Strategy::sharded);
  sharded.shard_group = 4;  // subgroups {0-3}, {4-7}, cross groups {i, i+4}: equal on a star
  cases.push_back({"sharded k=4", sharded});
  auto z3 = config(Strategy::zero3);
  z3.checkpointing = true;
  cases.push_back({"zero3 checkpointing", z3});
  cases.push_back({"trace (blocks of 4)", config(Strategy::trace)});
  for (const auto& k : cases) {
    CAPTURE(k.name);
    const auto folded = run(t, k.c, true);
    const auto every = run(t, k.c, false);
    CHECK(folded.ranks == 8);
    CHECK(folded.ranks_simulated == 1);
    CHECK(every.ranks_simulated == 8);
    REQUIRE(folded.per_rank.size() == 1);
    REQUIRE(every.per_rank.size() == 8);
    CHECK(folded.per_rank[0].folded == 8);
    CHECK(folded.step_time_s > 0);
    CHECK(folded.step_time_s == every.step_time_s);
    CHECK(folded.exposed_comm_s == every.exposed_comm_s);
    CHECK(folded.comm_s == every.comm_s);
    CHECK(folded.collectives == every.collectives);
    for (std::size_t r = 0; r < 8; ++r) {
      CAPTURE(r);
      CHECK(every.per_rank[r].rank == static_cast<int>(r));
      check_same(every.per_rank[r], folded.per_rank[0]);
    }
    CHECK(every.events > folded.events);
  }
}

TEST_CASE("one slow link: the subgroups differ, so the step is not folded") {
  const auto slow = star8(6);  // device 6: in subgroup {4-7} and cross group {2, 6}
  auto c = config(Strategy::sharded);
  c.shard_group = 4;
  const auto r = run(slow, c, true);
  CHECK(r.ranks_simulated == 8);
  REQUIRE(r.per_rank.size() == 8);
  // Ranks 4-7 reduce-scatter over the slow link and rank 6's cross all-reduce {2, 6} crosses
  // it too; the others wait for them only through shared collectives. Folding onto rank 0
  // would report rank 0's time, shorter than the step (the slowest rank's).
  double slowest = 0;
  for (const auto& x : r.per_rank) slowest = std::max(slowest, x.step_time_s);
  CHECK(r.step_time_s == slowest);
  CHECK(r.per_rank[6].step_time_s == slowest);
  CHECK(r.per_rank[0].step_time_s < slowest);
  CHECK(r.step_time_s > run(star8(), c, true).step_time_s);
  // One group of all ranks (replicated): every rank waits for the same collectives, so the
  // slow link slows all alike and folding stays exact.
  const auto rep = run(slow, config(Strategy::replicated), true);
  CHECK(rep.ranks_simulated == 1);
  CHECK(rep.step_time_s == run(slow, config(Strategy::replicated), false).step_time_s);
  CHECK(rep.step_time_s > run(star8(), config(Strategy::replicated), true).step_time_s);
}
