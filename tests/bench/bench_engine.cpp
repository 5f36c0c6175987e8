// Event queue hold model (Vaucher and Duval 1975; the classic priority-queue benchmark):
// keep N events pending; each step pops the earliest and schedules one at now + a random
// increment. Target (issue 2): >= 10 million events/s with 1M pending on one core.
#include <fmt/format.h>

#include <random>

#include "bench.hpp"
#include "sim/simulator.hpp"

namespace shardsim::bench {

void bench_event_queue() {
  constexpr std::size_t kPending = 1'000'000;
  constexpr std::uint64_t kEvents = 10'000'000;
  sim::Simulator sim;
  sim.reserve(kPending + 16);
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<std::int64_t> inc(1, 2'000'000);  // up to 2 us in ps
  std::uint64_t budget = kEvents;
  struct Hold {
    sim::Simulator* sim;
    std::mt19937_64* rng;
    std::uniform_int_distribution<std::int64_t>* inc;
    std::uint64_t* budget;
    void operator()() const {
      if (*budget == 0) return;
      --*budget;
      sim->schedule_after(Time::from_ps((*inc)(*rng)), Hold{*this});
    }
  };
  for (std::size_t i = 0; i < kPending; ++i) sim.schedule_at(Time::from_ps(inc(rng)), Hold{&sim, &rng, &inc, &budget});
  Stopwatch sw;
  sim.run();
  const double s = sw.seconds(), cpu = sw.cpu_seconds();
  const auto ev = static_cast<double>(sim.event_count());
  fmt::print(
      "event queue hold model: {} pending, {} events in {:.3f} s wall, {:.3f} s cpu = {:.1f} M events/s wall, "
      "{:.1f} M events/cpu-s (target >= 10 on one core)\n",
      kPending, sim.event_count(), s, cpu, ev / s / 1e6, ev / cpu / 1e6);
}

}  // namespace shardsim::bench
