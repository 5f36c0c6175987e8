#pragma once
// The one measurement record (DESIGN 6), whatever produced it (nccl-tests log, OSU table, the
// MPI or NCCL backend, an emulated cluster), and its JSON Lines reader and writer.
//
// JSON keys (stable, units in the names): source, host, date, backend, collective, algorithm,
// ranks, ranks_per_node, bytes, dtype, time_us, algbw_GBps, busbw_GBps, topology, plus the
// optional peer (the other rank of a point-to-point record; rank 0 is always one end).
// Unknown values are null (algorithm, ranks_per_node, topology, peer). Unknown keys are
// errors (STYLE 5).
//
// Collective names: the collective layer's (allreduce, reducescatter, allgather, broadcast,
// reduce, alltoall) plus the point-to-point kinds:
//   pingpong  one-way time of a message = half a round trip (as osu_latency);
//             algbw = bytes / time, busbw = algbw.
//   exchange  both ends send `bytes` to each other at once (as osu_bibw, one message each
//             way): time of one exchange; algbw = bytes / time per direction, busbw = algbw.
//   sendrecv  nccl-tests sendrecv_perf (ring shift of `bytes`), busbw = algbw.
//   stream    rank 0 sends back-to-back messages of `bytes` to rank 1, a window of them in
//             flight (as osu_bw, window 64 by default): steady-state time per message;
//             algbw = bytes / time, busbw = algbw. Aliases "unidirectional", "uni".
// Sizes follow nccl-tests (DESIGN 2); algbw = bytes / time in GB/s (1e9 bytes per second).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace shardsim::logs {

struct BenchRecord {
  std::string source;   ///< file or program the record came from
  std::string host;     ///< host name ("" if unknown)
  std::string date;     ///< ISO 8601 ("" if unknown)
  std::string backend;  ///< nccl-tests, osu, mpi, nccl
  std::string collective;
  std::optional<std::string> algorithm;  ///< our algorithm name (ring, rabenseifner, ...)
  int ranks = 0;
  std::optional<int> ranks_per_node;
  std::uint64_t bytes = 0;
  std::string dtype = "float";
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  /// What it ran on, as `--topology` reads it: a topology JSON object, a spec string (preset
  /// name, file, builder:k=v), or null.
  nlohmann::json topology;
  std::optional<int> peer;  ///< point-to-point only
  /// nccl-tests -g: GPUs one thread launches for (the header's "nGpus"), when a log says; its
  /// launches bound a small collective's time (models/collectives/nccl_model.hpp).
  std::optional<int> gpus_per_thread;

  bool operator==(const BenchRecord&) const = default;
};

/// Point-to-point kinds (pingpong, exchange, sendrecv, stream) vs collectives.
bool is_point_to_point(const std::string& collective);
/// Every collective name a record may carry, comma separated (for error messages).
const char* valid_collectives();
/// Canonical name ("all_reduce" -> "allreduce", "all-gather" -> "allgather", "bibw" ->
/// "exchange"), or nullopt for an unknown name.
std::optional<std::string> canonical_collective(const std::string& name);

/// busbw / algbw (DESIGN 2); 1 for point-to-point kinds. Throws ConfigError for an unknown
/// collective.
double busbw_factor(const std::string& collective, int ranks);

nlohmann::json to_json(const BenchRecord& r);
/// Strict: every schema key except the optional ones must be there, no other key may be, and
/// values are checked (finite non-negative numbers, known collective, ranks >= 1). Errors name
/// `where` + the JSON pointer.
BenchRecord record_from_json(const nlohmann::json& j, const std::string& where);

/// One record per line; blank lines are skipped. Errors name "<name>:<line>".
std::vector<BenchRecord> read_jsonl(std::istream& in, const std::string& name);
std::vector<BenchRecord> read_jsonl_file(const std::string& path);
void write_jsonl(std::ostream& out, const std::vector<BenchRecord>& records);
/// Writes the file (replacing it); throws ConfigError if it cannot be opened.
void write_jsonl_file(const std::string& path, const std::vector<BenchRecord>& records);

/// The local host name and the current UTC time as ISO 8601, for provenance.
std::string local_host_name();
std::string utc_now_iso8601();

}  // namespace shardsim::logs
