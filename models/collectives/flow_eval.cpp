#include "models/collectives/flow_eval.hpp"

#include <fmt/format.h>

#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "sim/simulator.hpp"

namespace shardsim::coll {
namespace {

// Per distinct Step, the transfers grouped by sending rank (CSR) and how many transfers
// each rank takes part in; built once, replayed for every repeat.
struct StepIndex {
  std::vector<std::uint32_t> send_off;  // n + 1
  std::vector<std::uint32_t> send_idx;  // transfer indices, grouped by src
  std::vector<std::uint32_t> involve;   // per rank: sends + receives
  std::vector<char> receives;           // per rank: receives at least once
  std::vector<const topo::Route*> routes;  // per transfer
};

// Progress of one (rank, chunk): the step it is in and what it still waits for.
struct Progress {
  std::uint32_t step = 0;    // index into Schedule::steps
  std::uint32_t rep = 0;     // repeat within the step
  std::uint64_t global = 0;  // unrolled step number
  std::uint32_t outstanding = 0;
  // active: in step `global`, waiting for `outstanding` transfers; blocked: waiting for the
  // previous chunk to pass step `global`; reducing: step global-1 done, reduction running.
  enum class State : std::uint8_t { active, blocked, reducing, done } state = State::blocked;
  // early[i]: completions for unrolled step base+i that arrived before the rank entered it,
  // where base = global+1 when active, else global.
  std::deque<std::uint32_t> early;
};

struct InFlight {
  std::uint32_t src, dst, chunk, transfer;
  std::uint64_t global;
  double bytes;
  Time issue, start;
};

class Runner {
 public:
  Runner(const topo::Topology& t, const CollectiveOp& op, const Schedule& s, const FlowOptions& o)
      : topo_(t), op_(op), sched_(s), opts_(o), net_(sim_) {
    n_ = static_cast<std::uint32_t>(s.ranks);
    chunks_ = std::max<std::uint32_t>(1, s.chunks);
    if (op.group.size() != n_) {
      throw std::invalid_argument(fmt::format("schedule has {} ranks but the group has {}", n_, op.group.size()));
    }
    for (const auto& l : t.links()) net_.add_link(l.bandwidth_Bps);
    index_steps();
    net_.set_completion_handler([this](std::uint64_t tag) { on_flow_done(static_cast<std::uint32_t>(tag)); });
    overhead_ = Time::from_seconds(o.cost.step_overhead_s);
    reduce_Bps_ = o.cost.reduce_Bps;
  }

  FlowResult run() {
    sim_.enable_fingerprint();
    progress_.resize(static_cast<std::size_t>(n_) * chunks_);
    remaining_ = progress_.size();
    for (std::uint32_t r = 0; r < n_; ++r) {
      for (std::uint32_t c = 0; c < chunks_; ++c) enter(r, c);
    }
    sim_.run();
    if (remaining_ != 0) {
      throw std::logic_error(fmt::format("schedule '{}' deadlocked: {} rank-chunks unfinished at {}",
                                         sched_.algorithm, remaining_, sim_.now()));
    }
    FlowResult out;
    out.time_s = finish_.to_seconds();
    out.events = sim_.event_count();
    out.transfers = transfers_;
    out.network = net_.stats();
    out.fingerprint = sim_.fingerprint();
    return out;
  }

 private:
  void index_steps() {
    idx_.resize(sched_.steps.size());
    for (std::size_t s = 0; s < sched_.steps.size(); ++s) {
      const auto& st = sched_.steps[s];
      auto& ix = idx_[s];
      ix.send_off.assign(n_ + 1, 0);
      ix.involve.assign(n_, 0);
      ix.receives.assign(n_, 0);
      for (const auto& tr : st.transfers) {
        if (tr.src >= n_ || tr.dst >= n_) {
          throw std::logic_error(fmt::format("schedule '{}' step {}: transfer {}->{} outside {} ranks",
                                             sched_.algorithm, s, tr.src, tr.dst, n_));
        }
        ++ix.send_off[tr.src + 1];
        ++ix.involve[tr.src];
        ++ix.involve[tr.dst];
        ix.receives[tr.dst] = 1;
      }
      for (std::uint32_t r = 0; r < n_; ++r) ix.send_off[r + 1] += ix.send_off[r];
      ix.send_idx.resize(st.transfers.size());
      auto fill = ix.send_off;
      ix.routes.resize(st.transfers.size());
      for (std::uint32_t i = 0; i < st.transfers.size(); ++i) {
        const auto& tr = st.transfers[i];
        ix.send_idx[fill[tr.src]++] = i;
        ix.routes[i] = &topo_.route(topo_.device(static_cast<std::size_t>(op_.group[tr.src])),
                                    topo_.device(static_cast<std::size_t>(op_.group[tr.dst])));
      }
    }
  }

  Progress& prog(std::uint32_t r, std::uint32_t c) { return progress_[static_cast<std::size_t>(r) * chunks_ + c]; }

  // (r, c) enters its current step: skip steps it takes no part in, else issue its sends.
  void enter(std::uint32_t r, std::uint32_t c) {
    for (;;) {
      Progress& p = prog(r, c);
      if (p.step >= sched_.steps.size()) {
        p.state = Progress::State::done;
        --remaining_;
        finish_ = std::max(finish_, sim_.now());
        wake_next_chunk(r, c);
        return;
      }
      // Chunks of one rank go through a step in order (a connection sends its chunks FIFO).
      if (c > 0) {
        const Progress& prev = prog(r, c - 1);
        if (prev.state != Progress::State::done && prev.global <= p.global) {
          p.state = Progress::State::blocked;
          return;
        }
      }
      const StepIndex& ix = idx_[p.step];
      std::uint32_t already = 0;
      if (!p.early.empty()) {
        already = p.early.front();
        p.early.pop_front();
      }
      if (ix.involve[r] == 0) {
        p.state = Progress::State::blocked;
        advance(p);
        wake_next_chunk(r, c);
        continue;
      }
      p.outstanding = ix.involve[r] - already;
      p.state = Progress::State::active;
      const auto& st = sched_.steps[p.step];
      for (std::uint32_t k = ix.send_off[r]; k < ix.send_off[r + 1]; ++k) issue(r, c, p, ix, st, ix.send_idx[k]);
      if (p.outstanding == 0) step_complete(r, c);
      return;
    }
  }

  void advance(Progress& p) {
    ++p.global;
    if (++p.rep >= sched_.steps[p.step].repeat) {
      ++p.step;
      p.rep = 0;
    }
  }

  void wake_next_chunk(std::uint32_t r, std::uint32_t c) {
    if (c + 1 >= chunks_) return;
    Progress& next = prog(r, c + 1);
    if (next.state == Progress::State::blocked) enter(r, c + 1);
  }

  void issue(std::uint32_t r, std::uint32_t c, const Progress& p, const StepIndex& ix, const Step& st,
             std::uint32_t t) {
    std::uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(inflight_.size());
      inflight_.emplace_back();
    }
    const auto& tr = st.transfers[t];
    inflight_[slot] = InFlight{r, tr.dst, c, t, p.global, tr.bytes / chunks_, sim_.now(), Time::zero()};
    slot_step_.resize(inflight_.size());
    slot_step_[slot] = p.step;
    ++transfers_;
    const Time start = sim_.now() + Time::from_seconds(ix.routes[t]->latency_s) + overhead_;
    // Transfers that start at the same instant share one event (a ring issues n at once);
    // consecutive issues usually share the instant, so the last bucket is remembered.
    if (start.ps() != last_start_ps_ || last_start_ == nullptr) {
      auto& bucket = starts_[start.ps()];
      if (bucket.empty()) {
        sim_.schedule_at(start, [this, key = start.ps()] { start_bucket(key); });
      }
      last_start_ps_ = start.ps();
      last_start_ = &bucket;
    }
    last_start_->push_back(slot);
  }

  void start_bucket(std::int64_t key) {
    if (key == last_start_ps_) last_start_ = nullptr;
    auto node = starts_.extract(key);
    for (std::uint32_t slot : node.mapped()) {
      InFlight& f = inflight_[slot];
      f.start = sim_.now();
      const auto* route = idx_[slot_step_[slot]].routes[f.transfer];
      net_.start(route->links, f.bytes, slot);
    }
  }

  void on_flow_done(std::uint32_t slot) {
    const InFlight f = inflight_[slot];
    free_.push_back(slot);
    if (opts_.on_transfer) {
      opts_.on_transfer(TransferRecord{f.src, f.dst, f.global, f.chunk, f.bytes, f.issue, f.start, sim_.now()});
    }
    credit(f.src, f.chunk, f.global);
    credit(f.dst, f.chunk, f.global);
  }

  // One transfer of unrolled step `global` involving (r, c) has completed.
  void credit(std::uint32_t r, std::uint32_t c, std::uint64_t global) {
    Progress& p = prog(r, c);
    const bool active = p.state == Progress::State::active;
    if (active && global == p.global) {
      if (--p.outstanding == 0) step_complete(r, c);
      return;
    }
    // The rank has not entered that step yet: remember the completion for when it does.
    const std::uint64_t base = active ? p.global + 1 : p.global;
    if (global < base || p.state == Progress::State::done) {
      throw std::logic_error("flow evaluator: completion for a step already passed");
    }
    const std::uint64_t ahead = global - base;
    if (p.early.size() <= ahead) p.early.resize(ahead + 1, 0);
    ++p.early[ahead];
  }

  void step_complete(std::uint32_t r, std::uint32_t c) {
    Progress& p = prog(r, c);
    const Step& st = sched_.steps[p.step];
    const StepIndex& ix = idx_[p.step];
    const double red = ix.receives[r] ? st.reduce_bytes / chunks_ : 0.0;
    advance(p);
    if (red > 0 && std::isfinite(reduce_Bps_)) {
      p.state = Progress::State::reducing;
      sim_.schedule_after(Time::ceil_seconds(red / reduce_Bps_), [this, r, c] {
        enter(r, c);
        wake_next_chunk(r, c);
      });
      return;
    }
    p.state = Progress::State::blocked;
    enter(r, c);
    wake_next_chunk(r, c);
  }

  const topo::Topology& topo_;
  const CollectiveOp& op_;
  const Schedule& sched_;
  const FlowOptions& opts_;
  sim::Simulator sim_;
  sim::FlowNetwork net_;
  std::uint32_t n_ = 0;
  std::uint32_t chunks_ = 1;
  Time overhead_;
  double reduce_Bps_ = std::numeric_limits<double>::infinity();
  std::vector<StepIndex> idx_;
  std::vector<Progress> progress_;
  std::vector<InFlight> inflight_;
  std::vector<std::uint32_t> slot_step_;
  std::vector<std::uint32_t> free_;
  std::unordered_map<std::int64_t, std::vector<std::uint32_t>> starts_;
  std::int64_t last_start_ps_ = -1;
  std::vector<std::uint32_t>* last_start_ = nullptr;  // starts_[last_start_ps_] while it exists
  std::size_t remaining_ = 0;
  std::uint64_t transfers_ = 0;
  Time finish_ = Time::zero();
};

}  // namespace

FlowResult evaluate_flow(const topo::Topology& t, const CollectiveOp& op, const Schedule& s, const FlowOptions& opts) {
  Runner r(t, op, s, opts);
  return r.run();
}

}  // namespace shardsim::coll
