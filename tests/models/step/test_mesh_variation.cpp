// Per-rank compute factors in the mesh step (models/step/parallel_step.cpp, issue 16): one slow
// stage of a GPipe pipeline gives the step time of the schedule's closed form, a slow rank is
// never folded away, and sampled mesh steps are reproducible from the seed.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <vector>

#include "models/compute/device.hpp"
#include "models/optimizer/optimizer.hpp"
#include "models/parallel/mesh.hpp"
#include "models/step/parallel_graphs.hpp"
#include "models/step/variation.hpp"
#include "sim/error.hpp"

using namespace shardsim;
using namespace shardsim::step;

namespace {

// A small decoder: 16 layers, h 1024, 16 heads, MLP 4h, sequence 2048.
parallel::ModelSpec toy() {
  parallel::ModelSpec m;
  m.name = "toy";
  m.layers = 16;
  m.hidden = 1024;
  m.heads = m.kv_heads = 16;
  m.ffn = 4096;
  m.vocab = 32000;
  m.max_positions = 2048;
  m.rmsnorm = true;
  m.default_seq = 2048;
  return m;
}

ParallelStepConfig config(const parallel::ModelSpec& m, parallel::MeshSizes z, std::uint64_t micro_batches) {
  ParallelStepConfig c;
  c.model = &m;
  c.mesh = z;
  c.micro_batch = 1;
  c.global_batch = micro_batches * z.dp;
  c.optimizer = &opt::find_optimizer("adam", "test");
  c.schedule = parallel::PipelineSchedule{parallel::ScheduleKind::gpipe, 1};
  c.output_layer = false;  // every stage alike (parallel_graphs.hpp)
  return c;
}

FunctionComm zero_comm() {
  return FunctionComm([](coll::OpKind, std::uint64_t, const std::vector<int>&) { return 0.0; });
}

// The mesh rank of stage `stage` whose other coordinates are 0.
std::uint64_t stage_rank(const ParallelStepConfig& c, std::uint64_t stage) {
  std::array<std::uint64_t, 5> co{};
  co[static_cast<std::size_t>(parallel::Axis::pp)] = stage;
  return parallel::Mesh(c.mesh, c.order).rank(co);
}

const ParallelRankTimes& of_stage(const ParallelStepResult& r, std::uint64_t stage) {
  for (const auto& x : r.per_rank) {
    if (x.stage == stage) return x;
  }
  FAIL("no rank of stage " << stage);
  return r.per_rank.front();
}

}  // namespace

TEST_CASE("in a pipeline, one slow rank grows the bubble as computed by hand (GPipe, pp = 4)") {
  // GPipe with free communication is two permutation flow shops of m identical jobs: all
  // forwards through stages 0..p-1, then all backwards through p-1..0 (the last stage starts
  // its backwards once its forwards are done). A flow shop of identical jobs with stage times
  // t_1..t_q finishes its last job at sum t_i + (m - 1) max t_i (Johnson 1954; the slowest
  // stage paces every job after the first). Stage i runs f_i = k_i F forward and b_i = k_i B
  // backward per micro-batch (F, B: L/p layers of one micro-batch), then its update k_i u_i:
  //   T_F = sum_i f_i + (m - 1) max_i f_i
  //   end_i = T_F + sum_{l >= i} b_l + (m - 1) max_{l >= i} b_l + k_i u_i,  step = max_i end_i
  // and stage i's bubble is end_i - m (f_i + b_i) - k_i u_i.
  const auto m = toy();
  const auto& dev = compute::find_device("h100", "test");
  auto comm = zero_comm();
  constexpr std::uint64_t p = 4;
  constexpr double k = 2.0;  // half speed
  for (const std::uint64_t mb : {4ULL, 8ULL}) {
    for (const std::uint64_t slow : {0ULL, 2ULL, 3ULL}) {
      CAPTURE(mb);
      CAPTURE(slow);
      auto c = config(m, parallel::MeshSizes{1, 1, p, 1, 1}, mb);
      const auto base = simulate_parallel_step(c, dev, comm);
      c.compute_scale.assign(p, 1.0);
      c.compute_scale[stage_rank(c, slow)] = k;
      const auto r = simulate_parallel_step(c, dev, comm);

      const double L = static_cast<double>(m.layers / p), M = static_cast<double>(mb);
      const double F = L * base.layer_forward_s, B = L * base.layer_backward_s;
      std::vector<double> ks(p, 1.0), f(p), b(p), u(p), end(p);
      ks[slow] = k;
      for (std::uint64_t i = 0; i < p; ++i) {
        f[i] = ks[i] * F;
        b[i] = ks[i] * B;
        u[i] = ks[i] * of_stage(base, i).update_s;
      }
      double sum_f = 0, max_f = 0;
      for (std::uint64_t i = 0; i < p; ++i) {
        sum_f += f[i];
        max_f = std::max(max_f, f[i]);
      }
      const double t_forward = sum_f + (M - 1) * max_f;
      double expected = 0;
      for (std::uint64_t i = 0; i < p; ++i) {
        double sum_b = 0, max_b = 0;
        for (std::uint64_t l = i; l < p; ++l) {
          sum_b += b[l];
          max_b = std::max(max_b, b[l]);
        }
        end[i] = t_forward + sum_b + (M - 1) * max_b + u[i];
        expected = std::max(expected, end[i]);
      }
      CHECK(r.step.step_time_s == doctest::Approx(expected).epsilon(1e-6).scale(0));
      for (std::uint64_t i = 0; i < p; ++i) {
        CAPTURE(i);
        const auto& x = of_stage(r, i);
        CHECK(x.step_time_s == doctest::Approx(end[i]).epsilon(1e-6).scale(0));
        CHECK(x.pp_bubble_s == doctest::Approx(end[i] - M * (f[i] + b[i]) - u[i]).epsilon(1e-6).scale(0));
      }
      // The closed form with the factor differs from the uniform pipeline's (so a run that
      // ignored the factor would fail the checks above): by at least the slow stage's extra
      // compute of one micro-batch's forward and backward.
      CHECK(expected - base.step.step_time_s > (k - 1) * (F + B) * 0.999);
      // The fast stages' bubble grows: they wait for the slow one.
      const std::uint64_t fast = slow == 0 ? 1 : 0;
      CHECK(of_stage(r, fast).pp_bubble_s > of_stage(base, fast).pp_bubble_s);
    }
  }
}

TEST_CASE("a slow rank of the mesh is never folded with the others") {
  const auto m = toy();
  const auto& dev = compute::find_device("h100", "test");
  auto comm = zero_comm();
  auto c = config(m, parallel::MeshSizes{2, 1, 4, 1, 1}, 4);  // dp 2 x pp 4
  const auto folded = simulate_parallel_step(c, dev, comm);
  CHECK(folded.step.ranks_simulated == 4);  // one representative per stage
  const parallel::Mesh mesh(c.mesh, c.order);
  for (const std::uint64_t dp_coord : {0ULL, 1ULL}) {  // a representative, then a folded rank
    CAPTURE(dp_coord);
    std::array<std::uint64_t, 5> co{};
    co[static_cast<std::size_t>(parallel::Axis::pp)] = 2;
    co[static_cast<std::size_t>(parallel::Axis::dp)] = dp_coord;
    auto s = c;
    s.compute_scale.assign(8, 1.0);
    s.compute_scale[mesh.rank(co)] = 2.0;
    const auto r = simulate_parallel_step(s, dev, comm);
    CHECK(r.step.ranks_simulated == 8);
    CHECK(r.fold == "every rank");
    auto every = s;
    every.fold = Fold::none;
    const auto u = simulate_parallel_step(every, dev, comm);
    CHECK(r.step.step_time_s == u.step.step_time_s);
    CHECK(r.step.step_time_s > folded.step.step_time_s);
    // Assume-symmetric folding (the planner's) does not hide it either.
    auto assume = s;
    assume.fold = Fold::assume_symmetric;
    CHECK(simulate_parallel_step(assume, dev, comm).step.step_time_s == u.step.step_time_s);
  }
  // Equal factors on every rank of a stage keep the fold.
  auto even = c;
  even.compute_scale.assign(8, 1.0);
  for (std::uint64_t r = 0; r < 8; ++r) {
    if (mesh.coord(r, parallel::Axis::pp) == 1) even.compute_scale[r] = 1.5;
  }
  CHECK(simulate_parallel_step(even, dev, comm).step.ranks_simulated == 4);
}

TEST_CASE("sampled mesh steps: jitter per rank and step, reproducible from the seed") {
  const auto m = toy();
  const auto& dev = compute::find_device("h100", "test");
  auto comm = zero_comm();
  const auto c = config(m, parallel::MeshSizes{2, 1, 2, 1, 1}, 4);
  ComputeVariation v;
  v.jitter = parse_jitter("lognormal:0.1", "--compute-jitter");
  v.seed = 3;
  ParallelStepResult first_a, first_b, first_c;
  const auto a = simulate_parallel_step_samples(c, dev, comm, v, 5, first_a);
  const auto b = simulate_parallel_step_samples(c, dev, comm, v, 5, first_b);
  v.seed = 4;
  const auto d = simulate_parallel_step_samples(c, dev, comm, v, 5, first_c);
  CHECK(a.step_time_s == b.step_time_s);
  CHECK(a.step_time_s != d.step_time_s);
  CHECK(first_a.step.ranks_simulated == 4);  // jitter differs per rank: every rank simulated
  CHECK(a.step_time_s.front() == first_a.step.step_time_s);
  CHECK(a.min_s <= a.p50_s);
  CHECK(a.p50_s <= a.max_s);
  // Step s is simulate_parallel_step with the factors of step s.
  auto c2 = c;
  v.seed = 3;
  v.factors(2, 4, c2.compute_scale);
  CHECK(simulate_parallel_step(c2, dev, comm).step.step_time_s == a.step_time_s[2]);
  // A slow rank outside the mesh is an error naming the flag.
  ComputeVariation bad;
  bad.slow = parse_slow_ranks("4:0.5", "--slow-ranks");
  ParallelStepResult unused;
  CHECK_THROWS_WITH_AS(simulate_parallel_step_samples(c, dev, comm, bad, 1, unused),
                       "--slow-ranks: rank 4 in a step of 4 ranks; expected ranks 0..3", ConfigError);
}
