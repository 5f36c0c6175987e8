#include "sim/registry.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "sim/error.hpp"
#include "sim/text/strings.hpp"

namespace shardsim {

Registry::Registry(std::string kind, std::string category, std::string doc)
    : kind_(std::move(kind)), category_(std::move(category)), doc_(std::move(doc)) {}

void Registry::add(RegistryEntry e) {
  if (find(e.name)) throw std::logic_error(fmt::format("{} '{}' registered twice", kind_, e.name));
  entries_.push_back(std::move(e));
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) out.push_back(e.name);
  return out;
}

std::optional<std::size_t> Registry::find(std::string_view name) const {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].name == name) return i;
  }
  return std::nullopt;
}

std::size_t Registry::at(std::string_view name, const std::string& where) const {
  if (auto i = find(name)) return *i;
  throw_unknown(kind_, name, where, names());
}

std::string one_of(const std::vector<std::string>& names) { return "one of " + text::join(names); }

void throw_unknown(const std::string& kind, std::string_view name, const std::string& where,
                   const std::vector<std::string>& valid) {
  throw ConfigError(where, fmt::format("unknown {} '{}'", kind, name), one_of(valid));
}

}  // namespace shardsim
