#pragma once
// Predictions of the published collective corpus (tests/data/published/collectives, issue 14):
// every nccl-tests table and busbw summary that index.json maps to a topology is predicted
// with `collective --algorithm auto` (the NCCL model on GPU topologies), at the measured sizes,
// and compared with the measurement. Nothing is fitted: the topology is a preset (or, for a
// system without one, a builder spec of the SOURCE's documented hardware) and NCCL_ALGO is
// passed only where the SOURCE says the run set it.
//
// index.json entries read here (others are listed as skipped, with their reason):
//   "file", "format" (nccl-tests | csv-summary | csv-busbw), "collective", "ranks" (an int, or
//   a list for a csv-summary holding several node counts),
//   "preset": a preset name, "{ranks}" replaced by the rank count (aws-p5-{ranks}); or
//   "topology": a topology JSON object;
//   optional "model_ranks_first": true when the group is the first `ranks` devices of a
//   larger preset (4 GPUs of an NVL72), "nccl_algo" (NCCL_ALGO of the run),
//   "exclude_from_accuracy" (reason), "gpus_per_thread" (nccl-tests -g of a table without
//   the log's "nGpus" header line: one thread driving that many GPUs, whose launches bound
//   the small sizes, published.cpp).
// Rows of S = 0 (nccl-tests' all-gather / reduce-scatter below one element per rank) are not
// compared: NCCL does no work for them. Measured values: nccl-tests in-place columns (the out-of-place ones carry first-call
// outliers), csv-summary "in busbw", csv-busbw "busbw_GBps" (time = S x busbw factor / busbw).
// Errors are signed: busbw error = predicted busbw / measured - 1; time error = predicted
// time / measured - 1.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardsim::validation {

struct PublishedPoint {
  std::uint64_t bytes = 0;
  double measured_us = 0, predicted_us = 0;
  double measured_busbw_GBps = 0, predicted_busbw_GBps = 0;
  std::string algorithm;  ///< what the model ran ("nccl:NVLSTree/Simple")
  [[nodiscard]] double busbw_error() const { return predicted_busbw_GBps / measured_busbw_GBps - 1; }
  [[nodiscard]] double time_error() const { return predicted_us / measured_us - 1; }
};

struct PublishedResult {
  std::string file;      ///< with " (N ranks)" for a file holding several rank counts
  std::string topology;  ///< the topology the prediction ran on
  std::string collective;
  int ranks = 0;
  std::optional<std::string> skipped;  ///< why the file is not predicted
  std::vector<PublishedPoint> points;
  /// Medians of the signed errors: busbw at S >= 64 MiB, time at S <= 64 KiB, time at 1 MiB <=
  /// S <= 32 MiB (the mid-size ramp); nullopt when the file has no such size. `largest` = busbw
  /// error at the largest size.
  std::optional<double> busbw_large, time_small, time_mid;
  double largest = 0;
  std::string largest_algorithm;
};

/// Predicts every entry of `index_path` (files next to it). Throws ConfigError naming the
/// file and entry for a malformed index or table.
std::vector<PublishedResult> predict_published(const std::string& index_path);

struct PublishedSummary {
  int files = 0, skipped = 0;
  /// Medians of |error| over every point of every predicted file (pooled).
  double median_abs_busbw_large = 0, median_abs_time_small = 0, median_abs_time_mid = 0;
  int points_large = 0, points_small = 0, points_mid = 0;
  double worst_largest = 0;  ///< largest |busbw error at a file's largest size|
  std::string worst_file;
  /// Per collective at S >= 64 MiB: points, median |busbw error|, median signed busbw error
  /// (> 0: the model too fast), in the order the collectives first appear.
  struct ByCollective {
    std::string collective;
    int points = 0;
    double median_abs = 0, median_signed = 0;
  };
  std::vector<ByCollective> by_collective;
};
PublishedSummary summarize_published(const std::vector<PublishedResult>& r);

/// The per-file table as Markdown (signed errors in percent), then the summary lines.
std::string published_table(const std::vector<PublishedResult>& r, const PublishedSummary& s);

}  // namespace shardsim::validation
