// The step, compare and memory subcommands end to end (the shardsim binary): bad input exits
// 2 with the exact message; JSON keys; not-fitting configurations are never a plain time.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace {

struct Run {
  int status = -1;
  std::string out;
};

Run run(const std::string& args) {
  const std::string cmd = std::string(SHARDSIM_BINARY_DIR) + "/shardsim " + args + " 2>&1";
  Run r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr) r.out += buf.data();
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

const std::string kBase = "step --topology dgx-h100-16 --batch-per-device 2 ";

}  // namespace

TEST_CASE("step: bad input exits 2 with a clear message") {
  auto r = run(kBase + "--model gpt5");
  CHECK(r.status == 2);
  CHECK(r.out.find("shardsim: error: --model: unknown model 'gpt5'; expected one of gpt3-125m,") == 0);
  r = run(kBase + "--model bert-base --device v100");
  CHECK(r.status == 2);
  CHECK(r.out.find("--device: unknown device 'v100'; expected one of tpu-v2,") != std::string::npos);
  r = run(kBase + "--model bert-base --strategy fsdp");
  CHECK(r.status == 2);
  CHECK(r.out == "shardsim: error: --strategy: unknown strategy 'fsdp'; expected one of replicated, sharded, zero1, "
                 "zero2, zero3\n");
  r = run(kBase + "--model bert-base --optimizer adagrad");
  CHECK(r.status == 2);
  CHECK(r.out == "shardsim: error: --optimizer: unknown optimizer 'adagrad'; expected one of sgd, momentum, adam, adamw, "
                 "lamb, adafactor\n");
  r = run("step --topology dgx-h100-16 --model bert-base --batch-per-device 0");
  CHECK(r.status == 2);
  CHECK(r.out == "shardsim: error: --batch-per-device: 0; expected a positive batch\n");
  r = run(kBase + "--model bert-base --seq 0");
  CHECK(r.status == 2);
  CHECK(r.out == "shardsim: error: --seq: 0; expected a positive sequence length\n");
  r = run(kBase + "--model bert-base --strategy sharded --shard-group 3");
  CHECK(r.status == 2);
  CHECK(r.out == "shardsim: error: --shard-group: k = 3 does not divide N = 16; expected a sharding subgroup size "
                 "that divides the data-parallel size\n");
}

TEST_CASE("step: a trace that fails validation names the op and the field") {
  const std::string path = std::string(SHARDSIM_BINARY_DIR) + "/test_cli_bad_trace.json";
  {
    std::ofstream f(path);
    f << R"({"format": "shardsim-trace", "version": 1, "name": "bad", "batch_per_replica": 1,
             "ops": [{"id": 0, "name": "mm", "phase": "forward", "flops": -1}]})";
  }
  const auto r = run("step --topology dgx-h100-16 --trace " + path);
  CHECK(r.status == 2);
  CHECK(r.out == "shardsim: error: " + path + "/ops/0/flops: flops = -1 in op 'mm'; expected a finite number >= 0\n");
  std::remove(path.c_str());
}

TEST_CASE("step --json: the documented keys; a configuration that does not fit has no plain time") {
  auto r = run(kBase + "--model bert-large --strategy sharded --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"strategy", "step_time_s", "forward_s", "backward_s", "exposed_comm_s", "update_s", "mfu", "fits"}) {
    CHECK_MESSAGE(j.contains(k), k);
  }
  for (const char* k : {"params", "grads", "optimizer", "activations", "buffers", "peak"}) {
    CHECK_MESSAGE(j.at("memory_bytes").contains(k), k);
  }
  CHECK(j.at("device") == "h100");  // implied by the preset
  CHECK(j.at("dp") == 16);
  CHECK(j.at("step_time_s").get<double>() ==
        doctest::Approx(j.at("forward_s").get<double>() + j.at("backward_s").get<double>() +
                        j.at("exposed_comm_s").get<double>() + j.at("update_s").get<double>()));
  // GPT-3 175B replicated needs 16 x 175B bytes of model states: far beyond 80 GiB.
  r = run("step --topology dgx-h100-16 --model gpt3-175b --batch-per-device 1 --json");
  REQUIRE(r.status == 0);
  const auto big = nlohmann::json::parse(r.out);
  CHECK(big.at("fits") == false);
  CHECK(big.at("step_time_s").is_null());
  r = run("step --topology dgx-h100-16 --model gpt3-175b --batch-per-device 1");
  CHECK(r.out.find("DOES NOT FIT") != std::string::npos);
  CHECK(r.out.find("memory/device: params") != std::string::npos);
}

TEST_CASE("compare --json: one object per strategy with the speedup over replicated") {
  const auto r = run("compare --topology dgx-h100-16 --model bert-large --batch-per-device 2 --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.size() == 5);
  CHECK(j[0].at("strategy") == "replicated");
  CHECK(j[0].at("speedup_vs_replicated").get<double>() == 1.0);
  CHECK(j[1].at("strategy") == "sharded");
  CHECK(j[1].at("speedup_vs_replicated").get<double>() ==
        doctest::Approx(j[0].at("step_time_s").get<double>() / j[1].at("step_time_s").get<double>()));
}

TEST_CASE("memory: ZeRO Table 1 from the command line") {
  const auto r = run("memory --params 7.5e9 --dp 64 --optimizer adam --precision mixed --json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j.size() == 5);
  CHECK(j[0].at("model_states_bytes").get<double>() == 120e9);
  CHECK(j[2].at("model_states_bytes").get<double>() == doctest::Approx(31.4e9).epsilon(0.01));
  CHECK(j[3].at("model_states_bytes").get<double>() == doctest::Approx(16.6e9).epsilon(0.01));
  CHECK(j[4].at("model_states_bytes").get<double>() == doctest::Approx(1.88e9).epsilon(0.01));
  const auto bad = run("memory --params 7.5e9 --dp 64 --strategy sharded --shard-group 5");
  CHECK(bad.status == 2);
  CHECK(bad.out == "shardsim: error: --shard-group: k = 5 does not divide N = 64; expected a sharding subgroup size "
                   "that divides the data-parallel size\n");
}
