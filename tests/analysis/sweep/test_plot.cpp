// Plots: the gnuplot script (exact text) from a result CSV, and every input error.
#include <doctest/doctest.h>

#include "analysis/plot/plot.hpp"
#include "sim/error.hpp"

using shardsim::plot::PlotOptions;
using shardsim::sweep::CsvData;

namespace {

CsvData data() {
  CsvData d;
  d.header = {"scenario", "status", "algorithm", "bw", "time_s"};
  d.rows = {{"0", "ok", "ring", "50", "2"},
            {"1", "ok", "torus", "25", "2"},
            {"2", "invalid", "ring", "75", ""},
            {"3", "ok", "ring", "25", "4"},
            {"4", "ok", "torus", "50", "1"}};
  return d;
}

PlotOptions opts(std::string x, std::string y, std::string by = "") {
  PlotOptions o;
  o.csv = "r.csv";
  o.x = std::move(x);
  o.y = std::move(y);
  o.by = std::move(by);
  o.out = "f.svg";
  return o;
}

}  // namespace

TEST_CASE("one line per --by value, points sorted by x, rows not ok left out") {
  CHECK(shardsim::plot::gnuplot_script(data(), opts("bw", "time_s", "algorithm")) ==
        "set terminal svg size 900,560 dynamic noenhanced font 'sans,12' background 'white'\n"
        "set output 'f.svg'\n"
        "set title 'time_s vs bw by algorithm'\n"
        "set xlabel 'bw'\nset ylabel 'time_s'\n"
        "set grid\nset key outside right top\n"
        "$s0 << EOD\n25 4\n50 2\nEOD\n"
        "$s1 << EOD\n25 2\n50 1\nEOD\n"
        "plot $s0 using 1:2 with linespoints linewidth 2 pointtype 1 title 'ring', \\\n"
        "     $s1 using 1:2 with linespoints linewidth 2 pointtype 2 title 'torus'\n");
}

TEST_CASE("a text x column becomes categories in order of first appearance; log axes; png; quotes") {
  auto o = opts("algorithm", "time_s");
  o.logy = true;
  o.out = "it's.png";
  CHECK(shardsim::plot::gnuplot_script(data(), o) ==
        "set terminal pngcairo size 900,560 noenhanced font 'sans,10'\n"
        "set output 'it''s.png'\n"
        "set title 'time_s vs algorithm'\n"
        "set xlabel 'algorithm'\nset ylabel 'time_s'\n"
        "set grid\nset key outside right top\n"
        "set logscale y\n"
        "set xtics rotate by -30 ('ring' 0, 'torus' 1)\n"
        "set xrange [-0.5:1.5]\n"
        "$s0 << EOD\n0 2\n0 4\n1 2\n1 1\nEOD\n"
        "plot $s0 using 1:2 with linespoints linewidth 2 pointtype 1 title 'time_s'\n");
}

TEST_CASE("plot input errors name the flag") {
  using shardsim::plot::gnuplot_script;
  CHECK_THROWS_WITH(gnuplot_script(data(), opts("bandwidth", "time_s")),
                    "--x: no column 'bandwidth' in r.csv; expected one of the columns: scenario, status, algorithm, bw, time_s");
  CHECK_THROWS_WITH(gnuplot_script(data(), opts("bw", "time", "algorithm")),
                    "--y: no column 'time' in r.csv; expected one of the columns: scenario, status, algorithm, bw, time_s");
  CHECK_THROWS_WITH(gnuplot_script(data(), opts("bw", "time_s", "algo")),
                    "--by: no column 'algo' in r.csv; expected one of the columns: scenario, status, algorithm, bw, time_s");
  CHECK_THROWS_WITH(gnuplot_script(data(), opts("bw", "algorithm")),
                    "--y: column 'algorithm' has 'ring' at line 2 of r.csv; expected numbers");
  auto o = opts("bw", "time_s");
  o.out = "f.pdf";
  CHECK_THROWS_WITH(gnuplot_script(data(), o), "-o: 'f.pdf'; expected a file ending in .svg or .png");
  o = opts("algorithm", "time_s");
  o.logx = true;
  CHECK_THROWS_WITH(gnuplot_script(data(), o), "--logx: column 'algorithm' is not numeric; expected numbers on a log axis");
  auto d = data();
  d.rows.push_back({"5", "ok", "ring", "0", "0"});
  o = opts("bw", "time_s");
  o.logy = true;
  CHECK_THROWS_WITH(gnuplot_script(d, o), "--logy: column 'time_s' has 0 at line 7 of r.csv; expected positive values on a log axis");
  o = opts("bw", "time_s");
  o.logx = true;
  CHECK_THROWS_WITH(gnuplot_script(d, o), "--logx: column 'bw' has 0 at line 7 of r.csv; expected positive values on a log axis");
  d.rows = {{"0", "invalid", "ring", "1", ""}};
  CHECK_THROWS_WITH(gnuplot_script(d, opts("bw", "time_s")),
                    "r.csv: no row with status ok and values in 'bw' and 'time_s'; expected at least one row to plot");
}

TEST_CASE("--status chooses the rows drawn (does-not-fit rows carry memory figures)") {
  auto d = data();
  d.rows.push_back({"5", "does-not-fit", "ring", "100", "9"});
  auto o = opts("bw", "time_s", "algorithm");
  o.statuses = {"ok", "does-not-fit"};
  const std::string g = shardsim::plot::gnuplot_script(d, o);
  CHECK(g.find("$s0 << EOD\n25 4\n50 2\n100 9\nEOD\n") != std::string::npos);
  o.statuses = {"invalid"};
  CHECK_THROWS_WITH(shardsim::plot::gnuplot_script(d, o),
                    "r.csv: no row with status invalid and values in 'bw' and 'time_s'; expected at least one row to plot");
}
