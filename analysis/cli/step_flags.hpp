#pragma once
// The step options (analysis/scenario/step_options.hpp) as CLI11 flags, from the option
// table: `step` adds them all, `compare` all but --strategy. Values land in a StepOptions;
// an optional option is set only when given. The caller validates after parsing
// (validate_step_options, called by run_step).
#include <CLI/CLI.hpp>

#include <string>
#include <type_traits>
#include <vector>

#include "analysis/scenario/step_options.hpp"

namespace shardsim::cli {

inline void add_step_flags(CLI::App* sub, analysis::StepOptions& o, const std::vector<std::string>& skip = {}) {
  using analysis::StepOptions;
  for (const auto& s : analysis::step_option_table()) {
    if (std::find(skip.begin(), skip.end(), s.key) != skip.end()) continue;
    std::string name = std::string("--") + s.key;
    if (*s.short_flag != '\0') name += std::string(",") + s.short_flag;
    std::visit(
        [&](auto m) {
          auto& v = o.*m;
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, bool>) {
            sub->add_flag(name, v, s.help);
          } else if constexpr (std::is_same_v<V, std::optional<bool>>) {
            sub->add_flag_function(name, [&v](std::int64_t) { v = true; }, s.help);
          } else if constexpr (std::is_same_v<V, std::string> || std::is_same_v<V, std::uint64_t>) {
            sub->add_option(name, v, s.help);
          } else {
            using T = typename V::value_type;
            sub->add_option_function<T>(name, [&v](const T& x) { v = x; }, s.help);
          }
        },
        s.field);
  }
}

}  // namespace shardsim::cli
