// OSU micro-benchmark tables and format detection (contract in parse.hpp).
//
// OSU output (osu-micro-benchmarks, c/util/osu_util.h print headers):
//   "# OSU MPI Latency Test v5.6.3" / "# Size          Latency (us)"      -> pingpong,
//      Latency = half the round trip (osu_latency.c), so time_us = Latency.
//   "# OSU MPI Bi-Directional Bandwidth Test" / "# Size  Bandwidth (MB/s)" -> exchange:
//      osu_bibw reports 2 x size x window / t in MB/s = 1e6 B/s (osu_bibw.c), so one
//      exchange of `size` each way takes t = 2 x size / (bw x 1e6) s.
//   "# OSU MPI Bandwidth Test v7.5" / "# Size  Bandwidth (MB/s)" -> stream: osu_bw reports
//      size x window x iterations / t in MB/s (osu_bw.c: one direction, rank 0 to rank 1), so
//      the steady-state time of one message is t = size / (bw x 1e6) s.
//   "# OSU MPI Allreduce|Reduce_scatter|Allgather|Broadcast|Reduce Latency Test",
//   "# OSU MPI All-to-All Personalized Exchange Latency Test" / "# Size  Avg Latency(us)"
//      [Min Latency(us) Max Latency(us) Iterations with -f]. Size is per rank: all-reduce,
//      reduce-scatter (the whole send buffer), broadcast, reduce: S = size; all-gather and
//      all-to-all send `size` per peer, so S = n x size (nccl-tests convention, DESIGN 2).
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "sim/error.hpp"
#include "traces/logs/parse.hpp"
#include "traces/logs/parse_util.hpp"

namespace shardsim::logs {
namespace {

std::optional<std::string> osu_collective(std::string_view title) {
  const auto has = [&](std::string_view s) { return title.find(s) != std::string_view::npos; };
  if (has("Bi-Directional Bandwidth")) return "exchange";
  if (has("MPI Bandwidth Test") || has("MPI-CUDA Bandwidth Test")) return "stream";
  if (has("Allreduce")) return "allreduce";
  if (has("Reduce_scatter")) return "reducescatter";
  if (has("Allgather Latency")) return "allgather";
  if (has("Broadcast Latency")) return "broadcast";
  if (has("Reduce Latency")) return "reduce";
  if (has("All-to-All Personalized")) return "alltoall";
  if (has("MPI Latency Test") || has("MPI-CUDA Latency Test")) return "pingpong";
  return std::nullopt;
}

}  // namespace

const char* to_string(LogFormat f) {
  switch (f) {
    case LogFormat::nccl_tests_text: return "nccl-tests";
    case LogFormat::nccl_tests_json: return "nccl-tests JSON";
    case LogFormat::osu: return "OSU";
    case LogFormat::imb: return "IMB";
    case LogFormat::jsonl: return "JSONL records";
  }
  return "?";
}

LogFormat detect_format(std::string_view text) {
  const std::string_view t = trim(text);
  if (!t.empty() && t.front() == '{') {
    const auto nl = t.find('\n');
    const std::string_view first = trim(t.substr(0, nl));
    if (first.find("\"collective\"") != std::string_view::npos && first.back() == '}') return LogFormat::jsonl;
    return LogFormat::nccl_tests_json;
  }
  for (auto line : split_lines(t)) {
    if (trim(line).starts_with("# OSU")) return LogFormat::osu;
  }
  for (auto line : split_lines(t)) {
    const std::string_view l = trim(line);
    if (l.starts_with("# Benchmarking ") || l.find("Intel(R) MPI Benchmarks") != std::string_view::npos) {
      return LogFormat::imb;
    }
  }
  return LogFormat::nccl_tests_text;
}

std::vector<BenchRecord> parse_osu(std::string_view text, const std::string& name, const ParseOptions& o) {
  std::optional<std::string> coll = o.collective;
  if (coll) coll = canonical_or_throw(*coll, "--collective");
  size_t columns = 0;
  int lineno = 0;
  bool bandwidth = false;
  std::vector<BenchRecord> out;
  for (std::string_view raw : split_lines(text)) {
    ++lineno;
    const std::string where = fmt::format("{}:{}", name, lineno);
    const std::string_view line = trim(raw);
    if (line.empty()) continue;
    if (line.front() == '#') {
      const std::string_view body = trim(line.substr(1));
      if (body.starts_with("OSU")) {
        const auto c = osu_collective(body);
        if (!c) {
          throw ConfigError(where, fmt::format("unknown collective in '{}'", body),
                            "an OSU latency, bandwidth, bi-directional bandwidth, allreduce, reduce_scatter, allgather, "
                            "broadcast, reduce or all-to-all test");
        }
        if (!o.collective) coll = *c;
      } else if (body.starts_with("Size")) {
        columns = 1;
        for (std::string_view key : {"Latency", "Bandwidth", "Iterations", "Messages/s"}) {
          for (size_t p = body.find(key); p != std::string_view::npos; p = body.find(key, p + 1)) ++columns;
        }
        bandwidth = body.find("Bandwidth") != std::string_view::npos;
        if (columns < 2) {
          throw ConfigError(where, fmt::format("a column header '{}' without a value column", body),
                            "an OSU column header such as '# Size  Latency (us)'");
        }
      }
      continue;
    }
    const auto tok = tokens(line);
    if (!starts_with_number(tok[0])) continue;
    if (columns == 0 || !coll) {
      throw ConfigError(where, "a result row before the OSU title and '# Size' header",
                        "an OSU table (title line, column header, rows)");
    }
    if (tok.size() != columns) {
      throw ConfigError(where, fmt::format("a row of {} columns", tok.size()),
                        fmt::format("{} columns as in the '# Size' header (truncated or corrupted row?)", columns));
    }
    const std::uint64_t size = parse_uint(tok[0], "size", where);
    const double value = parse_finite(tok[1], bandwidth ? "bandwidth" : "latency", where);
    int ranks = 2;
    if (!is_point_to_point(*coll)) {
      if (!o.ranks) {
        throw ConfigError(where, "an OSU collective table without the number of ranks", "--ranks");
      }
      ranks = *o.ranks;
    }
    BenchRecord r;
    r.source = name;
    r.host = o.host;
    r.date = o.date;
    r.backend = "osu";
    r.collective = *coll;
    r.ranks = ranks;
    r.ranks_per_node = o.ranks_per_node;
    r.dtype = (*coll == "allreduce" || *coll == "reducescatter" || *coll == "reduce") ? "float" : "char";
    r.bytes = (*coll == "allgather" || *coll == "alltoall") ? size * static_cast<std::uint64_t>(ranks) : size;
    if (bandwidth) {
      if (value <= 0) throw ConfigError(where, fmt::format("bandwidth '{}'", tok[1]), "a bandwidth > 0");
      // osu_bibw counts both directions (2 x size per exchange), osu_bw one (size per message).
      const double moved = *coll == "stream" ? static_cast<double>(size) : 2.0 * static_cast<double>(size);
      r.time_us = moved / (value * 1e6) * 1e6;
    } else {
      r.time_us = value;
    }
    r.algbw_GBps = r.time_us > 0 ? static_cast<double>(r.bytes) / (r.time_us * 1e3) : 0;
    r.busbw_GBps = r.algbw_GBps * busbw_factor(r.collective, ranks);
    r.topology = o.topology;
    if (is_point_to_point(r.collective)) r.peer = 1;
    out.push_back(std::move(r));
  }
  if (out.empty()) throw ConfigError(name, "no result rows", "an OSU table with at least one row");
  return out;
}

std::vector<BenchRecord> parse_log(std::string_view text, const std::string& name, const ParseOptions& o) {
  switch (detect_format(text)) {
    case LogFormat::nccl_tests_json: return parse_nccl_tests_json(text, name, o);
    case LogFormat::osu: return parse_osu(text, name, o);
    case LogFormat::imb: return parse_imb(text, name, o);
    case LogFormat::jsonl: {
      std::istringstream in{std::string(text)};
      return read_jsonl(in, name);
    }
    case LogFormat::nccl_tests_text: break;
  }
  return parse_nccl_tests_text(text, name, o);
}

std::vector<BenchRecord> parse_log_file(const std::string& path, const ParseOptions& o) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "cannot open the file", "a readable benchmark log");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_log(ss.str(), path, o);
}

}  // namespace shardsim::logs
