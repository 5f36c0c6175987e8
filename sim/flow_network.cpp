#include "sim/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace shardsim::sim {

FlowNetwork::LinkIndex FlowNetwork::add_link(double capacity_Bps) {
  if (!(capacity_Bps > 0) || !std::isfinite(capacity_Bps)) {
    throw std::invalid_argument("flow network link capacity must be positive and finite");
  }
  links_.push_back(Link{capacity_Bps, {}, 0, 0, 0});
  return static_cast<LinkIndex>(links_.size() - 1);
}

FlowNetwork::FlowId FlowNetwork::start(std::span<const LinkIndex> route, double bytes, std::uint64_t tag) {
  FlowId id;
  if (!free_flows_.empty()) {
    id = free_flows_.back();
    free_flows_.pop_back();
  } else {
    id = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
  }
  Flow& f = flows_[id];
  f.route.assign(route.begin(), route.end());
  f.pos.resize(route.size());
  f.bytes = f.remaining = std::max(0.0, bytes);
  f.rate = 0;
  f.last = f.start = sim_.now();
  f.tag = tag;
  f.bucket = kNone;
  f.active = true;
  ++active_;
  ++stats_.flows_started;
  if (route.empty() || !(bytes > 0)) {
    zero_flows_.push_back(id);
  } else {
    for (std::size_t i = 0; i < route.size(); ++i) {
      auto& lf = links_.at(route[i]).flows;
      f.pos[i] = static_cast<std::uint32_t>(lf.size());
      lf.push_back(id);
    }
    pending_new_.push_back(id);
  }
  request_settle();
  return id;
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
      for (LinkIndex l : fl.route) {
        const Link& lk = links_[l];
        if (lk.flows.size() != 1) {
          alone = false;
          break;
        }
        cap = std::min(cap, lk.capacity);
      }
      if (!alone) {
        for (LinkIndex l : fl.route) dirty_links_.push_back(l);
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
        if (finish == fl.finish_ps) continue;
        unschedule(f);
      }
      fl.finish_ps = finish;
      schedule_completion(f);
    }
    if (singles) ++stats_.solves;
    pending_new_.clear();
    solve_components();
    dirty_links_.clear();
  }
  arm_timer();
  if (zero_flows_.empty()) return;
  std::vector<std::uint64_t> tags;
  tags.reserve(zero_flows_.size());
  for (FlowId f : zero_flows_) {
    Flow& fl = flows_[f];
    on_flow_done(fl.tag, fl.start, sim_.now(), fl.bytes);
    tags.push_back(fl.tag);
    fl.active = false;
    --active_;
    ++stats_.flows_completed;
    free_flows_.push_back(f);
  }
  zero_flows_.clear();
  if (on_complete_) {
    for (auto t : tags) on_complete_(t);
  }
}

void FlowNetwork::solve_components() {
  ++epoch_;
  component_.clear();
  comp_links_.clear();
  for (LinkIndex l : dirty_links_) {
    if (links_[l].epoch != epoch_) {
      links_[l].epoch = epoch_;
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
      for (LinkIndex l2 : fl.route) {
        if (links_[l2].epoch != epoch_) {
          links_[l2].epoch = epoch_;
          comp_links_.push_back(l2);
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
    Link& lk = links_[l];
    lk.cap_left = lk.capacity;
    lk.unfrozen = static_cast<std::uint32_t>(lk.flows.size());
  }
  std::size_t unfrozen = component_.size();
  while (unfrozen > 0) {
    double min_share = std::numeric_limits<double>::infinity();
    for (LinkIndex l : comp_links_) {
      const Link& lk = links_[l];
      if (lk.unfrozen > 0) min_share = std::min(min_share, std::max(0.0, lk.cap_left) / lk.unfrozen);
    }
    const double threshold = min_share * (1.0 + 1e-9);
    for (LinkIndex l : comp_links_) {
      Link& lk = links_[l];
      if (lk.unfrozen == 0 || std::max(0.0, lk.cap_left) / lk.unfrozen > threshold) continue;
      for (FlowId f : lk.flows) {
        Flow& fl = flows_[f];
        if (fl.rate >= 0) continue;
        fl.rate = min_share;
        --unfrozen;
        for (LinkIndex l2 : fl.route) {
          links_[l2].cap_left -= min_share;
          --links_[l2].unfrozen;
        }
      }
    }
  }
  for (FlowId f : component_) {
    Flow& fl = flows_[f];
    const double secs = fl.rate > 0 ? fl.remaining / fl.rate : 0.0;
    const std::int64_t finish = (now + Time::ceil_seconds(secs)).ps();
    if (fl.bucket != kNone && finish == fl.finish_ps) continue;
    if (fl.bucket != kNone) unschedule(f);
    fl.finish_ps = finish;
    schedule_completion(f);
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

void FlowNetwork::on_timer() {
  timer_armed_ = false;
  const std::int64_t now = sim_.now().ps();
  std::vector<std::uint64_t> tags = std::move(done_tags_);
  tags.clear();
  while (!heap_.empty() && buckets_[heap_.front()].finish_ps <= now) {
    const std::uint32_t b = heap_.front();
    auto& due = buckets_[b].flows;
    std::sort(due.begin(), due.end());  // flow-id order within one finish time
    for (FlowId f : due) {
      Flow& fl = flows_[f];
      fl.bucket = kNone;
      on_flow_done(fl.tag, fl.start, sim_.now(), fl.bytes);
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
  if (on_complete_) {
    for (auto t : tags) on_complete_(t);
  }
  tags.clear();
  done_tags_ = std::move(tags);
}

void FlowNetwork::detach(FlowId f) {
  Flow& fl = flows_[f];
  for (std::size_t i = 0; i < fl.route.size(); ++i) {
    const LinkIndex l = fl.route[i];
    auto& lf = links_[l].flows;
    const std::uint32_t p = fl.pos[i];
    const FlowId last = lf.back();
    lf[p] = last;
    lf.pop_back();
    if (last != f) {
      Flow& other = flows_[last];
      for (std::size_t j = 0; j < other.route.size(); ++j) {
        if (other.route[j] == l && other.pos[j] == lf.size()) {
          other.pos[j] = p;
          break;
        }
      }
    }
    if (!lf.empty()) mark_dirty(l);
  }
  fl.active = false;
  fl.rate = 0;
  --active_;
  ++stats_.flows_completed;
  free_flows_.push_back(f);
}

void FlowNetwork::schedule_completion(FlowId f) {
  Flow& fl = flows_[f];
  std::uint32_t b;
  if (last_bucket_ != kNone && buckets_[last_bucket_].heap_pos != kNone &&
      buckets_[last_bucket_].finish_ps == fl.finish_ps) {
    b = last_bucket_;
  } else if (auto it = bucket_at_.find(fl.finish_ps); it != bucket_at_.end()) {
    b = it->second;
  } else {
    if (!free_buckets_.empty()) {
      b = free_buckets_.back();
      free_buckets_.pop_back();
    } else {
      b = static_cast<std::uint32_t>(buckets_.size());
      buckets_.emplace_back();
    }
    buckets_[b].finish_ps = fl.finish_ps;
    bucket_at_.emplace(fl.finish_ps, b);
    buckets_[b].heap_pos = static_cast<std::uint32_t>(heap_.size());
    heap_.push_back(b);
    heap_sift_up(buckets_[b].heap_pos);
  }
  last_bucket_ = b;
  fl.bucket = b;
  fl.bucket_pos = static_cast<std::uint32_t>(buckets_[b].flows.size());
  buckets_[b].flows.push_back(f);
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
