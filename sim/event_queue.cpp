#include "sim/event_queue.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <utility>

namespace shardsim::sim {

int EventQueue::bucket_of(std::int64_t t) const {
  if (t == last_) return 0;
  const auto diff = static_cast<std::uint64_t>(t) ^ static_cast<std::uint64_t>(last_);
  return 64 - std::countl_zero(diff);
}

EventId EventQueue::push(Time t, UniqueFunction fn) {
  if (t.ps() < last_) throw std::logic_error("event queue: push before the last popped time");
  const std::uint64_t seq = next_seq_++;
  buckets_[bucket_of(t.ps())].push_back(Key{t.ps(), seq, std::move(fn)});
  ++live_;
  return EventId{seq};
}

bool EventQueue::cancel(EventId id) {
  if (id.sequence >= next_seq_) return false;
  if (std::find(cancelled_.begin(), cancelled_.end(), id.sequence) != cancelled_.end()) return false;
  cancelled_.push_back(id.sequence);
  --live_;
  return true;
}

bool EventQueue::take_cancelled(const Key& k) {
  if (cancelled_.empty()) return false;
  auto it = std::find(cancelled_.begin(), cancelled_.end(), k.seq);
  if (it == cancelled_.end()) return false;
  *it = cancelled_.back();
  cancelled_.pop_back();
  return true;
}

void EventQueue::settle_front() {
  auto& b0 = buckets_[0];
  for (;;) {
    while (head_ < b0.size()) {
      if (!take_cancelled(b0[head_])) return;
      b0[head_].fn.reset();  // cancelled: drop the key and its callback
      ++head_;
    }
    b0.clear();
    head_ = 0;
    int i = 1;
    while (i < kBuckets && buckets_[i].empty()) ++i;
    if (i == kBuckets) return;  // empty
    auto& src = buckets_[i];
    // The minimum may belong to a cancelled event: harmless, its key is dropped at the front
    // of bucket 0 and every live event is later still.
    std::int64_t m = std::numeric_limits<std::int64_t>::max();
    for (const Key& k : src) m = std::min(m, k.t);
    last_ = m;
    std::vector<Key> moving;
    moving.swap(src);
    for (Key& k : moving) buckets_[bucket_of(k.t)].push_back(std::move(k));
    moving.clear();
    src.swap(moving);  // keep the capacity; every key went to a lower bucket
    // Keys redistributed into bucket 0 arrived out of sequence order: restore FIFO ties.
    std::sort(b0.begin(), b0.end(), [](const Key& a, const Key& b) { return a.seq < b.seq; });
  }
}

Time EventQueue::top_time() {
  // Must not move last_ forward: run_until() may stop before this event and let earlier
  // ones be scheduled. Bucket 0 holds keys equal to last_; otherwise scan the first bucket
  // that holds a live key.
  auto& b0 = buckets_[0];
  while (head_ < b0.size() && take_cancelled(b0[head_])) {
    b0[head_].fn.reset();
    ++head_;
  }
  if (head_ < b0.size()) return Time::from_ps(last_);
  std::int64_t m = std::numeric_limits<std::int64_t>::max();
  for (int i = 1; i < kBuckets && m == std::numeric_limits<std::int64_t>::max(); ++i) {
    for (const Key& k : buckets_[i]) {
      if (std::find(cancelled_.begin(), cancelled_.end(), k.seq) == cancelled_.end()) m = std::min(m, k.t);
    }
  }
  return Time::from_ps(m);
}

EventQueue::Popped EventQueue::pop() {
  settle_front();
  Key& k = buckets_[0][head_++];
  Popped out{Time::from_ps(k.t), k.seq, std::move(k.fn)};
  --live_;
  return out;
}

void EventQueue::reserve(std::size_t n) { buckets_[0].reserve(n); }

}  // namespace shardsim::sim
