// shardsim list [CATEGORY]: prints registered items with descriptions and parameters. The
// categories come from the registries (analysis/cli/command.hpp ListRegistration).
#include <fmt/format.h>

#include <algorithm>

#include "analysis/cli/command.hpp"
#include "sim/registry.hpp"

namespace shardsim::cli {
namespace {

struct ListOptions {
  std::string category;
};

void run_list(const ListOptions& o) {
  auto entries = list_registry();
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.category < b.category; });
  if (o.category.empty()) {
    for (const auto& e : entries) {
      fmt::print("== {} ({})\n", e.category, e.doc);
      e.print();
      fmt::print("\n");
    }
    return;
  }
  for (const auto& e : entries) {
    if (e.category == o.category) {
      e.print();
      return;
    }
  }
  std::vector<std::string> valid;
  for (const auto& e : entries) valid.push_back(e.category);
  throw_unknown("category", o.category, "shardsim list", valid);
}

void setup_list(CLI::App& root) {
  auto opts = std::make_shared<ListOptions>();
  auto* sub = root.add_subcommand("list", "List registered topologies, algorithms, models, devices, ...");
  sub->add_option("category", opts->category, "What to list (all categories when omitted)");
  sub->callback([opts] { run_list(*opts); });
}

const Registration reg{"list", 90, setup_list};

}  // namespace
}  // namespace shardsim::cli
