#pragma once
// The options of one training step (`shardsim step`, `compare`, `study`, `plan`, sweeps),
// declared once: the StepOptions struct holds the values and their defaults, the option
// table (step_option_table()) names each one (JSON key = long flag without dashes), its short
// flag, its help and what a value must be. The JSON parser, the CLI flags
// (analysis/cli/step_flags.hpp), the `config` echo of a result and the sweep's key check
// all read that table; nothing else lists the options.
//
// How to add a step option (3 lines):
//   1. a member of StepOptions with its default (std::optional when "unset" means derived);
//   2. a row in step_option_table() (step_options.cpp): key, short flag, member, help, expected;
//   3. use it in run_step (step_run.cpp); JSON, CLI, `config` and the sweep keys follow.
//
// Value rules (exact messages, tested): a string option takes a JSON string (a number is
// taken as its text); a flag takes true or false; a count (std::uint64_t) and a number
// (double: a count the CLI reads as a real, so that 0.5 meets this check and not CLI11's)
// take a JSON number or a string with a count suffix ("8", "1K") and must be a whole number
// from 1 to 1e15: otherwise ConfigError("--key", value as typed, the row's `expected`).
// JSON null means unset (the default). Unknown keys: ConfigError naming the JSON path
// ("/key"), the key, and every valid key.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace shardsim::analysis {

struct StepOptions {
  std::optional<std::string> model;     ///< zoo model; exactly one of model and trace
  std::optional<std::string> trace;     ///< native trace file
  std::string topology;                 ///< preset, JSON file or builder spec (required)
  std::optional<std::string> device;    ///< default: the topology's device
  std::optional<std::string> strategy;  ///< default: trace for a trace with collectives, else replicated
  std::string optimizer = "adam";
  std::string precision = "mixed";
  std::optional<double> batch_per_device;  ///< default: the trace's batch (a model needs one)
  std::optional<double> seq;               ///< default: the model's
  std::optional<std::uint64_t> dp;         ///< default: every device (replay: the largest recorded group)
  std::string fidelity = "analytical";
  std::string algorithm = "auto";
  std::optional<std::string> profile;      ///< calibration profile file
  std::string compute = "roofline";
  std::uint64_t grad_accum = 1;
  std::optional<std::string> bucket;       ///< bucket / fused buffer size; default 25MiB
  std::optional<std::uint64_t> shard_group;
  bool checkpointing = false;
  bool no_defer = false;
  bool no_fusion = false;
  bool no_prefetch = false;
  // Issue 16: non-uniform clusters (models/step/variation.hpp, topologies/faults.hpp).
  std::optional<std::string> faults;          ///< link/NIC faults: link:A-B:0.5;down:A-B
  std::optional<std::string> compute_jitter;  ///< lognormal:S, normal:S or a histogram file
  std::optional<std::string> slow_ranks;      ///< RANK:SPEED[,...]
  std::optional<std::uint64_t> seed;          ///< of the jitter; default 1
  std::optional<std::uint64_t> samples;       ///< steps to sample; default 1
  std::optional<std::string> rank_devices;    ///< RANKS:DEVICE[,...]: heterogeneous ranks
  std::optional<std::string> batch_split;     ///< even (default) | speed
  // Parallel layout (issue 13; models/step/parallel_graphs.hpp): with --mesh the step is a
  // transformer (--model: zoo name or config.json) on a dp x tp x pp x cp x ep mesh.
  std::optional<std::string> mesh;          ///< "dp=16,tp=8,pp=8[,cp=..,ep=..]"; dp derived when omitted
  std::optional<std::uint64_t> micro_batch; ///< with --mesh; default 1
  std::optional<std::uint64_t> global_batch;  ///< with --mesh; default one micro-batch per replica
  std::optional<std::string> schedule;      ///< gpipe | 1f1b | interleaved:V; default 1f1b
  std::optional<std::string> recompute;     ///< none | selective | full; default none
  std::optional<bool> sequence_parallel;    ///< flags of a mesh step: unset = off (not echoed)
  std::optional<bool> tp_comm_overlap;
  std::optional<std::string> tp_overlap_config;  ///< NeMo / TE userbuffers config JSON (step/tp_overlap.hpp)
  std::optional<bool> p2p_blocking;
  std::optional<bool> p2p_scatter_gather;
  std::optional<bool> uneven_stages;
  std::optional<bool> no_flash_attention;
  std::optional<bool> eager_kernels;
  std::optional<std::string> fsdp;
};

/// One row of the option table. `field` points at the StepOptions member; its type is the
/// option's type (see the value rules above).
struct StepOptionSpec {
  using Field = std::variant<std::string StepOptions::*, std::optional<std::string> StepOptions::*, bool StepOptions::*,
                             std::uint64_t StepOptions::*, std::optional<std::uint64_t> StepOptions::*,
                             std::optional<double> StepOptions::*, std::optional<bool> StepOptions::*>;
  const char* key;          ///< JSON key and long flag (--key)
  const char* short_flag;   ///< "-m" or "" for none
  Field field;
  const char* help;
  const char* expected;     ///< for counts and numbers: what a valid value is
};

/// The table, in --help order.
const std::vector<StepOptionSpec>& step_option_table();
/// The JSON keys (the table's, in order).
std::vector<std::string> step_option_keys();
/// "string", "flag", "count" or "number" (for `list` and docs).
std::string type_name(const StepOptionSpec& s);
/// The default as text ("adam", "false", "1", "-" for unset).
std::string default_text(const StepOptionSpec& s);

/// Parses a JSON object of options (keys as in the table). `skip` keys are left alone (a
/// caller's own keys, e.g. compare's "strategies"). Throws ConfigError (value rules above).
StepOptions parse_step_options(const nlohmann::json& j, const std::vector<std::string>& skip = {});
/// Checks every count and number against its row (the CLI fills StepOptions without JSON).
void validate_step_options(const StepOptions& o);
/// The options as JSON: every option with a default, and each optional one that is set.
nlohmann::json to_json(const StepOptions& o);

}  // namespace shardsim::analysis
