// shardsim topo show <topology> [--dot FILE] [--json]: what a topology spec builds (counts,
// links per class, bisection bandwidth, diameter, effective config), optionally as JSON and
// as a Graphviz file. Also registers `shardsim list topologies` (builders with their
// parameters, and the preset families with their valid sizes).
#include <fmt/format.h>

#include <fstream>

#include "analysis/cli/command.hpp"
#include "models/compute/device.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"
#include "topologies/describe.hpp"
#include "topologies/load.hpp"
#include "topologies/presets.hpp"
#include "topologies/registry.hpp"

namespace shardsim::cli {
namespace {

struct TopoShowOptions {
  std::string topology;
  std::string dot_file;
  bool json = false;
};

std::string join_rates(const std::vector<double>& v) {
  std::string s;
  for (double x : v) s += (s.empty() ? "" : ", ") + units::format_rate(x);
  return s;
}

// Per-rank device kinds (issue 16) as runs of consecutive ranks, "h100 (ranks 0-7), a100
// (ranks 8-15)"; each kind is checked against the device presets first (an unknown one names
// its "/nodes/i/device"), as the step resolves it.
std::string rank_device_runs(const topo::Topology& t) {
  for (const auto& k : t.rank_devices()) {
    if (!k.model.empty()) static_cast<void>(compute::device_for_model(k.model, k.where));
  }
  std::string out;
  for (std::size_t a = 0; a < t.num_devices();) {
    std::size_t b = a;
    while (b + 1 < t.num_devices() && t.device_model_of(b + 1) == t.device_model_of(a)) ++b;
    const std::string& m = t.device_model_of(a);
    out += fmt::format("{}{} (rank{} {})", out.empty() ? "" : ", ", m.empty() ? "unnamed" : m, a == b ? "" : "s",
                       a == b ? std::to_string(a) : fmt::format("{}-{}", a, b));
    a = b + 1;
  }
  return out;
}

void run_topo_show(const TopoShowOptions& o) {
  const topo::Topology t = topo::make_topology(o.topology, "topo show");
  const std::string kinds = t.rank_devices().empty() ? "" : rank_device_runs(t);
  const topo::TopologySummary s = topo::describe(t);
  if (!o.dot_file.empty()) {
    std::ofstream out(o.dot_file);
    if (!out) throw ConfigError("--dot", fmt::format("cannot write '{}'", o.dot_file), "a writable file path");
    out << topo::to_dot(t);
  }
  if (o.json) {
    auto j = topo::to_json(s, t);
    if (!t.rank_devices().empty()) {
      auto& per_rank = j["rank_devices"] = nlohmann::json::array();
      for (std::size_t r = 0; r < t.num_devices(); ++r) per_rank.push_back(t.device_model_of(r));
    }
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("topology:       {}\n", s.name);
  fmt::print("description:    {}\n", s.description);
  fmt::print("builder:        {} (router: {})\n", s.builder, t.router().name());
  if (!s.device_model.empty()) fmt::print("device model:   {}\n", s.device_model);
  if (!kinds.empty()) fmt::print("rank devices:   {}\n", kinds);
  fmt::print("devices:        {}\n", s.devices);
  fmt::print("switches:       {}\n", s.switches);
  fmt::print("directed links: {}\n", s.directed_links);
  for (const auto& c : s.classes) {
    fmt::print("  {:<9} {} links at {}\n", topo::to_string(c.cls), c.directed_links, join_rates(c.bandwidths_Bps));
  }
  fmt::print("injection:      {} per device (rank 0)\n", units::format_rate(s.injection_Bps));
  if (s.bisection_Bps) {
    fmt::print("bisection:      {} ({})\n", units::format_rate(*s.bisection_Bps), s.bisection_method);
  } else {
    fmt::print("bisection:      n/a (one device)\n");
  }
  if (s.diameter_hops) {
    fmt::print("diameter:       {} hops ({})\n", *s.diameter_hops, s.diameter_method);
  } else {
    fmt::print("diameter:       {}\n", s.diameter_method);
  }
  if (!t.torus_dims().empty()) {
    std::string dims, wrap;
    for (std::size_t d = 0; d < t.torus_dims().size(); ++d) {
      dims += (d ? "x" : "") + std::to_string(t.torus_dims()[d]);
      wrap += (d ? "x" : "") + std::string(t.torus_wrap()[d] ? "1" : "0");
    }
    fmt::print("torus:          {} (wrap {})\n", dims, wrap);
  }
  if (!t.device_groups().empty()) {
    fmt::print("device groups:  {} of {}\n", t.device_groups().size(), t.device_groups().front().size());
  }
  // A custom graph's node and link lists are summarised here (issue 17); --json has them.
  bool elided = false;
  const std::string outline = topo::config_outline(t.config(), &elided);
  fmt::print("config:         {}{}\n", outline, elided ? " (--json for the full config)" : "");
}

void setup_topo(CLI::App& root) {
  auto* topo_cmd = root.add_subcommand("topo", "Inspect topologies");
  topo_cmd->require_subcommand(1);
  auto opts = std::make_shared<TopoShowOptions>();
  auto* show = topo_cmd->add_subcommand("show", "Describe a topology: counts, link classes, bisection, diameter");
  show->add_option("topology", opts->topology,
                   "Preset (tpu-v3-1024, dgx-h100-64, ...), .json file, inline JSON or builder:key=value,...")
      ->required();
  show->add_option("--dot", opts->dot_file, "Also write the graph as Graphviz DOT to this file");
  show->add_flag("--json", opts->json, "Print one JSON object instead of a table");
  show->callback([opts] { run_topo_show(*opts); });
}

void print_topologies() {
  fmt::print("builders (JSON {{\"builder\": NAME, KEY: VALUE, ...}} or inline NAME:KEY=VALUE,...):\n");
  for (const auto& b : topo::builders()) {
    fmt::print("  {:<15} {}\n", b.name, b.description);
    for (const auto& p : b.params) {
      std::string type = topo::to_string(p.type);
      if (!p.unit.empty()) type += ", " + p.unit;
      if (!p.choices.empty()) {
        std::string c;
        for (const auto& x : p.choices) c += (c.empty() ? "" : "|") + x;
        type += ": " + c;
      }
      const std::string def = p.default_text ? "default " + *p.default_text : "required";
      fmt::print("      {:<17} ({}; {}) {}\n", p.key, type, def, p.doc);
    }
  }
  fmt::print("presets:\n");
  for (const auto& f : topo::preset_families()) {
    const std::string name = f.sized ? f.name + "-<" + f.unit + ">" : f.name;
    fmt::print("  {:<22} {}\n", name, f.description);
    fmt::print("      sizes: {}\n", f.sizes_text);
  }
}

const Registration reg{"topo", 70, setup_topo};
const ListRegistration list_reg{"topologies", "topology builders and presets", print_topologies};

}  // namespace
}  // namespace shardsim::cli
