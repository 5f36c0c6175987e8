#include "traces/trace/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <unordered_map>
#include <unordered_set>

#include "sim/error.hpp"
#include "sim/text/json_text.hpp"

namespace shardsim::trace {

const char* to_string(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::update: return "update";
    case Phase::other: return "other";
  }
  return "?";
}

Phase phase_from_string(const std::string& s, const std::string& where) {
  for (auto p : {Phase::forward, Phase::backward, Phase::update, Phase::other}) {
    if (s == to_string(p)) return p;
  }
  throw ConfigError(where, fmt::format("unknown phase '{}'", s), "one of forward, backward, update, other");
}

namespace {
constexpr DType kDTypes[] = {DType::fp64, DType::fp32, DType::tf32, DType::bf16,
                             DType::fp16, DType::fp8,  DType::int8, DType::int32};
}

const char* to_string(DType d) {
  switch (d) {
    case DType::fp64: return "fp64";
    case DType::fp32: return "fp32";
    case DType::tf32: return "tf32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp8: return "fp8";
    case DType::int8: return "int8";
    case DType::int32: return "int32";
  }
  return "?";
}

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
  for (auto d : kDTypes) {
    if (s == to_string(d)) return d;
  }
  throw ConfigError(where, fmt::format("unknown dtype '{}'", s),
                    "one of fp64, fp32, tf32, bf16, fp16, fp8, int8, int32");
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

namespace {

void check_number(double v, bool strictly_positive, const std::string& where, const Op& op,
                  const char* field) {
  if (!std::isfinite(v) || v < 0 || (strictly_positive && v == 0)) {
    throw ConfigError(where, fmt::format("{} = {} in op '{}'", field, v, op.name),
                      strictly_positive ? "a finite number > 0" : "a finite number >= 0");
  }
}

}  // namespace

void validate(const Trace& t, const std::string& where) {
  if (t.batch_per_replica == 0) {
    throw ConfigError(where + "/batch_per_replica", "0", "a positive number of samples");
  }
  if (t.ops.empty()) throw ConfigError(where + "/ops", "no ops", "at least one op");
  std::unordered_map<std::uint64_t, std::size_t> seen;  // id -> index
  std::unordered_set<std::string> tensor_names;
  seen.reserve(t.ops.size());
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    const Op& op = t.ops[i];
    const std::string at = fmt::format("{}/ops/{}", where, i);
    if (op.name.empty()) throw ConfigError(at + "/name", "an empty name", "a non-empty op name");
    if (!seen.emplace(op.id, i).second) {
      throw ConfigError(at + "/id", fmt::format("duplicate id {} in op '{}'", op.id, op.name), "ids unique within the trace");
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
    if (op.collective) {
      if (op.collective->size_bytes == 0) {
        throw ConfigError(at + "/collective/size_bytes", fmt::format("0 in op '{}'", op.name), "a positive size");
      }
      if (op.collective->group_size == 0) {
        throw ConfigError(at + "/collective/group_size", fmt::format("0 in op '{}'", op.name), "a group of at least 1 rank");
      }
    }
    for (std::size_t k = 0; k < op.deps.size(); ++k) {
      auto it = seen.find(op.deps[k]);
      if (it == seen.end() || it->second == i) {
        throw ConfigError(fmt::format("{}/deps/{}", at, k),
                          fmt::format("dependency {} of op '{}' is not an earlier op", op.deps[k], op.name),
                          "ids of ops listed before this one");
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

Op op_from_json(const nlohmann::json& j, const std::string& at) {
  reject_unknown(j, at, {"id", "name", "phase", "unit", "flops", "bytes", "params", "activation_bytes",
                         "duration_s", "collective", "deps"});
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
    reject_unknown(c, ct, {"kind", "size_bytes", "group_size"});
    Collective col;
    col.kind = coll::op_from_string(get<std::string>(c, "kind", ct, "a collective name"), ct + "/kind");
    col.size_bytes = get<std::uint64_t>(c, "size_bytes", ct, "a non-negative integer");
    const auto g = get<std::uint64_t>(c, "group_size", ct, "a positive integer");
    if (g > 0xffffffffULL) throw ConfigError(ct + "/group_size", std::to_string(g), "a group size below 2^32");
    col.group_size = static_cast<std::uint32_t>(g);
    op.collective = col;
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
  reject_unknown(j, where, {"format", "version", "name", "source", "batch_per_replica", "seq_len", "config", "ops"});
  const auto format = get<std::string>(j, "format", where, "\"shardsim-trace\"");
  if (format != "shardsim-trace") throw ConfigError(where + "/format", fmt::format("'{}'", format), "\"shardsim-trace\"");
  const auto version = get<std::uint64_t>(j, "version", where, "1");
  if (version != 1) throw ConfigError(where + "/version", std::to_string(version), "1");
  Trace t;
  t.name = get<std::string>(j, "name", where, "a trace name");
  t.source = get_or<std::string>(j, "source", where, "a string", "file");
  t.batch_per_replica = get<std::uint64_t>(j, "batch_per_replica", where, "a positive integer");
  t.seq_len = get_or<std::uint64_t>(j, "seq_len", where, "a non-negative integer", 0);
  if (j.contains("config")) t.config = j.at("config");
  const auto& ops = j.contains("ops") ? j.at("ops") : throw ConfigError(where + "/ops", "missing", "an array of ops");
  if (!ops.is_array()) throw ConfigError(where + "/ops", fmt::format("a {}", ops.type_name()), "an array of ops");
  t.ops.reserve(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) t.ops.push_back(op_from_json(ops[i], fmt::format("{}/ops/{}", where, i)));
  validate(t, where);
  return t;
}

nlohmann::json to_json(const Trace& t) {
  nlohmann::json out;
  out["format"] = "shardsim-trace";
  out["version"] = 1;
  out["name"] = t.name;
  out["source"] = t.source;
  out["batch_per_replica"] = t.batch_per_replica;
  out["seq_len"] = t.seq_len;
  out["config"] = t.config;
  auto ops = nlohmann::json::array();
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
      o["collective"] = {{"kind", coll::to_string(op.collective->kind)},
                         {"size_bytes", op.collective->size_bytes},
                         {"group_size", op.collective->group_size}};
    }
    if (!op.deps.empty()) o["deps"] = op.deps;
    ops.push_back(o);
  }
  out["ops"] = ops;
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
