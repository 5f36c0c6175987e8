#pragma once
// Reading trace files: whole-file reads, transparent gzip, format names and sniffing.
//
// Contract: every function throws shardsim::ConfigError for bad input, with `where` starting
// with the file name (and the byte offset where one applies); nothing here exits or aborts.
// Complexity: linear in the file size; inflated output is capped (max_bytes) so a gzip bomb
// is an error, not an out-of-memory crash.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shardsim::importers {

/// Importable formats (`shardsim trace import --format ...`).
enum class Format : std::uint8_t { chakra, chakra_json, kineto, astra_v1 };

/// "chakra", "chakra-json", "kineto", "astra-v1".
const char* to_string(Format f);
/// Inverse of to_string; throws ConfigError(where, ..., list of names).
Format format_from_string(std::string_view name, const std::string& where);

/// Default cap on inflated bytes: 4 GiB (a Kineto trace of a long run is a few GB at most).
inline constexpr std::uint64_t kDefaultMaxBytes = std::uint64_t{4} << 30;

/// True when `data` starts with the gzip magic 1f 8b (RFC 1952, section 2.3.1).
bool is_gzip(std::string_view data);

/// Inflates a gzip stream (one or more concatenated members, RFC 1952) with zlib. Errors name
/// `name` and the offset in the compressed input where zlib stopped: "<name>: corrupted gzip
/// stream at compressed byte 1234 (zlib: invalid block type); expected a complete gzip file".
std::string gunzip(std::string_view data, const std::string& name,
                   std::uint64_t max_bytes = kDefaultMaxBytes);

/// Reads `path` whole and inflates it when it is gzip (by content, not by extension).
std::string read_input(const std::string& path, std::uint64_t max_bytes = kDefaultMaxBytes);

/// Guesses the format from (already inflated) content: JSON with "workload_graph" ->
/// chakra-json, JSON with "traceEvents" -> kineto, first word DATA/MICRO/MODEL/HYBRID_*/...
/// -> astra-v1, otherwise a varint-prefixed protobuf stream -> chakra. nullopt if none fits.
std::optional<Format> detect_format(std::string_view data);

/// Display name of a path for error messages: the path as given.
inline const std::string& display_name(const std::string& path) { return path; }

}  // namespace shardsim::importers
