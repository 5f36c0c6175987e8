#include "sim/units.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <limits>

#include "sim/error.hpp"
#include "sim/time.hpp"

namespace shardsim::units {
namespace {

struct Suffix {
  std::string_view text;
  double factor;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits "12.5GB/s" into 12.5 and "GB/s". Throws when there is no leading number.
std::pair<double, std::string_view> split_number(std::string_view text, std::string_view where,
                                                 std::string_view expected) {
  const std::string_view s = trim(text);
  double value = 0;
  const auto* begin = s.data();
  const auto* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin) {
    throw ConfigError(std::string(where), fmt::format("'{}' is not a number with a unit", text),
                      std::string(expected));
  }
  if (!std::isfinite(value)) {
    throw ConfigError(std::string(where), fmt::format("'{}' is not finite", text), std::string(expected));
  }
  return {value, trim(std::string_view(ptr, static_cast<size_t>(end - ptr)))};
}

template <size_t N>
double lookup(const std::array<Suffix, N>& table, std::string_view unit, std::string_view text,
              std::string_view where, std::string_view expected) {
  for (const auto& s : table) {
    if (s.text == unit) return s.factor;
  }
  throw ConfigError(std::string(where), fmt::format("unknown unit '{}' in '{}'", unit, text),
                    std::string(expected));
}

constexpr double kKi = 1024.0;

constexpr std::array<Suffix, 15> kSizeUnits{{
    {"", 1}, {"B", 1},
    {"K", kKi}, {"M", kKi * kKi}, {"G", kKi * kKi * kKi}, {"T", kKi * kKi * kKi * kKi},
    {"KiB", kKi}, {"MiB", kKi * kKi}, {"GiB", kKi * kKi * kKi}, {"TiB", kKi * kKi * kKi * kKi},
    {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"kB", 1e3},
}};

constexpr std::array<Suffix, 26> kRateUnits{{
    {"B/s", 1}, {"KB/s", 1e3}, {"kB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"TB/s", 1e12},
    {"KiB/s", kKi}, {"MiB/s", kKi * kKi}, {"GiB/s", kKi * kKi * kKi},
    {"bit/s", 0.125}, {"b/s", 0.125}, {"bps", 0.125},
    {"kb/s", 125.0}, {"Kb/s", 125.0}, {"kbit", 125.0}, {"Kbit", 125.0}, {"kbps", 125.0},
    {"Mb/s", 125e3}, {"Mbit", 125e3}, {"Mbps", 125e3},
    {"Gb/s", 125e6}, {"Gbit", 125e6}, {"Gbps", 125e6},
    {"Tb/s", 125e9}, {"Tbit", 125e9}, {"Tbps", 125e9},
}};

constexpr std::array<Suffix, 5> kTimeUnits{{
    {"ps", 1e-12}, {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1},
}};

constexpr std::string_view kSizeExpected =
    "a size such as 64MiB, 1G (K/M/G/T and KiB/MiB/GiB/TiB = 1024^k; KB/MB/GB/TB = 1000^k)";
constexpr std::string_view kRateExpected =
    "a rate such as 100GB/s, 400Gb/s, 400Mbit (bytes: B/s KB/s MB/s GB/s TB/s KiB/s MiB/s GiB/s; "
    "bits: bit/s kb/s Mb/s Gb/s Tb/s Mbit Gbit Gbps)";
constexpr std::string_view kTimeExpected = "a time such as 1us, 936ns, 2ms, 0.5s (units ps ns us ms s)";

}  // namespace

std::uint64_t parse_bytes(std::string_view text, std::string_view where) {
  auto [value, unit] = split_number(text, where, kSizeExpected);
  const double factor = lookup(kSizeUnits, unit, text, where, kSizeExpected);
  const double bytes = value * factor;
  if (bytes < 0) {
    throw ConfigError(std::string(where), fmt::format("negative size '{}'", text), std::string(kSizeExpected));
  }
  if (bytes >= 1.8e19) {
    throw ConfigError(std::string(where), fmt::format("size '{}' overflows 64 bits", text),
                      std::string(kSizeExpected));
  }
  const double rounded = std::round(bytes);
  if (std::fabs(rounded - bytes) > 1e-6 * std::max(1.0, bytes)) {
    throw ConfigError(std::string(where), fmt::format("'{}' is not a whole number of bytes", text),
                      std::string(kSizeExpected));
  }
  return static_cast<std::uint64_t>(rounded);
}

double parse_rate_Bps(std::string_view text, std::string_view where) {
  auto [value, unit] = split_number(text, where, kRateExpected);
  const double rate = value * lookup(kRateUnits, unit, text, where, kRateExpected);
  if (!(rate > 0)) {
    throw ConfigError(std::string(where), fmt::format("non-positive rate '{}'", text),
                      "a rate greater than zero");
  }
  if (rate < kMinRate_Bps) {
    throw ConfigError(std::string(where),
                      fmt::format("rate '{}' moves one byte in {:.3g} s, beyond the simulated time range", text, 1 / rate),
                      fmt::format("a rate of at least {:.3g} B/s (one byte within {:g} s, about 106 days)", kMinRate_Bps,
                                  Time::kMaxSeconds));
  }
  return rate;
}

double parse_seconds(std::string_view text, std::string_view where) {
  auto [value, unit] = split_number(text, where, kTimeExpected);
  if (unit.empty()) {
    throw ConfigError(std::string(where), fmt::format("'{}' has no unit", text), std::string(kTimeExpected));
  }
  const double s = value * lookup(kTimeUnits, unit, text, where, kTimeExpected);
  if (s < 0) {
    throw ConfigError(std::string(where), fmt::format("negative time '{}'", text), std::string(kTimeExpected));
  }
  if (s > Time::kMaxSeconds) {
    throw ConfigError(std::string(where), fmt::format("time '{}' is beyond the simulated time range", text),
                      fmt::format("a time of at most {:g} s (about 106 days)", Time::kMaxSeconds));
  }
  return s;
}

double parse_count(std::string_view text, std::string_view where) {
  constexpr std::string_view expected = "a positive count such as 1000, 3e11, 300G (K/M/G/T = 1000^k)";
  auto [value, unit] = split_number(text, where, expected);
  constexpr std::array<Suffix, 5> kCount{{{"", 1}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}}};
  const double v = value * lookup(kCount, unit, text, where, expected);
  if (!(v > 0)) throw ConfigError(std::string(where), fmt::format("'{}' is not positive", text), std::string(expected));
  return v;
}

std::vector<std::uint64_t> parse_size_range(std::string_view text, std::string_view where) {
  constexpr std::string_view expected =
      "a size (64MiB), a list (1K,1M) or a range MIN:MAX:xFACTOR or MIN:MAX:+STEP (1K:1G:x4)";
  std::vector<std::uint64_t> out;
  const std::string_view s = trim(text);
  if (s.empty()) throw ConfigError(std::string(where), "an empty size", std::string(expected));
  if (s.find(',') != std::string_view::npos) {
    size_t start = 0;
    while (start <= s.size()) {
      const size_t comma = s.find(',', start);
      const auto part = s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      out.push_back(parse_bytes(part, where));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    return out;
  }
  const size_t c1 = s.find(':');
  if (c1 == std::string_view::npos) return {parse_bytes(s, where)};
  const size_t c2 = s.find(':', c1 + 1);
  const auto lo = parse_bytes(s.substr(0, c1), where);
  const auto hi = parse_bytes(s.substr(c1 + 1, c2 == std::string_view::npos ? std::string_view::npos : c2 - c1 - 1), where);
  std::string_view step = c2 == std::string_view::npos ? std::string_view("x2") : s.substr(c2 + 1);
  if (hi < lo) {
    throw ConfigError(std::string(where), fmt::format("range '{}' ends below its start", text), std::string(expected));
  }
  if (lo == 0) {
    throw ConfigError(std::string(where), fmt::format("range '{}' starts at zero", text), std::string(expected));
  }
  if (!step.empty() && step.front() == 'x') {
    auto [factor, rest] = split_number(step.substr(1), where, expected);
    if (!rest.empty() || !(factor > 1.0)) {
      throw ConfigError(std::string(where), fmt::format("factor '{}' in '{}'", step, text),
                        "a factor greater than 1, e.g. x2");
    }
    for (double v = static_cast<double>(lo); v <= static_cast<double>(hi) * (1 + 1e-12); v *= factor) {
      out.push_back(static_cast<std::uint64_t>(std::llround(v)));
      if (out.size() > 100000) break;
    }
  } else if (!step.empty() && step.front() == '+') {
    const auto inc = parse_bytes(step.substr(1), where);
    if (inc == 0) throw ConfigError(std::string(where), fmt::format("step '{}' in '{}'", step, text), "a step above zero");
    for (std::uint64_t v = lo; v <= hi; v += inc) {
      out.push_back(v);
      if (out.size() > 100000) break;
    }
  } else {
    throw ConfigError(std::string(where), fmt::format("step '{}' in '{}'", step, text), std::string(expected));
  }
  if (out.size() > 100000) {
    throw ConfigError(std::string(where), fmt::format("range '{}' has more than 100000 sizes", text), std::string(expected));
  }
  return out;
}

std::string format_bytes(std::uint64_t bytes) {
  constexpr std::array<std::string_view, 5> names{"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t i = 0;
  while (v >= 1024.0 && i + 1 < names.size()) {
    v /= 1024.0;
    ++i;
  }
  if (i == 0) return fmt::format("{} B", bytes);
  if (std::fabs(v - std::round(v)) < 1e-9) return fmt::format("{:.0f} {}", v, names[i]);
  return fmt::format("{:.3g} {}", v, names[i]);
}

std::string format_rate(double bytes_per_s) { return fmt::format("{:.4g} GB/s", bytes_per_s / 1e9); }

std::string format_seconds(double s) {
  if (s >= 1.0) return fmt::format("{:.4g} s", s);
  if (s >= 1e-3) return fmt::format("{:.4g} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.4g} us", s * 1e6);
  return fmt::format("{:.4g} ns", s * 1e9);
}

}  // namespace shardsim::units
