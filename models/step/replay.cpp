// The `trace` strategy as a graph builder: the recorded ops, as recorded (replay.hpp).
#include "models/step/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "models/step/graph_builders.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"

namespace shardsim::step::detail {

namespace {

const char* phase_name(OpPhase p) {
  switch (p) {
    case OpPhase::forward: return "forward";
    case OpPhase::backward: return "backward";
    case OpPhase::update: return "update";
  }
  return "?";
}

NodePhase node_phase(OpPhase p) {
  switch (p) {
    case OpPhase::forward: return NodePhase::forward;
    case OpPhase::backward: return NodePhase::backward;
    case OpPhase::update: return NodePhase::update;
  }
  return NodePhase::forward;
}

}  // namespace

RankProgram build_replay(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm,
                         StepResult&) {
  const auto math = c.precision == opt::Precision::mixed ? compute::MathType::bf16 : compute::MathType::fp32;
  const std::size_t n = w.recorded.size();
  const auto limit = comm.devices();
  RankProgram p(c.dp);
  std::map<std::uint32_t, std::uint32_t> role_of_size;  // group size -> role
  std::vector<std::uint32_t> op_of(n, 0);
  std::vector<std::uint32_t> deps;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& o = w.recorded[i];
    deps.clear();
    for (const auto d : o.deps) {
      if (d >= i) {
        throw ConfigError(fmt::format("{}/ops/{}", w.name, i), fmt::format("dependency on op {} in op '{}'", d, o.name),
                          "dependencies on earlier ops");
      }
      deps.push_back(op_of[d]);
    }
    if (o.collective) {
      const auto& col = *o.collective;
      if (limit && col.group_size > *limit) {
        throw ConfigError("--topology",
                          fmt::format("{} devices, but op '{}' (ops/{} of trace '{}') runs {} on {} ranks", *limit, o.name,
                                      i, w.name, coll::to_string(col.kind), col.group_size),
                          fmt::format("a topology with at least {} devices (a trace collective of g ranks runs on "
                                      "devices 0..g-1)",
                                      col.group_size));
      }
      // Format v1 records a group size g: rank r's group is the block of g ranks holding r,
      // ranks 0..g-1 for rank 0 (as `shardsim collective --ranks g`); a block past the step's
      // ranks (dp not a multiple of g) ends with them.
      auto [it, added] = role_of_size.try_emplace(col.group_size, 0);
      if (added) {
        const std::uint64_t g = std::max<std::uint32_t>(1, col.group_size);
        auto role = blocks_role(fmt::format("g{}", g), c.dp, g);
        for (int k = static_cast<int>(role.groups[0].size()); static_cast<std::uint64_t>(k) < g; ++k) role.groups[0].push_back(k);
        it->second = p.add_role(std::move(role));
      }
      op_of[i] = p.collective(it->second, 1, col.kind, col.size_bytes, deps,
                              c.record_timeline ? fmt::format("{} ({} {}, {} ranks)", o.name, coll::to_string(col.kind),
                                                              units::format_bytes(col.size_bytes), col.group_size)
                                                : std::string());
    } else {
      const double dur = (c.measured_compute && o.measured_s) ? *o.measured_s
                         : o.shape ? compute::op_time_s(dev, *o.shape, math, o.phase == OpPhase::backward)
                                   : dev.op_time_s(o.flops, o.bytes, math);
      op_of[i] = p.compute(node_phase(o.phase), dur, deps,
                           c.record_timeline ? fmt::format("{} ({})", o.name, phase_name(o.phase)) : std::string());
    }
  }
  return p;
}

}  // namespace shardsim::step::detail
