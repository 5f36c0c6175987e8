#include "sim/event_queue.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <utility>

namespace shardsim::sim {

EventQueue::EventQueue() {
  for (auto& level : min_) std::fill(std::begin(level), std::end(level), std::numeric_limits<std::int64_t>::max());
}

void EventQueue::place(Key&& k) {
  if (k.t == last_) {
    now_.push_back(std::move(k));
    return;
  }
  const auto diff = static_cast<std::uint64_t>(k.t ^ last_);
  const int level = (63 - std::countl_zero(diff)) / 8;
  const auto v = static_cast<unsigned>((static_cast<std::uint64_t>(k.t) >> (8 * level)) & 0xffu);
  auto& b = buckets_[level][v];
  if (b.capacity() == 0 && !spare_.empty()) {
    b.swap(spare_.back());
    spare_.pop_back();
  }
  min_[level][v] = std::min(min_[level][v], k.t);
  b.push_back(std::move(k));
  mask_[level][v >> 6] |= 1ull << (v & 63);
}

EventId EventQueue::push(Time t, UniqueFunction fn) {
  if (t.ps() < last_) throw std::logic_error("event queue: push before the last popped time");
  const std::uint64_t seq = next_seq_++;
  place(Key{t.ps(), seq, std::move(fn)});
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

bool EventQueue::lowest_bucket(int& level, unsigned& v) const {
  for (int L = 0; L < kLevels; ++L) {
    for (unsigned w = 0; w < 4; ++w) {
      if (mask_[L][w] != 0) {
        level = L;
        v = 64 * w + static_cast<unsigned>(std::countr_zero(mask_[L][w]));
        return true;
      }
    }
  }
  return false;
}

void EventQueue::settle_front() {
  for (;;) {
    while (head_ < now_.size()) {
      if (!take_cancelled(now_[head_])) return;
      now_[head_].fn.reset();  // cancelled: drop the key and its callback
      ++head_;
    }
    now_.clear();
    head_ = 0;
    int level = 0;
    unsigned v = 0;
    if (!lowest_bucket(level, v)) return;  // empty
    auto& src = buckets_[level][v];
    mask_[level][v >> 6] &= ~(1ull << (v & 63));
    if (level == 0) {
      // A level-0 bucket holds one time value, in sequence order: it becomes the now bucket
      // as it is (a swap, no key moves); the empty now bucket's storage goes back in its place.
      last_ = min_[0][v];
      min_[0][v] = std::numeric_limits<std::int64_t>::max();
      now_.swap(src);
      continue;
    }
    // The minimum may belong to a cancelled event: harmless, its key is dropped at the front
    // of the now bucket and every live event is later still.
    last_ = min_[level][v];
    min_[level][v] = std::numeric_limits<std::int64_t>::max();
    std::vector<Key> moving;
    moving.swap(src);
    for (Key& k : moving) place(std::move(k));  // every key lands at a lower level or now
    moving.clear();
    if (spare_.size() < 64) spare_.push_back(std::move(moving));
    // FIFO ties need the now bucket in sequence order. Buckets stay in sequence order by
    // construction (pushes append increasing sequence numbers; a redistribution fills only
    // empty buckets, since every lower bucket is empty), so this check is cheap and the sort
    // a safeguard.
    auto by_seq = [](const Key& a, const Key& b) { return a.seq < b.seq; };
    if (!std::is_sorted(now_.begin(), now_.end(), by_seq)) std::sort(now_.begin(), now_.end(), by_seq);
  }
}

Time EventQueue::top_time() {
  // Must not move last_ forward: run_until() may stop before this event and let earlier
  // ones be scheduled. Buckets are ordered (level, value), so the first bucket holding a
  // live key holds the earliest live event.
  while (head_ < now_.size() && take_cancelled(now_[head_])) {
    now_[head_].fn.reset();
    ++head_;
  }
  if (head_ < now_.size()) return Time::from_ps(last_);
  for (int L = 0; L < kLevels; ++L) {
    for (unsigned v = 0; v < 256; ++v) {
      if ((mask_[L][v >> 6] & (1ull << (v & 63))) == 0) continue;
      std::int64_t m = std::numeric_limits<std::int64_t>::max();
      for (const Key& k : buckets_[L][v]) {
        if (std::find(cancelled_.begin(), cancelled_.end(), k.seq) == cancelled_.end()) m = std::min(m, k.t);
      }
      if (m != std::numeric_limits<std::int64_t>::max()) return Time::from_ps(m);
    }
  }
  return Time::max();
}

EventQueue::Popped EventQueue::pop() {
  settle_front();
  Key& k = now_[head_++];
  Popped out{Time::from_ps(k.t), k.seq, std::move(k.fn)};
  --live_;
  return out;
}

void EventQueue::reserve(std::size_t n) { now_.reserve(std::min<std::size_t>(n, 1 << 16)); }

}  // namespace shardsim::sim
