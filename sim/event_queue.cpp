#include "sim/event_queue.hpp"

#include <utility>

namespace shardsim::sim {

EventId EventQueue::push(Time t, UniqueFunction fn) {
  std::uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.fn = std::move(fn);
  s.live = true;
  heap_.push_back(Key{t.ps(), next_seq_++, slot});
  sift_up(heap_.size() - 1);
  ++live_;
  return EventId{slot, s.generation};
}

bool EventQueue::cancel(EventId id) {
  if (id.slot >= slots_.size()) return false;
  Slot& s = slots_[id.slot];
  if (!s.live || s.generation != id.generation) return false;
  s.live = false;
  s.fn.reset();
  --live_;
  return true;
}

void EventQueue::drop_dead() {
  while (!heap_.empty() && !slots_[heap_.front().slot].live) {
    const std::uint32_t slot = heap_.front().slot;
    ++slots_[slot].generation;
    free_.push_back(slot);
    pop_top();
  }
}

Time EventQueue::top_time() {
  drop_dead();
  return Time::from_ps(heap_.front().t);
}

EventQueue::Popped EventQueue::pop() {
  drop_dead();
  const Key k = heap_.front();
  pop_top();
  Slot& s = slots_[k.slot];
  Popped out{Time::from_ps(k.t), k.seq, std::move(s.fn)};
  s.live = false;
  ++s.generation;
  free_.push_back(k.slot);
  --live_;
  return out;
}

void EventQueue::reserve(std::size_t n) {
  heap_.reserve(n);
  slots_.reserve(n);
  free_.reserve(n);
}

void EventQueue::pop_top() {
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0);
}

void EventQueue::sift_up(std::size_t i) {
  const Key k = heap_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / 4;
    if (!before(k, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = k;
}

void EventQueue::sift_down(std::size_t i) {
  const std::size_t n = heap_.size();
  const Key k = heap_[i];
  for (;;) {
    const std::size_t first = 4 * i + 1;
    if (first >= n) break;
    std::size_t best = first;
    const std::size_t last = first + 4 < n ? first + 4 : n;
    for (std::size_t c = first + 1; c < last; ++c) {
      if (before(heap_[c], heap_[best])) best = c;
    }
    if (!before(heap_[best], k)) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = k;
}

}  // namespace shardsim::sim
