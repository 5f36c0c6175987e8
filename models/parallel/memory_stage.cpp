// Model states, checks and the per-stage report of memory_stage.hpp (sources there).
#include "models/parallel/memory_stage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "models/memory/memory.hpp"
#include "sim/error.hpp"
#include "sim/registry.hpp"

namespace shardsim::parallel {

std::string DpStrategy::str() const {
  if (hsdp) return fmt::format("hsdp (shard group {})", shard_group);
  if (strategy == step::Strategy::sharded && shard_group != 0) return fmt::format("sharded (k = {})", shard_group);
  return step::to_string(strategy);
}

DpStrategy dp_strategy_from_string(const std::string& s, std::uint64_t shard_group, const std::string& where) {
  DpStrategy d;
  d.shard_group = shard_group;
  if (s == "hsdp") {
    d.hsdp = true;
    d.strategy = step::Strategy::zero3;
    if (shard_group == 0) {
      throw ConfigError("--shard-group", "missing for --strategy hsdp", "the size k of the groups that shard (zero3) inside");
    }
    return d;
  }
  try {
    d.strategy = step::strategy_from_string(s, where);
  } catch (const ConfigError&) {
    // The data-parallel strategies' registry, and hsdp, which the mesh adds on top of zero3.
    std::vector<std::string> names;
    for (const auto& i : step::strategies()) names.push_back(i.name);
    names.emplace_back("hsdp");
    throw_unknown("strategy", s, where, names);
  }
  return d;
}

const StageMemory& ParallelMemoryReport::worst() const {
  return *std::max_element(stages.begin(), stages.end(),
                           [](const StageMemory& a, const StageMemory& b) { return a.peak < b.peak; });
}

std::vector<std::uint64_t> stage_layers(std::uint64_t layers, std::uint64_t pp) {
  const std::uint64_t base = (layers + pp - 1) / pp;
  std::vector<std::uint64_t> out(pp, base);
  std::uint64_t extra = base * pp - layers;
  for (std::uint64_t k = 0; extra > 0; ++k, --extra) {
    const std::uint64_t at = k % 2 == 0 ? k / 2 : pp - 1 - k / 2;
    --out[at % pp];
  }
  return out;
}

std::vector<std::uint64_t> virtual_stage_layers(std::uint64_t layers, std::uint64_t pp, std::uint64_t v) {
  return stage_layers(layers, pp * v);
}

std::vector<std::vector<std::uint64_t>> chunk_layers(std::uint64_t layers, std::uint64_t pp, std::uint64_t v) {
  const auto vs = virtual_stage_layers(layers, pp, v);
  std::vector<std::vector<std::uint64_t>> out(pp, std::vector<std::uint64_t>(v));
  for (std::uint64_t c = 0; c < v; ++c) {
    for (std::uint64_t i = 0; i < pp; ++i) out[i][c] = vs[c * pp + i];
  }
  return out;
}

void check_mesh_for_model(const ModelSpec& m, const MeshSizes& z, const PipelineSchedule& s, std::uint64_t seq,
                          bool uneven_stages) {
  if (m.heads % z.tp != 0) {
    throw ConfigError("--mesh", fmt::format("tp={} does not divide the {} attention heads of {}", z.tp, m.heads, m.name),
                      "a tp that divides the number of heads");
  }
  if (m.kv_heads % z.tp != 0) {
    throw ConfigError("--mesh", fmt::format("tp={} does not divide the {} KV heads of {}", z.tp, m.kv_heads, m.name),
                      "a tp that divides the number of KV heads (Megatron-LM splits whole query groups)");
  }
  if (s.kind == ScheduleKind::interleaved) {
    const std::uint64_t pv = z.pp * s.virtual_stages;
    if (m.layers % pv != 0 && !(uneven_stages && m.layers >= 2 * pv)) {
      throw ConfigError("--mesh", fmt::format("pp x v = {} x {} = {} does not divide the {} layers of {}", z.pp,
                                              s.virtual_stages, pv, m.layers, m.name),
                        "pp x virtual stages dividing the number of layers");
    }
  } else if (uneven_stages && m.layers >= 2 * z.pp) {
    // Any pp: stage_layers() balances them (at least two layers per stage, so that taking one
    // from each end leaves every stage some).
  } else if (m.layers % z.pp != 0) {
    throw ConfigError("--mesh", fmt::format("pp={} does not divide the {} layers of {}", z.pp, m.layers, m.name),
                      "a pp that divides the number of layers");
  }
  if (!m.moe() && z.ep != 1) {
    throw ConfigError("--mesh", fmt::format("ep={} for {}, which has no experts", z.ep, m.name), "ep=1 for a dense model");
  }
  if (m.moe() && m.experts % z.ep != 0) {
    throw ConfigError("--mesh", fmt::format("ep={} does not divide the {} experts of {}", z.ep, m.experts, m.name),
                      "an ep that divides the number of experts");
  }
  if (seq % z.cp != 0) {
    throw ConfigError("--mesh", fmt::format("cp={} does not divide the sequence length {}", z.cp, seq),
                      "a cp that divides the sequence length");
  }
}

std::uint64_t micro_batches(const MeshSizes& z, std::uint64_t global_batch, std::uint64_t micro_batch) {
  if (micro_batch == 0) throw ConfigError("--micro-batch", "0", "a positive micro-batch size");
  if (global_batch == 0) return 1;
  const std::uint64_t replicas = z.dp * z.ep;
  if (global_batch % replicas != 0) {
    throw ConfigError("--global-batch",
                      fmt::format("{} is not a multiple of the {} data-parallel replicas (dp x ep = {} x {})", global_batch,
                                  replicas, z.dp, z.ep),
                      "a global batch divisible by dp x ep");
  }
  const std::uint64_t per = global_batch / replicas;
  if (per % micro_batch != 0) {
    throw ConfigError("--micro-batch",
                      fmt::format("{} does not divide the per-replica batch {} (--global-batch {} / {} replicas)",
                                  micro_batch, per, global_batch, replicas),
                      "a micro-batch that divides the per-replica batch");
  }
  return per / micro_batch;
}

namespace {

double d(std::uint64_t v) { return static_cast<double>(v); }

opt::TensorShape mat(double rows, double cols) {
  const auto r = static_cast<std::uint64_t>(rows), c = static_cast<std::uint64_t>(cols);
  return {r * c, r, c};
}
opt::TensorShape vec(double n) { return {static_cast<std::uint64_t>(n), 0, 0}; }

// One MLP of width f on one tp rank: column-parallel fc1 (gate + up), row-parallel fc2.
void mlp_shards(const ModelSpec& m, std::uint64_t f, double t, std::vector<opt::TensorShape>& out) {
  const double h = d(m.hidden), w = d(f) / t;
  out.push_back(mat(h, w));
  if (m.gated_ffn) out.push_back(mat(h, w));
  out.push_back(mat(w, h));
  if (m.linear_bias) {
    out.push_back(vec(m.gated_ffn ? 2 * w : w));
    out.push_back(vec(h));  // row-parallel bias: replicated
  }
}

// Dense (non-expert) tensors of one layer on one tp rank, and the expert tensors.
void layer_shards(const ModelSpec& m, double t, std::uint64_t ep, std::vector<opt::TensorShape>& dense,
                  std::vector<opt::TensorShape>& expert) {
  const double h = d(m.hidden), q = d(m.heads * m.dhead()) / t, kv = d(m.kv_heads * m.dhead()) / t;
  dense.push_back(mat(h, q));
  dense.push_back(mat(h, kv));
  dense.push_back(mat(h, kv));
  dense.push_back(mat(q, h));
  if (m.qkv_bias) dense.push_back(vec(q + 2 * kv));
  if (m.linear_bias) dense.push_back(vec(h));
  dense.push_back(vec(m.norm_params()));
  dense.push_back(vec(m.norm_params()));
  if (!m.moe()) {
    mlp_shards(m, m.ffn, t, dense);
    return;
  }
  dense.push_back(mat(h, d(m.experts)));  // router, replicated
  if (m.shared_expert_ffn != 0) {
    mlp_shards(m, m.shared_expert_ffn, t, dense);
    dense.push_back(vec(h));
  }
  for (std::uint64_t e = 0; e < m.experts / ep; ++e) mlp_shards(m, m.expert_width(), t, expert);
}

double elements(const std::vector<opt::TensorShape>& v) {
  double n = 0;
  for (const auto& x : v) n += d(x.elements);
  return n;
}

memory::MemoryBreakdown states(const std::vector<opt::TensorShape>& tensors, const ParallelMemoryInput& in,
                               std::uint64_t group) {
  memory::MemoryInput mi;
  mi.tensors = tensors;
  mi.optimizer = in.optimizer;
  mi.precision = in.precision;
  mi.strategy = in.strategy.strategy;
  if (in.strategy.hsdp) {
    mi.dp = std::gcd(in.strategy.shard_group, group);  // zero3 inside the shard group
  } else {
    mi.dp = group;
    if (in.strategy.strategy == step::Strategy::sharded && in.strategy.shard_group != 0) {
      mi.shard_group = std::gcd(in.strategy.shard_group, group);
    }
  }
  if (tensors.empty()) return {};
  return memory::memory_per_device(mi);
}

std::vector<opt::TensorShape> stage_extras(const ModelSpec& m, std::uint64_t tp, std::uint64_t pp, std::uint64_t i) {
  const std::uint64_t pad = 128 * tp;
  const double vocab = d((m.vocab + pad - 1) / pad * pad), h = d(m.hidden), t = d(tp);
  const bool first = i == 0, last = i + 1 == pp;
  std::vector<opt::TensorShape> out;
  if (first || (last && m.tied_embeddings)) out.push_back(mat(vocab / t, h));  // vocab-parallel
  if (first && m.learned_positions) out.push_back(mat(d(m.max_positions), h));
  if (last) {
    out.push_back(vec(m.norm_params()));
    if (!m.tied_embeddings) out.push_back(mat(h, vocab / t));
  }
  return out;
}

std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024.0 * 1024.0)); }

}  // namespace

ShardElements layer_shard_elements(const ModelSpec& m, std::uint64_t tp, std::uint64_t ep) {
  std::vector<opt::TensorShape> dense, expert;
  layer_shards(m, d(tp), ep, dense, expert);
  return {elements(dense), elements(expert)};
}

double stage_extra_elements(const ModelSpec& m, std::uint64_t tp, std::uint64_t pp, std::uint64_t stage) {
  return elements(stage_extras(m, tp, pp, stage));
}

ParallelMemoryReport parallel_memory(const ParallelMemoryInput& in) {
  if (in.model == nullptr) throw ConfigError("memory", "no model", "a model");
  if (in.optimizer == nullptr) throw ConfigError("memory", "no optimizer", "an optimizer");
  const ModelSpec& m = *in.model;
  const MeshSizes& z = in.mesh;
  ParallelMemoryReport r;
  r.seq = in.seq != 0 ? in.seq : m.default_seq;
  if (r.seq == 0) throw ConfigError("--seq", "missing (the model has no default)", "a sequence length");
  check_mesh_for_model(m, z, in.schedule, r.seq, in.uneven_stages);
  r.micro_batches = micro_batches(z, in.global_batch, in.micro_batch);
  const std::uint64_t p = z.pp, v = in.schedule.kind == ScheduleKind::interleaved ? in.schedule.virtual_stages : 1;
  if (v > 1 && r.micro_batches % p != 0) {
    throw ConfigError("--schedule",
                      fmt::format("{} with {} micro-batches per replica and pp={}", in.schedule.str(), r.micro_batches, p),
                      "a number of micro-batches that is a multiple of pp (Megatron-LM's interleaved schedule)");
  }
  const std::uint64_t dense_group = z.dp * z.ep * z.cp, expert_group = z.dp * z.cp;
  if (in.strategy.hsdp && dense_group % in.strategy.shard_group != 0) {
    throw ConfigError("--shard-group",
                      fmt::format("k = {} does not divide the data-parallel group of {} (dp x ep x cp)",
                                  in.strategy.shard_group, dense_group),
                      "a shard group that divides the data-parallel group");
  }
  r.flash_attention = in.flash_attention.value_or(m.decoder);
  ActivationShape a;
  a.seq = r.seq;
  a.micro_batch = in.micro_batch;
  a.tp = z.tp;
  a.cp = z.cp;
  a.sequence_parallel = in.sequence_parallel;
  a.flash_attention = r.flash_attention;
  a.recompute = in.recompute;
  a.eager_kernels = in.eager_kernels;
  if (in.sequence_parallel && (r.seq / z.cp) % z.tp != 0) {
    throw ConfigError("--sequence-parallel", fmt::format("a sequence of {} per cp rank with tp={}", r.seq / z.cp, z.tp),
                      "a sequence per cp rank divisible by tp");
  }
  r.layer_activation_bytes = layer_activation_bytes(m, a);
  const double t = d(z.tp);
  const auto per_chunk = chunk_layers(m.layers, p, v);

  std::vector<opt::TensorShape> layer_dense, layer_expert;
  layer_shards(m, t, z.ep, layer_dense, layer_expert);
  const double h = d(m.hidden);

  for (std::uint64_t i = 0; i < p; ++i) {
    StageMemory st;
    st.stage = i;
    std::uint64_t layers_per_stage = 0;
    for (const auto n : per_chunk[i]) layers_per_stage += n;
    st.layers = layers_per_stage;
    std::vector<opt::TensorShape> dense, expert;
    for (std::uint64_t l = 0; l < layers_per_stage; ++l) {
      dense.insert(dense.end(), layer_dense.begin(), layer_dense.end());
      expert.insert(expert.end(), layer_expert.begin(), layer_expert.end());
    }
    const bool first = i == 0, last = i + 1 == p;
    const auto extras = stage_extras(m, z.tp, p, i);
    dense.insert(dense.end(), extras.begin(), extras.end());
    const auto sd = states(dense, in, dense_group);
    const auto se = states(expert, in, expert_group);
    st.params = sd.params + se.params;
    st.grads = sd.grads + se.grads;
    st.optimizer = sd.optimizer + se.optimizer;

    // Activations: chunk c of stage i holds model chunk c p + i (per_chunk[i][c] layers).
    std::vector<double> w(v);
    for (std::uint64_t c = 0; c < v; ++c) w[c] = d(per_chunk[i][c]) * r.layer_activation_bytes;
    if (first) w.front() += embedding_activation_bytes(m, a);
    if (last) w.back() += output_activation_bytes(m, a);
    st.activations = peak_weighted(in.schedule, p, r.micro_batches, i, w);
    st.in_flight = static_cast<std::uint64_t>(peak_weighted(in.schedule, p, r.micro_batches, i, std::vector<double>(v, 1.0)));
    st.recompute_working = recompute_working_bytes(m, a);
    if (p > 1) {
      const double msg = 2 * d(r.seq) / d(z.cp) * d(in.micro_batch) * h;
      st.buffers += 2 * (in.sequence_parallel ? msg / t : msg);
    }
    if (in.strategy.strategy == step::Strategy::zero3) {
      st.buffers += 2 * (elements(layer_dense) + elements(layer_expert)) * opt::weight_bytes(in.precision);
    }
    st.peak = st.model_states() + st.activations + st.recompute_working + st.buffers;
    r.stages.push_back(st);
  }

  if (in.hbm_bytes > 0) {
    const auto& w = r.worst();
    if (w.peak > in.hbm_bytes) {
      const std::vector<std::pair<const char*, double>> terms = {{"parameters", w.params},
                                                                 {"gradients", w.grads},
                                                                 {"optimizer state", w.optimizer},
                                                                 {"activations", w.activations + w.recompute_working},
                                                                 {"buffers", w.buffers}};
      const auto big = *std::max_element(terms.begin(), terms.end(),
                                         [](const auto& x, const auto& y) { return x.second < y.second; });
      r.does_not_fit = big.second > in.hbm_bytes
                           ? fmt::format("stage {} {} {} > HBM {}", w.stage, big.first, gib(big.second), gib(in.hbm_bytes))
                           : fmt::format("stage {} total {} > HBM {} (largest term: {} {})", w.stage, gib(w.peak),
                                         gib(in.hbm_bytes), big.first, gib(big.second));
    }
  }
  return r;
}

}  // namespace shardsim::parallel
