#pragma once
// Pending events ordered by (time, insertion sequence): a total, reproducible order in which
// events at the same time run first-in first-out (ns-3 EventKey{ts, uid}; OMNeT++ cevent.cc).
//
// Structure: a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan 1990, "Faster algorithms for
// the shortest path problem", JACM 37(2)) over the int64 picosecond time. Simulated time never
// goes backwards, so keys are monotone: bucket i holds keys whose highest bit differing from
// the last popped time is bit i-1 (bucket 0: equal to it). Push appends to a bucket; pop
// takes bucket 0 in sequence order, else finds the minimum of the first non-empty bucket and
// redistributes that bucket downwards. Every key moves down at most 64 times, so push and pop
// are O(1) amortised plus O(64) per redistribution, with sequential memory access (a binary
// or 4-ary heap of 1M keys misses cache on every level; see docs/architecture.md for the
// measured ratio). Bucket 0 is kept in insertion-sequence order, which gives FIFO ties.
// Cancel is lazy: the sequence number goes into a small set and the key is dropped when it
// reaches the front; while nothing is cancelled, pop touches only bucket memory.
// Precondition: push(t) with t >= the time of the last popped event (throws otherwise).
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "sim/time.hpp"
#include "sim/unique_function.hpp"

namespace shardsim::sim {

/// Handle to a scheduled event: its insertion sequence number, unique per queue.
struct EventId {
  std::uint64_t sequence = ~0ull;
};

class EventQueue {
 public:
  EventId push(Time t, UniqueFunction fn);
  /// Cancels a pending event. Precondition: the event has not run yet (callers that cancel
  /// track this, as FlowNetwork does with its armed timer); returns false if the id was
  /// already cancelled or never issued.
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
  // The callback travels with its key (moved by memcpy for trivially copyable lambdas), so
  // a pop reads one sequential bucket instead of a random slot of a large pool.
  struct Key {
    std::int64_t t;
    std::uint64_t seq;
    UniqueFunction fn;
  };
  static constexpr int kBuckets = 65;
  [[nodiscard]] int bucket_of(std::int64_t t) const;
  /// Makes buckets_[0] non-empty with a live key at head_ (precondition: live_ > 0).
  void settle_front();
  /// True (and forgets it) if the key was cancelled.
  bool take_cancelled(const Key& k);

  std::vector<Key> buckets_[kBuckets];
  std::size_t head_ = 0;  // next key of buckets_[0]
  std::int64_t last_ = std::numeric_limits<std::int64_t>::min();
  std::vector<std::uint64_t> cancelled_;  // sequence numbers, unsorted (few)
  std::uint64_t next_seq_ = 0;
  std::size_t live_ = 0;
};

}  // namespace shardsim::sim
