#include "topologies/load.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "sim/error.hpp"
#include "sim/text/json_text.hpp"
#include "sim/text/strings.hpp"
#include "topologies/presets.hpp"
#include "topologies/registry.hpp"

namespace shardsim::topo {
namespace {

nlohmann::json parse_json(const std::string& text, const std::string& where) {
  return parse_json_text(text, where, "a JSON object describing a topology");
}

std::string preset_patterns() {
  std::string s;
  for (const auto& p : preset_families()) s += (s.empty() ? "" : ", ") + (p.sized ? p.name + "-<" + p.unit + ">" : p.name);
  return s;
}

}  // namespace

Topology topology_from_json(const nlohmann::json& j, const std::string& file) {
  return build_from_object(j, ParamContext{file, ""}, file);
}

Topology make_topology(const std::string& spec_in, const std::string& where) {
  const std::string spec(text::trim(spec_in));
  if (spec.empty()) {
    throw ConfigError(where, "an empty topology", "a preset name, a .json file, inline JSON or builder:key=value,...");
  }
  if (spec.front() == '{') return build_from_object(parse_json(spec, where), ParamContext{where, ""}, "inline");
  if (spec.size() > 5 && spec.substr(spec.size() - 5) == ".json") {
    std::ifstream in(spec);
    if (!in) throw ConfigError(where, fmt::format("cannot open '{}'", spec), "a readable JSON file");
    std::stringstream ss;
    ss << in.rdbuf();
    return topology_from_json(parse_json(ss.str(), spec), spec);
  }
  if (spec.find(':') != std::string::npos) {
    const auto obj = parse_inline_spec(spec, spec);
    const auto builder = obj.at("builder").get<std::string>();
    const BuilderInfo* b = find_builder(builder);
    if (!b) throw ConfigError(spec, fmt::format("unknown builder '{}'", builder), one_of(builder_registry().names()));
    for (const auto& p : b->params) {
      if (p.type == ParamType::json) {
        throw ConfigError(spec, fmt::format("builder '{}' in an inline spec", builder),
                          fmt::format("a JSON file or inline JSON (its key '{}' is a JSON list)", p.key));
      }
    }
    return build_from_object(obj, ParamContext{spec, ""}, spec);
  }
  if (auto t = make_preset(spec)) return std::move(*t);
  throw ConfigError(where, fmt::format("unknown topology '{}'", spec),
                    fmt::format("a preset ({}), a .json file, inline JSON or builder:key=value,... with builder one of {}",
                                preset_patterns(), builder_names()));
}

}  // namespace shardsim::topo
