// The step model on a hand-made two-unit workload with round numbers, so every schedule can
// be derived by hand (models/step/step.hpp), and its validation rules.
#include <doctest/doctest.h>

#include "models/step/step.hpp"
#include "sim/error.hpp"
#include "tests/models/step/toy_device.hpp"
#include "tests/models/step/units_workload.hpp"

using namespace shardsim;
using shardsim::test::toy_device;
using step::Strategy;

namespace {

// Two units, 1,000 parameters each; forward 1 s per unit, backward 2 s per unit.
step::Workload toy_workload() { return test::units_workload("toy", 1e12, 1000, {100, 300}); }

// All-reduce 3 s, reduce-scatter and all-gather 1.5 s each, whatever the size.
step::FunctionComm fixed_comm() {
  return step::FunctionComm([](coll::OpKind k, std::uint64_t, const std::vector<int>&) {
    return k == coll::OpKind::allreduce ? 3.0 : 1.5;
  });
}

step::StepConfig config(Strategy s, std::uint64_t dp) {
  return test::step_config(s, dp, 2000);  // 1,000 bf16 gradients: one bucket per unit
}

}  // namespace

TEST_CASE("replicated: bucketed all-reduce overlapped with backward, then the full update") {
  // forward [0,2]; backward unit 1 [2,4] -> all-reduce [4,7]; unit 0 [4,6] -> all-reduce [7,10];
  // update [10,11]. Exposed communication 10 - 6 = 4 s.
  auto comm = fixed_comm();
  const auto r = step::simulate_step(toy_workload(), toy_device(), config(Strategy::replicated, 4), comm);
  CHECK(r.forward_s == 2.0);
  CHECK(r.backward_s == 4.0);
  CHECK(r.update_s == doctest::Approx(1.0).scale(0));
  CHECK(r.step_time_s == doctest::Approx(11.0).scale(0));
  CHECK(r.exposed_comm_s == doctest::Approx(4.0).scale(0));
  CHECK(r.collectives == 2);
  CHECK(r.updated_elements == 2000);
  // Memory: 2 + 2 + 12 bytes per parameter, activations 100 + 300, buffers min(2 buckets, grads).
  CHECK(r.memory.params == 4000);
  CHECK(r.memory.optimizer == 24000);
  CHECK(r.memory.activations == 400);
  CHECK(r.memory.buffers == 4000);
}

TEST_CASE("sharded: deferred all-gather delays the forward, 1/N update") {
  // All-gathers at step start: unit 0's buffer [0,1.5], unit 1's [1.5,3]. Forward unit 0
  // [1.5,2.5], unit 1 waits to 3 -> [3,4]. Backward unit 1 [4,6] -> reduce-scatter [6,7.5];
  // unit 0 [6,8] -> [8,9.5]. Update of 2,000 / 4 parameters: 0.25 s -> 9.75.
  auto comm = fixed_comm();
  const auto r = step::simulate_step(toy_workload(), toy_device(), config(Strategy::sharded, 4), comm);
  CHECK(r.step_time_s == doctest::Approx(9.75).scale(0));
  CHECK(r.update_s == doctest::Approx(0.25).scale(0));
  CHECK(r.exposed_comm_s == doctest::Approx(3.5).scale(0));
  CHECK(r.updated_elements == 500);
  CHECK(r.collectives == 4);
  // Not deferred: backward ends at 6 + 1 (forward no longer waits): forward [0,2], backward
  // [2,6], reduce-scatters [4,5.5] and [6,7.5], update [7.5,7.75], all-gathers to 10.75.
  auto c = config(Strategy::sharded, 4);
  c.defer_allgather = false;
  CHECK(step::simulate_step(toy_workload(), toy_device(), c, comm).step_time_s == doctest::Approx(10.75).scale(0));
  // zero1 is the same schedule as not-deferred sharding.
  CHECK(step::simulate_step(toy_workload(), toy_device(), config(Strategy::zero1, 4), comm).step_time_s ==
        doctest::Approx(10.75).scale(0));
}

TEST_CASE("zero3: per-unit all-gathers with prefetch, reduce-scatter after each unit's backward") {
  // Forward: gather u0 [0,1.5], compute [1.5,2.5] while u1 is prefetched [1.5,3]; u1 [3,4].
  // Backward: gather u1 [4,5.5], prefetch u0 [5.5,7]; u1 [5.5,7.5] -> RS [7.5,9]; u0 [7.5,9.5]
  // -> RS [9.5,11]; update 0.25 s -> 11.25.
  auto comm = fixed_comm();
  const auto r = step::simulate_step(toy_workload(), toy_device(), config(Strategy::zero3, 4), comm);
  CHECK(r.step_time_s == doctest::Approx(11.25).scale(0));
  CHECK(r.collectives == 6);
  // Without prefetch each gather waits for its unit: forward gather u0 [0,1.5], u0 [1.5,2.5],
  // gather u1 [2.5,4], u1 [4,5]; backward gather u1 [5,6.5], u1 [6.5,8.5]; the reduce-scatter
  // of u1 is issued at 8.5, before u0's gather, so FIFO: RS u1 [8.5,10], gather u0 [10,11.5],
  // u0 [11.5,13.5], RS u0 [13.5,15]; update -> 15.25.
  auto c = config(Strategy::zero3, 4);
  c.prefetch = false;
  CHECK(step::simulate_step(toy_workload(), toy_device(), c, comm).step_time_s == doctest::Approx(15.25).scale(0));
}

TEST_CASE("zero3 as PyTorch FSDP runs it: the memory passes around each unit's collectives") {
  // Collectives of no duration, so the step is its compute: forward 2 s, backward 4 s, update
  // 0.25 s, plus the passes at the toy device's 56,000 B/s over each unit's 1,000 elements
  // (dp 4 divides it: no padding).
  step::FunctionComm free_comm([](coll::OpKind, std::uint64_t, const std::vector<int>&) { return 0.0; });
  auto c = config(Strategy::zero3, 4);
  const double base = step::simulate_step(toy_workload(), toy_device(), c, free_comm).step_time_s;
  CHECK(base == doctest::Approx(6.25).scale(0));
  // fsdp1, bf16 reduction: flatten 2 x 2 B and the predivide in place 2 x 2 B (factor 2 at N = 4)
  // per element: 8,000 B per unit, two units.
  c.fsdp = step::FsdpImpl::fsdp1;
  CHECK(step::simulate_step(toy_workload(), toy_device(), c, free_comm).step_time_s ==
        doctest::Approx(base + 2 * 8000.0 / 56000).epsilon(1e-12));
  // fp32 reduction: flatten 4, cast 2 + 4, predivide 2 x 4: 18 B per element.
  c.reduce_bytes = 4;
  CHECK(step::simulate_step(toy_workload(), toy_device(), c, free_comm).step_time_s ==
        doctest::Approx(base + 2 * 18000.0 / 56000).epsilon(1e-12));
  // fsdp2, fp32 reduction: a copy-out (2 x 2 B) after each of the 4 all-gathers (forward and
  // backward, two units), a copy-in with the cast (2 + 4 B) before each of the 2 reduce-scatters.
  c.fsdp = step::FsdpImpl::fsdp2;
  CHECK(step::simulate_step(toy_workload(), toy_device(), c, free_comm).step_time_s ==
        doctest::Approx(base + (4 * 4000.0 + 2 * 6000.0) / 56000).epsilon(1e-12));
  // One rank: nothing gathered or reduced, nothing copied.
  c.dp = 1;
  auto one = config(Strategy::zero3, 1);
  const double base1 = step::simulate_step(toy_workload(), toy_device(), one, free_comm).step_time_s;
  CHECK(step::simulate_step(toy_workload(), toy_device(), c, free_comm).step_time_s == doctest::Approx(base1).scale(0));
  // Only zero3 has them.
  c = config(Strategy::zero2, 4);
  c.fsdp = step::FsdpImpl::fsdp1;
  CHECK_THROWS_WITH_AS(step::validate(c),
                       "--fsdp: fsdp1 with --strategy zero2; expected --strategy zero3 (FSDP's passes around its "
                       "gathers and reductions)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(step::fsdp_impl_from_string("fsdp3", "--fsdp"), doctest::Contains("fsdp3"), ConfigError);
}

TEST_CASE("gradient accumulation and activation checkpointing") {
  auto comm = fixed_comm();
  auto c = config(Strategy::replicated, 4);
  c.grad_accum = 2;
  // Two micro-batches of 6 s; buckets only in the second: all-reduces [10,13], [13,16]; update 1 s.
  auto r = step::simulate_step(toy_workload(), toy_device(), c, comm);
  CHECK(r.step_time_s == doctest::Approx(17.0).scale(0));
  CHECK(r.collectives == 2);
  CHECK(r.model_flops == 2 * 6e12);
  c.grad_accum = 1;
  c.checkpointing = true;
  // Each unit's forward (1 s) is recomputed before its backward: backward 4 + 2 s. Unit 1 ends
  // its backward at 2 + 3 = 5 -> AR [5,8]; unit 0 at 8 -> AR [8,11]; update -> 12.
  r = step::simulate_step(toy_workload(), toy_device(), c, comm);
  CHECK(r.backward_s == 6.0);
  CHECK(r.step_time_s == doctest::Approx(12.0).scale(0));
  // Activations: each unit keeps its input (first op: 100 and 300) plus the largest unit (300).
  CHECK(r.memory.activations == 700);
}

TEST_CASE("sharded moves the same bytes as the all-reduce; zero3 1.5x") {
  // Rank 0 sends 2(N-1)/N S for an all-reduce, (N-1)/N S for each of reduce-scatter and
  // all-gather: 2 x 2,000 bytes x 2(3)/4 = 6,000 bytes either way.
  auto comm = fixed_comm();
  const auto rep = step::simulate_step(toy_workload(), toy_device(), config(Strategy::replicated, 4), comm);
  const auto sh = step::simulate_step(toy_workload(), toy_device(), config(Strategy::sharded, 4), comm);
  CHECK(rep.comm_bytes == 6000);
  CHECK(sh.comm_bytes == rep.comm_bytes);
  CHECK(sh.padding_elements == 0);
  const auto z3 = step::simulate_step(toy_workload(), toy_device(), config(Strategy::zero3, 4), comm);
  CHECK(z3.comm_bytes == 1.5 * rep.comm_bytes);
}

TEST_CASE("update time is 1/N of the replicated update; the Adam-vs-SGD gap shrinks under sharding") {
  auto comm = fixed_comm();
  for (std::uint64_t n : {2, 4, 8}) {
    auto c = config(Strategy::sharded, n);
    const auto sh = step::simulate_step(toy_workload(), toy_device(), c, comm);
    const auto rep = step::simulate_step(toy_workload(), toy_device(), config(Strategy::replicated, n), comm);
    CHECK(sh.update_s * static_cast<double>(n) == doctest::Approx(rep.update_s).scale(0));
    // Adam moves 28 bytes per parameter, SGD 12 (optimizer.hpp): the gap is 16/28 of the
    // replicated update, and 1/N of that when sharded.
    auto sgd_rep = config(Strategy::replicated, n);
    sgd_rep.optimizer = &opt::find_optimizer("sgd", "t");
    auto sgd_sh = c;
    sgd_sh.optimizer = sgd_rep.optimizer;
    const double gap_rep = rep.step_time_s - step::simulate_step(toy_workload(), toy_device(), sgd_rep, comm).step_time_s;
    const double gap_sh = sh.step_time_s - step::simulate_step(toy_workload(), toy_device(), sgd_sh, comm).step_time_s;
    CHECK(gap_rep == doctest::Approx(16.0 / 28.0).scale(0));
    CHECK(gap_sh == doctest::Approx(gap_rep / static_cast<double>(n)).scale(0));
  }
}

TEST_CASE("padding: prime-sized tensors are padded to a multiple of N and the overhead reported") {
  std::uint64_t pad = 0;
  // 7 + 11 + 13 = 31 fused into one buffer -> 32 for N = 4: 1 element of padding.
  CHECK(step::fuse_and_pad({7, 11, 13}, 1000, 4, true, pad) == std::vector<std::uint64_t>{32});
  CHECK(pad == 1);
  // One buffer per tensor: 8 + 12 + 16 = 36 -> 5 elements.
  CHECK(step::fuse_and_pad({7, 11, 13}, 1000, 4, false, pad) == std::vector<std::uint64_t>{8, 12, 16});
  CHECK(pad == 5);
  // Buffer cap 15 elements: 7 + 11 = 18 closes the first buffer (>= cap), 13 alone; N = 3:
  // 18 -> 18, 13 -> 15.
  CHECK(step::fuse_and_pad({7, 11, 13}, 15, 3, true, pad) == std::vector<std::uint64_t>{18, 15});
  CHECK(pad == 2);
  // In the step model: tensors of 17 and 19 elements (primes), N = 4, fused into one buffer of
  // 36 elements, no padding; unfused 20 + 20 = 40: 4 elements, 4/36 of the parameters.
  auto w = toy_workload();
  w.params = {{"a", 17, 0, 0, 0}, {"b", 19, 1, 0, 0}};
  auto comm = fixed_comm();
  auto c = config(Strategy::sharded, 4);
  c.bucket_bytes = 1 << 20;
  CHECK(step::simulate_step(w, toy_device(), c, comm).padding_elements == 0);
  c.fusion = false;
  const auto r = step::simulate_step(w, toy_device(), c, comm);
  CHECK(r.padding_elements == 4);
  CHECK(r.padding_fraction == doctest::Approx(4.0 / 36.0).scale(0));
  CHECK(r.updated_elements == 10);  // 40 / 4
  // zero3 pads each unit's flat buffer: 17 -> 20, 19 -> 20.
  CHECK(step::simulate_step(w, toy_device(), config(Strategy::zero3, 4), comm).padding_elements == 4);
}

TEST_CASE("partial sharding over k of N: reduce-scatter and all-gather in the subgroup, all-reduce across") {
  std::vector<std::vector<int>> groups;
  step::FunctionComm comm([&](coll::OpKind, std::uint64_t, const std::vector<int>& g) {
    groups.push_back(g);
    return 1.0;
  });
  auto c = config(Strategy::sharded, 8);
  c.shard_group = 4;
  const auto r = step::simulate_step(toy_workload(), toy_device(), c, comm);
  CHECK(r.updated_elements == 500);  // 1/k of 2,000
  // Rank 0's collectives first, in issue order: per buffer an all-gather, then per buffer a
  // reduce-scatter + cross all-reduce. Then (every rank, rank_program.hpp) the other groups'
  // instances of the same collectives, to decide whether the ranks fold: the four subgroup
  // collectives on {4-7}, the two cross all-reduces on {1,5}, {2,6}, {3,7}: 6 + 4 + 6 calls.
  REQUIRE(groups.size() == 16);
  CHECK(groups[0] == std::vector<int>{0, 1, 2, 3});
  CHECK(groups[3] == std::vector<int>{0, 4});
  CHECK(groups[6] == std::vector<int>{4, 5, 6, 7});
  CHECK(groups[15] == std::vector<int>{3, 7});
  CHECK(r.ranks_simulated == 1);  // every instance takes 1 s: folded
  c.shard_group = 3;
  CHECK_THROWS_WITH_AS(step::simulate_step(toy_workload(), toy_device(), c, comm),
                       "--shard-group: k = 3 does not divide N = 8; expected a sharding subgroup size that divides the "
                       "data-parallel size",
                       ConfigError);
}

TEST_CASE("step config validation") {
  auto comm = fixed_comm();
  auto c = config(Strategy::replicated, 0);
  CHECK_THROWS_WITH_AS(step::simulate_step(toy_workload(), toy_device(), c, comm),
                       "--dp: 0; expected a data-parallel size of at least 1", ConfigError);
  c = config(Strategy::replicated, 2);
  c.grad_accum = 0;
  CHECK_THROWS_WITH_AS(step::simulate_step(toy_workload(), toy_device(), c, comm),
                       "--grad-accum: 0; expected at least 1 micro-batch", ConfigError);
  c = config(Strategy::replicated, 2);
  step::Workload empty;
  empty.name = "empty";
  CHECK_THROWS_WITH_AS(step::simulate_step(empty, toy_device(), c, comm),
                       "empty: no forward or backward ops; expected at least one op", ConfigError);
  // Does not fit: a 16 GiB-per-parameter-byte device is too small for 2,000 parameters.
  auto tiny = toy_device();
  tiny.hbm_bytes = 1000;
  const auto r = step::simulate_step(toy_workload(), tiny, c, comm);
  CHECK_FALSE(r.fits);
  CHECK(r.memory.peak > 1000);
}
