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
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardsim::units {

std::uint64_t parse_bytes(std::string_view text, std::string_view where);
double parse_rate_Bps(std::string_view text, std::string_view where);
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
