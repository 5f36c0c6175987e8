#include "traces/importers/native.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <queue>
#include <unordered_map>

#include "sim/error.hpp"
#include "sim/text/json_text.hpp"

namespace shardsim::importers {

namespace {

/// Native collective kind, or nullopt for kinds the native format does not simulate.
std::optional<coll::OpKind> native_kind(CommKind k) {
  switch (k) {
    case CommKind::all_reduce: return coll::OpKind::allreduce;
    case CommKind::reduce: return coll::OpKind::reduce;
    case CommKind::all_gather: return coll::OpKind::allgather;
    case CommKind::broadcast: return coll::OpKind::broadcast;
    case CommKind::all_to_all: return coll::OpKind::alltoall;
    case CommKind::reduce_scatter:
    case CommKind::reduce_scatter_block: return coll::OpKind::reducescatter;
    default: return std::nullopt;
  }
}

std::string stem(const std::string& path) { return std::filesystem::path(path).filename().string(); }

/// Sets op.collective when kind and size allow; otherwise counts the op as not simulated.
void set_collective(trace::Op& op, CommKind kind, std::optional<std::uint64_t> size,
                    std::optional<std::uint32_t> group, nlohmann::json& skipped) {
  const auto nk = native_kind(kind);
  if (nk && size && *size > 0 && group && *group > 0) {
    op.collective = trace::Collective{*nk, *size, *group};
    return;
  }
  const std::string why = !nk ? fmt::format("kind {}", to_string(kind))
                              : (!size || *size == 0 ? "size unknown" : "group size unknown");
  skipped[why] = skipped.value(why, 0) + 1;
}

bool simulated(const ChakraNode& n) {
  if (n.is_cpu_op.value_or(false)) return false;
  switch (n.type) {
    case ChakraNodeType::comp:
    case ChakraNodeType::comm_coll:
    case ChakraNodeType::comm_send:
    case ChakraNodeType::comm_recv:
    case ChakraNodeType::mem_load:
    case ChakraNodeType::mem_store: return true;
    default: return false;
  }
}

/// Topological order of a validated (acyclic) Chakra trace, ties broken by file order.
std::vector<std::size_t> topo_order(const ChakraTrace& t) {
  const std::size_t n = t.nodes.size();
  std::unordered_map<std::uint64_t, std::size_t> index;
  for (std::size_t i = 0; i < n; ++i) index.emplace(t.nodes[i].id, i);
  std::vector<std::vector<std::size_t>> children(n);
  std::vector<std::size_t> indeg(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto* deps : {&t.nodes[i].ctrl_deps, &t.nodes[i].data_deps}) {
      for (auto d : *deps) {
        children[index.at(d)].push_back(i);
        ++indeg[i];
      }
    }
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (indeg[i] == 0) ready.push(i);
  }
  std::vector<std::size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const auto u = ready.top();
    ready.pop();
    order.push_back(u);
    for (auto c : children[u]) {
      if (--indeg[c] == 0) ready.push(c);
    }
  }
  return order;
}

// One rank's file. `rank` >= 0 (format v2): collectives get their process group's ranks from
// `group_of` (the node's pg_name), sends and receives with a peer become point-to-point ops.
using GroupOf = std::function<std::vector<int>(const ChakraNode&)>;

trace::Trace chakra_one(const ChakraTrace& t, std::uint32_t group, nlohmann::json& skipped, std::size_t& dropped,
                        int rank = -1, const GroupOf* group_of = nullptr) {
  trace::Trace out;
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> resolved;  // node id -> kept deps
  for (const auto i : topo_order(t)) {
    const auto& n = t.nodes[i];
    std::vector<std::uint64_t> deps;
    for (const auto* list : {&n.ctrl_deps, &n.data_deps}) {
      for (auto d : *list) {
        const auto& r = resolved.at(d);
        deps.insert(deps.end(), r.begin(), r.end());
      }
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    if (!simulated(n)) {
      ++dropped;
      resolved[n.id] = std::move(deps);
      continue;
    }
    resolved[n.id] = {n.id};
    trace::Op op;
    op.id = n.id;
    op.name = n.name.empty() ? fmt::format("node {}", n.id) : n.name;
    op.phase = trace::Phase::other;
    op.flops = static_cast<double>(n.num_ops.value_or(0));
    op.bytes = static_cast<double>(n.tensor_size_bytes.value_or(0));
    if (n.duration_us) op.duration_s = *n.duration_us * 1e-6;
    if (rank >= 0) op.rank = rank;
    if (n.type == ChakraNodeType::comm_coll) {
      op.bytes = 0;
      if (rank >= 0) {
        const auto members = (*group_of)(n);
        set_collective(op, *n.comm_kind, n.comm_size_bytes, static_cast<std::uint32_t>(members.size()), skipped);
        if (op.collective) op.collective->ranks = members;
      } else {
        set_collective(op, *n.comm_kind, n.comm_size_bytes, group, skipped);
      }
    } else if (n.type == ChakraNodeType::comm_send || n.type == ChakraNodeType::comm_recv) {
      op.bytes = 0;
      const bool send = n.type == ChakraNodeType::comm_send;
      const auto peer = send ? n.comm_dst : n.comm_src;
      if (rank >= 0 && peer && *peer >= 0 && *peer <= 0x7fffffff && *peer != rank && n.comm_size_bytes &&
          *n.comm_size_bytes > 0) {
        op.p2p = trace::P2P{send, static_cast<int>(*peer), *n.comm_size_bytes,
                            static_cast<std::uint64_t>(std::max<std::int64_t>(0, n.comm_tag.value_or(0)))};
      } else {
        set_collective(op, send ? CommKind::send : CommKind::recv, n.comm_size_bytes, group, skipped);
      }
    }
    op.deps = std::move(deps);
    out.ops.push_back(std::move(op));
  }
  return out;
}

}  // namespace

namespace {

// Positions of the files in ascending rank order.
std::vector<std::size_t> by_rank(const std::vector<int>& rank_of) {
  std::vector<std::size_t> order(rank_of.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rank_of[a] < rank_of[b]; });
  return order;
}

// The rank of each file: N of "<prefix>.N.et" (or .json, optionally .gz) when every file is so
// named with distinct N, else its position.
std::vector<int> file_ranks(const std::vector<ChakraTrace>& files) {
  static const std::regex pattern(R"(.*\.([0-9]{1,9})\.(et|json)(\.gz)?$)");
  std::vector<int> out;
  std::set<int> seen;
  for (const auto& f : files) {
    std::smatch m;
    const std::string name = stem(f.source);
    if (!std::regex_match(name, m, pattern) || !seen.insert(std::stoi(m[1].str())).second) {
      out.clear();
      for (std::size_t k = 0; k < files.size(); ++k) out.push_back(static_cast<int>(k));
      return out;
    }
    out.push_back(std::stoi(m[1].str()));
  }
  return out;
}

// Every rank's own ops (format v2): collectives on their pg_name's ranks, from o.comm_groups or,
// without it, the ranks whose files issue collectives on that pg_name; no pg_name: all ranks.
trace::Trace to_native_per_rank(const std::vector<ChakraTrace>& files, const ImportOptions& o) {
  const auto rank_of = file_ranks(files);
  std::vector<int> all = rank_of;
  std::sort(all.begin(), all.end());
  std::map<std::string, std::vector<int>> groups = o.comm_groups;
  std::map<std::string, std::set<int>> users;  // pg name -> ranks issuing collectives on it
  for (std::size_t k = 0; k < files.size(); ++k) {
    for (const auto& n : files[k].nodes) {
      if (n.type == ChakraNodeType::comm_coll && n.pg_name) users[*n.pg_name].insert(rank_of[k]);
    }
  }
  for (const auto& [name, ranks] : users) {
    if (groups.count(name) != 0) continue;
    if (!o.comm_groups.empty()) {
      throw ConfigError("--comm-groups", fmt::format("no process group '{}' (the traces' collectives name it)", name),
                        "every pg_name of the traces mapped to its ranks");
    }
    groups[name] = std::vector<int>(ranks.begin(), ranks.end());
  }
  const GroupOf group_of = [&](const ChakraNode& n) { return n.pg_name ? groups.at(*n.pg_name) : all; };
  nlohmann::json skipped = nlohmann::json::object();
  std::size_t dropped = 0, dropped_deps = 0;
  const auto order = by_rank(rank_of);
  trace::Trace out;
  out.version = 2;
  nlohmann::json file_list = nlohmann::json::array();
  for (const auto k : order) {
    auto one = chakra_one(files[k], static_cast<std::uint32_t>(files.size()), skipped, dropped, rank_of[k], &group_of);
    if (one.ops.empty()) {
      throw ConfigError(files[k].source, "no simulated ops", "at least one GPU op on every rank (format v2 lists every rank)");
    }
    for (auto& op : one.ops) out.ops.push_back(std::move(op));
    file_list.push_back(files[k].source);
    dropped_deps += files[k].dropped_deps;
  }
  std::uint64_t id = 0;
  for (const auto& [name, ranks] : groups) {
    if (users.count(name) != 0) out.process_groups.push_back({id++, name, ranks});
  }
  // Collectives name their group by id where it has one (a pg_name), else list the ranks.
  for (auto& op : out.ops) {
    if (!op.collective) continue;
    for (const auto& pg : out.process_groups) {
      if (pg.ranks == op.collective->ranks) op.collective->group = pg.id;
    }
  }
  out.name = stem(files[order[0]].source);
  out.source = "chakra";
  nlohmann::json group_json = nlohmann::json::object();
  for (const auto& pg : out.process_groups) group_json[pg.name] = pg.ranks;
  out.config = {{"format", files[0].version == "json" ? "chakra-json" : "chakra"},
                {"files", file_list},
                {"chakra_version", files[0].version},
                {"ranks", all},
                {"process_groups", group_json},
                {"process_groups_from", o.comm_groups.empty() ? "the ranks issuing collectives on each pg_name" : "--comm-groups"},
                {"dropped_nodes", dropped},
                {"dropped_external_deps", dropped_deps},
                {"not_simulated_as_collective", skipped}};
  trace::validate(out, files[order[0]].source);
  return out;
}

}  // namespace

std::map<std::string, std::vector<int>> parse_comm_groups(std::string_view text, const std::string& source) {
  const auto j = parse_json_text(text, source, "a JSON object of process groups {\"name\": [ranks]}");
  if (!j.is_object() || j.empty()) {
    throw ConfigError(source, j.is_object() ? "an empty object" : fmt::format("a {}", j.type_name()),
                      "a JSON object of process groups {\"name\": [ranks]} (ASTRA-sim's --comm-group-configuration)");
  }
  std::map<std::string, std::vector<int>> out;
  for (const auto& item : j.items()) {
    const std::string at = source + "/" + item.key();
    const auto& v = item.value();
    if (!v.is_array() || v.empty()) {
      throw ConfigError(at, v.is_array() ? "an empty group" : fmt::format("a {}", v.type_name()), "a non-empty array of ranks");
    }
    std::vector<int> ranks;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_number_integer() || v[i].get<std::int64_t>() < 0 || v[i].get<std::int64_t>() > 0x7fffffff) {
        throw ConfigError(fmt::format("{}/{}", at, i), v[i].dump(), "a rank (an integer >= 0)");
      }
      const int r = static_cast<int>(v[i].get<std::int64_t>());
      if (std::find(ranks.begin(), ranks.end(), r) != ranks.end()) {
        throw ConfigError(fmt::format("{}/{}", at, i), fmt::format("rank {} twice", r), "each rank once");
      }
      ranks.push_back(r);
    }
    out.emplace(item.key(), std::move(ranks));
  }
  return out;
}

trace::Trace to_native(const std::vector<ChakraTrace>& ranks, const ImportOptions& o) {
  if (ranks.empty()) throw ConfigError("shardsim trace import", "no input files", "at least one file");
  if (o.per_rank || !o.comm_groups.empty()) return to_native_per_rank(ranks, o);
  const auto group = o.group_size.value_or(static_cast<std::uint32_t>(ranks.size()));
  nlohmann::json skipped = nlohmann::json::object();
  std::size_t dropped = 0;
  trace::Trace out = chakra_one(ranks[0], group, skipped, dropped);
  for (std::size_t r = 1; r < ranks.size(); ++r) {
    nlohmann::json s2 = nlohmann::json::object();
    std::size_t d2 = 0;
    const auto other = chakra_one(ranks[r], group, s2, d2);
    if (other.ops.size() != out.ops.size()) {
      throw ConfigError(ranks[r].source, fmt::format("{} simulated ops, rank 0 ({}) has {}", other.ops.size(), ranks[0].source, out.ops.size()),
                        "the same ops on every rank (one SPMD job)");
    }
    for (std::size_t i = 0; i < out.ops.size(); ++i) {
      const auto& a = out.ops[i];
      const auto& b = other.ops[i];
      const bool same = a.collective.has_value() == b.collective.has_value() &&
                        (!a.collective || (a.collective->kind == b.collective->kind && a.collective->size_bytes == b.collective->size_bytes));
      if (!same) {
        throw ConfigError(fmt::format("{}: node {}", ranks[r].source, b.id),
                          fmt::format("op {} differs from rank 0's node {}", i, a.id), "the same collectives on every rank");
      }
    }
  }
  out.name = stem(ranks[0].source);
  out.source = "chakra";
  nlohmann::json files = nlohmann::json::array();
  std::size_t dropped_deps = 0;
  for (const auto& r : ranks) {
    files.push_back(r.source);
    dropped_deps += r.dropped_deps;
  }
  out.config = {{"format", ranks[0].version == "json" ? "chakra-json" : "chakra"},
                {"files", files},
                {"chakra_version", ranks[0].version},
                {"group_size", group},
                {"nodes", ranks[0].nodes.size()},
                {"dropped_nodes", dropped},
                {"dropped_external_deps", dropped_deps},
                {"not_simulated_as_collective", skipped}};
  trace::validate(out, ranks[0].source);
  return out;
}

trace::Trace to_native(const KinetoTrace& k, const ImportOptions& o) {
  std::optional<std::int64_t> device = o.kineto_device;
  if (!device) {
    for (const auto& op : k.gpu_ops) device = std::min(device.value_or(op.device), op.device);
  }
  trace::Trace out;
  out.name = stem(k.source);
  out.source = "kineto";
  nlohmann::json skipped = nlohmann::json::object();
  std::unordered_map<std::int64_t, std::uint64_t> last_on_stream;
  std::uint64_t id = 0;
  for (const auto& g : k.gpu_ops) {
    if (g.device != device) continue;
    trace::Op op;
    op.id = id++;
    op.name = g.name.empty() ? g.category : g.name;
    op.phase = trace::Phase::other;
    op.duration_s = g.dur_us * 1e-6;
    if (g.collective) {
      const auto& c = *g.collective;
      std::optional<std::uint32_t> group = o.group_size;
      if (!group) group = c.group_size;
      if (!group && !c.ranks.empty()) group = static_cast<std::uint32_t>(c.ranks.size());
      if (!group && k.world_size && *k.world_size > 0) group = static_cast<std::uint32_t>(*k.world_size);
      auto size = c.size_bytes;
      if (!size && size_is_output(c.kind) && c.in_elems && c.element_bytes && group &&
          *c.in_elems <= (std::uint64_t{1} << 56) / (std::uint64_t{c.element_bytes} * *group)) {
        size = *c.in_elems * c.element_bytes * *group;
      }
      set_collective(op, c.kind, size, group, skipped);
    }
    if (const auto it = last_on_stream.find(g.stream); it != last_on_stream.end()) op.deps.push_back(it->second);
    last_on_stream[g.stream] = op.id;
    out.ops.push_back(std::move(op));
  }
  out.config = {{"format", "kineto"},
                {"files", {k.source}},
                {"device", device.value_or(0)},
                {"rank", k.rank.value_or(0)},
                {"world_size", k.world_size.value_or(1)},
                {"gpu_ops", k.gpu_ops.size()},
                {"not_simulated_as_collective", skipped}};
  trace::validate(out, k.source);
  return out;
}

trace::Trace to_native_per_rank(const std::vector<KinetoTrace>& files, const ImportOptions& o) {
  if (files.empty()) throw ConfigError("shardsim trace import", "no input files", "at least one file");
  // Ranks: distributedInfo.rank, else the file's position; each once.
  std::vector<int> rank_of;
  for (std::size_t k = 0; k < files.size(); ++k) {
    const auto r = files[k].rank.value_or(static_cast<std::int64_t>(k));
    if (r < 0 || r > 0x7fffffff || std::find(rank_of.begin(), rank_of.end(), static_cast<int>(r)) != rank_of.end()) {
      throw ConfigError(files[k].source, fmt::format("distributedInfo.rank {} (files: {})", r, fmt::join(rank_of, ",")),
                        "one file per rank, each rank once");
    }
    rank_of.push_back(static_cast<int>(r));
  }
  std::vector<int> all = rank_of;
  std::sort(all.begin(), all.end());
  const auto order = by_rank(rank_of);
  trace::Trace out;
  out.version = 2;
  nlohmann::json file_list = nlohmann::json::array();
  nlohmann::json skipped = nlohmann::json::object();
  for (const auto k : order) {
    const auto& f = files[k];
    auto one = to_native(f, o);
    // Pair each op with its GPU op (to_native keeps the chosen device's ops in order, ids 0..).
    std::optional<std::int64_t> device = o.kineto_device;
    if (!device) {
      for (const auto& g : f.gpu_ops) device = std::min(device.value_or(g.device), g.device);
    }
    std::vector<const KinetoGpuOp*> gpu;
    for (const auto& g : f.gpu_ops) {
      if (g.device == device) gpu.push_back(&g);
    }
    for (auto& op : one.ops) {
      op.rank = rank_of[k];
      if (!op.collective) continue;
      const auto& c = *gpu[op.id]->collective;
      // The kernel's process group ("Process Group Ranks"), else every rank of the job.
      std::vector<int> members;
      for (const auto r : c.ranks) members.push_back(static_cast<int>(r));
      if (members.empty()) members = all;
      op.collective->ranks = members;
      op.collective->group_size = static_cast<std::uint32_t>(members.size());
      if (!c.pg_name.empty()) {
        auto it = std::find_if(out.process_groups.begin(), out.process_groups.end(),
                               [&](const trace::ProcessGroupDef& pg) { return pg.ranks == members && pg.name == c.pg_name; });
        if (it == out.process_groups.end()) {
          out.process_groups.push_back({out.process_groups.size(), c.pg_name, members});
          it = out.process_groups.end() - 1;
        }
        op.collective->group = it->id;
      }
    }
    for (auto& op : one.ops) out.ops.push_back(std::move(op));
    for (const auto& item : one.config.at("not_simulated_as_collective").items()) {
      skipped[item.key()] = skipped.value(item.key(), 0) + item.value().get<int>();
    }
    file_list.push_back(f.source);
  }
  out.name = stem(files[order[0]].source);
  out.source = "kineto";
  out.config = {{"format", "kineto"}, {"files", file_list}, {"ranks", all}, {"not_simulated_as_collective", skipped}};
  trace::validate(out, files[order[0]].source);
  return out;
}

trace::Trace to_native(const AstraWorkload& w, const ImportOptions& o) {
  if (!(o.astra_cycle_s > 0) || o.astra_cycle_s > 1) {
    throw ConfigError("--cycle-time", fmt::format("{} s", o.astra_cycle_s), "a cycle time in (0, 1] s");
  }
  trace::Trace out;
  out.name = stem(w.source);
  out.source = "astra-sim";
  nlohmann::json skipped = nlohmann::json::object();
  std::uint64_t id = 0;
  const bool any_comm = std::any_of(w.layers.begin(), w.layers.end(), [](const AstraLayer& l) {
    return l.forward.comm || l.input_grad.comm || l.weight_grad.comm;
  });
  if (any_comm && !o.group_size) {
    throw ConfigError(w.source, "an ASTRA-sim 1.0 workload does not record how many NPUs take part",
                      "--group-size N (the NPU count of the system it ran on)");
  }
  // Adds a compute op and, when the pass communicates, a collective op after it. Returns the
  // id later ops wait for (the collective if blocking, else the compute op).
  auto add_pass = [&](const AstraLayer& l, std::uint32_t unit, const AstraPass& p, const char* tag, trace::Phase phase,
                      std::vector<std::uint64_t> deps, std::optional<std::uint64_t>* comm_id) {
    trace::Op c;
    c.id = id++;
    c.name = fmt::format("{}.{}", l.name, tag);
    c.phase = phase;
    c.unit = unit;
    c.duration_s = static_cast<double>(p.compute_cycles) * o.astra_cycle_s;
    c.deps = std::move(deps);
    const auto compute_id = c.id;
    out.ops.push_back(std::move(c));
    if (p.comm) {
      trace::Op m;
      m.id = id++;
      m.name = fmt::format("{}.{}.{}", l.name, tag, to_string(*p.comm));
      m.phase = phase;
      m.unit = unit;
      m.deps = {compute_id};
      set_collective(m, *p.comm, p.comm_bytes, o.group_size, skipped);
      if (comm_id) *comm_id = m.id;
      out.ops.push_back(std::move(m));
    }
    return compute_id;
  };
  std::vector<std::uint64_t> prev;
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    std::optional<std::uint64_t> comm;
    const auto c = add_pass(w.layers[i], static_cast<std::uint32_t>(i), w.layers[i].forward, "fwd", trace::Phase::forward, prev, &comm);
    prev = {comm ? *comm : c};  // forward collectives block the next layer (model parallel)
  }
  for (std::size_t r = w.layers.size(); r-- > 0;) {
    const auto& l = w.layers[r];
    const auto unit = static_cast<std::uint32_t>(r);
    std::optional<std::uint64_t> wg_comm, ig_comm;
    const auto wg = add_pass(l, unit, l.weight_grad, "wg", trace::Phase::backward, prev, &wg_comm);
    const auto ig = add_pass(l, unit, l.input_grad, "ig", trace::Phase::backward, {wg}, &ig_comm);
    prev = {ig_comm ? *ig_comm : ig};
    if (l.update_cycles > 0) {
      trace::Op u;
      u.id = id++;
      u.name = fmt::format("{}.update", l.name);
      u.phase = trace::Phase::update;
      u.unit = unit;
      u.duration_s = static_cast<double>(l.update_cycles) * o.astra_cycle_s;
      u.deps = {wg_comm ? *wg_comm : wg};
      out.ops.push_back(std::move(u));
    }
  }
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [key, value] : w.params) params[key] = value;
  out.config = {{"format", "astra-v1"},
                {"files", {w.source}},
                {"policy", w.policy},
                {"parameters", params},
                {"layers", w.layers.size()},
                {"cycle_time_s", o.astra_cycle_s},
                {"group_size", o.group_size.value_or(0)},
                {"not_simulated_as_collective", skipped}};
  if (w.dlrm_last_bottom_layer) out.config["dlrm_last_bottom_layer"] = *w.dlrm_last_bottom_layer;
  trace::validate(out, w.source);
  return out;
}

trace::Trace import_files(Format f, const std::vector<std::string>& files, const ImportOptions& o) {
  if (files.empty()) throw ConfigError("shardsim trace import", "no input files", "at least one file");
  if (files.size() > 1 && f != Format::chakra && f != Format::chakra_json && !(f == Format::kineto && o.per_rank)) {
    throw ConfigError("shardsim trace import", fmt::format("{} files for --format {}", files.size(), to_string(f)),
                      "one file (several only for chakra and chakra-json, one per rank)");
  }
  if (f == Format::kineto && o.per_rank) {
    std::vector<KinetoTrace> ranks;
    for (const auto& path : files) ranks.push_back(decode_kineto(read_input(path), path));
    return to_native_per_rank(ranks, o);
  }
  switch (f) {
    case Format::chakra:
    case Format::chakra_json: {
      std::vector<ChakraTrace> ranks;
      for (const auto& path : files) {
        const auto data = read_input(path);
        ranks.push_back(f == Format::chakra ? decode_chakra_et(data, path) : decode_chakra_json(data, path));
      }
      return to_native(ranks, o);
    }
    case Format::kineto: return to_native(decode_kineto(read_input(files[0]), files[0]), o);
    case Format::astra_v1: return to_native(decode_astra_v1(read_input(files[0]), files[0]), o);
  }
  throw ConfigError("--format", "?", "a known format");
}

}  // namespace shardsim::importers
