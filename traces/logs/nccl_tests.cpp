// nccl-tests stdout and -J JSON parsers (contract in parse.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "sim/error.hpp"
#include "sim/text/json_text.hpp"
#include "traces/logs/parse.hpp"
#include "traces/logs/parse_util.hpp"

namespace shardsim::logs {
namespace {

// Strips launcher prefixes: srun --label "0: " / " 12: " and mpirun --tag-output
// "[1,0]<stdout>:" / "[1,0]<stderr>:".
std::string_view strip_launcher_prefix(std::string_view s) {
  if (!s.empty() && s.front() == '[') {
    const auto close = s.find("]<std");
    if (close != std::string_view::npos) {
      const auto colon = s.find(">:", close);
      if (colon != std::string_view::npos) return s.substr(colon + 2);
    }
  }
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  size_t j = i;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  if (j > i && j + 1 < s.size() + 1 && j < s.size() && s[j] == ':' && (j + 1 == s.size() || s[j + 1] == ' ')) {
    return s.substr(std::min(j + 2, s.size()));
  }
  return s;
}

struct Layout {
  size_t columns = 13;  // modern nccl-tests: size count type redop root + 2 x (time algbw busbw #wrong)
  size_t size = 0, type = 2, time = 5, algbw = 6, busbw = 7;
  size_t in_time = 9, in_algbw = 10, in_busbw = 11;
  bool from_header = false;
};

// Builds the layout from "#       size         count      type   redop    root     time ..."
std::optional<Layout> layout_from_header(const std::vector<std::string_view>& tok) {
  if (tok.size() < 4 || tok[0] != "size") return std::nullopt;
  Layout l;
  l.columns = tok.size();
  l.from_header = true;
  std::vector<size_t> times, algbws, busbws;
  for (size_t i = 0; i < tok.size(); ++i) {
    if (tok[i] == "type") l.type = i;
    if (tok[i] == "time" || tok[i] == "cputime") times.push_back(i);
    if (tok[i] == "algbw") algbws.push_back(i);
    if (tok[i] == "busbw") busbws.push_back(i);
  }
  if (times.empty() || algbws.empty() || busbws.empty()) return std::nullopt;
  l.time = times[0];
  l.algbw = algbws[0];
  l.busbw = busbws[0];
  l.in_time = times.size() > 1 ? times[1] : times[0];
  l.in_algbw = algbws.size() > 1 ? algbws[1] : algbws[0];
  l.in_busbw = busbws.size() > 1 ? busbws[1] : busbws[0];
  return l;
}

struct Pending {
  std::uint64_t bytes = 0;
  std::string dtype;
  double time_us = 0, algbw = 0, busbw = 0;
  int line = 0;
};

int solve_ranks(const std::string& coll, const std::vector<Pending>& rows, const std::string& where) {
  const Pending* best = nullptr;
  for (const auto& r : rows) {
    if (r.algbw > 0 && (!best || r.algbw > best->algbw)) best = &r;
  }
  const std::string expected = "a '#  Rank' device list in the log, or --ranks";
  if (!best || is_point_to_point(coll) || coll == "broadcast" || coll == "reduce") {
    throw ConfigError(where, "the number of ranks is not in the log and cannot be solved from busbw/algbw", expected);
  }
  // n from f = busbw / algbw: all-reduce f = 2(n-1)/n, the others f = (n-1)/n. The log rounds
  // both to 2 decimals, so f is known to +-0.005 on each: every n that rounding allows must be
  // the same integer, or the log does not tell (at 128 ranks and 89 GB/s, 127 to 129 do).
  auto ranks_of = [&](double f) {
    if (coll == "allreduce") return f < 2 ? 2.0 / (2.0 - f) : INFINITY;
    return f < 1 ? 1.0 / (1.0 - f) : INFINITY;
  };
  const double f = best->busbw / best->algbw;
  const double n = ranks_of(f);
  if (!(n >= 1.5) || !std::isfinite(n) || n > 1e6) {
    throw ConfigError(where, fmt::format("busbw/algbw = {:.4f} gives no rank count", f), expected);
  }
  const double lo = ranks_of(std::max(0.0, best->busbw - 0.005) / (best->algbw + 0.005));
  const double hi = ranks_of((best->busbw + 0.005) / std::max(1e-9, best->algbw - 0.005));
  if (std::lround(lo) != std::lround(n) || !std::isfinite(hi) || std::lround(hi) != std::lround(n)) {
    throw ConfigError(where,
                      fmt::format("busbw/algbw = {:.5f} ({} / {} GB/s) allows {:.1f} to {} ranks at the log's 2 decimals",
                                  f, best->busbw, best->algbw, lo, std::isfinite(hi) ? fmt::format("{:.1f}", hi) : "any"),
                      expected);
  }
  return static_cast<int>(std::lround(n));
}

void check_bandwidth(double logged, double computed, const std::string& column, const std::string& where) {
  // The log prints bandwidth with 2 decimals (or fewer significant digits when large,
  // nccl-tests getFloatStr), and time with 4-5 significant digits: allow both roundings.
  if (std::fabs(logged - computed) > 0.006 + 0.002 * computed) {
    throw ConfigError(where, fmt::format("{} {} disagrees with size/time = {:.4f} GB/s", column, logged, computed),
                      "a consistent row (size, time, algbw, busbw)");
  }
}

std::vector<BenchRecord> finish(const std::string& name, const std::string& coll, std::optional<int> ranks,
                                std::optional<int> log_rpn, const std::vector<Pending>& rows,
                                const std::set<std::string>& hosts, const ParseOptions& o, const std::string& host,
                                const std::string& date, const std::string& backend, bool check_bw) {
  std::vector<BenchRecord> out;
  if (rows.empty()) return out;
  const int n = o.ranks ? *o.ranks : ranks ? *ranks : solve_ranks(coll, rows, fmt::format("{}:{}", name, rows.back().line));
  const std::optional<int> rpn = o.ranks_per_node ? o.ranks_per_node : log_rpn;
  const double factor = busbw_factor(coll, n);
  for (const auto& p : rows) {
    BenchRecord r;
    r.source = name;
    r.host = !host.empty() ? host : !hosts.empty() ? *hosts.begin() : o.host;
    r.date = !date.empty() ? date : o.date;
    r.backend = backend;
    r.collective = coll;
    r.ranks = n;
    r.ranks_per_node = rpn;
    r.bytes = p.bytes;
    r.dtype = p.dtype;
    r.time_us = p.time_us;
    r.algbw_GBps = p.time_us > 0 ? static_cast<double>(p.bytes) / (p.time_us * 1e3) : 0;
    r.busbw_GBps = r.algbw_GBps * factor;
    r.topology = o.topology;
    const std::string where = fmt::format("{}:{}", name, p.line);
    if (check_bw) {
      check_bandwidth(p.algbw, r.algbw_GBps, "algbw", where);
      check_bandwidth(p.busbw, r.busbw_GBps, fmt::format("busbw (for {} ranks)", n), where);
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string collective_or_throw(std::string_view program, const std::string& where) {
  const auto c = collective_from_nccl_binary(program);
  if (!c) {
    throw ConfigError(where, fmt::format("unknown collective '{}'", program),
                      "an nccl-tests binary: all_reduce_perf, reduce_scatter_perf, all_gather_perf, broadcast_perf, "
                      "reduce_perf, alltoall_perf, sendrecv_perf");
  }
  return *c;
}

}  // namespace

std::optional<std::string> collective_from_nccl_binary(std::string_view binary) {
  const auto slash = binary.rfind('/');
  if (slash != std::string_view::npos) binary.remove_prefix(slash + 1);
  static const std::array<std::pair<std::string_view, std::string_view>, 7> kBinaries{{
      {"all_reduce_perf", "allreduce"}, {"reduce_scatter_perf", "reducescatter"}, {"all_gather_perf", "allgather"},
      {"broadcast_perf", "broadcast"},  {"reduce_perf", "reduce"},               {"alltoall_perf", "alltoall"},
      {"sendrecv_perf", "sendrecv"},
  }};
  for (const auto& [bin, coll] : kBinaries) {
    if (binary == bin) return std::string(coll);
  }
  return std::nullopt;
}

namespace {

// One "#  Rank  r Group g Pid p on host device d [bus] name" line (nccl-tests src/common.cu;
// older versions print no "Group g").
struct RankLine {
  int rank = 0;
  std::string host;
  std::optional<int> device;
  int line = 0;
};

// One benchmark run inside a log: its header lines and its table.
struct Run {
  int first_line = 0;
  std::optional<std::string> started;   // "# Collective test starting:"
  std::optional<std::string> command;   // a command line naming the binary
  std::vector<RankLine> ranks;
  std::vector<Pending> rows;
  std::optional<int> gpus_per_thread;  // "# nThread T nGpus G ...": G
};

// The collective of a command line or launcher message that names an nccl-tests binary:
// "mpirun -np 16 ./build/all_reduce_perf -b 8 -e 8G", "srun ... all_gather_perf_mpi ...",
// "/nccl-tests/build/all_reduce_perf: libnl ... warning". A token is stripped of quotes and of a
// trailing ':' or ';', then of its directory and of the "_mpi" suffix (the MPI=1 builds of some
// packagings); the last known binary on the line wins. Unknown *_perf names are not collectives.
std::optional<std::string> collective_in_command(std::string_view line) {
  std::optional<std::string> found;
  for (std::string_view t : tokens(line)) {
    while (!t.empty() && (t.front() == '"' || t.front() == '\'')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == '"' || t.back() == '\'' || t.back() == ':' || t.back() == ';')) t.remove_suffix(1);
    const auto slash = t.rfind('/');
    if (slash != std::string_view::npos) t.remove_prefix(slash + 1);
    if (t.ends_with("_mpi")) t.remove_suffix(4);
    if (!t.ends_with("_perf")) continue;
    if (auto c = collective_from_nccl_binary(t)) found = std::move(c);
  }
  return found;
}

// Ranks per node from the printed rank lines.
//  - Complete list (every index 0..n-1 printed once): the largest number of ranks on one host.
//  - Elided list ("..."): only when the printed lines are consistent with block placement of
//    p ranks per host, p = largest device index + 1 (the default of mpirun --map-by slot and
//    srun --distribution=block with one GPU per rank): n divisible by p, every printed rank r
//    on device r mod p, ranks of one block r / p on one host and of different blocks on
//    different hosts. The hidden lines are assumed to follow the same placement; when any
//    printed line contradicts it, ranks per node stays unknown.
std::optional<int> ranks_per_node_from(const std::vector<RankLine>& lines, int n) {
  std::set<int> indices;
  for (const auto& l : lines) indices.insert(l.rank);
  if (static_cast<int>(indices.size()) == n && static_cast<int>(lines.size()) == n) {
    std::map<std::string, int> per_host;
    int mx = 0;
    for (const auto& l : lines) {
      if (l.host.empty()) return std::nullopt;
      mx = std::max(mx, ++per_host[l.host]);
    }
    return mx;
  }
  int p = 0;
  for (const auto& l : lines) {
    if (!l.device || l.host.empty()) return std::nullopt;
    p = std::max(p, *l.device + 1);
  }
  if (p <= 0 || n % p != 0) return std::nullopt;
  std::map<int, std::string> block_host;
  std::map<std::string, int> host_block;
  for (const auto& l : lines) {
    if (*l.device != l.rank % p) return std::nullopt;
    const int b = l.rank / p;
    const auto [bh, new_block] = block_host.emplace(b, l.host);
    const auto [hb, new_host] = host_block.emplace(l.host, b);
    if ((!new_block && bh->second != l.host) || (!new_host && hb->second != b)) return std::nullopt;
  }
  return p;
}

RankLine parse_rank_line(const std::vector<std::string_view>& tok, int lineno, const std::string& where) {
  RankLine r;
  r.line = lineno;
  const std::uint64_t idx = parse_uint(tok[1], "rank index", where);
  if (idx >= 100000000) throw ConfigError(where, fmt::format("rank index {}", idx), "a rank index below 100000000");
  r.rank = static_cast<int>(idx);
  for (size_t i = 0; i + 1 < tok.size(); ++i) {
    if (tok[i] == "on" && r.host.empty()) r.host = utf8_or_throw(tok[i + 1], "host name", where);
    if (tok[i] == "device" && !r.device && starts_with_number(tok[i + 1])) {
      const std::uint64_t d = parse_uint(tok[i + 1], "device index", where);
      if (d < 100000) r.device = static_cast<int>(d);
    }
  }
  return r;
}

}  // namespace

std::optional<std::string> collective_from_file_name(const std::string& path) {
  std::string base = base_name(path);
  for (char& c : base) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // "*all_reduce_perf*": the binary name anywhere (longest names first: all_reduce_perf
  // contains reduce_perf).
  for (const auto& [bin, c] : {std::pair{"all_reduce_perf", "allreduce"}, {"reduce_scatter_perf", "reducescatter"},
                               {"all_gather_perf", "allgather"}, {"broadcast_perf", "broadcast"},
                               {"alltoall_perf", "alltoall"}, {"sendrecv_perf", "sendrecv"}, {"reduce_perf", "reduce"}}) {
    if (base.find(bin) != std::string::npos) return std::string(c);
  }
  // "nccl_allreduce_*", "nccl-all_gather-*", "nccl_bcast.log": "nccl" + '_' or '-', a
  // collective name, then a separator or the end of the name.
  for (const char* prefix : {"nccl_", "nccl-"}) {
    for (size_t p = base.find(prefix); p != std::string::npos; p = base.find(prefix, p + 1)) {
      const std::string_view rest = std::string_view(base).substr(p + 5);
      for (const auto& [word, c] :
           {std::pair{"all_reduce", "allreduce"}, {"allreduce", "allreduce"}, {"reduce_scatter", "reducescatter"},
            {"reducescatter", "reducescatter"}, {"all_gather", "allgather"}, {"allgather", "allgather"},
            {"broadcast", "broadcast"}, {"bcast", "broadcast"}, {"all_to_all", "alltoall"}, {"alltoall", "alltoall"},
            {"sendrecv", "sendrecv"}, {"reduce", "reduce"}}) {
        const std::string_view w(word);
        if (rest.starts_with(w) && (rest.size() == w.size() || rest[w.size()] == '_' || rest[w.size()] == '-' ||
                                    rest[w.size()] == '.')) {
          return std::string(c);
        }
      }
    }
  }
  return std::nullopt;
}

std::vector<std::vector<BenchRecord>> parse_nccl_tests_runs(std::string_view text, const std::string& name,
                                                            const ParseOptions& o) {
  std::optional<std::string> forced = o.collective;
  if (forced) forced = canonical_or_throw(*forced, "--collective");
  const std::optional<std::string> file_coll = collective_from_file_name(name);
  Layout layout;
  std::vector<Run> runs(1);
  runs.back().first_line = 1;
  std::optional<std::string> next_command;  // named after the current run's rows: for the next run
  int lineno = 0;
  // A header line of a new run (test starting, nThread, version, a rank line) after the
  // current run's rows closes that run.
  const auto header_line = [&] {
    if (!runs.back().rows.empty()) {
      runs.emplace_back();
      runs.back().first_line = lineno;
      runs.back().command = std::exchange(next_command, std::nullopt);
    }
  };
  for (std::string_view raw : split_lines(text)) {
    ++lineno;
    const std::string where = fmt::format("{}:{}", name, lineno);
    const std::string_view line = trim(strip_launcher_prefix(raw));
    if (line.empty() || line == "...") continue;
    if (line.front() == '#') {
      const std::string_view body = trim(line.substr(1));
      constexpr std::string_view kStart = "Collective test starting:";
      if (body.starts_with(kStart)) {
        const std::string c = collective_or_throw(trim(body.substr(kStart.size())), where);
        header_line();
        runs.back().started = c;
        continue;
      }
      if (body.starts_with("Collective test concluded")) continue;
      const auto tok = tokens(body);
      // "Rank r Group g Pid p on host device d ..."; nccl-tests of 2019 printed
      // "Rank r Pid p on host device d ..." (no Group field; the DGX-2 tables of the corpus).
      if (tok.size() >= 6 && tok[0] == "Rank" && (tok[2] == "Group" || tok[2] == "Pid")) {
        header_line();
        runs.back().ranks.push_back(parse_rank_line(tok, lineno, where));
        continue;
      }
      if (!tok.empty() && (tok[0] == "nThread" || (tok[0] == "nccl-tests" && tok.size() > 1 && tok[1] == "version"))) {
        header_line();
        if (tok[0] == "nThread" && tok.size() >= 4 && tok[2] == "nGpus") {
          int g = 0;
          const std::string_view v = tok[3];
          const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), g);
          if (ec == std::errc() && end == v.data() + v.size() && g >= 1) runs.back().gpus_per_thread = g;
        }
        continue;
      }
      if (auto l = layout_from_header(tok)) {
        layout = *l;
        continue;
      }
      if (auto c = collective_in_command(body)) (runs.back().rows.empty() ? runs.back().command : next_command) = c;
      continue;
    }
    const auto tok = tokens(line);
    if (!starts_with_number(tok[0])) {  // launcher or NCCL INFO noise, or a command line
      if (auto c = collective_in_command(line)) (runs.back().rows.empty() ? runs.back().command : next_command) = c;
      continue;
    }
    if (tok.size() != layout.columns) {
      throw ConfigError(where, fmt::format("a row of {} columns", tok.size()),
                        fmt::format("{} columns as in the {} (truncated or corrupted row?)", layout.columns,
                                    layout.from_header ? "column header" : "nccl-tests layout"));
    }
    Run& run = runs.back();
    if (!forced && !run.started && !run.command && !file_coll) {
      throw ConfigError(where, "a result row but no collective named (no '# Collective test starting' line)",
                        "a log that names its nccl-tests binary, a file named after it, or --collective");
    }
    Pending p;
    p.line = lineno;
    p.bytes = parse_uint(tok[layout.size], "size", where);
    p.dtype = utf8_or_throw(tok[layout.type], "type", where);
    p.time_us = parse_finite(tok[o.in_place ? layout.in_time : layout.time], "time", where);
    p.algbw = parse_finite(tok[o.in_place ? layout.in_algbw : layout.algbw], "algbw", where);
    p.busbw = parse_finite(tok[o.in_place ? layout.in_busbw : layout.busbw], "busbw", where);
    run.rows.push_back(std::move(p));
  }
  if (runs.size() == 1 && runs.back().rows.empty()) {
    throw ConfigError(name, "no result rows", "an nccl-tests log with at least one row");
  }
  std::vector<std::vector<BenchRecord>> out;
  for (const auto& run : runs) {
    if (run.rows.empty()) {
      throw ConfigError(fmt::format("{}:{}", name, run.first_line), "a run header without result rows",
                        "result rows after every run's header (truncated log?)");
    }
    // Priority: --collective, "# Collective test starting", a command line, the file name.
    const std::string coll = forced ? *forced : run.started ? *run.started : run.command ? *run.command : *file_coll;
    std::optional<int> ranks, rpn;
    std::set<std::string> hosts;
    if (!run.ranks.empty()) {
      int mx = 0;
      for (const auto& r : run.ranks) {
        mx = std::max(mx, r.rank);
        if (!r.host.empty()) hosts.insert(r.host);
      }
      ranks = mx + 1;  // the largest index printed: rank lists may be elided with "..."
      rpn = ranks_per_node_from(run.ranks, *ranks);
    }
    out.push_back(finish(name, coll, ranks, rpn, run.rows, hosts, o, "", "", "nccl-tests", true));
    for (auto& r : out.back()) r.gpus_per_thread = run.gpus_per_thread;
  }
  return out;
}

std::vector<BenchRecord> parse_nccl_tests_text(std::string_view text, const std::string& name, const ParseOptions& o) {
  std::vector<BenchRecord> out;
  for (auto& run : parse_nccl_tests_runs(text, name, o)) {
    for (auto& r : run) out.push_back(std::move(r));
  }
  return out;
}

std::vector<BenchRecord> parse_nccl_tests_json(std::string_view text, const std::string& name, const ParseOptions& o) {
  nlohmann::json j = parse_json_text(text, name, "an nccl-tests -J report");
  const auto ptr_where = [&](const std::string& p) { return fmt::format("{}#{}", name, p); };
  if (!j.is_object() || !j.contains("results") || !j["results"].is_array()) {
    throw ConfigError(ptr_where("/results"), "no results list", "an nccl-tests -J report (version 2)");
  }
  std::string coll;
  if (o.collective) {
    coll = canonical_or_throw(*o.collective, "--collective");
  } else {
    if (!j.contains("args") || !j["args"].is_array() || j["args"].empty() || !j["args"][0].is_string()) {
      throw ConfigError(ptr_where("/args/0"), "no program name", "the nccl-tests binary in args[0], or --collective");
    }
    coll = collective_or_throw(j["args"][0].get<std::string>(), ptr_where("/args/0"));
  }
  std::set<std::string> hosts;
  std::map<std::string, int> per_host;
  std::optional<int> ranks;
  if (j.contains("config") && j["config"].is_object() && j["config"].contains("devices") &&
      j["config"]["devices"].is_array()) {
    const auto& devs = j["config"]["devices"];
    if (!devs.empty()) ranks = static_cast<int>(devs.size());  // else: not in the log
    for (const auto& d : devs) {
      if (d.contains("hostname") && d["hostname"].is_string()) {
        hosts.insert(d["hostname"].get<std::string>());
        ++per_host[d["hostname"].get<std::string>()];
      }
    }
  }
  std::string date;
  if (j.contains("start_time") && j["start_time"].is_string()) date = j["start_time"].get<std::string>();
  std::vector<Pending> rows;
  const auto& res = j["results"];
  for (size_t i = 0; i < res.size(); ++i) {
    const std::string base = fmt::format("/results/{}", i);
    const auto& r = res[i];
    const char* side = o.in_place ? "in_place" : "out_of_place";
    if (!r.is_object() || !r.contains("size") || !r["size"].is_number_unsigned()) {
      throw ConfigError(ptr_where(base + "/size"), "no size", "an unsigned byte count");
    }
    if (!r.contains(side) || !r[side].is_object()) {
      throw ConfigError(ptr_where(base + "/" + side), "no measurement", "an object with time, alg_bw, bus_bw");
    }
    const auto& m = r[side];
    const auto num = [&](const char* key) {
      const std::string w = ptr_where(base + "/" + side + "/" + key);
      if (!m.contains(key)) throw ConfigError(w, "missing", "a finite number");
      if (m[key].is_string()) return parse_finite(m[key].get<std::string>(), key, w);
      if (!m[key].is_number()) throw ConfigError(w, m[key].dump(), "a finite number");
      const double v = m[key].get<double>();
      if (!std::isfinite(v) || v < 0) throw ConfigError(w, m[key].dump(), "a finite number >= 0");
      return v;
    };
    Pending p;
    p.line = static_cast<int>(i);
    p.bytes = r["size"].get<std::uint64_t>();
    p.dtype = r.contains("type") && r["type"].is_string() ? r["type"].get<std::string>() : "float";
    p.time_us = m.contains("cpu_time") ? num("cpu_time") : num("time");
    p.algbw = num("alg_bw");
    p.busbw = num("bus_bw");
    rows.push_back(p);
  }
  if (rows.empty()) throw ConfigError(ptr_where("/results"), "an empty results list", "at least one result");
  // JSON values carry 6 decimals (%lf): the logged bandwidths are not re-checked beyond that.
  std::optional<int> rpn;
  for (const auto& [h, c] : per_host) rpn = std::max(rpn.value_or(0), c);
  auto out = finish(name, coll, ranks, rpn, rows, hosts, o, "", date, "nccl-tests", false);
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string w = ptr_where(fmt::format("/results/{}", i));
    if (std::fabs(rows[i].algbw - out[i].algbw_GBps) > 1e-3 + 1e-3 * out[i].algbw_GBps) {
      throw ConfigError(w, fmt::format("alg_bw {} disagrees with size/time = {:.6f} GB/s", rows[i].algbw, out[i].algbw_GBps),
                        "a consistent result (size, time, alg_bw)");
    }
  }
  return out;
}

}  // namespace shardsim::logs
