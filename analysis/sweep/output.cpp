#include "analysis/sweep/output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/output/table.hpp"
#include "analysis/sweep/csv_read.hpp"
#include "sim/error.hpp"
#include "sim/time.hpp"

namespace shardsim::sweep {
namespace {

constexpr const char* kFixedColumns[] = {"scenario", "hash", "status", "reason"};

std::string one_line(std::string s) {
  for (auto& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

void flatten_into(const nlohmann::json& v, const std::string& prefix, bool top,
                  std::vector<std::pair<std::string, std::string>>& out) {
  for (const auto& [key, x] : v.items()) {
    if (top && key == "config") continue;
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    if (x.is_object()) {
      flatten_into(x, name, false, out);
    } else {
      out.emplace_back(name, cell_text(x));
    }
  }
}

/// Why a result does not fit: its own explanation when it gives one.
std::string not_fit_reason(const nlohmann::json& r) {
  for (const char* k : {"reason", "why", "does_not_fit"}) {
    if (r.contains(k) && r.at(k).is_string() && !r.at(k).get<std::string>().empty()) return r.at(k).get<std::string>();
  }
  return "does not fit in device memory";
}

}  // namespace

std::string cell_text(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::string: return one_line(v.get<std::string>());
    case nlohmann::json::value_t::number_integer: return std::to_string(v.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: return std::to_string(v.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float: return analysis::num(v.get<double>());
    case nlohmann::json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::null: return "";
    default: return one_line(v.dump());
  }
}

std::vector<std::pair<std::string, std::string>> flatten_result(const nlohmann::json& result) {
  std::vector<std::pair<std::string, std::string>> out;
  if (result.is_object()) {
    flatten_into(result, "", true, out);
  } else {
    out.emplace_back("value", cell_text(result));
  }
  return out;
}

Outcome run_scenario(const SweepSpec& spec, const analysis::ScenarioCommand& cmd, std::uint64_t i) {
  Outcome o;
  o.index = i;
  nlohmann::json flags = spec.scenario(i);
  o.hash = scenario_hash(flags);
  flags.erase("command");
  try {
    nlohmann::json r = cmd.run(flags);
    if (!r.is_array()) r = nlohmann::json::array({std::move(r)});
    o.status = "ok";
    for (const auto& x : r) {
      if (x.is_object() && x.contains("fits") && x.at("fits") == false) {
        o.status = "does-not-fit";
        o.reason = not_fit_reason(x);
        break;
      }
    }
    o.results = std::move(r);
  } catch (const ConfigError& e) {
    o.status = "invalid";
    o.reason = one_line(e.what());
  } catch (const TimeRangeError& e) {
    // Inputs whose simulated times leave the int64 picosecond range are bad input, as in
    // main() (exit 2 there): the row is invalid, not an internal error.
    o.status = "invalid";
    o.reason = one_line(e.what());
  } catch (const std::exception& e) {
    o.status = "error";
    o.reason = one_line(e.what());
  }
  return o;
}

nlohmann::json to_json(const Outcome& o) {
  return {{"i", o.index}, {"h", o.hash}, {"s", o.status}, {"r", o.reason}, {"x", o.results}};
}

Outcome outcome_from_json(const nlohmann::json& j) {
  Outcome o;
  o.index = j.at("i").get<std::uint64_t>();
  o.hash = j.at("h").get<std::string>();
  o.status = j.at("s").get<std::string>();
  o.reason = j.at("r").get<std::string>();
  o.results = j.at("x");
  return o;
}

Format format_for(const std::string& path, const std::string& flag) {
  auto ends = [&](const std::string& s) { return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0; };
  if (ends(".csv")) return Format::csv;
  if (ends(".jsonl")) return Format::jsonl;
  throw ConfigError(flag, fmt::format("'{}'", path), "a file ending in .csv or .jsonl");
}

ResultWriter::ResultWriter(const SweepSpec& spec, std::string path, bool resume)
    : spec_(spec), path_(std::move(path)), format_(format_for(path_, "--out")) {
  if (resume && std::filesystem::exists(path_)) resume_from_file();
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (resume ? 0 : O_TRUNC);
  fd_ = ::open(path_.c_str(), flags, 0644);
  if (fd_ < 0) throw ConfigError("--out", fmt::format("cannot write '{}': {}", path_, std::strerror(errno)), "a writable file path");
}

ResultWriter::~ResultWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void ResultWriter::resume_from_file() {
  std::ifstream in(path_, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  text.resize(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);  // whole lines only

  std::size_t pos = 0, line_no = 0;
  auto next_line = [&](std::string_view& line) {
    if (pos >= text.size()) return false;
    const std::size_t e = text.find('\n', pos);
    line = std::string_view(text).substr(pos, e - pos);
    pos = e + 1;
    ++line_no;
    return true;
  };
  std::string_view line;
  const std::string mismatch = "the output of this same sweep (or run without --resume to start over)";
  if (format_ == Format::csv && next_line(line)) {
    const auto header = parse_csv_line(line);
    std::vector<std::string> fixed(std::begin(kFixedColumns), std::end(kFixedColumns));
    for (const auto& c : spec_.axis_columns()) fixed.push_back(c);
    bool same = header.size() >= fixed.size();
    for (std::size_t i = 0; same && i < fixed.size(); ++i) same = header[i] == fixed[i];
    if (!same) {
      throw ConfigError(fmt::format("{}: line 1", path_), fmt::format("the header '{}'", line), mismatch);
    }
    result_columns_.assign(header.begin() + static_cast<std::ptrdiff_t>(fixed.size()), header.end());
    have_header_ = true;
  }
  const std::size_t rows_begin = pos;
  std::size_t last_start = rows_begin;
  std::uint64_t expected = 0;
  bool any = false;
  std::string expected_hash;
  while (true) {
    const std::size_t start = pos;
    if (!next_line(line)) break;
    std::uint64_t idx = 0;
    std::string hash;
    bool parsed = false;
    if (format_ == Format::csv) {
      const auto f = parse_csv_line(line);
      if (f.size() >= 2 && !f[0].empty() && f[0].find_first_not_of("0123456789") == std::string::npos) {
        idx = std::stoull(f[0]);
        hash = f[1];
        parsed = true;
      }
    } else {
      try {
        const auto j = nlohmann::json::parse(line);
        idx = j.at("scenario").get<std::uint64_t>();
        hash = j.at("hash").get<std::string>();
        parsed = true;
      } catch (const nlohmann::json::exception&) {
        parsed = false;
      }
    }
    const std::string where = fmt::format("{}: line {}", path_, line_no);
    if (!parsed) throw ConfigError(where, "a row without a scenario index and hash", mismatch);
    const bool continues = any && idx == expected;
    if (!continues) {
      const std::uint64_t want = any ? expected + 1 : 0;
      if (idx != want || idx >= spec_.size()) {
        throw ConfigError(where, fmt::format("scenario {}", idx), fmt::format("scenario {} of {}: {}", want, spec_.size(), mismatch));
      }
      expected = idx;
      expected_hash = scenario_hash(spec_.scenario(idx));
      last_start = start;
      any = true;
    }
    if (hash != expected_hash) {
      throw ConfigError(where, fmt::format("scenario {} with hash {}", idx, hash),
                        fmt::format("hash {} (the sweep file changed?): {}", expected_hash, mismatch));
    }
  }
  // The last scenario present may be missing rows (killed between its lines): run it again.
  first_ = any ? expected : 0;
  std::size_t keep = any ? last_start : rows_begin;
  if (format_ == Format::csv && !have_header_) keep = 0;
  std::filesystem::resize_file(path_, keep);
}

void ResultWriter::append(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ConfigError("--out", fmt::format("cannot write '{}': {}", path_, std::strerror(errno)), "a writable file path");
    }
    done += static_cast<std::size_t>(n);
  }
}

std::string ResultWriter::csv_rows(const Outcome& o) {
  std::vector<std::string> prefix = {std::to_string(o.index), o.hash, o.status, o.reason};
  for (const auto* v : spec_.axis_values(o.index)) prefix.push_back(cell_text(*v));
  std::string out;
  if (o.results.empty()) {
    std::vector<std::string> row = prefix;
    row.resize(prefix.size() + result_columns_.size());
    return analysis::csv_line(row);
  }
  for (const auto& r : o.results) {
    std::vector<std::string> row = prefix;
    row.resize(prefix.size() + result_columns_.size());
    for (auto& [key, cell] : flatten_result(r)) {
      bool placed = false;
      for (std::size_t c = 0; c < result_columns_.size() && !placed; ++c) {
        if (result_columns_[c] == key) {
          row[prefix.size() + c] = std::move(cell);
          placed = true;
        }
      }
      if (!placed) dropped_.insert(key);
    }
    out += analysis::csv_line(row);
  }
  return out;
}

std::string ResultWriter::jsonl_rows(const Outcome& o) const {
  const auto cols = spec_.axis_columns();
  const auto vals = spec_.axis_values(o.index);
  nlohmann::json axes = nlohmann::json::object();
  for (std::size_t i = 0; i < cols.size(); ++i) axes[cols[i]] = *vals[i];
  nlohmann::json row = {{"scenario", o.index}, {"hash", o.hash}, {"status", o.status}, {"reason", o.reason}, {"axes", axes}};
  std::string out;
  if (o.results.empty()) {
    row["result"] = nullptr;
    return row.dump() + "\n";
  }
  for (const auto& r : o.results) {
    row["result"] = r;
    out += row.dump() + "\n";
  }
  return out;
}

void ResultWriter::write(const Outcome& o) {
  if (format_ == Format::jsonl) {
    append(jsonl_rows(o));
    return;
  }
  if (!have_header_) {
    if (o.results.empty()) {
      waiting_.push_back(o);
      return;
    }
    for (const auto& [key, cell] : flatten_result(o.results.front())) result_columns_.push_back(key);
    finish();
  }
  append(csv_rows(o));
}

void ResultWriter::finish() {
  if (format_ != Format::csv || have_header_) return;
  std::vector<std::string> header(std::begin(kFixedColumns), std::end(kFixedColumns));
  for (const auto& c : spec_.axis_columns()) header.push_back(c);
  for (const auto& c : result_columns_) header.push_back(c);
  std::string text = analysis::csv_line(header);
  have_header_ = true;
  for (const auto& w : waiting_) text += csv_rows(w);
  waiting_.clear();
  append(text);
}

}  // namespace shardsim::sweep
