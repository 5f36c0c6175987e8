#include "traces/importers/input.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <array>
#include <cstring>
#include <fstream>
#include <limits>

#include "sim/enum_names.hpp"
#include "sim/error.hpp"
#include "traces/importers/astra_v1.hpp"

namespace shardsim::importers {

namespace {
constexpr std::array<EnumName<Format>, 4> kFormats{{{Format::chakra, "chakra"},
                                                   {Format::chakra_json, "chakra-json"},
                                                   {Format::kineto, "kineto"},
                                                   {Format::astra_v1, "astra-v1"}}};
}  // namespace

const char* to_string(Format f) { return enum_name(kFormats, f); }

Format format_from_string(std::string_view name, const std::string& where) {
  return enum_from_name(kFormats, name, "trace format", where);
}

bool is_gzip(std::string_view data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

std::string gunzip(std::string_view data, const std::string& name, std::uint64_t max_bytes) {
  std::string out;
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  // windowBits 15 + 16: expect the gzip wrapper (zlib manual, inflateInit2).
  if (inflateInit2(&zs, 15 + 16) != Z_OK) throw std::runtime_error("zlib inflateInit2 failed");
  std::array<char, 1 << 16> buf{};
  std::size_t pos = 0;  // compressed bytes consumed so far
  auto fail = [&](const std::string& why) {
    inflateEnd(&zs);
    throw ConfigError(name, fmt::format("corrupted gzip stream at compressed byte {} ({})", pos, why),
                      "a complete gzip file");
  };
  while (true) {
    const std::size_t avail = std::min<std::size_t>(data.size() - pos, std::numeric_limits<uInt>::max() / 2);
    const auto* in = reinterpret_cast<const Bytef*>(data.data() + pos);
    zs.next_in = const_cast<Bytef*>(in);  // zlib's API is not const-correct; it never writes input
    zs.avail_in = static_cast<uInt>(avail);
    zs.next_out = reinterpret_cast<Bytef*>(buf.data());
    zs.avail_out = static_cast<uInt>(buf.size());
    const int rc = inflate(&zs, Z_NO_FLUSH);
    const auto consumed = static_cast<std::size_t>(zs.next_in - in);
    const std::size_t produced = buf.size() - zs.avail_out;
    pos += consumed;
    if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR) {
      fail(fmt::format("zlib: {}", zs.msg != nullptr ? zs.msg : "data error"));
    }
    if (out.size() + produced > max_bytes) fail(fmt::format("inflates to more than {} bytes", max_bytes));
    out.append(buf.data(), produced);
    if (rc == Z_STREAM_END) {
      // Concatenated members form one file (RFC 1952 2.2); trailing zero padding is tolerated.
      std::size_t rest = pos;
      while (rest < data.size() && data[rest] == '\0') ++rest;
      if (rest == data.size()) break;
      if (!is_gzip(data.substr(pos))) fail("trailing bytes after the gzip stream");
      inflateReset(&zs);
      continue;
    }
    if (consumed == 0 && produced == 0) {
      // No progress: zlib wants more input and there is none (Z_BUF_ERROR).
      fail("truncated: the stream ends inside a block");
    }
  }
  inflateEnd(&zs);
  return out;
}

std::string read_input(const std::string& path, std::uint64_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "cannot open the file", "a readable trace file");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw ConfigError(path, "read error", "a readable trace file");
  if (is_gzip(data)) return gunzip(data, path, max_bytes);
  return data;
}

std::optional<Format> detect_format(std::string_view data) {
  std::size_t i = 0;
  while (i < data.size() && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n')) ++i;
  if (i < data.size() && data[i] == '{') {
    // Both JSON forms name their top-level array early; look for the key, not a full parse.
    const std::string_view head = data.substr(0, std::min<std::size_t>(data.size(), 1 << 20));
    const auto wg = head.find("\"workload_graph\"");
    const auto te = head.find("\"traceEvents\"");
    if (wg != std::string_view::npos && (te == std::string_view::npos || wg < te)) return Format::chakra_json;
    if (te != std::string_view::npos) return Format::kineto;
    if (data.find("\"workload_graph\"") != std::string_view::npos) return Format::chakra_json;
    if (data.find("\"traceEvents\"") != std::string_view::npos) return Format::kineto;
    return std::nullopt;
  }
  std::size_t j = i;
  while (j < data.size() && data[j] != ' ' && data[j] != '\t' && data[j] != '\r' && data[j] != '\n') ++j;
  if (astra_v1_is_policy(data.substr(i, j - i))) return Format::astra_v1;
  // A Chakra ET stream starts with a varint length then a GlobalMetadata whose first field
  // is version (field 1, wire type 2: tag byte 0x0a) or attr (field 2: 0x12), or is empty.
  if (data.size() >= 2) {
    std::size_t k = 0;
    while (k < data.size() && k < 5 && (static_cast<unsigned char>(data[k]) & 0x80)) ++k;
    if (k < 5 && k + 1 < data.size()) {
      const auto tag = static_cast<unsigned char>(data[k + 1]);
      if (tag == 0x0a || tag == 0x12) return Format::chakra;
    }
  }
  return std::nullopt;
}

}  // namespace shardsim::importers
