#include "traces/trace/trace.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <iterator>
#include <unordered_map>
#include <unordered_set>

#include "sim/enum_names.hpp"
#include "sim/error.hpp"
#include "sim/text/json_text.hpp"

namespace shardsim::trace {

namespace {
constexpr std::array<EnumName<Phase>, 4> kPhases{
    {{Phase::forward, "forward"}, {Phase::backward, "backward"}, {Phase::update, "update"}, {Phase::other, "other"}}};
constexpr std::array<EnumName<DType>, 8> kDTypes{{{DType::fp64, "fp64"},
                                                  {DType::fp32, "fp32"},
                                                  {DType::tf32, "tf32"},
                                                  {DType::bf16, "bf16"},
                                                  {DType::fp16, "fp16"},
                                                  {DType::fp8, "fp8"},
                                                  {DType::int8, "int8"},
                                                  {DType::int32, "int32"}}};
}  // namespace

const char* to_string(Phase p) { return enum_name(kPhases, p); }

Phase phase_from_string(const std::string& s, const std::string& where) {
  return enum_from_name(kPhases, s, "phase", where);
}

const char* to_string(DType d) { return enum_name(kDTypes, d); }

std::uint32_t dtype_bytes(DType d) {
  switch (d) {
    case DType::fp64: return 8;
    case DType::fp32:
    case DType::tf32:
    case DType::int32: return 4;
    case DType::bf16:
    case DType::fp16: return 2;
    case DType::fp8:
    case DType::int8: return 1;
  }
  return 4;
}

DType dtype_from_string(const std::string& s, const std::string& where) {
  return enum_from_name(kDTypes, s, "dtype", where);
}

std::uint64_t Trace::parameter_count() const {
  std::uint64_t n = 0;
  for (const auto& op : ops) {
    for (const auto& t : op.params) n += t.elements;
  }
  return n;
}

double Trace::flops(Phase p) const {
  double f = 0;
  for (const auto& op : ops) {
    if (op.phase == p) f += op.flops;
  }
  return f;
}

std::uint32_t Trace::num_units() const {
  std::uint32_t n = 0;
  for (const auto& op : ops) n = std::max(n, op.unit + 1);
  return n;
}

std::vector<int> Trace::ranks() const {
  std::vector<int> out;
  for (const auto& op : ops) {
    if (op.rank && (out.empty() || out.back() != *op.rank)) out.push_back(*op.rank);
  }
  return out;
}

namespace {

void check_number(double v, bool strictly_positive, const std::string& where, const Op& op,
                  const char* field) {
  if (!std::isfinite(v) || v < 0 || (strictly_positive && v == 0)) {
    throw ConfigError(where, fmt::format("{} = {} in op '{}'", field, v, op.name),
                      strictly_positive ? "a finite number > 0" : "a finite number >= 0");
  }
}

}  // namespace

namespace {

// Members of a process group: at least one, each >= 0, no rank twice.
void check_members(const std::vector<int>& ranks, const std::string& at, const std::string& what) {
  if (ranks.empty()) throw ConfigError(at, fmt::format("no ranks in {}", what), "at least one rank");
  std::unordered_set<int> seen;
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    if (ranks[k] < 0) {
      throw ConfigError(fmt::format("{}/{}", at, k), fmt::format("rank {} in {}", ranks[k], what), "a rank >= 0");
    }
    if (!seen.insert(ranks[k]).second) {
      throw ConfigError(fmt::format("{}/{}", at, k), fmt::format("rank {} twice in {}", ranks[k], what), "each rank once");
    }
  }
}

}  // namespace

void validate(const Trace& t, const std::string& where) {
  if (t.version != 1 && t.version != 2) throw ConfigError(where + "/version", std::to_string(t.version), "1 or 2");
  const bool v2 = t.version == 2;
  if (t.batch_per_replica == 0) {
    throw ConfigError(where + "/batch_per_replica", "0", "a positive number of samples");
  }
  if (t.ops.empty()) throw ConfigError(where + (v2 ? "/ranks" : "/ops"), "no ops", "at least one op");
  if (!v2 && !t.process_groups.empty()) {
    throw ConfigError(where + "/process_groups", "process groups in a version 1 trace", "version 2");
  }
  std::unordered_map<std::uint64_t, std::size_t> groups;  // id -> index
  for (std::size_t g = 0; g < t.process_groups.size(); ++g) {
    const auto& pg = t.process_groups[g];
    const std::string at = fmt::format("{}/process_groups/{}", where, g);
    if (!groups.emplace(pg.id, g).second) {
      throw ConfigError(at + "/id", fmt::format("duplicate process group id {}", pg.id), "ids unique within the trace");
    }
    if (pg.name.empty()) throw ConfigError(at + "/name", "an empty name", "a non-empty process group name");
    check_members(pg.ranks, at + "/ranks", fmt::format("process group '{}'", pg.name));
  }
  std::unordered_map<std::uint64_t, std::size_t> seen;  // id -> index (per rank in v2)
  std::unordered_set<std::string> tensor_names;
  seen.reserve(t.ops.size());
  std::size_t block = 0, first = 0;  // v2: rank block and the index of its first op
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    const Op& op = t.ops[i];
    if (v2 && !op.rank) {
      throw ConfigError(fmt::format("{}/ops/{}", where, i), fmt::format("op '{}' without a rank", op.name),
                        "a rank on every op of a version 2 trace");
    }
    if (!v2 && (op.rank || op.p2p)) {
      throw ConfigError(fmt::format("{}/ops/{}/{}", where, i, op.rank ? "rank" : "p2p"),
                        fmt::format("a {} in op '{}' of a version 1 trace", op.rank ? "rank" : "p2p", op.name),
                        "version 2 for per-rank ops and point-to-point transfers");
    }
    if (v2 && i > 0 && *op.rank != *t.ops[i - 1].rank) {
      if (*op.rank < *t.ops[i - 1].rank) {
        throw ConfigError(fmt::format("{}/ranks/{}/rank", where, block + 1),
                          fmt::format("rank {} after rank {}", *op.rank, *t.ops[i - 1].rank),
                          "ranks listed once each, in ascending order");
      }
      ++block;
      first = i;
      seen.clear();
      tensor_names.clear();
    }
    const std::string at = v2 ? fmt::format("{}/ranks/{}/ops/{}", where, block, i - first) : fmt::format("{}/ops/{}", where, i);
    if (v2 && *op.rank < 0) throw ConfigError(fmt::format("{}/ranks/{}/rank", where, block), std::to_string(*op.rank), "a rank >= 0");
    if (op.name.empty()) throw ConfigError(at + "/name", "an empty name", "a non-empty op name");
    if (!seen.emplace(op.id, i).second) {
      throw ConfigError(at + "/id", fmt::format("duplicate id {} in op '{}'", op.id, op.name),
                        v2 ? "ids unique within a rank" : "ids unique within the trace");
    }
    check_number(op.flops, false, at + "/flops", op, "flops");
    check_number(op.bytes, false, at + "/bytes", op, "bytes");
    if (op.duration_s) check_number(*op.duration_s, true, at + "/duration_s", op, "duration_s");
    for (std::size_t k = 0; k < op.params.size(); ++k) {
      const Tensor& p = op.params[k];
      const std::string pt = fmt::format("{}/params/{}", at, k);
      if (p.name.empty()) throw ConfigError(pt + "/name", fmt::format("an empty tensor name in op '{}'", op.name), "a non-empty name");
      if (p.elements == 0) {
        throw ConfigError(pt + "/elements", fmt::format("0 elements for tensor '{}' in op '{}'", p.name, op.name), "a positive count");
      }
      if (!p.shape.empty()) {
        std::uint64_t prod = 1;
        for (auto d : p.shape) prod *= d;
        if (prod != p.elements) {
          throw ConfigError(pt + "/shape",
                            fmt::format("shape with {} elements for tensor '{}' ({} elements) in op '{}'", prod, p.name,
                                        p.elements, op.name),
                            "a shape whose product equals elements");
        }
      }
      if (!tensor_names.insert(p.name).second) {
        throw ConfigError(pt + "/name", fmt::format("tensor '{}' declared again in op '{}'", p.name, op.name),
                          "each parameter tensor declared once");
      }
    }
    if (op.collective && op.p2p) {
      throw ConfigError(at + "/p2p", fmt::format("both a collective and a p2p transfer in op '{}'", op.name), "one of them");
    }
    if (op.collective) {
      const auto& c = *op.collective;
      const std::string ct = at + "/collective";
      if (c.size_bytes == 0) throw ConfigError(ct + "/size_bytes", fmt::format("0 in op '{}'", op.name), "a positive size");
      if (!v2 && c.group_size == 0) {
        throw ConfigError(ct + "/group_size", fmt::format("0 in op '{}'", op.name), "a group of at least 1 rank");
      }
      if (!v2 && (c.group || !c.ranks.empty())) {
        throw ConfigError(ct + (c.group ? "/group" : "/ranks"),
                          fmt::format("a process group in op '{}' of a version 1 trace", op.name),
                          "group_size only (version 2 names process groups)");
      }
      if (v2) {
        if (c.group) {
          const auto it = groups.find(*c.group);
          if (it == groups.end()) {
            throw ConfigError(ct + "/group", fmt::format("process group {} in op '{}', which process_groups does not define", *c.group, op.name),
                              "the id of a process group of the trace");
          }
          if (t.process_groups[it->second].ranks != c.ranks) {
            throw ConfigError(ct + "/ranks", fmt::format("ranks of op '{}' differ from process group {}", op.name, *c.group),
                              "the process group's ranks");
          }
        } else if (c.ranks.empty()) {
          throw ConfigError(ct, fmt::format("no process group in op '{}'", op.name),
                            "\"group\": a process group id, or \"ranks\": [...] (version 2)");
        }
        check_members(c.ranks, ct + "/ranks", fmt::format("the group of op '{}'", op.name));
        if (c.group_size != c.ranks.size()) {
          throw ConfigError(ct + "/group_size", fmt::format("{} for a group of {} ranks in op '{}'", c.group_size, c.ranks.size(), op.name),
                            "the number of ranks of the group");
        }
        if (std::find(c.ranks.begin(), c.ranks.end(), *op.rank) == c.ranks.end()) {
          throw ConfigError(ct, fmt::format("op '{}' on rank {} runs on a process group without it ({})", op.name, *op.rank,
                                            fmt::join(c.ranks, ",")),
                            "a process group that holds the op's rank");
        }
      }
    }
    if (op.p2p) {
      const auto& p = *op.p2p;
      if (p.size_bytes == 0) throw ConfigError(at + "/p2p/size_bytes", fmt::format("0 in op '{}'", op.name), "a positive size");
      if (p.peer < 0 || p.peer == *op.rank) {
        throw ConfigError(at + "/p2p/peer", fmt::format("peer {} of op '{}' on rank {}", p.peer, op.name, *op.rank),
                          "another rank >= 0");
      }
    }
    for (std::size_t k = 0; k < op.deps.size(); ++k) {
      auto it = seen.find(op.deps[k]);
      if (it == seen.end() || it->second == i) {
        throw ConfigError(fmt::format("{}/deps/{}", at, k),
                          fmt::format("dependency {} of op '{}' is not an earlier op{}", op.deps[k], op.name,
                                      v2 ? " of its rank" : ""),
                          v2 ? "ids of ops listed before this one on the same rank" : "ids of ops listed before this one");
      }
    }
  }
}

namespace {

void reject_unknown(const nlohmann::json& j, const std::string& where, std::initializer_list<const char*> keys) {
  if (!j.is_object()) throw ConfigError(where, fmt::format("{}", j.type_name()), "an object");
  for (const auto& item : j.items()) {
    const std::string& k = item.key();  // not a structured binding: clang 14 cannot capture those
    if (std::find_if(keys.begin(), keys.end(), [&](const char* x) { return k == x; }) == keys.end()) {
      std::string valid;
      for (const char* x : keys) valid += (valid.empty() ? "" : ", ") + std::string(x);
      throw ConfigError(where + "/" + k, fmt::format("unknown key '{}'", k), "one of " + valid);
    }
  }
}

template <class T>
T get(const nlohmann::json& j, const char* key, const std::string& where, const char* expected) {
  const std::string at = where + "/" + key;
  if (!j.contains(key)) throw ConfigError(at, "missing", expected);
  const auto& v = j.at(key);
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) throw ConfigError(at, fmt::format("a {}", v.type_name()), expected);
    return v.get<std::string>();
  } else if constexpr (std::is_same_v<T, double>) {
    if (!v.is_number()) throw ConfigError(at, fmt::format("a {}", v.type_name()), expected);
    return v.get<double>();
  } else {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
      throw ConfigError(at, v.is_number() ? v.dump() : fmt::format("a {}", v.type_name()), expected);
    }
    return static_cast<T>(v.get<std::uint64_t>());
  }
}

template <class T>
T get_or(const nlohmann::json& j, const char* key, const std::string& where, const char* expected, T dflt) {
  return j.contains(key) ? get<T>(j, key, where, expected) : dflt;
}

Tensor tensor_from_json(const nlohmann::json& j, const std::string& at) {
  reject_unknown(j, at, {"name", "elements", "dtype", "shape"});
  Tensor t;
  t.name = get<std::string>(j, "name", at, "a tensor name");
  t.elements = get<std::uint64_t>(j, "elements", at, "a non-negative integer");
  t.dtype = dtype_from_string(get_or<std::string>(j, "dtype", at, "a dtype name", "bf16"), at + "/dtype");
  if (j.contains("shape")) {
    const auto& s = j.at("shape");
    if (!s.is_array()) throw ConfigError(at + "/shape", fmt::format("a {}", s.type_name()), "an array of dimensions");
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (!s[i].is_number_integer() || s[i].get<std::int64_t>() <= 0) {
        throw ConfigError(fmt::format("{}/shape/{}", at, i), s[i].dump(), "a positive integer");
      }
      t.shape.push_back(s[i].get<std::uint64_t>());
    }
  }
  return t;
}

std::vector<int> ranks_from_json(const nlohmann::json& r, const std::string& at) {
  if (!r.is_array()) throw ConfigError(at, fmt::format("a {}", r.type_name()), "an array of ranks");
  std::vector<int> out;
  out.reserve(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (!r[i].is_number_integer() || r[i].get<std::int64_t>() < 0 || r[i].get<std::int64_t>() > 0x7fffffff) {
      throw ConfigError(fmt::format("{}/{}", at, i), r[i].dump(), "a rank (an integer >= 0)");
    }
    out.push_back(static_cast<int>(r[i].get<std::int64_t>()));
  }
  return out;
}

Op op_from_json(const nlohmann::json& j, const std::string& at, bool v2) {
  if (v2) {
    reject_unknown(j, at, {"id", "name", "phase", "unit", "flops", "bytes", "params", "activation_bytes",
                           "duration_s", "collective", "p2p", "deps"});
  } else {
    reject_unknown(j, at, {"id", "name", "phase", "unit", "flops", "bytes", "params", "activation_bytes",
                           "duration_s", "collective", "deps"});
  }
  Op op;
  op.id = get<std::uint64_t>(j, "id", at, "a non-negative integer id");
  op.name = get<std::string>(j, "name", at, "an op name");
  op.phase = phase_from_string(get<std::string>(j, "phase", at, "a phase name"), at + "/phase");
  const auto unit = get_or<std::uint64_t>(j, "unit", at, "a non-negative integer", 0);
  if (unit > 0xffffffffULL) throw ConfigError(at + "/unit", std::to_string(unit), "a unit id below 2^32");
  op.unit = static_cast<std::uint32_t>(unit);
  op.flops = get_or<double>(j, "flops", at, "a number", 0.0);
  op.bytes = get_or<double>(j, "bytes", at, "a number", 0.0);
  op.activation_bytes = get_or<std::uint64_t>(j, "activation_bytes", at, "a non-negative integer", 0);
  if (j.contains("duration_s")) op.duration_s = get<double>(j, "duration_s", at, "a number of seconds");
  if (j.contains("params")) {
    const auto& ps = j.at("params");
    if (!ps.is_array()) throw ConfigError(at + "/params", fmt::format("a {}", ps.type_name()), "an array of tensors");
    for (std::size_t i = 0; i < ps.size(); ++i) op.params.push_back(tensor_from_json(ps[i], fmt::format("{}/params/{}", at, i)));
  }
  if (j.contains("collective")) {
    const auto& c = j.at("collective");
    const std::string ct = at + "/collective";
    if (v2) {
      reject_unknown(c, ct, {"kind", "size_bytes", "group", "ranks", "group_size"});
    } else {
      reject_unknown(c, ct, {"kind", "size_bytes", "group_size"});
    }
    Collective col;
    col.kind = coll::op_from_string(get<std::string>(c, "kind", ct, "a collective name"), ct + "/kind");
    col.size_bytes = get<std::uint64_t>(c, "size_bytes", ct, "a non-negative integer");
    if (v2 && c.contains("group") && c.contains("ranks")) {
      throw ConfigError(ct, "both \"group\" and \"ranks\"", "one of them (a process group id, or the ranks)");
    }
    if (v2 && c.contains("group")) col.group = get<std::uint64_t>(c, "group", ct, "a process group id");
    if (v2 && c.contains("ranks")) col.ranks = ranks_from_json(c.at("ranks"), ct + "/ranks");
    if (!v2 || c.contains("group_size")) {
      const auto g = get<std::uint64_t>(c, "group_size", ct, "a positive integer");
      if (g > 0xffffffffULL) throw ConfigError(ct + "/group_size", std::to_string(g), "a group size below 2^32");
      col.group_size = static_cast<std::uint32_t>(g);
    } else {
      col.group_size = static_cast<std::uint32_t>(col.ranks.size());  // with "group": set from the table
    }
    op.collective = col;
  }
  if (j.contains("p2p")) {
    const auto& c = j.at("p2p");
    const std::string ct = at + "/p2p";
    reject_unknown(c, ct, {"kind", "peer", "size_bytes", "tag"});
    P2P p;
    const auto kind = get<std::string>(c, "kind", ct, "\"send\" or \"recv\"");
    if (kind != "send" && kind != "recv") throw ConfigError(ct + "/kind", fmt::format("'{}'", kind), "\"send\" or \"recv\"");
    p.send = kind == "send";
    const auto peer = get<std::uint64_t>(c, "peer", ct, "a rank (an integer >= 0)");
    if (peer > 0x7fffffffULL) throw ConfigError(ct + "/peer", std::to_string(peer), "a rank below 2^31");
    p.peer = static_cast<int>(peer);
    p.size_bytes = get<std::uint64_t>(c, "size_bytes", ct, "a non-negative integer");
    p.tag = get_or<std::uint64_t>(c, "tag", ct, "a non-negative integer", 0);
    op.p2p = p;
  }
  if (j.contains("deps")) {
    const auto& d = j.at("deps");
    if (!d.is_array()) throw ConfigError(at + "/deps", fmt::format("a {}", d.type_name()), "an array of op ids");
    for (std::size_t i = 0; i < d.size(); ++i) {
      if (!d[i].is_number_integer() || d[i].get<std::int64_t>() < 0) throw ConfigError(fmt::format("{}/deps/{}", at, i), d[i].dump(), "an op id");
      op.deps.push_back(d[i].get<std::uint64_t>());
    }
  }
  return op;
}

}  // namespace

Trace trace_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw ConfigError(where, fmt::format("{}", j.type_name()), "an object");
  const bool v2 = j.contains("version") && j.at("version").is_number_integer() && j.at("version").get<std::int64_t>() == 2;
  if (v2) {
    reject_unknown(j, where, {"format", "version", "name", "source", "batch_per_replica", "seq_len", "config",
                              "process_groups", "ranks"});
  } else {
    reject_unknown(j, where, {"format", "version", "name", "source", "batch_per_replica", "seq_len", "config", "ops"});
  }
  const auto format = get<std::string>(j, "format", where, "\"shardsim-trace\"");
  if (format != "shardsim-trace") throw ConfigError(where + "/format", fmt::format("'{}'", format), "\"shardsim-trace\"");
  const auto version = get<std::uint64_t>(j, "version", where, "1 or 2");
  if (version != 1 && version != 2) throw ConfigError(where + "/version", std::to_string(version), "1 or 2");
  Trace t;
  t.version = static_cast<std::uint32_t>(version);
  t.name = get<std::string>(j, "name", where, "a trace name");
  t.source = get_or<std::string>(j, "source", where, "a string", "file");
  t.batch_per_replica = get<std::uint64_t>(j, "batch_per_replica", where, "a positive integer");
  t.seq_len = get_or<std::uint64_t>(j, "seq_len", where, "a non-negative integer", 0);
  if (j.contains("config")) t.config = j.at("config");
  if (!v2) {
    const auto& ops = j.contains("ops") ? j.at("ops") : throw ConfigError(where + "/ops", "missing", "an array of ops");
    if (!ops.is_array()) throw ConfigError(where + "/ops", fmt::format("a {}", ops.type_name()), "an array of ops");
    t.ops.reserve(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) t.ops.push_back(op_from_json(ops[i], fmt::format("{}/ops/{}", where, i), false));
    validate(t, where);
    return t;
  }
  if (j.contains("process_groups")) {
    const auto& pgs = j.at("process_groups");
    const std::string at = where + "/process_groups";
    if (!pgs.is_array()) throw ConfigError(at, fmt::format("a {}", pgs.type_name()), "an array of process groups");
    for (std::size_t g = 0; g < pgs.size(); ++g) {
      const std::string pt = fmt::format("{}/{}", at, g);
      reject_unknown(pgs[g], pt, {"id", "name", "ranks"});
      ProcessGroupDef pg;
      pg.id = get<std::uint64_t>(pgs[g], "id", pt, "a non-negative integer id");
      pg.name = get_or<std::string>(pgs[g], "name", pt, "a string", fmt::format("pg{}", pg.id));
      if (!pgs[g].contains("ranks")) throw ConfigError(pt + "/ranks", "missing", "an array of ranks");
      pg.ranks = ranks_from_json(pgs[g].at("ranks"), pt + "/ranks");
      t.process_groups.push_back(std::move(pg));
    }
  }
  const auto& ranks = j.contains("ranks") ? j.at("ranks") : throw ConfigError(where + "/ranks", "missing", "an array of ranks, each {rank, ops}");
  if (!ranks.is_array()) throw ConfigError(where + "/ranks", fmt::format("a {}", ranks.type_name()), "an array of {rank, ops}");
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    const std::string rt = fmt::format("{}/ranks/{}", where, k);
    reject_unknown(ranks[k], rt, {"rank", "ops"});
    const auto rank = get<std::uint64_t>(ranks[k], "rank", rt, "a rank (an integer >= 0)");
    if (rank > 0x7fffffffULL) throw ConfigError(rt + "/rank", std::to_string(rank), "a rank below 2^31");
    const auto& ops = ranks[k].contains("ops") ? ranks[k].at("ops") : throw ConfigError(rt + "/ops", "missing", "an array of ops");
    if (!ops.is_array() || ops.empty()) {
      throw ConfigError(rt + "/ops", ops.is_array() ? "no ops" : fmt::format("a {}", ops.type_name()), "a non-empty array of ops");
    }
    for (std::size_t i = 0; i < ops.size(); ++i) {
      auto op = op_from_json(ops[i], fmt::format("{}/ops/{}", rt, i), true);
      op.rank = static_cast<int>(rank);
      if (op.collective && op.collective->group) {
        // Resolve the group id to its ranks (validate checks that the id exists).
        for (const auto& pg : t.process_groups) {
          if (pg.id != *op.collective->group) continue;
          op.collective->ranks = pg.ranks;
          if (!ops[i].at("collective").contains("group_size")) op.collective->group_size = static_cast<std::uint32_t>(pg.ranks.size());
        }
      }
      t.ops.push_back(std::move(op));
    }
    if (k > 0 && !t.ops.empty()) {
      // A repeated rank (ranks listed twice) would merge two blocks: name it here.
      const auto prev = get<std::uint64_t>(ranks[k - 1], "rank", rt, "a rank");
      if (prev >= rank) {
        throw ConfigError(rt + "/rank", fmt::format("rank {} after rank {}", rank, prev), "ranks listed once each, in ascending order");
      }
    }
  }
  validate(t, where);
  return t;
}

nlohmann::json to_json(const Trace& t) {
  nlohmann::json out;
  out["format"] = "shardsim-trace";
  out["version"] = t.version;
  out["name"] = t.name;
  out["source"] = t.source;
  out["batch_per_replica"] = t.batch_per_replica;
  out["seq_len"] = t.seq_len;
  out["config"] = t.config;
  auto ops = nlohmann::json::array();
  auto blocks = nlohmann::json::array();  // v2: {rank, ops} per rank
  for (const auto& op : t.ops) {
    nlohmann::json o;
    o["id"] = op.id;
    o["name"] = op.name;
    o["phase"] = to_string(op.phase);
    o["unit"] = op.unit;
    o["flops"] = op.flops;
    o["bytes"] = op.bytes;
    if (!op.params.empty()) {
      auto ps = nlohmann::json::array();
      for (const auto& p : op.params) {
        nlohmann::json pj;
        pj["name"] = p.name;
        pj["elements"] = p.elements;
        pj["dtype"] = to_string(p.dtype);
        if (!p.shape.empty()) pj["shape"] = p.shape;
        ps.push_back(pj);
      }
      o["params"] = ps;
    }
    if (op.activation_bytes) o["activation_bytes"] = op.activation_bytes;
    if (op.duration_s) o["duration_s"] = *op.duration_s;
    if (op.collective) {
      const auto& c = *op.collective;
      o["collective"] = {{"kind", coll::to_string(c.kind)}, {"size_bytes", c.size_bytes}, {"group_size", c.group_size}};
      if (c.group) {
        o["collective"]["group"] = *c.group;
      } else if (!c.ranks.empty()) {
        o["collective"]["ranks"] = c.ranks;
      }
    }
    if (op.p2p) {
      o["p2p"] = {{"kind", op.p2p->send ? "send" : "recv"}, {"peer", op.p2p->peer}, {"size_bytes", op.p2p->size_bytes},
                  {"tag", op.p2p->tag}};
    }
    if (!op.deps.empty()) o["deps"] = op.deps;
    if (t.version == 2 && (blocks.empty() || blocks.back().at("rank") != *op.rank)) {
      blocks.push_back({{"rank", *op.rank}, {"ops", nlohmann::json::array()}});
    }
    (t.version == 2 ? blocks.back()["ops"] : ops).push_back(o);
  }
  if (t.version == 2) {
    auto pgs = nlohmann::json::array();
    for (const auto& pg : t.process_groups) pgs.push_back({{"id", pg.id}, {"name", pg.name}, {"ranks", pg.ranks}});
    out["process_groups"] = pgs;
    out["ranks"] = blocks;
  } else {
    out["ops"] = ops;
  }
  return out;  // nlohmann::json sorts keys: deterministic output
}

Trace parse_trace(std::string_view text, const std::string& source) {
  return trace_from_json(parse_json_text(text, source, "a shardsim trace JSON file"), source);
}

Trace load_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "cannot open the file", "a readable shardsim trace JSON file");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_trace(text, path);
}

void save_trace(const Trace& t, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw ConfigError(path, "cannot write the file", "a writable path");
  out << to_json(t).dump(1) << '\n';
}

}  // namespace shardsim::trace
