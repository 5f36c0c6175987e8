#include "analysis/scenario/step_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "sim/error.hpp"
#include "sim/registry.hpp"
#include "sim/units.hpp"

namespace shardsim::analysis {
namespace {

using nlohmann::json;
using S = StepOptions;

template <class... F>
struct Overload : F... {
  using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;

std::string flag(const StepOptionSpec& s) { return std::string("--") + s.key; }

// A value as the user typed it: 0 not 0.0, strings unquoted.
std::string show(const json& v) {
  if (v.is_number()) return fmt::format("{:g}", v.get<double>());
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// A whole number from 1 to 1e15 (the largest exactly representable counts with margin).
bool whole_positive(double x) { return x >= 1 && x == std::floor(x) && x <= 1e15; }

double count_value(const StepOptionSpec& s, const json& v) {
  double x = 0;
  if (v.is_number()) x = v.get<double>();
  else if (v.is_string()) x = units::parse_count(v.get<std::string>(), flag(s));
  else throw ConfigError(flag(s), v.dump(), s.expected);
  if (!whole_positive(x)) throw ConfigError(flag(s), show(v), s.expected);
  return x;
}

std::string text_value(const StepOptionSpec& s, const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return v.dump();
  throw ConfigError(flag(s), v.dump(), "a string");
}

}  // namespace

const std::vector<StepOptionSpec>& step_option_table() {
  static const std::vector<StepOptionSpec> table = {
      {"model", "-m", &S::model, "Zoo model (shardsim list models)", ""},
      {"trace", "", &S::trace, "Native trace JSON (docs/trace-format.md)", ""},
      {"topology", "-t", &S::topology, "Topology preset, JSON file or builder spec", ""},
      {"device", "-d", &S::device, "Device (default: the topology's; shardsim list devices)", ""},
      {"strategy", "-s", &S::strategy,
       "Strategy (shardsim list strategies; default: trace for a --trace with collectives, else replicated)", ""},
      {"optimizer", "-o", &S::optimizer, "Optimizer (shardsim list optimizers)", ""},
      {"precision", "", &S::precision, "mixed | fp32", ""},
      {"batch-per-device", "-b", &S::batch_per_device, "Samples per device per micro-batch", "a positive batch"},
      {"seq", "", &S::seq, "Sequence length (default: the model's)", "a positive sequence length"},
      {"dp", "", &S::dp, "Data-parallel size (default: every device of the topology)", "a positive data-parallel size"},
      {"fidelity", "", &S::fidelity, "analytical | flow", ""},
      {"algorithm", "-a", &S::algorithm, "Collective algorithm or auto", ""},
      {"profile", "", &S::profile,
       "Calibration profile (shardsim calibrate): calibrated bandwidth per link class, alpha as step overhead", ""},
      {"compute", "", &S::compute, "roofline | measured (trace durations)", ""},
      {"grad-accum", "", &S::grad_accum, "Micro-batches per step", "a positive number of micro-batches"},
      {"bucket", "", &S::bucket, "Gradient bucket / fused buffer size (default 25MiB)", ""},
      {"shard-group", "-k", &S::shard_group, "sharded: shard over subgroups of k ranks (k divides N)",
       "a positive subgroup size that divides the data-parallel size"},
      {"checkpointing", "", &S::checkpointing, "Activation checkpointing per unit", ""},
      {"no-defer", "", &S::no_defer, "sharded: all-gather at step end, not in the next forward", ""},
      {"no-fusion", "", &S::no_fusion, "sharded: one padded buffer per tensor", ""},
      {"no-prefetch", "", &S::no_prefetch, "zero3: no prefetch of the next unit's all-gather", ""},
      {"faults", "", &S::faults,
       "Link/NIC faults, ';'-separated: link:A-B:FRACTION, nic:DEVICE:FRACTION, down:A-B, down:nic:DEVICE; "
       "ITEM@START[+DURATION] from START (e.g. down:A-B@2ms+1ms); random:RATE[:FRACTION|down[:DURATION]] a seeded "
       "(--seed) fault process of RATE faults per step on random links (docs/reliability.md)", ""},
      {"compute-jitter", "", &S::compute_jitter,
       "Per-rank compute noise, re-drawn every step: lognormal:SIGMA, normal:SIGMA or a histogram file", ""},
      {"slow-ranks", "", &S::slow_ranks, "Persistently slow ranks: RANK:SPEED[,...] (0.5 = half speed)", ""},
      {"seed", "", &S::seed, "Seed of --compute-jitter and of a random: fault process (default 1)", "a positive seed"},
      {"rank-devices", "", &S::rank_devices,
       "Heterogeneous ranks: RANKS:DEVICE[,...] (0-7:h100,8-15:a100-80gb); the others keep --device", ""},
      {"batch-split", "", &S::batch_split,
       "even (default): every rank --batch-per-device; speed: the global batch split in proportion to device speed", ""},
      {"samples", "", &S::samples, "Steps to sample: reports the mean and p50/p90/p99/max step time",
       "a positive number of steps"},
      {"mesh", "", &S::mesh,
       "Parallel mesh dp=..,tp=..,pp=..[,cp=..,ep=..] (dp derived from the devices when omitted); --model then takes a "
       "zoo transformer or a config.json",
       ""},
      {"micro-batch", "", &S::micro_batch, "--mesh: samples per micro-batch (default 1)", "a positive micro-batch size"},
      {"global-batch", "", &S::global_batch, "--mesh: samples per step (default: one micro-batch per replica)",
       "a positive global batch"},
      {"schedule", "", &S::schedule, "--mesh: pipeline schedule gpipe | 1f1b | interleaved:V", ""},
      {"recompute", "", &S::recompute, "--mesh: activation recomputation none | selective | full", ""},
      {"sequence-parallel", "", &S::sequence_parallel, "--mesh: Megatron sequence parallelism", ""},
      {"tp-comm-overlap", "", &S::tp_comm_overlap,
       "--mesh: overlap tensor-parallel communication with the GEMMs (Megatron-LM --tp-comm-overlap, TransformerEngine userbuffers)", ""},
      {"tp-overlap-config", "", &S::tp_overlap_config,
       "--tp-comm-overlap: a userbuffers config JSON (NeMo's ub_tp_comm_overlap_cfg: per layer method, num_sm, "
       "set_sm_margin, num_splits); default TransformerEngine's",
       ""},
      {"p2p-blocking", "", &S::p2p_blocking,
       "--mesh: a stage's next compute waits for its pipeline sends too (Megatron-LM's default p2p: req.wait() on "
       "every isend / irecv, then torch.cuda.synchronize()); default: only receives are waited for",
       ""},
      {"p2p-scatter-gather", "", &S::p2p_scatter_gather,
       "--mesh: Megatron-LM's scatter/gather pipeline transfers (each tp rank sends 1/tp, the receiver all-gathers "
       "over tp); no effect with --sequence-parallel",
       ""},
      {"uneven-stages", "", &S::uneven_stages, "--mesh: allow a pp that does not divide the layers (Llama 3 rule)", ""},
      {"no-flash-attention", "", &S::no_flash_attention, "Unfused attention: the s^2 scores stored and timed (default: flash for decoder models)",
       ""},
      {"eager-kernels", "", &S::eager_kernels,
       "The Llama reference code as eager PyTorch runs it (torchtitan without torch.compile): RMSNorm op by op, "
       "GQA's repeat_kv copies, the reference rotary (default: fused kernels)",
       ""},
      {"fsdp", "", &S::fsdp,
       "zero3 as PyTorch FSDP runs it, fsdp1 | fsdp2: its gradient and copy passes around each unit's collectives "
       "(default none: the collectives alone)",
       ""},
  };
  return table;
}

std::vector<std::string> step_option_keys() {
  std::vector<std::string> keys;
  for (const auto& s : step_option_table()) keys.emplace_back(s.key);
  return keys;
}

std::string type_name(const StepOptionSpec& s) {
  return std::visit(Overload{[](std::string S::*) { return "string"; },
                             [](std::optional<std::string> S::*) { return "string"; },
                             [](bool S::*) { return "flag"; }, [](std::optional<bool> S::*) { return "flag"; },
                             [](std::uint64_t S::*) { return "count"; },
                             [](std::optional<std::uint64_t> S::*) { return "count"; },
                             [](std::optional<double> S::*) { return "number"; }},
                    s.field);
}

std::string default_text(const StepOptionSpec& s) {
  const StepOptions d;
  return std::visit(Overload{[&](std::string S::*m) { return d.*m; },
                             [&](bool S::*m) { return std::string(d.*m ? "true" : "false"); },
                             [&](std::uint64_t S::*m) { return std::to_string(d.*m); },
                             [](auto) { return std::string("-"); }},
                    s.field);
}

StepOptions parse_step_options(const json& j, const std::vector<std::string>& skip) {
  if (!j.is_object()) throw ConfigError("step options", j.dump(), "a JSON object of options");
  const auto& table = step_option_table();
  StepOptions o;
  for (const auto& item : j.items()) {
    // Plain references, not a structured binding: clang 14 (the ASan build) cannot capture a
    // binding in the lambdas below.
    const std::string& key = item.key();
    const json& v = item.value();
    if (std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
    const auto it = std::find_if(table.begin(), table.end(), [&](const StepOptionSpec& s) { return key == s.key; });
    if (it == table.end()) {
      throw ConfigError("/" + key, fmt::format("unknown key '{}' for a step", key), one_of(step_option_keys()));
    }
    if (v.is_null()) continue;
    const StepOptionSpec& s = *it;
    std::visit(Overload{[&](std::string S::*m) { o.*m = text_value(s, v); },
                        [&](std::optional<std::string> S::*m) {
                          std::string t = text_value(s, v);
                          if (!t.empty()) o.*m = std::move(t);  // "" is unset, as on the command line
                        },
                        [&](bool S::*m) {
                          if (!v.is_boolean()) throw ConfigError(flag(s), v.dump(), "true or false");
                          o.*m = v.get<bool>();
                        },
                        [&](std::optional<bool> S::*m) {
                          if (!v.is_boolean()) throw ConfigError(flag(s), v.dump(), "true or false");
                          if (v.get<bool>()) o.*m = true;  // false is unset, as on the command line
                        },
                        [&](std::uint64_t S::*m) { o.*m = static_cast<std::uint64_t>(count_value(s, v)); },
                        [&](std::optional<std::uint64_t> S::*m) { o.*m = static_cast<std::uint64_t>(count_value(s, v)); },
                        [&](std::optional<double> S::*m) { o.*m = count_value(s, v); }},
               s.field);
  }
  return o;
}

void validate_step_options(const StepOptions& o) {
  for (const auto& s : step_option_table()) {
    auto check = [&](double x) {
      if (!whole_positive(x)) throw ConfigError(flag(s), fmt::format("{:g}", x), s.expected);
    };
    std::visit(Overload{[&](std::uint64_t S::*m) { check(static_cast<double>(o.*m)); },
                        [&](std::optional<std::uint64_t> S::*m) {
                          if (o.*m) check(static_cast<double>(*(o.*m)));
                        },
                        [&](std::optional<double> S::*m) {
                          if (o.*m) check(*(o.*m));
                        },
                        [](auto) {}},
               s.field);
  }
}

json to_json(const StepOptions& o) {
  json j = json::object();
  for (const auto& s : step_option_table()) {
    std::visit(
        [&](auto m) {
          const auto& v = o.*m;
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::optional<std::string>> || std::is_same_v<V, std::optional<std::uint64_t>> ||
                        std::is_same_v<V, std::optional<double>> || std::is_same_v<V, std::optional<bool>>) {
            if (v) j[s.key] = *v;
          } else {
            j[s.key] = v;
          }
        },
        s.field);
  }
  return j;
}

}  // namespace shardsim::analysis
