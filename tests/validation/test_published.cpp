// Issue 14: predictions of the published collective corpus (tests/data/published/collectives)
// from presets and cited constants (analysis/validation/published.hpp), against the published
// tables. Prints the per-file table (signed errors) that docs/validation.md quotes, and
// asserts the accuracy reached. Label accuracy; analytical only, well under a second.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "analysis/validation/published.hpp"

using namespace shardsim;

namespace {
const std::string kIndex = std::string(SHARDSIM_SOURCE_DIR) + "/tests/data/published/collectives/index.json";
}

TEST_CASE("published nccl-tests tables: predicted by collective --algorithm auto within the reached accuracy") {
  const auto r = validation::predict_published(kIndex);
  const auto s = validation::summarize_published(r);
  fmt::print("{}", validation::published_table(r, s));
  // Every table index.json maps to a topology is predicted (28 files or rank counts), the
  // degraded run, the GH200 quad nodes (no preset) and the four MPI tables are not.
  CHECK(s.files == 28);
  CHECK(s.skipped == 6);
  // Issue 14's small-message target: median |time error| <= 25 % at S <= 64 KiB; reached
  // 18.6 %, bound at what is reached.
  CHECK(s.median_abs_time_small <= 0.19);
  // Issue 14's large-message target: median |busbw error| <= 10 % at S >= 64 MiB; reached 9.1 %
  // (NVLS per architecture and NCCL 2.32's NVLSTree channel cap, docs/validation.md).
  CHECK(s.median_abs_busbw_large <= 0.095);
  // The mid-size ramp, 1 MiB <= S <= 32 MiB (83 points): median |time error| 33.7 %, every file
  // that has such sizes predicted too fast (docs/validation.md: what NCCL's model leaves out
  // there). Bound at what is reached, so that a regression fails; no target in issue 14.
  CHECK(s.points_mid == 83);
  CHECK(s.median_abs_time_mid <= 0.34);
  // No file worse than 25 % at its largest size, except the 2-rack GB300 all-to-all (a known
  // miss: 47.7 GB/s per GPU across the racks, a quarter of the NICs' rate; the inter-rack
  // fabric is not documented, docs/validation.md).
  for (const auto& f : r) {
    if (f.skipped) continue;
    CAPTURE(f.file);
    if (f.file == "oci-gb300-nvl72-32x4-2racks-alltoall_perf.txt") {
      CHECK(std::fabs(f.largest) > 0.25);  // if this starts passing, move it into the bound
      continue;
    }
    CHECK(std::fabs(f.largest) <= 0.25);
  }
}
