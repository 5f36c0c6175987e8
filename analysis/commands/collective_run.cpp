#include "analysis/commands/collective_run.hpp"

#include <fmt/format.h>

#include <limits>
#include <numeric>

#include "analysis/calibration/profile.hpp"
#include "analysis/output/table.hpp"
#include "analysis/output/timeline.hpp"
#include "models/collectives/algorithm.hpp"
#include "models/collectives/flow_eval.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"
#include "topologies/load.hpp"

namespace shardsim::cli {
namespace {

// One slice per transfer on the sender ("send -> r") and the receiver ("recv <- r"), with a
// flow arrow between them. Threads are per peer, so each link direction is one track.
void add_transfer(analysis::ChromeTrace& tr, const coll::TransferRecord& rec, std::uint64_t id) {
  const int src = static_cast<int>(rec.src), dst = static_cast<int>(rec.dst);
  const nlohmann::json args = {{"bytes", rec.bytes}, {"step", rec.step}, {"chunk", rec.chunk},
                               {"issue_us", analysis::us(rec.issue)}};
  const std::string name = fmt::format("step {} chunk {}", rec.step, rec.chunk);
  tr.slice(src, 1 + dst, name, "send", rec.start, rec.end, args);
  tr.slice(dst, 100000 + src, name, "recv", rec.start, rec.end, args);
  tr.flow(id, src, 1 + dst, rec.start, dst, 100000 + src, rec.end);
}

constexpr std::size_t kTimelineLimit = 200000;  // transfers; beyond that the file is unusable

}  // namespace

std::vector<CollectiveResult> run_collective(const CollectiveOptions& o) {
  topo::Topology t = topo::make_topology(o.topology, "--topology");
  const coll::OpKind kind = coll::op_from_string(o.op, "--op");
  const auto sizes = units::parse_size_range(o.bytes, "--bytes");
  const std::size_t devices = t.num_devices();
  if (o.ranks < 0 || static_cast<std::size_t>(o.ranks) > devices) {
    throw ConfigError("--ranks", fmt::format("{} ranks on a topology with {} devices", o.ranks, devices),
                      fmt::format("between 1 and {}", devices));
  }
  const std::size_t n = o.ranks == 0 ? devices : static_cast<std::size_t>(o.ranks);
  if (n < 2) throw ConfigError("--ranks", fmt::format("{} rank", n), "at least 2 ranks for a collective");
  if (o.fidelity != "analytical" && o.fidelity != "flow") {
    throw ConfigError("--fidelity", fmt::format("'{}'", o.fidelity), "analytical or flow");
  }
  if (!o.timeline.empty() && (o.fidelity != "flow" || sizes.size() != 1)) {
    throw ConfigError("--timeline", fmt::format("fidelity {} with {} sizes", o.fidelity, sizes.size()),
                      "--fidelity flow and a single --bytes size");
  }
  coll::CostParams params;
  if (!o.reduce_bw.empty()) params.reduce_Bps = units::parse_rate_Bps(o.reduce_bw, "--reduce-bw");
  if (!o.step_overhead.empty()) params.step_overhead_s = units::parse_seconds(o.step_overhead, "--step-overhead");
  params.chunks = o.chunks;
  nlohmann::json profile_config = nullptr;
  if (!o.profile.empty()) {
    if (!o.step_overhead.empty()) {
      throw ConfigError("--profile", "both --profile and --step-overhead",
                        "one of them (the profile's alpha is the step overhead)");
    }
    const calib::Profile prof = calib::load_profile(o.profile);
    auto applied = calib::apply_profile(t, prof, params);
    t = std::move(applied.topology);
    params = applied.cost;
    profile_config = {{"file", o.profile}, {"provenance", prof.provenance}};
    for (const auto& c : prof.classes) {
      profile_config["classes"][topo::to_string(c.cls)] = {
          {"alpha_s", c.alpha_s},
          {"efficiency", c.efficiency ? nlohmann::json(*c.efficiency) : nlohmann::json(nullptr)},
          {"bandwidth_Bps", c.bandwidth_Bps ? nlohmann::json(*c.bandwidth_Bps) : nlohmann::json(nullptr)}};
    }
  }

  coll::CollectiveOp op;
  op.kind = kind;
  op.group.resize(n);
  std::iota(op.group.begin(), op.group.end(), 0);

  nlohmann::json config = {{"topology", t.name},
                           {"topology_config", t.config},
                           {"op", coll::to_string(kind)},
                           {"ranks", n},
                           {"algorithm", o.algorithm},
                           {"fidelity", o.fidelity},
                           {"chunks", o.chunks},
                           {"reduce_Bps", std::isfinite(params.reduce_Bps) ? nlohmann::json(params.reduce_Bps)
                                                                            : nlohmann::json("inf")},
                           {"step_overhead_s", params.step_overhead_s},
                           {"profile", profile_config}};

  std::vector<CollectiveResult> out;
  for (auto size : sizes) {
    op.size_bytes = size;
    CollectiveResult r;
    const coll::Algorithm* algo = nullptr;
    coll::AnalyticalCost cost;
    if (o.algorithm == "auto") {
      auto choice = coll::choose_auto(t, op, params, o.fidelity == "flow");
      algo = choice.algorithm;
      cost = choice.cost;
      r.why = choice.why;
    } else {
      algo = &coll::find_algorithm(o.algorithm, kind, "--algorithm");
      if (auto why_not = algo->unsupported(t, op)) {
        throw ConfigError("--algorithm", fmt::format("'{}' cannot run {} here: {}", o.algorithm, o.op, *why_not),
                          "an algorithm that supports this op, group and topology (or auto)");
      }
      cost = algo->analytical(t, op, params);
    }
    r.op = coll::to_string(kind);
    r.algorithm = algo->name();
    r.fidelity = o.fidelity;
    r.topology = t.name;
    r.ranks = n;
    r.size_bytes = size;
    r.latency_s = cost.latency_s;
    r.bandwidth_s = cost.bandwidth_s;
    r.reduce_s = cost.reduce_s;
    r.time_s = cost.time_s;
    if (o.fidelity == "flow") {
      const coll::Schedule s = algo->build(t, op, params);
      for (const auto& st : s.steps) {
        for (const auto& x : st.transfers) {
          if (x.src_is_node || x.dst_is_node) {
            throw ConfigError("--fidelity", fmt::format("flow with algorithm '{}', whose transfers end in a switch",
                                                        algo->name()),
                              "--fidelity analytical (the flow evaluator has no switch endpoints yet)");
          }
        }
      }
      coll::FlowOptions fo;
      fo.cost = params;
      analysis::ChromeTrace trace;
      std::uint64_t next_id = 0;
      if (!o.timeline.empty()) {
        for (std::size_t i = 0; i < n; ++i) {
          trace.process(static_cast<int>(i), fmt::format("rank {} ({})", i, t.node(t.device(i)).name), static_cast<int>(i));
        }
        fo.on_transfer = [&](const coll::TransferRecord& rec) {
          if (next_id < kTimelineLimit) add_transfer(trace, rec, next_id);
          ++next_id;
        };
      }
      const auto fr = coll::evaluate_flow(t, op, s, fo);
      r.time_s = fr.time_s;
      r.events = fr.events;
      r.transfers = fr.transfers;
      r.fingerprint = fr.fingerprint;
      if (!o.timeline.empty()) {
        trace.metadata("config", config);
        trace.metadata("time_s", fr.time_s);
        trace.metadata("transfers", fr.transfers);
        trace.metadata("transfers_in_trace", std::min<std::uint64_t>(fr.transfers, kTimelineLimit));
        analysis::write_file(o.timeline, trace.str(), "--timeline");
      }
    }
    r.lower_bound_s = coll::lower_bound_s(t, op);
    if (r.time_s > 0) {
      r.algbw_GBps = static_cast<double>(size) / r.time_s / 1e9;
      r.busbw_GBps = r.algbw_GBps * coll::busbw_factor(kind, n);
    }
    r.config = config;
    out.push_back(std::move(r));
  }
  return out;
}

CollectiveOptions collective_options_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw ConfigError("collective", "flags that are not a JSON object", "an object of flags");
  CollectiveOptions o;
  auto str = [&](const std::string& key, const nlohmann::json& v) -> std::string {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number()) return v.dump();
    throw ConfigError("/" + key, fmt::format("{} {}", v.type_name(), v.dump()), "a string or a number");
  };
  for (const auto& [key, v] : j.items()) {
    if (key == "topology") {
      o.topology = v.is_object() ? v.dump() : str(key, v);
    } else if (key == "op") {
      o.op = str(key, v);
    } else if (key == "bytes") {
      o.bytes = str(key, v);
    } else if (key == "ranks") {
      if (!v.is_number_integer()) throw ConfigError("/ranks", fmt::format("{} {}", v.type_name(), v.dump()), "an integer");
      o.ranks = v.get<int>();
    } else if (key == "algorithm") {
      o.algorithm = str(key, v);
    } else if (key == "fidelity") {
      o.fidelity = str(key, v);
    } else if (key == "chunks") {
      if (!v.is_number_unsigned()) throw ConfigError("/chunks", fmt::format("{} {}", v.type_name(), v.dump()), "a non-negative integer");
      o.chunks = v.get<std::uint32_t>();
    } else if (key == "reduce-bw") {
      o.reduce_bw = str(key, v);
    } else if (key == "step-overhead") {
      o.step_overhead = str(key, v);
    } else if (key == "profile") {
      o.profile = str(key, v);
    } else {
      throw ConfigError("/" + key, fmt::format("unknown key '{}'", key),
                        "one of topology, op, bytes, ranks, algorithm, fidelity, chunks, reduce-bw, step-overhead, "
                        "profile");
    }
  }
  if (o.topology.empty()) throw ConfigError("/topology", "no topology", "a topology (preset, file or builder spec)");
  return o;
}

nlohmann::json to_json(const CollectiveResult& r) {
  nlohmann::json j = {{"op", r.op},
                      {"algorithm", r.algorithm},
                      {"fidelity", r.fidelity},
                      {"topology", r.topology},
                      {"ranks", r.ranks},
                      {"size_bytes", r.size_bytes},
                      {"time_s", r.time_s},
                      {"algbw_GBps", r.algbw_GBps},
                      {"busbw_GBps", r.busbw_GBps},
                      {"lower_bound_s", r.lower_bound_s},
                      {"analytical_latency_s", r.latency_s},
                      {"analytical_bandwidth_s", r.bandwidth_s},
                      {"analytical_reduce_s", r.reduce_s}};
  if (r.fidelity == "flow") {
    j["events"] = r.events;
    j["transfers"] = r.transfers;
    j["fingerprint"] = fmt::format("{:016x}", r.fingerprint);
  }
  if (!r.why.empty()) j["why"] = r.why;
  j["config"] = r.config;
  return j;
}

std::vector<std::string> csv_header() {
  return {"op", "algorithm", "fidelity", "topology", "ranks", "size_bytes", "time_s", "algbw_GBps", "busbw_GBps",
          "lower_bound_s"};
}

std::vector<std::string> csv_row(const CollectiveResult& r) {
  return {r.op,
          r.algorithm,
          r.fidelity,
          r.topology,
          std::to_string(r.ranks),
          std::to_string(r.size_bytes),
          analysis::num(r.time_s),
          analysis::num(r.algbw_GBps),
          analysis::num(r.busbw_GBps),
          analysis::num(r.lower_bound_s)};
}

}  // namespace shardsim::cli
