// Memory, optimizers, devices and strategy registries (models/memory, models/optimizer,
// models/compute, models/step/strategy).
#include <doctest/doctest.h>

#include "models/compute/device.hpp"
#include "models/memory/memory.hpp"
#include "models/optimizer/optimizer.hpp"
#include "models/strategy/strategy.hpp"
#include "sim/error.hpp"

using namespace shardsim;

namespace {
memory::MemoryBreakdown zero(step::Strategy s, const std::string& optimizer = "adam") {
  memory::MemoryInput in;
  in.tensors = memory::square_tensor(7.5e9);
  in.optimizer = &opt::find_optimizer(optimizer, "t");
  in.precision = opt::Precision::mixed;
  in.strategy = s;
  in.dp = 64;
  return memory::memory_per_device(in);
}
}  // namespace

TEST_CASE("ZeRO paper Table 1: 7.5B parameters, N = 64, mixed-precision Adam") {
  // Rajbhandari et al. 2020, Table 1 (Psi = 7.5B, N_d = 64, K = 12): baseline (2+2+K) Psi =
  // 120 GB; P_os 4 Psi + K Psi/N = 31.4 GB; P_os+g 2 Psi + 14 Psi/N = 16.6 GB; P_os+g+p
  // 16 Psi/N = 1.88 GB (GB = 1e9 bytes).
  CHECK(zero(step::Strategy::replicated).model_states() == doctest::Approx(120e9).epsilon(0.01).scale(0));
  CHECK(zero(step::Strategy::zero1).model_states() == doctest::Approx(31.4e9).epsilon(0.01).scale(0));
  CHECK(zero(step::Strategy::zero2).model_states() == doctest::Approx(16.6e9).epsilon(0.01).scale(0));
  CHECK(zero(step::Strategy::zero3).model_states() == doctest::Approx(1.88e9).epsilon(0.01).scale(0));
  // Exact values of the formulas, component by component.
  const auto z2 = zero(step::Strategy::zero2);
  CHECK(z2.params == 15e9);
  CHECK(z2.grads == 2 * 7.5e9 / 64);
  CHECK(z2.optimizer == 12 * 7.5e9 / 64);
  // Cross-replica sharding over the whole group holds what zero1 holds.
  CHECK(zero(step::Strategy::sharded).model_states() == zero(step::Strategy::zero1).model_states());
}

TEST_CASE("optimizer state bytes per parameter (K) and update pass bytes") {
  using opt::Precision;
  // Mixed precision: fp32 master (4) + 4 per moment. fp32: moments only.
  CHECK(opt::state_bytes_per_param(opt::find_optimizer("sgd", "t"), Precision::mixed) == 4);
  CHECK(opt::state_bytes_per_param(opt::find_optimizer("momentum", "t"), Precision::mixed) == 8);
  CHECK(opt::state_bytes_per_param(opt::find_optimizer("adam", "t"), Precision::mixed) == 12);
  CHECK(opt::state_bytes_per_param(opt::find_optimizer("adamw", "t"), Precision::fp32) == 8);
  CHECK(opt::state_bytes_per_param(opt::find_optimizer("sgd", "t"), Precision::fp32) == 0);
  // Update: 12 + 8 x moments bytes per parameter; LAMB +8 (second sweep).
  CHECK(opt::update_cost(opt::find_optimizer("sgd", "t"), Precision::mixed, 10).bytes == 120);
  CHECK(opt::update_cost(opt::find_optimizer("adam", "t"), Precision::mixed, 10).bytes == 280);
  CHECK(opt::update_cost(opt::find_optimizer("lamb", "t"), Precision::fp32, 10).bytes == 360);
  CHECK(opt::update_cost(opt::find_optimizer("adam", "t"), Precision::mixed, 10).flops == 120);
}

TEST_CASE("Adafactor keeps rows + columns per matrix; sharding splits the rows and the master copy") {
  const auto& af = opt::find_optimizer("adafactor", "t");
  const opt::TensorShape m{1000 * 500, 1000, 500};
  // Mixed: master 4 x 500000 + factored 4 x (1000 + 500).
  CHECK(opt::state_bytes(af, opt::Precision::mixed, m, 1) == 4.0 * 500000 + 4.0 * 1500);
  // 4 shards: master 4 x 500000 / 4, row statistics 1000 / 4, columns whole.
  CHECK(opt::state_bytes(af, opt::Precision::mixed, m, 4) == 4.0 * 125000 + 4.0 * (250 + 500));
  // A vector keeps a full second moment.
  CHECK(opt::state_bytes(af, opt::Precision::fp32, opt::TensorShape{300, 0, 0}, 3) == 4.0 * 100);
  // Sharded update: partial column sums of g^2 all-reduced, 4 x cols bytes per matrix.
  CHECK(opt::sharded_update_allreduce_bytes(af, {m, opt::TensorShape{300, 0, 0}}) == 2000);
  // LAMB: ||w||^2 and ||u||^2 partial sums, 8 bytes per tensor.
  CHECK(opt::sharded_update_allreduce_bytes(opt::find_optimizer("lamb", "t"), {m, opt::TensorShape{300, 0, 0}}) == 16);
  CHECK(opt::sharded_update_allreduce_bytes(opt::find_optimizer("adam", "t"), {m}) == 0);
}

TEST_CASE("devices: cited presets and the roofline") {
  const auto& h100 = compute::find_device("h100", "t");
  CHECK(h100.peak(compute::MathType::bf16) == 989.5e12);  // 1,979 TF sparse / 2
  CHECK(h100.hbm_bytes == 80ULL << 30);
  CHECK(h100.hbm_Bps == 3350e9);
  // Compute bound: 1e15 FLOPs / (989.5e12 x 0.7) + 4 us launch.
  CHECK(h100.op_time_s(1e15, 1e6, compute::MathType::bf16) == doctest::Approx(1e15 / (989.5e12 * 0.7) + 4e-6).scale(0));
  // Memory bound: 1e10 bytes / (3.35e12 x 0.8) + 4 us.
  CHECK(h100.op_time_s(1e6, 1e10, compute::MathType::bf16) == doctest::Approx(1e10 / (3350e9 * 0.8) + 4e-6).scale(0));
  // TPU: no fp32 unit, fp32 = 6 bf16 passes; fp16 falls back to bf16.
  const auto& v3 = compute::find_device("tpu-v3", "t");
  CHECK(v3.peak(compute::MathType::fp32) == doctest::Approx(123e12 / 6).scale(0));
  CHECK(v3.peak(compute::MathType::fp16) == 123e12);
  for (const auto& d : compute::device_presets()) {
    CHECK_MESSAGE(!d.source.empty(), d.name);
    CHECK(d.hbm_bytes > 0);
    CHECK(d.peak(compute::MathType::bf16) > d.peak(compute::MathType::fp32));
  }
  CHECK_THROWS_WITH_AS(compute::find_device("v100", "--device"),
                       "--device: unknown device 'v100'; expected one of tpu-v2, tpu-v3, tpu-v4, tpu-v5e, tpu-v5p, "
                       "a100-40gb, a100-80gb, h100, h100-hbm2e-500w, h100-pcie, h200, b200, gb200, gb300, mi300x",
                       ConfigError);
}

TEST_CASE("registries reject unknown names, listing the valid ones") {
  CHECK_THROWS_WITH_AS(opt::find_optimizer("adagrad", "--optimizer"),
                       "--optimizer: unknown optimizer 'adagrad'; expected one of sgd, momentum, adam, adamw, lamb, adafactor",
                       ConfigError);
  CHECK_THROWS_WITH_AS(step::strategy_from_string("fsdp", "--strategy"),
                       "--strategy: unknown strategy 'fsdp'; expected one of replicated, sharded, zero1, zero2, zero3",
                       ConfigError);
  CHECK_THROWS_WITH_AS(opt::precision_from_string("fp8", "--precision"),
                       "--precision: unknown precision 'fp8'; expected one of fp32, mixed", ConfigError);
  memory::MemoryInput in;
  in.optimizer = &opt::find_optimizer("sgd", "t");
  in.dp = 0;
  CHECK_THROWS_WITH_AS(memory::memory_per_device(in), "memory: a data-parallel size of 0; expected at least 1 device",
                       ConfigError);
}
