#include "models/collectives/ompi_decision.hpp"

#include <fmt/format.h>

#include <span>

#include "models/collectives/ompi_tuned.hpp"
#include "sim/error.hpp"

namespace shardsim::coll {
namespace {

// One row of a decision: for communicator sizes `cmp` n (n < n_max, n == n_max, or every n the
// rows above did not take), the first (limit, id) with total_dsize < limit, kAny matching all.
enum Cmp { kLt, kEq, kElse };
constexpr std::uint64_t kAny = UINT64_MAX;
struct SizeRule {
  std::uint64_t below;
  int id;
};
struct Rule {
  Cmp cmp;
  std::size_t n;
  SizeRule sizes[10];  // at most 10 switch points per row in 4.1.4 (alltoall, n == 2)
};

// The switch points of coll_tuned_decision_fixed.c (OpenMPI 4.1.4), row by row, in its order.
// allreduce: ompi_coll_tuned_allreduce_intra_dec_fixed (commutative operations)
constexpr Rule kAllreduce[] = {
    {kLt, 4, {{8, 4}, {4096, 3}, {8192, 4}, {16384, 3}, {65536, 4}, {262144, 5}, {kAny, 6}}},
    {kLt, 8, {{16, 4}, {8192, 3}, {kAny, 6}}},
    {kLt, 16, {{8192, 3}, {kAny, 6}}},
    {kLt, 32, {{64, 5}, {4096, 3}, {kAny, 6}}},
    {kLt, 64, {{128, 5}, {kAny, 6}}},
    {kLt, 128, {{262144, 3}, {kAny, 6}}},
    {kLt, 256, {{131072, 2}, {262144, 3}, {kAny, 6}}},
    {kLt, 512, {{4096, 2}, {kAny, 6}}},
    {kLt, 2048, {{2048, 2}, {16384, 3}, {kAny, 6}}},
    {kLt, 4096, {{2048, 2}, {4096, 5}, {16384, 3}, {kAny, 6}}},
    {kElse, 0, {{2048, 2}, {16384, 5}, {32768, 3}, {kAny, 6}}},
};
// alltoall: ompi_coll_tuned_alltoall_intra_dec_fixed
constexpr Rule kAlltoall[] = {
    {kEq, 2, {{2, 2}, {4, 5}, {16, 2}, {64, 5}, {256, 2}, {4096, 5}, {32768, 2}, {262144, 4}, {1048576, 5}, {kAny, 2}}},
    {kLt, 8, {{8192, 4}, {16384, 1}, {65536, 4}, {524288, 1}, {1048576, 2}, {kAny, 1}}},
    {kLt, 16, {{262144, 4}, {kAny, 1}}},
    {kLt, 32, {{4, 4}, {512, 3}, {8192, 4}, {32768, 1}, {262144, 4}, {524288, 1}, {kAny, 4}}},
    {kLt, 64, {{512, 3}, {524288, 1}, {kAny, 4}}},
    {kLt, 128, {{1024, 3}, {2048, 1}, {4096, 4}, {262144, 1}, {kAny, 2}}},
    {kLt, 256, {{1024, 3}, {2048, 4}, {262144, 1}, {kAny, 2}}},
    {kLt, 512, {{1024, 3}, {8192, 4}, {32768, 1}, {kAny, 2}}},
    {kLt, 1024, {{512, 3}, {8192, 4}, {16384, 1}, {131072, 4}, {262144, 1}, {kAny, 2}}},
    {kLt, 2048, {{512, 3}, {1024, 4}, {2048, 1}, {16384, 4}, {262144, 1}, {kAny, 4}}},
    {kLt, 4096, {{1024, 3}, {4096, 4}, {8192, 1}, {131072, 4}, {kAny, 1}}},
    {kElse, 0, {{2048, 3}, {8192, 4}, {16384, 1}, {32768, 4}, {65536, 1}, {kAny, 4}}},
};
// bcast: ompi_coll_tuned_bcast_intra_dec_fixed
constexpr Rule kBcast[] = {
    {kLt, 4, {{32, 3}, {256, 5}, {512, 3}, {1024, 7}, {32768, 1}, {131072, 5}, {262144, 2}, {524288, 1}, {1048576, 6}, {kAny, 5}}},
    {kLt, 8, {{64, 5}, {128, 6}, {2048, 5}, {8192, 6}, {1048576, 1}, {kAny, 2}}},
    {kLt, 16, {{8, 7}, {64, 5}, {4096, 7}, {16384, 5}, {32768, 6}, {kAny, 1}}},
    {kLt, 32, {{4096, 7}, {1048576, 6}, {kAny, 8}}},
    {kLt, 64, {{2048, 6}, {kAny, 7}}},
    {kLt, 128, {{kAny, 7}}},
    {kLt, 256, {{2, 6}, {16384, 5}, {32768, 1}, {65536, 5}, {kAny, 7}}},
    {kLt, 1024, {{16384, 7}, {32768, 4}, {kAny, 7}}},
    {kLt, 2048, {{524288, 7}, {kAny, 8}}},
    {kLt, 4096, {{262144, 7}, {kAny, 8}}},
    {kElse, 0, {{8192, 7}, {16384, 5}, {262144, 7}, {kAny, 8}}},
};
// reduce_scatter: ompi_coll_tuned_reduce_scatter_intra_dec_fixed (commutative operations)
constexpr Rule kReduceScatter[] = {
    {kLt, 4, {{65536, 3}, {131072, 4}, {kAny, 3}}},
    {kLt, 8, {{8, 1}, {262144, 2}, {kAny, 3}}},
    {kLt, 32, {{262144, 2}, {kAny, 3}}},
    {kLt, 64, {{64, 1}, {2048, 2}, {524288, 4}, {kAny, 3}}},
    {kLt, 128, {{256, 1}, {512, 2}, {2048, 4}, {4096, 2}, {kAny, 4}}},
    {kLt, 256, {{256, 1}, {512, 2}, {kAny, 4}}},
    {kLt, 512, {{256, 1}, {1024, 2}, {kAny, 4}}},
    {kLt, 1024, {{512, 1}, {2048, 2}, {8192, 4}, {16384, 2}, {kAny, 4}}},
    {kLt, 2048, {{512, 1}, {4096, 2}, {16384, 4}, {32768, 2}, {kAny, 4}}},
    {kLt, 4096, {{512, 1}, {4096, 2}, {kAny, 4}}},
    {kElse, 0, {{1024, 1}, {8192, 2}, {kAny, 4}}},
};
// allgather: ompi_coll_tuned_allgather_intra_dec_fixed
constexpr Rule kAllgather[] = {
    {kEq, 2, {{kAny, 6}}},
    {kLt, 32, {{kAny, 3}}},
    {kLt, 64, {{1024, 3}, {65536, 5}, {kAny, 4}}},
    {kLt, 128, {{512, 3}, {65536, 5}, {kAny, 4}}},
    {kLt, 256, {{512, 3}, {131072, 5}, {524288, 4}, {1048576, 5}, {kAny, 4}}},
    {kLt, 512, {{32, 3}, {128, 2}, {1024, 3}, {131072, 5}, {524288, 4}, {1048576, 5}, {kAny, 4}}},
    {kLt, 1024, {{64, 3}, {256, 2}, {2048, 3}, {kAny, 5}}},
    {kLt, 2048, {{4, 3}, {8, 2}, {16, 3}, {32, 2}, {256, 3}, {512, 2}, {4096, 3}, {kAny, 5}}},
    {kLt, 4096, {{32, 2}, {128, 3}, {512, 2}, {4096, 3}, {kAny, 5}}},
    {kElse, 0, {{2, 3}, {8, 2}, {16, 3}, {512, 2}, {4096, 3}, {kAny, 5}}},
};

std::span<const Rule> rules_of(OpKind kind) {
  switch (kind) {
    case OpKind::allreduce: return kAllreduce;
    case OpKind::reducescatter: return kReduceScatter;
    case OpKind::allgather: return kAllgather;
    case OpKind::broadcast: return kBcast;
    case OpKind::alltoall: return kAlltoall;
    default: return {};
  }
}

}  // namespace

OmpiDecision ompi_fixed_decision(OpKind kind, std::size_t n, std::uint64_t bytes, const std::string& where) {
  const auto rules = rules_of(kind);
  if (rules.empty()) {
    throw ConfigError(where, fmt::format("OpenMPI's decision for {}", to_string(kind)),
                      "allreduce, reducescatter, allgather, broadcast or alltoall");
  }
  if (n < 2) throw ConfigError(where, fmt::format("{} ranks", n), "at least 2 ranks for OpenMPI's decision");
  OmpiDecision d;
  d.total_dsize = kind == OpKind::allgather || kind == OpKind::alltoall ? bytes / n : bytes;
  for (const auto& r : rules) {
    if ((r.cmp == kLt && n >= r.n) || (r.cmp == kEq && n != r.n)) continue;
    for (const auto& sr : r.sizes) {
      if (sr.id != 0 && d.total_dsize < sr.below) {
        d.id = sr.id;
        break;
      }
    }
    break;
  }
  d.algorithm = ompi_algorithm_name(kind, d.id, where);
  // Fan-out 0 -> 1: the decision's chain is the pipeline (see the header).
  d.schedule = kind == OpKind::broadcast && d.algorithm == "chain" ? "pipeline" : d.algorithm;
  return d;
}

}  // namespace shardsim::coll
