#pragma once
// Reading back the CSV files shardsim writes (RFC 4180 quoting, as analysis/output/table.hpp
// writes it): used by `sweep --resume` and `plot`.
#include <string>
#include <string_view>
#include <vector>

namespace shardsim::sweep {

/// Splits one record (no trailing newline; a trailing '\r' is dropped). Quoted fields may
/// hold commas and doubled quotes. O(length).
std::vector<std::string> parse_csv_line(std::string_view line);

struct CsvData {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  ///< each padded/truncated to header.size()
  /// Index of `name` in header, or -1.
  [[nodiscard]] int column(const std::string& name) const;
};

/// Reads a CSV file whose records are single lines (shardsim output). Throws ConfigError
/// naming `flag` when the file cannot be read or is empty.
CsvData read_csv(const std::string& path, const std::string& flag);

}  // namespace shardsim::sweep
