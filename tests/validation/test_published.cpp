// Issue 14: predictions of the published collective corpus (tests/data/published/collectives)
// from presets and cited constants (analysis/validation/published.hpp), against the published
// tables. Prints the per-file table (signed errors) that docs/validation.md quotes, and
// asserts the accuracy reached. Label accuracy; analytical only, well under a second.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "analysis/validation/published.hpp"
#include "sim/error.hpp"

using namespace shardsim;

namespace {
const std::string kIndex = std::string(SHARDSIM_SOURCE_DIR) + "/tests/data/published/collectives/index.json";
}

TEST_CASE("published nccl-tests tables: predicted by collective --algorithm auto within the reached accuracy") {
  const auto r = validation::predict_published(kIndex);
  const auto s = validation::summarize_published(r);
  fmt::print("{}", validation::published_table(r, s));
  // Every table index.json maps to a topology is predicted (49 files or rank counts), the
  // degraded run, the shared-fabric 32-node B200 sendrecv, the GH200 quad nodes (no preset),
  // the five multi-node H100 runs of the cnode cluster whose NICs the source does not state
  // (all-to-all x 3, all-gather and reduce-scatter on 10 x 8), and the four MPI tables are not.
  CHECK(s.files == 49);
  CHECK(s.skipped == 12);
  // Issue 14's small-message target: median |time error| <= 25 % at S <= 64 KiB; reached
  // 16.3 % over 223 points with nccl-tests' -g launch floor (nccl_model.hpp; rows of S = 0 are
  // not compared), bound at what is reached.
  CHECK(s.points_small == 223);
  CHECK(s.median_abs_time_small <= 0.17);
  // Issue 14's large-message target: median |busbw error| <= 10 % at S >= 64 MiB: 9.6 % over 307
  // points with the DGX-2 all-reduce / broadcast / reduce and Voltage Park H100 4 x 8 tables
  // (10.5 % over 267 before). Not a margin: with the cnode cluster's five NIC-unstated tables
  // predicted on dgx-h100-80 it is 10.9 % (docs/validation.md). Bound at what is reached.
  CHECK(s.points_large == 307);
  CHECK(s.median_abs_busbw_large <= 0.097);
  // By collective (docs/validation.md): the median signed error of every collective but
  // broadcast and reduce (8 points each, one DGX-2, -1.4 / -1.9 %) is positive, the model too
  // fast at 64 MiB and up (the ramp below, the default-setting multi-node H100 rings, and
  // point-to-point under the NVLink and NIC figures the model runs it at).
  REQUIRE(s.by_collective.size() == 7);
  const std::pair<const char*, int> kWant[] = {{"allreduce", 171}, {"allgather", 73}, {"alltoall", 21}, {"broadcast", 8},
                                               {"reduce", 8},      {"reducescatter", 16}, {"sendrecv", 10}};
  for (std::size_t i = 0; i < 7; ++i) {
    CAPTURE(i);
    const std::string coll = kWant[i].first;
    CHECK(s.by_collective[i].collective == coll);
    CHECK(s.by_collective[i].points == kWant[i].second);
    if (coll == "broadcast" || coll == "reduce") {
      CHECK(s.by_collective[i].median_abs <= 0.03);
    } else {
      CHECK(s.by_collective[i].median_signed > 0);
    }
  }
  CHECK(s.by_collective[0].median_abs <= 0.089);
  CHECK(s.by_collective[2].median_abs <= 0.10);
  CHECK(s.by_collective[5].median_abs <= 0.08);
  // The mid-size ramp, 1 MiB <= S <= 32 MiB (183 points): median |time error| 29.8 %, nearly every
  // file that has such sizes predicted too fast (docs/validation.md: what NCCL's model leaves out
  // there). Bound at what is reached, so that a regression fails; no target in issue 14.
  CHECK(s.points_mid == 183);
  CHECK(s.median_abs_time_mid <= 0.30);
  // No file worse than 25 % at its largest size, except three known misses (docs/validation.md):
  // the 2-rack GB300 all-to-all (+309 %: 47.6 GB/s busbw per GPU, one 400 Gb/s NIC's rate; what
  // makes the rack-local peers wait for the network is not established) and the ring
  // all-gather across the compute trays of a GB200 NVL72 (+47 and +51 %: 466-488 GB/s against
  // NCCL's 18 x 40.1 GB/s, which the 4-GPU ring all-reduce of one tray reaches within 6 %; NCCL's
  // source has no lower MNNVL figure).
  for (const auto& f : r) {
    if (f.skipped) continue;
    CAPTURE(f.file);
    if (f.file == "oci-gb300-nvl72-32x4-2racks-alltoall_perf.txt" || f.file == "gcp-a4x-gb200-2x4-all_gather_perf.txt" ||
        f.file == "gcp-a4x-gb200-8x4-all_gather_perf.txt") {
      CHECK(std::fabs(f.largest) > 0.25);  // if this starts passing, move it into the bound
      continue;
    }
    CHECK(std::fabs(f.largest) <= 0.25);
  }
}

TEST_CASE("nccl-tests -g G: one thread's G launches bound a small collective (4.2 us per GPU, nccl-tests#123)") {
  const auto r = validation::predict_published(kIndex);
  auto find = [&](const std::string& file) -> const validation::PublishedResult& {
    const auto it = std::find_if(r.begin(), r.end(), [&](const auto& x) { return x.file == file; });
    REQUIRE(it != r.end());
    return *it;
  };
  // "nGpus 8" in the header: 8 x 33.7 / 8 us; the model's Ring/LL all-gather (10.8 us) is below.
  const auto& ag = find("h100-together-1x8-ring-all_gather_perf.txt");
  bool floored = false;
  for (const auto& p : ag.points) {
    if (p.bytes > 1024) continue;
    CAPTURE(p.bytes);
    CHECK(p.predicted_us == doctest::Approx(33.7).epsilon(1e-12));
    CHECK(p.algorithm.find("(-g 8 launch floor)") != std::string::npos);
    floored = true;
  }
  CHECK(floored);
  // The largest sizes keep the model: the floor is far below.
  CHECK(ag.points.back().algorithm == "nccl:Ring/Simple");
  // A csv table takes it from the index ("gpus_per_thread": 4 for Azure's -g 4 GB200 run).
  const auto& gb = find("azure-ndgb200v6-gb200-1x4-allreduce.csv");
  CHECK(gb.points.front().predicted_us == doctest::Approx(4 * 33.7 / 8).epsilon(1e-12));
  // One GPU per process (no -g): no floor.
  for (const auto& p : find("gcp-a4-b200-2x8-all_gather_perf.txt").points) {
    CHECK(p.algorithm.find("launch floor") == std::string::npos);
  }
}

TEST_CASE("OCI's RoCE fabrics are read as Ethernet: the 2-rack GB300 all-to-all at RoCE framing, closed form") {
  // The oci-gb300 preset (index.json) has nic_class ethernet (the SOURCEs: RoCE, NCCL_IB_GID_INDEX=3).
  // The all-to-all model (models/collectives/nccl_model.hpp): latency 8.4 + 14 us, then the
  // slower of S 63/128 over NVLink (18 x 40.1 GB/s) and S 64/128 over the GPU's 800 Gb/s of
  // NICs x RoCE framing 4096 / (4096 + 82); busbw = S / t x 127/128.
  const auto r = validation::predict_published(kIndex);
  const validation::PublishedResult* f = nullptr;
  for (const auto& x : r) {
    if (x.file == "oci-gb300-nvl72-32x4-2racks-alltoall_perf.txt") f = &x;
  }
  REQUIRE(f != nullptr);
  REQUIRE_FALSE(f->points.empty());
  const auto& p = f->points.back();
  const double S = static_cast<double>(p.bytes);
  CHECK(p.bytes == 17179869184ull);
  const double nic = 100e9 * 4096.0 / (4096.0 + 82.0);
  const double t = (8.4 + 14.0) * 1e-6 + std::max(S * 64 / 128 / nic, S * 63 / 128 / (18 * 40.1e9));
  CHECK(p.predicted_busbw_GBps == doctest::Approx(S / t * 127 / 128 / 1e9).epsilon(1e-9));
}

namespace {
// A directory of its own per test process (the normal and the ASan build may run at once).
std::filesystem::path scratch_dir(const std::string& name) {
  return std::filesystem::temp_directory_path() / fmt::format("shardsim_published_{}_{}", ::getpid(), name);
}
// Writes `text` as an index.json in a fresh directory under the system's temp directory and
// returns what predict_published throws for it ("" when it does not throw ConfigError).
// A one-row busbw CSV "x.csv" is written next to it.
std::string index_error(const std::string& name, const std::string& text) {
  const auto dir = scratch_dir(name);
  std::filesystem::create_directories(dir);
  const auto path = (dir / "index.json").string();
  std::ofstream(path) << text;
  std::ofstream((dir / "x.csv").string()) << "size_bytes,busbw_GBps\n1073741824,400\n";
  std::string what;
  try {
    (void)validation::predict_published(path);
  } catch (const ConfigError& e) {
    what = e.what();
  }
  std::filesystem::remove_all(dir);
  return what;
}
}  // namespace

TEST_CASE("a malformed corpus index is a ConfigError naming the JSON path, not an internal error") {
  auto has = [](const std::string& what, const std::string& part) { return what.find(part) != std::string::npos; };
  const auto no_files = index_error("no_files", R"({"entries": []})");
  CHECK(has(no_files, "index.json: /files"));
  const auto no_file = index_error("no_file", R"({"files": [{"format": "nccl-tests", "collective": "allreduce", "ranks": 8}]})");
  CHECK(has(no_file, "/files/0/file: missing"));
  const auto bad_ranks = index_error(
      "bad_ranks", R"({"files": [{"file": "x.txt", "format": "nccl-tests", "collective": "allreduce", "ranks": "eight"}]})");
  CHECK(has(bad_ranks, "/files/0/ranks: \"eight\"; expected an integer rank count of at least 2"));
  const auto bad_preset = index_error(
      "bad_preset", R"({"files": [{"file": "x.csv", "format": "csv-busbw", "collective": "allreduce", "ranks": 8, "preset": 8}]})");
  CHECK(has(bad_preset, "/files/0/preset: 8; expected a string"));
  const auto bad_topology = index_error("bad_topology", R"({"files": [{"file": "x.csv", "format": "csv-busbw", "collective": "allreduce",)"
                                                        R"( "ranks": 8, "topology": "dgx-h100-8"}]})");
  CHECK(has(bad_topology, "/files/0/topology: \"dgx-h100-8\"; expected a topology JSON object"));
  const auto bad_flag = index_error("bad_flag", R"({"files": [{"file": "x.csv", "format": "csv-busbw", "collective": "allreduce",)"
                                                R"( "ranks": 8, "preset": "gb200-nvl72", "model_ranks_first": "yes"}]})");
  CHECK(has(bad_flag, "/files/0/model_ranks_first: \"yes\"; expected true or false"));
  const auto bad_gpt = index_error("bad_gpt", R"({"files": [{"file": "x.csv", "format": "csv-busbw", "collective": "allreduce",)"
                                              R"( "ranks": 8, "preset": "dgx-h100-8", "gpus_per_thread": 9}]})");
  CHECK(has(bad_gpt, "/files/0/gpus_per_thread: 9; expected an integer from 1 to 8 (the ranks)"));
  const auto bad_placement = index_error("bad_placement", R"({"files": [{"file": "x.csv", "format": "csv-busbw", "collective": "alltoall",)"
                                                          R"( "ranks": 8, "preset": "dgx-h100-16", "model_ranks_per_node": 0}]})");
  CHECK(has(bad_placement, "/files/0/model_ranks_per_node: 0; expected an integer from 1 to 8 (the ranks)"));
  // CSV contents: a short row, a zero bandwidth, no row at all.
  auto csv_error = [&](const std::string& name, const std::string& csv) {
    const auto dir = scratch_dir(name);
    std::filesystem::create_directories(dir);
    std::ofstream((dir / "y.csv").string()) << csv;
    return index_error(name, R"({"files": [{"file": "y.csv", "format": "csv-busbw", "collective": "allreduce",)"
                             R"( "ranks": 8, "preset": "dgx-h100-8"}]})");
  };
  CHECK(has(csv_error("short_row", "size_bytes,busbw_GBps\n1024,1\n2048\n"), "(y.csv): line 3: 1 cells; expected 2"));
  CHECK(has(csv_error("zero_bw", "size_bytes,busbw_GBps\n1024,0\n"), "'0'; expected a positive number"));
  CHECK(has(csv_error("no_row", "size_bytes,busbw_GBps\n"), "no measured row in y.csv"));
  // The same entry, well formed, predicts (the helper's CSV is valid).
  CHECK(index_error("good", R"({"files": [{"file": "x.csv", "format": "csv-busbw", "collective": "allreduce",)"
                            R"( "ranks": 8, "preset": "dgx-h100-8"}]})") == "");
  const auto bad_first = index_error("bad_first", R"({"files": [{"file": "x.csv", "format": "csv-busbw", "collective": "allreduce",)"
                                                  R"( "ranks": 8, "exclude_from_accuracy": 1}]})");
  CHECK(has(bad_first, "/files/0/exclude_from_accuracy: 1; expected a string"));
  const auto list_ranks = index_error(
      "list_ranks", R"({"files": [{"file": "x.txt", "format": "nccl-tests", "collective": "allreduce", "ranks": [16, 32]}]})");
  CHECK(has(list_ranks, "/files/0/ranks: [16,32]; expected an integer rank count"));
}

TEST_CASE("model_ranks_per_node places a run's ranks on the preset's nodes: 2 nodes x 1 GPU crosses the network") {
  // The same 1 GiB all-to-all of 2 ranks on dgx-h100-16, as the first 2 GPUs (one node, NVLink)
  // and placed one per node (every byte to the peer over its 400 Gb/s NDR NIC). Closed forms
  // (models/collectives/nccl_model.hpp): latency 8.4 + 3.4 us on one node, 8.4 + 14 us across
  // nodes; S/2 over 18 x 20.6 GB/s of NVLink, or S/2 over 50 GB/s x IB framing 4096 / 4122.
  const auto dir = scratch_dir("placement");
  std::filesystem::create_directories(dir);
  std::ofstream((dir / "x.csv").string()) << "size_bytes,busbw_GBps\n1073741824,40\n";
  auto predicted_us = [&](const std::string& placement) {
    const auto path = (dir / "index.json").string();
    std::ofstream(path) << R"({"files": [{"file": "x.csv", "format": "csv-busbw", "collective": "alltoall", "ranks": 2,)"
                        << R"( "preset": "dgx-h100-16")" << placement << "}]}";
    const auto r = validation::predict_published(path);
    REQUIRE(r.size() == 1);
    REQUIRE(r[0].points.size() == 1);
    return r[0].points[0].predicted_us;
  };
  const double S = 1073741824.0;
  CHECK(predicted_us(R"(, "model_ranks_first": true)") ==
        doctest::Approx(8.4 + 3.4 + 1e6 * S / 2 / (18 * 20.6e9)).epsilon(1e-9));
  CHECK(predicted_us(R"(, "model_ranks_per_node": 1)") ==
        doctest::Approx(8.4 + 14.0 + 1e6 * S / 2 / (50e9 * 4096.0 / 4122.0)).epsilon(1e-9));
  std::filesystem::remove_all(dir);
}
