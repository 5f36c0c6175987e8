#include "analysis/sweep/csv_read.hpp"

#include <fmt/format.h>

#include <fstream>

#include "sim/error.hpp"

namespace shardsim::sweep {

std::vector<std::string> parse_csv_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cur += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(std::move(cur));
  return out;
}

int CsvData::column(const std::string& name) const {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return -1;
}

CsvData read_csv(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(flag, fmt::format("cannot open '{}'", path), "a readable CSV file");
  CsvData d;
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    if (first) {
      d.header = parse_csv_line(line);
      first = false;
      continue;
    }
    if (line.empty() || line == "\r") continue;
    auto row = parse_csv_line(line);
    row.resize(d.header.size());
    d.rows.push_back(std::move(row));
  }
  if (first) throw ConfigError(flag, fmt::format("'{}' is empty", path), "a CSV file with a header line");
  return d;
}

}  // namespace shardsim::sweep
