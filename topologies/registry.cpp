#include "topologies/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "sim/error.hpp"
#include "sim/text/strings.hpp"
#include "sim/units.hpp"
#include "topologies/load.hpp"

namespace shardsim::topo {

using text::join;
using text::split;

const char* to_string(ParamType t) {
  switch (t) {
    case ParamType::integer: return "int";
    case ParamType::rate: return "rate";
    case ParamType::time: return "time";
    case ParamType::boolean: return "bool";
    case ParamType::choice: return "choice";
    case ParamType::dims: return "dims";
    case ParamType::flags: return "flags";
    case ParamType::topology: return "topology";
    case ParamType::json: return "json";
  }
  return "?";
}

std::string ParamContext::where(const std::string& key) const {
  return fmt::format("{}: {}/{}", source, pointer, key);
}

const std::vector<std::string>& common_keys() {
  static const std::vector<std::string> k{"builder", "name", "description", "device_model"};
  return k;
}

namespace {

std::string show(const nlohmann::json& v) { return v.is_string() ? "'" + v.get<std::string>() + "'" : v.dump(); }

// Parses a whole decimal number; nullopt when the text is not one.
std::optional<long> parse_long(const std::string& s) {
  long v = 0;
  const auto* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end || s.empty()) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) {
    const auto i = v.get<long>();
    if (i == 0 || i == 1) return i == 1;
  }
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "1" || s == "true") return true;
    if (s == "0" || s == "false") return false;
  }
  return std::nullopt;
}

}  // namespace

Params::Params(const BuilderInfo& b, nlohmann::json obj, ParamContext ctx)
    : builder_(b), obj_(std::move(obj)), ctx_(std::move(ctx)), effective_(nlohmann::json::object()) {
  effective_["builder"] = b.name;
  std::vector<std::string> keys;
  for (const auto& p : b.params) keys.push_back(p.key);
  for (const auto& item : obj_.items()) {
    const std::string& k = item.key();  // not a structured binding: clang 14 cannot capture those
    if (std::find(common_keys().begin(), common_keys().end(), k) != common_keys().end()) continue;
    if (std::none_of(b.params.begin(), b.params.end(), [&](const ParamSpec& p) { return p.key == k; })) {
      throw ConfigError(ctx_.where(k), fmt::format("unknown key '{}' for builder '{}'", k, b.name),
                        one_of(keys));
    }
  }
  for (const auto& p : b.params) {
    if (!p.default_text && !obj_.contains(p.key)) {
      throw ConfigError(ctx_.where(p.key), fmt::format("missing key '{}' for builder '{}'", p.key, b.name),
                        fmt::format("{} ({}{})", p.doc, to_string(p.type), p.unit.empty() ? "" : ", " + p.unit));
    }
  }
}

const ParamSpec& Params::spec(const std::string& key) const {
  for (const auto& p : builder_.params) {
    if (p.key == key) return p;
  }
  throw std::logic_error(fmt::format("builder '{}' reads undeclared key '{}'", builder_.name, key));
}

nlohmann::json Params::value(const std::string& key) {
  const auto& p = spec(key);
  if (obj_.contains(key)) return obj_.at(key);
  return nlohmann::json(*p.default_text);
}

void check_builder_count(long count, const std::string& what, const std::string& where) {
  if (count > kMaxBuilderCount) {
    throw ConfigError(where, fmt::format("{} = {}", what, count), fmt::format("at most {}", kMaxBuilderCount));
  }
}

long Params::integer(const std::string& key) {
  const auto& p = spec(key);
  const auto v = value(key);
  std::optional<long> i;
  if (v.is_number_integer()) i = v.get<long>();
  if (v.is_string()) i = parse_long(v.get<std::string>());
  if (!i) throw ConfigError(where(key), fmt::format("{} is not a whole number", show(v)), p.doc);
  if (*i < p.min) {
    throw ConfigError(where(key), fmt::format("{} = {}", key, *i), fmt::format("at least {}", p.min));
  }
  check_builder_count(*i, key, where(key));
  effective_[key] = *i;
  return *i;
}

double Params::rate_Bps(const std::string& key) {
  const auto v = value(key);
  if (!v.is_string()) {
    throw ConfigError(where(key), fmt::format("{} without a unit", show(v)), "a rate with a unit such as \"100GB/s\"");
  }
  const double r = units::parse_rate_Bps(v.get<std::string>(), where(key));
  effective_[key] = v;
  return r;
}

double Params::seconds(const std::string& key) {
  const auto v = value(key);
  if (!v.is_string()) {
    throw ConfigError(where(key), fmt::format("{} without a unit", show(v)), "a time with a unit such as \"1us\"");
  }
  const double s = units::parse_seconds(v.get<std::string>(), where(key));
  effective_[key] = v;
  return s;
}

bool Params::boolean(const std::string& key) {
  const auto v = value(key);
  const auto b = parse_bool(v);
  if (!b) throw ConfigError(where(key), fmt::format("{} is not a boolean", show(v)), "true, false, 1 or 0");
  effective_[key] = *b;
  return *b;
}

std::string Params::choice(const std::string& key) {
  const auto& p = spec(key);
  const auto v = value(key);
  if (!v.is_string() || std::find(p.choices.begin(), p.choices.end(), v.get<std::string>()) == p.choices.end()) {
    throw ConfigError(where(key), fmt::format("{} = {}", key, show(v)), one_of(p.choices));
  }
  effective_[key] = v;
  return v.get<std::string>();
}

LinkClass Params::link_class(const std::string& key) {
  const auto v = value(key);
  if (!v.is_string()) throw ConfigError(where(key), fmt::format("{} is not a link class", show(v)), one_of(link_class_names()));
  const auto c = link_class_from_string(v.get<std::string>(), where(key));
  effective_[key] = v;
  return c;
}

std::vector<int> Params::dims(const std::string& key) {
  const auto v = value(key);
  constexpr const char* kExpected = "dimensions as [32, 32] or \"32x32\", each a whole number of at least 1";
  std::vector<nlohmann::json> parts;
  if (v.is_array()) {
    for (const auto& x : v) parts.push_back(x);
  } else if (v.is_string()) {
    for (const auto& s : split(v.get<std::string>(), 'x')) parts.emplace_back(s);
  } else {
    throw ConfigError(where(key), fmt::format("{} is not a list of dimensions", show(v)), kExpected);
  }
  if (parts.empty()) throw ConfigError(where(key), "no dimension", kExpected);
  std::vector<int> d;
  for (const auto& x : parts) {
    std::optional<long> i;
    if (x.is_number_integer()) i = x.get<long>();
    if (x.is_string()) i = parse_long(x.get<std::string>());
    if (!i || *i < 1 || *i > (1 << 20)) {
      throw ConfigError(where(key), fmt::format("dimension {} in {}", show(x), show(v)), kExpected);
    }
    d.push_back(static_cast<int>(*i));
  }
  effective_[key] = d;
  return d;
}

std::vector<bool> Params::flags(const std::string& key, std::size_t n) {
  const auto v = value(key);
  const std::string expected = fmt::format("one flag (1 or 0) for all {} dimensions or one per dimension, e.g. [1, 0] or \"1x0\"", n);
  std::vector<nlohmann::json> parts;
  if (v.is_array()) {
    for (const auto& x : v) parts.push_back(x);
  } else if (v.is_string()) {
    for (const auto& s : split(v.get<std::string>(), 'x')) parts.emplace_back(s);
  } else {
    parts.push_back(v);
  }
  if (parts.size() != 1 && parts.size() != n) {
    throw ConfigError(where(key), fmt::format("{} flags in {}", parts.size(), show(v)), expected);
  }
  std::vector<bool> out;
  for (const auto& x : parts) {
    const auto b = parse_bool(x);
    if (!b) throw ConfigError(where(key), fmt::format("flag {} in {}", show(x), show(v)), expected);
    out.push_back(*b);
  }
  if (out.size() == 1) out.assign(n, out.front());
  effective_[key] = out;
  return out;
}

Topology Params::topology(const std::string& key) {
  const auto v = value(key);
  const ParamContext inner{ctx_.source, ctx_.pointer + "/" + key};
  Topology t;
  if (v.is_object()) {
    t = build_from_object(v, inner, key);
  } else if (v.is_string()) {
    t = make_topology(v.get<std::string>(), where(key));
  } else {
    throw ConfigError(where(key), fmt::format("{} is not a topology", show(v)),
                      "a builder object {\"builder\": ...}, a preset name or an inline spec");
  }
  effective_[key] = t.config();
  return t;
}

const nlohmann::json& Params::json(const std::string& key) {
  const auto& p = spec(key);
  if (!obj_.contains(key)) throw ConfigError(where(key), fmt::format("missing key '{}'", key), p.doc);
  effective_[key] = obj_.at(key);
  return obj_.at(key);
}

const std::vector<BuilderInfo>& builders() {
  static const std::vector<BuilderInfo> r = [] {
    std::vector<BuilderInfo> v;
    register_torus(v);
    register_star_builders(v);
    register_fat_tree_builders(v);
    register_composite_builders(v);
    return v;
  }();
  return r;
}

const Registry& builder_registry() {
  static const Registry r = [] {
    Registry reg("builder", "topologies", "topology builders and presets");
    for (const auto& b : builders()) {
      RegistryEntry e{b.name, b.description, "", {}};
      for (const auto& p : b.params) {
        e.params.push_back({p.key, to_string(p.type), p.unit, p.default_text.value_or(""), p.doc});
      }
      reg.add(std::move(e));
    }
    return reg;
  }();
  return r;
}

const BuilderInfo* find_builder(const std::string& name) {
  const auto i = builder_registry().find(name);
  return i ? &builders()[*i] : nullptr;
}

std::string builder_names() { return join(builder_registry().names()); }

Topology build_from_object(const nlohmann::json& obj, const ParamContext& ctx, const std::string& default_name) {
  if (!obj.is_object()) {
    throw ConfigError(fmt::format("{}: {}", ctx.source, ctx.pointer.empty() ? "/" : ctx.pointer),
                      fmt::format("a JSON {}", obj.type_name()), "an object with a \"builder\" key");
  }
  if (!obj.contains("builder")) {
    throw ConfigError(ctx.where("builder"), "missing key 'builder'", one_of(builder_registry().names()));
  }
  const auto& bj = obj.at("builder");
  const BuilderInfo* b = bj.is_string() ? find_builder(bj.get<std::string>()) : nullptr;
  if (!b) throw ConfigError(ctx.where("builder"), fmt::format("unknown builder {}", show(bj)), one_of(builder_registry().names()));
  for (const char* k : {"name", "description", "device_model"}) {
    if (obj.contains(k) && !obj.at(k).is_string()) {
      throw ConfigError(ctx.where(k), fmt::format("{} is not a string", show(obj.at(k))), "a string");
    }
  }
  Params p(*b, obj, ctx);
  Topology t = b->build(p);
  t.set_config(p.effective());
  t.set_name(obj.contains("name") ? obj.at("name").get<std::string>() : default_name);
  if (obj.contains("description")) t.set_description(obj.at("description").get<std::string>());
  if (t.description().empty()) t.set_description(b->description);
  if (obj.contains("device_model")) t.set_device_model(obj.at("device_model").get<std::string>());
  for (const char* k : {"name", "description", "device_model"}) {
    if (obj.contains(k)) t.set_config_entry(k, obj.at(k));
  }
  t.validate(fmt::format("{}{}", ctx.source, ctx.pointer.empty() ? "" : ": " + ctx.pointer));
  return t;
}

nlohmann::json parse_inline_spec(const std::string& spec, const std::string& source) {
  const auto colon = spec.find(':');
  nlohmann::json obj = nlohmann::json::object();
  obj["builder"] = spec.substr(0, colon);
  if (colon == std::string::npos || colon + 1 == spec.size()) return obj;
  for (const auto& item : split(spec.substr(colon + 1), ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw ConfigError(source, fmt::format("'{}' is not key=value", item), "builder:key=value,key=value,...");
    }
    const auto key = item.substr(0, eq);
    if (obj.contains(key)) throw ConfigError(source, fmt::format("key '{}' given twice", key), "each key once");
    obj[key] = item.substr(eq + 1);
  }
  return obj;
}

}  // namespace shardsim::topo
