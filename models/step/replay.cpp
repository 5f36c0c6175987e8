#include "models/step/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

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

}  // namespace

void replay_trace(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm, StepResult& r) {
  const auto math = c.precision == opt::Precision::mixed ? compute::MathType::bf16 : compute::MathType::fp32;
  const std::size_t n = w.recorded.size();
  const auto limit = comm.devices();
  std::vector<double> end(n, 0.0);
  std::vector<int> group;
  double compute_free = 0, comm_free = 0, last = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& o = w.recorded[i];
    double ready = 0;
    for (const auto d : o.deps) {
      if (d >= i) {
        throw ConfigError(fmt::format("{}/ops/{}", w.name, i), fmt::format("dependency on op {} in op '{}'", d, o.name),
                          "dependencies on earlier ops");
      }
      ready = std::max(ready, end[d]);
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
      group.resize(col.group_size);
      std::iota(group.begin(), group.end(), 0);
      const double dur = col.group_size > 1 ? comm.time_s(col.kind, col.size_bytes, group) : 0.0;
      const double start = std::max(comm_free, ready);
      end[i] = comm_free = start + dur;
      r.comm_s += dur;
      r.comm_bytes += static_cast<double>(col.size_bytes) * coll::busbw_factor(col.kind, col.group_size);
      ++r.collectives;
      if (c.record_timeline) {
        r.timeline.push_back({"comm",
                              fmt::format("{} ({} {}, {} ranks)", o.name, coll::to_string(col.kind),
                                          units::format_bytes(col.size_bytes), col.group_size),
                              start, end[i]});
      }
    } else {
      const double dur = (c.measured_compute && o.measured_s) ? *o.measured_s : dev.op_time_s(o.flops, o.bytes, math);
      const double start = std::max(compute_free, ready);
      end[i] = compute_free = start + dur;
      (o.phase == OpPhase::forward ? r.forward_s : o.phase == OpPhase::backward ? r.backward_s : r.update_s) += dur;
      if (c.record_timeline) r.timeline.push_back({"compute", fmt::format("{} ({})", o.name, phase_name(o.phase)), start, end[i]});
    }
    last = std::max(last, end[i]);
  }
  r.step_time_s = last;
  r.exposed_comm_s = std::max(0.0, last - r.forward_s - r.backward_s - r.update_s);
}

}  // namespace shardsim::step::detail
