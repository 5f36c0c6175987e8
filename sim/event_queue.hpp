#pragma once
// Pending events ordered by (time, insertion sequence): a total, reproducible order in which
// events at the same time run first-in first-out (ns-3 EventKey{ts, uid}; OMNeT++ cevent.cc).
//
// Structure: a multi-level radix heap (Ahuja, Mehlhorn, Orlin and Tarjan 1990, "Faster
// algorithms for the shortest path problem", JACM 37(2), with radix 256 instead of 2) over the
// int64 picosecond time, whose lowest level is served as a sorted run. Simulated time never
// goes backwards, so keys are monotone. A key differing from the reference time `last_` first
// at byte L (from the top) with value v lives in bucket (L, v); bucket (0, v) holds one time
// value, bucket (1, v) a range of 256 ps. A 256-bit occupancy mask per level finds the lowest
// non-empty bucket. When nothing is left at the front, the lowest bucket is taken: at level
// >= 3 it is redistributed into lower levels around its minimum (the new last_); at level
// <= 2 it becomes the run: a stable counting sort of its keys' indices on the low 16 bits (two
// passes of 256 counters, or one of 65,536 for a level-2 bucket of 8,192 keys or more) gives
// (time, sequence) order, FIFO among equal times, and the keys are gathered in that order into
// one array. Keys pushed while a run is open and falling inside its range go to a small binary
// heap beside it; pop takes the smaller of the two fronts by (time, sequence). Every key in a
// bucket is later than the run's range, so that is the global minimum. With pending times
// spread over microseconds (below 2^24 ps) a key is written twice: into its level-2 bucket
// and into the run; each level above adds one move. A binary or 4-ary heap of 1M keys misses
// cache on every level instead. Buckets are lists of 4 KiB blocks from the queue's own pool
// (see Bucket). Callbacks travel with their keys as raw bytes (UniqueFunction is trivially
// relocatable), so keys move by plain copies and a pop reads the run in sequence, not a
// random slot of a large pool (tried: 16-byte keys with callbacks in a pool halved the hold
// model's rate, one cache miss per pop).
// Cancel is lazy: the sequence number goes into a small set and the key is dropped when it
// reaches the front; while nothing is cancelled, pop touches only bucket memory.
// Complexity: push O(1), pop O(1) amortised (O(8) moves per key at most).
// Precondition: push(t) with t >= the time of the last popped event (throws otherwise).
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
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
  ~EventQueue();
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;
  EventId push(Time t, UniqueFunction fn) {
    if (t.ps() < last_) [[unlikely]] throw_push_before();
    const std::uint64_t seq = next_seq_++;
    ++live_;
    place(Key{t.ps(), seq, fn.release()});
    return EventId{seq};
  }
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
  Popped pop() {
    // Inline fast path: nothing cancelled and the open run's front is the earliest key.
    if (cancelled_.empty() && head_ < run_.size() && (side_.empty() || before(run_[head_], side_.front()))) {
      const Key& k = run_[head_++];
      --live_;
      return Popped{Time::from_ps(k.t), k.seq, UniqueFunction::adopt(k.fn)};
    }
    return pop_slow();
  }
  void reserve(std::size_t n);
  /// Bytes the queue holds for pending keys: its block pool, used or free (it never shrinks
  /// while the queue lives; a steady state stops growing it).
  [[nodiscard]] std::size_t pool_bytes() const { return pool_blocks_ * kBlockKeys * sizeof(Key); }

 private:
  // The callback travels with its key as raw bytes, so a pop reads the run in sequence
  // instead of a random slot of a large pool. Push and the pop of a run's front are inline
  // (in the Simulator's loop); the rest is out of line.
  struct Key {
    std::int64_t t;
    std::uint64_t seq;
    UniqueFunction::Raw fn;  // owned: adopted exactly once, when popped or dropped
  };
  static_assert(std::is_trivially_copyable_v<Key> && sizeof(Key) == 64);
  static constexpr int kLevels = 8;
  static constexpr int kRunLevel = 2;          // buckets at levels <= this become runs
  static constexpr std::size_t kPrefetch = 16;  // keys ahead that open_run's gather prefetches
  static constexpr std::size_t kWideSortMin = 8192;  // level-2 buckets this large: one 16-bit pass
  /// Puts a key in the side heap (inside the open run's range) or in bucket (level of the
  /// highest byte where t differs from last_, value of t's byte there; level 0 if equal).
  void place(const Key& k) {
    if (k.t < run_end_) {
      push_side(k);
    } else {
      place_in_bucket(k);
    }
  }
  /// A key inside the open run's range (at or after last_, since t >= the last popped time):
  /// ordered against the run by the side heap.
  void push_side(const Key& k);
  void place_in_bucket(const Key& k);
  Popped pop_slow();
  [[noreturn]] static void throw_push_before();
  /// The lowest non-empty bucket; false when every bucket is empty.
  bool lowest_bucket(int& level, unsigned& v) const;
  /// Drops cancelled keys at the front of the run and of the side heap; makes a new run when
  /// both are empty and a bucket is not.
  void settle_front();
  /// Opens bucket (level <= kRunLevel, v) as the run.
  void open_run(int level, unsigned v);
  /// True (and forgets it) if the key was cancelled.
  bool take_cancelled(const Key& k);
  /// Removes and returns the side heap's earliest key (precondition: side_ not empty).
  Key take_side();
  /// Cancelled keys are dropped (their callables destroyed) when they reach a front.
  void drop_cancelled_fronts();
  /// Whether the run's front comes before the side heap's top (both non-empty or either).
  [[nodiscard]] bool run_first() const;

  // (time, sequence) order, and its reverse for the side min-heap (std heaps are max-heaps).
  static bool before(const Key& a, const Key& b) { return a.t != b.t ? a.t < b.t : a.seq < b.seq; }
  static bool after(const Key& a, const Key& b) { return before(b, a); }

  // Allocator whose value construction is default-initialisation: resize() of a vector of
  // trivial keys only moves its end (no zero fill before a gather overwrites every key).
  template <class T>
  struct NoInit : std::allocator<T> {
    template <class U>
    struct rebind {
      using other = NoInit<U>;
    };
    NoInit() = default;
    template <class U>
    NoInit(const NoInit<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
    template <class U>
    void construct(U* p) noexcept {
      ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... A>
    void construct(U* p, A&&... a) {
      ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
    }
  };
  std::vector<Key, NoInit<Key>> run_;  // keys of the open run, in (time, sequence) order
  std::vector<std::uint32_t> order_;   // scratch: a bucket's indices in (time, sequence) order
  std::vector<std::uint16_t> low_;     // scratch: low 16 bits of the run's times
  std::vector<std::uint32_t> tmp_;     // scratch: first pass of the counting sort
  std::vector<std::uint32_t> wide_;    // scratch: 16-bit counters for large level-2 buckets
  std::size_t head_ = 0;               // next key of run_
  std::vector<Key> side_;              // min-heap on (time, sequence): pushes into the run's range
  std::int64_t run_end_ = 0;           // keys below it go to side_ (none while no run was opened)
  // A bucket is a list of fixed blocks of kBlockKeys keys from a pool that returns no memory
  // while the queue lives, so a bucket never reallocates or copies and a steady state maps no
  // new page (with one vector per bucket, growth and glibc's frees faulted in about 22,000
  // pages per hold-model run of 11M events: 48,183 faults, 25,932 with the pool). With many keys pending,
  // pushes write each 64-byte key with streaming stores: it is read back only when time
  // reaches its bucket, long after it would have left the cache, and bypassing the cache
  // saves the line's read for ownership and keeps the open run cached (hold model +7 %).
  struct Bucket {
    Key* wp = nullptr;          // next free slot of the last block (null: no block yet)
    std::uint32_t n = 0;        // keys
    std::vector<Key*> blocks;   // kBlockKeys keys each, the last one partly filled
  };
  static constexpr std::size_t kBlockKeys = 64;  // 4 KiB blocks: one page each
  // Pushes use streaming stores from this many pending keys (4 MiB of keys, half the last
  // level cache of the machine measured): below it a key is read back before it leaves the
  // cache, and bypassing the cache made the 512-GPU rail benchmark 5 % slower.
  static constexpr std::size_t kStreamMinLive = 65536;
  /// A free block (allocates a new slab when none is free).
  Key* take_block();
  /// Returns every block of `b` to the pool; `b` becomes empty.
  void release_blocks(Bucket& b);
  /// Applies f to every key of bucket b in insertion order.
  template <class F>
  static void for_each_key(const Bucket& b, F&& f) {
    for (std::size_t i = 0; i < b.blocks.size(); ++i) {
      const std::size_t m = std::min<std::size_t>(kBlockKeys, b.n - i * kBlockKeys);
      for (std::size_t j = 0; j < m; ++j) f(b.blocks[i][j]);
    }
  }
  Bucket buckets_[kLevels][256];
  std::int64_t min_[kLevels][256];       // smallest time in buckets_[L][v], kept on insert
  std::uint64_t mask_[kLevels][4] = {};  // occupancy of buckets_[L][v]
  std::vector<Key*> free_blocks_;        // the pool's free blocks (LIFO)
  struct SlabFree {
    void operator()(Key* p) const;
  };
  std::vector<std::unique_ptr<Key[], SlabFree>> slabs_;  // the pool's memory, blocks of kBlockKeys
  std::size_t pool_blocks_ = 0;          // blocks in all slabs
  std::size_t slab_blocks_ = 4;          // blocks in the next slab: doubles up to kMaxSlabBlocks
  static constexpr std::size_t kMaxSlabBlocks = 1024;  // 4 MiB
  std::int64_t last_ = 0;  // Simulator time starts at 0 and never goes back
  std::vector<std::uint64_t> cancelled_;  // sequence numbers, unsorted (few)
  std::uint64_t next_seq_ = 0;
  std::size_t live_ = 0;
};

}  // namespace shardsim::sim
