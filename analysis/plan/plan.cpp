#include "analysis/plan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "analysis/plan/fit.hpp"
#include "analysis/scenario/step_run.hpp"
#include "models/compute/device.hpp"
#include "models/optimizer/optimizer.hpp"
#include "models/step/step.hpp"
#include "models/strategy/strategy.hpp"
#include "models/step/topology_comm.hpp"
#include "sim/error.hpp"
#include "sim/text/strings.hpp"
#include "sim/units.hpp"
#include "topologies/presets.hpp"
#include "traces/zoo/zoo.hpp"

namespace shardsim::plan {
namespace {

using text::join;

/// Number with a scale suffix, `scales` tried in order; otherwise units::parse_count.
double parse_scaled(const std::string& text, const std::vector<std::pair<std::string, double>>& scales,
                    const std::string& where, const std::string& expected) {
  for (const auto& [suffix, factor] : scales) {
    if (text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0) {
      const std::string head = text.substr(0, text.size() - suffix.size());
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(head, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != head.size() || !(v > 0) || !std::isfinite(v)) throw ConfigError(where, fmt::format("'{}'", text), expected);
      return v * factor;
    }
  }
  return -1;
}

std::uint64_t largest_divisor_up_to_sqrt(std::uint64_t n) {
  std::uint64_t best = 1;
  for (std::uint64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) best = d;
  }
  return best;
}

nlohmann::json memory_json(const memory::MemoryBreakdown& m) {
  return {{"params", m.params}, {"grads", m.grads}, {"optimizer", m.optimizer},
          {"activations", m.activations}, {"buffers", m.buffers}, {"peak", m.peak}};
}

// The line step and compare print too (fit.hpp), at the largest accumulation tried.
std::string not_fit_reason(const step::StepResult& r, std::uint32_t accum, std::uint64_t micro) {
  return fmt::format("{} with gradient accumulation {} (micro-batch {})",
                     does_not_fit_text(memory_json(r.memory), r.hbm_bytes, r.step_time_s), accum, micro);
}

}  // namespace

std::vector<std::string> expand_hardware(const std::string& name, std::uint64_t max_devices) {
  const auto& fams = topo::preset_families();
  std::vector<std::string> out;
  for (const auto& f : fams) {
    if (f.name != name) continue;
    if (!f.sized) return {name};
    for (const auto& p : topo::preset_names()) {
      if (p.rfind(name + "-", 0) != 0) continue;
      const std::string count = p.substr(name.size() + 1);
      if (count.find_first_not_of("0123456789") != std::string::npos) continue;
      if (max_devices == 0 || std::stoull(count) <= max_devices) out.push_back(p);
    }
    return out;
  }
  return {name};
}

std::vector<std::size_t> pareto_front(const std::vector<Objectives>& v) {
  // O(n^2): a few thousand candidates at most.
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto& a = v[i];
    bool dominated = false;
    for (std::size_t j = 0; j < v.size() && !dominated; ++j) {
      const auto& b = v[j];
      if (j == i) continue;
      const bool no_worse = b.time_s <= a.time_s && b.devices <= a.devices && b.cost <= a.cost;
      const bool better = b.time_s < a.time_s || b.devices < a.devices || b.cost < a.cost;
      dominated = no_worse && (better || j < i);  // exact ties: the first in search order stays
    }
    if (!dominated) out.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(), [&](std::size_t x, std::size_t y) {
    return v[x].time_s != v[y].time_s ? v[x].time_s < v[y].time_s : v[x].devices < v[y].devices;
  });
  return out;
}

double parse_tokens(const std::string& text, const std::string& where) {
  const std::string expected = "a token count such as 300B, 2T, 1.5M or 3e11";
  const double v = parse_scaled(text, {{"T", 1e12}, {"B", 1e9}, {"G", 1e9}, {"M", 1e6}, {"K", 1e3}, {"k", 1e3}}, where, expected);
  if (v > 0) return v;
  return units::parse_count(text, where);
}

double parse_duration_s(const std::string& text, const std::string& where) {
  const std::string expected = "a duration such as 30d, 12h, 90min or 3600s";
  // Seconds are parsed here, not by units::parse_seconds: a deadline is no simulated time and
  // may exceed the simulator's range (about 106 days). "min" and the sub-second units come
  // before "s", which ends them all.
  const double v = parse_scaled(text,
                                {{"min", 60.0}, {"d", 86400.0}, {"h", 3600.0}, {"ms", 1e-3}, {"us", 1e-6},
                                 {"ns", 1e-9}, {"ps", 1e-12}, {"s", 1.0}},
                                where, expected);
  if (v > 0) return v;
  return units::parse_seconds(text, where);  // no unit: its error says so
}

std::string format_duration(double s) {
  if (s >= 2 * 86400.0) return fmt::format("{:.1f} days", s / 86400.0);
  if (s >= 2 * 3600.0) return fmt::format("{:.1f} hours", s / 3600.0);
  if (s >= 120.0) return fmt::format("{:.0f} min", s / 60.0);
  return fmt::format("{:.3g} s", s);
}

PlanResult make_plan(const PlanRequest& r) {
  const zoo::ModelInfo& model = zoo::find_model(r.model, "--model");
  const opt::Optimizer& optimizer = opt::find_optimizer(r.optimizer, "--optimizer");
  const opt::Precision precision = opt::precision_from_string(r.precision, "--precision");
  (void)step::fidelity_from_string(r.fidelity, "--fidelity");  // validated before the search
  if (r.global_batch == 0) throw ConfigError("--global-batch", "0", "a positive number of samples per step");
  if (r.tokens.has_value() == r.steps.has_value()) {
    throw ConfigError("--tokens/--steps", r.tokens ? "both" : "neither", "exactly one of --tokens and --steps");
  }
  if (r.steps && *r.steps == 0) throw ConfigError("--steps", "0", "a positive number of steps");
  const std::uint64_t seq = r.seq ? r.seq : model.default_seq;
  if (r.tokens && seq == 0) {
    throw ConfigError("--tokens", fmt::format("model {} has no sequence length", model.name), "--steps for a model without tokens");
  }
  if (r.budget_usd && !r.price_per_device_hour) {
    throw ConfigError("--budget", "a budget without --price-per-device-hour", "--price-per-device-hour X (USD)");
  }
  if (r.hardware.empty()) throw ConfigError("--hardware", "no hardware", "one or more presets (tpu-v3, dgx-h100, dgx-h100-64, ...)");
  std::vector<step::Strategy> strategies;
  if (r.strategies.empty()) {
    for (const auto& s : step::strategies()) strategies.push_back(s.strategy);
  } else {
    for (const auto& s : r.strategies) strategies.push_back(step::strategy_from_string(s, "--strategies"));
  }
  if (r.bucket_bytes.empty()) throw ConfigError("--buckets", "no bucket size", "one or more bucket sizes");

  PlanResult out;
  const double tokens_per_step = static_cast<double>(r.global_batch) * static_cast<double>(seq);
  out.steps = r.steps ? *r.steps : static_cast<std::uint64_t>(std::ceil(*r.tokens / tokens_per_step));
  std::vector<std::string> strategy_names;
  for (auto s : strategies) strategy_names.push_back(step::to_string(s));
  out.config = {{"model", model.name}, {"seq", seq}, {"global_batch", r.global_batch}, {"steps", out.steps},
                {"hardware", r.hardware}, {"strategies", strategy_names}, {"max_devices", r.max_devices},
                {"optimizer", optimizer.name}, {"precision", opt::to_string(precision)}, {"fidelity", r.fidelity},
                {"bucket_bytes", r.bucket_bytes}};
  if (r.tokens) out.config["tokens"] = *r.tokens;
  if (r.deadline_s) out.config["deadline_s"] = *r.deadline_s;
  if (r.budget_usd) out.config["budget_usd"] = *r.budget_usd;
  if (r.price_per_device_hour) out.config["price_per_device_hour_usd"] = *r.price_per_device_hour;

  // Every candidate is a step of the library's typed step command (analysis/scenario/step_run.hpp);
  // one runner keeps the topologies, collective costs and workloads the candidates share.
  analysis::StepRunner runner;

  for (const auto& hw : r.hardware) {
    const auto names = expand_hardware(hw, r.max_devices);
    for (const auto& name : names) {
      auto t = topo::make_preset(name);
      if (!t) {
        std::vector<std::string> fams;
        for (const auto& f : topo::preset_families()) fams.push_back(f.name);
        throw ConfigError("--hardware", fmt::format("unknown preset '{}'", name), "a preset family (" + join(fams) + ") or a sized preset such as dgx-h100-64");
      }
      const std::uint64_t n = t->num_devices();
      if (r.max_devices && n > r.max_devices) continue;
      if (t->device_model().empty()) throw ConfigError("--hardware", fmt::format("preset '{}' names no device", name), "a preset with a device model");
      const compute::Device& dev = compute::device_for_model(t->device_model(), "--hardware");
      for (auto strategy : strategies) {
        std::vector<std::uint64_t> groups = {n};
        if (strategy == step::Strategy::sharded) {
          const std::uint64_t k = largest_divisor_up_to_sqrt(n);
          if (k >= 2 && k != n) groups.push_back(k);
        }
        std::vector<std::uint64_t> buckets = r.bucket_bytes;
        if (strategy == step::Strategy::zero3) buckets.resize(1);
        for (auto k : groups) {
          for (auto bucket : buckets) {
            Candidate c;
            c.hardware = name;
            c.device = dev.name;
            c.devices = n;
            c.strategy = step::to_string(strategy);
            c.shard_group = strategy == step::Strategy::sharded ? k : 0;
            c.bucket_bytes = bucket;
            c.hbm_bytes = static_cast<double>(dev.hbm_bytes);
            if (r.global_batch % n != 0) {
              c.rejected = fmt::format("batch not divisible: global batch {} over {} devices", r.global_batch, n);
              out.candidates.push_back(std::move(c));
              continue;
            }
            c.batch_per_device = r.global_batch / n;
            analysis::StepOptions so;
            so.model = model.name;
            so.topology = name;
            if (seq) so.seq = static_cast<double>(seq);
            so.strategy = step::to_string(strategy);
            so.optimizer = optimizer.name;
            so.precision = opt::to_string(precision);
            so.fidelity = r.fidelity;
            so.dp = n;
            if (c.shard_group) so.shard_group = c.shard_group;
            so.bucket = fmt::format("{}B", bucket);
            step::StepResult best;
            for (std::uint32_t accum = 1; c.batch_per_device % accum == 0; accum *= 2) {
              so.grad_accum = accum;
              so.batch_per_device = static_cast<double>(c.batch_per_device / accum);
              best = runner.run(so).result;
              c.grad_accum = accum;
              if (best.fits) break;
            }
            c.step_time_s = best.step_time_s;
            c.mfu = best.mfu;
            c.memory = memory_json(best.memory);
            c.memory_peak_bytes = best.memory.peak;
            c.time_to_train_s = best.step_time_s * static_cast<double>(out.steps);
            if (r.price_per_device_hour) c.cost_usd = static_cast<double>(n) * c.time_to_train_s / 3600.0 * *r.price_per_device_hour;
            if (!best.fits) {
              c.rejected = not_fit_reason(best, c.grad_accum, c.batch_per_device / c.grad_accum);
            } else if (r.deadline_s && c.time_to_train_s > *r.deadline_s) {
              c.rejected = fmt::format("over the deadline: {} > {}", format_duration(c.time_to_train_s), format_duration(*r.deadline_s));
            } else if (r.budget_usd && c.cost_usd && *c.cost_usd > *r.budget_usd) {
              c.rejected = fmt::format("over budget: ${:.0f} > ${:.0f}", *c.cost_usd, *r.budget_usd);
            } else {
              c.feasible = true;
            }
            out.candidates.push_back(std::move(c));
          }
        }
      }
    }
  }

  std::vector<std::size_t> feasible;
  std::vector<Objectives> obj;
  for (std::size_t i = 0; i < out.candidates.size(); ++i) {
    const auto& c = out.candidates[i];
    if (!c.feasible) continue;
    feasible.push_back(i);
    obj.push_back({c.time_to_train_s, static_cast<double>(c.devices), c.cost_usd.value_or(0.0)});
  }
  for (const auto k : pareto_front(obj)) {
    out.candidates[feasible[k]].pareto = true;
    out.pareto.push_back(feasible[k]);
  }
  return out;
}

nlohmann::json to_json(const PlanResult& p) {
  auto cand = [](const Candidate& c) {
    nlohmann::json j = {{"hardware", c.hardware}, {"device", c.device}, {"devices", c.devices},
                        {"strategy", c.strategy}, {"bucket_bytes", c.bucket_bytes},
                        {"batch_per_device", c.batch_per_device}, {"grad_accum", c.grad_accum},
                        {"feasible", c.feasible}, {"pareto", c.pareto}};
    if (c.shard_group) j["shard_group"] = c.shard_group;
    if (c.batch_per_device) {
      j["step_time_s"] = c.step_time_s;
      j["time_to_train_s"] = c.time_to_train_s;
      j["mfu"] = c.mfu;
      j["memory_bytes"] = c.memory;
      j["hbm_bytes"] = c.hbm_bytes;
      if (c.cost_usd) j["cost_usd"] = *c.cost_usd;
    }
    if (!c.rejected.empty()) j["rejected"] = c.rejected;
    return j;
  };
  nlohmann::json pareto = nlohmann::json::array(), rejected = nlohmann::json::array(), other = nlohmann::json::array();
  for (auto i : p.pareto) pareto.push_back(cand(p.candidates[i]));
  for (const auto& c : p.candidates) {
    if (!c.feasible) rejected.push_back(cand(c));
    else if (!c.pareto) other.push_back(cand(c));
  }
  return {{"config", p.config}, {"steps", p.steps}, {"pareto", pareto}, {"dominated", other}, {"rejected", rejected}};
}

}  // namespace shardsim::plan
