#include "analysis/plot/study_figures.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include "analysis/output/table.hpp"

namespace shardsim::plot {
namespace {

using analysis::csv_line;

// Six significant digits: plenty for a figure, and immune to last-bit differences between
// builds (the golden test compares these files byte for byte).
std::string g6(double v) { return fmt::format("{:.6g}", v); }
std::string bytes(double v) { return fmt::format("{}", std::llround(v)); }

/// A gnuplot double-quoted string ("\n" is a line break there).
std::string dq(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

/// A gnuplot single-quoted string (no escapes; a quote is doubled).
std::string sq(const std::string& s) {
  std::string o = "'";
  for (char c : s) {
    if (c == '\'') o += '\'';
    o += c;
  }
  return o + "'";
}

// One colour, point type and dash per strategy, in StudyFigures::strategies order (replicated,
// the baseline, dashed grey; sharded red as Xu et al. highlight it; zero2 dash-dotted over
// zero1, whose step times it equals: same collectives, docs/training-step.md; they differ in
// memory). Colour-blind-safe (Okabe-Ito) apart from the grey baseline.
struct Style {
  const char* colour;
  int point;  ///< filled gnuplot point type
  int dash;
};
const Style kStyles[] = {{"#555555", 7, 2}, {"#d55e00", 5, 1}, {"#0072b2", 9, 1}, {"#009e73", 13, 4}, {"#cc79a7", 11, 1}};
const Style& style(std::size_t k) { return kStyles[k % std::size(kStyles)]; }

// Breakdown and memory components: colours (Okabe-Ito / Tableau-like) in stacking order.
const char* const kTimeColours[] = {"#56b4e9", "#0072b2", "#e69f00", "#009e73"};
const char* const kTimeNames[] = {"forward", "backward", "exposed communication", "weight update"};
const char* const kMemColours[] = {"#0072b2", "#56b4e9", "#e69f00", "#009e73", "#999999"};
const char* const kMemNames[] = {"parameters", "gradients", "optimizer state", "activations", "buffers"};

using Key = std::tuple<std::size_t, std::uint64_t, std::string>;

std::map<Key, const StudyPoint*> index_points(const StudyFigures& f) {
  std::map<Key, const StudyPoint*> m;
  for (const auto& p : f.points) m[{p.panel, p.dp, p.strategy}] = &p;
  return m;
}

const StudyPoint& at(const std::map<Key, const StudyPoint*>& m, std::size_t panel, std::uint64_t dp, const std::string& s) {
  const auto it = m.find({panel, dp, s});
  if (it == m.end()) throw std::invalid_argument(fmt::format("study figures: no point for panel {}, N = {}, {}", panel, dp, s));
  return *it->second;
}

std::size_t rows(const StudyFigures& f) { return (f.panels.size() + f.columns - 1) / f.columns; }

// Figure geometry, in pixels: every panel gets the same cell whatever the grid; inside it,
// room for the two-line title above and the tick labels and x label below.
constexpr int kPanelW = 440, kPanelH = 360, kTop = 72, kBottom = 46;
constexpr int kLeft = 74, kRight = 16, kAbove = 56, kBelow = 50;
int width(const StudyFigures& f) { return static_cast<int>(f.columns) * kPanelW; }
int height(const StudyFigures& f) { return static_cast<int>(rows(f)) * kPanelH + kTop + kBottom; }

std::string panel_title(const StudyPanel& p) {
  return fmt::format("{}: {}\n{}, {}", p.system, p.model_label, p.workload, p.precision);
}

/// Screen margins placing panel i in its cell (row-major), and its title.
std::string place_panel(const StudyFigures& f, std::size_t i) {
  const double w = width(f), h = height(f);
  const double x0 = static_cast<double>((i % f.columns) * kPanelW);
  const double y0 = kTop + static_cast<double>((i / f.columns) * kPanelH);
  return fmt::format("set lmargin at screen {:.4f}\nset rmargin at screen {:.4f}\nset tmargin at screen {:.4f}\n"
                     "set bmargin at screen {:.4f}\nset title {}\n",
                     (x0 + kLeft) / w, (x0 + kPanelW - kRight) / w, 1.0 - (y0 + kAbove) / h,
                     1.0 - (y0 + kPanelH - kBelow) / h, dq(panel_title(f.panels[i])));
}

/// The shared key: one empty plot spanning the strip below the grid, whose entries (`entries`,
/// a plot list of NaN series with titles) are drawn in one row, outside every panel's data.
std::string key_strip(const StudyFigures& f, const std::string& entries) {
  const double h = height(f);
  return fmt::format("set lmargin at screen 0.01\nset rmargin at screen 0.99\nset tmargin at screen {:.4f}\n"
                     "set bmargin at screen 0.002\nunset title\nunset xlabel\nunset ylabel\nunset tics\nunset border\n"
                     "unset grid\nunset label\nunset logscale\nset xrange [0:1]\nset yrange [0:1]\n"
                     "set key center center horizontal maxrows 1 samplen 3 spacing 1.2 width 2\nplot {}\n",
                     (kBottom - 4) / h, entries);
}

/// Terminal, output and multiplot frame for one format around `body`.
std::string frame(const StudyFigures& f, const std::string& name, const std::string& ext, const std::string& title,
                  const std::string& body) {
  std::string g;
  if (ext == "svg") {
    g += fmt::format("set terminal svg size {},{} dynamic noenhanced font 'sans,11' background 'white'\n", width(f), height(f));
  } else {
    g += fmt::format("set terminal pngcairo size {},{} noenhanced font 'sans,10' background 'white'\n", width(f), height(f));
  }
  g += fmt::format("set output '{}.{}'\n", name, ext);
  g += "reset\nset datafile separator ','\nset grid ytics lc rgb '#dddddd'\nset border 3\nset tics nomirror\nunset key\n";
  g += "set style textbox opaque noborder\n";
  g += fmt::format("set multiplot title {} font ',14'\n", dq(title));
  g += body;
  g += "unset multiplot\nunset output\n";
  return g;
}

std::string both_formats(const StudyFigures& f, const std::string& name, const std::string& comment,
                         const std::string& title, const std::string& body) {
  std::string g = "# " + comment + "\n# Reads " + name + ".csv in the current folder; writes " + name + ".svg and " + name +
                  ".png (`gnuplot " + name + ".gp`).\n";
  g += frame(f, name, "svg", title, body);
  g += frame(f, name, "png", title, body);
  return g;
}

std::string strategy_tics(const StudyFigures& f) {
  std::string t = "set xtics (";
  for (std::size_t k = 0; k < f.strategies.size(); ++k) t += fmt::format("{}{} {}", k ? ", " : "", sq(f.strategies[k]), k);
  return t + fmt::format(") scale 0\nset xrange [-0.6:{}.6]\n", f.strategies.size() - 1);
}

/// Boxes stacked by drawing the cumulative sums of columns first..first+n-1 from the top down:
/// each box hides the lower part of the one before, leaving one band per component.
std::string stacked_boxes(const std::string& csv, std::size_t panel, int first, int n, const char* const* colours,
                          const std::string& scale) {
  std::string g;
  for (int c = n - 1; c >= 0; --c) {
    std::string sum = fmt::format("${}", first);
    for (int j = 1; j <= c; ++j) sum += fmt::format("+${}", first + j);
    g += fmt::format("{}'{}' using ($1=={} ? $6 : NaN):({}*({})) with boxes lc rgb '{}' notitle, \\\n",
                     c == n - 1 ? "" : "     ", csv, panel + 1, scale, sum, colours[c]);
  }
  return g;
}

/// Key entries for filled boxes.
std::string box_entries(const char* const* colours, const char* const* names, int n) {
  std::string e;
  for (int c = 0; c < n; ++c) {
    e += fmt::format("NaN with boxes fs solid 0.9 border lc rgb '#333333' lc rgb '{}' title {}, ", colours[c], sq(names[c]));
  }
  return e;
}

}  // namespace

void check_complete(const StudyFigures& f) {
  if (f.strategies.empty() || f.sizes.empty() || f.panels.empty() || f.columns == 0) {
    throw std::invalid_argument("study figures: no strategies, sizes or panels");
  }
  std::map<Key, int> seen;
  for (const auto& p : f.points) {
    if (p.panel >= f.panels.size()) throw std::invalid_argument(fmt::format("study figures: panel {} out of range", p.panel));
    if (!(p.time_s > 0) || !std::isfinite(p.time_s)) {
      throw std::invalid_argument(fmt::format("study figures: step time {} for panel {}, N = {}, {}", p.time_s, p.panel, p.dp, p.strategy));
    }
    if (++seen[{p.panel, p.dp, p.strategy}] > 1) {
      throw std::invalid_argument(fmt::format("study figures: two points for panel {}, N = {}, {}", p.panel, p.dp, p.strategy));
    }
  }
  const auto m = index_points(f);
  for (std::size_t i = 0; i < f.panels.size(); ++i) {
    for (auto n : f.sizes) {
      for (const auto& s : f.strategies) (void)at(m, i, n, s);
    }
  }
  if (f.points.size() != f.panels.size() * f.sizes.size() * f.strategies.size()) {
    throw std::invalid_argument("study figures: points for a size or strategy that is not listed");
  }
}

std::uint64_t bar_size(const StudyFigures& f) { return *std::max_element(f.sizes.begin(), f.sizes.end()); }

std::string size_label(std::uint64_t n) {
  if (n >= (1ULL << 20) && n % (1ULL << 20) == 0) return fmt::format("{}M", n >> 20);
  if (n >= 1024 && n % 1024 == 0) return fmt::format("{}K", n >> 10);
  return std::to_string(n);
}

std::string speedup_csv(const StudyFigures& f) {
  check_complete(f);
  const auto m = index_points(f);
  std::string csv = csv_line({"panel", "system", "model", "dp", "strategy", "fits", "replicated_fits", "time_if_it_fit_s",
                              "speedup_vs_replicated"});
  for (std::size_t i = 0; i < f.panels.size(); ++i) {
    for (const auto& s : f.strategies) {
      for (auto n : f.sizes) {
        const auto& p = at(m, i, n, s);
        const auto& base = at(m, i, n, f.strategies.front());
        csv += csv_line({std::to_string(i + 1), f.panels[i].system, f.panels[i].model, std::to_string(n), s, p.fits ? "1" : "0",
                         base.fits ? "1" : "0", g6(p.time_s), g6(base.time_s / p.time_s)});
      }
    }
  }
  return csv;
}

std::string breakdown_csv(const StudyFigures& f) {
  check_complete(f);
  const auto m = index_points(f);
  const auto n = bar_size(f);
  std::string csv = csv_line({"panel", "system", "model", "dp", "strategy", "position", "fits", "forward_s", "backward_s",
                              "exposed_comm_s", "update_s", "time_if_it_fit_s"});
  for (std::size_t i = 0; i < f.panels.size(); ++i) {
    for (std::size_t k = 0; k < f.strategies.size(); ++k) {
      const auto& p = at(m, i, n, f.strategies[k]);
      csv += csv_line({std::to_string(i + 1), f.panels[i].system, f.panels[i].model, std::to_string(n), p.strategy,
                       std::to_string(k), p.fits ? "1" : "0", g6(p.forward_s), g6(p.backward_s), g6(p.exposed_comm_s),
                       g6(p.update_s), g6(p.time_s)});
    }
  }
  return csv;
}

std::string memory_csv(const StudyFigures& f) {
  check_complete(f);
  const auto m = index_points(f);
  const auto n = bar_size(f);
  std::string csv = csv_line({"panel", "system", "model", "dp", "strategy", "position", "fits", "params_bytes", "grads_bytes",
                              "optimizer_bytes", "activations_bytes", "buffers_bytes", "peak_bytes", "hbm_bytes"});
  for (std::size_t i = 0; i < f.panels.size(); ++i) {
    for (std::size_t k = 0; k < f.strategies.size(); ++k) {
      const auto& p = at(m, i, n, f.strategies[k]);
      // Peak = the sum of the terms (models/memory/memory.hpp: all live at the end of backward).
      const double peak = p.params_bytes + p.grads_bytes + p.optimizer_bytes + p.activations_bytes + p.buffers_bytes;
      csv += csv_line({std::to_string(i + 1), f.panels[i].system, f.panels[i].model, std::to_string(n), p.strategy,
                       std::to_string(k), p.fits ? "1" : "0", bytes(p.params_bytes), bytes(p.grads_bytes),
                       bytes(p.optimizer_bytes), bytes(p.activations_bytes), bytes(p.buffers_bytes), bytes(peak),
                       std::to_string(f.panels[i].hbm_bytes)});
    }
  }
  return csv;
}

std::string speedup_gp(const StudyFigures& f) {
  check_complete(f);
  const double lo = static_cast<double>(f.sizes.front()) / 1.6, hi = static_cast<double>(f.sizes.back()) * 1.6;
  std::string tics = "set xtics (";
  for (std::size_t i = 0; i < f.sizes.size(); ++i) tics += fmt::format("{}'{}' {}", i ? ", " : "", size_label(f.sizes[i]), f.sizes[i]);
  tics += ")\n";
  const double mid = (static_cast<double>(f.strategies.size()) - 1) / 2.0;
  std::string body;
  for (std::size_t i = 0; i < f.panels.size(); ++i) {
    body += place_panel(f, i);
    body += fmt::format("set logscale x 2\nset xrange [{}:{}]\n", lo, hi) + tics;
    body += "set xlabel 'data-parallel devices N'\nset ylabel 'speedup over replicated'\nset format y '%.2f'\n";
    body += "set yrange [*:*]\nset offsets 0, 0, graph 0.08, graph 0.08\n";
    body += "plot ";
    for (std::size_t k = 0; k < f.strategies.size(); ++k) {
      const auto& st = style(k);
      // Strategies side by side around each N (a small horizontal dodge on the log axis) so
      // that equal speedups do not hide each other's markers.
      const std::string sel = fmt::format("$1=={} && strcol(5) eq {}", i + 1, sq(f.strategies[k]));
      const std::string x = fmt::format("$4*2**({:.2f})", (static_cast<double>(k) - mid) * 0.1);
      body += fmt::format("{}'speedup.csv' using ({} ? {} : NaN):9 with lines lw 2 dt {} lc rgb '{}' notitle, \\\n",
                          k ? "     " : "", sel, x, st.dash, st.colour);
      body += fmt::format("     '' using ({} && $6==1 ? {} : NaN):9 with points pt {} ps 1.4 lc rgb '{}' notitle, \\\n", sel, x,
                          st.point, st.colour);
      body += fmt::format("     '' using ({} && $6==0 ? {} : NaN):9 with points pt 2 ps 2 lw 2 lc rgb '{}' notitle{}", sel, x,
                          st.colour, k + 1 < f.strategies.size() ? ", \\\n" : "\n");
    }
  }
  std::string entries;
  for (std::size_t k = 0; k < f.strategies.size(); ++k) {
    const auto& st = style(k);
    entries += fmt::format("NaN with linespoints lw 2 dt {} pt {} ps 1.4 lc rgb '{}' title {}, ", st.dash, st.point, st.colour,
                           sq(f.strategies[k]));
  }
  body += key_strip(f, entries + "NaN with points pt 2 ps 2 lw 2 lc rgb 'black' title 'does not fit in HBM'");
  return both_formats(f, "speedup", "shardsim flagship study: speedup of each strategy over replicated (issue 17)",
                      f.title + ": speedup over replicated\n(x: does not fit in HBM, drawn at the speedup it would have if it fit)", body);
}

std::string breakdown_gp(const StudyFigures& f) {
  check_complete(f);
  const auto n = bar_size(f);
  std::string body;
  for (std::size_t i = 0; i < f.panels.size(); ++i) {
    body += place_panel(f, i) + strategy_tics(f);
    body += "set xlabel ''\nset ylabel 'step time (ms)'\nset format y '%g'\nset yrange [0:*]\nset offsets 0, 0, graph 0.1, 0\n";
    body += "set style fill solid 0.9 border lc rgb '#333333'\nset boxwidth 0.7\n";
    body += "plot " + stacked_boxes("breakdown.csv", i, 8, 4, kTimeColours, "1e3");
    body += fmt::format("     'breakdown.csv' using ($1=={} && $7==0 ? $6 : NaN):(1e3*($8+$9+$10+$11)):('no fit') with labels "
                        "offset 0,0.8 tc rgb '#cc0000' notitle\n",
                        i + 1);
  }
  std::string entries = box_entries(kTimeColours, kTimeNames, 4);
  entries.resize(entries.size() - 2);  // the trailing ", "
  body += key_strip(f, entries);
  return both_formats(f, "breakdown", "shardsim flagship study: step-time breakdown per strategy (issue 17)",
                      f.title + fmt::format(": step time at N = {}\n(no fit: does not fit in HBM; the bar is the time it would take if it fit)",
                                            size_label(n)),
                      body);
}

std::string memory_gp(const StudyFigures& f) {
  check_complete(f);
  const auto n = bar_size(f);
  std::string body;
  for (std::size_t i = 0; i < f.panels.size(); ++i) {
    const double hbm_gib = static_cast<double>(f.panels[i].hbm_bytes) / 1073741824.0;
    body += place_panel(f, i) + strategy_tics(f);
    body += "set xlabel ''\nset ylabel 'memory per device (GiB)'\nset format y '%g'\nset yrange [0:*]\nset offsets 0, 0, graph 0.1, 0\n";
    body += "set style fill solid 0.9 border lc rgb '#333333'\nset boxwidth 0.7\n";
    body += fmt::format("unset label\nset label 'HBM {:.4g} GiB' at graph 0.99, first {:.6g} right offset 0,0.8 tc rgb '#cc0000' "
                        "boxed front\n",
                        hbm_gib, hbm_gib);
    body += "plot " + stacked_boxes("memory.csv", i, 8, 5, kMemColours, "2**-30");
    body += fmt::format("     {:.6g} with lines lw 2 dt 2 lc rgb '#cc0000' notitle, \\\n", hbm_gib);
    body += fmt::format("     'memory.csv' using ($1=={} && $7==0 ? $6 : NaN):($13/2**30):('no fit') with labels offset 0,0.8 "
                        "tc rgb '#cc0000' notitle\n",
                        i + 1);
  }
  body += key_strip(f, box_entries(kMemColours, kMemNames, 5) + "NaN with lines lw 2 dt 2 lc rgb '#cc0000' title 'device HBM capacity'");
  return both_formats(f, "memory", "shardsim flagship study: memory per device against HBM (issue 17)",
                      f.title + fmt::format(": memory per device at N = {}", size_label(n)), body);
}

std::optional<std::string> run_gnuplot_in(const std::string& dir, const std::string& script) {
  // fork + exec, no shell: the folder and script names are passed as they are.
  const pid_t pid = ::fork();
  if (pid < 0) return std::string("cannot start gnuplot (fork failed)");
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    ::execlp("gnuplot", "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return std::string("gnuplot: waitpid failed");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return std::string("gnuplot not installed");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fmt::format("gnuplot failed on {} in {} (status {})", script, dir, status);
  }
  return std::nullopt;
}

}  // namespace shardsim::plot
