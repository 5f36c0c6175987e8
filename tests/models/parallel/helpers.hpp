#pragma once
// Shared by the models/parallel tests.
#include <cstdint>
#include <functional>
#include <string>

#include "models/parallel/model_spec.hpp"
#include "sim/error.hpp"

namespace shardsim::parallel::test {

/// The message of the ConfigError `f` throws, or "no error".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

/// A small decoder with simple counts, "toy": h 1024, 16 heads (as many K/V heads), GELU MLP
/// of 4h, vocabulary 32,000, RMSNorm, no biases, untied, no dropout; `layers` layers and
/// sequences of `seq` tokens (the default and the most positions).
inline ModelSpec toy_decoder(std::uint64_t layers, std::uint64_t seq) {
  ModelSpec m;
  m.name = "toy";
  m.layers = layers;
  m.hidden = 1024;
  m.heads = m.kv_heads = 16;
  m.ffn = 4096;
  m.vocab = 32000;
  m.max_positions = seq;
  m.rmsnorm = true;
  m.default_seq = seq;
  return m;
}

}  // namespace shardsim::parallel::test
