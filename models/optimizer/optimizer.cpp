#include "models/optimizer/optimizer.hpp"

#include <fmt/format.h>

#include <array>

#include "sim/enum_names.hpp"
#include "sim/error.hpp"

namespace shardsim::opt {

namespace {
constexpr std::array<EnumName<Precision>, 2> kPrecisions{{{Precision::fp32, "fp32"}, {Precision::mixed, "mixed"}}};
}  // namespace

const char* to_string(Precision p) { return enum_name(kPrecisions, p); }

Precision precision_from_string(const std::string& s, const std::string& where) {
  return enum_from_name(kPrecisions, s, "precision", where);
}

std::uint32_t weight_bytes(Precision p) { return p == Precision::mixed ? 2 : 4; }
std::uint32_t grad_bytes(Precision p) { return p == Precision::mixed ? 2 : 4; }

namespace {

// FLOPs per parameter, counted from the update equations (multiply, add, divide, sqrt each 1):
//  sgd: w -= lr*g (2). momentum: v = mu*v + g (2), w -= lr*v (2) -> 4.
//  adam (Kingma & Ba 2015, Algorithm 1): m = b1 m + (1-b1) g (3), v = b2 v + (1-b2) g^2 (4),
//       w -= lr_t * m / (sqrt(v) + eps) (sqrt, add, div, mul, sub: 5) -> 12, the bias
//       corrections folded into the scalar lr_t (Kingma & Ba 2015, end of sec. 2).
//  adamw (Loshchilov & Hutter 2019): + decoupled weight decay w -= lr*wd*w (2) -> 14.
//  lamb (You et al. 2020, Alg. 2): adam's update direction (12) + weight decay (2) + squares
//       and sums for ||w||, ||u|| (4) + trust-ratio scale and apply (2) -> 20.
//  adafactor (Shazeer & Stern 2018, Alg. 4): g^2 (1), row and column sums (2), reconstruct
//       v (2), rsqrt (1), scale (1), update RMS clip (2), lr and apply (2) -> 11.
std::vector<Optimizer> make() {
  std::vector<Optimizer> v;
  v.push_back({Kind::sgd, "sgd", "plain SGD: w -= lr g", "Robbins & Monro 1951", 0, false, false, 2, 0});
  v.push_back({Kind::momentum, "momentum", "SGD with momentum (one fp32 velocity per parameter)",
               "Polyak 1964; Sutskever et al. 2013", 1, false, false, 4, 0});
  v.push_back({Kind::adam, "adam", "Adam: first and second moments (two fp32 states)", "Kingma & Ba 2015", 2, false,
               false, 12, 0});
  v.push_back({Kind::adamw, "adamw", "AdamW: Adam with decoupled weight decay", "Loshchilov & Hutter 2019", 2, false,
               false, 14, 0});
  v.push_back({Kind::lamb, "lamb",
               "LAMB: Adam direction scaled per tensor by ||w||/||u|| (sharded: partial norms + a fused scalar all-reduce)",
               "You et al. 2020, Algorithm 2", 2, false, true, 20, 8});
  v.push_back({Kind::adafactor, "adafactor",
               "Adafactor (no momentum): factored second moment, rows + cols per matrix",
               "Shazeer & Stern 2018, Algorithm 4", 0, true, false, 11, 4});
  return v;
}

}  // namespace

const std::vector<Optimizer>& optimizers() {
  static const std::vector<Optimizer> v = make();
  return v;
}

const Registry& optimizer_registry() {
  static const Registry r = [] {
    Registry reg("optimizer", "optimizers", "optimizers for --optimizer");
    for (const auto& o : optimizers()) reg.add({o.name, o.description, o.source, {}});
    return reg;
  }();
  return r;
}

const Optimizer& find_optimizer(const std::string& name, const std::string& where) {
  return optimizers()[optimizer_registry().at(name, where)];
}

double state_bytes_per_param(const Optimizer& o, Precision p) {
  const double master = p == Precision::mixed ? 4.0 : 0.0;
  return master + 4.0 * o.moments;
}

double state_bytes(const Optimizer& o, Precision p, const TensorShape& t, std::uint64_t shards) {
  const double n = static_cast<double>(shards);
  const double e = static_cast<double>(t.elements);
  double b = state_bytes_per_param(o, p) * e / n;
  if (o.factored_second_moment) {
    if (t.rows > 0 && t.cols > 0) {
      b += 4.0 * (static_cast<double>(t.rows) / n + static_cast<double>(t.cols));
    } else {
      b += 4.0 * e / n;  // vectors keep a full second moment (Shazeer & Stern 2018, sec. 3)
    }
  }
  return b;
}

UpdateCost update_cost(const Optimizer& o, Precision p, double elements) {
  (void)p;  // 12 + 8 x moments in both precisions (header)
  const double per = 12.0 + 8.0 * o.moments + o.extra_bytes_per_param;
  return {o.flops_per_param * elements, per * elements};
}

double sharded_update_allreduce_bytes(const Optimizer& o, const std::vector<TensorShape>& tensors) {
  double b = 0;
  for (const auto& t : tensors) {
    if (o.per_tensor_norms) b += 8.0;
    if (o.factored_second_moment && t.rows > 0 && t.cols > 0) b += 4.0 * static_cast<double>(t.cols);
  }
  return b;
}

}  // namespace shardsim::opt
