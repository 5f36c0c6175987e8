#pragma once
// String helpers every layer uses to read input and to word messages ("expected one of a, b").
// Part of the base library below sim/ (sim/text, DESIGN 1): standard library only.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardsim::text {

/// "a, b, c" (items in order, `sep` between them; "" for none).
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

/// Pieces of `s` between occurrences of `sep`, empty ones kept ("a,,b" -> a, "", b; "" -> "").
std::vector<std::string> split(std::string_view s, char sep);

/// `s` without leading and trailing spaces, tabs, carriage returns and newlines.
std::string_view trim(std::string_view s);

/// The whole of `s` as a finite double (std::from_chars, general format: "0.5", "-2", "1e-3"),
/// or nullopt: empty, other characters before or after the number, out of range, inf, nan.
std::optional<double> to_double(std::string_view s);

}  // namespace shardsim::text
