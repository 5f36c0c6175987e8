// shardsim plot results.csv --x COL --y COL [--by COL] [--logx] [--logy] -o fig.svg|png:
// draws a result CSV with gnuplot (analysis/plot/plot.hpp); the CSV stays the source of truth.
#include <memory>

#include "analysis/cli/command.hpp"
#include "analysis/plot/plot.hpp"

namespace shardsim::cli {
namespace {

struct PlotCliOptions {
  plot::PlotOptions plot;
  std::string script;
};

void setup_plot(CLI::App& root) {
  auto o = std::make_shared<PlotCliOptions>();
  auto* sub = root.add_subcommand("plot", "Draw a result CSV with gnuplot (SVG or PNG)");
  sub->add_option("csv", o->plot.csv, "Result CSV (e.g. from shardsim sweep)")->required()->check(CLI::ExistingFile);
  sub->add_option("--x", o->plot.x, "Column on the x axis (numbers, or text as categories)")->required();
  sub->add_option("--y", o->plot.y, "Column on the y axis (numbers)")->required();
  sub->add_option("--by", o->plot.by, "One line per distinct value of this column");
  sub->add_flag("--logx", o->plot.logx, "Logarithmic x axis");
  sub->add_flag("--logy", o->plot.logy, "Logarithmic y axis");
  sub->add_option("--title", o->plot.title, "Title (default: Y vs X by BY)");
  sub->add_option("-o,--out", o->plot.out, "Output figure: .svg or .png")->required();
  sub->add_option("--status", o->plot.statuses, "Statuses of the rows to draw (default ok; e.g. ok,does-not-fit)")
      ->delimiter(',')
      ->default_str("ok");
  sub->add_option("--script", o->script, "Also write the gnuplot script (data inline) to this file");
  sub->callback([o] { plot::draw_plot(o->plot, o->script); });
}

const Registration reg{"plot", 45, setup_plot};

}  // namespace
}  // namespace shardsim::cli
