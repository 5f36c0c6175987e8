#include "analysis/commands/collective_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <string_view>

#include "analysis/calibration/profile.hpp"
#include "analysis/output/table.hpp"
#include "analysis/output/timeline.hpp"
#include "models/collectives/algorithm.hpp"
#include "models/collectives/collective_run.hpp"
#include "models/collectives/flow_eval.hpp"
#include "models/collectives/nccl_model.hpp"
#include "sim/error.hpp"
#include "sim/text/strings.hpp"
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

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const auto at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

// A non-negative decimal integer, digits only.
std::optional<std::uint64_t> parse_index(std::string_view s) {
  s = trim(s);
  if (s.empty() || s.size() > 18) return std::nullopt;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The collective on every group at once, one CollectiveRun per group on one simulator and one
// flow network (DESIGN 8), all started at time 0. Sets time_s, events, transfers, fingerprint.
void run_groups_flow(const topo::Topology& t, const std::vector<coll::CollectiveOp>& ops,
                     const std::vector<const coll::Algorithm*>& algos, const coll::CostParams& params,
                     std::vector<CollectiveResult>& rows) {
  sim::Simulator sim;
  sim::FlowNetwork net(sim);
  coll::add_topology_links(net, t);
  std::vector<coll::Schedule> schedules;
  schedules.reserve(ops.size());
  for (std::size_t g = 0; g < ops.size(); ++g) schedules.push_back(algos[g]->build(t, ops[g], params));
  coll::FlowOptions fo;
  fo.cost = params;
  std::vector<std::unique_ptr<coll::CollectiveRun>> runs;
  runs.reserve(ops.size());
  for (std::size_t g = 0; g < ops.size(); ++g) {
    runs.push_back(std::make_unique<coll::CollectiveRun>(sim, net, t, ops[g], schedules[g], fo));
  }
  sim.enable_fingerprint();
  for (auto& r : runs) r->start(Time::zero(), nullptr);
  sim.run();
  for (std::size_t g = 0; g < runs.size(); ++g) {
    if (!runs[g]->done()) {
      throw std::logic_error(fmt::format("schedule '{}' deadlocked on group {}: {} rank-chunks unfinished at {}",
                                         schedules[g].algorithm, g + 1, runs[g]->unfinished(), sim.now()));
    }
    rows[g].time_s = runs[g]->finish_time().to_seconds();
    rows[g].transfers = runs[g]->transfers();
    rows[g].events = sim.event_count();
    rows[g].fingerprint = sim.fingerprint();
  }
}

}  // namespace

std::vector<std::vector<int>> parse_groups(const std::string& spec, std::size_t devices, const std::string& topology,
                                           int ranks) {
  const std::string where = "--groups";
  const std::string_view text = trim(spec);
  if (text.empty()) {
    throw ConfigError(where, "an empty spec", "groups separated by ';' (ranks as 0,1,2 or ranges 0-7) or stride:K");
  }
  std::vector<std::vector<int>> groups;
  if (text.starts_with("stride:")) {
    const std::size_t n = ranks > 0 ? static_cast<std::size_t>(ranks) : devices;
    const auto k = parse_index(text.substr(7));
    if (!k || *k < 1 || *k > n / 2) {
      throw ConfigError(where, fmt::format("'{}'", spec),
                        fmt::format("stride:K with K from 1 to {} (K groups of at least 2 of the {} ranks)", n / 2, n));
    }
    groups.resize(*k);
    for (std::size_t i = 0; i < *k; ++i) {
      for (std::size_t r = i; r < n; r += *k) groups[i].push_back(static_cast<int>(r));
    }
    return groups;
  }
  if (ranks > 0) {
    throw ConfigError(where, fmt::format("'{}' with --ranks {}", spec, ranks),
                      "--ranks only with stride:K (it sets the ranks that stride:K divides)");
  }
  std::vector<std::size_t> owner(devices, 0);  // group number (1-based) holding each rank
  const auto entries = split(text, ';');
  for (std::size_t gi = 0; gi < entries.size(); ++gi) {
    const std::size_t k = gi + 1;
    const std::string_view entry = trim(entries[gi]);
    if (entry.empty()) {
      throw ConfigError(where, fmt::format("empty group {} in '{}'", k, spec),
                        "a comma list of ranks and ranges (such as 0-7,12) in every group");
    }
    std::vector<int> g;
    for (std::string_view item : split(entry, ',')) {
      item = trim(item);
      std::optional<std::uint64_t> a, b;
      if (const auto dash = item.find('-'); dash != std::string_view::npos) {
        a = parse_index(item.substr(0, dash));
        b = parse_index(item.substr(dash + 1));
      } else {
        a = b = parse_index(item);
      }
      if (!a || !b || *a > *b) {
        throw ConfigError(where, fmt::format("malformed rank or range '{}' in group {}", item, k),
                          "a rank (5) or a range A-B with A <= B (0-7)");
      }
      if (*b >= devices) {
        throw ConfigError(where, fmt::format("rank {} in group {} is outside the topology", *a >= devices ? *a : *b, k),
                          fmt::format("ranks 0..{} of topology '{}'", devices - 1, topology));
      }
      for (std::uint64_t r = *a; r <= *b; ++r) {
        if (owner[r] == k) throw ConfigError(where, fmt::format("rank {} twice in group {}", r, k), "each rank once");
        if (owner[r] != 0) {
          throw ConfigError(where, fmt::format("rank {} in groups {} and {}", r, owner[r], k),
                            "each rank in one group at most");
        }
        owner[r] = k;
        g.push_back(static_cast<int>(r));
      }
    }
    if (g.size() < 2) {
      throw ConfigError(where, fmt::format("group {} ('{}') has 1 rank", k, entry), "at least 2 ranks in every group");
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

std::string format_ranks(const std::vector<int>& v) {
  if (v.size() >= 4 && v[1] - v[0] > 1) {
    const int d = v[1] - v[0];
    bool ap = true;
    for (std::size_t i = 1; i < v.size() && ap; ++i) ap = v[i] - v[i - 1] == d;
    if (ap) return fmt::format("{},{},..,{} ({} ranks)", v[0], v[1], v.back(), v.size());
  }
  std::string out;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + (j > i ? fmt::format("{}-{}", v[i], v[j]) : std::to_string(v[i]));
    i = j + 1;
  }
  return out;
}

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
  // One group of the first n devices, or the --groups, run at once.
  const bool multi = o.groups.has_value();
  std::vector<std::vector<int>> groups;
  if (multi) {
    groups = parse_groups(*o.groups, devices, t.name(), o.ranks);
    if (!o.timeline.empty()) throw ConfigError("--timeline", "with --groups", "a single group (no --groups)");
    if (o.ranks_per_node > 0) throw ConfigError("--ranks-per-node", "with --groups", "one of --groups and --ranks-per-node");
  } else if (o.ranks_per_node > 0) {
    groups.push_back(coll::placed_group(t, n, static_cast<std::size_t>(o.ranks_per_node), "--ranks-per-node"));
  } else {
    groups.emplace_back(n);
    std::iota(groups[0].begin(), groups[0].end(), 0);
  }
  if (!o.nccl_algo.empty() && o.algorithm != "auto") {
    throw ConfigError("--nccl-algo", fmt::format("with --algorithm {}", o.algorithm), "--algorithm auto (NCCL's choice)");
  }
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
  op.group = groups[0];

  nlohmann::json config = {{"topology", t.name()},
                           {"topology_config", t.config()},
                           {"op", coll::to_string(kind)},
                           {"ranks", n},
                           {"algorithm", o.algorithm},
                           {"fidelity", o.fidelity},
                           {"chunks", o.chunks},
                           {"reduce_Bps", std::isfinite(params.reduce_Bps) ? nlohmann::json(params.reduce_Bps)
                                                                            : nlohmann::json("inf")},
                           {"step_overhead_s", params.step_overhead_s},
                           {"profile", profile_config}};
  if (multi) config["groups"] = *o.groups;
  if (o.ranks_per_node > 0) config["ranks_per_node"] = o.ranks_per_node;

  std::vector<CollectiveResult> out;
  for (auto size : sizes) {
    std::vector<CollectiveResult> rows(groups.size());
    std::vector<coll::CollectiveOp> ops(groups.size(), op);
    std::vector<const coll::Algorithm*> algos(groups.size(), nullptr);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      ops[g].group = groups[g];
      ops[g].size_bytes = size;
      CollectiveResult& r = rows[g];
      coll::AnalyticalCost cost;
      std::string shown;  // the name printed, when not the registered algorithm's
      coll::NcclOptions no;
      if (o.algorithm == "auto" && !o.nccl_algo.empty()) no.allowed = coll::nccl_algo_mask(o.nccl_algo, "--nccl-algo");
      std::optional<coll::NcclAuto> nccl;
      if (o.algorithm == "auto") nccl = coll::nccl_auto(t, ops[g], no);
      if (nccl) {
        // GPU topology: NCCL's own model and choice (models/collectives/nccl_model.hpp); at flow
        // fidelity the registered schedule closest to NCCL's algorithm runs.
        algos[g] = nccl->schedule;
        cost = nccl->cost;
        r.why = nccl->pred.why;
        shown = "nccl:" + nccl->pred.name;
        if (o.fidelity == "flow") r.schedule = nccl->schedule->name();
      } else if (o.algorithm == "auto") {
        if (!o.nccl_algo.empty()) {
          throw ConfigError("--nccl-algo", fmt::format("'{}' on topology '{}'", o.nccl_algo, t.name()),
                            fmt::format("a GPU topology for the NCCL model ({})", *coll::nccl_unsupported(t, ops[g])));
        }
        auto choice = coll::choose_auto(t, ops[g], params, o.fidelity == "flow");
        algos[g] = choice.algorithm;
        cost = choice.cost;
        r.why = choice.why;
      } else {
        algos[g] = &coll::find_algorithm(o.algorithm, kind, "--algorithm");
        if (auto why_not = algos[g]->unsupported(t, ops[g])) {
          throw ConfigError("--algorithm",
                            fmt::format("'{}' cannot run {} here: {}{}", o.algorithm, o.op, *why_not,
                                        multi ? fmt::format(" (group {})", g + 1) : std::string()),
                            "an algorithm that supports this op, group and topology (or auto)");
        }
        cost = algos[g]->analytical(t, ops[g], params);
      }
      r.op = coll::to_string(kind);
      r.algorithm = shown.empty() ? algos[g]->name() : shown;
      r.fidelity = o.fidelity;
      r.topology = t.name();
      r.ranks = groups[g].size();
      if (multi) r.group = groups[g];
      r.size_bytes = size;
      r.latency_s = cost.latency_s;
      r.bandwidth_s = cost.bandwidth_s;
      r.reduce_s = cost.reduce_s;
      r.time_s = cost.time_s;
    }
    if (o.fidelity == "flow" && multi) {
      run_groups_flow(t, ops, algos, params, rows);
    } else if (o.fidelity == "flow") {
      CollectiveResult& r = rows[0];
      const coll::Schedule s = algos[0]->build(t, ops[0], params);
      coll::FlowOptions fo;
      fo.cost = params;
      analysis::ChromeTrace trace;
      std::uint64_t next_id = 0;
      if (!o.timeline.empty()) {
        for (std::size_t i = 0; i < n; ++i) {
          trace.process(static_cast<int>(i),
                        fmt::format("rank {} ({})", i, t.node(t.device(static_cast<std::size_t>(groups[0][i]))).name),
                        static_cast<int>(i));
        }
        fo.on_transfer = [&](const coll::TransferRecord& rec) {
          if (next_id < kTimelineLimit) add_transfer(trace, rec, next_id);
          ++next_id;
        };
      }
      const auto fr = coll::evaluate_flow(t, ops[0], s, fo);
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
    for (std::size_t g = 0; g < groups.size(); ++g) {
      CollectiveResult& r = rows[g];
      r.lower_bound_s = coll::lower_bound_s(t, ops[g]);
      if (r.time_s > 0) {
        r.algbw_GBps = static_cast<double>(size) / r.time_s / 1e9;
        r.busbw_GBps = r.algbw_GBps * coll::busbw_factor(kind, r.ranks);
      }
      r.config = config;
      out.push_back(std::move(r));
    }
  }
  return out;
}

namespace {

std::string option_text(const std::string& key, const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return v.dump();
  throw ConfigError("/" + key, fmt::format("{} {}", v.type_name(), v.dump()), "a string or a number");
}

int option_int(const std::string& key, const nlohmann::json& v) {
  if (!v.is_number_integer()) throw ConfigError("/" + key, fmt::format("{} {}", v.type_name(), v.dump()), "an integer");
  return v.get<int>();
}

// The collective command's JSON keys (the CLI's flags without "--"), declared once: the parser
// dispatches on this table and an unknown key lists its names.
struct OptionKey {
  std::string_view key;
  void (*set)(CollectiveOptions&, const std::string& key, const nlohmann::json& v);
};
const std::array<OptionKey, 13> kOptionKeys{{
    {"topology", [](CollectiveOptions& o, const std::string& k, const nlohmann::json& v) {
       o.topology = v.is_object() ? v.dump() : option_text(k, v);
     }},
    {"op", [](CollectiveOptions& o, const std::string& k, const nlohmann::json& v) { o.op = option_text(k, v); }},
    {"bytes", [](CollectiveOptions& o, const std::string& k, const nlohmann::json& v) { o.bytes = option_text(k, v); }},
    {"ranks", [](CollectiveOptions& o, const std::string& k, const nlohmann::json& v) { o.ranks = option_int(k, v); }},
    {"ranks-per-node",
     [](CollectiveOptions& o, const std::string& k, const nlohmann::json& v) { o.ranks_per_node = option_int(k, v); }},
    {"algorithm",
     [](CollectiveOptions& o, const std::string& k, const nlohmann::json& v) { o.algorithm = option_text(k, v); }},
    {"nccl-algo",
     [](CollectiveOptions& o, const std::string& k, const nlohmann::json& v) { o.nccl_algo = option_text(k, v); }},
    {"fidelity",
     [](CollectiveOptions& o, const std::string& k, const nlohmann::json& v) { o.fidelity = option_text(k, v); }},
    {"chunks",
     [](CollectiveOptions& o, const std::string&, const nlohmann::json& v) {
       if (!v.is_number_unsigned()) throw ConfigError("/chunks", fmt::format("{} {}", v.type_name(), v.dump()), "a non-negative integer");
       o.chunks = v.get<std::uint32_t>();
     }},
    {"reduce-bw",
     [](CollectiveOptions& o, const std::string& k, const nlohmann::json& v) { o.reduce_bw = option_text(k, v); }},
    {"step-overhead",
     [](CollectiveOptions& o, const std::string& k, const nlohmann::json& v) { o.step_overhead = option_text(k, v); }},
    {"profile", [](CollectiveOptions& o, const std::string& k, const nlohmann::json& v) { o.profile = option_text(k, v); }},
    {"groups", [](CollectiveOptions& o, const std::string& k, const nlohmann::json& v) { o.groups = option_text(k, v); }},
}};

}  // namespace

CollectiveOptions collective_options_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw ConfigError("collective", "flags that are not a JSON object", "an object of flags");
  CollectiveOptions o;
  for (const auto& item : j.items()) {
    // A named copy, not a structured binding: clang 14 (Debian 12) cannot capture bindings.
    const std::string& key = item.key();
    const nlohmann::json& v = item.value();
    const auto* entry = std::find_if(kOptionKeys.begin(), kOptionKeys.end(), [&](const OptionKey& e) { return e.key == key; });
    if (entry == kOptionKeys.end()) {
      std::vector<std::string> names;
      for (const auto& e : kOptionKeys) names.emplace_back(e.key);
      throw ConfigError("/" + key, fmt::format("unknown key '{}'", key), "one of " + text::join(names));
    }
    entry->set(o, key, v);
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
  if (!r.schedule.empty()) j["schedule"] = r.schedule;
  if (r.fidelity == "flow") {
    j["events"] = r.events;
    j["transfers"] = r.transfers;
    j["fingerprint"] = fmt::format("{:016x}", r.fingerprint);
  }
  if (!r.group.empty()) {
    j["group"] = r.group;
    j["concurrency"] = r.fidelity == "flow" ? "all groups at once on one shared flow network (max-min)"
                                            : "none: each group's closed form, alone (use --fidelity flow)";
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
