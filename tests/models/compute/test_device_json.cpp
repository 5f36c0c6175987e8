// A device described in JSON (models/compute/device_json.hpp): every field read into the Device
// the per-op model uses, a preset as base with overrides, --device FILE.json through
// find_device, and the exact error of every validation rule.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "models/compute/device.hpp"
#include "models/compute/device_json.hpp"
#include "models/compute/gemm.hpp"
#include "sim/error.hpp"
#include "topologies/presets.hpp"

using namespace shardsim;
using compute::MathType;
using nlohmann::json;

namespace {

std::string error_of(const json& j) {
  try {
    (void)compute::device_from_json(j, "dev.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

const json kFull = json::parse(R"({
  "name": "toy-gpu", "description": "a toy", "source": "made up",
  "peak_flops": {"bf16": 1e12, "fp32": 1e11},
  "hbm_bytes": "16GiB", "hbm_Bps": "2TB/s", "launch_s": "3us",
  "flops_eff": 0.5, "mem_eff": 0.9, "gemm_eff": 0.8, "attn_fwd_eff": 0.4, "attn_bwd_eff": 0.3,
  "compute_units": 4, "gemm_tiles": [[128, 128], [64, 256]], "gemm_tile_k": 32, "comm_units": 1,
  "persistent_gemm": true, "compute_source": "a table", "comm_units_source": "a log"
})");

std::filesystem::path write_file(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / ("shardsim-device-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p;
}

}  // namespace

TEST_CASE("device JSON: every field reaches the Device, units parsed at the boundary") {
  const auto d = compute::device_from_json(kFull, "dev.json");
  CHECK(d.name == "toy-gpu");
  CHECK(d.description == "a toy");
  CHECK(d.source == "made up");
  CHECK(d.peak(MathType::bf16) == 1e12);
  CHECK(d.peak(MathType::fp32) == 1e11);
  CHECK(d.peak(MathType::fp8) == 1e12);  // falls back to bf16
  CHECK(d.hbm_bytes == 16ULL << 30);
  CHECK(d.hbm_Bps == 2e12);
  CHECK(d.launch_s == doctest::Approx(3e-6).scale(0));
  CHECK(d.flops_eff == 0.5);
  CHECK(d.mem_eff == 0.9);
  CHECK(d.gemm_eff == 0.8);
  CHECK(d.attn_fwd_eff == 0.4);
  CHECK(d.attn_bwd_eff == 0.3);
  CHECK(d.compute_units == 4);
  REQUIRE(d.gemm_tiles.size() == 2);
  CHECK(d.gemm_tiles[1].m == 64);
  CHECK(d.gemm_tiles[1].n == 256);
  CHECK(d.gemm_tile_k == 32);
  CHECK(d.comm_units == 1);
  CHECK(d.persistent_gemm);
  CHECK(d.compute_source == "a table");
  CHECK(d.comm_units_source == "a log");
  // The tables drive the GEMM model: 512 x 512 x 4096 is 16 tiles of 128x128 (4 full waves on 4
  // units) or 16 of 64x256 (the same); compute bound, so t = 4 waves x 2 x 128 x 128 x 4096 /
  // (1e12 / 4 x 0.8) + launch.
  const double expected = 4.0 * 2 * 128 * 128 * 4096 / (1e12 / 4 * 0.8) + 3e-6;
  CHECK(compute::gemm_time_s(d, {512, 512, 4096, 1}, MathType::bf16) == doctest::Approx(expected).scale(0));
  // Numbers in base units read the same as strings with units.
  json plain = kFull;
  plain["hbm_bytes"] = 17179869184.0;
  plain["hbm_Bps"] = 2e12;
  plain["launch_s"] = 3e-6;
  const auto p = compute::device_from_json(plain, "dev.json");
  CHECK(p.hbm_bytes == d.hbm_bytes);
  CHECK(p.hbm_Bps == d.hbm_Bps);
  CHECK(p.launch_s == doctest::Approx(d.launch_s).scale(0));
}

TEST_CASE("device JSON: a preset as base, overridden field by field") {
  const auto& h100 = compute::find_device("h100", "t");
  const auto d = compute::device_from_json(json{{"name", "h100-500w"}, {"base", "h100"}, {"gemm_eff", 0.6}}, "dev.json");
  CHECK(d.name == "h100-500w");
  CHECK(d.gemm_eff == 0.6);
  CHECK(d.compute_units == h100.compute_units);
  CHECK(d.comm_units == h100.comm_units);
  CHECK(d.persistent_gemm == h100.persistent_gemm);
  CHECK(d.attn_fwd_eff == h100.attn_fwd_eff);
  CHECK(d.hbm_Bps == h100.hbm_Bps);
  CHECK(d.source.find("device file dev.json") == 0);
  // A compute-bound GEMM of one full wave of 256x128 tiles takes gemm_eff(h100) / 0.6 as long.
  const compute::GemmShape g{1536, 2816, 8192, 1};
  const double th = compute::gemm_time_s(h100, g, MathType::bf16) - h100.launch_s;
  const double td = compute::gemm_time_s(d, g, MathType::bf16) - d.launch_s;
  CHECK(td / th == doctest::Approx(h100.gemm_eff / 0.6).scale(0));
  // peak_flops replaces only the entries it names.
  const auto q = compute::device_from_json(json{{"name", "x"}, {"base", "h100"}, {"peak_flops", {{"bf16", 5e14}}}}, "f");
  CHECK(q.peak(MathType::bf16) == 5e14);
  CHECK(q.peak(MathType::fp32) == h100.peak(MathType::fp32));
}

TEST_CASE("device JSON: --device FILE.json through find_device, loaded once") {
  const auto path = write_file("ok.json", kFull.dump());
  const auto& a = compute::find_device(path.string(), "--device");
  const auto& b = compute::find_device(path.string(), "--device");
  CHECK(&a == &b);
  CHECK(a.name == "toy-gpu");
  CHECK(a.gemm_eff == 0.8);
  CHECK(compute::is_device_file("x.json"));
  CHECK_FALSE(compute::is_device_file("h100"));
  std::filesystem::remove(path);

  const auto bad = write_file("bad.json", "{\"name\": ");
  CHECK_THROWS_AS((void)compute::find_device(bad.string(), "--device"), ConfigError);
  std::filesystem::remove(bad);
  CHECK_THROWS_WITH_AS((void)compute::find_device("/nonexistent/dev.json", "--device"),
                       "--device: cannot open '/nonexistent/dev.json'; expected a readable device JSON file", ConfigError);
}

TEST_CASE("device JSON: each validation rule, with its exact message") {
  auto with = [](const char* key, const json& v) {
    json j = kFull;
    j[key] = v;
    return error_of(j);
  };
  CHECK(error_of(json::array()) == "dev.json: an array; expected a JSON object describing a device");
  CHECK(with("gem_eff", 0.5) ==
        "dev.json: /gem_eff: unknown key 'gem_eff'; expected one of name, base, description, source, compute_source, "
        "comm_units_source, peak_flops, hbm_bytes, hbm_Bps, launch_s, flops_eff, mem_eff, gemm_eff, attn_fwd_eff, "
        "attn_bwd_eff, compute_units, gemm_tiles, gemm_tile_k, comm_units, unfused_mem_eff_fwd, unfused_mem_eff_bwd, persistent_gemm, p2p_comm_units");
  json nameless = kFull;
  nameless.erase("name");
  CHECK(error_of(nameless) == "dev.json: /name: missing; expected the device's name (a string)");
  CHECK(with("name", 3) == "dev.json: /name: a number; expected a string");
  CHECK(with("name", "x.json") == "dev.json: /name: 'x.json'; expected a non-empty name not ending in .json");
  CHECK(error_of(json{{"name", "x"}, {"peak_flops", {{"bf16", 1e12}}}, {"hbm_bytes", 1}}) ==
        "dev.json: /hbm_Bps: missing; expected a value (or \"base\": a preset to start from)");
  CHECK(with("base", "v100") == "dev.json: /base: unknown device 'v100'; expected one of tpu-v2, tpu-v3, tpu-v4, "
                                "tpu-v5e, tpu-v5p, a100-40gb, a100-80gb, h100, h100-hbm2e-500w, h100-pcie, h200, b200, gb200, gb300, mi300x");
  CHECK(with("base", "other.json") == "dev.json: /base: 'other.json'; expected a preset name (shardsim list devices)");
  CHECK(with("gemm_eff", 1.5) == "dev.json: /gemm_eff: 1.5; expected a fraction in (0, 1]");
  CHECK(with("mem_eff", 0) == "dev.json: /mem_eff: 0; expected a fraction in (0, 1]");
  CHECK(with("attn_bwd_eff", "0.5") == "dev.json: /attn_bwd_eff: a string; expected a number");
  CHECK(with("launch_s", -1) == "dev.json: /launch_s: -1; expected a finite number >= 0");
  CHECK(with("compute_units", 0) == "dev.json: /compute_units: 0; expected an integer >= 1");
  CHECK(with("compute_units", 2.5) == "dev.json: /compute_units: 2.5; expected an integer >= 1");
  CHECK(with("gemm_tiles", json::array()) == "dev.json: /gemm_tiles: an empty array; expected an array of [m, n] tiles");
  CHECK(with("gemm_tiles", json::parse("[[128, 128], [64]]")) == "dev.json: /gemm_tiles/1: [64]; expected a tile [m, n]");
  CHECK(with("gemm_tiles", json::parse("[[128, 0]]")) == "dev.json: /gemm_tiles/0/1: 0; expected an integer >= 1");
  CHECK(with("comm_units", 4) ==
        "dev.json: /comm_units: 4 of 4 compute units; expected fewer units than compute_units (a collective leaves some "
        "for compute)");
  CHECK(with("peak_flops", json{{"bf8", 1e12}}) ==
        "dev.json: /peak_flops/bf8: math type 'bf8'; expected one of fp32, tf32, bf16, fp16, fp8, int8");
  CHECK(with("peak_flops", json{{"bf16", 0}}) == "dev.json: /peak_flops/bf16: 0; expected a peak > 0 FLOP/s");
  CHECK(with("peak_flops", json{{"fp8", 1e15}}) ==
        "dev.json: /peak_flops: neither bf16 nor fp32; expected a bf16 or fp32 peak (the fallbacks of the others)");
  CHECK(with("peak_flops", 1e12) == "dev.json: /peak_flops: a number; expected an object {\"bf16\": FLOP/s, ...}");
  CHECK(with("hbm_Bps", "fast").find("dev.json: /hbm_Bps") == 0);
  CHECK(with("hbm_bytes", 0) == "dev.json: /hbm_bytes: 0; expected a capacity > 0 bytes");
  CHECK(with("persistent_gemm", "yes") == "dev.json: /persistent_gemm: a string; expected true or false");
  CHECK(with("p2p_comm_units", 4) == "dev.json: /p2p_comm_units: 4 of 4 compute units; expected fewer units than compute_units");
}

TEST_CASE("every topology preset names a device the compute model knows") {
  // plan --hardware and step look a preset's device up by its device_model (device_for_model);
  // a preset whose device is missing would fail there, not here.
  for (const auto& f : topo::preset_families()) {
    CAPTURE(f.name);
    const compute::Device& d = compute::device_for_model(f.device_model, f.name);
    CHECK(d.hbm_bytes > 0);
    CHECK(d.peak_flops.at(MathType::bf16) > 0);
  }
  // GB300 (Blackwell Ultra): more BF16 and HBM than GB200, INT8 cut to 0.165 POPS.
  const compute::Device& gb300 = compute::find_device("gb300", "t");
  const compute::Device& gb200 = compute::find_device("gb200", "t");
  CHECK(gb300.peak_flops.at(MathType::bf16) == 2500e12);
  CHECK(gb300.hbm_bytes > gb200.hbm_bytes);
  CHECK(gb300.peak_flops.at(MathType::int8) < gb200.peak_flops.at(MathType::int8) / 20);
}
