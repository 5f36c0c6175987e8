// Published-corpus predictions (see published.hpp).
#include "analysis/validation/published.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "analysis/commands/collective_run.hpp"
#include "models/collectives/collective.hpp"
#include "analysis/validation/validate.hpp"
#include "sim/error.hpp"
#include "sim/text/strings.hpp"
#include "traces/logs/parse.hpp"

namespace shardsim::validation {
namespace {

constexpr std::uint64_t kLarge = 64ull << 20;  // busbw medians over S >= 64 MiB
constexpr std::uint64_t kSmall = 64ull << 10;  // time medians over S <= 64 KiB
constexpr std::uint64_t kMidLo = 1ull << 20;   // time medians over 1 MiB <= S <= 32 MiB
constexpr std::uint64_t kMidHi = 32ull << 20;
bool is_mid(std::uint64_t bytes) { return bytes >= kMidLo && bytes <= kMidHi; }

struct Measured {
  std::uint64_t bytes = 0;
  double time_us = 0, busbw_GBps = 0;
};

std::string read_text(const std::string& path, const std::string& where) {
  std::ifstream in(path);
  if (!in) throw ConfigError(where, fmt::format("cannot read '{}'", path), "a readable file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  for (char c : line) {
    if (c == ',') {
      out.push_back(cell);
      cell.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  out.push_back(cell);
  return out;
}

double number(const std::string& s, const std::string& where) {
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    while (used < s.size() && s[used] == ' ') ++used;
    if (used != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw ConfigError(where, fmt::format("'{}'", s), "a number");
  }
}

// A measured quantity (size, bandwidth): a number > 0.
double positive(const std::string& s, const std::string& where) {
  const double v = number(s, where);
  if (!(v > 0) || !std::isfinite(v)) throw ConfigError(where, fmt::format("'{}'", s), "a positive number");
  return v;
}

// CSV rows (cells in the header's order); a row whose cell count differs from the header's is
// a ConfigError naming the file's line.
std::vector<std::vector<std::string>> csv_rows(const std::string& text, std::vector<std::string>& header,
                                               const std::string& where) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  bool first = true;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    if (line.empty() || line == "\r") continue;
    auto cells = split_csv(line);
    if (first) {
      header = cells;
      first = false;
    } else if (cells.size() != header.size()) {
      throw ConfigError(fmt::format("{}: line {}", where, lineno), fmt::format("{} cells", cells.size()),
                        fmt::format("{} (the header's)", header.size()));
    } else {
      rows.push_back(std::move(cells));
    }
  }
  return rows;
}

std::size_t column(const std::vector<std::string>& header, const std::string& name, const std::string& where) {
  const auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end()) throw ConfigError(where, "no column '" + name + "'", "the corpus CSV layout");
  return static_cast<std::size_t>(it - header.begin());
}

// index.json members, checked: a missing key or a value of the wrong type is a ConfigError
// naming its JSON path (`where` is the entry's, "index.json: /files/3").
const nlohmann::json& member(const nlohmann::json& e, const char* key, const std::string& where) {
  if (!e.contains(key)) throw ConfigError(fmt::format("{}/{}", where, key), "missing", "a value (the corpus index layout)");
  return e.at(key);
}
std::string string_member(const nlohmann::json& e, const char* key, const std::string& where) {
  const auto& v = member(e, key, where);
  if (!v.is_string()) throw ConfigError(fmt::format("{}/{}", where, key), v.dump(), "a string");
  return v.get<std::string>();
}
bool bool_member(const nlohmann::json& e, const char* key, const std::string& where) {
  if (!e.contains(key)) return false;
  const auto& v = e.at(key);
  if (!v.is_boolean()) throw ConfigError(fmt::format("{}/{}", where, key), v.dump(), "true or false");
  return v.get<bool>();
}
// "ranks": an integer >= 2; a csv-summary may list several (one per node count).
int ranks_member(const nlohmann::json& e, const std::string& format, const std::string& where) {
  const auto& v = member(e, "ranks", where);
  auto one = [&](const nlohmann::json& x) {
    if (!x.is_number_integer() || x.get<long long>() < 2 || x.get<long long>() > (1 << 24)) {
      throw ConfigError(fmt::format("{}/ranks", where), x.dump(), "an integer rank count of at least 2");
    }
    return x.get<int>();
  };
  if (v.is_array() && format == "csv-summary") {
    if (v.empty()) throw ConfigError(fmt::format("{}/ranks", where), "[]", "the rank counts of the summary");
    for (const auto& x : v) (void)one(x);
    return 0;
  }
  return one(v);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void predict_file(PublishedResult& res, const nlohmann::json& entry, const std::vector<Measured>& meas,
                  int gpus_per_thread, const std::string& where) {
  if (meas.empty()) throw ConfigError(where, "no measured row in " + res.file, "at least one row of measurements");
  cli::CollectiveOptions o;
  if (entry.contains("preset")) {
    std::string p = string_member(entry, "preset", where);
    if (const auto at = p.find("{ranks}"); at != std::string::npos) p.replace(at, 7, std::to_string(res.ranks));
    o.topology = p;
  } else {
    const auto& t = member(entry, "topology", where);
    if (!t.is_object()) throw ConfigError(where + "/topology", t.dump(), "a topology JSON object");
    o.topology = t.dump();
  }
  o.op = res.collective;
  o.algorithm = "auto";
  o.ranks = bool_member(entry, "model_ranks_first", where) ? res.ranks : 0;
  if (entry.contains("model_ranks_per_node")) {  // the run's placement on a preset's nodes
    const auto& v = entry.at("model_ranks_per_node");
    if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > res.ranks) {
      throw ConfigError(where + "/model_ranks_per_node", v.dump(), fmt::format("an integer from 1 to {} (the ranks)", res.ranks));
    }
    o.ranks = res.ranks;
    o.ranks_per_node = v.get<int>();
  }
  if (entry.contains("nccl_algo")) o.nccl_algo = string_member(entry, "nccl_algo", where);
  std::string bytes;
  for (const auto& m : meas) bytes += (bytes.empty() ? "" : ",") + std::to_string(m.bytes);
  o.bytes = bytes;
  const auto rows = cli::run_collective(o);
  if (rows.size() != meas.size()) throw std::logic_error(where + ": one prediction per measured size expected");
  for (std::size_t i = 0; i < meas.size(); ++i) {
    if (static_cast<int>(rows[i].ranks) != res.ranks) {
      throw ConfigError(where, fmt::format("topology '{}' gives {} ranks", o.topology, rows[i].ranks),
                        fmt::format("{} ranks (the measurement's)", res.ranks));
    }
    PublishedPoint p;
    p.bytes = meas[i].bytes;
    p.measured_us = meas[i].time_us;
    p.measured_busbw_GBps = meas[i].busbw_GBps;
    p.predicted_us = rows[i].time_s * 1e6;
    p.predicted_busbw_GBps = rows[i].busbw_GBps;
    p.algorithm = rows[i].algorithm;
    const double model_us = p.predicted_us;
    p.predicted_us = with_launch_floor(model_us, gpus_per_thread, p.algorithm);
    p.predicted_busbw_GBps *= model_us / p.predicted_us;
    res.topology = rows[i].topology;
    res.points.push_back(p);
  }
  std::vector<double> large, small, mid;
  for (const auto& p : res.points) {
    if (p.bytes >= kLarge) large.push_back(p.busbw_error());
    if (p.bytes <= kSmall) small.push_back(p.time_error());
    if (is_mid(p.bytes)) mid.push_back(p.time_error());
  }
  if (!large.empty()) res.busbw_large = median(large);
  if (!small.empty()) res.time_small = median(small);
  if (!mid.empty()) res.time_mid = median(mid);
  const auto& last = *std::max_element(res.points.begin(), res.points.end(),
                                       [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  res.largest = last.busbw_error();
  res.largest_algorithm = last.algorithm;
}

// One reader per corpus format (the index's "format"): the measured points of a file, one set
// per rank count it holds. The format names and the error listing them come from kFormats.
struct MeasuredSet {
  int ranks = 0;
  std::string label;  ///< the file's row label when a file holds several rank counts
  std::vector<Measured> points;
  int gpus_per_thread = 1;  ///< nccl-tests -g (the header's nGpus)
};
using FormatReader = std::vector<MeasuredSet> (*)(const std::string& path, const std::string& file, int ranks,
                                                  const std::string& collective, const std::string& where);

std::vector<MeasuredSet> read_nccl_tests(const std::string& path, const std::string& file, int ranks,
                                         const std::string& /*collective*/, const std::string& where) {
  logs::ParseOptions po;
  po.in_place = true;
  po.ranks = ranks;
  MeasuredSet set{ranks, {}, {}};
  const auto records = logs::parse_log_file(path, po);
  if (!records.empty()) set.gpus_per_thread = records.front().gpus_per_thread.value_or(1);
  for (const auto& r : records) {
    // nccl-tests prints S = 0 where the count rounds to 0 elements per rank (all-gather of 8 B on
    // 8 ranks): NCCL does no work for a zero-byte collective, the row times the harness alone.
    if (r.bytes == 0) continue;
    set.points.push_back({r.bytes, r.time_us, r.busbw_GBps});
  }
  if (set.points.empty()) throw ConfigError(where, "no row in " + file, "an nccl-tests table");
  return {set};
}

std::vector<MeasuredSet> read_csv_busbw(const std::string& path, const std::string& file, int ranks,
                                        const std::string& collective, const std::string& where) {
  std::vector<std::string> header;
  const auto rows = csv_rows(read_text(path, where), header, where + " (" + file + ")");
  const auto cb = column(header, "size_bytes", where), cw = column(header, "busbw_GBps", where);
  const auto kind = coll::op_from_string(collective, where);
  MeasuredSet set{ranks, {}, {}};
  for (const auto& r : rows) {
    Measured m;
    m.bytes = static_cast<std::uint64_t>(positive(r.at(cb), where));
    m.busbw_GBps = positive(r.at(cw), where);
    m.time_us = static_cast<double>(m.bytes) * coll::busbw_factor(kind, static_cast<std::size_t>(ranks)) /
                (m.busbw_GBps * 1e3);
    set.points.push_back(m);
  }
  return {set};
}

std::vector<MeasuredSet> read_csv_summary(const std::string& path, const std::string& file, int /*ranks*/,
                                          const std::string& /*collective*/, const std::string& where) {
  std::vector<std::string> header;
  const auto rows = csv_rows(read_text(path, where), header, where + " (" + file + ")");
  const auto cg = column(header, "GPUs", where), cs = column(header, "size(MB)", where);
  const auto cw = column(header, "in busbw(GB/s)", where), ca = column(header, "in algbw(GB/s)", where);
  std::vector<MeasuredSet> sets;
  for (const auto& r : rows) {
    const int g = static_cast<int>(number(r.at(cg), where));
    auto it = std::find_if(sets.begin(), sets.end(), [&](const MeasuredSet& m) { return m.ranks == g; });
    if (it == sets.end()) {
      sets.push_back({g, fmt::format("{} ({} ranks)", file, g), {}});
      it = sets.end() - 1;
    }
    Measured m;
    m.bytes = static_cast<std::uint64_t>(positive(r.at(cs), where)) << 20;  // nccl-tests M = MiB
    m.busbw_GBps = positive(r.at(cw), where);
    m.time_us = static_cast<double>(m.bytes) / (positive(r.at(ca), where) * 1e3);
    it->points.push_back(m);
  }
  return sets;
}

struct Format {
  std::string_view name;
  FormatReader read;     ///< null: the format is recognised but not predicted (skip says why)
  std::string_view skip;
};
constexpr std::array kFormats{
    Format{"nccl-tests", read_nccl_tests, {}},
    Format{"csv-summary", read_csv_summary, {}},
    Format{"csv-busbw", read_csv_busbw, {}},
    Format{"osu", nullptr, "MPI (OSU) table: the NCCL model does not apply"},
};

const Format& format_named(const std::string& name, const std::string& where) {
  for (const auto& f : kFormats) {
    if (f.name == name) return f;
  }
  std::vector<std::string> names;
  for (const auto& f : kFormats) names.emplace_back(f.name);
  throw ConfigError(where + "/format", fmt::format("'{}'", name), "one of " + text::join(names));
}

}  // namespace

std::vector<PublishedResult> predict_published(const std::string& index_path) {
  const auto dir = std::filesystem::path(index_path).parent_path();
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(read_text(index_path, index_path));
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(index_path, fmt::format("invalid JSON ({})", e.what()), "the corpus index");
  }
  std::vector<PublishedResult> out;
  if (!index.is_object() || !index.contains("files") || !index.at("files").is_array()) {
    throw ConfigError(index_path + ": /files", "missing or not an array", "the corpus index's list of files");
  }
  const auto& files = index.at("files");
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& e = files[i];
    const std::string where = fmt::format("{}: /files/{}", index_path, i);
    if (!e.is_object()) throw ConfigError(where, e.dump(), "an object describing one file");
    const std::string file = string_member(e, "file", where);
    const std::string format = string_member(e, "format", where);
    PublishedResult base;
    base.file = file;
    base.collective = string_member(e, "collective", where);
    base.ranks = ranks_member(e, format, where);
    auto skip = [&](const std::string& why) {
      base.skipped = why;
      out.push_back(base);
    };
    const Format& fmt_entry = format_named(format, where);
    if (e.contains("exclude_from_accuracy")) {
      skip(string_member(e, "exclude_from_accuracy", where));
      continue;
    }
    if (fmt_entry.read == nullptr) {
      skip(std::string(fmt_entry.skip));
      continue;
    }
    if (!e.contains("preset") && !e.contains("topology")) {
      skip(e.contains("no_preset") ? string_member(e, "no_preset", where) : std::string("no preset or topology for this system"));
      continue;
    }
    for (auto& set : fmt_entry.read((dir / file).string(), file, base.ranks, base.collective, where)) {
      PublishedResult res = base;
      res.ranks = set.ranks;
      if (!set.label.empty()) res.file = set.label;
      int g = set.gpus_per_thread;
      if (e.contains("gpus_per_thread")) {  // a table without the nccl-tests header (csv)
        const auto& v = e.at("gpus_per_thread");
        if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > res.ranks) {
          throw ConfigError(where + "/gpus_per_thread", v.dump(), fmt::format("an integer from 1 to {} (the ranks)", res.ranks));
        }
        g = v.get<int>();
      }
      predict_file(res, e, set.points, g, where);
      out.push_back(std::move(res));
    }
  }
  return out;
}

PublishedSummary summarize_published(const std::vector<PublishedResult>& r) {
  PublishedSummary s;
  std::vector<double> large, small, mid;
  std::vector<std::pair<std::string, std::vector<double>>> signed_by_coll;  // S >= 64 MiB
  for (const auto& f : r) {
    if (f.skipped) {
      ++s.skipped;
      continue;
    }
    ++s.files;
    auto it = std::find_if(signed_by_coll.begin(), signed_by_coll.end(), [&](const auto& c) { return c.first == f.collective; });
    if (it == signed_by_coll.end()) it = signed_by_coll.insert(signed_by_coll.end(), {f.collective, {}});
    for (const auto& p : f.points) {
      if (p.bytes >= kLarge) {
        it->second.push_back(p.busbw_error());
        large.push_back(std::fabs(p.busbw_error()));
      }
      if (p.bytes <= kSmall) small.push_back(std::fabs(p.time_error()));
      if (is_mid(p.bytes)) mid.push_back(std::fabs(p.time_error()));
    }
    if (std::fabs(f.largest) >= s.worst_largest) {
      s.worst_largest = std::fabs(f.largest);
      s.worst_file = f.file;
    }
  }
  s.points_large = static_cast<int>(large.size());
  s.points_small = static_cast<int>(small.size());
  s.median_abs_busbw_large = median(large);
  s.median_abs_time_small = median(small);
  s.points_mid = static_cast<int>(mid.size());
  s.median_abs_time_mid = median(mid);
  for (const auto& [coll, errs] : signed_by_coll) {
    if (errs.empty()) continue;
    std::vector<double> abs_errs;
    for (double e : errs) abs_errs.push_back(std::fabs(e));
    s.by_collective.push_back({coll, static_cast<int>(errs.size()), median(abs_errs), median(errs)});
  }
  return s;
}

std::string published_table(const std::vector<PublishedResult>& r, const PublishedSummary& s) {
  auto pct = [](const std::optional<double>& v) { return v ? fmt::format("{:+.1f} %", 100 * *v) : std::string("-"); };
  std::string out =
      "| file | topology | ranks | busbw error, median S >= 64 MiB | time error, median S <= 64 KiB | time error, median "
      "1-32 MiB | error at the largest S | model at the largest S |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& f : r) {
    if (f.skipped) continue;
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} | {:+.1f} % | {} |\n", f.file, f.topology, f.ranks,
                       pct(f.busbw_large), pct(f.time_small), pct(f.time_mid), 100 * f.largest, f.largest_algorithm);
  }
  out += "\nNot predicted:\n\n";
  for (const auto& f : r) {
    if (f.skipped) out += fmt::format("- `{}`: {}\n", f.file, *f.skipped);
  }
  out += fmt::format(
      "\n{} files predicted, {} skipped. Median |busbw error| at S >= 64 MiB over {} points: {:.1f} %. Median |time "
      "error| at S <= 64 KiB over {} points: {:.1f} %. Median |time error| at 1 MiB <= S <= 32 MiB over {} points: "
      "{:.1f} %. Worst |error| at a file's largest size: {:.1f} % ({}).\n",
      s.files, s.skipped, s.points_large, 100 * s.median_abs_busbw_large, s.points_small, 100 * s.median_abs_time_small,
      s.points_mid, 100 * s.median_abs_time_mid, 100 * s.worst_largest, s.worst_file);
  std::string by;
  for (const auto& c : s.by_collective) {
    by += fmt::format("{}{} {} points, median |error| {:.1f} %, median signed {:+.1f} %", by.empty() ? "" : "; ",
                      c.collective, c.points, 100 * c.median_abs, 100 * c.median_signed);
  }
  if (!by.empty()) out += fmt::format("Busbw at S >= 64 MiB by collective: {}.\n", by);
  return out;
}

}  // namespace shardsim::validation
