#pragma once
// Optimizers (DESIGN 5): state bytes per parameter, bytes moved and FLOPs of the update
// pass, and what sharding the update changes. Registered by name with a description
// (STYLE 4); `shardsim list optimizers` prints the table.
//
// Precision:
//  - fp32: weights, gradients and states in fp32.
//  - mixed (Micikevicius et al. 2018, "Mixed Precision Training"; ZeRO paper sec. 3.1):
//    16-bit weights and gradients (2 + 2 bytes), an fp32 master copy of the weights (4 bytes)
//    counted as optimizer state, plus the fp32 states. Mixed-precision Adam: K = 12 bytes of
//    optimizer state per parameter (Rajbhandari et al. 2020, sec. 3.1).
// Update pass (memory bound, one elementwise sweep): per parameter it reads the weight (fp32
// master or fp32 weight, 4), the gradient (2 or 4) and each state (4), and writes the weight
// (4), each state (4) and, mixed, the 16-bit working copy (2): 12 + 8 x moments bytes in both
// precisions. LAMB adds a second sweep (write and re-read of the update, 8 bytes) for the
// trust ratio; Adafactor re-reads the gradient once for its row/column statistics.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/registry.hpp"

namespace shardsim::opt {

enum class Precision : std::uint8_t { fp32, mixed };
const char* to_string(Precision p);
/// "fp32" | "mixed"; throws ConfigError naming `where`.
Precision precision_from_string(const std::string& s, const std::string& where);
/// Bytes per element of the working weights and of the gradients (2 mixed, 4 fp32).
std::uint32_t weight_bytes(Precision p);
std::uint32_t grad_bytes(Precision p);

enum class Kind : std::uint8_t { sgd, momentum, adam, adamw, lamb, adafactor };

struct Optimizer {
  Kind kind = Kind::adam;
  std::string name;
  std::string description;
  std::string source;
  std::uint32_t moments = 0;         ///< fp32 state tensors the size of the weights
  bool factored_second_moment = false;  ///< Adafactor: rows + cols per matrix
  bool per_tensor_norms = false;     ///< LAMB: ||w|| and ||update|| per tensor
  double flops_per_param = 0;        ///< update FLOPs per parameter
  double extra_bytes_per_param = 0;  ///< bytes beyond 12 + 8 x moments (see header)
};

const std::vector<Optimizer>& optimizers();
/// Throws ConfigError naming `where` and listing the valid names.
const Optimizer& find_optimizer(const std::string& name, const std::string& where);
/// The optimizers as a registry (sim/registry.hpp): entry i describes optimizers()[i].
const Registry& optimizer_registry();

/// A tensor as the optimizer sees it: elements, and rows x cols when it is a matrix
/// (rows = cols = 0 otherwise).
struct TensorShape {
  std::uint64_t elements = 0;
  std::uint64_t rows = 0, cols = 0;
};

/// Optimizer-state bytes one device holds for a tensor whose update is sharded `shards`
/// ways (1 = replicated): (fp32 master, mixed only) + moments x 4, over `shards`; Adafactor
/// adds 4 x (rows/shards + cols) for a factored matrix (row statistics split with the rows,
/// column statistics kept whole), or 4 x elements/shards for a vector.
double state_bytes(const Optimizer& o, Precision p, const TensorShape& t, std::uint64_t shards);
/// Bytes per parameter of optimizer state for unfactored tensors (K in the ZeRO paper).
double state_bytes_per_param(const Optimizer& o, Precision p);

struct UpdateCost {
  double flops = 0;
  double bytes = 0;
};
/// Update pass over `elements` parameters.
UpdateCost update_cost(const Optimizer& o, Precision p, double elements);

/// Extra communication a sharded update needs, in bytes of one fused all-reduce over the
/// sharding group (0 when none): LAMB 8 bytes per tensor (partial sums of ||w||^2 and
/// ||u||^2, You et al. 2020, Algorithm 2); Adafactor 4 x cols per factored matrix (partial
/// column sums of g^2, Shazeer & Stern 2018, Algorithm 4).
double sharded_update_allreduce_bytes(const Optimizer& o, const std::vector<TensorShape>& tensors);

}  // namespace shardsim::opt
