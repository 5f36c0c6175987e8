#pragma once
// Simulated time: a strong type over int64 picoseconds (DESIGN 2; ns-3 nstime.h, htsim
// config.h). Range about +-106 days. No double time inside the engine: conversions exist
// only at the boundary and round to the nearest picosecond.
//
// Range: a conversion whose result would lie beyond +-kMaxSeconds, and a sum, difference or
// product that would overflow int64, throw TimeRangeError (a std::out_of_range carrying the
// seconds asked for): no time wraps around.
// Inputs that define simulated times (rates, latencies) are checked against the same bound
// where they are parsed (sim/units.hpp); main() reports a TimeRangeError that still escapes
// as bad input (exit 2) naming the flags that set the run's times.
#include <fmt/format.h>

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace shardsim {

/// A simulated time outside the int64 picosecond range. seconds() is the time asked for
/// (possibly infinite or NaN).
class TimeRangeError : public std::out_of_range {
 public:
  explicit TimeRangeError(double seconds)
      : std::out_of_range(fmt::format("a simulated time of {:g} s is beyond the int64 picosecond range "
                                      "(+-9.2e+06 s, about 106 days)", seconds)),
        seconds_(seconds) {}
  [[nodiscard]] double seconds() const { return seconds_; }

 private:
  double seconds_;
};

class Time {
 public:
  constexpr Time() = default;

  static constexpr Time from_ps(std::int64_t ps) { return Time(ps); }
  static Time from_seconds(double s) { return from_scaled(s, 1e12); }
  static Time from_ms(double ms) { return from_scaled(ms, 1e9); }
  static Time from_us(double us) { return from_scaled(us, 1e6); }
  static Time from_ns(double ns) { return from_scaled(ns, 1e3); }
  /// Rounds up: the first picosecond at or after `s` seconds (used for completions, so an
  /// event never fires before the work it stands for is done).
  /// ceil(x) is computed as truncation plus one when that fell below x, exact for every
  /// finite x in range (|x| >= 2^52 is integral), without std::ceil's libm call on the
  /// baseline x86-64 target (once per flow rating in the flow network; test_time_units
  /// checks it against std::ceil on 200,000 random values from 10 fs to 11 days and edges).
  static Time ceil_seconds(double s) {
    if (!in_range(s * 1e12)) throw TimeRangeError(s);
    const double x = s * 1e12 - 1e-6;
    auto i = static_cast<std::int64_t>(x);
    if (static_cast<double>(i) < x) ++i;
    return Time(i);
  }
  /// The largest magnitude, in seconds, that every conversion accepts: 9.2e18 ps, just under
  /// 2^63 - 1 ps = 9.223e18 ps (about 106.5 days).
  static constexpr double kMaxSeconds = 9.2e6;

  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<std::int64_t>::max()); }

  [[nodiscard]] constexpr std::int64_t ps() const { return ps_; }
  [[nodiscard]] constexpr double to_seconds() const { return static_cast<double>(ps_) * 1e-12; }
  [[nodiscard]] constexpr double to_us() const { return static_cast<double>(ps_) * 1e-6; }
  [[nodiscard]] constexpr double to_ns() const { return static_cast<double>(ps_) * 1e-3; }

  constexpr auto operator<=>(const Time&) const = default;
  // Arithmetic throws TimeRangeError where int64 would overflow (a completion time now +
  // duration past 2^63 ps), instead of wrapping to a time in the past. One overflow-flag
  // branch each (__builtin_*_overflow, GCC and Clang).
  constexpr Time operator+(Time o) const {
    std::int64_t r = 0;
    if (__builtin_add_overflow(ps_, o.ps_, &r)) throw TimeRangeError(to_seconds() + o.to_seconds());
    return Time(r);
  }
  constexpr Time operator-(Time o) const {
    std::int64_t r = 0;
    if (__builtin_sub_overflow(ps_, o.ps_, &r)) throw TimeRangeError(to_seconds() - o.to_seconds());
    return Time(r);
  }
  constexpr Time& operator+=(Time o) { return *this = *this + o; }
  constexpr Time operator*(std::int64_t k) const {
    std::int64_t r = 0;
    if (__builtin_mul_overflow(ps_, k, &r)) throw TimeRangeError(to_seconds() * static_cast<double>(k));
    return Time(r);
  }

 private:
  constexpr explicit Time(std::int64_t ps) : ps_(ps) {}
  static bool in_range(double ps) { return std::isfinite(ps) && std::fabs(ps) <= kMaxSeconds * 1e12; }
  static Time from_scaled(double v, double scale) {
    // v / (1e12 / scale): the seconds asked for, without overflowing where v x scale does.
    if (!in_range(v * scale)) throw TimeRangeError(v / (1e12 / scale));
    return Time(std::llround(v * scale));
  }
  std::int64_t ps_ = 0;
};

}  // namespace shardsim

template <>
struct fmt::formatter<shardsim::Time> : fmt::formatter<double> {
  // Formats as seconds with an adaptive unit: "1.5us", "2ms", "0s".
  auto format(shardsim::Time t, fmt::format_context& ctx) const {
    const double s = t.to_seconds();
    const double a = std::fabs(s);
    if (a == 0) return fmt::format_to(ctx.out(), "0s");
    if (a >= 1) return fmt::format_to(ctx.out(), "{:g}s", s);
    if (a >= 1e-3) return fmt::format_to(ctx.out(), "{:g}ms", s * 1e3);
    if (a >= 1e-6) return fmt::format_to(ctx.out(), "{:g}us", s * 1e6);
    if (a >= 1e-9) return fmt::format_to(ctx.out(), "{:g}ns", s * 1e9);
    return fmt::format_to(ctx.out(), "{}ps", t.ps());
  }
};
