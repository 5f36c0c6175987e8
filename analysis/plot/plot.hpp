#pragma once
// Plots from result CSVs, drawn by gnuplot (DESIGN 7: the CSV stays the source of truth; the
// plot is derived from it and can be redrawn at any time).
//
// Rows: when the CSV has a `status` column (sweep output), only rows with a status listed in
// `statuses` (default ok) are drawn; rows with an empty x or y cell are skipped. y must be numeric. x is numeric when
// every kept x cell is a number, otherwise categorical (positions 0, 1, ... in order of first
// appearance, labelled with the text). --by splits the rows into one line per distinct value
// (in order of first appearance); points of a line are sorted by x (stable).
#include <string>
#include <vector>

#include "analysis/sweep/csv_read.hpp"

namespace shardsim::plot {

struct PlotOptions {
  std::string csv;    ///< input CSV (for messages and the title)
  std::string x, y;   ///< column names
  std::string by;     ///< optional grouping column
  bool logx = false, logy = false;
  std::string out;    ///< .svg or .png
  std::string title;  ///< default: "<y> vs <x>[ by <by>]"
  /// Rows drawn when the CSV has a `status` column (does-not-fit rows carry memory figures).
  std::vector<std::string> statuses = {"ok"};
};

/// The gnuplot script (data inline) for `data`. Throws ConfigError naming the flag: a column
/// that is missing (listing the columns), a non-numeric y, a non-positive value on a log axis,
/// an output that is not .svg or .png, or no row left to draw. Deterministic text.
std::string gnuplot_script(const sweep::CsvData& data, const PlotOptions& o);

/// Reads o.csv, runs gnuplot on the script; `script_path` (optional) keeps a copy of it.
/// Throws ConfigError for bad input, std::runtime_error when gnuplot is missing or fails.
void draw_plot(const PlotOptions& o, const std::string& script_path = "");

}  // namespace shardsim::plot
