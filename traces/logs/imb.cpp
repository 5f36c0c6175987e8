// Intel MPI Benchmarks (IMB-MPI1) tables (contract in parse.hpp).
//
// IMB output (Intel MPI Benchmarks User Guide, "Output" / "Sample output"):
//   # Benchmarking Allreduce
//   # #processes = 4
//   #----------------------------------------------------------------
//          #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
//               0         1000         0.03         0.04         0.03
// Collective sections (Allreduce, Reduce, Reduce_scatter, Allgather, Bcast, Alltoall): time_us
// = t_max, the slowest process: the collective is complete when the last rank is done, which
// is what the simulator predicts. PingPong ("#bytes #repetitions t[usec] Mbytes/sec"): t is
// half the round trip (User Guide, PingPong) -> pingpong. Sections of other benchmarks
// (PingPing, Sendrecv, Exchange, Gather, Scatter, the v variants, Barrier, ...) are skipped.
// Sizes (#bytes) as the User Guide defines them, mapped to nccl-tests' S (DESIGN 2):
// Allreduce, Reduce, Bcast: the message (S = #bytes); Reduce_scatter: the whole vector
// reduced, each rank receiving #bytes / n (S = #bytes); Allgather, Alltoall: what each
// process sends to each process (S = n x #bytes).
#include <fmt/format.h>

#include "sim/error.hpp"
#include "traces/logs/parse.hpp"
#include "traces/logs/parse_util.hpp"

namespace shardsim::logs {
namespace {

std::optional<std::string> imb_collective(std::string_view bench) {
  if (bench == "Allreduce") return "allreduce";
  if (bench == "Reduce") return "reduce";
  if (bench == "Reduce_scatter") return "reducescatter";
  if (bench == "Allgather") return "allgather";
  if (bench == "Bcast") return "broadcast";
  if (bench == "Alltoall") return "alltoall";
  if (bench == "PingPong") return "pingpong";
  return std::nullopt;
}

struct Columns {
  size_t count = 0, bytes = 0, time = 0;
};

}  // namespace

std::vector<BenchRecord> parse_imb(std::string_view text, const std::string& name, const ParseOptions& o) {
  std::optional<std::string> forced = o.collective;
  if (forced) forced = canonical_or_throw(*forced, "--collective");
  std::optional<std::string> coll;  // nullopt inside a section that is skipped
  bool in_section = false;
  int ranks = 0;  // "# #processes = N" of the current section; 0 = not given
  std::optional<Columns> cols;
  int lineno = 0;
  std::vector<BenchRecord> out;
  for (std::string_view raw : split_lines(text)) {
    ++lineno;
    const std::string where = fmt::format("{}:{}", name, lineno);
    const std::string_view line = trim(raw);
    if (line.empty()) continue;
    if (line.front() == '#') {
      const std::string_view body = trim(line.substr(1));
      const auto tok = tokens(body);
      if (tok.size() >= 2 && tok[0] == "Benchmarking") {
        in_section = true;
        coll = imb_collective(tok[1]);
        if (coll && forced) coll = forced;
        ranks = 0;
        cols.reset();
      } else if (tok.size() >= 3 && tok[0] == "#processes" && tok[1] == "=") {
        const std::uint64_t n = parse_uint(tok[2], "#processes", where);
        if (n < 1 || n > 100000000) throw ConfigError(where, fmt::format("#processes = {}", n), "1 .. 100000000");
        ranks = static_cast<int>(n);
      } else if (!tok.empty() && tok[0] == "bytes") {  // "#bytes #repetitions t_min[usec] ..."
        Columns c;
        c.count = tok.size();
        std::optional<size_t> t_max, t;
        for (size_t i = 0; i < tok.size(); ++i) {
          if (tok[i] == "t_max[usec]") t_max = i;
          if (tok[i] == "t[usec]") t = i;
        }
        if (!t_max && !t) {
          if (!coll) continue;  // a skipped benchmark's layout
          throw ConfigError(where, fmt::format("a column header '{}' without t_max[usec] or t[usec]", body),
                            "an IMB header such as '#bytes #repetitions t_min[usec] t_max[usec] t_avg[usec]'");
        }
        c.time = t_max ? *t_max : *t;
        cols = c;
      }
      continue;
    }
    const auto tok = tokens(line);
    if (!starts_with_number(tok[0])) continue;  // launcher noise
    if (!in_section) {
      throw ConfigError(where, "a result row before any '# Benchmarking' section",
                        "an IMB table (# Benchmarking X, # #processes = N, #bytes header, rows)");
    }
    if (!coll) continue;  // a benchmark this parser does not read
    if (!cols) throw ConfigError(where, "a result row before the '#bytes' column header", "an IMB '#bytes ...' header");
    if (tok.size() != cols->count) {
      throw ConfigError(where, fmt::format("a row of {} columns", tok.size()),
                        fmt::format("{} columns as in the '#bytes' header (truncated or corrupted row?)", cols->count));
    }
    const int n = o.ranks ? *o.ranks : ranks;
    if (n < 1) throw ConfigError(where, "a result row without '# #processes = N' in its section", "the line, or --ranks");
    const std::uint64_t size = parse_uint(tok[cols->bytes], "#bytes", where);
    BenchRecord r;
    r.source = name;
    r.host = o.host;
    r.date = o.date;
    r.backend = "imb";
    r.collective = *coll;
    r.ranks = is_point_to_point(*coll) ? 2 : n;
    r.ranks_per_node = o.ranks_per_node;
    r.dtype = (*coll == "allreduce" || *coll == "reducescatter" || *coll == "reduce") ? "float" : "char";
    r.bytes = (*coll == "allgather" || *coll == "alltoall") ? size * static_cast<std::uint64_t>(r.ranks) : size;
    r.time_us = parse_finite(tok[cols->time], "time", where);
    r.algbw_GBps = r.time_us > 0 ? static_cast<double>(r.bytes) / (r.time_us * 1e3) : 0;
    r.busbw_GBps = r.algbw_GBps * busbw_factor(r.collective, r.ranks);
    r.topology = o.topology;
    if (is_point_to_point(r.collective)) r.peer = 1;
    out.push_back(std::move(r));
  }
  if (out.empty()) {
    throw ConfigError(name, "no result rows of a benchmark read here",
                      "an IMB Allreduce, Reduce, Reduce_scatter, Allgather, Bcast, Alltoall or PingPong table");
  }
  return out;
}

}  // namespace shardsim::logs
