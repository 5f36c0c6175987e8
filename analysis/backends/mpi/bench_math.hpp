#pragma once
// Size and bandwidth arithmetic shared by the MPI and NCCL microbenchmark programs and
// unit-tested without MPI or a GPU (tests/analysis/calibration/test_bench_math.cpp).
//
// Sizes follow nccl-tests (src/common.cu run loop and each test's getCollByteCount; DESIGN 2):
//   size list: for (s = min; s <= max; s = factor > 1 ? s * factor : s + step)
//   all-reduce, broadcast, reduce, point-to-point: count = S / elem, S_eff = count x elem
//   reduce-scatter: S = a rank's whole input; each rank receives count = S / (n x elem)
//   all-gather:     S = a rank's whole output; each rank sends   count = S / (n x elem)
//   so S_eff = count x n x elem (S rounded down to whole elements per rank).
// Bandwidth (nccl-tests doc/PERFORMANCE.md): algbw = S_eff / t (GB/s = 1e9 B/s),
// busbw = algbw x factor (traces/logs/record.hpp busbw_factor).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardsim::bench {

/// nccl-tests -b/-e/-f/-i: geometric with factor > 1, else arithmetic with step > 0.
/// Throws std::invalid_argument for min == 0, max < min, or neither factor > 1 nor step > 0.
inline std::vector<std::uint64_t> size_list(std::uint64_t min, std::uint64_t max, std::uint64_t factor,
                                            std::uint64_t step) {
  if (min == 0 || max < min) throw std::invalid_argument("size range: need 0 < min <= max");
  if (factor <= 1 && step == 0) throw std::invalid_argument("size range: need a factor > 1 or a step > 0");
  std::vector<std::uint64_t> out;
  for (std::uint64_t s = min; s <= max; s = factor > 1 ? s * factor : s + step) {
    out.push_back(s);
    if (factor > 1 && s > max / factor) break;  // the next size would overflow or pass max
  }
  return out;
}

/// Elements each rank passes to the MPI/NCCL call for a collective of nominal size S bytes.
inline std::uint64_t call_count(const std::string& collective, std::uint64_t bytes, int ranks,
                                std::uint32_t elem_bytes) {
  if (collective == "reducescatter" || collective == "allgather" || collective == "alltoall") {
    return bytes / (static_cast<std::uint64_t>(ranks) * elem_bytes);
  }
  return bytes / elem_bytes;
}

/// The size the measurement actually moved (S rounded down to whole elements per rank).
inline std::uint64_t effective_bytes(const std::string& collective, std::uint64_t bytes, int ranks,
                                     std::uint32_t elem_bytes) {
  const std::uint64_t c = call_count(collective, bytes, ranks, elem_bytes);
  if (collective == "reducescatter" || collective == "allgather" || collective == "alltoall") {
    return c * static_cast<std::uint64_t>(ranks) * elem_bytes;
  }
  return c * elem_bytes;
}

/// Median of the values (mean of the two middle ones for an even count; 0 for none).
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const std::size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  const double hi = v[m];
  if (v.size() % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m));
  return (lo + hi) / 2;
}

/// algbw in GB/s for S bytes in t microseconds (0 when t = 0).
inline double algbw_GBps(std::uint64_t bytes, double time_us) {
  return time_us > 0 ? static_cast<double>(bytes) / (time_us * 1e3) : 0.0;
}

}  // namespace shardsim::bench
