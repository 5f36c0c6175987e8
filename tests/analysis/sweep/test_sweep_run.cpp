// Running sweeps: exact CSV/JSONL output, statuses, order independent of threads, resume from
// any truncation, SIGKILL and interrupt then --resume give the uninterrupted bytes.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "analysis/sweep/csv_read.hpp"
#include "analysis/sweep/engine.hpp"
#include "analysis/sweep/output.hpp"
#include "analysis/sweep/progress.hpp"
#include "fake_commands.hpp"
#include "sim/error.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace shardsim::sweep;

namespace {

fs::path tmp_dir() {
  const fs::path d = fs::temp_directory_path() / ("shardsim-sweep-test-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << s;
}

SweepSpec make_spec(const json& axes, json base = json()) {
  shardsim::test::register_fake_commands();
  if (base.is_null()) base = {{"command", "fake"}, {"x", 1}, {"y", 2.5}, {"label", "a"}, {"mode", "ok"}};
  return SweepSpec(json{{"base", base}, {"axes", axes}}, "t.json");
}

SweepSummary run(const SweepSpec& s, const fs::path& out, unsigned jobs, bool resume = false,
                 const std::atomic<bool>* stop = nullptr, std::function<void(std::uint64_t, std::uint64_t)> progress = {}) {
  SweepOptions o;
  o.out = out.string();
  o.jobs = jobs;
  o.resume = resume;
  o.stop = stop;
  o.progress = std::move(progress);
  return run_sweep(s, o);
}

const json kModes = json::parse(R"([{"pointer":"/x","values":[1,2]},{"pointer":"/mode","values":["invalid","ok","nofit"]}])");

}  // namespace

TEST_CASE("CSV: header from the first result, axis columns, statuses and reasons, rows in scenario order") {
  const auto spec = make_spec(kModes);
  const fs::path out = tmp_dir() / "modes.csv";
  const auto sum = run(spec, out, 2);
  auto h = [&](int i) { return scenario_hash(spec.scenario(static_cast<std::uint64_t>(i))); };
  // Result columns: the keys of scenario 1's result (the first with a result), sorted, without
  // "config". x = 1 or 2, y = 2.5, product_s = x * y.
  const std::string expected =
      "scenario,hash,status,reason,/x,/mode,fits,label,product_s,x,y\n"
      "0," + h(0) + ",invalid,--mode: 'invalid'; expected ok,1,invalid,,,,,\n"
      "1," + h(1) + ",ok,,1,ok,true,a,2.5,1,2.5\n"
      "2," + h(2) + ",does-not-fit,needs 2x the memory,1,nofit,false,a,2.5,1,2.5\n"
      "3," + h(3) + ",invalid,--mode: 'invalid'; expected ok,2,invalid,,,,,\n"
      "4," + h(4) + ",ok,,2,ok,true,a,5,2,2.5\n"
      "5," + h(5) + ",does-not-fit,needs 2x the memory,2,nofit,false,a,5,2,2.5\n";
  CHECK(slurp(out) == expected);
  CHECK(sum.total == 6);
  CHECK(sum.written == 6);
  CHECK(sum.ok == 2);
  CHECK(sum.does_not_fit == 2);
  CHECK(sum.invalid == 2);
  CHECK(sum.errors == 0);
  CHECK(sum.dropped_columns == std::set<std::string>{"reason"});  // only nofit results have it
}

TEST_CASE("a scenario whose simulated time leaves the int64 picosecond range is invalid, not an error") {
  const auto spec = make_spec(json::parse(R"([{"pointer":"/mode","values":["ok","overflow"]}])"));
  const fs::path out = tmp_dir() / "overflow.jsonl";
  const auto sum = run(spec, out, 1);
  CHECK(sum.ok == 1);
  CHECK(sum.invalid == 1);
  CHECK(sum.errors == 0);
  const std::string text = slurp(out);
  CHECK(text.find(R"x("reason":"a simulated time of 1e+300 s is beyond the int64 picosecond range (+-9.2e+06 s, about 106 days)","result":null,"scenario":1,"status":"invalid")x") != std::string::npos);
}

TEST_CASE("JSONL keeps the whole result, axes by pointer; internal errors get status error") {
  const auto spec = make_spec(json::parse(R"([{"pointer":"/mode","values":["ok","crash"]}])"));
  const fs::path out = tmp_dir() / "modes.jsonl";
  const auto sum = run(spec, out, 1);
  const std::string h0 = scenario_hash(spec.scenario(0)), h1 = scenario_hash(spec.scenario(1));
  CHECK(slurp(out) ==
        R"({"axes":{"/mode":"ok"},"hash":")" + h0 +
            R"(","reason":"","result":{"config":{"label":"a","mode":"ok","x":1,"y":2.5},"fits":true,"label":"a","product_s":2.5,"x":1.0,"y":2.5},"scenario":0,"status":"ok"})"
            "\n"
            R"({"axes":{"/mode":"crash"},"hash":")" + h1 + R"(","reason":"boom","result":null,"scenario":1,"status":"error"})"
            "\n");
  CHECK(sum.errors == 1);
}

TEST_CASE("a command returning k results gives k rows with the scenario's index and hash") {
  const auto spec = make_spec(json::parse(R"([{"pointer":"/x","values":[3]}])"),
                              json{{"command", "fake"}, {"x", 1}, {"mode", "multi"}});
  const fs::path out = tmp_dir() / "multi.csv";
  run(spec, out, 1);
  const std::string h = scenario_hash(spec.scenario(0));
  // y defaults to 1: product_s = 3 and 2 x 3.
  CHECK(slurp(out) == "scenario,hash,status,reason,/x,fits,label,product_s,x,y\n"
                      "0," + h + ",ok,,3,true,,3,3,1\n"
                      "0," + h + ",ok,,3,true,,6,3,1\n");
}

TEST_CASE("output bytes do not depend on jobs, window or completion order") {
  // Earlier scenarios sleep longer, so with several workers they finish last.
  const auto spec = make_spec(json::parse(R"([{"zip":[{"pointer":"/x","values":[1,2,3,4,5,6,7,8,9,10,11,12]},
      {"pointer":"/delay_ms","values":[12,11,10,9,8,7,6,5,4,3,2,1]}]}])"),
                              json{{"command", "fake"}, {"x", 1}, {"delay_ms", 0}});
  const fs::path a = tmp_dir() / "order1.csv", b = tmp_dir() / "order4.csv", c = tmp_dir() / "order-window.csv";
  run(spec, a, 1);
  run(spec, b, 4);
  SweepOptions o;
  o.out = c.string();
  o.jobs = 3;
  o.window = 2;
  run_sweep(spec, o);
  const auto csv = read_csv(a.string(), "a");
  REQUIRE(csv.rows.size() == 12);
  for (std::size_t i = 0; i < 12; ++i) CHECK(csv.rows[i][0] == std::to_string(i));
  CHECK(slurp(b) == slurp(a));
  CHECK(slurp(c) == slurp(a));
}

TEST_CASE("--resume from every possible truncation of the file gives the uninterrupted bytes") {
  for (const char* ext : {".csv", ".jsonl"}) {
    for (const json& base : {json{{"command", "fake"}, {"x", 1}, {"y", 2.5}, {"label", "a"}, {"mode", "ok"}},
                             json{{"command", "fake"}, {"x", 1}, {"y", 2.5}, {"label", "a"}, {"mode", "multi"}}}) {
      const bool multi = base["mode"] == "multi";
      const auto spec = make_spec(multi ? json::parse(R"([{"pointer":"/x","values":[1,2,3]}])") : kModes, base);
      const fs::path full = tmp_dir() / (std::string("full") + ext), part = tmp_dir() / (std::string("part") + ext);
      run(spec, full, 2);
      const std::string want = slurp(full);
      REQUIRE(!want.empty());
      for (std::size_t len = 0; len <= want.size(); ++len) {
        spit(part, want.substr(0, len));
        run(spec, part, 2, true);
        const std::string got = slurp(part);
        CHECK_MESSAGE(got == want, ext << (multi ? " multi" : " modes") << " truncated at byte " << len);
        if (got != want) break;
      }
    }
  }
}

TEST_CASE("--resume refuses the output of another sweep, naming the line") {
  const auto spec = make_spec(kModes);
  const fs::path out = tmp_dir() / "other.csv";
  run(make_spec(json::parse(R"([{"pointer":"/x","values":[1,3]},{"pointer":"/mode","values":["invalid","ok","nofit"]}])")),
      out, 1);
  const std::string tail = "the output of this same sweep (or run without --resume to start over)";
  try {
    run(spec, out, 1, true);
    FAIL("no error");
  } catch (const shardsim::ConfigError& e) {
    // Lines 2-4 are scenarios 0-2 (x = 1, the same in both sweeps); line 5 is x = 3.
    const auto other = make_spec(json::parse(R"([{"pointer":"/x","values":[1,3]},{"pointer":"/mode","values":["invalid","ok","nofit"]}])"));
    CHECK(std::string(e.what()) == out.string() + ": line 5: scenario 3 with hash " + scenario_hash(other.scenario(3)) +
                                       "; expected hash " + scenario_hash(spec.scenario(3)) + " (the sweep file changed?): " + tail);
  }
  run(make_spec(json::parse(R"([{"pointer":"/y","values":[1.5]}])")), out, 1);
  try {
    run(spec, out, 1, true);
    FAIL("no error");
  } catch (const shardsim::ConfigError& e) {
    CHECK(std::string(e.what()) == out.string() +
                                       ": line 1: the header 'scenario,hash,status,reason,/y,fits,label,product_s,x,y'; expected " +
                                       tail);
  }
  const std::string bad_out = "--out: '" + (tmp_dir() / "r.txt").string() + "'; expected a file ending in .csv or .jsonl";
  CHECK_THROWS_WITH(run(spec, tmp_dir() / "r.txt", 1), bad_out.c_str());
}

TEST_CASE("a sweep killed with SIGKILL and rerun with --resume gives the uninterrupted file") {
  // 120 scenarios of 25 ms on 2 workers: about 1.5 s; the child is killed once 20 rows are in
  // (about 0.25 s). With 5 ms scenarios a loaded machine (ctest -j2 beside builds) now and then
  // let the child finish all 120 rows before this process looked again.
  const auto spec = make_spec(json::parse(R"([{"pointer":"/x","values":[1,2,3,4,5,6,7,8,9,10,11,12]},
      {"pointer":"/y","values":[0.5,1,1.5,2,2.5,3,3.5,4,4.5,5]}])"),
                              json{{"command", "fake"}, {"x", 1}, {"y", 1.0}, {"delay_ms", 25}});
  const fs::path killed = tmp_dir() / "killed.csv", whole = tmp_dir() / "whole.csv";
  fs::remove(killed);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    try {
      run(spec, killed, 2);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);
  }
  auto lines = [&] {
    const std::string s = slurp(killed);
    return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
  };
  for (int i = 0; i < 20000 && lines() < 21; ++i) std::this_thread::sleep_for(std::chrono::microseconds(500));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  const std::size_t at_kill = lines();
  CHECK(at_kill >= 21);
  REQUIRE(at_kill < 121);  // killed mid-run: the header and fewer than 120 rows
  const auto sum = run(spec, killed, 2, true);
  CHECK(sum.resumed > 0);
  run(spec, whole, 2);
  CHECK(slurp(killed) == slurp(whole));
}

TEST_CASE("an interrupt (stop flag) leaves whole rows, and --resume completes the same file") {
  const auto spec = make_spec(json::parse(R"([{"pointer":"/x","values":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}])"),
                              json{{"command", "fake"}, {"x", 1}, {"delay_ms", 1}});
  const fs::path cut = tmp_dir() / "cut.csv", whole = tmp_dir() / "whole2.csv";
  std::atomic<bool> stop{false};
  const auto s1 = run(spec, cut, 2, false, &stop, [&](std::uint64_t done, std::uint64_t) {
    if (done == 5) stop = true;
  });
  CHECK(s1.interrupted);
  CHECK(s1.written >= 5);
  CHECK(s1.written < 16);
  const std::string part = slurp(cut);
  CHECK(part.back() == '\n');
  CHECK(read_csv(cut.string(), "cut").rows.size() == s1.written);
  run(spec, cut, 2, true);
  run(spec, whole, 2);
  CHECK(slurp(cut) == slurp(whole));
}

TEST_CASE("cells, flattening and CSV read-back") {
  CHECK(cell_text(json(0.1)) == "0.1");
  CHECK(cell_text(json(18446744073709551615ull)) == "18446744073709551615");
  CHECK(cell_text(json(-3)) == "-3");
  CHECK(cell_text(json("a\nb")) == "a b");
  CHECK(cell_text(json(nullptr)).empty());
  CHECK(cell_text(json::array({1, 2})) == "[1,2]");
  const auto f = flatten_result(json{{"memory_bytes", {{"peak", 7}, {"params", 2}}}, {"config", {{"a", 1}}}, {"mfu", 0.5}});
  REQUIRE(f.size() == 3);
  CHECK(f[0] == std::pair<std::string, std::string>{"memory_bytes.params", "2"});
  CHECK(f[1] == std::pair<std::string, std::string>{"memory_bytes.peak", "7"});
  CHECK(f[2] == std::pair<std::string, std::string>{"mfu", "0.5"});
  CHECK(parse_csv_line("a,\"b,c\",\"d\"\"e\",\r") == std::vector<std::string>{"a", "b,c", "d\"e", ""});
}

TEST_CASE("progress line: done/total, percentage, rate, ETA") {
  // 250 of 1000 at 50/s: 30 x 250/1000 = 7 marks, 750 / 50 = 15 s left.
  CHECK(ProgressBar::line(250, 1000, 50.0, 15.0) ==
        "[#######.......................] 250/1000  25.0%  50.0/s  ETA 15s");
  CHECK(format_eta(187) == "3m07s");
  CHECK(format_eta(7500) == "2h05m");
  CHECK(format_eta(-1) == "?");
}
