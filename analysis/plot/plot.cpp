#include "analysis/plot/plot.hpp"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "analysis/output/table.hpp"
#include "sim/error.hpp"

namespace shardsim::plot {
namespace {

std::optional<double> as_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, v);
  if (r.ec != std::errc() || r.ptr != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

/// A gnuplot single-quoted string (no escapes inside; a quote is doubled).
std::string gp_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) {
    if (c == '\'') o += '\'';
    o += c;
  }
  return o + "'";
}

int need_column(const sweep::CsvData& d, const std::string& name, const std::string& flag, const std::string& csv) {
  const int c = d.column(name);
  if (c < 0) {
    std::string cols;
    for (const auto& h : d.header) cols += (cols.empty() ? "" : ", ") + h;
    throw ConfigError(flag, fmt::format("no column '{}' in {}", name, csv), "one of the columns: " + cols);
  }
  return c;
}

struct Point {
  double x, y;
};

}  // namespace

std::string gnuplot_script(const sweep::CsvData& d, const PlotOptions& o) {
  auto ends = [&](const std::string& s) { return o.out.size() >= s.size() && o.out.compare(o.out.size() - s.size(), s.size(), s) == 0; };
  const bool svg = ends(".svg");
  if (!svg && !ends(".png")) throw ConfigError("-o", fmt::format("'{}'", o.out), "a file ending in .svg or .png");
  const int cx = need_column(d, o.x, "--x", o.csv);
  const int cy = need_column(d, o.y, "--y", o.csv);
  const int cb = o.by.empty() ? -1 : need_column(d, o.by, "--by", o.csv);
  const int cs = d.column("status");

  struct Kept {
    std::size_t line;
    std::string x, series;
    double y;
  };
  std::vector<Kept> kept;
  bool numeric_x = true;
  for (std::size_t i = 0; i < d.rows.size(); ++i) {
    const auto& row = d.rows[i];
    const std::size_t line = i + 2;  // header is line 1
    if (cs >= 0 && std::find(o.statuses.begin(), o.statuses.end(), row[static_cast<std::size_t>(cs)]) == o.statuses.end()) continue;
    const std::string& xs = row[static_cast<std::size_t>(cx)];
    const std::string& ys = row[static_cast<std::size_t>(cy)];
    if (xs.empty() || ys.empty()) continue;
    const auto y = as_number(ys);
    if (!y) throw ConfigError("--y", fmt::format("column '{}' has '{}' at line {} of {}", o.y, ys, line, o.csv), "numbers");
    if (o.logy && *y <= 0) {
      throw ConfigError("--logy", fmt::format("column '{}' has {} at line {} of {}", o.y, ys, line, o.csv), "positive values on a log axis");
    }
    const auto x = as_number(xs);
    numeric_x = numeric_x && x.has_value();
    kept.push_back({line, xs, cb >= 0 ? row[static_cast<std::size_t>(cb)] : o.y, *y});
  }
  if (kept.empty()) {
    std::string st;
    for (const auto& x : o.statuses) st += (st.empty() ? "" : " or ") + x;
    throw ConfigError(o.csv, fmt::format("no row with status {} and values in '{}' and '{}'", st, o.x, o.y), "at least one row to plot");
  }
  if (o.logx && !numeric_x) throw ConfigError("--logx", fmt::format("column '{}' is not numeric", o.x), "numbers on a log axis");

  std::vector<std::string> categories;
  std::vector<std::string> names;
  std::vector<std::vector<Point>> series;
  for (const auto& k : kept) {
    double x = 0;
    if (numeric_x) {
      x = *as_number(k.x);
      if (o.logx && x <= 0) {
        throw ConfigError("--logx", fmt::format("column '{}' has {} at line {} of {}", o.x, k.x, k.line, o.csv), "positive values on a log axis");
      }
    } else {
      auto it = std::find(categories.begin(), categories.end(), k.x);
      if (it == categories.end()) it = categories.insert(categories.end(), k.x);
      x = static_cast<double>(it - categories.begin());
    }
    auto s = std::find(names.begin(), names.end(), k.series);
    if (s == names.end()) {
      s = names.insert(names.end(), k.series);
      series.emplace_back();
    }
    series[static_cast<std::size_t>(s - names.begin())].push_back({x, k.y});
  }

  std::string g;
  g += svg ? "set terminal svg size 900,560 dynamic noenhanced font 'sans,12' background 'white'\n"
           : "set terminal pngcairo size 900,560 noenhanced font 'sans,10'\n";
  g += "set output " + gp_quote(o.out) + "\n";
  const std::string title = !o.title.empty() ? o.title : o.y + " vs " + o.x + (o.by.empty() ? "" : " by " + o.by);
  g += "set title " + gp_quote(title) + "\n";
  g += "set xlabel " + gp_quote(o.x) + "\nset ylabel " + gp_quote(o.y) + "\n";
  g += "set grid\nset key outside right top\n";
  if (o.logx) g += "set logscale x\n";
  if (o.logy) g += "set logscale y\n";
  if (!numeric_x) {
    g += "set xtics rotate by -30 (";
    for (std::size_t i = 0; i < categories.size(); ++i) g += fmt::format("{}{} {}", i ? ", " : "", gp_quote(categories[i]), i);
    g += fmt::format(")\nset xrange [-0.5:{}]\n", analysis::num(static_cast<double>(categories.size()) - 0.5));
  }
  for (std::size_t s = 0; s < series.size(); ++s) {
    auto& pts = series[s];
    std::stable_sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
    g += fmt::format("$s{} << EOD\n", s);
    for (const auto& p : pts) g += analysis::num(p.x) + " " + analysis::num(p.y) + "\n";
    g += "EOD\n";
  }
  g += "plot ";
  for (std::size_t s = 0; s < series.size(); ++s) {
    g += fmt::format("{}$s{} using 1:2 with linespoints linewidth 2 pointtype {} title {}", s ? ", \\\n     " : "", s,
                     s % 13 + 1, gp_quote(names[s]));
  }
  g += "\n";
  return g;
}

void draw_plot(const PlotOptions& o, const std::string& script_path) {
  const auto data = sweep::read_csv(o.csv, "results CSV");
  const std::string script = gnuplot_script(data, o);
  if (!script_path.empty()) analysis::write_file(script_path, script, "--script");
  std::error_code ec;
  std::filesystem::remove(o.out, ec);
  std::FILE* p = ::popen("gnuplot", "w");
  if (!p) throw std::runtime_error("cannot start gnuplot");
  const std::size_t n = std::fwrite(script.data(), 1, script.size(), p);
  const int status = ::pclose(p);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    throw std::runtime_error("gnuplot not found on PATH (Debian: apt-get install gnuplot-nox)");
  }
  if (n != script.size() || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !std::filesystem::exists(o.out)) {
    throw std::runtime_error(fmt::format("gnuplot failed to draw '{}' (exit status {})", o.out, status));
  }
}

}  // namespace shardsim::plot
