#pragma once
// Validation (DESIGN 6): predicts every collective record on its topology and algorithm with
// the collectives layer and compares with what was measured.
//
// Prediction of one record: topology = --topology, else the record's own (a profile, when
// given, is applied: calibration/profile.hpp); op = {collective, S = bytes, group = ranks
// 0..n-1}; algorithm = ours for the record's (mpi_algorithm_to_model); cost = the flow
// evaluator (models/collectives/flow_eval.hpp, contention-aware, default) or the analytical
// closed form. Error = (predicted - measured) / measured.
//
// MPI records (backend "mpi") whose OpenMPI algorithm models/collectives/ompi_tuned.hpp
// models are predicted with that OpenMPI schedule on ranks 0..n-1 (flow fidelity; with
// --analytical or --algorithm, the mapping below). Otherwise,
// OpenMPI -> model algorithms (OpenMPI 4.1 coll/base sources):
//   ring, segmented_ring                       -> ring (rank r sends to r+1)
//   rabenseifner (allreduce), recursive_halving (reduce-scatter), recursive_doubling
//   (all-gather)                                -> rabenseifner, with the group in
//     bit-reversed rank order: OpenMPI halves the vector while DOUBLING the partner
//     distance (r xor 2^j at step j); our schedule pairs position q with q xor n/2^(j+1), and
//     q = bitrev(r) turns one into the other, so the same pairs exchange the same bytes.
//   any name the model registers                -> itself
// Records without an algorithm (OpenMPI's or NCCL's own choice) are an error unless
// --algorithm names the model algorithm to use.
#include <optional>
#include <string>
#include <vector>

#include "analysis/calibration/profile.hpp"
#include "traces/logs/record.hpp"

namespace shardsim::validation {

struct ModelAlgorithm {
  std::string name;       ///< registered model algorithm
  bool bit_reversed = false;  ///< group in bit-reversed rank order (see above)
};
/// nullopt when `algorithm` has no model counterpart for this collective.
std::optional<ModelAlgorithm> mpi_algorithm_to_model(const std::string& collective, const std::string& algorithm);

/// Bit-reversal permutation of 0..n-1 (n a power of two; identity otherwise).
std::vector<int> bit_reversed_group(int n);

struct Options {
  std::optional<std::string> topology;       ///< overrides the records' topology
  std::optional<calib::Profile> profile;
  /// Model algorithm for records without one; "auto": NCCL's choice on GPU topologies
  /// (models/collectives/nccl_model.hpp; its time at analytical fidelity, the closest registered
  /// schedule at flow fidelity), the registry's choose_auto elsewhere.
  std::optional<std::string> algorithm;
  /// Ranks per node for every record (block placement, coll::placed_group); nullopt: the
  /// record's ranks_per_node where the topology has nodes (device_groups), else the first
  /// `ranks` devices.
  std::optional<int> ranks_per_node;
  bool analytical = false;                   ///< closed form instead of the flow model
  /// nccl-tests -g of records that do not carry theirs (a log without the "nGpus" header line):
  /// one thread's launches floor NCCL's time (coll::nccl_tests_launch_floor_s).
  std::optional<int> gpus_per_thread;
};

struct Row {
  logs::BenchRecord record;
  std::string topology;         ///< the topology's name / builder
  std::string model_algorithm;
  double predicted_us = 0;
  double error = 0;             ///< (predicted - measured) / measured
  bool outside_range = false;   ///< a message size outside the profile's fitted range
  std::uint64_t min_message = 0, max_message = 0;
};

/// max(predicted_us, the floor nccl-tests' one-thread launches for `gpus_per_thread` GPUs put
/// under NCCL's time, coll::nccl_tests_launch_floor_s); appends " (-g G launch floor)" to `label`
/// when the floor binds. For `validate` and `validate --published`.
double with_launch_floor(double predicted_us, int gpus_per_thread, std::string& label);

/// Predicts every collective record (point-to-point records are skipped: they are the fit; so are
/// records of 0 bytes, which time the harness alone).
/// Throws ConfigError naming the record (source and bytes) when it cannot be predicted.
std::vector<Row> predict(const std::vector<logs::BenchRecord>& records, const Options& o);

struct Summary {
  std::string topology, collective, algorithm;
  int count = 0;
  double median_abs_error = 0, p90_abs_error = 0;
};
/// Per (topology, collective, algorithm), rows with bytes >= min_bytes. Percentiles by the
/// nearest-rank method on |error| (p90 = the ceil(0.9 n)-th smallest).
std::vector<Summary> summarize(const std::vector<Row>& rows, std::uint64_t min_bytes);
double percentile(std::vector<double> v, double p);

/// Table on stdout; CSV (and a gnuplot plot when gnuplot exists) under `dir` when non-empty.
void print_report(const std::vector<Row>& rows, const std::vector<Summary>& s);
void write_csv(const std::vector<Row>& rows, const std::string& path);
/// Writes the gnuplot script and runs gnuplot if present; returns the SVG path or "".
std::string write_plot(const std::string& csv, const std::string& dir);

}  // namespace shardsim::validation
