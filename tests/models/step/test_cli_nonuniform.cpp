// `shardsim step` with the issue-16 flags, end to end: --faults that cut a process group exit
// 2 naming the link and the group; --samples with --compute-jitter prints the same bytes for
// the same seed and other numbers for another; --slow-ranks delays the step.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "../../shell_run.hpp"

#include <cstdlib>
#include <fstream>
#include <string>

namespace {

using shardsim::testing::run_shardsim;

const std::string kStep = "step --topology 'switch:n=8,bw=100GB/s,lat=1us' --device h100 --model gpt3-125m "
                          "--batch-per-device 1 --seq 128 ";

}  // namespace

TEST_CASE("a fault that disconnects the data-parallel group exits 2 naming the link and the group") {
  const auto r = run_shardsim(kStep + "--faults 'down:d3-switch'");
  CHECK(r.status == 2);
  CHECK(r.out.find("--faults: down:d3-switch disconnects process group 'dp 0' (ranks 0-7): no path between ranks 0") !=
        std::string::npos);
  // Without rank 3 in the group the fault cuts nothing.
  CHECK(run_shardsim(kStep + "--faults 'down:d3-switch' --dp 3").status == 0);
  // A bad item is a clear error too.
  const auto bad = run_shardsim(kStep + "--faults 'link:d3-switch:2'");
  CHECK(bad.status == 2);
  CHECK(bad.out.find("--faults: fraction '2' in 'link:d3-switch:2'") != std::string::npos);
}

TEST_CASE("a degraded link slows the step; the JSON config records the faults") {
  const auto a = run_shardsim(kStep + "--json");
  const auto b = run_shardsim(kStep + "--json --faults 'link:d3-switch:0.25'");
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  CHECK(jb.at("comm_s").get<double>() > ja.at("comm_s").get<double>());
  CHECK(jb.at("config").at("faults") == "link:d3-switch:0.25");
}

TEST_CASE("sampled steps: byte-identical for one seed, different for another") {
  const std::string args = kStep + "--json --samples 20 --compute-jitter lognormal:0.05 ";
  const auto a = run_shardsim(args + "--seed 7");
  const auto b = run_shardsim(args + "--seed 7");
  const auto c = run_shardsim(args + "--seed 8");
  REQUIRE(a.status == 0);
  CHECK(a.out == b.out);
  CHECK(a.out != c.out);
  const auto j = nlohmann::json::parse(a.out);
  CHECK(j.at("samples") == 20);
  const auto& q = j.at("step_time_quantiles_s");
  CHECK(q.at("p50").get<double>() <= q.at("p90").get<double>());
  CHECK(q.at("p90").get<double>() <= q.at("p99").get<double>());
  CHECK(q.at("p99").get<double>() <= q.at("max").get<double>());
  CHECK(j.at("ranks_simulated") == 8);
}

TEST_CASE("--slow-ranks: a rank at half speed makes the step slower and is not folded away") {
  const auto a = run_shardsim(kStep + "--json");
  const auto b = run_shardsim(kStep + "--json --slow-ranks 6:0.5");
  REQUIRE(b.status == 0);
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  CHECK(ja.at("ranks_simulated") == 1);
  CHECK(jb.at("ranks_simulated") == 8);
  // Rank 6's compute doubles: the step grows by at least its forward and backward.
  CHECK(jb.at("step_time_s").get<double>() - ja.at("step_time_s").get<double>() >=
        ja.at("forward_s").get<double>() + ja.at("backward_s").get<double>() - 1e-9);
  const auto bad = run_shardsim(kStep + "--slow-ranks 9:0.5");
  CHECK(bad.status == 2);
  CHECK(bad.out.find("--slow-ranks: rank 9 in a step of 8 ranks; expected ranks 0..7") != std::string::npos);
}

TEST_CASE("plan --reliability: goodput and expected time to train per Pareto candidate") {
  const std::string plan = "plan --model gpt3-125m --steps 1000 --global-batch 64 --hardware dgx-h100-64 "
                           "--strategies replicated --search dp --reliability --json ";
  // The mesh search (the default for a transformer) has no goodput rows: an error, not silence.
  const auto mesh = run_shardsim("plan --model gpt3-125m --steps 1000 --global-batch 64 --hardware dgx-h100-64 "
                                 "--reliability --storage-bandwidth 10GB/s");
  CHECK(mesh.status == 2);
  CHECK(mesh.out.find("--reliability: with --search mesh") != std::string::npos);
  const auto missing = run_shardsim(plan);
  CHECK(missing.status == 2);
  CHECK(missing.out.find("--storage-bandwidth: missing with --reliability") != std::string::npos);
  const auto r = run_shardsim(plan + "--storage-bandwidth 10GB/s --restart-time 5min");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.at("reliability").size() == 1);
  const auto& x = j.at("reliability").at(0);
  // 64 GPUs in 8 hosts at the Llama 3 rates: 64 x 373 / (16,384 x 1,296 h) + 8 x 46 / (2,048 x
  // 1,296 h) per hour (373 = 268 GPU + 7 NIC + 35 link + 63 software).
  const double per_h = 64 * 373.0 / (16384 * 1296.0) + 8 * 46.0 / (2048 * 1296.0);
  CHECK(x.at("failures_per_h").get<double>() == doctest::Approx(per_h).epsilon(1e-12).scale(0));
  // Checkpoint: 125M parameters x (2 bf16 weights + 12 Adam state) bytes at 10 GB/s.
  CHECK(x.at("checkpoint_s").get<double>() ==
        doctest::Approx(x.at("checkpoint_bytes").get<double>() / 10e9).epsilon(1e-12).scale(0));
  const auto step = run_shardsim(kStep + "--json");
  REQUIRE(step.status == 0);
  CHECK(x.at("checkpoint_bytes").get<double>() == 14 * nlohmann::json::parse(step.out).at("params").get<double>());
  CHECK(x.at("restore_s").get<double>() == doctest::Approx(300 + x.at("checkpoint_s").get<double>()).epsilon(1e-12).scale(0));
  CHECK(x.at("expected_time_to_train_s").get<double>() ==
        doctest::Approx(x.at("time_to_train_s").get<double>() / x.at("goodput").get<double>()).epsilon(1e-12).scale(0));
  CHECK(x.at("goodput").get<double>() < 1);
}

TEST_CASE("heterogeneous ranks: slower devices slow the step; a speed split of the batch recovers part of it") {
  const std::string s = "step --model gpt3-125m -b 8 --seq 1024 --topology dgx-h100-16 --json ";
  const auto even = nlohmann::json::parse(run_shardsim(s).out);
  const auto mixed = run_shardsim(s + "--rank-devices 8-15:a100-80gb");
  const auto split = run_shardsim(s + "--rank-devices 8-15:a100-80gb --batch-split speed");
  REQUIRE(mixed.status == 0);
  REQUIRE(split.status == 0);
  const auto jm = nlohmann::json::parse(mixed.out), js = nlohmann::json::parse(split.out);
  CHECK(jm.at("ranks_simulated") == 16);
  CHECK(jm.at("step_time_s").get<double>() > even.at("step_time_s").get<double>());
  CHECK(js.at("step_time_s").get<double>() < jm.at("step_time_s").get<double>());
  // The global batch (16 x 8) is kept, more of it on the H100s.
  std::uint64_t total = 0;
  for (const auto& b : js.at("rank_batches")) total += b.get<std::uint64_t>();
  CHECK(total == 128);
  CHECK(js.at("rank_batches").at(0).get<std::uint64_t>() > js.at("rank_batches").at(15).get<std::uint64_t>());
  const auto bad = run_shardsim(s + "--rank-devices 8-15:a100-80gb --batch-split fast");
  CHECK(bad.status == 2);
  CHECK(bad.out.find("--batch-split: 'fast'; expected even or speed") != std::string::npos);
}

TEST_CASE("plot data: step-time quantiles appended per size, goodput against the interval") {
  const std::string dir = std::string(SHARDSIM_BINARY_DIR) + "/test_cli_nonuniform";
  REQUIRE(std::system(("mkdir -p " + dir + " && rm -f " + dir + "/q.csv").c_str()) == 0);
  for (const char* n : {"4", "8"}) {
    const auto r = run_shardsim(kStep + "--dp " + n + " --samples 5 --compute-jitter normal:0.1 --quantiles-csv " + dir + "/q.csv");
    REQUIRE(r.status == 0);
  }
  std::ifstream q(dir + "/q.csv");
  std::string line, all;
  int rows = 0;
  while (std::getline(q, line)) {
    all += line + "\n";
    ++rows;
  }
  CHECK(rows == 1 + 2 * 5);  // header, then mean, p50, p90, p99, max per size
  CHECK(all.rfind("devices,statistic,step_time_s,status\n4,mean,", 0) == 0);
  CHECK(all.find("\n8,max,") != std::string::npos);
  CHECK(run_shardsim(kStep + "--quantiles-csv " + dir + "/q2.csv").status == 2);  // needs --samples

  const auto g = run_shardsim("plan --model gpt3-125m --steps 1000 --global-batch 64 --hardware dgx-h100-64 "
                              "--strategies replicated --search dp --reliability --storage-bandwidth 1GB/s --goodput-csv " + dir + "/g.csv --json");
  REQUIRE(g.status == 0);
  const double daly = nlohmann::json::parse(g.out).at("reliability").at(0).at("goodput").get<double>();
  std::ifstream gf(dir + "/g.csv");
  std::getline(gf, line);
  CHECK(line == "devices,interval_s,goodput,status");
  int points = 0;
  while (std::getline(gf, line)) {
    ++points;
    const double goodput = std::stod(line.substr(line.find(',', 3) + 1));
    CHECK(goodput <= daly + 1e-6);  // no interval beats Daly's (up to the CSV's 6 digits)
  }
  CHECK(points == 23);  // 60 s x sqrt(2)^k up to 2 days: k = 0..22
}

TEST_CASE("a topology's device kinds give the step --rank-devices gives for the same mapping") {
  // The example of mixed generations, and the same graph without its per-node kinds.
  const std::string example = std::string(SHARDSIM_SOURCE_DIR) + "/examples/topologies/mixed-h100-a100.json";
  const std::string plain = std::string(SHARDSIM_BINARY_DIR) + "/test_cli_nonuniform_plain.json";
  nlohmann::json j;
  {
    std::ifstream in(example);
    REQUIRE(in);
    j = nlohmann::json::parse(in);
  }
  // The mapping, read from the file: device nodes are ranks in order; runs of one kind.
  std::string spec;
  std::size_t rank = 0, run_start = 0;
  std::string run_kind;
  auto close_run = [&] {
    if (rank > run_start) spec += (spec.empty() ? "" : ",") + std::to_string(run_start) + "-" + std::to_string(rank - 1) + ":" + run_kind;
  };
  for (auto& n : j.at("nodes")) {
    if (n.value("kind", "device") != "device") continue;
    const std::string k = n.at("device").get<std::string>();
    if (k != run_kind) {
      close_run();
      run_start = rank;
      run_kind = k;
    }
    ++rank;
    n.erase("device");
  }
  close_run();
  CHECK(spec == "0-7:h100,8-15:a100-80gb");
  {
    std::ofstream out(plain);
    out << j.dump(1);
  }
  const std::string s = "step --model gpt3-125m -b 8 --seq 1024 --json --topology ";
  for (const std::string split : {"", " --batch-split speed"}) {
    CAPTURE(split);
    const auto kinds = run_shardsim(s + example + split);
    const auto flag = run_shardsim(s + plain + " --rank-devices " + spec + split);
    REQUIRE(kinds.status == 0);
    REQUIRE(flag.status == 0);
    const auto jk = nlohmann::json::parse(kinds.out), jf = nlohmann::json::parse(flag.out);
    CHECK(jk.at("step_time_s").get<double>() == jf.at("step_time_s").get<double>());
    CHECK(jk.at("forward_s").get<double>() == jf.at("forward_s").get<double>());
    CHECK(jk.value("rank_batches", nlohmann::json()) == jf.value("rank_batches", nlohmann::json()));
    CHECK(jk.at("ranks_simulated") == 16);
  }
  // The A100 ranks set the step: sixteen A100s give the same time, sixteen H100s less.
  const auto mixed = nlohmann::json::parse(run_shardsim(s + example).out);
  const auto all_a100 = nlohmann::json::parse(run_shardsim(s + plain + " --rank-devices 0-15:a100-80gb").out);
  const auto all_h100 = nlohmann::json::parse(run_shardsim(s + plain).out);
  CHECK(mixed.at("step_time_s").get<double>() == doctest::Approx(all_a100.at("step_time_s").get<double>()).epsilon(1e-12).scale(0));
  CHECK(mixed.at("step_time_s").get<double>() > all_h100.at("step_time_s").get<double>());
  // --rank-devices over the topology's kinds: the flag wins for the ranks it names.
  const auto over = nlohmann::json::parse(run_shardsim(s + example + " --rank-devices 8-15:h100").out);
  CHECK(over.at("step_time_s").get<double>() == all_h100.at("step_time_s").get<double>());
  // topo show prints the kinds; a mesh step refuses them.
  const auto show = run_shardsim("topo show " + example);
  REQUIRE(show.status == 0);
  CHECK(show.out.find("rank devices:   h100 (ranks 0-7), a100-80gb (ranks 8-15)\n") != std::string::npos);
  const auto mesh = run_shardsim("step --model gpt3-125m --mesh dp=16 --topology " + example);
  CHECK(mesh.status == 2);
  CHECK(mesh.out.find(example + ": /nodes/8/device: device 'a100-80gb' on rank 8 with --mesh, whose ranks all run h100") !=
        std::string::npos);
}

TEST_CASE("an unknown device kind in a topology exits 2 naming /nodes/i/device and the valid names") {
  const std::string path = std::string(SHARDSIM_BINARY_DIR) + "/test_cli_nonuniform_bad.json";
  {
    std::ofstream out(path);
    out << R"({"builder": "custom", "device_model": "h100", "nodes": [{"name": "sw", "kind": "switch"}, {"name": "g0"},)"
        << R"( {"name": "g1", "device": "a200"}], "links": [{"src": "g0", "dst": "sw", "bw": "1GB/s", "lat": "1us"},)"
        << R"( {"src": "g1", "dst": "sw", "bw": "1GB/s", "lat": "1us"}]})";
  }
  for (const std::string cmd : {"step --model gpt3-125m -b 1 --seq 128 --topology ", "topo show "}) {
    CAPTURE(cmd);
    const auto r = run_shardsim(cmd + path);
    CHECK(r.status == 2);
    CHECK(r.out.find(path + ": /nodes/2/device: unknown device 'a200'; expected one of ") != std::string::npos);
    CHECK(r.out.find("a100-80gb") != std::string::npos);
  }
}

TEST_CASE("step --mesh: --slow-ranks, --samples and --faults act on the mesh step") {
  const std::string mesh = "step --topology 'switch:n=8,bw=100GB/s,lat=1us' --device h100 --model gpt3-125m --seq 512 "
                           "--mesh dp=2,pp=4 --global-batch 8 --schedule gpipe --json ";
  const auto base = run_shardsim(mesh);
  const auto slow = run_shardsim(mesh + "--slow-ranks 2:0.5");
  REQUIRE(base.status == 0);
  REQUIRE(slow.status == 0);
  const auto jb = nlohmann::json::parse(base.out), js = nlohmann::json::parse(slow.out);
  CHECK(js.at("step_time_s").get<double>() > jb.at("step_time_s").get<double>());
  CHECK(jb.at("ranks_simulated") == 4);  // folded: one rank per stage
  CHECK(js.at("ranks_simulated") == 8);  // the slow rank is not folded away
  const std::string sampled = mesh + "--samples 6 --compute-jitter lognormal:0.05 ";
  const auto a = run_shardsim(sampled + "--seed 7"), b = run_shardsim(sampled + "--seed 7"), c = run_shardsim(sampled + "--seed 8");
  REQUIRE(a.status == 0);
  CHECK(a.out == b.out);
  CHECK(a.out != c.out);
  CHECK(nlohmann::json::parse(a.out).at("samples") == 6);
  // A fault that cuts a pipeline pair names the link and the pair's group.
  const auto cut = run_shardsim(mesh + "--faults 'down:d3-switch'");
  CHECK(cut.status == 2);
  CHECK(cut.out.find("--faults: down:d3-switch disconnects process group 'pp 1->3' (ranks 1,3): no path between ranks 1 (d1) "
                     "and 3 (d3)") != std::string::npos);
  // A slow rank outside the mesh is a clear error.
  const auto bad = run_shardsim(mesh + "--slow-ranks 8:0.5");
  CHECK(bad.status == 2);
  CHECK(bad.out.find("--slow-ranks: rank 8 in a step of 8 ranks; expected ranks 0..7") != std::string::npos);
}

TEST_CASE("a seeded fault process over the step: same seed same bytes, another seed other faults, a cut names the group") {
  const auto none = run_shardsim(kStep + "--json");
  const std::string args = kStep + "--json --faults 'random:6:0.1' ";
  const auto a = run_shardsim(args + "--seed 3"), b = run_shardsim(args + "--seed 3"), c = run_shardsim(args + "--seed 4");
  REQUIRE(none.status == 0);
  REQUIRE(a.status == 0);
  REQUIRE(c.status == 0);
  CHECK(a.out == b.out);
  CHECK(a.out != c.out);
  const auto j0 = nlohmann::json::parse(none.out), ja = nlohmann::json::parse(a.out), jc = nlohmann::json::parse(c.out);
  CHECK(ja.at("timed_faults") != jc.at("timed_faults"));
  // Faults only slow collectives down: never a faster step.
  CHECK(ja.at("step_time_s").get<double>() >= j0.at("step_time_s").get<double>());
  CHECK(jc.at("step_time_s").get<double>() >= j0.at("step_time_s").get<double>());
  // A link of the data-parallel group at a tenth of its rate from the start of the step.
  const auto slow = run_shardsim(kStep + "--json --faults 'link:d3-switch:0.1@0s'");
  REQUIRE(slow.status == 0);
  CHECK(nlohmann::json::parse(slow.out).at("step_time_s").get<double>() > j0.at("step_time_s").get<double>());
  // A timed down link that cuts the group: exit 2 naming the link, the group and the instant.
  const auto cut = run_shardsim(kStep + "--faults 'down:d3-switch@1us'");
  CHECK(cut.status == 2);
  CHECK(cut.out.find("--faults: down:d3-switch disconnects process group 'dp 0' (ranks 0-7) at ") != std::string::npos);
}

TEST_CASE("timed faults in a mesh step and at flow fidelity: slower steps, no folding, same seed same bytes, a cut names group and instant") {
  const std::string mesh = "step --topology 'switch:n=8,bw=100GB/s,lat=1us' --device h100 --model gpt3-125m --seq 512 "
                           "--mesh dp=2,pp=4 --global-batch 8 --schedule gpipe --json ";
  for (const std::string fid : {"analytical", "flow"}) {
    CAPTURE(fid);
    const std::string m = mesh + "--fidelity " + fid + " ";
    const auto base = run_shardsim(m), early = run_shardsim(m + "--faults 'link:d3-switch:0.1@0s'"),
               late = run_shardsim(m + "--faults 'link:d3-switch:0.1@5ms'");
    REQUIRE(base.status == 0);
    REQUIRE(early.status == 0);
    REQUIRE(late.status == 0);
    const auto jb = nlohmann::json::parse(base.out), je = nlohmann::json::parse(early.out), jl = nlohmann::json::parse(late.out);
    // A link of rank 3 at a tenth of its rate from 0 slows the step more than from 5 ms, which
    // slows it still; no rank is folded away under a timed fault.
    CHECK(je.at("step_time_s").get<double>() > jl.at("step_time_s").get<double>());
    CHECK(jl.at("step_time_s").get<double>() > jb.at("step_time_s").get<double>());
    CHECK(je.at("ranks_simulated") == 8);
    CHECK(je.at("timed_faults").size() == 1);
    const auto a = run_shardsim(m + "--faults 'random:6:0.1' --seed 3"), b = run_shardsim(m + "--faults 'random:6:0.1' --seed 3");
    const auto c = run_shardsim(m + "--faults 'random:6:0.1' --seed 4");
    REQUIRE(a.status == 0);
    CHECK(a.out == b.out);
    CHECK(a.out != c.out);
    // Rank 3's link down at 1 ms: the first transfer of a group holding d3 after it has no path.
    const auto cut = run_shardsim(m + "--faults 'down:d3-switch@1ms'");
    CHECK(cut.status == 2);
    CHECK(cut.out.find("--faults: down:d3-switch disconnects process group '") != std::string::npos);
    CHECK(cut.out.find("' (ranks 1,3) at 0.00105") != std::string::npos);  // the first transfer after 1 ms (compute beside the transfers slowed by their SMs)
  }
  // Data-parallel at flow fidelity: the all-reduce that starts after the link went down.
  const auto cut = run_shardsim(kStep + "--fidelity flow --faults 'down:d3-switch@1us'");
  CHECK(cut.status == 2);
  CHECK(cut.out.find("--faults: down:d3-switch disconnects process group 'dp 0' (ranks 0-7) at ") != std::string::npos);
}
