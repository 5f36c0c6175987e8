#pragma once
// Named values of a small enum, declared once as a table (issue 12: no hand-written lists of
// valid names). The table gives a value's name, a name's value, and for an unknown name the
// same message as every registry lookup (sim/registry.hpp):
//   "<where>: unknown <kind> '<name>'; expected one of a, b, c"
// in table order. Tables are constexpr arrays next to the enum's other functions:
//   constexpr std::array<EnumName<Phase>, 2> kPhases{{{Phase::forward, "forward"}, ...}};
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "sim/registry.hpp"

namespace shardsim {

template <class E>
struct EnumName {
  E value;
  std::string_view name;  ///< a string literal (null-terminated)
};

/// The name of `v` ("?" when the table lacks it, a programming error the caller's tests catch).
template <class E, std::size_t N>
constexpr const char* enum_name(const std::array<EnumName<E>, N>& table, E v) {
  for (const auto& e : table) {
    if (e.value == v) return e.name.data();
  }
  return "?";
}

/// Every name, in table order.
template <class E, std::size_t N>
std::vector<std::string> enum_names(const std::array<EnumName<E>, N>& table) {
  std::vector<std::string> out;
  out.reserve(N);
  for (const auto& e : table) out.emplace_back(e.name);
  return out;
}

/// The value named `s`; throws the unknown-name ConfigError naming `where` and `kind`.
template <class E, std::size_t N>
E enum_from_name(const std::array<EnumName<E>, N>& table, std::string_view s, const std::string& kind,
                 const std::string& where) {
  for (const auto& e : table) {
    if (e.name == s) return e.value;
  }
  throw_unknown(kind, s, where, enum_names(table));
}

}  // namespace shardsim
