#pragma once
// Entry points for turning user input into a Topology.
//
// make_topology(spec, where) accepts, in this order of checks:
//   - inline JSON (the text starts with '{'): {"builder": "torus", "dims": [32, 32], ...}
//   - a path to a JSON file (ends in ".json"), holding the same object
//   - an inline builder spec "builder:key=value,...", e.g. torus:dims=32x32,bw=100GB/s,lat=1us
//   - a preset name: tpu-v2-<chips>, tpu-v3-<chips>, tpu-v4-<chips>, tpu-v5p-<chips>,
//     tpu-v5e-<chips>, dgx-a100-<gpus>, dgx-h100-<gpus>, dgx-h200-<gpus>, gb200-nvl72
// Errors are ConfigErrors whose location names the input: "<file>: <JSON pointer>" for a file,
// "<spec>: /<key>" for an inline spec, "<where>: <pointer>" for inline JSON, the preset name
// for a preset, and `where` (a flag name, a test name) when the input is none of these.
// Topology.name records the spec (preset name, spec text, file path or the "name" key) and
// Topology.config the effective configuration (defaults filled in).
#include <nlohmann/json.hpp>

#include <string>

#include "topologies/topology.hpp"

namespace shardsim::topo {

Topology make_topology(const std::string& spec, const std::string& where);

/// Builds from a parsed JSON object; `file` names it in errors ("topo.json: /links/3/dst").
Topology topology_from_json(const nlohmann::json& j, const std::string& file);

}  // namespace shardsim::topo
