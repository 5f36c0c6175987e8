#include "models/compute/device_json.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string_view>

#include "sim/error.hpp"
#include "sim/text/json_text.hpp"
#include "sim/units.hpp"

namespace shardsim::compute {

namespace {

using nlohmann::json;

constexpr std::array kKeys = {"name",         "base",          "description",  "source",       "compute_source",
                              "comm_units_source", "peak_flops", "hbm_bytes",  "hbm_Bps",      "launch_s",
                              "flops_eff",    "mem_eff",       "gemm_eff",     "attn_fwd_eff", "attn_bwd_eff",
                              "compute_units", "gemm_tiles",   "gemm_tile_k",  "comm_units",
                              "unfused_mem_eff_fwd", "unfused_mem_eff_bwd", "persistent_gemm", "p2p_comm_units"};
constexpr std::array kMath = {MathType::fp32, MathType::tf32, MathType::bf16,
                              MathType::fp16, MathType::fp8,  MathType::int8};

std::string keys_list() {
  std::string s;
  for (const char* k : kKeys) s += std::string(s.empty() ? "" : ", ") + k;
  return s;
}

std::string type_name(const json& v) {
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_array()) return "an array";
  if (v.is_object()) return "an object";
  return "null";
}

/// Reads one object's keys with "<file>: /key" in every error.
class Reader {
 public:
  Reader(const json& j, std::string file) : j_(j), file_(std::move(file)) {}

  [[nodiscard]] std::string at(std::string_view pointer) const { return fmt::format("{}: {}", file_, pointer); }
  [[nodiscard]] bool has(const char* key) const { return j_.contains(key); }

  [[nodiscard]] std::string text(const char* key) const {
    const json& v = j_.at(key);
    if (!v.is_string()) throw ConfigError(at(ptr(key)), type_name(v), "a string");
    return v.get<std::string>();
  }
  [[nodiscard]] double fraction(const char* key) const {
    const double f = number(j_.at(key), ptr(key));
    if (!(f > 0 && f <= 1)) throw ConfigError(at(ptr(key)), fmt::format("{}", f), "a fraction in (0, 1]");
    return f;
  }
  [[nodiscard]] std::uint32_t count(const json& v, const std::string& pointer, std::uint32_t min) const {
    const double c = number(v, pointer);
    if (!(c >= min && c <= 4294967295.0 && std::floor(c) == c)) {
      throw ConfigError(at(pointer), fmt::format("{}", c), fmt::format("an integer >= {}", min));
    }
    return static_cast<std::uint32_t>(c);
  }
  [[nodiscard]] std::uint32_t count(const char* key, std::uint32_t min) const { return count(j_.at(key), ptr(key), min); }
  /// A number in base units, or a string with units (`parse`).
  template <class Parse>
  [[nodiscard]] double quantity(const char* key, Parse parse) const {
    const json& v = j_.at(key);
    if (v.is_string()) return static_cast<double>(parse(v.get<std::string>(), at(ptr(key))));
    return number(v, ptr(key));
  }
  [[nodiscard]] double number(const json& v, const std::string& pointer) const {
    if (!v.is_number()) throw ConfigError(at(pointer), type_name(v), "a number");
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < 0) throw ConfigError(at(pointer), fmt::format("{}", x), "a finite number >= 0");
    return x;
  }
  static std::string ptr(const char* key) { return std::string("/") + key; }

 private:
  const json& j_;
  std::string file_;
};

}  // namespace

bool is_device_file(const std::string& spec) { return spec.size() > 5 && spec.ends_with(".json"); }

Device device_from_json(const json& j, const std::string& file) {
  if (!j.is_object()) throw ConfigError(file, type_name(j), "a JSON object describing a device");
  const Reader r(j, file);
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : kKeys) known = known || key == k;
    if (!known) throw ConfigError(r.at("/" + key), fmt::format("unknown key '{}'", key), "one of " + keys_list());
  }
  if (!r.has("name")) throw ConfigError(r.at("/name"), "missing", "the device's name (a string)");
  Device d;
  if (r.has("base")) {
    const std::string base = r.text("base");
    if (is_device_file(base)) throw ConfigError(r.at("/base"), fmt::format("'{}'", base), "a preset name (shardsim list devices)");
    d = find_device(base, r.at("/base"));
  } else {
    for (const char* k : {"peak_flops", "hbm_bytes", "hbm_Bps"}) {
      if (!r.has(k)) throw ConfigError(r.at(Reader::ptr(k)), "missing", "a value (or \"base\": a preset to start from)");
    }
    d.compute_source = "device file " + file;
  }
  d.name = r.text("name");
  if (d.name.empty() || is_device_file(d.name)) {
    throw ConfigError(r.at("/name"), fmt::format("'{}'", d.name), "a non-empty name not ending in .json");
  }
  d.source = "device file " + file + (d.source.empty() ? "" : " (base: " + d.source + ")");
  for (const char* k : {"description", "source", "compute_source", "comm_units_source"}) {
    if (!r.has(k)) continue;
    const std::string v = r.text(k);
    if (std::string_view(k) == "description") d.description = v;
    if (std::string_view(k) == "source") d.source = v;
    if (std::string_view(k) == "compute_source") d.compute_source = v;
    if (std::string_view(k) == "comm_units_source") d.comm_units_source = v;
  }
  if (r.has("peak_flops")) {
    const json& p = j.at("peak_flops");
    if (!p.is_object()) throw ConfigError(r.at("/peak_flops"), type_name(p), "an object {\"bf16\": FLOP/s, ...}");
    for (const auto& [key, value] : p.items()) {
      const std::string at = "/peak_flops/" + key;
      bool found = false;
      for (const MathType m : kMath) {
        if (key != to_string(m)) continue;
        found = true;
        const double f = r.number(value, at);
        if (!(f > 0)) throw ConfigError(r.at(at), fmt::format("{}", f), "a peak > 0 FLOP/s");
        d.peak_flops[m] = f;
      }
      if (!found) throw ConfigError(r.at(at), fmt::format("math type '{}'", key), "one of fp32, tf32, bf16, fp16, fp8, int8");
    }
    if (!d.peak_flops.contains(MathType::bf16) && !d.peak_flops.contains(MathType::fp32)) {
      throw ConfigError(r.at("/peak_flops"), "neither bf16 nor fp32", "a bf16 or fp32 peak (the fallbacks of the others)");
    }
  }
  if (r.has("hbm_bytes")) {
    const double b = r.quantity("hbm_bytes", units::parse_bytes);
    if (!(b >= 1 && b < 1.8e19)) throw ConfigError(r.at("/hbm_bytes"), fmt::format("{}", b), "a capacity > 0 bytes");
    d.hbm_bytes = static_cast<std::uint64_t>(b);
  }
  if (r.has("hbm_Bps")) {
    d.hbm_Bps = r.quantity("hbm_Bps", units::parse_rate_Bps);
    if (!(d.hbm_Bps > 0)) throw ConfigError(r.at("/hbm_Bps"), fmt::format("{}", d.hbm_Bps), "a bandwidth > 0 bytes/s");
  }
  if (r.has("launch_s")) d.launch_s = r.quantity("launch_s", units::parse_seconds);
  if (r.has("flops_eff")) d.flops_eff = r.fraction("flops_eff");
  if (r.has("mem_eff")) d.mem_eff = r.fraction("mem_eff");
  if (r.has("gemm_eff")) d.gemm_eff = r.fraction("gemm_eff");
  if (r.has("attn_fwd_eff")) d.attn_fwd_eff = r.fraction("attn_fwd_eff");
  if (r.has("attn_bwd_eff")) d.attn_bwd_eff = r.fraction("attn_bwd_eff");
  if (r.has("unfused_mem_eff_fwd")) d.unfused_mem_eff_fwd = r.fraction("unfused_mem_eff_fwd");
  if (r.has("unfused_mem_eff_bwd")) d.unfused_mem_eff_bwd = r.fraction("unfused_mem_eff_bwd");
  if (r.has("compute_units")) d.compute_units = r.count("compute_units", 1);
  if (r.has("gemm_tile_k")) d.gemm_tile_k = r.count("gemm_tile_k", 1);
  if (r.has("gemm_tiles")) {
    const json& t = j.at("gemm_tiles");
    if (!t.is_array() || t.empty()) {
      throw ConfigError(r.at("/gemm_tiles"), t.is_array() ? "an empty array" : type_name(t), "an array of [m, n] tiles");
    }
    d.gemm_tiles.clear();
    for (std::size_t i = 0; i < t.size(); ++i) {
      const std::string at = fmt::format("/gemm_tiles/{}", i);
      if (!t[i].is_array() || t[i].size() != 2) throw ConfigError(r.at(at), t[i].dump(), "a tile [m, n]");
      d.gemm_tiles.push_back({r.count(t[i][0], at + "/0", 1), r.count(t[i][1], at + "/1", 1)});
    }
  }
  if (r.has("comm_units")) d.comm_units = r.count("comm_units", 0);
  if (r.has("p2p_comm_units")) d.p2p_comm_units = r.count("p2p_comm_units", 0);
  if (d.p2p_comm_units > 0 && d.p2p_comm_units >= d.compute_units) {
    throw ConfigError(r.at("/p2p_comm_units"), fmt::format("{} of {} compute units", d.p2p_comm_units, d.compute_units),
                      "fewer units than compute_units");
  }
  if (r.has("persistent_gemm")) {
    const json& v = j.at("persistent_gemm");
    if (!v.is_boolean()) throw ConfigError(r.at("/persistent_gemm"), type_name(v), "true or false");
    d.persistent_gemm = v.get<bool>();
  }
  if (d.comm_units > 0 && d.comm_units >= d.compute_units) {
    throw ConfigError(r.at("/comm_units"), fmt::format("{} of {} compute units", d.comm_units, d.compute_units),
                      "fewer units than compute_units (a collective leaves some for compute)");
  }
  return d;
}

Device load_device_file(const std::string& path, const std::string& where) {
  std::ifstream in(path);
  if (!in) throw ConfigError(where, fmt::format("cannot open '{}'", path), "a readable device JSON file");
  std::stringstream ss;
  ss << in.rdbuf();
  return device_from_json(parse_json_text(ss.str(), path, "a JSON object describing a device"), path);
}

}  // namespace shardsim::compute
