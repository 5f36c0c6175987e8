// Record schema (DESIGN 6): JSONL round trip and every validation rule of record_from_json.
#include <doctest/doctest.h>

#include <sstream>

#include "sim/error.hpp"
#include "traces/logs/record.hpp"

using shardsim::ConfigError;
using namespace shardsim::logs;

namespace {

BenchRecord sample() {
  BenchRecord r;
  r.source = "run.jsonl";
  r.host = "h0";
  r.date = "2025-01-01T00:00:00Z";
  r.backend = "mpi";
  r.collective = "allreduce";
  r.algorithm = "ring";
  r.ranks = 4;
  r.ranks_per_node = 1;
  r.bytes = 1048576;
  r.time_us = 1000;
  r.algbw_GBps = 1.048576;               // 1048576 B / 1000 us
  r.busbw_GBps = 1.048576 * 2 * 3 / 4;   // x 2(n-1)/n
  r.topology = {{"builder", "switch"}, {"n", 4}, {"bw", "400Mbit"}};
  return r;
}

std::string line_of(nlohmann::json j) { return j.dump() + "\n"; }

void expect_error(const std::string& text, const std::string& message) {
  std::istringstream in(text);
  CHECK_THROWS_WITH_AS(read_jsonl(in, "f.jsonl"), message.c_str(), ConfigError);
}

}  // namespace

TEST_CASE("records round-trip through JSON Lines, blank lines skipped") {
  auto a = sample();
  auto b = sample();
  b.collective = "pingpong";
  b.ranks = 2;
  b.peer = 1;
  a.gpus_per_thread = 8;
  b.algorithm.reset();
  b.ranks_per_node.reset();
  b.topology = nullptr;
  std::ostringstream out;
  write_jsonl(out, {a, b});
  std::istringstream in(out.str() + "\n   \n");
  const auto back = read_jsonl(in, "x");
  REQUIRE(back.size() == 2);
  CHECK(back[0] == a);
  CHECK(back[1] == b);
  CHECK(to_json(b)["algorithm"].is_null());
  CHECK_FALSE(to_json(a).contains("peer"));
  CHECK(to_json(a)["gpus_per_thread"] == 8);
  CHECK_FALSE(to_json(b).contains("gpus_per_thread"));
}

TEST_CASE("record validation names the line and the key") {
  const auto good = to_json(sample());
  auto j = good;
  j.erase("time_us");
  expect_error(line_of(j), "f.jsonl:1: missing key 'time_us'; expected every record key (DESIGN 6)");
  j = good;
  j["colour"] = 1;
  expect_error("\n" + line_of(j), "f.jsonl:2/colour: unknown key 'colour'; expected a record key (DESIGN 6)");
  j = good;
  j["collective"] = "allscatter";
  expect_error(line_of(j),
               "f.jsonl:1/collective: unknown collective 'allscatter'; expected one of allreduce, reducescatter, "
               "allgather, broadcast, reduce, alltoall, pingpong, exchange, sendrecv, stream");
  j = good;
  j["time_us"] = -1.0;
  expect_error(line_of(j), "f.jsonl:1/time_us: -1; expected a finite number >= 0");
  j = good;
  j["ranks"] = 0;
  expect_error(line_of(j), "f.jsonl:1/ranks: 0; expected an integer >= 1 or null");
  j = good;
  j["peer"] = 4;
  expect_error(line_of(j), "f.jsonl:1/peer: 4; expected a rank below ranks (4)");
  j = good;
  j["gpus_per_thread"] = 0;
  expect_error(line_of(j), "f.jsonl:1/gpus_per_thread: 0; expected an integer >= 1 or null");
  j = good;
  j["topology"] = 4;
  expect_error(line_of(j), "f.jsonl:1/topology: a number; expected a topology JSON object, a topology spec string or null");
  j = good;
  j["host"] = 3;
  expect_error(line_of(j), "f.jsonl:1/host: a number; expected a string");
  expect_error("{\"source\":", "f.jsonl:1: invalid JSON ([json.exception.parse_error.101] parse error at line 1, "
                               "column 11: syntax error while parsing value - unexpected end of input; expected "
                               "'[', '{', or a literal); expected one JSON record per line");
  expect_error("{\"collective\": " + std::string(600, '[') + std::string(600, ']') + "}\n",
               "f.jsonl:1: byte 526: JSON nested more than 512 levels; expected one JSON record per line");
}

TEST_CASE("collective names and bus bandwidth factors") {
  CHECK(canonical_collective("all_reduce") == "allreduce");
  CHECK(canonical_collective("Reduce-Scatter") == "reducescatter");
  CHECK(canonical_collective("bibw") == "exchange");
  CHECK_FALSE(canonical_collective("hypercube").has_value());
  CHECK(busbw_factor("allreduce", 4) == doctest::Approx(1.5).scale(0));     // 2(4-1)/4
  CHECK(busbw_factor("allgather", 4) == doctest::Approx(0.75).scale(0));    // (4-1)/4
  CHECK(busbw_factor("pingpong", 2) == 1.0);
  CHECK(is_point_to_point("exchange"));
  CHECK_FALSE(is_point_to_point("allgather"));
}
