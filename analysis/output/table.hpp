#pragma once
// Plain-text tables (fmt), CSV files. Deterministic formatting: same rows, same bytes.
#include <string>
#include <vector>

namespace shardsim::analysis {

/// A table printed with columns aligned: the first column left, the others right.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  [[nodiscard]] std::string str() const;
  [[nodiscard]] bool empty() const { return rows_.empty(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

/// RFC 4180 quoting where needed (comma, quote, newline).
std::string csv_escape(const std::string& field);
std::string csv_line(const std::vector<std::string>& fields);

/// Writes `content` to `path` atomically (temp file + rename). Throws ConfigError naming the
/// path when it cannot be written.
void write_file(const std::string& path, const std::string& content, const std::string& flag);

/// Shortest round-trip text of a double (JSON-style), e.g. 0.1 -> "0.1".
std::string num(double v);

}  // namespace shardsim::analysis
