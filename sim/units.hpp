#pragma once
// Units at the boundary (DESIGN 2). Parse once, then base units everywhere inside:
// bytes (uint64), bytes per second (double), seconds (double) or Time.
//
// Sizes:  K M G T and KiB MiB GiB TiB are powers of 1024 (as nccl-tests -b/-e);
//         KB MB GB TB are powers of 1000; B or no suffix is bytes.
// Rates:  B/s KB/s MB/s GB/s TB/s (bytes, powers of 1000), KiB/s MiB/s GiB/s (bytes,
//         powers of 1024), bit/s kb/s Kb/s Mb/s Gb/s Tb/s, kbit Mbit Gbit, Gbps (bits).
// Times:  ps ns us ms s.
// Every parser throws ConfigError naming `where` (a flag or a JSON pointer), the text found
// and what was expected. Negative, NaN, infinite and empty values are errors.
// Simulated-time bound (sim/time.hpp, Time::kMaxSeconds = 9.2e6 s, about 106 days): a time
// beyond it and a rate below kMinRate_Bps (one byte would take longer) are errors too, so a
// link's latency and the time of its smallest transfer are representable as Time.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/time.hpp"

namespace shardsim::units {

/// The slowest rate accepted: one byte in Time::kMaxSeconds (9.2e6 s), i.e. 1/9.2e6 B/s.
inline constexpr double kMinRate_Bps = 1.0 / Time::kMaxSeconds;

std::uint64_t parse_bytes(std::string_view text, std::string_view where);
double parse_rate_Bps(std::string_view text, std::string_view where);
/// Seconds, at most Time::kMaxSeconds (a simulated time; durations beyond it, such as a
/// planning deadline, parse their own units).
double parse_seconds(std::string_view text, std::string_view where);

/// A plain positive count with an optional K/M/G/T (x1000) or e-notation, e.g. "300B" tokens
/// is NOT accepted here (ambiguous with bytes); "3e11", "300G" are.
double parse_count(std::string_view text, std::string_view where);

/// "1K:1G:x4" (geometric, factor 4), "1M:64M:+1M" (arithmetic), "64MiB" (one size), or a
/// comma list "1K,64K,1M". Bounds inclusive, as nccl-tests -b/-e/-f/-i.
std::vector<std::uint64_t> parse_size_range(std::string_view text, std::string_view where);

/// Human formatting for tables: "64 MiB", "1.5 GiB", "512 B"; "400 GB/s"; "1.23 ms".
std::string format_bytes(std::uint64_t bytes);
std::string format_rate(double bytes_per_s);
std::string format_seconds(double seconds);

}  // namespace shardsim::units
