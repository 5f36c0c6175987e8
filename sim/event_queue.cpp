#include "sim/event_queue.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <utility>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace shardsim::sim {

namespace {
constexpr std::int64_t kNoTime = std::numeric_limits<std::int64_t>::max();
constexpr std::size_t kBlockAlign = 4096;

/// Copies a 64-byte key to 16-byte-aligned memory with streaming (non-temporal) stores, which
/// write the line without reading it first and without keeping it in cache.
template <class K>
inline void stream_store(K* dst, const K& k) {
  static_assert(sizeof(K) == 64 && std::is_trivially_copyable_v<K>);
#if defined(__SSE2__)
  const auto* s = reinterpret_cast<const __m128i*>(&k);
  auto* d = reinterpret_cast<__m128i*>(dst);
  _mm_stream_si128(d + 0, _mm_loadu_si128(s + 0));
  _mm_stream_si128(d + 1, _mm_loadu_si128(s + 1));
  _mm_stream_si128(d + 2, _mm_loadu_si128(s + 2));
  _mm_stream_si128(d + 3, _mm_loadu_si128(s + 3));
#else
  std::memcpy(static_cast<void*>(dst), &k, sizeof(K));
#endif
}

/// resize(n) with geometric growth. A vector resized after clear() would otherwise grow to
/// exactly n: the hold model's runs grow by a few percent at a time for their first 30
/// openings, and each growth mapped fresh pages (25,932 page faults per run before this,
/// 3,642 after).
template <class V>
void fit(V& v, std::size_t n) {
  if (n > v.capacity()) v.reserve(std::max(n, 2 * v.capacity()));
  v.resize(n);
}
}  // namespace

void EventQueue::SlabFree::operator()(Key* p) const { ::operator delete[](p, std::align_val_t{kBlockAlign}); }

EventQueue::Key* EventQueue::take_block() {
  if (free_blocks_.empty()) [[unlikely]] {
    const std::size_t blocks = slab_blocks_;
    slab_blocks_ = std::min(2 * slab_blocks_, kMaxSlabBlocks);
    auto* mem = static_cast<Key*>(::operator new[](blocks * kBlockKeys * sizeof(Key), std::align_val_t{kBlockAlign}));
    slabs_.emplace_back(mem);
    pool_blocks_ += blocks;
    for (std::size_t i = blocks; i-- > 0;) free_blocks_.push_back(mem + i * kBlockKeys);
  }
  Key* b = free_blocks_.back();
  free_blocks_.pop_back();
  return b;
}

void EventQueue::release_blocks(Bucket& b) {
  // Last block first, so that the next take_block() reuses the most recently touched one.
  free_blocks_.insert(free_blocks_.end(), b.blocks.begin(), b.blocks.end());
  b.blocks.clear();  // keeps its capacity: a steady state allocates nothing
  b.n = 0;
  b.wp = nullptr;
}


EventQueue::EventQueue() {
  for (auto& level : min_) std::fill(std::begin(level), std::end(level), kNoTime);
}

EventQueue::~EventQueue() {
  // Pending callables (live or cancelled but not yet dropped) are destroyed here.
  auto destroy = [](const Key& k) { (void)UniqueFunction::adopt(k.fn); };
  for (std::size_t i = head_; i < run_.size(); ++i) destroy(run_[i]);
  for (const Key& k : side_) destroy(k);
  for (auto& level : buckets_) {
    for (auto& b : level) for_each_key(b, destroy);
  }
}

void EventQueue::push_side(const Key& k) {
  side_.push_back(k);
  std::push_heap(side_.begin(), side_.end(), [](const Key& a, const Key& b) { return after(a, b); });
}

void EventQueue::place_in_bucket(const Key& k) {
  const auto diff = static_cast<std::uint64_t>(k.t ^ last_);
  const int level = diff == 0 ? 0 : (63 - std::countl_zero(diff)) / 8;
  const auto v = static_cast<unsigned>((static_cast<std::uint64_t>(k.t) >> (8 * level)) & 0xffu);
  Bucket& b = buckets_[level][v];
  if (b.n % kBlockKeys == 0) {
    b.wp = take_block();
    b.blocks.push_back(b.wp);
  }
  min_[level][v] = std::min(min_[level][v], k.t);
  if (live_ >= kStreamMinLive) {
    stream_store(b.wp++, k);
  } else {
    *b.wp++ = k;  // few pending keys: they are read back while still in cache
  }
  ++b.n;
  mask_[level][v >> 6] |= 1ull << (v & 63);
}

void EventQueue::throw_push_before() { throw std::logic_error("event queue: push before the last popped time"); }

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

bool EventQueue::run_first() const {
  if (head_ == run_.size()) return false;
  if (side_.empty()) return true;
  return before(run_[head_], side_.front());
}

void EventQueue::open_run(int level, unsigned v) {
  auto& src = buckets_[level][v];
  mask_[level][v >> 6] &= ~(1ull << (v & 63));
  last_ = min_[level][v];
  min_[level][v] = kNoTime;
  // The run keeps its own storage (it grows to the largest run once); the bucket's blocks go
  // back to the pool.
  run_.clear();
  head_ = 0;
  if (level == 0) {
    // One time value, keys in sequence order (see settle_front): copied as it is.
    fit(run_, src.n);
    std::size_t i = 0;
    for_each_key(src, [&](const Key& k) { run_[i++] = k; });
    release_blocks(src);
    run_end_ = last_ + 1;
    return;
  }
  // The keys share every byte above `level`: a stable LSD counting sort of their indices on
  // the low 8 * level bits (one or two passes of 256 counters) gives (time, sequence) order,
  // the bucket being in sequence order. Then the keys are gathered in that order: a tight
  // loop of independent loads overlaps its cache misses, where pops in sorted order would
  // take them one at a time (tried: 30 % slower on the hold model).
  const std::size_t n = src.n;
  fit(order_, n);
  fit(low_, n);
  {
    std::size_t i = 0;
    for_each_key(src, [&](const Key& k) {
      low_[i++] = static_cast<std::uint16_t>(static_cast<std::uint64_t>(k.t) & 0xffffu);
    });
  }
  if (level == 2 && n >= kWideSortMin) {
    // A large bucket: one pass over 65,536 counters instead of two over 256 (3 % faster on
    // the hold model, whose level-2 buckets hold about 32k keys).
    wide_.assign(65537, 0);
    for (std::size_t i = 0; i < n; ++i) ++wide_[low_[i] + 1u];
    for (std::size_t b = 1; b <= 65536; ++b) wide_[b] += wide_[b - 1];
    for (std::size_t i = 0; i < n; ++i) order_[wide_[low_[i]]++] = static_cast<std::uint32_t>(i);
    run_end_ = (last_ | 0xffff) + 1;
  } else {
    std::uint32_t c0[257] = {}, c1[257] = {};
    for (std::size_t i = 0; i < n; ++i) {
      ++c0[(low_[i] & 0xffu) + 1];
      ++c1[(low_[i] >> 8) + 1];
    }
    for (unsigned b = 1; b <= 256; ++b) {
      c0[b] += c0[b - 1];
      c1[b] += c1[b - 1];
    }
    if (level == 1) {
      for (std::size_t i = 0; i < n; ++i) order_[c0[low_[i] & 0xffu]++] = static_cast<std::uint32_t>(i);
      run_end_ = (last_ | 0xff) + 1;
    } else {
      fit(tmp_, n);
      for (std::size_t i = 0; i < n; ++i) tmp_[c0[low_[i] & 0xffu]++] = static_cast<std::uint32_t>(i);
      for (std::size_t j = 0; j < n; ++j) {
        const std::uint32_t i = tmp_[j];
        order_[c1[low_[i] >> 8]++] = i;
      }
      run_end_ = (last_ | 0xffff) + 1;
    }
  }
  fit(run_, n);
  Key* dst = run_.data();
  Key* const* from = src.blocks.data();
  const std::uint32_t* order = order_.data();
  auto at = [from](std::uint32_t i) { return from[i / kBlockKeys] + i % kBlockKeys; };
  for (std::size_t j = 0; j < n; ++j) {
    if (j + kPrefetch < n) __builtin_prefetch(at(order[j + kPrefetch]));
    dst[j] = *at(order[j]);
  }
  release_blocks(src);
}

EventQueue::Key EventQueue::take_side() {
  std::pop_heap(side_.begin(), side_.end(), [](const Key& a, const Key& b) { return after(a, b); });
  const Key k = side_.back();
  side_.pop_back();
  return k;
}

void EventQueue::drop_cancelled_fronts() {
  while (head_ < run_.size() && take_cancelled(run_[head_])) (void)UniqueFunction::adopt(run_[head_++].fn);
  while (!side_.empty() && take_cancelled(side_.front())) (void)UniqueFunction::adopt(take_side().fn);
}

void EventQueue::settle_front() {
  for (;;) {
    drop_cancelled_fronts();
    if (head_ < run_.size() || !side_.empty()) return;
    int level = 0;
    unsigned v = 0;
    if (!lowest_bucket(level, v)) return;  // empty
    if (level <= kRunLevel) {
      open_run(level, v);
      continue;
    }
    // The minimum may belong to a cancelled event: harmless, its key is dropped at a front
    // and every live event is later still.
    auto& src = buckets_[level][v];
    mask_[level][v >> 6] &= ~(1ull << (v & 63));
    last_ = min_[level][v];
    min_[level][v] = kNoTime;
    // Every key lands in a bucket at a lower level (t >= run_end_: the bucket lies above the
    // last run; t shares its bytes from `level` up with the new last_), so src is read in
    // place while other buckets fill.
    // FIFO ties need each bucket in sequence order. That holds by construction: pushes append
    // increasing sequence numbers, and a redistribution, itself in order, fills only empty
    // buckets (every bucket below the lowest non-empty one is empty), after which only pushes,
    // with later numbers, append.
    for_each_key(src, [this](const Key& k) { place_in_bucket(k); });
    release_blocks(src);
  }
}

Time EventQueue::top_time() {
  // Must not move last_ forward: run_until() may stop before this event and let earlier
  // ones be scheduled. Buckets are ordered (level, value), so the first bucket holding a
  // live key holds the earliest live event.
  drop_cancelled_fronts();
  if (head_ < run_.size() || !side_.empty()) {
    return Time::from_ps(run_first() ? run_[head_].t : side_.front().t);
  }
  for (int L = 0; L < kLevels; ++L) {
    for (unsigned v = 0; v < 256; ++v) {
      if ((mask_[L][v >> 6] & (1ull << (v & 63))) == 0) continue;
      std::int64_t m = kNoTime;
      for_each_key(buckets_[L][v], [&](const Key& k) {
        if (std::find(cancelled_.begin(), cancelled_.end(), k.seq) == cancelled_.end()) m = std::min(m, k.t);
      });
      if (m != kNoTime) return Time::from_ps(m);
    }
  }
  return Time::max();
}

EventQueue::Popped EventQueue::pop_slow() {
  settle_front();
  --live_;
  if (run_first()) {
    const Key& k = run_[head_++];
    return Popped{Time::from_ps(k.t), k.seq, UniqueFunction::adopt(k.fn)};
  }
  const Key k = take_side();
  return Popped{Time::from_ps(k.t), k.seq, UniqueFunction::adopt(k.fn)};
}

void EventQueue::reserve(std::size_t n) { order_.reserve(std::min<std::size_t>(n, 1 << 16)); }

}  // namespace shardsim::sim
