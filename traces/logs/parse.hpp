#pragma once
// Benchmark-log parsers into BenchRecord (DESIGN 6): nccl-tests stdout (plain, with srun
// `--label` prefixes "0: ", with mpirun `--tag-output` prefixes "[1,0]<stdout>:"), nccl-tests
// `-J` JSON (version 2, nccl-tests src/util.cu), and OSU micro-benchmark tables.
//
// nccl-tests stdout columns (src/util.cu writeResultHeader): size(B) count(elements) type
// redop root | out-of-place: time(us) algbw(GB/s) busbw(GB/s) #wrong | in-place: the same.
// The column header line fixes the column count; rows are taken from the out-of-place (or
// in-place) columns. Lines that do not start with a number (NCCL INFO, launcher noise) and
// the "..." elision line are skipped; a row that starts with a number must be complete.
//
// Where each field comes from:
//   collective  "# Collective test starting: all_reduce_perf", the JSON args[0], the OSU title,
//               else the file name (all_reduce_perf_...), else ParseOptions::collective.
//   ranks       the "#  Rank  r ..." device lines (or JSON config/devices), else
//               ParseOptions::ranks, else solved from busbw/algbw of the largest row
//               (all-reduce: f = 2(n-1)/n, so n = 2/(2-f); reduce-scatter/all-gather:
//               n = 1/(1-f)).
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

enum class LogFormat { nccl_tests_text, nccl_tests_json, osu, jsonl };
const char* to_string(LogFormat f);
/// By content: '{' + "results" -> nccl-tests JSON; "# OSU" -> OSU; first line a JSON object
/// with "collective" -> JSONL records; else nccl-tests text.
LogFormat detect_format(std::string_view text);

std::vector<BenchRecord> parse_nccl_tests_text(std::string_view text, const std::string& name,
                                               const ParseOptions& o = {});
std::vector<BenchRecord> parse_nccl_tests_json(std::string_view text, const std::string& name,
                                               const ParseOptions& o = {});
std::vector<BenchRecord> parse_osu(std::string_view text, const std::string& name,
                                   const ParseOptions& o = {});
/// Detects the format and parses; `name` is used in errors and as the records' source.
std::vector<BenchRecord> parse_log(std::string_view text, const std::string& name, const ParseOptions& o = {});
/// Reads the file and parse_log()s it. Throws ConfigError if it cannot be read.
std::vector<BenchRecord> parse_log_file(const std::string& path, const ParseOptions& o = {});

/// nccl-tests binary name -> collective ("all_reduce_perf" -> "allreduce"); nullopt if unknown.
std::optional<std::string> collective_from_nccl_binary(std::string_view binary);

}  // namespace shardsim::logs
