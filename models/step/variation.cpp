#include "models/step/variation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "models/parallel/mesh.hpp"
#include "models/step/graph_builders.hpp"
#include "models/step/rank_program.hpp"
#include "sim/error.hpp"
#include "sim/text/strings.hpp"

namespace shardsim::step {

std::uint64_t splitmix64(std::uint64_t& state) {
  // Steele, Lea and Flood 2014 (the constants of Vigna's reference splitmix64.c).
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Rng::Rng(std::uint64_t seed) {
  std::uint64_t st = seed;
  for (auto& s : s_) s = splitmix64(st);
}

std::uint64_t Rng::next() {
  // xoshiro256** 1.0 (Blackman and Vigna; reference xoshiro256starstar.c).
  auto rotl = [](std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  // Marsaglia polar method: (u, v) uniform in the unit disc, s = u^2 + v^2;
  // u sqrt(-2 ln s / s) and v sqrt(-2 ln s / s) are independent standard normals.
  double u = 0, v = 0, s = 0;
  do {
    u = 2 * uniform() - 1;
    v = 2 * uniform() - 1;
    s = u * u + v * v;
  } while (s >= 1 || s == 0);
  const double m = std::sqrt(-2 * std::log(s) / s);
  spare_ = v * m;
  has_spare_ = true;
  return u * m;
}

Rng stream_rng(std::uint64_t seed, std::uint64_t step, std::uint64_t rank) {
  // Three splitmix rounds fold (seed, step, rank) into one well-mixed seed.
  std::uint64_t st = seed;
  std::uint64_t h = splitmix64(st);
  st = h ^ step;
  h = splitmix64(st);
  st = h ^ rank;
  return Rng(splitmix64(st));
}

double JitterDist::sample(Rng& rng) const {
  switch (kind) {
    case Kind::none: return 1.0;
    case Kind::lognormal: return std::exp(sigma * rng.normal() - 0.5 * sigma * sigma);
    case Kind::normal: {
      double f = 0;
      do f = 1 + sigma * rng.normal();
      while (f <= 0.05);
      return f;
    }
    case Kind::empirical: {
      const double u = rng.uniform();
      const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
      return values[std::min<std::size_t>(static_cast<std::size_t>(it - cdf.begin()), values.size() - 1)];
    }
  }
  return 1.0;
}

namespace {

using text::to_double;
using text::trim;  // also drops '\n', which getline has already taken off

JitterDist load_histogram(const std::string& path, const std::string& where) {
  std::ifstream in(path);
  if (!in) {
    throw ConfigError(where, fmt::format("'{}' is neither lognormal:SIGMA, normal:SIGMA nor a readable file", path),
                      "lognormal:SIGMA, normal:SIGMA or a histogram file of FACTOR WEIGHT lines");
  }
  JitterDist d;
  d.kind = JitterDist::Kind::empirical;
  d.spec = path;
  std::string line;
  double total = 0;
  std::vector<double> weights;
  for (int no = 1; std::getline(in, line); ++no) {
    std::string_view l = line;
    if (const auto h = l.find('#'); h != std::string_view::npos) l = l.substr(0, h);
    l = trim(l);
    if (l.empty()) continue;
    const auto sep = l.find_first_of(" \t,");
    const std::string at = fmt::format("{}: line {}", path, no);
    if (sep == std::string_view::npos) throw ConfigError(at, fmt::format("'{}'", l), "FACTOR WEIGHT (two numbers)");
    const auto f = to_double(trim(l.substr(0, sep)));
    std::string_view rest = trim(l.substr(sep + 1));
    if (!rest.empty() && rest.front() == ',') rest = trim(rest.substr(1));
    const auto w = to_double(rest);
    if (!f || !(*f > 0)) throw ConfigError(at, fmt::format("factor '{}'", trim(l.substr(0, sep))), "a positive finite factor");
    if (!w || !(*w >= 0)) throw ConfigError(at, fmt::format("weight '{}'", rest), "a finite weight >= 0");
    d.values.push_back(*f);
    weights.push_back(*w);
    total += *w;
  }
  if (d.values.empty() || !(total > 0)) {
    throw ConfigError(path, "no bin with a positive weight", "FACTOR WEIGHT lines with a positive total weight");
  }
  double acc = 0;
  for (const double w : weights) {
    acc += w;
    d.cdf.push_back(acc / total);
  }
  d.cdf.back() = 1.0;
  return d;
}

}  // namespace

JitterDist parse_jitter(const std::string& spec, const std::string& where) {
  JitterDist d;
  if (spec.empty() || spec == "none") return d;
  for (const auto& [prefix, kind] : {std::pair{std::string("lognormal:"), JitterDist::Kind::lognormal},
                                     std::pair{std::string("normal:"), JitterDist::Kind::normal}}) {
    if (spec.rfind(prefix, 0) != 0) continue;
    const auto sigma = to_double(std::string_view(spec).substr(prefix.size()));
    if (!sigma || *sigma < 0 || *sigma > 10) {
      throw ConfigError(where, fmt::format("sigma '{}' in '{}'", spec.substr(prefix.size()), spec),
                        "a number in [0, 10] (e.g. lognormal:0.05)");
    }
    d.kind = kind;
    d.sigma = *sigma;
    d.spec = spec;
    return d;
  }
  return load_histogram(spec, where);
}

std::vector<SlowRank> parse_slow_ranks(const std::string& spec, const std::string& where) {
  std::vector<SlowRank> out;
  if (spec.empty()) return out;
  std::string_view rest = spec;
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const auto colon = item.find(':');
    if (colon == std::string_view::npos) {
      throw ConfigError(where, fmt::format("'{}'", item), "RANK:SPEED (e.g. 3:0.5, rank 3 at half speed)");
    }
    int rank = -1;
    const auto rs = item.substr(0, colon);
    const auto [p, ec] = std::from_chars(rs.data(), rs.data() + rs.size(), rank);
    if (ec != std::errc() || p != rs.data() + rs.size() || rank < 0) {
      throw ConfigError(where, fmt::format("rank '{}' in '{}'", rs, item), "a rank >= 0");
    }
    const auto speed = to_double(item.substr(colon + 1));
    if (!speed || !(*speed > 0)) {
      throw ConfigError(where, fmt::format("speed '{}' in '{}'", item.substr(colon + 1), item),
                        "a positive speed fraction (0.5: half speed)");
    }
    for (const auto& s : out) {
      if (s.rank == rank) throw ConfigError(where, fmt::format("rank {} given twice", rank), "each rank once");
    }
    out.push_back({rank, *speed});
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return out;
}

void ComputeVariation::check(std::uint64_t ranks) const {
  for (const auto& s : slow) {
    if (static_cast<std::uint64_t>(s.rank) >= ranks) {
      throw ConfigError("--slow-ranks", fmt::format("rank {} in a step of {} ranks", s.rank, ranks),
                        fmt::format("ranks 0..{}", ranks - 1));
    }
  }
}

void ComputeVariation::factors(std::uint64_t step, std::uint64_t ranks, std::vector<double>& out) const {
  out.assign(ranks, 1.0);
  for (const auto& s : slow) {
    if (static_cast<std::uint64_t>(s.rank) < ranks) out[static_cast<std::size_t>(s.rank)] = 1.0 / s.speed;
  }
  if (jitter.kind == JitterDist::Kind::none) return;
  for (std::uint64_t r = 0; r < ranks; ++r) {
    Rng rng = stream_rng(seed, step, r);
    out[r] *= jitter.sample(rng);
  }
}

std::vector<const compute::Device*> parse_rank_devices(const std::string& spec, std::uint64_t ranks,
                                                       const compute::Device& base, const std::string& where) {
  std::vector<const compute::Device*> out(ranks, &base);
  apply_rank_devices(spec, out, where);
  return out;
}

std::vector<const compute::Device*> topology_rank_devices(const topo::Topology& t, std::uint64_t ranks,
                                                          const compute::Device& base) {
  std::vector<const compute::Device*> out(ranks, &base);
  for (std::size_t r = 0; r < t.rank_devices().size(); ++r) {
    const auto& k = t.rank_devices()[r];
    if (k.model.empty()) continue;
    const compute::Device& d = compute::device_for_model(k.model, k.where);
    if (r < out.size()) out[r] = &d;
  }
  return out;
}

void apply_rank_devices(const std::string& spec, std::vector<const compute::Device*>& out, const std::string& where) {
  const std::uint64_t ranks = out.size();
  std::string_view rest = spec;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const auto colon = item.find(':');
    if (colon == std::string_view::npos) {
      throw ConfigError(where, fmt::format("'{}'", item), "RANKS:DEVICE (e.g. 0-7:h100,8-15:a100-80gb)");
    }
    const auto rs = item.substr(0, colon);
    const auto dash = rs.find('-');
    std::uint64_t a = 0, b = 0;
    auto num = [&](std::string_view t, std::uint64_t& v) {
      const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      return ec == std::errc() && p == t.data() + t.size() && !t.empty();
    };
    const bool ok = dash == std::string_view::npos ? num(rs, a) && num(rs, b)
                                                   : num(rs.substr(0, dash), a) && num(rs.substr(dash + 1), b);
    if (!ok || a > b || b >= ranks) {
      throw ConfigError(where, fmt::format("ranks '{}' in '{}'", rs, item), fmt::format("a or a-b within 0..{}", ranks - 1));
    }
    const auto& d = compute::find_device(std::string(item.substr(colon + 1)), where);
    for (std::uint64_t r = a; r <= b; ++r) out[r] = &d;
  }
}

std::vector<double> device_factors(const Workload& w, bool mixed_precision, const std::vector<const compute::Device*>& devs,
                                   const compute::Device& base) {
  const auto math = mixed_precision ? compute::MathType::bf16 : compute::MathType::fp32;
  auto total = [&](const compute::Device& d) {
    double t = 0;
    for (const auto& o : w.ops) t += d.op_time_s(o.flops, o.bytes, math);
    return t;
  };
  const double t0 = total(base);
  std::vector<double> out(devs.size(), 1.0);
  std::vector<std::pair<const compute::Device*, double>> seen;  // a few distinct devices
  for (std::size_t r = 0; r < devs.size(); ++r) {
    if (devs[r] == &base || !(t0 > 0)) continue;
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& x) { return x.first == devs[r]; });
    if (it == seen.end()) it = seen.insert(seen.end(), {devs[r], total(*devs[r]) / t0});
    out[r] = it->second;
  }
  return out;
}

std::vector<std::uint64_t> balanced_batches(const std::vector<double>& factors, std::uint64_t batch) {
  const std::size_t n = factors.size();
  double speed = 0;
  for (const double f : factors) speed += 1 / f;
  const std::uint64_t total = batch * n;
  std::vector<std::uint64_t> out(n);
  std::vector<std::pair<double, std::size_t>> rem(n);
  std::uint64_t given = 0;
  for (std::size_t r = 0; r < n; ++r) {
    const double share = static_cast<double>(total) * (1 / factors[r]) / speed;
    out[r] = static_cast<std::uint64_t>(std::floor(share));
    given += out[r];
    rem[r] = {share - std::floor(share), r};
  }
  std::stable_sort(rem.begin(), rem.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  for (std::size_t k = 0; given < total && k < n; ++k, ++given) ++out[rem[k].second];
  return out;
}

double quantile_sorted(const std::vector<double>& v, double q) {
  if (v.empty()) throw std::invalid_argument("quantile of no values");
  // Hyndman and Fan 1996, definition 7: h = (n - 1) q, interpolate between floor and ceil.
  const double h = static_cast<double>(v.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// Why the one pass is exact (variation.hpp states the contract): nodes in id order are a
// topological order, so each start is final when it is computed. Under contention a compute
// node's end is contended_end over the busy union of the collectives of its rank with smaller
// ids. When no collective of a larger id overlaps the run of a compute node of its rank with a
// smaller id (checked below), every compute node saw every collective that overlaps it, so the
// times satisfy the executor's equations; these have one solution (the state at each instant
// follows from earlier instants: the system is causal, and every rate is positive), which is
// the executor's. Strategy graphs always pass: every collective depends on the last compute
// node issued before it (or precedes every compute node), so the compute of smaller ids has
// ended when it starts.
std::unique_ptr<StaticTimer> StaticTimer::make(const TaskGraph& g, const CommContention& contention) {
  auto st = std::unique_ptr<StaticTimer>(new StaticTimer());
  const std::size_t nn = g.size();
  st->contention_ = contention;
  for (const int r : g.ranks()) st->rank_contention_.push_back(contention.of_rank(r));
  st->q_begin_.assign(nn + 1, 0);
  st->dur_.resize(nn);
  st->base_.resize(nn);
  st->share_.resize(nn);
  st->rank_.assign(nn, -1);
  st->coll_.assign(nn, 0);
  st->deps_begin_.assign(nn + 1, 0);
  std::vector<NodeId> last(g.ranks().size() * g.streams(), static_cast<NodeId>(nn));
  for (NodeId i = 0; i < nn; ++i) {
    const auto& n = g.node(i);
    if (n.kind == NodeKind::send || n.kind == NodeKind::recv) return nullptr;
    if (n.kind == NodeKind::collective && n.takes_units && n.units != 0) return nullptr;  // own units: the executor's rule
    for (const NodeId d : g.deps(i)) {
      if (d >= i) return nullptr;
      st->deps_.push_back(d);
    }
    st->deps_begin_[i + 1] = static_cast<std::uint32_t>(st->deps_.size());
    auto add = [&](int device) {
      const int ri = g.rank_index(device);
      if (ri < 0) return;
      const std::size_t q = static_cast<std::size_t>(ri) * g.streams() + n.stream;
      st->q_.push_back(static_cast<std::uint32_t>(q));
      last[q] = i;
    };
    if (n.kind == NodeKind::collective) {
      for (const int r : g.simulated_members(n.group)) add(r);
      st->coll_[i] = n.takes_units ? 1 : 0;
    } else {
      add(n.rank);
      if (n.kind == NodeKind::compute) st->rank_[i] = g.rank_index(n.rank);
    }
    st->q_begin_[i + 1] = static_cast<std::uint32_t>(st->q_.size());
    st->base_[i] = n.duration_s;
    st->share_[i] = n.gemm_share;
    st->dur_[i] = Time::from_seconds(n.duration_s);
  }
  st->queues_ = last.size();
  st->streams_ = g.streams();
  st->busy_.resize(g.ranks().size());
  st->runs_.resize(g.ranks().size());
  return st;
}

bool StaticTimer::overlaps_earlier_compute(const std::vector<ComputeRun>& runs, Time s, Time e) {
  // Scan back while the runs so far may still end after s.
  for (auto it = runs.rbegin(); it != runs.rend() && it->max_end > s; ++it) {
    if (std::max(it->start, s) < std::min(it->end, e)) return true;
  }
  return false;
}

std::optional<Time> StaticTimer::makespan(const std::vector<double>& scale) {
  const std::size_t nn = dur_.size();
  const bool contended = contention_.active();
  end_.resize(nn);
  last_.assign(queues_, Time::zero());
  if (contended) {
    for (auto& b : busy_) b.clear();
    for (auto& r : runs_) r.clear();
  }
  Time span = Time::zero();
  for (std::size_t i = 0; i < nn; ++i) {
    Time s = Time::zero();
    for (std::uint32_t k = deps_begin_[i]; k < deps_begin_[i + 1]; ++k) s = std::max(s, end_[deps_[k]]);
    for (std::uint32_t k = q_begin_[i]; k < q_begin_[i + 1]; ++k) s = std::max(s, last_[q_[k]]);
    Time d = dur_[i];
    Time e;
    if (rank_[i] >= 0) {
      const auto ri = static_cast<std::size_t>(rank_[i]);
      if (!scale.empty()) {
        const double f = scale[ri];
        d = Time::from_seconds(f == 1.0 ? base_[i] : base_[i] * f);
      }
      if (contended) {
        e = contended_end(s, d, busy_[ri], rank_contention_[ri], share_[i]);
        auto& runs = runs_[ri];
        runs.push_back({s, e, runs.empty() ? e : std::max(e, runs.back().max_end)});
      } else {
        e = s + d;
      }
    } else {
      e = s + d;
      if (contended && coll_[i] && s < e) {
        for (std::uint32_t k = q_begin_[i]; k < q_begin_[i + 1]; ++k) {
          const std::size_t ri = q_[k] / streams_;
          if (overlaps_earlier_compute(runs_[ri], s, e)) return std::nullopt;
          add_busy(busy_[ri], s, e);
        }
      }
    }
    end_[i] = e;
    for (std::uint32_t k = q_begin_[i]; k < q_begin_[i + 1]; ++k) last_[q_[k]] = e;
    span = std::max(span, e);
  }
  return span;
}

StepSamples simulate_step_samples(const Workload& w, const compute::Device& dev, const StepConfig& c, CommModel& comm,
                                  const ComputeVariation& v, std::uint64_t samples, const std::vector<double>& base_scale) {
  if (samples == 0) throw ConfigError("--samples", "0", "at least 1 step");
  validate(c);
  v.check(c.dp);
  const std::uint64_t R = c.dp;
  std::vector<double> f;
  auto factors_of = [&](std::uint64_t step) {
    v.factors(step, R, f);
    for (std::size_t k = 0; k < f.size() && k < base_scale.size(); ++k) f[k] *= base_scale[k];
  };
  // Step 0 in full (memory, MFU, padding: what `step` reports).
  StepSamples out;
  StepConfig c0 = c;
  factors_of(0);
  c0.compute_scale = f;
  out.first = simulate_step(w, dev, c0, comm);

  // The program once, every rank simulated; re-executed per step with that step's factors.
  StepResult scratch;
  StepConfig cs = c;
  cs.record_timeline = false;
  cs.compute_scale.clear();
  const RankProgram program = detail::graph_builder(c.strategy).build(w, dev, cs, comm, scratch);
  const ProgramInstance inst = instantiate_program(program, cs, comm, /*vary=*/true);
  // Timers only (analytical, or collectives that cannot overlap): one pass per step over the
  // graph; a concurrent runner (flow) needs the executor and a fresh network every step.
  // Compute contention (issue 15) as simulate_step applies it; the one pass falls back to the
  // executor for a sample it cannot time exactly.
  const bool runner = uses_runner(inst, comm);
  const CommContention contention = step_contention(dev, c);
  std::unique_ptr<StaticTimer> fast = runner ? nullptr : StaticTimer::make(inst.graph, contention);
  std::unique_ptr<Executor> ex;
  out.step_time_s.reserve(samples);
  std::vector<double> scale;
  for (std::uint64_t s = 0; s < samples; ++s) {
    factors_of(s);
    scale.clear();
    for (const int rank : inst.graph.ranks()) scale.push_back(f[static_cast<std::size_t>(rank)]);
    if (fast) {
      if (const auto t = fast->makespan(scale)) {
        out.step_time_s.push_back(t->to_seconds());
        continue;
      }
    }
    ++out.executor_samples;
    if (!runner && !ex) ex = std::make_unique<Executor>(inst.graph);
    run_instance(inst, cs, comm, scale, scratch, ex.get(), contention);
    out.step_time_s.push_back(scratch.step_time_s);
  }
  summarise_samples(out);
  return out;
}

void summarise_samples(StepSamples& out) {
  std::vector<double> sorted = out.step_time_s;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (const double t : out.step_time_s) sum += t;  // in step order: deterministic
  out.mean_s = sum / static_cast<double>(out.step_time_s.size());
  out.p50_s = quantile_sorted(sorted, 0.5);
  out.p90_s = quantile_sorted(sorted, 0.9);
  out.p99_s = quantile_sorted(sorted, 0.99);
  out.max_s = sorted.back();
  out.min_s = sorted.front();
}

StepSamples simulate_parallel_step_samples(const ParallelStepConfig& c, const compute::Device& dev, CommModel& comm,
                                           const ComputeVariation& v, std::uint64_t samples, ParallelStepResult& first) {
  if (samples == 0) throw ConfigError("--samples", "0", "at least 1 step");
  const parallel::Mesh mesh(c.mesh, c.order, "--mesh");
  const std::uint64_t R = mesh.devices();
  v.check(R);
  StepSamples out;
  out.step_time_s.reserve(samples);
  ParallelStepConfig cs = c;
  for (std::uint64_t s = 0; s < samples; ++s) {
    v.factors(s, R, cs.compute_scale);
    for (std::size_t k = 0; k < cs.compute_scale.size() && k < c.compute_scale.size(); ++k) {
      cs.compute_scale[k] *= c.compute_scale[k];
    }
    cs.record_timeline = s == 0 && c.record_timeline;
    if (s == 0) {
      first = simulate_parallel_step(cs, dev, comm);
      out.step_time_s.push_back(first.step.step_time_s);
    } else {
      out.step_time_s.push_back(simulate_parallel_step(cs, dev, comm).step.step_time_s);
    }
    ++out.executor_samples;
  }
  out.first = first.step;
  summarise_samples(out);
  return out;
}

}  // namespace shardsim::step
