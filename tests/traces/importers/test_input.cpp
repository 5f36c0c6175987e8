// File reading: gzip (RFC 1952) with zlib, corrupted streams, format detection.
#include <doctest/doctest.h>
#include <zlib.h>

#include <fmt/format.h>

#include <cstring>

#include "helpers.hpp"
#include "traces/importers/input.hpp"
#include "traces/importers/kineto.hpp"

using namespace shardsim::importers;
using shardsim::test::error_of;
using shardsim::test::fixture;

namespace {
std::string gzip(const std::string& text) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  REQUIRE(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(compressBound(static_cast<uLong>(text.size())) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}
}  // namespace

TEST_CASE("gzip round trip, concatenated members") {
  const std::string text(100000, 'x');
  CHECK(gunzip(gzip(text), "a.gz") == text);
  CHECK(gunzip(gzip("ab") + gzip("cd"), "b.gz") == "abcd");
}

TEST_CASE("corrupted gzip names the compressed byte offset") {
  const std::string z = gzip(std::string(5000, 'y') + "tail");
  // Cut inside the deflate data: zlib has consumed every byte given when it runs dry.
  CHECK(error_of([&] { gunzip(z.substr(0, 20), "t.gz"); }) ==
        "t.gz: corrupted gzip stream at compressed byte 20 (truncated: the stream ends inside a block); "
        "expected a complete gzip file");
  // Flip the CRC-32 trailer (the 8 last bytes are CRC-32 then ISIZE, RFC 1952 2.2): zlib
  // reports it once it has read the 4 CRC bytes.
  std::string bad = z;
  bad[bad.size() - 8] = static_cast<char>(bad[bad.size() - 8] ^ 0x55);
  CHECK(error_of([&] { gunzip(bad, "c.gz"); }) ==
        fmt::format("c.gz: corrupted gzip stream at compressed byte {} (zlib: incorrect data check); "
                    "expected a complete gzip file", z.size() - 4));
  CHECK(error_of([&] { gunzip(z + "junk", "j.gz"); }) ==
        fmt::format("j.gz: corrupted gzip stream at compressed byte {} (trailing bytes after the gzip stream); "
                    "expected a complete gzip file", z.size()));
  CHECK(error_of([&] { gunzip(gzip(std::string(10000, 'z')), "big.gz", 4096); }).starts_with(
      "big.gz: corrupted gzip stream at compressed byte "));
}

TEST_CASE("format detection on every fixture") {
  CHECK(detect_format(read_input(fixture("chakra_et/all_reduce_4npus_1MB/all_reduce.0.et"))) == Format::chakra);
  CHECK(detect_format(read_input(fixture("chakra_json/small_chakra.0.json"))) == Format::chakra_json);
  CHECK(detect_format(read_input(fixture("kineto/sampled_rank-0.json.gz"))) == Format::kineto);
  CHECK(detect_format(read_input(fixture("astra_sim_v1/workload_DLRM_HybridParallel.txt"))) == Format::astra_v1);
  CHECK_FALSE(detect_format("hello").has_value());
  CHECK(error_of([] { format_from_string("otf2", "--format"); }) ==
        "--format: unknown trace format 'otf2'; expected one of chakra, chakra-json, kineto, astra-v1");
  CHECK(error_of([] { read_input("/nonexistent/x.et"); }) ==
        "/nonexistent/x.et: cannot open the file; expected a readable trace file");
}

TEST_CASE("JSON nested deeper than 512 levels is an error at the offending byte") {
  const std::string deep = "{\"traceEvents\": " + std::string(600, '[') + std::string(600, ']') + "}";
  CHECK(error_of([&] { decode_kineto(deep, "k.json"); }) ==
        "k.json: byte 527: JSON nested more than 512 levels; expected a trace file");
  // fuzz_topology_json: nlohmann reports a number beyond a double as out_of_range, without a position.
  CHECK(error_of([] { decode_kineto(R"({"traceEvents": [], "x": 1e999})", "k.json"); }) ==
        "k.json: byte 25: invalid JSON (number overflow parsing '1e999'); expected valid JSON");
}
