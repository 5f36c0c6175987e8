#pragma once
// One registry type for every named kind (STYLE 4, issue 12): topology builders, collective
// algorithms, weight-update strategies, optimizers, devices, zoo models. An entry has a name,
// a one-line summary, its source and a parameter schema (key, type, unit, default, doc). The
// owner of a kind keeps its typed table (Device, Optimizer, ...) in the same order, so entry i
// describes row i; `shardsim list` prints the entries, and a failed lookup throws the same
// message for every kind:
//   "<where>: unknown <kind> '<name>'; expected one of a, b, c"
// Lookups are linear (a few dozen entries). Thread safe once built (const).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardsim {

struct ParamDoc {
  std::string key, type, unit, default_value, doc;
};

struct RegistryEntry {
  std::string name, summary, source;
  std::vector<ParamDoc> params;
};

class Registry {
 public:
  /// `kind`: singular, as in messages ("device"); `category`: the `shardsim list` category
  /// ("devices"); `doc`: what the category is for ("accelerator presets for --device").
  Registry(std::string kind, std::string category, std::string doc);

  /// Throws std::logic_error for a name already registered (a programming error).
  void add(RegistryEntry e);

  [[nodiscard]] const std::string& kind() const { return kind_; }
  [[nodiscard]] const std::string& category() const { return category_; }
  [[nodiscard]] const std::string& doc() const { return doc_; }
  [[nodiscard]] const std::vector<RegistryEntry>& entries() const { return entries_; }
  [[nodiscard]] std::vector<std::string> names() const;

  /// Index of `name`, nullopt when unknown.
  [[nodiscard]] std::optional<std::size_t> find(std::string_view name) const;
  /// Index of `name`; throws the unknown-name ConfigError naming `where`.
  [[nodiscard]] std::size_t at(std::string_view name, const std::string& where) const;

 private:
  std::string kind_, category_, doc_;
  std::vector<RegistryEntry> entries_;
};

/// "one of a, b, c": the `expected` part of a message that lists the valid names.
std::string one_of(const std::vector<std::string>& names);

/// ConfigError(where, "unknown <kind> '<name>'", one_of(valid)); `valid` may be a subset of a
/// registry's names (e.g. the strategies a command accepts).
[[noreturn]] void throw_unknown(const std::string& kind, std::string_view name, const std::string& where,
                                const std::vector<std::string>& valid);

}  // namespace shardsim
