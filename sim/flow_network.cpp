#include "sim/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace shardsim::sim {

namespace {

// Ascending sort of flow ids: std::sort below 1024 ids, else an LSD radix sort (three passes
// of 11 bits over the 32-bit ids; stable, so the result is the same sorted sequence). Large
// finish-time buckets (a striped ring's channels finish together) made std::sort a third of
// a 1,024-rank flow step (perf, 2026-12-01).
void sort_ids(std::vector<std::uint32_t>& v) {
  if (v.size() < 1024) {
    std::sort(v.begin(), v.end());
    return;
  }
  thread_local std::vector<std::uint32_t> tmp;
  tmp.resize(v.size());
  std::vector<std::uint32_t>* src = &v;
  std::vector<std::uint32_t>* dst = &tmp;
  for (unsigned shift = 0; shift < 33; shift += 11) {
    std::uint32_t count[2049] = {};
    for (const std::uint32_t x : *src) ++count[((x >> shift) & 2047U) + 1];
    for (std::size_t i = 1; i < 2049; ++i) count[i] += count[i - 1];
    for (const std::uint32_t x : *src) (*dst)[count[(x >> shift) & 2047U]++] = x;
    std::swap(src, dst);
  }
  if (src != &v) v.swap(*src);  // three passes: the result is in tmp
}

}  // namespace

void FlowNetwork::LinkFlows::grow() {
  const std::uint32_t cap = cap_ * 2;
  auto* heap = new FlowId[cap];
  std::copy(begin(), end(), heap);
  if (cap_ > kInline) delete[] heap_;
  heap_ = heap;
  cap_ = cap;
}

FlowNetwork::FlowNetwork(Simulator& sim) : sim_(sim) {
  clients_.emplace_back().state = Client::State::live;  // kDefaultClient
}

FlowNetwork::LinkIndex FlowNetwork::add_link(double capacity_Bps) {
  if (!(capacity_Bps > 0) || !std::isfinite(capacity_Bps)) {
    throw std::invalid_argument("flow network link capacity must be positive and finite");
  }
  links_.emplace_back().capacity = capacity_Bps;
  scratch_.emplace_back();
  return static_cast<LinkIndex>(links_.size() - 1);
}

void FlowNetwork::restride(std::uint32_t stride) {
  std::vector<Hop> hops(flows_.size() * stride);
  for (std::size_t f = 0; f < flows_.size(); ++f) {
    const std::uint32_t n = std::min(flows_[f].hops, stride_);
    std::copy_n(hops_.begin() + static_cast<std::ptrdiff_t>(f * stride_), n,
                hops.begin() + static_cast<std::ptrdiff_t>(f * stride));
  }
  hops_.swap(hops);
  stride_ = stride;
}

inline FlowNetwork::FlowId FlowNetwork::start_one(std::span<const LinkIndex> route, double bytes, std::uint64_t tag) {
  for (LinkIndex l : route) {
    if (l >= links_.size()) throw std::out_of_range("flow network: route names a link that does not exist");
  }
  FlowId id;
  if (!free_flows_.empty()) {
    id = free_flows_.back();
    free_flows_.pop_back();
  } else {
    id = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
    hops_.resize(flows_.size() * stride_);
  }
  const bool zero = route.empty() || !(bytes > 0);
  if (!zero && down_links_ != 0) [[unlikely]] {
    route = route_around(route, tag);
  }
  Flow& f = flows_[id];
  f.remaining = std::max(0.0, bytes);
  f.rate = 0;
  f.last = sim_.now();
  f.tag = tag;
  f.bucket = kNone;
  f.start = sim_.now();
  f.bytes = f.remaining;
  ++active_;
  ++stats_.flows_started;
  if (zero) {
    // Never on a link: no route kept.
    f.hops = 0;
    zero_flows_.push_back(id);
  } else {
    attach(id, route);
    pending_new_.push_back(id);
  }
  return id;
}

void FlowNetwork::attach(FlowId id, std::span<const LinkIndex> route) {
  if (route.size() > stride_) restride(static_cast<std::uint32_t>(route.size()));
  flows_[id].hops = static_cast<std::uint32_t>(route.size());
  Hop* hop = hops_.data() + static_cast<std::size_t>(id) * stride_;
  for (std::size_t i = 0; i < route.size(); ++i) {
    auto& lf = links_[route[i]].flows;
    hop[i] = Hop{route[i], lf.size()};
    lf.push_back(id);
  }
}

inline void FlowNetwork::unlink(FlowId f) {
  for (const Hop& h : route(f)) {
    auto& lf = links_[h.link].flows;
    const FlowId last = lf.back();
    lf[h.pos] = last;
    lf.pop_back();
    if (last != f) {
      for (Hop& o : route(last)) {
        if (o.link == h.link && o.pos == lf.size()) {
          o.pos = h.pos;
          break;
        }
      }
    }
    if (!lf.empty()) mark_dirty(h.link);
  }
}

std::span<const FlowNetwork::LinkIndex> FlowNetwork::reroute(std::span<const LinkIndex> route, std::uint64_t tag) {
  if (!rerouter_) {
    throw std::logic_error(fmt::format("flow network: a flow (tag {}) crosses a down link and there is no rerouter", tag));
  }
  reroute_.clear();
  rerouter_(route, tag, reroute_);
  if (reroute_.empty()) throw std::logic_error(fmt::format("flow network: the rerouter gave flow (tag {}) an empty route", tag));
  for (const LinkIndex l : reroute_) {
    if (l >= links_.size() || !(links_[l].capacity > 0)) {
      throw std::logic_error(fmt::format("flow network: the rerouter gave flow (tag {}) link {}, which {}", tag, l,
                                         l >= links_.size() ? "does not exist" : "is down"));
    }
  }
  ++stats_.flows_rerouted;
  return reroute_;
}

std::span<const FlowNetwork::LinkIndex> FlowNetwork::route_around(std::span<const LinkIndex> route, std::uint64_t tag) {
  for (const LinkIndex l : route) {
    if (!(links_[l].capacity > 0)) return reroute(route, tag);
  }
  return route;
}

void FlowNetwork::set_capacity(LinkIndex l, double capacity_Bps) {
  if (l >= links_.size()) throw std::out_of_range(fmt::format("flow network: link {} does not exist", l));
  if (!(capacity_Bps >= 0) || !std::isfinite(capacity_Bps)) {
    throw std::invalid_argument(fmt::format("flow network: capacity {} of link {} is not >= 0 and finite", capacity_Bps, l));
  }
  Link& lk = links_[l];
  if (capacity_Bps == lk.capacity) return;
  if (capacity_Bps == 0 && !lk.flows.empty() && !rerouter_) {
    throw std::logic_error(fmt::format("flow network: link {} down with {} flows on it and no rerouter", l, lk.flows.size()));
  }
  const bool was_down = !(lk.capacity > 0);
  lk.capacity = capacity_Bps;
  if (capacity_Bps == 0) {
    ++down_links_;
  } else if (was_down) {
    --down_links_;
  }
  if (lk.flows.empty()) return;
  if (capacity_Bps > 0) {
    mark_dirty(l);
  } else {
    // The link's list shrinks as its flows move: take them from a copy, in list order.
    const std::vector<FlowId> moving(lk.flows.begin(), lk.flows.end());
    for (const FlowId f : moving) move_flow(f);
  }
  request_settle();
}

void FlowNetwork::move_flow(FlowId f) {
  Flow& fl = flows_[f];
  const Time now = sim_.now();
  // Its bytes up to now went at its rate; from now it is a new flow to rate (pending_new_),
  // unless it is one already (started at this instant, not yet settled).
  const bool pending = std::find(pending_new_.begin(), pending_new_.end(), f) != pending_new_.end();
  if (fl.rate > 0) fl.remaining = std::max(0.0, fl.remaining - fl.rate * (now - fl.last).to_seconds());
  fl.last = now;
  fl.rate = 0;
  if (fl.bucket != kNone) unschedule(f);
  std::vector<LinkIndex> old;
  old.reserve(fl.hops);
  for (const Hop& h : route(f)) old.push_back(h.link);
  unlink(f);
  attach(f, reroute(old, fl.tag));
  if (!pending) pending_new_.push_back(f);
}


FlowNetwork::FlowId FlowNetwork::start(ClientId c, std::span<const LinkIndex> route, double bytes, std::uint64_t tag) {
  Client& cl = live_client(c);
  if (tag > kMaxTag) throw std::out_of_range(fmt::format("flow network: tag {} above kMaxTag", tag));
  const FlowId id = start_one(route, bytes, std::uint64_t{c} << kTagBits | tag);
  ++cl.flows;
  if (!settle_pending_) request_settle();
  return id;
}

// The settle request comes before the flows rather than with the first: starting a flow
// schedules nothing, so the settle event gets the same sequence number either way.
void FlowNetwork::start(ClientId c, std::span<const StartRequest> flows) {
  Client& cl = live_client(c);
  if (!flows.empty() && !settle_pending_) request_settle();
  const std::uint64_t hi = std::uint64_t{c} << kTagBits;
  // Tags are checked before any flow starts (one OR over them), flows counted once.
  std::uint64_t tags = 0;
  for (const StartRequest& r : flows) tags |= r.tag;
  if (tags > kMaxTag) {
    for (const StartRequest& r : flows) {
      if (r.tag > kMaxTag) throw std::out_of_range(fmt::format("flow network: tag {} above kMaxTag", r.tag));
    }
  }
  const std::size_t active = active_;
  try {
    for (const StartRequest& r : flows) start_one(r.route, r.bytes, hi | r.tag);
  } catch (...) {
    cl.flows += active_ - active;  // the flows before a bad route have started
    throw;
  }
  cl.flows += flows.size();
}

void FlowNetwork::request_settle() {
  if (settle_pending_) return;
  settle_pending_ = true;
  sim_.schedule_after(Time::zero(), [this] { settle(); });
}

void FlowNetwork::mark_dirty(LinkIndex l) { dirty_links_.push_back(l); }

void FlowNetwork::settle() {
  settle_pending_ = false;
  if (!pending_new_.empty() || !dirty_links_.empty()) {
    // Seeds: links of new flows and links that lost a flow; the solve covers the union of
    // their components. A new flow alone on every link of its route is a component by
    // itself: progressive filling gives it its route's smallest capacity, so it is rated
    // here directly (same arithmetic, same result) and only the others seed the solve.
    // Collective steps whose transfers use disjoint links (a ring on a torus) take this path.
    const Time now = sim_.now();
    bool singles = false;
    for (FlowId f : pending_new_) {
      Flow& fl = flows_[f];
      double cap = std::numeric_limits<double>::infinity();
      bool alone = true;
      const auto hops = route(f);
      for (const Hop& h : hops) {
        const Link& lk = links_[h.link];
        if (lk.flows.size() != 1) {
          alone = false;
          break;
        }
        cap = std::min(cap, lk.capacity);
      }
      if (!alone) {
        for (const Hop& h : hops) dirty_links_.push_back(h.link);
        continue;
      }
      singles = true;
      ++stats_.flows_resolved;
      // A completion solve at this instant may have rated it already (it reaches flows on
      // links that lost one): then it is rated again here, from the same state.
      if (fl.rate > 0) fl.remaining = std::max(0.0, fl.remaining - fl.rate * (now - fl.last).to_seconds());
      fl.last = now;
      fl.rate = cap;
      const std::int64_t finish = (now + Time::ceil_seconds(fl.remaining / cap)).ps();
      if (fl.bucket != kNone) {
        if (finish == buckets_[fl.bucket].finish_ps) continue;
        unschedule(f);
      }
      schedule_completion(f, finish);
    }
    if (singles) ++stats_.solves;
    pending_new_.clear();
    solve_components();
    dirty_links_.clear();
  }
  arm_timer();
  if (zero_flows_.empty()) return;
  std::vector<std::uint64_t> tags;
  std::uint64_t tags_or = 0, tags_and = ~std::uint64_t{0};  // see on_timer
  tags.reserve(zero_flows_.size());
  for (FlowId f : zero_flows_) {
    const Flow& fl = flows_[f];
    on_flow_done(fl.tag, fl.start, sim_.now(), fl.bytes);
    tags_or |= fl.tag;
    tags_and &= fl.tag;
    tags.push_back(fl.tag);
    --active_;
    ++stats_.flows_completed;
    free_flows_.push_back(f);
  }
  zero_flows_.clear();
  dispatch(tags, ((tags_or ^ tags_and) & ~kMaxTag) == 0);
}

void FlowNetwork::solve_components() {
  ++epoch_;
  component_.clear();
  comp_links_.clear();
  for (LinkIndex l : dirty_links_) {
    if (scratch_[l].epoch != epoch_) {
      scratch_[l].epoch = epoch_;
      comp_links_.push_back(l);
    }
  }
  // Breadth-first over link -> flows -> links.
  for (std::size_t i = 0; i < comp_links_.size(); ++i) {
    const LinkIndex l = comp_links_[i];
    for (FlowId f : links_[l].flows) {
      Flow& fl = flows_[f];
      if (fl.epoch == epoch_) continue;
      fl.epoch = epoch_;
      component_.push_back(f);
      for (const Hop& h : route(f)) {
        if (scratch_[h.link].epoch != epoch_) {
          scratch_[h.link].epoch = epoch_;
          comp_links_.push_back(h.link);
        }
      }
    }
  }
  if (component_.empty()) return;
  ++stats_.solves;
  stats_.flows_resolved += component_.size();

  const Time now = sim_.now();
  for (FlowId f : component_) {
    Flow& fl = flows_[f];
    if (fl.rate > 0) {
      fl.remaining = std::max(0.0, fl.remaining - fl.rate * (now - fl.last).to_seconds());
    }
    fl.last = now;
    fl.rate = -1.0;  // unfrozen
  }
  for (LinkIndex l : comp_links_) {
    LinkScratch& sc = scratch_[l];
    sc.cap_left = links_[l].capacity;
    sc.unfrozen = links_[l].flows.size();
  }
  std::size_t unfrozen = component_.size();
  while (unfrozen > 0) {
    double min_share = std::numeric_limits<double>::infinity();
    for (LinkIndex l : comp_links_) {
      const LinkScratch& sc = scratch_[l];
      if (sc.unfrozen > 0) min_share = std::min(min_share, std::max(0.0, sc.cap_left) / sc.unfrozen);
    }
    const double threshold = min_share * (1.0 + 1e-9);
    for (LinkIndex l : comp_links_) {
      const LinkScratch& sc = scratch_[l];
      if (sc.unfrozen == 0 || std::max(0.0, sc.cap_left) / sc.unfrozen > threshold) continue;
      for (FlowId f : links_[l].flows) {
        Flow& fl = flows_[f];
        if (fl.rate >= 0) continue;
        fl.rate = min_share;
        --unfrozen;
        for (const Hop& h : route(f)) {
          scratch_[h.link].cap_left -= min_share;
          --scratch_[h.link].unfrozen;
        }
      }
    }
  }
  for (FlowId f : component_) {
    Flow& fl = flows_[f];
    const double secs = fl.rate > 0 ? fl.remaining / fl.rate : 0.0;
    const std::int64_t finish = (now + Time::ceil_seconds(secs)).ps();
    if (fl.bucket != kNone) {
      if (finish == buckets_[fl.bucket].finish_ps) continue;
      unschedule(f);
    }
    schedule_completion(f, finish);
  }
}

void FlowNetwork::arm_timer() {
  if (heap_.empty()) {
    if (timer_armed_) sim_.cancel(timer_);
    timer_armed_ = false;
    return;
  }
  const std::int64_t t = buckets_[heap_.front()].finish_ps;
  if (timer_armed_ && t == timer_ps_) return;
  if (timer_armed_) sim_.cancel(timer_);
  timer_armed_ = true;
  timer_ps_ = t;
  timer_ = sim_.schedule_at(Time::from_ps(t), [this] { on_timer(); });
}

inline void FlowNetwork::detach(FlowId f) {
  Flow& fl = flows_[f];
  unlink(f);
  fl.rate = 0;
  --active_;
  ++stats_.flows_completed;
  free_flows_.push_back(f);
}

void FlowNetwork::on_timer() {
  timer_armed_ = false;
  const std::int64_t now = sim_.now().ps();
  std::vector<std::uint64_t> tags = std::move(done_tags_);
  tags.clear();
  const bool signal = !on_flow_done.empty();
  // The client bits of all tags are equal iff their OR and their AND agree there.
  std::uint64_t tags_or = 0, tags_and = ~std::uint64_t{0};
  while (!heap_.empty() && buckets_[heap_.front()].finish_ps <= now) {
    const std::uint32_t b = heap_.front();
    auto& due = buckets_[b].flows;
    // Flow-id order within one finish time. Flows enter a bucket in rating order; a step
    // whose flows start together often has them in (reverse) id order already, since ids come
    // back from the free list in the order the previous step released them.
    if (std::is_sorted(due.begin(), due.end(), std::greater<>())) {
      std::reverse(due.begin(), due.end());
    } else if (!std::is_sorted(due.begin(), due.end())) {
      sort_ids(due);
    }
    for (FlowId f : due) {
      Flow& fl = flows_[f];
      fl.bucket = kNone;
      if (signal) on_flow_done(fl.tag, fl.start, sim_.now(), fl.bytes);
      tags_or |= fl.tag;
      tags_and &= fl.tag;
      tags.push_back(fl.tag);
      detach(f);
    }
    due.clear();
    release_bucket(b);
  }
  if (!dirty_links_.empty()) {
    solve_components();
    dirty_links_.clear();
  }
  arm_timer();
  dispatch(tags, ((tags_or ^ tags_and) & ~kMaxTag) == 0);
  tags.clear();
  done_tags_ = std::move(tags);
}


std::uint32_t FlowNetwork::bucket_for(std::int64_t finish_ps) {
  std::uint32_t b;
  if (auto it = bucket_at_.find(finish_ps); it != bucket_at_.end()) {
    b = it->second;
  } else {
    if (!free_buckets_.empty()) {
      b = free_buckets_.back();
      free_buckets_.pop_back();
    } else {
      b = static_cast<std::uint32_t>(buckets_.size());
      buckets_.emplace_back();
    }
    buckets_[b].finish_ps = finish_ps;
    bucket_at_.emplace(finish_ps, b);
    buckets_[b].heap_pos = static_cast<std::uint32_t>(heap_.size());
    heap_.push_back(b);
    heap_sift_up(buckets_[b].heap_pos);
  }
  last_bucket_ = b;
  return b;
}

void FlowNetwork::unschedule(FlowId f) {
  Flow& fl = flows_[f];
  const std::uint32_t b = fl.bucket;
  auto& v = buckets_[b].flows;
  const FlowId last = v.back();
  v[fl.bucket_pos] = last;
  flows_[last].bucket_pos = fl.bucket_pos;
  v.pop_back();
  fl.bucket = kNone;
  if (v.empty()) release_bucket(b);
}

void FlowNetwork::release_bucket(std::uint32_t b) {
  Bucket& bk = buckets_[b];
  const std::uint32_t i = bk.heap_pos;
  const std::uint32_t last = heap_.back();
  heap_.pop_back();
  bk.heap_pos = kNone;
  if (last != b) {
    heap_[i] = last;
    buckets_[last].heap_pos = i;
    heap_sift_up(i);
    heap_sift_down(buckets_[last].heap_pos);
  }
  bucket_at_.erase(bk.finish_ps);
  free_buckets_.push_back(b);
  if (last_bucket_ == b) last_bucket_ = kNone;
}

// Bucket finish times are distinct, so (finish time) alone is a total order.
void FlowNetwork::heap_sift_up(std::uint32_t i) {
  const std::uint32_t b = heap_[i];
  const std::int64_t t = buckets_[b].finish_ps;
  while (i > 0) {
    const std::uint32_t parent = (i - 1) / 2;
    if (buckets_[heap_[parent]].finish_ps <= t) break;
    heap_[i] = heap_[parent];
    buckets_[heap_[i]].heap_pos = i;
    i = parent;
  }
  heap_[i] = b;
  buckets_[b].heap_pos = i;
}

void FlowNetwork::heap_sift_down(std::uint32_t i) {
  const auto n = static_cast<std::uint32_t>(heap_.size());
  const std::uint32_t b = heap_[i];
  const std::int64_t t = buckets_[b].finish_ps;
  auto at = [this](std::uint32_t k) { return buckets_[heap_[k]].finish_ps; };
  for (;;) {
    const std::uint32_t l = 2 * i + 1;
    if (l >= n) break;
    std::uint32_t best = l;
    if (l + 1 < n && at(l + 1) < at(l)) best = l + 1;
    if (at(best) >= t) break;
    heap_[i] = heap_[best];
    buckets_[heap_[i]].heap_pos = i;
    i = best;
  }
  heap_[i] = b;
  buckets_[b].heap_pos = i;
}

}  // namespace shardsim::sim
