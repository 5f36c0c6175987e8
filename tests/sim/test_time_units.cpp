#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "sim/error.hpp"
#include "sim/time.hpp"
#include "sim/units.hpp"

using namespace shardsim;

TEST_CASE("Time converts at the boundary and rounds to picoseconds") {
  CHECK(Time::from_us(1.5).ps() == 1'500'000);
  CHECK(Time::from_ns(936).ps() == 936'000);
  CHECK(Time::from_seconds(2.0).ps() == 2'000'000'000'000);
  CHECK(Time::ceil_seconds(1e-12 * 2.2).ps() == 3);
  CHECK(Time::ceil_seconds(1e-12 * 3.0).ps() == 3);
  CHECK(fmt::format("{}", Time::from_us(1.5)) == "1.5us");
  CHECK(fmt::format("{}", Time::from_ps(7)) == "7ps");
  CHECK_THROWS_AS((void)Time::from_seconds(1e9), std::out_of_range);  // > 106 days
}

TEST_CASE("sizes: K/M/G are 1024^k, KB/MB/GB 1000^k") {
  CHECK(units::parse_bytes("64MiB", "--bytes") == 64ull << 20);
  CHECK(units::parse_bytes("1K", "--bytes") == 1024);
  CHECK(units::parse_bytes("1G", "--bytes") == 1ull << 30);
  CHECK(units::parse_bytes("1GB", "--bytes") == 1'000'000'000ull);
  CHECK(units::parse_bytes("512", "--bytes") == 512);
  CHECK(units::parse_bytes("1.5KiB", "--bytes") == 1536);
}

TEST_CASE("rates: bytes and bits") {
  CHECK(units::parse_rate_Bps("100GB/s", "bw") == doctest::Approx(100e9).scale(0));
  CHECK(units::parse_rate_Bps("400Gb/s", "bw") == doctest::Approx(50e9).scale(0));
  CHECK(units::parse_rate_Bps("400Gbps", "bw") == doctest::Approx(50e9).scale(0));
  CHECK(units::parse_rate_Bps("400Mbit", "bw") == doctest::Approx(50e6).scale(0));
  CHECK(units::parse_rate_Bps("50MB/s", "bw") == doctest::Approx(50e6).scale(0));
  CHECK(units::parse_seconds("1us", "lat") == doctest::Approx(1e-6).scale(0));
  CHECK(units::parse_seconds("936ns", "lat") == doctest::Approx(936e-9).scale(0));
}

TEST_CASE("size ranges follow nccl-tests -b/-e/-f") {
  const auto v = units::parse_size_range("1K:1M:x4", "--bytes");
  REQUIRE(v.size() == 6);  // 1K 4K 16K 64K 256K 1M
  CHECK(v.front() == 1024);
  CHECK(v.back() == 1ull << 20);
  CHECK(units::parse_size_range("1M:3M:+1M", "--bytes").size() == 3);
  CHECK(units::parse_size_range("1K,64K", "--bytes") == std::vector<std::uint64_t>{1024, 65536});
}

TEST_CASE("bad units are errors that name the place, the text and what was expected") {
  try {
    (void)units::parse_bytes("64MiBs", "--bytes");
    FAIL("no throw");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "--bytes: unknown unit 'MiBs' in '64MiBs'; expected a size such as 64MiB, 1G (K/M/G/T and "
          "KiB/MiB/GiB/TiB = 1024^k; KB/MB/GB/TB = 1000^k)");
  }
  try {
    (void)units::parse_rate_Bps("0GB/s", "/bw");
    FAIL("no throw");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "/bw: non-positive rate '0GB/s'; expected a rate greater than zero");
  }
  try {
    (void)units::parse_rate_Bps("-5GB/s", "/bw");
    FAIL("no throw");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "/bw: non-positive rate '-5GB/s'; expected a rate greater than zero");
  }
  CHECK_THROWS_WITH_AS((void)units::parse_seconds("5", "lat"),
                       "lat: '5' has no unit; expected a time such as 1us, 936ns, 2ms, 0.5s (units ps ns us ms s)",
                       ConfigError);
  CHECK_THROWS_AS((void)units::parse_bytes("nan", "x"), ConfigError);
  CHECK_THROWS_AS((void)units::parse_size_range("1M:1K", "x"), ConfigError);
  CHECK_THROWS_AS((void)units::parse_size_range("1K:1M:x1", "x"), ConfigError);
}

TEST_CASE("ceil_seconds is std::ceil of the picoseconds (less 1e-6 ps) over the whole range") {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-14, 6);  // 10 fs .. 11 days, both signs
  for (int i = 0; i < 200'000; ++i) {
    const double s = mantissa(rng) * std::pow(10.0, exponent(rng));
    CHECK(Time::ceil_seconds(s).ps() == static_cast<std::int64_t>(std::ceil(s * 1e12 - 1e-6)));
  }
  for (double s : {0.0, -0.0, 1e-12, -1e-12, 0.5e-12, 4.5e6, -4.5e6}) {
    CHECK(Time::ceil_seconds(s).ps() == static_cast<std::int64_t>(std::ceil(s * 1e12 - 1e-6)));
  }
  CHECK_THROWS_AS(Time::ceil_seconds(1e8), std::out_of_range);
}

TEST_CASE("the simulated time range: conversions throw TimeRangeError with the seconds asked for") {
  // 2^63 - 1 ps = 9.223e6 s; the bound kMaxSeconds = 9.2e6 s sits just inside it.
  CHECK(Time::kMaxSeconds * 1e12 < static_cast<double>(std::numeric_limits<std::int64_t>::max()));
  CHECK(Time::from_seconds(Time::kMaxSeconds).ps() == 9'200'000'000'000'000'000);
  CHECK(Time::ceil_seconds(Time::kMaxSeconds).ps() == 9'200'000'000'000'000'000);
  for (double s : {9.3e6, -9.3e6, 1e300, HUGE_VAL, std::nan("")}) {
    try {
      (void)Time::ceil_seconds(s);
      FAIL("no TimeRangeError for " << s);
    } catch (const TimeRangeError& e) {
      CHECK((std::isnan(s) ? std::isnan(e.seconds()) : e.seconds() == s));
    }
  }
  try {
    (void)Time::from_ms(1e300);  // 1e300 ms x 1e9 ps/ms overflows the double: still 1e297 s
    FAIL("no TimeRangeError");
  } catch (const TimeRangeError& e) {
    CHECK(e.seconds() == doctest::Approx(1e297).scale(0));
    CHECK(std::string(e.what()) ==
          "a simulated time of 1e+297 s is beyond the int64 picosecond range (+-9.2e+06 s, about 106 days)");
  }
}

TEST_CASE("rates and times whose simulated times cannot be represented are bad input") {
  // One byte at the slowest accepted rate takes exactly the range.
  CHECK(units::kMinRate_Bps == 1 / Time::kMaxSeconds);
  CHECK(units::parse_rate_Bps("0.11B/s", "bw") == doctest::Approx(0.11).scale(0));  // 1 byte in 9.1 s
  CHECK(units::parse_rate_Bps("1.1e-7B/s", "bw") == doctest::Approx(1.1e-7).scale(0));
  CHECK_THROWS_WITH(units::parse_rate_Bps("1e-7B/s", "/bw"),
                    "/bw: rate '1e-7B/s' moves one byte in 1e+07 s, beyond the simulated time range; expected a rate "
                    "of at least 1.09e-07 B/s (one byte within 9.2e+06 s, about 106 days)");
  CHECK_THROWS_WITH(units::parse_rate_Bps("1e-300GB/s", "/bw"),
                    "/bw: rate '1e-300GB/s' moves one byte in 1e+291 s, beyond the simulated time range; expected a "
                    "rate of at least 1.09e-07 B/s (one byte within 9.2e+06 s, about 106 days)");
  CHECK(units::parse_seconds("9.2e6s", "/lat") == 9.2e6);
  CHECK(units::parse_seconds("106ms", "/lat") == doctest::Approx(0.106).scale(0));
  CHECK_THROWS_WITH(units::parse_seconds("1e300s", "/lat"),
                    "/lat: time '1e300s' is beyond the simulated time range; expected a time of at most 9.2e+06 s "
                    "(about 106 days)");
  CHECK_THROWS_WITH(units::parse_seconds("9.3e9ms", "/lat"),
                    "/lat: time '9.3e9ms' is beyond the simulated time range; expected a time of at most 9.2e+06 s "
                    "(about 106 days)");
}

TEST_CASE("Time arithmetic throws TimeRangeError instead of wrapping past 2^63 ps") {
  const Time big = Time::from_seconds(5e6);
  CHECK((big + Time::from_seconds(4e6)).ps() == 9'000'000'000'000'000'000);
  CHECK_THROWS_AS((void)(big + big), TimeRangeError);  // 1e7 s > 2^63 ps = 9.22e6 s
  CHECK_THROWS_AS((void)(Time::zero() - big - big), TimeRangeError);
  CHECK_THROWS_AS((void)(big * 2), TimeRangeError);
  CHECK((Time::from_seconds(3e6) * 3).ps() == 9'000'000'000'000'000'000);
  Time t = big;
  CHECK_THROWS_AS(t += big, TimeRangeError);
  try {
    (void)(big + big);
  } catch (const TimeRangeError& e) {
    CHECK(e.seconds() == 1e7);
  }
}
