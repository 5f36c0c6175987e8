#include "models/memory/memory.hpp"

#include <cmath>

#include "sim/error.hpp"

namespace shardsim::memory {

MemoryBreakdown memory_per_device(const MemoryInput& in) {
  if (in.dp == 0) throw ConfigError("memory", "a data-parallel size of 0", "at least 1 device");
  if (in.optimizer == nullptr) throw ConfigError("memory", "no optimizer", "an optimizer");
  const std::uint64_t k = in.shard_group == 0 ? in.dp : in.shard_group;
  const auto f = step::shard_factors(in.strategy, in.dp, k);
  double elements = 0, optimizer = 0;
  for (const auto& t : in.tensors) {
    elements += static_cast<double>(t.elements);
    optimizer += opt::state_bytes(*in.optimizer, in.precision, t, f.optimizer);
  }
  MemoryBreakdown m;
  m.params = elements * opt::weight_bytes(in.precision) / static_cast<double>(f.params);
  m.grads = elements * opt::grad_bytes(in.precision) / static_cast<double>(f.grads);
  m.optimizer = optimizer;
  m.activations = in.activations;
  m.buffers = in.buffers;
  m.peak = m.params + m.grads + m.optimizer + m.activations + m.buffers;
  return m;
}

std::vector<opt::TensorShape> square_tensor(double params) {
  const auto e = static_cast<std::uint64_t>(std::llround(params));
  const auto side = static_cast<std::uint64_t>(std::llround(std::sqrt(params)));
  opt::TensorShape t{e, 0, 0};
  if (side > 0 && side * side == e) t.rows = t.cols = side;
  else if (side > 0) { t.rows = side; t.cols = (e + side - 1) / side; }
  return {t};
}

}  // namespace shardsim::memory
