#pragma once
// Topology presets: families of real systems whose names carry their size
// (tpu-v3-1024, dgx-h100-64) or are fixed (gb200-nvl72). Each family is a JSON file under
// topologies/presets/ (every number with its source), embedded in the library at build
// time so the binary needs no data directory.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "topologies/topology.hpp"

namespace shardsim::topo {

struct PresetFamily {
  std::string name;         ///< "tpu-v3"
  std::string file;         ///< "presets/tpu-v3.json"
  std::string description;
  std::string device_model;
  std::string unit;         ///< "chips", "GPUs"
  bool sized = true;        ///< names are <family>-<size>; false: the family name itself
  std::string sizes_text;   ///< human list of valid sizes, used in errors and `list`
  nlohmann::json data;      ///< the file's content
};

/// All families, sorted by name.
const std::vector<PresetFamily>& preset_families();

/// The preset `name` (e.g. "tpu-v3-512"): nullopt when no family matches the name; a
/// ConfigError (where = name) when a family matches but the size is not one of its sizes.
/// Sets name, description, device_model and config ({"preset": name, ...builder config}).
std::optional<Topology> make_preset(const std::string& name);

/// Preset names, family by family: every TPU slice, the DGX sizes 8, 16, 32, ... (powers of
/// two up to the family maximum; any multiple of 8 is valid) and the fixed presets.
std::vector<std::string> preset_names();

}  // namespace shardsim::topo
