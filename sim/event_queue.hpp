#pragma once
// Pending events ordered by (time, insertion sequence): a total, reproducible order in which
// events at the same time run first-in first-out (ns-3 EventKey{ts, uid}; OMNeT++ cevent.cc).
//
// Structure: a multi-level radix heap (Ahuja, Mehlhorn, Orlin and Tarjan 1990, "Faster
// algorithms for the shortest path problem", JACM 37(2), with radix 256 instead of 2) over the
// int64 picosecond time. Simulated time never goes backwards, so keys are monotone. A key
// differing from the last popped time `last_` first at byte L (from the top) with value v
// lives in bucket (L, v); keys equal to last_ live in the "now" bucket, in sequence order
// (FIFO ties). Pop takes the now bucket; when it is empty, the lowest non-empty bucket
// (found by a 256-bit occupancy mask per level) gives the new last_ (its minimum) and is
// redistributed into lower levels. A key moves at most 8 times, in practice
// ceil(log256(spread of pending times)) times (3 for microsecond spreads), with sequential
// memory access; a binary or 4-ary heap of 1M keys misses cache on every level.
// Callbacks travel with their keys (relocated by memcpy when trivially copyable).
// Cancel is lazy: the sequence number goes into a small set and the key is dropped when it
// reaches the front; while nothing is cancelled, pop touches only bucket memory.
// Complexity: push O(1), pop O(1) amortised (O(8) moves per key at most).
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
  EventQueue();
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
  static constexpr int kLevels = 8;
  /// Puts a key in the now bucket (t == last_) or in bucket (level of the highest byte where
  /// t differs from last_, value of t's byte there).
  void place(Key&& k);
  /// The lowest non-empty bucket; false when every bucket is empty.
  bool lowest_bucket(int& level, unsigned& v) const;
  /// Makes buckets_[0] non-empty with a live key at head_ (precondition: live_ > 0).
  void settle_front();
  /// True (and forgets it) if the key was cancelled.
  bool take_cancelled(const Key& k);

  std::vector<Key> now_;   // keys equal to last_, in sequence order
  std::size_t head_ = 0;   // next key of now_
  std::vector<Key> buckets_[kLevels][256];
  std::int64_t min_[kLevels][256];       // smallest time in buckets_[L][v], kept on insert
  std::uint64_t mask_[kLevels][4] = {};  // occupancy of buckets_[L][v]
  // Emptied bucket storage, handed to the next bucket that starts from nothing: a bucket of a
  // high level is refilled only when time reaches its range again, so without this every new
  // range would grow fresh memory (page faults) while old buffers sit idle.
  std::vector<std::vector<Key>> spare_;
  std::int64_t last_ = 0;  // Simulator time starts at 0 and never goes back
  std::vector<std::uint64_t> cancelled_;  // sequence numbers, unsorted (few)
  std::uint64_t next_seq_ = 0;
  std::size_t live_ = 0;
};

}  // namespace shardsim::sim
