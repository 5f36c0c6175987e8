// Emulated clusters (root): bus (4 ranks), switch (4 hosts), two-level (2 leaves x 2 hosts,
// 4:1 uplink) at 400 Mbit/s; ring and Rabenseifner all-reduce of 1, 2 and 4 MiB; alpha and
// beta calibrated from ping-pong and exchange records only (no collective record enters the
// fit). Must hold (issue 6): median |error| <= 8 % for S >= 1 MiB per spec and algorithm,
// except ring on the switch cluster, a known deviation checked against 13 % (see below);
// no namespace, veth or bridge remains, also after a SIGKILLed run followed by a new run.
// Skips with a message without root. Each spec prints its table: per record measured,
// predicted and error, then median and p90 |error| per algorithm, and the achieved/declared
// ratios of `bench emulate`.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

#include <sstream>
#include <thread>

#include "analysis/backends/emulate/emulate.hpp"
#include "analysis/calibration/profile.hpp"
#include "analysis/validation/validate.hpp"
#include "common.hpp"
#include "traces/logs/record.hpp"

using namespace shardsim;

namespace {

std::string unavailable() {
  if (auto why = vtest::mpi_unavailable(); !why.empty()) return why;
  if (auto why = backends::emulation_unavailable()) return *why;
  return "";
}

void check_spec(const std::string& spec, std::vector<std::string> extra) {
  if (const auto why = unavailable(); !why.empty()) {
    MESSAGE("skipped emulated " << spec << ": " << why);
    return;
  }
  const auto dir = vtest::tmpdir("emu-" + spec);
  const std::string out = dir + "/records.jsonl";
  std::vector<std::string> args{"bench", "emulate", "--spec", spec, "--hosts", "4", "--rate", "400Mbit",
                                "--algorithm", "ring,rabenseifner", "--bytes", "1M:4M:x2", "--p2p-bytes", "64K:4M:x2",
                                "--iters", "5", "--warmup", "1", "--timeout", "180", "--out", out};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = vtest::shardsim_cli(args, 600);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(backends::emu_namespaces().empty());
  const auto recs = logs::read_jsonl_file(out);
  calib::FitOptions fo;
  fo.files = {out};
  const auto profile = calib::fit_profile(recs, fo);  // point-to-point records only
  validation::Options vo;
  vo.profile = profile;
  const auto rows = validation::predict(recs, vo);
  REQUIRE(rows.size() == 6);  // 2 algorithms x {1, 2, 4} MiB
  const auto sums = validation::summarize(rows, 1 << 20);
  REQUIRE(sums.size() == 2);
  std::ostringstream table;
  const auto& cal = profile.classes.at(0);
  table << fmt::format("{}: profile alpha {:.1f} us, efficiency {:.4f} (exchange fit rms {:.1f} %)\n", spec,
                       cal.alpha_s * 1e6, cal.efficiency.value_or(0), 100 * cal.fits.at("exchange").rms_rel_residual);
  for (const auto& row : rows) {
    table << fmt::format("{} {:<13} {:>8} B: measured {:>9.1f} us, predicted {:>9.1f} us, error {:+6.1f} %\n", spec,
                         row.record.algorithm.value_or("-"), row.record.bytes, row.record.time_us, row.predicted_us,
                         100 * row.error);
  }
  for (const auto& sm : sums) {
    table << fmt::format("{} {:<13} median |error| {:.1f} %, p90 {:.1f} % ({} sizes)\n", spec, sm.algorithm,
                         100 * sm.median_abs_error, 100 * sm.p90_abs_error, sm.count);
  }
  const auto achieved = r.output.find("# achieved vs declared");
  if (achieved != std::string::npos) table << r.output.substr(achieved);
  MESSAGE(table.str());
  for (const auto& sm : sums) {
    INFO(spec << " " << sm.algorithm << ": median |error| " << 100 * sm.median_abs_error << " %");
    if (spec == "switch" && sm.algorithm == "ring") {
      // Known deviation (issue 14, docs/measurements.md "Ring reduce-scatter phase"): on this
      // cluster OpenMPI's ring all-reduce runs its reduce-scatter half 11-20 % slower per step
      // than its all-gather half (measured: 4 MiB all-reduce 145.7 ms against 66.3 ms for the
      // 3-step ring all-gather of the same blocks), and the prediction is low by 7-12 %
      // (7 runs, 2026-12-01). The model has no term for it, so the 8 % bound of issue 6 is
      // not claimed here; the check keeps the deviation from growing unnoticed.
      if (sm.median_abs_error > 0.08) {
        MESSAGE(spec << " ring: median |error| " << 100 * sm.median_abs_error
                     << " % is above issue 6's 8 % bound (known deviation, bound here 13 %)");
      }
      CHECK(sm.median_abs_error <= 0.13);
    } else {
      CHECK(sm.median_abs_error <= 0.08);
    }
  }
}

}  // namespace

TEST_CASE("emulated switch: 4 hosts at 400 Mbit/s") { check_spec("switch", {}); }
TEST_CASE("emulated bus: 4 ranks on one 400 Mbit/s medium") { check_spec("bus", {}); }
TEST_CASE("emulated two-level: 2 x 2 hosts, 4:1 uplink") { check_spec("two-level", {"--hosts-per-leaf", "2"}); }

TEST_CASE("a SIGKILLed run leaves namespaces that the next run removes; SIGTERM tears down") {
  if (const auto why = unavailable(); !why.empty()) {
    MESSAGE("skipped: " << why);
    return;
  }
  const auto dir = vtest::tmpdir("emu-kill");
  const auto start = [&](const std::string& name) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);
      const std::string out = dir + "/" + name + ".jsonl";
      ::execl(vtest::kShardsim.c_str(), vtest::kShardsim.c_str(), "bench", "emulate", "--spec", "switch", "--hosts", "2",
              "--rate", "100Mbit", "--bytes", "64M", "--iters", "50", "--out", out.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    // Wait until the cluster is up (the host namespaces exist) and mpirun has started.
    for (int i = 0; i < 300 && backends::emu_namespaces().size() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::this_thread::sleep_for(std::chrono::seconds(2));
    return pid;
  };
  pid_t pid = start("killed");
  REQUIRE(backends::emu_namespaces().size() == 3);  // sw, h0, h1
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(backends::emu_namespaces().size() == 3);  // SIGKILL: nothing could clean up
  const auto r = vtest::shardsim_cli({"bench", "emulate", "--spec", "switch", "--hosts", "2", "--rate", "400Mbit",
                                      "--algorithm", "ring", "--bytes", "64K", "--p2p-bytes", "64K:128K:x2", "--iters", "1",
                                      "--out", dir + "/next.jsonl"},
                                     300);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("removed leftover namespace") != std::string::npos);
  CHECK(backends::emu_namespaces().empty());
  pid = start("terminated");
  ::kill(pid, SIGTERM);
  ::waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGTERM);
  CHECK(backends::emu_namespaces().empty());
}
