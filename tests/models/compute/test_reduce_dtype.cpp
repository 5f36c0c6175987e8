// Gradients reduced in a wider type than they are kept in (StepConfig::reduce_bytes): FSDP's
// MixedPrecision(reduce_dtype=torch.float32) reduce-scatters bf16 gradients as fp32 (composer's
// fsdp mixed_precision DEFAULT, torchtitan's FSDP2 policy), twice the bytes of a bf16 reduction;
// weight all-gathers keep the bf16 size. Closed forms on the 8-device star.
#include <doctest/doctest.h>

#include <cstdint>

#include "models/compute/device.hpp"
#include "models/step/step.hpp"
#include "models/step/topology_comm.hpp"
#include "tests/models/step/star8.hpp"
#include "tests/models/step/toy_device.hpp"
#include "tests/models/step/units_workload.hpp"

using namespace shardsim;

namespace {

// Four units of 250,000 parameters (1M in all, divisible by 8: no padding).
step::Workload four_units() { return test::units_workload("four-units", 1e9, 250'000, {100, 100, 100, 100}); }

step::StepResult run(step::Strategy s, std::uint32_t reduce_bytes) {
  const auto w = four_units();
  const compute::Device dev = test::toy_device();
  step::StepConfig c;
  c.strategy = s;
  c.optimizer = &opt::find_optimizer("adam", "t");
  c.dp = 8;
  c.bucket_bytes = 1'000'000;
  c.reduce_bytes = reduce_bytes;
  const auto t = test::star8();
  step::TopologyComm comm(t, step::Fidelity::analytical, "ring");
  return step::simulate_step(w, dev, c, comm);
}

}  // namespace

TEST_CASE("reduce_bytes: 0 is the gradients' own width (2 bytes in mixed precision)") {
  for (const auto s : {step::Strategy::replicated, step::Strategy::zero3}) {
    CHECK(run(s, 0).comm_bytes == run(s, 2).comm_bytes);
    CHECK(run(s, 0).step_time_s == run(s, 2).step_time_s);
  }
}

TEST_CASE("reduce_bytes: an fp32 reduction doubles the gradient collectives' bytes, not the weight gathers'") {
  // Replicated: every collective is a gradient all-reduce, so all of comm_bytes doubles.
  CHECK(run(step::Strategy::replicated, 4).comm_bytes == doctest::Approx(2 * run(step::Strategy::replicated, 2).comm_bytes));
  // zero3: the reduce-scatters of 1M elements over 8 ranks send e x 1M x 7/8 bytes per rank
  // (ring, (N-1)/N of the buffer); fp32 instead of bf16 adds 2 x 1M x 7/8.
  const auto bf16 = run(step::Strategy::zero3, 2), fp32 = run(step::Strategy::zero3, 4);
  CHECK(fp32.comm_bytes - bf16.comm_bytes == doctest::Approx(2.0 * 1e6 * 7.0 / 8.0));
  CHECK(fp32.collectives == bf16.collectives);
  // Longer reduce-scatters: the step cannot get shorter.
  CHECK(fp32.step_time_s >= bf16.step_time_s);
  CHECK(fp32.comm_s > bf16.comm_s);
}
