#include "analysis/sweep/sweep_file.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "analysis/scenario/scenario.hpp"
#include "sim/error.hpp"
#include "sim/text/json_text.hpp"
#include "sim/registry.hpp"
#include "sim/text/strings.hpp"

namespace shardsim::sweep {
namespace {

constexpr std::uint64_t kMaxScenarios = 1'000'000'000'000ull;

using text::join;

/// JSON type as users think of it: integers and floating-point numbers apart.
std::string kind_of(const nlohmann::json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "number";
  return v.type_name();
}

std::string article(const std::string& kind) {
  return (kind == "integer" || kind == "object" || kind == "array") ? "an " + kind : "a " + kind;
}

bool type_fits(const nlohmann::json& base_value, const nlohmann::json& v) {
  if (base_value.is_number_float()) return v.is_number();
  if (base_value.is_number_integer()) return v.is_number_integer();
  return base_value.type() == v.type();
}

std::string show(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

/// a is a, or contains, b (as pointers: "/x" overlaps "/x" and "/x/y", not "/xy").
bool overlaps(const std::string& a, const std::string& b) {
  const std::string& s = a.size() <= b.size() ? a : b;
  const std::string& l = a.size() <= b.size() ? b : a;
  return l.compare(0, s.size(), s) == 0 && (l.size() == s.size() || l[s.size()] == '/');
}

class Loader {
 public:
  explicit Loader(std::string source) : source_(std::move(source)) {}

  [[nodiscard]] std::string at(const std::string& pointer) const { return source_ + ": " + pointer; }

  void check_keys(const nlohmann::json& obj, const std::string& pointer, const std::vector<std::string>& allowed) const {
    for (const auto& [key, v] : obj.items()) {
      bool ok = false;
      for (const auto& a : allowed) ok = ok || a == key;
      if (!ok) throw ConfigError(at(pointer + "/" + key), fmt::format("unknown key '{}'", key), one_of(allowed));
    }
  }

  AxisList list(const nlohmann::json& item, const std::string& ptr, const nlohmann::json& base, bool in_zip) const {
    if (!item.is_object()) {
      throw ConfigError(at(ptr), fmt::format("{} {}", item.type_name(), show(item)), "an object {\"pointer\", \"values\"}");
    }
    if (item.contains("column")) return label(item, ptr, in_zip);
    check_keys(item, ptr, {"pointer", "values"});
    if (!item.contains("pointer")) throw ConfigError(at(ptr + "/pointer"), "no pointer", "a JSON pointer into the base such as \"/bytes\"");
    if (!item.contains("values")) throw ConfigError(at(ptr + "/values"), "no values", "a list of values");
    const auto& p = item.at("pointer");
    if (!p.is_string()) throw ConfigError(at(ptr + "/pointer"), fmt::format("{} {}", p.type_name(), show(p)), "a JSON pointer string such as \"/bytes\"");
    AxisList a;
    a.pointer = p.get<std::string>();
    std::vector<std::string> flags;
    for (const auto& [key, v] : base.items()) {
      if (key != "command") flags.push_back("/" + key);
    }
    const std::string expected = "a pointer to a value of the base (one of " + join(flags) + ")";
    if (a.pointer == "/command") throw ConfigError(at(ptr + "/pointer"), "'/command' varies the command", expected);
    nlohmann::json::json_pointer jp;
    try {
      jp = nlohmann::json::json_pointer(a.pointer);
    } catch (const nlohmann::json::exception&) {
      throw ConfigError(at(ptr + "/pointer"), fmt::format("'{}' is not a JSON pointer", a.pointer), expected);
    }
    if (a.pointer.empty() || !base.contains(jp)) {
      throw ConfigError(at(ptr + "/pointer"), fmt::format("'{}' is not in the base", a.pointer), expected);
    }
    const auto& base_value = base.at(jp);
    const auto& vals = item.at("values");
    if (!vals.is_array()) throw ConfigError(at(ptr + "/values"), fmt::format("{} {}", vals.type_name(), show(vals)), "a list of values");
    if (vals.empty()) throw ConfigError(at(ptr + "/values"), "an empty list for " + a.pointer, "at least one value");
    for (std::size_t i = 0; i < vals.size(); ++i) {
      if (!type_fits(base_value, vals[i])) {
        throw ConfigError(at(fmt::format("{}/values/{}", ptr, i)),
                          fmt::format("{} {} for {}", kind_of(vals[i]), show(vals[i]), a.pointer),
                          fmt::format("{}, as the base value at {}", article(kind_of(base_value)), a.pointer));
      }
      a.values.push_back(vals[i]);
    }
    return a;
  }

  AxisList label(const nlohmann::json& item, const std::string& ptr, bool in_zip) const {
    check_keys(item, ptr, {"column", "values"});
    const auto& c = item.at("column");
    const std::string expected = "a column name that is not a pointer (no leading '/') and not scenario, hash, status or reason";
    if (!c.is_string()) throw ConfigError(at(ptr + "/column"), fmt::format("{} {}", c.type_name(), show(c)), expected);
    AxisList a;
    a.pointer = c.get<std::string>();
    a.label = true;
    if (!in_zip) throw ConfigError(at(ptr + "/column"), fmt::format("a label column '{}' outside a zip", a.pointer), "a label inside a zip, next to the lists it describes");
    if (a.pointer.empty() || a.pointer.front() == '/' || a.pointer == "scenario" || a.pointer == "hash" || a.pointer == "status" || a.pointer == "reason") {
      throw ConfigError(at(ptr + "/column"), fmt::format("'{}'", a.pointer), expected);
    }
    if (!item.contains("values")) throw ConfigError(at(ptr + "/values"), "no values", "a list of values");
    const auto& vals = item.at("values");
    if (!vals.is_array()) throw ConfigError(at(ptr + "/values"), fmt::format("{} {}", vals.type_name(), show(vals)), "a list of values");
    if (vals.empty()) throw ConfigError(at(ptr + "/values"), "an empty list for " + a.pointer, "at least one value");
    for (const auto& v : vals) a.values.push_back(v);
    return a;
  }

 private:
  std::string source_;
};

}  // namespace

SweepSpec::SweepSpec(const nlohmann::json& j, std::string source) : source_(std::move(source)) {
  const Loader L(source_);
  if (!j.is_object()) throw ConfigError(source_, fmt::format("a JSON {}", j.type_name()), "a sweep object with keys base and axes");
  L.check_keys(j, "", {"description", "base", "axes"});
  if (!j.contains("base")) throw ConfigError(L.at("/base"), "no base", "a base scenario: an object with a command and its flags");
  base_ = j.at("base");
  if (!base_.is_object()) throw ConfigError(L.at("/base"), fmt::format("{} {}", base_.type_name(), show(base_)), "a base scenario: an object with a command and its flags");
  std::vector<std::string> names;
  for (const auto& c : analysis::scenario_commands()) names.push_back(c.name);
  const std::string commands = names.empty() ? "a registered scenario command (none is registered)" : one_of(names);
  if (!base_.contains("command")) throw ConfigError(L.at("/base/command"), "no command", commands);
  const auto& c = base_.at("command");
  if (!c.is_string()) throw ConfigError(L.at("/base/command"), fmt::format("{} {}", c.type_name(), show(c)), commands);
  command_ = c.get<std::string>();
  const auto* cmd = analysis::find_scenario_command(command_);
  if (!cmd) throw ConfigError(L.at("/base/command"), fmt::format("unknown command '{}'", command_), commands);
  for (const auto& [key, v] : base_.items()) {
    if (key == "command") continue;
    bool ok = false;
    for (const auto& k : cmd->keys) ok = ok || k == key;
    if (!ok) {
      throw ConfigError(L.at("/base/" + key), fmt::format("unknown key '{}' for command '{}'", key, command_),
                        one_of(cmd->keys));
    }
  }

  if (!j.contains("axes")) throw ConfigError(L.at("/axes"), "no axes", "a list of axes (may be empty)");
  const auto& axes = j.at("axes");
  if (!axes.is_array()) throw ConfigError(L.at("/axes"), fmt::format("{} {}", axes.type_name(), show(axes)), "a list of axes");
  std::vector<std::pair<std::string, std::string>> seen;  // pointer, where it was declared
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::string ptr = fmt::format("/axes/{}", i);
    const auto& item = axes[i];
    AxisItem ai;
    if (item.is_object() && item.contains("zip")) {
      L.check_keys(item, ptr, {"zip"});
      const auto& zip = item.at("zip");
      if (!zip.is_array()) throw ConfigError(L.at(ptr + "/zip"), fmt::format("{} {}", zip.type_name(), show(zip)), "a list of {\"pointer\", \"values\"} objects");
      if (zip.empty()) throw ConfigError(L.at(ptr + "/zip"), "an empty zip", "at least one {\"pointer\", \"values\"} list");
      for (std::size_t k = 0; k < zip.size(); ++k) {
        ai.lists.push_back(L.list(zip[k], fmt::format("{}/zip/{}", ptr, k), base_, true));
        const auto& first = ai.lists.front();
        const auto& last = ai.lists.back();
        if (last.values.size() != first.values.size()) {
          throw ConfigError(L.at(fmt::format("{}/zip/{}/values", ptr, k)),
                            fmt::format("{} values for {} but {} for {}", last.values.size(), last.pointer,
                                        first.values.size(), first.pointer),
                            "lists of equal length in a zip");
        }
      }
    } else {
      ai.lists.push_back(L.list(item, ptr, base_, false));
    }
    for (std::size_t k = 0; k < ai.lists.size(); ++k) {
      const std::string here = ai.lists.size() == 1 ? ptr : fmt::format("{}/zip/{}", ptr, k);
      const std::string field = ai.lists[k].label ? "/column" : "/pointer";
      for (const auto& [p, where] : seen) {
        if (ai.lists[k].label && p == ai.lists[k].pointer) {
          throw ConfigError(L.at(here + field), fmt::format("a second column '{}' ({})", p, where), "a distinct column name");
        }
        if (!ai.lists[k].label && p.front() == '/' && overlaps(p, ai.lists[k].pointer)) {
          throw ConfigError(L.at(here + "/pointer"), fmt::format("'{}' overlaps '{}' ({})", ai.lists[k].pointer, p, where),
                            "each value of the base varied by one axis only");
        }
      }
      seen.emplace_back(ai.lists[k].pointer, here);
    }
    if (size_ > kMaxScenarios / ai.size()) {
      throw ConfigError(L.at("/axes"), fmt::format("more than {} scenarios", kMaxScenarios), "a smaller sweep");
    }
    size_ *= ai.size();
    axes_.push_back(std::move(ai));
  }
}

std::vector<std::size_t> SweepSpec::coordinates(std::uint64_t i) const {
  std::vector<std::size_t> c(axes_.size(), 0);
  for (std::size_t a = axes_.size(); a-- > 0;) {
    const std::uint64_t n = axes_[a].size();
    c[a] = static_cast<std::size_t>(i % n);
    i /= n;
  }
  return c;
}

nlohmann::json SweepSpec::scenario(std::uint64_t i) const {
  nlohmann::json s = base_;
  const auto c = coordinates(i);
  for (std::size_t a = 0; a < axes_.size(); ++a) {
    for (const auto& l : axes_[a].lists) {
      if (!l.label) s[nlohmann::json::json_pointer(l.pointer)] = l.values[c[a]];
    }
  }
  return s;
}

std::vector<std::string> SweepSpec::axis_columns() const {
  std::vector<std::string> cols;
  for (const auto& a : axes_) {
    for (const auto& l : a.lists) cols.push_back(l.pointer);
  }
  return cols;
}

std::vector<const nlohmann::json*> SweepSpec::axis_values(std::uint64_t i) const {
  std::vector<const nlohmann::json*> v;
  const auto c = coordinates(i);
  for (std::size_t a = 0; a < axes_.size(); ++a) {
    for (const auto& l : axes_[a].lists) v.push_back(&l.values[c[a]]);
  }
  return v;
}

SweepSpec parse_sweep(std::string_view text, const std::string& source) {
  return SweepSpec(parse_json_text(text, source, "a sweep object with keys base and axes"), source);
}

SweepSpec load_sweep_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "cannot open the file", "a readable sweep JSON file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_sweep(ss.str(), path);
}

std::string scenario_hash(const nlohmann::json& scenario) {
  // FNV-1a, 64-bit (Fowler, Noll, Vo; offset basis and prime from the reference description,
  // http://www.isthe.com/chongo/tech/comp/fnv/).
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : scenario.dump()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

}  // namespace shardsim::sweep
