#include "models/collectives/collective_run.hpp"

#include "models/collectives/nccl_model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace shardsim::coll {
namespace {

// Per distinct Step, built once and replayed for every repeat: per participant its sends (a
// range of `sends`, which holds the step's transfers grouped by sender, in transfer order
// within a sender) and how many transfers it takes part in. Everything issue() and the
// completion path read is precomputed here, so that a flow costs no route lookup and no
// rounding. Participants are the group's ranks 0..n-1, then the switches that in-network
// transfers name (n, n+1, ... in order of first appearance in the schedule).
struct SendInfo {
  const sim::FlowNetwork::LinkIndex* links = nullptr;  // the route, in StepIndex::links
  std::uint32_t hops = 0;
  std::uint32_t dst = 0;
  double bytes = 0;  // per chunk
  Time delay;        // route latency + step overhead: start = issue + delay
  bool buffered = false;  // completes for the sender at issue (FlowOptions::buffered_send_bytes)
};
struct RankStep {
  std::uint32_t send_begin = 0;  // this participant's sends: sends[send_begin, send_end)
  std::uint32_t send_end = 0;
  std::uint32_t involve = 0;   // sends the rank waits for (not buffered ones) + receives
  std::uint32_t receives = 0;  // receives at least once
};
struct StepIndex {
  std::vector<RankStep> rank;  // participants
  std::vector<SendInfo> sends;
  // The routes of `sends`, in their order, copied out of the Topology's route cache (a hash
  // map of separately allocated vectors): starting a step's flows then reads them in sequence.
  std::vector<sim::FlowNetwork::LinkIndex> links;
  std::uint32_t repeat = 1;
  Time reduce_time;      // per chunk, on a receiving rank
  bool reduces = false;  // reduce_time applies (reduce_bytes > 0, finite reduce_Bps)
};

constexpr std::uint8_t kEarlyInline = 2;  // entries of Progress::early
constexpr std::uint8_t kSpilled = 0xff;   // Progress::early_n when the list is in spill_

// Progress of one (participant, chunk): the step it is in and what it still waits for. 32
// bytes, so that the 16k ranks of a 128x128 torus keep theirs in cache: completions that
// arrive before their rank entered the step are counted in a two-entry inline list (in a ring
// a neighbour runs at most one step ahead); a longer list moves to a side table (spill_).
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
  Time issue;  // when the sender issued it (before start when it waited behind its connection)
};

}  // namespace

void add_topology_links(sim::FlowNetwork& net, const topo::Topology& t, bool link_efficiency) {
  for (const auto& l : t.links()) net.add_link(l.bandwidth_Bps * (link_efficiency ? coll::link_efficiency(t, l) : 1.0));
}

class CollectiveRun::Impl {
 public:
  Impl(sim::Simulator& sim, sim::FlowNetwork& net, const topo::Topology& t, CollectiveOp op, const Schedule& s,
       FlowOptions o)
      : sim_(sim), net_(net), topo_(t), op_(std::move(op)), sched_(s), opts_(std::move(o)) {
    n_ = static_cast<std::uint32_t>(s.ranks);
    chunks_ = std::max<std::uint32_t>(1, s.chunks);
    if (op_.group.size() != n_) {
      throw std::invalid_argument(fmt::format("schedule has {} ranks but the group has {}", n_, op_.group.size()));
    }
    if (net_.link_count() != t.links().size()) {
      throw std::invalid_argument(fmt::format("flow network has {} links but topology '{}' has {}", net_.link_count(),
                                              t.name(), t.links().size()));
    }
    overhead_ = Time::from_seconds(opts_.cost.step_overhead_s);
    reduce_Bps_ = opts_.cost.reduce_Bps;
    index_steps();
    client_ = net_.add_client([this](std::span<const std::uint64_t> tags) { on_batch(tags); });
  }
  ~Impl() { net_.remove_client(client_); }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void start(Time at, std::function<void(Time)> on_done) {
    if (started_) throw std::logic_error(fmt::format("collective run '{}' started twice", sched_.algorithm));
    if (at < sim_.now()) {
      throw std::logic_error(
          fmt::format("collective run '{}' started at {}, before the current time {}", sched_.algorithm, at, sim_.now()));
    }
    started_ = true;
    start_ = at;
    finish_ = at;
    on_done_ = std::move(on_done);
    if (at > sim_.now()) {
      sim_.schedule_at(at, [this] {
        begin();
        maybe_finish();
      });
      return;
    }
    begin();
    // A schedule with nothing to send is done at once; on_done still comes from an event.
    if (remaining_ == 0 && on_done_) sim_.schedule_after(Time::zero(), [this] { maybe_finish(); });
    if (remaining_ == 0) done_ = true;
  }

  bool started() const { return started_; }
  bool done() const { return done_; }
  Time start_time() const { return start_; }
  Time finish_time() const { return finish_; }
  std::uint64_t transfers() const { return transfers_; }
  std::size_t unfinished() const { return started_ ? remaining_ : progress_size(); }
  sim::FlowNetwork::ClientId client() const { return client_; }

 private:
  std::size_t progress_size() const { return static_cast<std::size_t>(np_) * chunks_; }

  void begin() {
    progress_.resize(progress_size());
    remaining_ = progress_.size();
    for (std::uint32_t r = 0; r < np_; ++r) {
      for (std::uint32_t c = 0; c < chunks_; ++c) enter(r, c);
    }
  }

  // Calls on_done once the last participant is done. Callers return right after it.
  void maybe_finish() {
    if (remaining_ != 0 || notified_) return;
    notified_ = true;
    done_ = true;
    if (auto cb = std::move(on_done_)) cb(finish_);
  }

  // Participant of a transfer endpoint: a group rank, or a switch (in-network reduction).
  std::uint32_t participant(std::uint32_t x, bool is_node) {
    if (!is_node) return x;
    return switch_index_.at(x);
  }
  topo::NodeId endpoint(std::uint32_t p) const {
    return p < n_ ? topo_.device(static_cast<std::size_t>(op_.group[p])) : switches_[p - n_];
  }

  void index_steps() {
    for (std::size_t s = 0; s < sched_.steps.size(); ++s) {
      for (const auto& tr : sched_.steps[s].transfers) {
        if ((!tr.src_is_node && tr.src >= n_) || (!tr.dst_is_node && tr.dst >= n_)) {
          throw std::logic_error(fmt::format("schedule '{}' step {}: transfer {}->{} outside {} ranks",
                                             sched_.algorithm, s, tr.src, tr.dst, n_));
        }
        for (auto [x, is_node] : {std::pair{tr.src, tr.src_is_node}, std::pair{tr.dst, tr.dst_is_node}}) {
          if (!is_node || switch_index_.count(x)) continue;
          if (x >= topo_.num_nodes() || topo_.node(x).kind != topo::NodeKind::switch_node) {
            throw std::logic_error(fmt::format("schedule '{}' step {}: in-network endpoint {} is not a switch of '{}'",
                                               sched_.algorithm, s, x, topo_.name()));
          }
          switch_index_.emplace(x, n_ + static_cast<std::uint32_t>(switches_.size()));
          switches_.push_back(static_cast<topo::NodeId>(x));
        }
      }
    }
    np_ = n_ + static_cast<std::uint32_t>(switches_.size());
    idx_.resize(sched_.steps.size());
    for (std::size_t s = 0; s < sched_.steps.size(); ++s) {
      const auto& st = sched_.steps[s];
      auto& ix = idx_[s];
      ix.rank.assign(np_, RankStep{});
      std::vector<std::uint32_t> send_off(np_ + 1, 0);
      for (const auto& tr : st.transfers) {
        const std::uint32_t src = participant(tr.src, tr.src_is_node), dst = participant(tr.dst, tr.dst_is_node);
        ++send_off[src + 1];
        if (!buffered(tr)) ++ix.rank[src].involve;
        ++ix.rank[dst].involve;
        ix.rank[dst].receives = 1;
      }
      for (std::uint32_t r = 0; r < np_; ++r) send_off[r + 1] += send_off[r];
      for (std::uint32_t r = 0; r < np_; ++r) {
        ix.rank[r].send_begin = send_off[r];
        ix.rank[r].send_end = send_off[r + 1];
      }
      ix.sends.resize(st.transfers.size());
      std::vector<const topo::Route*> routes(st.transfers.size());
      for (const auto& tr : st.transfers) {
        const std::uint32_t src = participant(tr.src, tr.src_is_node), dst = participant(tr.dst, tr.dst_is_node);
        const topo::Route& route = topo_.route(endpoint(src), endpoint(dst));
        const std::uint32_t k = send_off[src]++;
        routes[k] = &route;
        SendInfo& si = ix.sends[k];
        si.hops = static_cast<std::uint32_t>(route.links.size());
        si.dst = dst;
        si.bytes = tr.bytes / chunks_;
        si.delay = Time::from_seconds(route.latency_s) + overhead_;
        si.buffered = buffered(tr);
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

  bool buffered(const Transfer& tr) const {
    return !tr.src_is_node && opts_.buffered_send_bytes > 0 && tr.bytes <= opts_.buffered_send_bytes;
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
      if (rs.involve == 0 && rs.send_begin == rs.send_end) {  // no part in this step
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
    inflight_[slot] = InFlight{&send, r, c, global, start, sim_.now()};
    ++transfers_;
    // Buffered sends (FlowOptions::buffered_send_bytes): one TCP connection per pair of ranks,
    // a byte stream: a message starts once the pair's earlier one has arrived.
    if (opts_.buffered_send_bytes > 0) {
      const std::uint64_t key = static_cast<std::uint64_t>(r) * np_ + send.dst;
      auto [it, fresh] = connection_.try_emplace(key);
      if (!fresh) {
        it->second.push_back(slot);
        return;
      }
    }
    schedule_start(slot, start);
  }

  // The flow of `slot` starts (its first byte on the wire) at `start`.
  void schedule_start(std::uint32_t slot, Time start) {
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
    net_.start(client_, requests_);
    node.mapped().clear();
    spare_starts_.push_back(std::move(node.mapped()));
  }

  void on_batch(std::span<const std::uint64_t> tags) {
    for (auto tag : tags) on_flow_done(static_cast<std::uint32_t>(tag));
    maybe_finish();  // last: on_done may destroy this run
  }

  // Forced inline into on_batch (once per flow).
  [[gnu::always_inline]] void on_flow_done(std::uint32_t slot) {
    const InFlight f = inflight_[slot];
    free_.push_back(slot);
    const SendInfo& s = *f.send;
    if (opts_.on_transfer) {
      opts_.on_transfer(TransferRecord{f.src, s.dst, f.global, f.chunk, s.bytes, f.issue, f.start, sim_.now()});
    }
    if (opts_.buffered_send_bytes > 0) {  // the connection's next message, if one waits
      auto it = connection_.find(static_cast<std::uint64_t>(f.src) * np_ + s.dst);
      if (it->second.empty()) {
        connection_.erase(it);
      } else {
        const std::uint32_t next = it->second.front();
        it->second.pop_front();
        InFlight& nf = inflight_[next];
        nf.start = std::max(nf.start, sim_.now());
        schedule_start(next, nf.start);
      }
    }
    if (!s.buffered) credit(f.src, f.chunk, f.global);
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
  // complete on entry loops here; the next chunk is woken once per step completed without a
  // reduction, after them all.
  void step_complete(std::uint32_t r, std::uint32_t c) {
    std::uint32_t wakes = 0;
    Progress& p = prog(r, c);
    for (;;) {
      const StepIndex& ix = idx_[p.step];
      const bool reduce = ix.reduces && ix.rank[r].receives && r < n_;
      advance(p);
      if (reduce) {
        p.state = Progress::State::reducing;
        sim_.schedule_after(ix.reduce_time, [this, r, c] {
          enter(r, c);
          wake_next_chunk(r, c);
          maybe_finish();
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

  sim::Simulator& sim_;
  sim::FlowNetwork& net_;
  const topo::Topology& topo_;
  const CollectiveOp op_;
  const Schedule& sched_;
  const FlowOptions opts_;
  sim::FlowNetwork::ClientId client_ = 0;
  std::uint32_t n_ = 0;   // group ranks
  std::uint32_t np_ = 0;  // participants: ranks, then switches
  std::uint32_t chunks_ = 1;
  std::vector<topo::NodeId> switches_;                      // participant n_ + k is switches_[k]
  std::map<std::uint32_t, std::uint32_t> switch_index_;     // switch NodeId -> participant
  Time overhead_;
  double reduce_Bps_ = std::numeric_limits<double>::infinity();
  std::vector<StepIndex> idx_;
  std::vector<Progress> progress_;
  std::unordered_map<std::size_t, std::deque<std::uint32_t>> spill_;  // long early lists
  std::vector<InFlight> inflight_;
  // Buffered sends: per (src, dst) connection with a message on the wire, the slots of the
  // messages issued behind it, in order.
  std::unordered_map<std::uint64_t, std::deque<std::uint32_t>> connection_;
  std::vector<std::uint32_t> free_;
  std::unordered_map<std::int64_t, std::vector<std::uint32_t>> starts_;
  std::vector<std::vector<std::uint32_t>> spare_starts_;
  std::vector<sim::FlowNetwork::StartRequest> requests_;  // scratch of start_bucket
  std::int64_t last_start_ps_ = -1;
  std::vector<std::uint32_t>* last_start_ = nullptr;  // starts_[last_start_ps_] while it exists
  std::size_t remaining_ = 0;
  std::uint64_t transfers_ = 0;
  Time start_ = Time::zero();
  Time finish_ = Time::zero();
  std::function<void(Time)> on_done_;
  bool started_ = false;
  bool done_ = false;
  bool notified_ = false;
};

CollectiveRun::CollectiveRun(sim::Simulator& sim, sim::FlowNetwork& net, const topo::Topology& t, CollectiveOp op,
                             const Schedule& s, FlowOptions opts)
    : impl_(std::make_unique<Impl>(sim, net, t, std::move(op), s, std::move(opts))) {}
CollectiveRun::~CollectiveRun() = default;

void CollectiveRun::start(Time at, std::function<void(Time done)> on_done) { impl_->start(at, std::move(on_done)); }
bool CollectiveRun::started() const { return impl_->started(); }
bool CollectiveRun::done() const { return impl_->done(); }
Time CollectiveRun::start_time() const { return impl_->start_time(); }
Time CollectiveRun::finish_time() const { return impl_->finish_time(); }
std::uint64_t CollectiveRun::transfers() const { return impl_->transfers(); }
std::size_t CollectiveRun::unfinished() const { return impl_->unfinished(); }
sim::FlowNetwork::ClientId CollectiveRun::client() const { return impl_->client(); }

}  // namespace shardsim::coll
