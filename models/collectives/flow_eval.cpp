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

// Per distinct Step, built once and replayed for every repeat: per rank its sends (a range of
// `sends`, which holds the step's transfers grouped by sending rank, in transfer order within
// a rank) and how many transfers it takes part in. Everything issue() and the completion path
// read is precomputed here, so that a flow costs no route lookup and no rounding.
struct SendInfo {
  const sim::FlowNetwork::LinkIndex* links = nullptr;  // the route, in StepIndex::links
  std::uint32_t hops = 0;
  std::uint32_t dst = 0;
  double bytes = 0;  // per chunk
  Time delay;        // route latency + step overhead: start = issue + delay
};
struct RankStep {
  std::uint32_t send_begin = 0;  // this rank's sends: sends[send_begin, send_end)
  std::uint32_t send_end = 0;
  std::uint32_t involve = 0;  // sends + receives
  std::uint32_t receives = 0;  // receives at least once
};
struct StepIndex {
  std::vector<RankStep> rank;  // n
  std::vector<SendInfo> sends;
  // The routes of `sends`, in their order, copied out of the Topology's route cache (a hash
  // map of separately allocated vectors): starting a step's flows then reads them in sequence.
  std::vector<sim::FlowNetwork::LinkIndex> links;
  std::uint32_t repeat = 1;
  Time reduce_time;             // per chunk, on a receiving rank
  bool reduces = false;         // reduce_time applies (reduce_bytes > 0, finite reduce_Bps)
};

constexpr std::uint8_t kEarlyInline = 2;  // entries of Progress::early
constexpr std::uint8_t kSpilled = 0xff;   // Progress::early_n when the list is in spill_

// Progress of one (rank, chunk): the step it is in and what it still waits for. 32 bytes, so
// that the 16k ranks of a 128x128 torus keep theirs in cache: completions that arrive before
// their rank entered the step are counted in a two-entry inline list (in a ring a neighbour
// runs at most one step ahead); a longer list moves to a side table (spill_).
struct Progress {
  std::uint64_t global = 0;  // unrolled step number
  std::uint32_t step = 0;    // index into Schedule::steps
  std::uint32_t rep = 0;     // repeat within the step
  std::uint32_t outstanding = 0;
  // active: in step `global`, waiting for `outstanding` transfers; blocked: waiting for the
  // previous chunk to pass step `global`; reducing: step global-1 done, reduction running.
  enum class State : std::uint8_t { active, blocked, reducing, done } state = State::blocked;
  // early[i]: completions for unrolled step base+i that arrived before the rank entered it,
  // where base = global+1 when active, else global. early_n entries are valid (the others
  // are 0), or early_n == kSpilled and the list is spill_[this rank-chunk].
  std::uint8_t early_n = 0;
  std::uint32_t early[kEarlyInline] = {0, 0};
};
static_assert(sizeof(Progress) == 32);

// A transfer between issue and completion. dst and bytes come from `send`; the issue time is
// start - send->delay.
struct InFlight {
  const SendInfo* send = nullptr;
  std::uint32_t src = 0;
  std::uint32_t chunk = 0;
  std::uint64_t global = 0;
  Time start;
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
    overhead_ = Time::from_seconds(o.cost.step_overhead_s);
    reduce_Bps_ = o.cost.reduce_Bps;
    index_steps();
    net_.set_batch_completion_handler([this](std::span<const std::uint64_t> tags) {
      for (auto tag : tags) on_flow_done(static_cast<std::uint32_t>(tag));
    });
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
      ix.rank.assign(n_, RankStep{});
      std::vector<std::uint32_t> send_off(n_ + 1, 0);
      for (const auto& tr : st.transfers) {
        if (tr.src >= n_ || tr.dst >= n_) {
          throw std::logic_error(fmt::format("schedule '{}' step {}: transfer {}->{} outside {} ranks",
                                             sched_.algorithm, s, tr.src, tr.dst, n_));
        }
        ++send_off[tr.src + 1];
        ++ix.rank[tr.src].involve;
        ++ix.rank[tr.dst].involve;
        ix.rank[tr.dst].receives = 1;
      }
      for (std::uint32_t r = 0; r < n_; ++r) send_off[r + 1] += send_off[r];
      for (std::uint32_t r = 0; r < n_; ++r) {
        ix.rank[r].send_begin = send_off[r];
        ix.rank[r].send_end = send_off[r + 1];
      }
      ix.sends.resize(st.transfers.size());
      std::vector<const topo::Route*> routes(st.transfers.size());
      for (const auto& tr : st.transfers) {
        const topo::Route& route = topo_.route(topo_.device(static_cast<std::size_t>(op_.group[tr.src])),
                                               topo_.device(static_cast<std::size_t>(op_.group[tr.dst])));
        const std::uint32_t k = send_off[tr.src]++;
        routes[k] = &route;
        SendInfo& si = ix.sends[k];
        si.hops = static_cast<std::uint32_t>(route.links.size());
        si.dst = tr.dst;
        si.bytes = tr.bytes / chunks_;
        si.delay = Time::from_seconds(route.latency_s) + overhead_;
      }
      for (const topo::Route* route : routes) ix.links.insert(ix.links.end(), route->links.begin(), route->links.end());
      for (std::size_t k = 0, off = 0; k < ix.sends.size(); off += ix.sends[k].hops, ++k) {
        ix.sends[k].links = ix.links.data() + off;
      }
      ix.repeat = st.repeat;
      const double red = st.reduce_bytes / chunks_;
      ix.reduces = red > 0 && std::isfinite(reduce_Bps_) && !st.transfers.empty();
      if (ix.reduces) ix.reduce_time = Time::ceil_seconds(red / reduce_Bps_);
    }
  }

  std::size_t at(std::uint32_t r, std::uint32_t c) const { return static_cast<std::size_t>(r) * chunks_ + c; }
  Progress& prog(std::uint32_t r, std::uint32_t c) { return progress_[at(r, c)]; }

  // Takes the count of early completions for the step (r, c) enters (0 if none).
  std::uint32_t pop_early(Progress& p, std::size_t i) {
    if (p.early_n == 0) return 0;
    if (p.early_n == kSpilled) {
      auto it = spill_.find(i);
      const std::uint32_t v = it->second.front();
      it->second.pop_front();
      if (it->second.empty()) {
        spill_.erase(it);
        p.early_n = 0;
      }
      return v;
    }
    const std::uint32_t v = p.early[0];
    p.early[0] = p.early[1];
    p.early[1] = 0;
    --p.early_n;
    return v;
  }

  // Counts an early completion `ahead` steps after the base (see Progress::early).
  void push_early(Progress& p, std::size_t i, std::uint64_t ahead) {
    if (p.early_n != kSpilled && ahead < kEarlyInline) {
      p.early_n = std::max<std::uint8_t>(p.early_n, static_cast<std::uint8_t>(ahead + 1));
      ++p.early[ahead];
      return;
    }
    auto& d = spill_[i];
    if (p.early_n != kSpilled) {
      d.assign(p.early, p.early + p.early_n);
      p.early[0] = p.early[1] = 0;
      p.early_n = kSpilled;
    }
    if (d.size() <= ahead) d.resize(ahead + 1, 0);
    ++d[ahead];
  }

  // (r, c) enters its current step: skip steps it takes no part in, else issue its sends.
  void enter(std::uint32_t r, std::uint32_t c) {
    if (enter_step(r, c)) step_complete(r, c);
  }

  // enter() short of completing a step that is complete on entry (all its transfers arrived
  // early): returns true for that, and the caller completes it. Apart so that step_complete
  // loops instead of recursing through enter; forced inline there (once per step and rank).
  [[gnu::always_inline]] bool enter_step(std::uint32_t r, std::uint32_t c) {
    Progress& p = prog(r, c);
    for (;;) {
      if (p.step >= sched_.steps.size()) {
        p.state = Progress::State::done;
        --remaining_;
        finish_ = std::max(finish_, sim_.now());
        wake_next_chunk(r, c);
        return false;
      }
      // Chunks of one rank go through a step in order (a connection sends its chunks FIFO).
      if (c > 0) {
        const Progress& prev = prog(r, c - 1);
        if (prev.state != Progress::State::done && prev.global <= p.global) {
          p.state = Progress::State::blocked;
          return false;
        }
      }
      const StepIndex& ix = idx_[p.step];
      const std::uint32_t already = p.early_n == 0 ? 0 : pop_early(p, at(r, c));
      const RankStep& rs = ix.rank[r];
      if (rs.involve == 0) {
        p.state = Progress::State::blocked;
        advance(p);
        wake_next_chunk(r, c);
        continue;
      }
      p.outstanding = rs.involve - already;
      p.state = Progress::State::active;
      for (std::uint32_t k = rs.send_begin; k < rs.send_end; ++k) issue(r, c, p.global, ix.sends[k]);
      return p.outstanding == 0;
    }
  }

  void advance(Progress& p) {
    ++p.global;
    if (++p.rep >= idx_[p.step].repeat) {
      ++p.step;
      p.rep = 0;
    }
  }

  void wake_next_chunk(std::uint32_t r, std::uint32_t c) {
    if (c + 1 >= chunks_) return;
    Progress& next = prog(r, c + 1);
    if (next.state == Progress::State::blocked) enter(r, c + 1);
  }

  // Forced inline into enter_step's send loop (once per flow).
  [[gnu::always_inline]] void issue(std::uint32_t r, std::uint32_t c, std::uint64_t global, const SendInfo& send) {
    std::uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(inflight_.size());
      inflight_.emplace_back();
    }
    const Time start = sim_.now() + send.delay;
    inflight_[slot] = InFlight{&send, r, c, global, start};
    ++transfers_;
    // Transfers that start at the same instant share one event (a ring issues n at once);
    // consecutive issues usually share the instant, so the last bucket is remembered. Bucket
    // vectors are recycled (spare_starts_), so a step's bucket does not grow from nothing.
    if (start.ps() != last_start_ps_ || last_start_ == nullptr) {
      auto& bucket = starts_[start.ps()];
      if (bucket.empty()) {
        sim_.schedule_at(start, [this, key = start.ps()] { start_bucket(key); });
        if (bucket.capacity() == 0 && !spare_starts_.empty()) {
          bucket.swap(spare_starts_.back());
          spare_starts_.pop_back();
        }
      }
      last_start_ps_ = start.ps();
      last_start_ = &bucket;
    }
    last_start_->push_back(slot);
  }

  void start_bucket(std::int64_t key) {
    if (key == last_start_ps_) last_start_ = nullptr;
    auto node = starts_.extract(key);
    requests_.clear();
    for (std::uint32_t slot : node.mapped()) {
      const SendInfo& s = *inflight_[slot].send;
      requests_.push_back({{s.links, s.hops}, s.bytes, slot});
    }
    net_.start(requests_);
    node.mapped().clear();
    spare_starts_.push_back(std::move(node.mapped()));
  }

  void on_flow_done(std::uint32_t slot) {
    const InFlight f = inflight_[slot];
    free_.push_back(slot);
    const SendInfo& s = *f.send;
    if (opts_.on_transfer) {
      opts_.on_transfer(TransferRecord{f.src, s.dst, f.global, f.chunk, s.bytes, f.start - s.delay, f.start, sim_.now()});
    }
    credit(f.src, f.chunk, f.global);
    credit(s.dst, f.chunk, f.global);
  }

  // One transfer of unrolled step `global` involving (r, c) has completed. Forced inline: it
  // runs twice per flow, and the call costs as much as its common path.
  [[gnu::always_inline]] void credit(std::uint32_t r, std::uint32_t c, std::uint64_t global) {
    Progress& p = prog(r, c);
    if (p.state == Progress::State::active && global == p.global) {
      if (--p.outstanding == 0) step_complete(r, c);
      return;
    }
    credit_early(p, at(r, c), global);
  }

  // The rank has not entered that step yet: remember the completion for when it does.
  void credit_early(Progress& p, std::size_t i, std::uint64_t global) {
    const std::uint64_t base = p.state == Progress::State::active ? p.global + 1 : p.global;
    if (global < base || p.state == Progress::State::done) {
      throw std::logic_error("flow evaluator: completion for a step already passed");
    }
    push_early(p, i, global - base);
  }

  // (r, c) has completed its step: advance, then reduce or enter the next one. A step that is
  // complete on entry loops here (it recursed through enter before); the next chunk is woken
  // once per step completed without a reduction, after them all, in the order the recursion
  // did it.
  void step_complete(std::uint32_t r, std::uint32_t c) {
    std::uint32_t wakes = 0;
    Progress& p = prog(r, c);
    for (;;) {
      const StepIndex& ix = idx_[p.step];
      const bool reduce = ix.reduces && ix.rank[r].receives;
      advance(p);
      if (reduce) {
        p.state = Progress::State::reducing;
        sim_.schedule_after(ix.reduce_time, [this, r, c] {
          enter(r, c);
          wake_next_chunk(r, c);
        });
        break;
      }
      p.state = Progress::State::blocked;
      ++wakes;
      if (!enter_step(r, c)) break;
    }
    if (c + 1 < chunks_) {
      for (; wakes > 0; --wakes) wake_next_chunk(r, c);
    }
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
  std::unordered_map<std::size_t, std::deque<std::uint32_t>> spill_;  // long early lists
  std::vector<InFlight> inflight_;
  std::vector<std::uint32_t> free_;
  std::unordered_map<std::int64_t, std::vector<std::uint32_t>> starts_;
  std::vector<std::vector<std::uint32_t>> spare_starts_;
  std::vector<sim::FlowNetwork::StartRequest> requests_;  // scratch of start_bucket
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
