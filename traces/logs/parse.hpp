#pragma once
// Benchmark-log parsers into BenchRecord (DESIGN 6): nccl-tests stdout (plain, with srun
// `--label` prefixes "0: ", with mpirun `--tag-output` prefixes "[1,0]<stdout>:"), nccl-tests
// `-J` JSON (version 2, nccl-tests src/util.cu), OSU micro-benchmark tables and Intel MPI
// Benchmarks (IMB-MPI1) tables.
//
// nccl-tests stdout columns (src/util.cu writeResultHeader): size(B) count(elements) type
// redop root | out-of-place: time(us) algbw(GB/s) busbw(GB/s) #wrong | in-place: the same.
// The column header line fixes the column count; rows are taken from the out-of-place (or
// in-place) columns. Lines that do not start with a number (NCCL INFO, launcher noise) and
// the "..." elision line are skipped; a row that starts with a number must be complete.
//
// Where each field comes from:
//   collective  --collective (ParseOptions::collective), else "# Collective test starting:
//               all_reduce_perf", else a command line or launcher message naming the binary
//               ("mpirun ... ./build/alltoall_perf -b 8", "/x/all_reduce_perf: libnl ...";
//               "_mpi" suffixes allowed), else the file name (collective_from_file_name),
//               else an error. JSON: args[0]. OSU: the title.
//   ranks       the LARGEST rank index + 1 in the "#  Rank  r Group g ... on host device d"
//               lines (logs elide long lists with "...": rank 0, 1, ..., 62, 63 means 64), or
//               JSON config/devices; else ParseOptions::ranks, else solved from busbw/algbw of
//               the largest row (all-reduce: f = 2(n-1)/n, so n = 2/(2-f); reduce-scatter/
//               all-gather: n = 1/(1-f)). ParseOptions::ranks overrides the log.
//   ranks_per_node  complete rank list: the most ranks on one host. Elided list: p = largest
//               device index + 1, only if every printed line fits block placement of p ranks
//               per host (n divisible by p, rank r on device r mod p, one host per block r/p,
//               different blocks on different hosts); else unknown. ParseOptions overrides.
//   runs        a text log may hold several runs (concatenated outputs): a header line (test
//               starting, "# nThread", "# nccl-tests version", a rank line) after the current
//               run's rows starts a new run, with its own collective and ranks (a command line
//               seen after the rows names the next run's binary). A run without rows is an error.
//   algbw/busbw recomputed from bytes and time (the log's columns are rounded to 0.01 GB/s)
//               and checked against the logged values (a mismatch beyond rounding is an error).
//
// Every error is a ConfigError naming "<file>:<line>" (text) or "<file>#<JSON pointer>" (JSON),
// what was found and what was expected: truncated row, wrong column count, non-finite value,
// unknown collective, inconsistent bandwidth. Never a wrong record.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "traces/logs/record.hpp"

namespace shardsim::logs {

struct ParseOptions {
  std::optional<std::string> collective;  ///< overrides what the log says
  std::optional<int> ranks;
  std::optional<int> ranks_per_node;
  bool in_place = false;                  ///< take nccl-tests' in-place columns
  std::string host;                       ///< used when the log names none
  std::string date;
  nlohmann::json topology;                ///< attached to every record (or null)
};

enum class LogFormat { nccl_tests_text, nccl_tests_json, osu, imb, jsonl };
const char* to_string(LogFormat f);
/// By content: '{' + "results" -> nccl-tests JSON; "# OSU" -> OSU; "# Benchmarking X" or
/// "Intel(R) MPI Benchmarks" -> IMB; first line a JSON object
/// with "collective" -> JSONL records; else nccl-tests text.
LogFormat detect_format(std::string_view text);

/// One record list per run in the log (see "runs" above), in log order.
std::vector<std::vector<BenchRecord>> parse_nccl_tests_runs(std::string_view text, const std::string& name,
                                                            const ParseOptions& o = {});
/// All runs' records, concatenated.
std::vector<BenchRecord> parse_nccl_tests_text(std::string_view text, const std::string& name,
                                               const ParseOptions& o = {});
std::vector<BenchRecord> parse_nccl_tests_json(std::string_view text, const std::string& name,
                                               const ParseOptions& o = {});
std::vector<BenchRecord> parse_osu(std::string_view text, const std::string& name,
                                   const ParseOptions& o = {});
/// IMB-MPI1 tables (contract in imb.cpp): one record set per "# Benchmarking" section of
/// Allreduce, Reduce, Reduce_scatter, Allgather, Bcast, Alltoall (time = t_max) and PingPong;
/// ranks from "# #processes = N" (--ranks overrides); other benchmarks are skipped.
std::vector<BenchRecord> parse_imb(std::string_view text, const std::string& name, const ParseOptions& o = {});
/// Detects the format and parses; `name` is used in errors and as the records' source.
std::vector<BenchRecord> parse_log(std::string_view text, const std::string& name, const ParseOptions& o = {});
/// Reads the file and parse_log()s it. Throws ConfigError if it cannot be read.
std::vector<BenchRecord> parse_log_file(const std::string& path, const ParseOptions& o = {});

/// The collective a file name implies: an nccl-tests binary anywhere in the base name
/// ("h100-2x8-all_reduce_perf.txt"), or "nccl_" / "nccl-" followed by a collective name and a
/// separator or the end ("nccl_allreduce_16gpu.log", "nccl-all_gather.txt", "nccl_bcast.log");
/// nullopt otherwise.
std::optional<std::string> collective_from_file_name(const std::string& path);
/// nccl-tests binary name -> collective ("all_reduce_perf" -> "allreduce"); nullopt if unknown.
std::optional<std::string> collective_from_nccl_binary(std::string_view binary);

}  // namespace shardsim::logs
