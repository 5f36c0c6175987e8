#include <doctest/doctest.h>

#include <memory>
#include <random>
#include <set>
#include <vector>

#include "sim/event_queue.hpp"
#include "sim/simulator.hpp"

using namespace shardsim;
using shardsim::sim::Simulator;

TEST_CASE("events run in (time, insertion) order; ties are FIFO") {
  Simulator s;
  std::vector<int> order;
  s.schedule_at(Time::from_ns(5), [&] { order.push_back(3); });
  s.schedule_at(Time::from_ns(1), [&] { order.push_back(1); });
  s.schedule_at(Time::from_ns(5), [&] { order.push_back(4); });
  s.schedule_at(Time::from_ns(1), [&] { order.push_back(2); });
  s.run();
  CHECK(order == std::vector<int>{1, 2, 3, 4});
  CHECK(s.now() == Time::from_ns(5));
  CHECK(s.event_count() == 4);
}

TEST_CASE("a random workload pops in sorted order (heap property)") {
  sim::EventQueue q;
  std::mt19937_64 rng(42);
  std::vector<std::pair<std::int64_t, std::uint64_t>> seen;
  for (int i = 0; i < 5000; ++i) q.push(Time::from_ps(static_cast<std::int64_t>(rng() % 1000)), [] {});
  while (!q.empty()) {
    auto p = q.pop();
    seen.emplace_back(p.time.ps(), p.sequence);
  }
  REQUIRE(seen.size() == 5000);
  for (std::size_t i = 1; i < seen.size(); ++i) CHECK(seen[i - 1] < seen[i]);
}

TEST_CASE("cancel, run_until, stop, schedule_after") {
  Simulator s;
  int fired = 0;
  auto id = s.schedule_at(Time::from_ns(10), [&] { fired += 100; });
  s.schedule_at(Time::from_ns(20), [&] { ++fired; });
  CHECK(s.cancel(id));
  CHECK_FALSE(s.cancel(id));
  s.run_until(Time::from_ns(15));
  CHECK(fired == 0);
  CHECK(s.now() == Time::from_ns(15));
  s.schedule_after(Time::from_ns(1), [&] {
    fired += 10;
    s.stop();
  });
  s.schedule_at(Time::from_ns(17), [&] { fired += 1000; });
  s.run();
  CHECK(fired == 10);  // stopped after the event at 16 ns
  s.run();
  CHECK(fired == 1011);
  CHECK_THROWS_AS(s.schedule_at(Time::from_ns(1), [] {}), std::logic_error);
}

TEST_CASE("a slot freed by a cancelled event is reused without reviving it") {
  Simulator s;
  int a = 0;
  auto id = s.schedule_at(Time::from_ns(1), [&] { a = 1; });
  s.cancel(id);
  s.run();  // drops the dead key, frees the slot
  s.schedule_at(Time::from_ns(2), [&] { a = 2; });
  CHECK_FALSE(s.cancel(id));  // the old handle must not cancel the new event
  s.run();
  CHECK(a == 2);
}

TEST_CASE("large captures go to the heap and still run once") {
  Simulator s;
  std::vector<int> big(100, 1);
  int sum = 0;
  s.schedule_at(Time::from_ns(1), [big, &sum, pad = std::array<double, 16>{}] {
    for (int v : big) sum += v;
    (void)pad;
  });
  s.run();
  CHECK(sum == 100);
}

TEST_CASE("fingerprint: same schedule, same hash; different order, different hash") {
  auto run = [](bool swap) {
    Simulator s;
    s.enable_fingerprint();
    s.schedule_at(Time::from_ns(swap ? 2 : 1), [] {});
    s.schedule_at(Time::from_ns(swap ? 1 : 2), [] {});
    s.run();
    return s.fingerprint();
  };
  CHECK(run(false) == run(false));
  CHECK(run(false) != run(true));
}

namespace {

using RefOrder = std::set<std::pair<std::int64_t, std::uint64_t>>;

// Pops everything left; each pop must be the reference's first (time, sequence).
void drain_and_check(sim::EventQueue& q, RefOrder& ref) {
  while (!ref.empty()) {
    auto p = q.pop();
    REQUIRE(p.time.ps() == ref.begin()->first);
    REQUIRE(p.sequence == ref.begin()->second);
    ref.erase(ref.begin());
  }
  CHECK(q.empty());
}

}  // namespace

// The queue against a reference model (a sorted set of (time, sequence)) under a workload
// that exercises every path: pushes while a run is open, inside its range (the side heap)
// and at the current time, spreads from 1 ps to 2^40 ps (runs from level-0, 1 and 2
// buckets, redistributions from higher levels), and cancellations at every position.
TEST_CASE("interleaved pushes, pops and cancels match a reference order") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    sim::EventQueue q;
    RefOrder ref;
    std::vector<std::pair<std::uint64_t, std::int64_t>> ids;  // (sequence, time) of pushes
    std::mt19937_64 rng(seed);
    std::int64_t now = 0;
    const std::int64_t spreads[] = {0, 1, 200, 70'000, 3'000'000, 1ll << 40};
    std::size_t pops = 0;
    for (int i = 0; i < 60'000; ++i) {
      const auto r = rng() % 16;
      if (r < 7 || ref.empty()) {
        const std::int64_t spread = spreads[rng() % 6];
        const std::int64_t t = now + (spread == 0 ? 0 : static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(spread)));
        const auto id = q.push(Time::from_ps(t), [] {});
        ref.emplace(t, id.sequence);
        ids.emplace_back(id.sequence, t);
      } else if (r < 8) {
        // Cancel a random pending event (pick one from the reference set).
        auto it = ref.begin();
        std::advance(it, static_cast<long>(rng() % std::min<std::size_t>(ref.size(), 64)));
        CHECK(q.cancel(sim::EventId{it->second}));
        ref.erase(it);
      } else {
        REQUIRE(q.size() == ref.size());
        CHECK(q.top_time().ps() == ref.begin()->first);
        auto p = q.pop();
        REQUIRE(p.time.ps() == ref.begin()->first);
        REQUIRE(p.sequence == ref.begin()->second);
        ref.erase(ref.begin());
        now = p.time.ps();
        ++pops;
      }
    }
    drain_and_check(q, ref);
    CHECK(pops > 20'000);
  }
}

TEST_CASE("pending and cancelled callables are destroyed with the queue (no leak under ASan)") {
  auto counter = std::make_shared<int>(0);
  {
    sim::EventQueue q;
    for (int i = 0; i < 1000; ++i) {
      // A shared_ptr capture is not trivially copyable: the callable lives on the heap.
      auto id = q.push(Time::from_ps(i * 1000), [counter] { ++*counter; });
      if (i % 3 == 0) q.cancel(id);
    }
    for (int i = 0; i < 100; ++i) q.pop().fn();
    CHECK(counter.use_count() > 1);
  }
  CHECK(counter.use_count() == 1);
  CHECK(*counter > 0);
}

TEST_CASE("a large bucket (one 16-bit counting pass) pops in (time, sequence) order") {
  // 40,000 keys in one 65,536 ps range (a level-2 bucket beyond the wide-sort threshold),
  // many sharing a time, pushed in random order; then pushes during the run.
  sim::EventQueue q;
  RefOrder ref;
  std::mt19937_64 rng(7);
  const std::int64_t base = 1 << 20;
  for (int i = 0; i < 40'000; ++i) {
    const std::int64_t t = base + static_cast<std::int64_t>(rng() % 30'000);
    ref.emplace(t, q.push(Time::from_ps(t), [] {}).sequence);
  }
  for (int i = 0; i < 60'000; ++i) {
    auto p = q.pop();
    REQUIRE(p.time.ps() == ref.begin()->first);
    REQUIRE(p.sequence == ref.begin()->second);
    ref.erase(ref.begin());
    if (i % 3 == 0) {
      const std::int64_t t = p.time.ps() + static_cast<std::int64_t>(rng() % 70'000);
      ref.emplace(t, q.push(Time::from_ps(t), [] {}).sequence);
    }
    if (ref.empty()) break;
  }
  drain_and_check(q, ref);
}

TEST_CASE("keys filling several pool blocks keep FIFO among equal times at every level") {
  // 1,000 keys at 5 ps (a level-0 bucket: one time, copied as a run), 1,000 at 5,000 ps (a
  // level-1 bucket, counting-sorted) and 1,000 at 2^30 + 7 ps (redistributed from level 3),
  // interleaved, each far more than one 64-key block.
  sim::EventQueue q;
  RefOrder ref;
  const std::int64_t times[] = {5, 5'000, (std::int64_t{1} << 30) + 7};
  for (int i = 0; i < 3'000; ++i) {
    const std::int64_t t = times[i % 3];
    ref.emplace(t, q.push(Time::from_ps(t), [] {}).sequence);
  }
  drain_and_check(q, ref);
}

TEST_CASE("a steady state reuses the queue's block pool instead of growing it") {
  // Hold model: 70,000 pending (above the streaming-store threshold), each pop schedules one
  // event up to 2 us later; every pop is checked against a reference order. After a warm-up
  // the number of pending keys is constant, so the pool must be too (blocks of a bucket
  // opened or redistributed go back to it). A queue that leaked blocks grows here.
  constexpr int kPending = 70'000;
  sim::EventQueue q;
  RefOrder ref;
  std::mt19937_64 rng(99);
  auto inc = [&] { return static_cast<std::int64_t>(rng() % 2'000'000) + 1; };
  for (int i = 0; i < kPending; ++i) {
    const std::int64_t t = inc();
    ref.emplace(t, q.push(Time::from_ps(t), [] {}).sequence);
  }
  std::size_t warm = 0;
  for (int i = 0; i < 500'000; ++i) {
    auto p = q.pop();
    REQUIRE(p.time.ps() == ref.begin()->first);
    REQUIRE(p.sequence == ref.begin()->second);
    ref.erase(ref.begin());
    const std::int64_t t = p.time.ps() + inc();
    ref.emplace(t, q.push(Time::from_ps(t), [] {}).sequence);
    if (i == 200'000) warm = q.pool_bytes();
  }
  CHECK(q.size() == kPending);
  CHECK(warm > 0);
  CHECK(q.pool_bytes() == warm);
  // Pending keys are 64 bytes each; the pool holds them plus partly filled blocks.
  CHECK(q.pool_bytes() < 2 * kPending * 64);
  drain_and_check(q, ref);
}
