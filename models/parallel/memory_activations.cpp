// Activation terms and pipeline schedules of memory_stage.hpp (formulas and sources there).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "models/parallel/memory_stage.hpp"
#include "sim/enum_names.hpp"
#include "sim/error.hpp"

namespace shardsim::parallel {

namespace {
constexpr std::array<EnumName<Recompute>, 3> kRecomputes{
    {{Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}}};
}  // namespace

const char* to_string(Recompute r) { return enum_name(kRecomputes, r); }

Recompute recompute_from_string(const std::string& s, const std::string& where) {
  return enum_from_name(kRecomputes, s, "recompute", where);
}

std::string PipelineSchedule::str() const {
  switch (kind) {
    case ScheduleKind::gpipe: return "gpipe";
    case ScheduleKind::one_f_one_b: return "1f1b";
    case ScheduleKind::interleaved: return fmt::format("interleaved:{}", virtual_stages);
  }
  return "?";
}

PipelineSchedule schedule_from_string(const std::string& s, const std::string& where) {
  if (s == "gpipe") return {ScheduleKind::gpipe, 1};
  if (s == "1f1b") return {ScheduleKind::one_f_one_b, 1};
  const std::string prefix = "interleaved:";
  if (s.rfind(prefix, 0) == 0) {
    const std::string v = s.substr(prefix.size());
    std::uint64_t n = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
    if (!v.empty() && r.ec == std::errc() && r.ptr == v.data() + v.size() && n >= 2) {
      return {ScheduleKind::interleaved, n};
    }
  }
  throw ConfigError(where, fmt::format("'{}'", s), "gpipe, 1f1b or interleaved:V with V >= 2 virtual stages");
}

namespace {

std::uint64_t chunks(const PipelineSchedule& s) { return s.kind == ScheduleKind::interleaved ? s.virtual_stages : 1; }

// Megatron-LM schedules.py: warm-up forwards before the first backward on stage i.
std::uint64_t warmup(const PipelineSchedule& s, std::uint64_t p, std::uint64_t m, std::uint64_t i) {
  const std::uint64_t total = m * chunks(s);
  switch (s.kind) {
    case ScheduleKind::gpipe: return total;
    case ScheduleKind::one_f_one_b: return std::min(p - i - 1, m);
    case ScheduleKind::interleaved:
      if (m == p) return total;  // forward_backward_pipelining_with_interleaving: all warm-up
      return std::min((p - i - 1) * 2 + (s.virtual_stages - 1) * p, total);
  }
  return total;
}

}  // namespace

std::vector<PipeOp> stage_order(const PipelineSchedule& s, std::uint64_t p, std::uint64_t m, std::uint64_t i) {
  const std::uint64_t v = chunks(s), total = m * v;
  // Interleaved order: groups of p micro-batches per chunk, chunks ascending for forwards and
  // descending for backwards (get_model_chunk_id, get_microbatch_id in Megatron-LM's
  // schedules.py): virtual id k is chunk (k / p) mod v of micro-batch (k / (p v)) p + k mod p.
  auto micro = [&](std::uint64_t k) { return v == 1 ? k : (k / (p * v)) * p + k % p; };
  auto fchunk = [&](std::uint64_t k) { return static_cast<std::uint32_t>(v == 1 ? 0 : (k / p) % v); };
  auto bchunk = [&](std::uint64_t k) { return static_cast<std::uint32_t>(v == 1 ? 0 : v - 1 - (k / p) % v); };
  const std::uint64_t w = warmup(s, p, m, i);
  std::vector<PipeOp> out;
  out.reserve(2 * total);
  std::uint64_t f = 0, b = 0;
  auto fwd = [&] {
    out.push_back({true, fchunk(f), micro(f)});
    ++f;
  };
  auto bwd = [&] {
    out.push_back({false, bchunk(b), micro(b)});
    ++b;
  };
  while (f < w) fwd();
  while (f < total) {
    fwd();
    bwd();
  }
  while (b < total) bwd();
  return out;
}

double peak_weighted(const PipelineSchedule& s, std::uint64_t p, std::uint64_t m, std::uint64_t i,
                     const std::vector<double>& weights) {
  double live = 0, peak = 0;
  for (const auto& op : stage_order(s, p, m, i)) {
    if (op.forward) {
      live += weights.at(op.chunk);
      peak = std::max(peak, live);
    } else {
      live -= weights.at(op.chunk);
    }
  }
  return peak;
}

std::vector<std::uint64_t> in_flight(const PipelineSchedule& s, std::uint64_t p, std::uint64_t m) {
  std::vector<std::uint64_t> v;
  const std::vector<double> ones(chunks(s), 1.0);
  for (std::uint64_t i = 0; i < p; ++i) v.push_back(static_cast<std::uint64_t>(peak_weighted(s, p, m, i, ones)));
  return v;
}

namespace {

double d(std::uint64_t v) { return static_cast<double>(v); }

struct Terms {
  double replicated = 0;  // R: kept whole on every tp rank unless sequence parallel
  double split = 0;       // T: split over tp
  double core = 0;        // C: attention core, split over tp
};

Terms terms(const ModelSpec& m, const ActivationShape& a) {
  const double sq = d(a.seq) / d(a.cp), sk = d(a.seq), b = d(a.micro_batch), h = d(m.hidden);
  const double heads = d(m.heads), dh = d(m.dhead()), kv = d(m.kv_heads);
  const double sbh = sq * b * h;
  const double mlp_factor = m.gated_ffn ? 6.0 : 4.0;
  Terms t;
  t.replicated = 8 * sbh + (m.dropout ? 2 * sbh : 0.0);
  t.split = 2 * sq * b * heads * dh + 4 * sq * b * kv * dh + 2 * sq * b * heads * dh;
  if (m.moe()) {
    t.replicated += 2 * sbh * d(m.top_k) + 4 * sq * b * d(m.experts);  // dispatched inputs, router logits
    t.split += d(m.top_k) * mlp_factor * sq * b * d(m.expert_width());
    if (m.shared_expert_ffn != 0) t.split += mlp_factor * sq * b * d(m.shared_expert_ffn);
  } else {
    t.split += mlp_factor * sq * b * d(m.ffn);
  }
  t.core = a.flash_attention ? 4 * heads * sq * b : (m.dropout ? 5.0 : 2.0) * heads * sq * sk * b;
  if (a.eager_kernels) {
    // The Llama reference code's eager autograd (transformer_cost.hpp): each RMSNorm keeps its
    // fp32 copy of x (pow and the scaling share it) and the bf16 normalised output (the weight
    // multiply's input) where a fused norm keeps the bf16 input: 4 more bytes per element, two
    // norms; attention keeps the repeat_kv copies of K and V (every query head, not kv heads).
    if (m.rmsnorm) t.replicated += 8 * sbh;
    if (kv < heads) t.split += 4 * sq * b * (heads - kv) * dh;
  }
  return t;
}

double combine(const Terms& t, const ActivationShape& a, bool keep_core) {
  const double tp = d(a.tp);
  const double core = keep_core ? t.core : 0.0;
  return a.sequence_parallel ? (t.replicated + t.split + core) / tp : t.replicated + (t.split + core) / tp;
}

}  // namespace

double layer_activation_bytes(const ModelSpec& m, const ActivationShape& a) {
  switch (a.recompute) {
    case Recompute::none: return combine(terms(m, a), a, true);
    case Recompute::selective: return combine(terms(m, a), a, false);
    case Recompute::full: {
      const double in = 2 * d(a.seq) / d(a.cp) * d(a.micro_batch) * d(m.hidden);
      return a.sequence_parallel ? in / d(a.tp) : in;
    }
  }
  return 0;
}

double recompute_working_bytes(const ModelSpec& m, const ActivationShape& a) {
  switch (a.recompute) {
    case Recompute::none: return 0;
    case Recompute::selective: return terms(m, a).core / d(a.tp);
    case Recompute::full: return combine(terms(m, a), a, true);
  }
  return 0;
}

double embedding_activation_bytes(const ModelSpec& m, const ActivationShape& a) {
  if (!m.dropout) return 0;
  const double sbh = d(a.seq) / d(a.cp) * d(a.micro_batch) * d(m.hidden);
  return a.sequence_parallel ? sbh / d(a.tp) : sbh;
}

double output_activation_bytes(const ModelSpec& m, const ActivationShape& a) {
  const double sb = d(a.seq) / d(a.cp) * d(a.micro_batch);
  const double norm_and_proj = 4 * sb * d(m.hidden);
  const std::uint64_t pad = 128 * a.tp;  // Megatron --make-vocab-size-divisible-by 128, times tp
  const double vocab = d((m.vocab + pad - 1) / pad * pad);
  return (a.sequence_parallel ? norm_and_proj / d(a.tp) : norm_and_proj) + 4 * sb * vocab / d(a.tp);
}

}  // namespace shardsim::parallel
