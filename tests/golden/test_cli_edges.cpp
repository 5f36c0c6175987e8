// First-impression edges of the CLI (issue 17), end to end through the shardsim binary:
// simulated times beyond the int64 picosecond range are bad input (exit 2) naming the flag
// and its value; `topo show` summarises a JSON topology as it does a builder spec; a preset's
// device resolves the same way in step and plan; plan says what a step that does not fit
// would take.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "run_cli.hpp"

using shardsim::testing::run_cli;
using shardsim::testing::scratch_dir;
using shardsim::testing::write_text;

namespace {

void expect_bad(const std::vector<std::string>& args, const std::string& message) {
  const auto r = run_cli(args);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "shardsim: error: " + message + "\n");
}

// The lines of `text` that start with one of `prefixes`, in order.
std::string lines_starting(const std::string& text, const std::vector<std::string>& prefixes) {
  std::string out;
  std::size_t b = 0;
  while (b < text.size()) {
    const std::size_t e = text.find('\n', b);
    const std::string line = text.substr(b, e == std::string::npos ? std::string::npos : e - b);
    for (const auto& p : prefixes) {
      if (line.rfind(p, 0) == 0) out += line + "\n";
    }
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("a link rate or latency beyond the simulated time range: exit 2 naming the flag and the value") {
  // 1e-300 GB/s moves one byte in 1e291 s; the range is 9.2e6 s (2^63 ps is 9.22e6 s), so the
  // slowest rate accepted is 1/9.2e6 = 1.09e-7 B/s.
  const std::string slow = "bus:n=4,bw=1e-300GB/s,lat=1us";
  const std::string rate_msg = slow +
                               ": /bw: rate '1e-300GB/s' moves one byte in 1e+291 s, beyond the simulated time range; "
                               "expected a rate of at least 1.09e-07 B/s (one byte within 9.2e+06 s, about 106 days)";
  expect_bad({"collective", "--topology", slow}, rate_msg);
  expect_bad({"step", "--topology", slow, "--device", "h100", "--model", "gpt3-125m", "--batch-per-device", "1"}, rate_msg);
  const std::string late = "bus:n=4,bw=50MB/s,lat=1e300s";
  expect_bad({"collective", "--topology", late},
             late + ": /lat: time '1e300s' is beyond the simulated time range; expected a time of at most 9.2e+06 s "
                    "(about 106 days)");
  // The same bound on a custom graph's links (a JSON file: the JSON pointer of the link).
  const std::string d = scratch_dir("edges-range");
  const std::string file = d + "/slow_link.json";
  write_text(file, R"({"builder":"custom","nodes":[{"name":"a","kind":"device"},{"name":"b","kind":"device"}],
    "links":[{"src":"a","dst":"b","bw":"10GB/s","lat":"1e300s"}]})");
  expect_bad({"collective", "--topology", file},
             file + ": /links/0/lat: time '1e300s' is beyond the simulated time range; expected a time of at most "
                    "9.2e+06 s (about 106 days)");
  // --step-overhead is a simulated time too.
  expect_bad({"collective", "--topology", "bus:n=4,bw=50MB/s,lat=1us", "--step-overhead", "1e300s"},
             "--step-overhead: time '1e300s' is beyond the simulated time range; expected a time of at most 9.2e+06 s "
             "(about 106 days)");
}

TEST_CASE("a run whose simulated time overflows: exit 2 naming the inputs that set its times") {
  // 1 B/s is a representable rate, but a ring all-reduce of 1 GiB on a 4-device bus moves
  // S/4 = 2^28 bytes per flow with 4 flows sharing the medium: 2^28 / 0.25 = 1.07e9 s.
  const auto r = run_cli({"collective", "--topology", "bus:n=4,bw=1B/s,lat=1us", "--bytes", "1GiB", "--algorithm", "ring",
                          "--fidelity", "flow"});
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "shardsim: error: --topology bus:n=4,bw=1B/s,lat=1us --bytes 1GiB: a simulated time of 1.07374e+09 s is beyond "
        "the int64 picosecond range (+-9.2e+06 s, about 106 days); expected rates, latencies and sizes whose simulated "
        "times stay within it\n");
  // 4 MiB: each of the 6 ring steps takes 2^20 / 0.25 = 4.19e6 s, representable, but the
  // third ends past 2^63 ps: the sum overflows (no wrap to a time in the past, no hang).
  const auto sum = run_cli({"collective", "--topology", "bus:n=4,bw=1B/s,lat=1us", "--bytes", "4MiB", "--algorithm",
                            "ring", "--fidelity", "flow"});
  CHECK(sum.exit_code == 2);
  CHECK(sum.err.rfind("shardsim: error: --topology bus:n=4,bw=1B/s,lat=1us --bytes 4MiB: a simulated time of 1.2", 0) == 0);
  // A training step whose collectives overflow (flow fidelity): the step's time inputs.
  const auto s = run_cli({"step", "--topology", "bus:n=4,bw=1B/s,lat=1us", "--device", "h100", "--model", "gpt3-125m",
                          "--batch-per-device", "1", "--fidelity", "flow"});
  CHECK(s.exit_code == 2);
  CHECK(s.out.empty());
  CHECK(s.err.rfind("shardsim: error: --model gpt3-125m --topology bus:n=4,bw=1B/s,lat=1us --batch-per-device 1: a "
                    "simulated time of ", 0) == 0);
  CHECK(s.err.find(" s is beyond the int64 picosecond range (+-9.2e+06 s, about 106 days); expected rates, latencies "
                   "and sizes whose simulated times stay within it\n") != std::string::npos);
  // The analytical evaluator works in double seconds: the same input is a (long) answer.
  const auto a = run_cli({"collective", "--topology", "bus:n=4,bw=1B/s,lat=1us", "--bytes", "1GiB", "--algorithm", "ring",
                          "--json"});
  CHECK(a.exit_code == 0);
}

TEST_CASE("topo show: a JSON topology gets the same summary as a builder spec, its lists summarised") {
  // A custom graph that is the `switch` builder's star by hand: 4 devices, one switch, a
  // duplex 10 GB/s ethernet link from each device to it.
  std::string nodes = R"({"name":"sw","kind":"switch"})", links;
  for (int i = 0; i < 4; ++i) {
    nodes += R"(,{"name":"d)" + std::to_string(i) + R"(","kind":"device"})";
    links += std::string(i ? "," : "") + R"({"src":"d)" + std::to_string(i) + R"(","dst":"sw","bw":"10GB/s","lat":"1us"})";
  }
  const std::string json = R"({"builder":"custom","nodes":[)" + nodes + R"(],"links":[)" + links + "]}";
  const std::string d = scratch_dir("edges-topo");
  const std::string file = d + "/star.json";
  write_text(file, json);
  const auto spec = run_cli({"topo", "show", "switch:n=4,bw=10GB/s,lat=1us"});
  const auto from_file = run_cli({"topo", "show", file});
  const auto inline_json = run_cli({"topo", "show", json});
  REQUIRE(spec.exit_code == 0);
  REQUIRE(from_file.exit_code == 0);
  REQUIRE(inline_json.exit_code == 0);
  // Devices, switches, links per class and the diameter agree line for line; the bisection
  // agrees in value (floor(4/2) x 10 GB/s = 20 GB/s: a closed form for the builder, a max-flow
  // for the hand-made graph, each labelled).
  const std::vector<std::string> same = {"devices:", "switches:", "directed links:", "  ", "injection:", "diameter:"};
  CHECK(lines_starting(from_file.out, same) == lines_starting(spec.out, same));
  CHECK(lines_starting(inline_json.out, same) == lines_starting(spec.out, same));
  CHECK(lines_starting(spec.out, {"devices:", "  "}) == "devices:        4\n  ethernet  8 links at 10 GB/s\n");
  CHECK(lines_starting(spec.out, {"bisection:"}) == "bisection:      20 GB/s (closed form: floor(n/2) x bw)\n");
  CHECK(lines_starting(from_file.out, {"bisection:"}) ==
        "bisection:      20 GB/s (max-flow between the two halves of the rank order)\n");
  // The config line: a builder spec's scalars in full, a custom graph's lists by their size.
  CHECK(lines_starting(spec.out, {"config:"}).find("\"bw\":\"10GB/s\"") != std::string::npos);
  CHECK(lines_starting(from_file.out, {"config:"}) ==
        "config:         {\"builder\":\"custom\",\"devices_forward\":false,\"links\":[4 entries],\"nodes\":[5 "
        "entries]} (--json for the full config)\n");
  CHECK(from_file.out.find("\"src\"") == std::string::npos);
  // A preset (scalars and short lists such as the torus dims) is shown whole, as --json has it.
  const auto preset = run_cli({"topo", "show", "tpu-v3-8"});
  const auto preset_json = run_cli({"topo", "show", "tpu-v3-8", "--json"});
  REQUIRE(preset.exit_code == 0);
  REQUIRE(preset_json.exit_code == 0);
  CHECK(lines_starting(preset.out, {"config:"}) ==
        "config:         " + nlohmann::json::parse(preset_json.out).at("config").dump() + "\n");
  CHECK(lines_starting(preset.out, {"config:"}).find("\"dims\":[2,4]") != std::string::npos);
  // --json keeps the full configuration.
  const auto j = run_cli({"topo", "show", file, "--json"});
  REQUIRE(j.exit_code == 0);
  const auto cfg = nlohmann::json::parse(j.out).at("config");
  CHECK(cfg.at("links").size() == 4);
  CHECK(cfg.at("nodes").size() == 5);
  CHECK(cfg.at("links").at(0).at("bw") == "10GB/s");
}

TEST_CASE("a preset's device resolves alike in step and plan: dgx-a100 carries a100-80gb (issue 12)") {
  const auto s = run_cli({"step", "--topology", "dgx-a100-8", "--model", "gpt3-125m", "--batch-per-device", "1", "--json"});
  REQUIRE(s.exit_code == 0);
  CHECK(nlohmann::json::parse(s.out).at("device") == "a100-80gb");
  // plan used to fail here with "--hardware: unknown device 'a100'".
  const auto p = run_cli({"plan", "--search", "dp", "--model", "gpt3-125m", "--steps", "10", "--global-batch", "8", "--hardware",
                          "dgx-a100-8", "--strategies", "zero3", "--json"});
  CHECK(p.err.empty());
  REQUIRE(p.exit_code == 0);
  const auto pareto = nlohmann::json::parse(p.out).at("pareto");
  REQUIRE(pareto.size() == 1);
  CHECK(pareto.at(0).at("device") == "a100-80gb");
  CHECK(pareto.at(0).at("hbm_bytes") == 80.0 * (1ULL << 30));
}

TEST_CASE("plan --search: an unknown search is exit 2 listing the searches") {
  const auto p = run_cli({"plan", "--search", "grid", "--model", "gpt3-125m", "--steps", "10", "--global-batch", "8",
                          "--hardware", "dgx-a100-8"});
  CHECK(p.exit_code == 2);
  CHECK(p.err.find("--search: unknown search 'grid'; expected one of auto, dp, mesh") != std::string::npos);
}

TEST_CASE("plan: a configuration that does not fit says what overflows and what the step would take") {
  const auto p = run_cli({"plan", "--search", "dp", "--model", "gpt3-175b", "--steps", "1", "--global-batch", "8", "--hardware", "dgx-h100-8",
                          "--strategies", "replicated", "--buckets", "25MiB"});
  CHECK(p.exit_code == 3);  // nothing feasible
  const auto j = run_cli({"plan", "--search", "dp", "--model", "gpt3-175b", "--steps", "1", "--global-batch", "8", "--hardware",
                          "dgx-h100-8", "--strategies", "replicated", "--buckets", "25MiB", "--json"});
  const auto rejected = nlohmann::json::parse(j.out).at("rejected");
  REQUIRE(rejected.size() == 1);
  const std::string reason = rejected.at(0).at("rejected").get<std::string>();
  CHECK(reason.rfind("does not fit: peak ", 0) == 0);
  CHECK(reason.find(" > HBM 80 GiB (optimizer ") != std::string::npos);
  CHECK(reason.find(" is the largest term; ") != std::string::npos);
  CHECK(reason.find("; if it fit: step ") != std::string::npos);
  CHECK(p.out.find("  dgx-h100-8 x8 replicated bucket 25 MiB: " + reason + "\n") != std::string::npos);
}
