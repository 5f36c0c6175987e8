#include "analysis/output/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "sim/error.hpp"

namespace shardsim::analysis {

std::string Table::str() const {
  std::vector<std::size_t> w(header_.size(), 0);
  auto widen = [&](const std::vector<std::string>& r) {
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  };
  widen(header_);
  for (const auto& r : rows_) widen(r);
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::string& cell = i < r.size() ? r[i] : std::string();
      if (i == 0) {
        out += fmt::format("{:<{}}", cell, w[i]);
      } else {
        out += fmt::format("  {:>{}}", cell, w[i]);
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  };
  line(header_);
  std::size_t total = 0;
  for (auto x : w) total += x + 2;
  out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  for (const auto& r : rows_) line(r);
  return out;
}

std::string csv_escape(const std::string& f) {
  if (f.find_first_of(",\"\n\r") == std::string::npos) return f;
  std::string o = "\"";
  for (char c : f) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string o;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) o += ',';
    o += csv_escape(fields[i]);
  }
  return o + "\n";
}

void write_file(const std::string& path, const std::string& content, const std::string& flag) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) {
      throw ConfigError(flag, fmt::format("cannot write '{}': {}", path, std::strerror(errno)),
                        "a writable file path");
    }
    f << content;
    if (!f.flush()) {
      throw ConfigError(flag, fmt::format("cannot write '{}': {}", path, std::strerror(errno)),
                        "a writable file path");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw ConfigError(flag, fmt::format("cannot write '{}': {}", path, ec.message()), "a writable file path");
}

std::string num(double v) {
  if (v == 0) return "0";
  return fmt::format("{}", v);
}

}  // namespace shardsim::analysis
