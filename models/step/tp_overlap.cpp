#include "models/step/tp_overlap.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/error.hpp"
#include "sim/text/json_text.hpp"

namespace shardsim::step {

namespace {

constexpr std::size_t kLayers = static_cast<std::size_t>(UbLayer::count);

bool gathers_into_gemm(UbLayer l) {
  return l == UbLayer::qkv_fprop || l == UbLayer::fc1_fprop || l == UbLayer::proj_dgrad || l == UbLayer::fc2_dgrad;
}
bool scatters_from_gemm(UbLayer l) { return l == UbLayer::proj_fprop || l == UbLayer::fc2_fprop; }

const char* methods_of(UbLayer l) {
  if (gathers_into_gemm(l)) return "\"ring_exchange\" (an all-gather into its GEMM)";
  if (scatters_from_gemm(l)) return "\"ring_exchange\" or \"pipeline\" (a GEMM into its reduce-scatter)";
  return "\"bulk\" (a collective beside an unrelated GEMM)";
}

bool allowed(UbLayer l, UbMethod m) {
  if (gathers_into_gemm(l)) return m == UbMethod::ring_exchange;
  if (scatters_from_gemm(l)) return m != UbMethod::bulk;
  return m == UbMethod::bulk;
}

std::string type_name(const nlohmann::json& v) { return v.type_name(); }

}  // namespace

const char* to_string(UbLayer l) {
  switch (l) {
    case UbLayer::qkv_fprop: return "qkv_fprop";
    case UbLayer::proj_fprop: return "proj_fprop";
    case UbLayer::fc1_fprop: return "fc1_fprop";
    case UbLayer::fc2_fprop: return "fc2_fprop";
    case UbLayer::proj_dgrad: return "proj_dgrad";
    case UbLayer::fc2_dgrad: return "fc2_dgrad";
    case UbLayer::qkv_dgrad: return "qkv_dgrad";
    case UbLayer::fc1_dgrad: return "fc1_dgrad";
    case UbLayer::qkv_wgrad: return "qkv_wgrad";
    case UbLayer::fc1_wgrad: return "fc1_wgrad";
    case UbLayer::count: break;
  }
  return "?";
}

const char* to_string(UbMethod m) {
  switch (m) {
    case UbMethod::ring_exchange: return "ring_exchange";
    case UbMethod::pipeline: return "pipeline";
    case UbMethod::bulk: return "bulk";
  }
  return "?";
}

std::array<UbOverlap, kLayers> TpOverlapConfig::te_defaults() {
  // TE 2.x transformer_engine/pytorch/module/base.py initialize_ub, get_default_config:
  // "num_sm": 1 if ring_exchange else 16, "set_sm_margin": not ring_exchange,
  // "num_splits": tp_size if ring_exchange else 4; methods: ring_exchange for qkv_fprop,
  // fc1_fprop, proj_dgrad, fc2_dgrad; pipeline for proj_fprop, fc2_fprop; bulk for the rest.
  std::array<UbOverlap, kLayers> a{};
  for (std::size_t i = 0; i < kLayers; ++i) {
    const auto l = static_cast<UbLayer>(i);
    if (gathers_into_gemm(l)) {
      a[i] = {UbMethod::ring_exchange, 1, false, 0};
    } else if (scatters_from_gemm(l)) {
      a[i] = {UbMethod::pipeline, 16, true, 4};
    } else {
      a[i] = {UbMethod::bulk, 16, true, 0};
    }
  }
  return a;
}

std::uint64_t TpOverlapConfig::splits(UbLayer l, std::uint64_t tp) const {
  const auto& o = at(l);
  if (o.method == UbMethod::bulk) return 1;
  if (o.num_splits > 0) return o.num_splits;
  if (o.method == UbMethod::ring_exchange) return o.aggregate ? std::max<std::uint64_t>(1, tp / 2) : tp;
  return 4;
}

double TpOverlapConfig::gemm_factor(UbLayer l, std::uint32_t units) const {
  const auto& o = at(l);
  if (!o.set_sm_margin || units == 0 || o.num_sm >= units) return 1.0;
  return static_cast<double>(units) / static_cast<double>(units - o.num_sm);
}

bool TpOverlapConfig::takes_units(UbLayer l) const {
  const auto& o = at(l);
  return o.method != UbMethod::ring_exchange && !o.set_sm_margin;
}

void TpOverlapConfig::check_units(std::uint32_t units, const std::string& where) const {
  if (units == 0) return;
  for (std::size_t i = 0; i < kLayers; ++i) {
    const auto& o = layers[i];
    if ((o.method != UbMethod::ring_exchange || o.set_sm_margin) && o.num_sm >= units) {
      throw ConfigError(fmt::format("{}: {}.num_sm", where, to_string(static_cast<UbLayer>(i))),
                        fmt::format("{} SMs on a device of {}", o.num_sm, units),
                        "fewer SMs than the device has (the GEMM runs on the others)");
    }
  }
}

TpOverlapConfig tp_overlap_from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) {
    throw ConfigError(source, type_name(j), "a JSON object of userbuffers layers (qkv_fprop, ..., fc2_fprop)");
  }
  TpOverlapConfig c;
  c.te_default = false;
  for (const auto& entry : j.items()) {
    const std::string& name = entry.key();
    const nlohmann::json& v = entry.value();
    std::size_t i = 0;
    while (i < kLayers && name != to_string(static_cast<UbLayer>(i))) ++i;
    const std::string where = fmt::format("{}: /{}", source, name);
    if (i == kLayers) {
      throw ConfigError(where, fmt::format("unknown layer '{}'", name),
                        "one of qkv_fprop, proj_fprop, fc1_fprop, fc2_fprop, proj_dgrad, fc2_dgrad, qkv_dgrad, "
                        "fc1_dgrad, qkv_wgrad, fc1_wgrad");
    }
    const auto l = static_cast<UbLayer>(i);
    if (!v.is_object()) throw ConfigError(where, type_name(v), "an object with a method");
    UbOverlap o = c.layers[i];
    if (!v.contains("method")) throw ConfigError(where, "no method", methods_of(l));
    for (const auto& item : v.items()) {
      const std::string& key = item.key();
      const nlohmann::json& x = item.value();  // not a structured binding: clang 14 lambdas cannot capture one
      const std::string at = fmt::format("{}/{}", where, key);
      auto integer = [&](const char* expected) -> std::uint64_t {
        if (x.is_boolean()) return x.get<bool>() ? 1 : 0;
        if (!x.is_number_unsigned()) throw ConfigError(at, x.dump(), expected);
        return x.get<std::uint64_t>();
      };
      if (key == "method") {
        const std::string m = x.is_string() ? x.get<std::string>() : std::string();
        if (m == "ring_exchange") {
          o.method = UbMethod::ring_exchange;
        } else if (m == "pipeline") {
          o.method = UbMethod::pipeline;
        } else if (m == "bulk") {
          o.method = UbMethod::bulk;
        } else {
          throw ConfigError(at, x.dump(), methods_of(l));
        }
        if (!allowed(l, o.method)) throw ConfigError(at, x.dump(), methods_of(l));
        // The method's TE defaults (te_defaults), unless the entry sets them (read after the loop).
        o.num_sm = o.method == UbMethod::ring_exchange ? 1 : 16;
        o.set_sm_margin = o.method != UbMethod::ring_exchange;
        o.num_splits = o.method == UbMethod::pipeline ? 4 : 0;
      } else if (key == "num_sm" || key == "set_sm_margin" || key == "num_splits") {
        // read below, after the method's defaults
      } else if (key == "aggregate") {
        o.aggregate = integer("0, 1, true or false") != 0;
      } else if (key == "cga_size" || key == "atomic_gemm" || key == "fp8_buf") {
        integer("a non-negative integer or a boolean");  // accepted, not modelled (header)
      } else {
        throw ConfigError(at, fmt::format("unknown key '{}'", key),
                          "method, num_sm, set_sm_margin, num_splits, aggregate (cga_size, atomic_gemm, fp8_buf accepted)");
      }
    }
    for (const auto& item : v.items()) {
      const std::string& key = item.key();
      const nlohmann::json& x = item.value();  // not a structured binding: clang 14 lambdas cannot capture one
      const std::string at = fmt::format("{}/{}", where, key);
      if (key == "num_sm") {
        if (!x.is_number_unsigned() || x.get<std::uint64_t>() == 0 || x.get<std::uint64_t>() > 1024) {
          throw ConfigError(at, x.dump(), "a positive number of SMs");
        }
        o.num_sm = static_cast<std::uint32_t>(x.get<std::uint64_t>());
      } else if (key == "set_sm_margin") {
        if (x.is_boolean()) {
          o.set_sm_margin = x.get<bool>();
        } else if (x.is_number_unsigned() && x.get<std::uint64_t>() <= 1) {
          o.set_sm_margin = x.get<std::uint64_t>() == 1;
        } else {
          throw ConfigError(at, x.dump(), "0, 1, true or false");
        }
      } else if (key == "num_splits") {
        if (!x.is_number_unsigned() || x.get<std::uint64_t>() == 0 || x.get<std::uint64_t>() > 1024) {
          throw ConfigError(at, x.dump(), "a positive number of GEMM chunks");
        }
        o.num_splits = static_cast<std::uint32_t>(x.get<std::uint64_t>());
      }
    }
    c.layers[i] = o;
  }
  return c;
}

TpOverlapConfig load_tp_overlap_file(const std::string& path, const std::string& where) {
  std::ifstream in(path);
  if (!in) throw ConfigError(where, fmt::format("cannot open '{}'", path), "a readable userbuffers config JSON file");
  std::stringstream ss;
  ss << in.rdbuf();
  return tp_overlap_from_json(parse_json_text(ss.str(), path, "a JSON object of userbuffers layers"), path);
}

}  // namespace shardsim::step
