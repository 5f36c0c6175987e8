#pragma once
// Memory per device (DESIGN 5): parameters, gradients, optimizer state, activations,
// communication buffers, peak; fits or not against the device's HBM.
//
// Model states follow the ZeRO paper (Rajbhandari et al. 2020, sec. 3.1 and 5, Table 1):
// with weights w and gradients g bytes per parameter (2 + 2 mixed precision) and K bytes of
// optimizer state per parameter (12 for mixed-precision Adam):
//   replicated (w + g + K) P; zero1 / sharded (w + g) P + K P / N; zero2 w P + (g + K) P / N;
//   zero3 (w + g + K) P / N  -> 16P, 4P + 12P/N, 2P + 14P/N, 16P/N for mixed Adam.
// Peak = parameters + gradients + optimizer + activations + buffers (everything resident at
// the end of backward, when all of them are live at once).
#include <cstdint>
#include <string>
#include <vector>

#include "models/optimizer/optimizer.hpp"
#include "models/strategy/strategy.hpp"

namespace shardsim::memory {

struct MemoryBreakdown {
  double params = 0;
  double grads = 0;
  double optimizer = 0;
  double activations = 0;
  double buffers = 0;
  double peak = 0;
  [[nodiscard]] double model_states() const { return params + grads + optimizer; }
};

struct MemoryInput {
  /// Parameter tensors (elements and shapes); the memory CLI passes one square matrix.
  std::vector<opt::TensorShape> tensors;
  const opt::Optimizer* optimizer = nullptr;
  opt::Precision precision = opt::Precision::mixed;
  step::Strategy strategy = step::Strategy::replicated;
  std::uint64_t dp = 1;           ///< N
  std::uint64_t shard_group = 0;  ///< k for `sharded` (0 = N)
  double activations = 0;         ///< bytes, computed by the caller
  double buffers = 0;             ///< bytes, computed by the caller
};

/// Throws ConfigError if dp == 0 or the optimizer is missing. O(tensors).
MemoryBreakdown memory_per_device(const MemoryInput& in);

/// One square matrix of `params` elements (rows = cols = sqrt), for quick questions.
std::vector<opt::TensorShape> square_tensor(double params);

}  // namespace shardsim::memory
