// shardsim memory, two forms:
//  - a parameter count, no model: per-device model states for each strategy (ZeRO Table 1):
//    `shardsim memory --params 7.5e9 --dp 64 --optimizer adam --precision mixed --strategy zero2`
//    (models/memory/memory.hpp);
//  - a model on a mesh: memory per rank for every pipeline stage (models/parallel/
//    memory_stage.hpp): `shardsim memory --model gpt3-175b --mesh tp=8,pp=8 --hardware
//    dgx-a100-64 --micro-batch 1 --global-batch 64 --recompute selective --sequence-parallel`.
//    --model takes a zoo name or a config.json (Hugging Face or shardsim's own, traces/models).
//    The device count comes from --hardware (which also names the device and checks the
//    placement of the axes), else from the mesh as written (dp must then be given).
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "analysis/cli/command.hpp"
#include "analysis/cli/json_flags.hpp"
#include "analysis/output/table.hpp"
#include "analysis/scenario/scenario.hpp"
#include "models/compute/device.hpp"
#include "models/memory/memory.hpp"
#include "models/parallel/memory_stage.hpp"
#include "models/parallel/placement.hpp"
#include "sim/error.hpp"
#include "sim/registry.hpp"
#include "sim/units.hpp"
#include "topologies/load.hpp"
#include "traces/models/model_config.hpp"

namespace shardsim::cli {
namespace {

using nlohmann::json;

const std::vector<std::string> kModelKeys = {"model", "mesh", "micro-batch", "global-batch", "seq", "schedule",
                                             "recompute", "sequence-parallel", "no-flash-attention", "eager-kernels",
                                             "hardware"};

json run_model_memory(const json& flags);

json run_params_memory(const json& flags) {
  static const std::vector<std::string> keys = {"params", "dp", "optimizer", "precision", "strategy", "shard-group", "device"};
  if (!flags.is_object()) throw ConfigError("memory", flags.dump(), "an object of flags");
  for (const auto& [k, v] : flags.items()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      throw ConfigError("memory", fmt::format("unknown flag '{}'", k), one_of(keys));
    }
  }
  auto text = [&](const char* k, const std::string& d) {
    if (!flags.contains(k)) return d;
    const auto& v = flags.at(k);
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  if (!flags.contains("params")) throw ConfigError("--params", "missing", "a parameter count such as 7.5e9");
  const double params = units::parse_count(text("params", ""), "--params");
  const double dp = units::parse_count(text("dp", "1"), "--dp");
  if (dp < 1 || dp != std::floor(dp)) throw ConfigError("--dp", text("dp", ""), "a positive integer");
  memory::MemoryInput in;
  in.tensors = memory::square_tensor(params);
  in.optimizer = &opt::find_optimizer(text("optimizer", "adam"), "--optimizer");
  in.precision = opt::precision_from_string(text("precision", "mixed"), "--precision");
  in.dp = static_cast<std::uint64_t>(dp);
  if (flags.contains("shard-group")) {
    const double k = units::parse_count(text("shard-group", ""), "--shard-group");
    in.shard_group = static_cast<std::uint64_t>(k);
    if (k < 1 || k != std::floor(k) || in.dp % in.shard_group != 0) {
      throw ConfigError("--shard-group", fmt::format("k = {} does not divide N = {}", text("shard-group", ""), in.dp),
                        "a sharding subgroup size that divides the data-parallel size");
    }
  }
  const compute::Device* dev = flags.contains("device") ? &compute::find_device(text("device", ""), "--device") : nullptr;
  std::vector<std::string> names;
  const std::string s = text("strategy", "all");
  if (s == "all") {
    for (const auto& i : step::strategies()) names.push_back(i.name);
  } else {
    names.push_back(s);
  }
  json out = json::array();
  for (const auto& n : names) {
    in.strategy = step::strategy_from_string(n, "--strategy");
    const auto m = memory::memory_per_device(in);
    json r = {{"strategy", n}, {"params", params}, {"dp", in.dp}, {"optimizer", in.optimizer->name},
              {"precision", opt::to_string(in.precision)}, {"model_states_bytes", m.model_states()},
              {"memory_bytes", {{"params", m.params}, {"grads", m.grads}, {"optimizer", m.optimizer},
                                {"activations", m.activations}, {"buffers", m.buffers}, {"peak", m.peak}}}};
    if (dev) {
      r["device"] = dev->name;
      r["hbm_bytes"] = dev->hbm_bytes;
      r["fits"] = m.peak <= static_cast<double>(dev->hbm_bytes);
    }
    out.push_back(r);
  }
  return s == "all" ? out : out.at(0);
}

// ---- per-stage memory of a model on a mesh ----

using flags::flag_bool;
using flags::flag_str;
using flags::flag_uint;

json stage_json(const parallel::StageMemory& st) {
  return {{"stage", st.stage},
          {"layers", st.layers},
          {"in_flight", st.in_flight},
          {"memory_bytes",
           {{"params", st.params}, {"grads", st.grads}, {"optimizer", st.optimizer}, {"activations", st.activations},
            {"recompute", st.recompute_working}, {"buffers", st.buffers}, {"peak", st.peak}}}};
}

json run_model_memory(const json& flags) {
  std::vector<std::string> keys = kModelKeys;
  for (const char* k : {"optimizer", "precision", "strategy", "shard-group", "device"}) keys.emplace_back(k);
  for (const auto& [k, v] : flags.items()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      throw ConfigError("memory --model", fmt::format("unknown flag '{}'", k), one_of(keys));
    }
  }
  const parallel::ModelSpec model = models::resolve_model(flag_str(flags, "model", ""), "--model");
  std::optional<topo::Topology> topo;
  const std::string hw = flag_str(flags, "hardware", "");
  if (!hw.empty()) topo = topo::make_topology(hw, "--hardware");
  const std::string mesh_text = flag_str(flags, "mesh", topo ? "tp=1" : "dp=1");
  // Without a topology the mesh as written is the device count (dp must be given).
  const parallel::MeshSpec spec = parallel::parse_mesh(mesh_text, topo ? topo->num_devices() : 0, "--mesh");
  const parallel::Mesh mesh = spec.mesh("--mesh");

  std::string device_name = flag_str(flags, "device", "");
  if (device_name.empty() && topo && !topo->device_model().empty()) {
    device_name = topo->device_model() == "a100" ? "a100-80gb" : topo->device_model();  // DGX A100: 80GB parts
  }
  const compute::Device* dev = device_name.empty() ? nullptr : &compute::find_device(device_name, "--device");

  parallel::ParallelMemoryInput in;
  in.model = &model;
  in.mesh = spec.sizes;
  in.micro_batch = flag_uint(flags, "micro-batch", 1, "a positive micro-batch size");
  in.global_batch = flag_uint(flags, "global-batch", 0, "a positive global batch");
  in.seq = flag_uint(flags, "seq", 0, "a positive sequence length");
  in.schedule = parallel::schedule_from_string(flag_str(flags, "schedule", "1f1b"), "--schedule");
  in.recompute = parallel::recompute_from_string(flag_str(flags, "recompute", "none"), "--recompute");
  in.sequence_parallel = flag_bool(flags, "sequence-parallel");
  if (flag_bool(flags, "no-flash-attention")) in.flash_attention = false;
  in.eager_kernels = flag_bool(flags, "eager-kernels");
  in.optimizer = &opt::find_optimizer(flag_str(flags, "optimizer", "adam"), "--optimizer");
  in.precision = opt::precision_from_string(flag_str(flags, "precision", "mixed"), "--precision");
  const std::uint64_t k = flag_uint(flags, "shard-group", 0, "a positive shard group size");
  if (dev) in.hbm_bytes = static_cast<double>(dev->hbm_bytes);

  std::vector<std::string> names;
  const std::string s = flag_str(flags, "strategy", "replicated");
  if (s == "all") {
    for (const auto& i : step::strategies()) names.push_back(i.name);
    if (k != 0) names.emplace_back("hsdp");
  } else {
    names.push_back(s);
  }
  json placement = json::array(), issues = json::array();
  if (topo) {
    const auto shape = parallel::shape_of(*topo);
    for (const auto& p : parallel::place(mesh, shape)) {
      placement.push_back({{"axis", parallel::to_string(p.axis)}, {"size", p.size}, {"stride", p.stride}, {"where", p.where}});
    }
    for (const auto& i : parallel::placement_issues(mesh, shape)) issues.push_back(i);
  }
  json out = json::array();
  for (const auto& n : names) {
    in.strategy = parallel::dp_strategy_from_string(n, k, "--strategy");
    if (in.strategy.strategy == step::Strategy::sharded && k != 0 && (spec.sizes.dp * spec.sizes.ep * spec.sizes.cp) % k != 0) {
      throw ConfigError("--shard-group",
                        fmt::format("k = {} does not divide the data-parallel group of {} (dp x ep x cp)", k,
                                    spec.sizes.dp * spec.sizes.ep * spec.sizes.cp),
                        "a shard group that divides the data-parallel group");
    }
    const auto r = parallel::parallel_memory(in);
    json mj = {{"dp", spec.sizes.dp}, {"tp", spec.sizes.tp}, {"pp", spec.sizes.pp}, {"cp", spec.sizes.cp},
               {"ep", spec.sizes.ep}, {"order", mesh.order_str()}};
    json j = {{"model", model.name},
              {"model_source", model.source},
              {"parameters", model.parameter_count()},
              {"mesh", mj},
              {"devices", mesh.devices()},
              {"micro_batch", in.micro_batch},
              {"global_batch", in.global_batch == 0 ? in.micro_batch * spec.sizes.dp * spec.sizes.ep : in.global_batch},
              {"micro_batches", r.micro_batches},
              {"seq", r.seq},
              {"schedule", in.schedule.str()},
              {"recompute", parallel::to_string(in.recompute)},
              {"sequence_parallel", in.sequence_parallel},
              {"flash_attention", r.flash_attention},
              {"strategy", n},
              {"optimizer", in.optimizer->name},
              {"precision", opt::to_string(in.precision)},
              {"layer_activation_bytes", r.layer_activation_bytes},
              {"peak_bytes", r.worst().peak},
              {"worst_stage", r.worst().stage}};
    json stages = json::array();
    for (const auto& st : r.stages) stages.push_back(stage_json(st));
    j["stages"] = stages;
    if (topo) {
      j["hardware"] = topo->name();
      j["placement"] = placement;
      j["placement_issues"] = issues;
    }
    if (dev) {
      j["device"] = dev->name;
      j["hbm_bytes"] = dev->hbm_bytes;
      j["fits"] = !r.does_not_fit.has_value();
      if (r.does_not_fit) j["does_not_fit"] = *r.does_not_fit;
    }
    out.push_back(j);
  }
  return s == "all" ? out : out.at(0);
}

json run_memory(const json& flags) {
  if (!flags.is_object()) throw ConfigError("memory", flags.dump(), "an object of flags");
  if (flags.contains("model")) {
    if (flags.contains("params")) throw ConfigError("--params/--model", "both given", "one of them");
    if (flags.contains("dp")) throw ConfigError("--dp", "with --model", "the data-parallel size in --mesh (dp=N)");
    return run_model_memory(flags);
  }
  for (const auto& k : kModelKeys) {
    if (flags.contains(k)) {
      throw ConfigError("--" + k, "given without --model", "--model NAME|config.json (or drop it for --params)");
    }
  }
  return run_params_memory(flags);
}

void print_model_memory(const json& r) {
  const auto& m = r.at("mesh");
  fmt::print("{} ({:.3g} parameters) on dp={} tp={} pp={} cp={} ep={} ({} devices, order {})\n",
             r.at("model").get<std::string>(), r.at("parameters").get<double>(), m.at("dp").get<std::uint64_t>(),
             m.at("tp").get<std::uint64_t>(), m.at("pp").get<std::uint64_t>(), m.at("cp").get<std::uint64_t>(),
             m.at("ep").get<std::uint64_t>(), r.at("devices").get<std::uint64_t>(), m.at("order").get<std::string>());
  fmt::print("seq {}, micro-batch {} x {} per replica, schedule {}, recompute {}, sequence parallel {}, flash attention "
             "{}, strategy {}, {} {} (GB = 1e9 bytes)\n",
             r.at("seq").get<std::uint64_t>(), r.at("micro_batch").get<std::uint64_t>(),
             r.at("micro_batches").get<std::uint64_t>(), r.at("schedule").get<std::string>(),
             r.at("recompute").get<std::string>(), r.at("sequence_parallel").get<bool>() ? "on" : "off",
             r.at("flash_attention").get<bool>() ? "on" : "off", r.at("strategy").get<std::string>(),
             r.at("optimizer").get<std::string>(), r.at("precision").get<std::string>());
  analysis::Table t({"stage", "layers", "in flight", "params GB", "grads GB", "optimizer GB", "activations GB",
                     "recompute GB", "buffers GB", "peak GB"});
  auto gb = [](const json& v) { return fmt::format("{:.2f}", v.get<double>() / 1e9); };
  for (const auto& st : r.at("stages")) {
    const auto& b = st.at("memory_bytes");
    t.add({fmt::format("{}", st.at("stage").get<std::uint64_t>()), fmt::format("{}", st.at("layers").get<std::uint64_t>()),
           fmt::format("{}", st.at("in_flight").get<std::uint64_t>()), gb(b.at("params")), gb(b.at("grads")),
           gb(b.at("optimizer")), gb(b.at("activations")), gb(b.at("recompute")), gb(b.at("buffers")), gb(b.at("peak"))});
  }
  fmt::print("{}", t.str());
  if (r.contains("placement")) {
    for (const auto& p : r.at("placement")) {
      if (p.at("size").get<std::uint64_t>() > 1) {
        fmt::print("{}={}: {}\n", p.at("axis").get<std::string>(), p.at("size").get<std::uint64_t>(),
                   p.at("where").get<std::string>());
      }
    }
    for (const auto& i : r.at("placement_issues")) fmt::print("placement: {}\n", i.get<std::string>());
  }
  if (r.contains("device")) {
    fmt::print("{} HBM {:.1f} GiB: {}\n", r.at("device").get<std::string>(),
               static_cast<double>(r.at("hbm_bytes").get<std::uint64_t>()) / (1024.0 * 1024.0 * 1024.0),
               r.at("fits").get<bool>() ? "fits" : "does not fit: " + r.at("does_not_fit").get<std::string>());
  }
}

struct MemoryOptions {
  std::string params, optimizer = "adam", precision = "mixed", strategy, device;
  std::uint64_t dp = 1, shard_group = 0;
  bool json_out = false;
  // --model form
  std::string model, mesh, schedule = "1f1b", recompute = "none", hardware;
  std::uint64_t micro_batch = 1, global_batch = 0, seq = 0;
  bool sequence_parallel = false, no_flash = false, eager_kernels = false;
};

void setup_memory(CLI::App& root) {
  auto o = std::make_shared<MemoryOptions>();
  auto* sub = root.add_subcommand(
      "memory", "Per-device model-state memory for a parameter count (ZeRO Table 1), or per-stage memory of a model on a mesh");
  sub->add_option("--params,-p", o->params, "Parameter count (7.5e9, 175G)");
  sub->add_option("--dp,-n", o->dp, "Data-parallel size N (--params form)");
  sub->add_option("--optimizer,-o", o->optimizer, "Optimizer (shardsim list optimizers)");
  sub->add_option("--precision", o->precision, "mixed | fp32");
  sub->add_option("--strategy,-s", o->strategy, "A strategy, hsdp (--model form) or all (default: all for --params, replicated for --model)");
  sub->add_option("--shard-group,-k", o->shard_group, "sharded / hsdp: subgroup size k");
  sub->add_option("--device,-d", o->device, "Check the fit against this device's HBM");
  sub->add_option("--model,-m", o->model, "A zoo model or a config.json (Hugging Face or shardsim model JSON)");
  sub->add_option("--mesh", o->mesh, "dp=16,tp=8,pp=8[,cp=..,ep=..][,order=tp-cp-ep-dp-pp] or GSPMD data=64,model=16");
  sub->add_option("--hardware", o->hardware, "Topology (preset, spec or JSON): device count, device and placement");
  sub->add_option("--micro-batch", o->micro_batch, "Samples per micro-batch");
  sub->add_option("--global-batch", o->global_batch, "Samples per step over all replicas (default: one micro-batch each)");
  sub->add_option("--seq", o->seq, "Sequence length (default: the model's)");
  sub->add_option("--schedule", o->schedule, "gpipe | 1f1b | interleaved:V");
  sub->add_option("--recompute", o->recompute, "none | selective | full");
  sub->add_flag("--sequence-parallel", o->sequence_parallel, "Megatron sequence parallelism (with tp)");
  sub->add_flag("--no-flash-attention", o->no_flash, "Keep the s^2 attention scores (default: flash for decoders)");
  sub->add_flag("--eager-kernels", o->eager_kernels,
                "The tensors eager PyTorch's Llama reference code saves (fp32 RMSNorm inputs, repeat_kv copies)");
  sub->add_flag("--json", o->json_out, "Print JSON");
  sub->callback([o, sub] {
    json f = {{"optimizer", o->optimizer}, {"precision", o->precision}};
    const bool model_form = !o->model.empty();
    if (!o->params.empty()) f["params"] = o->params;
    if (sub->count("--dp") > 0 || !model_form) f["dp"] = o->dp;
    f["strategy"] = o->strategy.empty() ? (model_form ? "replicated" : "all") : o->strategy;
    if (o->shard_group) f["shard-group"] = o->shard_group;
    if (!o->device.empty()) f["device"] = o->device;
    if (model_form) {
      f["model"] = o->model;
      if (!o->mesh.empty()) f["mesh"] = o->mesh;
      if (!o->hardware.empty()) f["hardware"] = o->hardware;
      f["micro-batch"] = o->micro_batch;
      if (o->global_batch) f["global-batch"] = o->global_batch;
      if (o->seq) f["seq"] = o->seq;
      f["schedule"] = o->schedule;
      f["recompute"] = o->recompute;
      if (o->sequence_parallel) f["sequence-parallel"] = true;
      if (o->no_flash) f["no-flash-attention"] = true;
      if (o->eager_kernels) f["eager-kernels"] = true;
    } else {
      for (const char* opt : {"--mesh", "--hardware", "--micro-batch", "--global-batch", "--seq", "--schedule",
                              "--recompute", "--sequence-parallel", "--no-flash-attention", "--eager-kernels"}) {
        if (sub->count(opt) > 0) {
          throw ConfigError(opt, "given without --model", "--model NAME|config.json (or drop it for --params)");
        }
      }
    }
    json r = run_memory(f);
    if (o->json_out) {
      std::cout << r.dump(2) << "\n";
      return;
    }
    if (!r.is_array()) r = json::array({r});
    if (model_form) {
      for (const auto& x : r) print_model_memory(x);
      return;
    }
    fmt::print("{} parameters, N = {}, {} {} (GB = 1e9 bytes)\n", o->params, o->dp, o->optimizer, o->precision);
    std::vector<std::string> head = {"strategy", "params GB", "grads GB", "optimizer GB", "model states GB"};
    if (!o->device.empty()) head.push_back("fits " + o->device);
    analysis::Table t(head);
    for (const auto& x : r) {
      const auto& m = x.at("memory_bytes");
      std::vector<std::string> row = {x.at("strategy").get<std::string>(),
                                      fmt::format("{:.3f}", m.at("params").get<double>() / 1e9),
                                      fmt::format("{:.3f}", m.at("grads").get<double>() / 1e9),
                                      fmt::format("{:.3f}", m.at("optimizer").get<double>() / 1e9),
                                      fmt::format("{:.3f}", x.at("model_states_bytes").get<double>() / 1e9)};
      if (!o->device.empty()) row.push_back(x.at("fits").get<bool>() ? "yes" : "NO");
      t.add(row);
    }
    fmt::print("{}", t.str());
  });
}

std::vector<std::string> memory_keys() {
  std::vector<std::string> k = {"params", "dp", "optimizer", "precision", "strategy", "shard-group", "device"};
  k.insert(k.end(), kModelKeys.begin(), kModelKeys.end());
  return k;
}

const Registration reg{"memory", 32, setup_memory};
const analysis::ScenarioRegistration scenario{{"memory", memory_keys(), run_memory}};

}  // namespace
}  // namespace shardsim::cli
