#pragma once
// Pending events ordered by (time, insertion sequence): a total, reproducible order in which
// events at the same time run first-in first-out (ns-3 EventKey{ts, uid}; OMNeT++ cevent.cc).
//
// Structure: a 4-ary min-heap of 24-byte keys in one vector; callbacks live in a slot pool
// reused through a free list, so steady-state push/pop allocate nothing.
// Complexity: push O(log4 n), pop O(log4 n), cancel O(1) (lazy: the key stays in the heap
// and is skipped when it reaches the top).
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/time.hpp"
#include "sim/unique_function.hpp"

namespace shardsim::sim {

/// Handle to a scheduled event; valid until the event runs or is cancelled.
struct EventId {
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;
};

class EventQueue {
 public:
  EventId push(Time t, UniqueFunction fn);
  /// Cancels a pending event; returns false if it already ran or was cancelled.
  bool cancel(EventId id);
  [[nodiscard]] bool empty() const { return live_ == 0; }
  [[nodiscard]] std::size_t size() const { return live_; }
  /// Time of the earliest live event. Precondition: !empty().
  [[nodiscard]] Time top_time();
  struct Popped {
    Time time;
    std::uint64_t sequence;
    UniqueFunction fn;
  };
  /// Removes and returns the earliest live event. Precondition: !empty().
  Popped pop();
  void reserve(std::size_t n);

 private:
  struct Key {
    std::int64_t t;
    std::uint64_t seq;
    std::uint32_t slot;
  };
  struct Slot {
    UniqueFunction fn;
    std::uint32_t generation = 0;
    bool live = false;
  };
  static bool before(const Key& a, const Key& b) { return a.t < b.t || (a.t == b.t && a.seq < b.seq); }
  void sift_up(std::size_t i);
  void sift_down(std::size_t i);
  void pop_top();
  void drop_dead();

  std::vector<Key> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;
  std::uint64_t next_seq_ = 0;
  std::size_t live_ = 0;
};

}  // namespace shardsim::sim
