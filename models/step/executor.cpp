#include "models/step/executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <map>
#include <tuple>

#include "models/compute/device.hpp"
#include "sim/error.hpp"

namespace shardsim::step {

CommContention CommContention::of_device(const compute::Device& d) {
  return {d.compute_units, d.comm_units, {}, d.persistent_gemm, d.p2p_comm_units};
}

bool CommContention::active() const {
  auto on = [](std::uint32_t u, std::uint32_t c) { return c > 0 && c < u; };
  if (on(units, comm_units) || on(units, p2p_units)) return true;
  return std::any_of(per_rank.begin(), per_rank.end(), [&](const auto& x) { return on(x[0], x[1]) || on(x[0], x[3]); });
}

CommContention CommContention::of_rank(int rank) const {
  CommContention c;
  const auto k = static_cast<std::size_t>(rank);
  const bool own = rank >= 0 && k < per_rank.size();
  c.units = own ? per_rank[k][0] : units;
  c.comm_units = own ? per_rank[k][1] : comm_units;
  c.persistent = own ? per_rank[k][2] != 0 : persistent;
  c.p2p_units = own ? per_rank[k][3] : p2p_units;
  if (!c.active()) c = CommContention{1, 0, {}};
  return c;
}

std::int64_t CommContention::rate_units(std::uint32_t busy, double gemm_share) const {
  const auto u = static_cast<std::int64_t>(units);
  if (busy == 0 || units <= 1) return kScale * u;
  const std::uint32_t k = std::min(busy, units - 1);
  const std::int64_t plain = kScale * (u - static_cast<std::int64_t>(k));
  if (!persistent || !(gemm_share > 0)) return plain;
  const double spread = static_cast<double>(units) / static_cast<double>(units - k);
  const double slow = gemm_share * std::ceil(spread) + (1 - std::min(gemm_share, 1.0)) * spread;
  return std::max<std::int64_t>(1, std::llround(static_cast<double>(kScale * u) / slow));
}

ComputeProgress ComputeProgress::start(Time at, Time duration, const CommContention& c, bool contended,
                                       double gemm_share) {
  return start_units(at, duration, c, contended ? c.comm_units : 0, gemm_share);
}

ComputeProgress ComputeProgress::start_units(Time at, Time duration, const CommContention& c, std::uint32_t busy,
                                             double gemm_share) {
  ComputeProgress p;
  p.since = at;
  p.rate = c.rate_units(busy, gemm_share);
  if (__builtin_mul_overflow(duration.ps(), c.rate(false), &p.work)) {
    throw TimeRangeError(duration.to_seconds() * static_cast<double>(c.rate(false)));
  }
  return p;
}

void ComputeProgress::change(Time now, std::int64_t new_rate) {
  // Integer work: (a - b) r + (b - c) r = (a - c) r, so where the changes are banked does not
  // move the end (see executor.hpp).
  const std::int64_t done = (now - since).ps() * rate;
  work = done >= work ? 0 : work - done;
  since = now;
  rate = new_rate;
}

Time ComputeProgress::end() const { return since + Time::from_ps((work + rate - 1) / rate); }

Time contended_end(Time start, Time duration, std::span<const BusyInterval> busy, const CommContention& c,
                   double gemm_share) {
  if (!c.active() || busy.empty() || busy.back().end <= start) return start + duration;
  // The first interval that ends after `start`; intervals are sorted by end as well.
  std::size_t i = static_cast<std::size_t>(
      std::upper_bound(busy.begin(), busy.end(), start, [](Time t, const BusyInterval& b) { return t < b.end; }) -
      busy.begin());
  if (i == busy.size()) return start + duration;
  bool contended = busy[i].begin <= start;
  ComputeProgress p = ComputeProgress::start(start, duration, c, contended, gemm_share);
  while (true) {
    const Time e = p.end();
    if (!contended && i == busy.size()) return e;
    const Time next = contended ? busy[i].end : busy[i].begin;
    if (e <= next) return e;
    p.change(next, c.rate(!contended, gemm_share));
    if (contended) ++i;
    contended = !contended;
  }
}

void add_busy(std::vector<BusyInterval>& busy, Time begin, Time end) {
  if (!(begin < end)) return;
  if (busy.empty() || busy.back().end < begin) {
    busy.push_back({begin, end});
    return;
  }
  // The first interval that ends at or after `begin` (touching counts: merged).
  const auto first = std::lower_bound(busy.begin(), busy.end(), begin,
                                      [](const BusyInterval& b, Time t) { return b.end < t; });
  auto last = first;
  BusyInterval merged{begin, end};
  while (last != busy.end() && last->begin <= end) {
    merged.begin = std::min(merged.begin, last->begin);
    merged.end = std::max(merged.end, last->end);
    ++last;
  }
  if (first == last) {
    busy.insert(first, merged);
    return;
  }
  *first = merged;
  busy.erase(first + 1, last);
}

Executor::Executor(const TaskGraph& g, CollectiveRunner* runner) : g_(g), runner_(runner) {
  const std::size_t nn = g.size();
  const std::size_t nq = g.ranks().size() * g.streams();
  // Streams of each node, in node order (so each queue lists its nodes in insertion order).
  nq_begin_.assign(nn + 1, 0);
  std::vector<std::uint32_t> count(nq, 0);
  auto queue_of = [&](int device, std::uint32_t stream) -> std::int64_t {
    const int ri = g.rank_index(device);
    return ri < 0 ? -1 : static_cast<std::int64_t>(static_cast<std::size_t>(ri) * g.streams() + stream);
  };
  for (NodeId i = 0; i < nn; ++i) {
    const auto& n = g.node(i);
    auto add = [&](int device) {
      const auto q = queue_of(device, n.stream);
      if (q < 0) return;
      nq_.push_back(static_cast<std::uint32_t>(q));
      ++count[static_cast<std::size_t>(q)];
    };
    if (n.kind == NodeKind::collective) {
      for (const int r : g.simulated_members(n.group)) add(r);
    } else {
      add(n.rank);
    }
    nq_begin_[i + 1] = static_cast<std::uint32_t>(nq_.size());
  }
  q_begin_.assign(nq, 0);
  q_end_.assign(nq, 0);
  std::uint32_t at = 0;
  for (std::size_t q = 0; q < nq; ++q) {
    q_begin_[q] = q_end_[q] = at;
    at += count[q];
  }
  q_nodes_.assign(at, 0);
  for (NodeId i = 0; i < nn; ++i) {
    for (std::uint32_t k = nq_begin_[i]; k < nq_begin_[i + 1]; ++k) q_nodes_[q_end_[nq_[k]]++] = i;
  }
  // Successors by dependency.
  succ_begin_.assign(nn + 1, 0);
  for (NodeId i = 0; i < nn; ++i) {
    for (const NodeId d : g.deps(i)) ++succ_begin_[d + 1];
  }
  for (std::size_t i = 0; i < nn; ++i) succ_begin_[i + 1] += succ_begin_[i];
  succ_.assign(succ_begin_[nn], 0);
  std::vector<std::uint32_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
  for (NodeId i = 0; i < nn; ++i) {
    for (const NodeId d : g.deps(i)) succ_[fill[d]++] = i;
  }
  // Send/recv partners: the n-th send of (src, dst, tag) with the n-th recv.
  partner_.assign(nn, static_cast<NodeId>(nn));
  std::map<std::tuple<int, int, std::uint64_t>, std::pair<std::vector<NodeId>, std::vector<NodeId>>> p2p;
  for (NodeId i = 0; i < nn; ++i) {
    const auto& n = g.node(i);
    if (n.kind == NodeKind::send) p2p[{n.rank, n.peer, n.tag}].first.push_back(i);
    if (n.kind == NodeKind::recv) p2p[{n.peer, n.rank, n.tag}].second.push_back(i);
  }
  for (const auto& [key, sr] : p2p) {
    for (std::size_t k = 0; k < std::min(sr.first.size(), sr.second.size()); ++k) {
      partner_[sr.first[k]] = sr.second[k];
      partner_[sr.second[k]] = sr.first[k];
    }
  }
  dur_.resize(nn);
  for (NodeId i = 0; i < nn; ++i) dur_[i] = Time::from_seconds(g.node(i).duration_s);
}

void Executor::set_compute_scale(std::span<const double> per_rank) {
  if (!per_rank.empty() && per_rank.size() != g_.ranks().size()) {
    throw std::invalid_argument(fmt::format("compute scale of {} ranks for a graph of {}", per_rank.size(), g_.ranks().size()));
  }
  for (const double f : per_rank) {
    if (!(f > 0) || !std::isfinite(f)) throw std::invalid_argument(fmt::format("compute scale {}", f));
  }
  for (NodeId i = 0; i < g_.size(); ++i) {
    const auto& n = g_.node(i);
    if (n.kind != NodeKind::compute) continue;
    const double f = per_rank.empty() ? 1.0 : per_rank[static_cast<std::size_t>(g_.rank_index(n.rank))];
    dur_[i] = Time::from_seconds(f == 1.0 ? n.duration_s : n.duration_s * f);
  }
}

void Executor::set_comm_contention(const CommContention& c) {
  contention_ = c;
  contended_ = c.active();
  rank_contention_.clear();
  for (const int r : g_.ranks()) rank_contention_.push_back(c.of_rank(r));
}

ExecResult Executor::run() {
  sim::Simulator sim;
  return run(sim);
}

ExecResult Executor::run(sim::Simulator& sim) {
  const std::size_t nn = g_.size();
  ExecResult out;
  out.start.assign(nn, Time::zero());
  out.end.assign(nn, Time::zero());
  sim_ = &sim;
  out_ = &out;
  finished_ = 0;
  const std::uint64_t events0 = sim.event_count();
  waiting_.assign(nn, 0);
  ready_.assign(nn, 0);
  done_.assign(nn, 0);
  for (NodeId i = 0; i < nn; ++i) {
    waiting_[i] = static_cast<std::uint32_t>(g_.deps(i).size()) + (nq_begin_[i + 1] - nq_begin_[i]);
  }
  q_head_ = q_begin_;
  if (contended_) {
    comm_in_flight_.assign(g_.ranks().size(), 0);
    p2p_in_flight_.assign(g_.ranks().size(), 0);
    ub_units_.assign(g_.ranks().size(), 0);
    running_.resize(g_.ranks().size());
    for (auto& r : running_) r.clear();
  }
  for (std::size_t q = 0; q < q_begin_.size(); ++q) {
    if (q_begin_[q] < q_end_[q]) --waiting_[q_nodes_[q_begin_[q]]];
  }
  for (NodeId i = 0; i < nn; ++i) try_start(i);
  sim.run();
  if (finished_ != nn) {
    NodeId stuck = 0;
    while (done_[stuck]) ++stuck;
    throw ConfigError(g_.describe(stuck), "never started (its dependencies, streams or send/recv partner deadlock)",
                      "a graph in which every op can run");
  }
  out.makespan = Time::zero();
  for (const Time e : out.end) out.makespan = std::max(out.makespan, e);
  out.events = sim.event_count() - events0;
  sim_ = nullptr;
  out_ = nullptr;
  return out;
}

void Executor::try_start(NodeId n) {
  if (waiting_[n] != 0) return;
  const auto kind = g_.node(n).kind;
  if (kind == NodeKind::send || kind == NodeKind::recv) {
    ready_[n] = 1;
    const NodeId p = partner_[n];
    if (p >= g_.size() || !ready_[p]) return;
    const NodeId send = kind == NodeKind::send ? n : p;
    launch(send);
    return;
  }
  launch(n);
}

void Executor::emit(const Signal<NodeId, int, std::uint32_t, Time>& s, NodeId n, Time t) const {
  if (s.empty()) return;
  const auto& node = g_.node(n);
  if (node.kind != NodeKind::collective) {
    s(n, node.rank, node.stream, t);
    return;
  }
  for (const int r : g_.simulated_members(node.group)) s(n, r, node.stream, t);
}

void Executor::launch(NodeId n) {
  const Time now = sim_->now();
  const auto& node = g_.node(n);
  out_->start[n] = now;
  emit(node_started, n, now);
  if (node.kind == NodeKind::send) {
    const NodeId r = partner_[n];
    out_->start[r] = now;
    emit(node_started, r, now);
    if (contended_) p2p_changed(node, true);
    if (runner_ != nullptr) {
      std::function<void(Time)> done = [this, n, r](Time) {
        finish(n);
        finish(r);
      };
      if (runner_->start_p2p(*sim_, g_, n, done)) return;
    }
    sim_->schedule_at(now + dur_[n], [this, n, r] {
      finish(n);
      finish(r);
    });
    return;
  }
  if (contended_) {
    if (node.kind == NodeKind::collective && node.takes_units) {
      for (const int m : g_.simulated_members(node.group)) {
        const int ri = g_.rank_index(m);
        if (ri < 0) continue;
        const auto k = static_cast<std::size_t>(ri);
        if (node.units != 0) {
          ub_units_[k] += node.units;
          comm_changed(k);
        } else if (comm_in_flight_[k]++ == 0) {
          comm_changed(k);
        }
      }
    } else if (node.kind == NodeKind::compute && g_.rank_index(node.rank) >= 0) {
      const auto k = static_cast<std::size_t>(g_.rank_index(node.rank));
      Running x;
      x.n = n;
      x.p = ComputeProgress::start_units(now, dur_[n], rank_contention_[k], busy_units(k), node.gemm_share);
      x.ev = sim_->schedule_at(x.p.end(), [this, n] { finish(n); });
      running_[k].push_back(x);
      return;
    }
  }
  if (node.kind == NodeKind::collective && runner_ != nullptr) {
    runner_->start(*sim_, g_, n, [this, n](Time) { finish(n); });
    return;
  }
  sim_->schedule_at(now + dur_[n], [this, n] { finish(n); });
}

void Executor::finish(NodeId n) {
  const Time now = sim_->now();
  out_->end[n] = now;
  done_[n] = 1;
  ++finished_;
  emit(node_ended, n, now);
  if (contended_) {
    const auto& node = g_.node(n);
    if (node.kind == NodeKind::send) p2p_changed(node, false);
    if (node.kind == NodeKind::collective && node.takes_units) {
      for (const int m : g_.simulated_members(node.group)) {
        const int ri = g_.rank_index(m);
        if (ri < 0) continue;
        const auto k = static_cast<std::size_t>(ri);
        if (node.units != 0) {
          ub_units_[k] -= node.units;
          comm_changed(k);
        } else if (--comm_in_flight_[k] == 0) {
          comm_changed(k);
        }
      }
    } else if (node.kind == NodeKind::compute && g_.rank_index(node.rank) >= 0) {
      auto& list = running_[static_cast<std::size_t>(g_.rank_index(node.rank))];
      const auto it = std::find_if(list.begin(), list.end(), [n](const Running& x) { return x.n == n; });
      *it = list.back();
      list.pop_back();
    }
  }
  for (std::uint32_t k = nq_begin_[n]; k < nq_begin_[n + 1]; ++k) {
    const std::uint32_t q = nq_[k];
    if (++q_head_[q] < q_end_[q]) {
      const NodeId next = q_nodes_[q_head_[q]];
      --waiting_[next];
      try_start(next);
    }
  }
  for (std::uint32_t k = succ_begin_[n]; k < succ_begin_[n + 1]; ++k) {
    const NodeId s = succ_[k];
    --waiting_[s];
    try_start(s);
  }
}

void Executor::p2p_changed(const TaskNode& send, bool started) {
  // A transfer holds its NCCL CTAs on both ends (the send's rank and its peer).
  for (const int rank : {send.rank, send.peer}) {
    const int ri = g_.rank_index(rank);
    if (ri < 0) continue;
    const auto k = static_cast<std::size_t>(ri);
    if (rank_contention_[k].p2p_units == 0) continue;
    p2p_in_flight_[k] = started ? p2p_in_flight_[k] + 1 : p2p_in_flight_[k] - 1;
    comm_changed(k);
  }
}

std::uint32_t Executor::busy_units(std::size_t ri) const {
  const auto& c = rank_contention_[ri];
  return (comm_in_flight_[ri] > 0 ? c.comm_units : 0U) + p2p_in_flight_[ri] * c.p2p_units + ub_units_[ri];
}

void Executor::comm_changed(std::size_t ri) {
  // The compute in progress on this rank changes rate: bank the work done at the old rate and
  // move its end where the new rate puts it.
  const Time now = sim_->now();
  for (auto& x : running_[ri]) {
    const Time before = x.p.end();
    x.p.change(now, rank_contention_[ri].rate_units(busy_units(ri), g_.node(x.n).gemm_share));
    const Time after = x.p.end();
    if (after == before) continue;
    sim_->cancel(x.ev);
    const NodeId n = x.n;
    x.ev = sim_->schedule_at(after, [this, n] { finish(n); });
  }
}

}  // namespace shardsim::step
