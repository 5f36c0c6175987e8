#pragma once
// The discrete-event engine. It owns simulated time and nothing else: models own their
// state, observers subscribe to signals (STYLE 3). Single-threaded; one Simulator per
// scenario (sweeps run many Simulators on many threads).
#include <cstdint>

#include "sim/event_queue.hpp"
#include "sim/signal.hpp"
#include "sim/time.hpp"
#include "sim/unique_function.hpp"

namespace shardsim::sim {

class Simulator {
 public:
  Simulator() = default;
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  /// Schedules `fn` at absolute time `t`. Throws std::logic_error if t < now().
  EventId schedule_at(Time t, UniqueFunction fn) {
    if (t < now_) [[unlikely]] throw_past(t);
    return queue_.push(t, std::move(fn));
  }
  /// Schedules `fn` at now() + dt. Throws std::logic_error if dt < 0.
  EventId schedule_after(Time dt, UniqueFunction fn) { return schedule_at(now_ + dt, std::move(fn)); }
  bool cancel(EventId id) { return queue_.cancel(id); }

  /// Runs until no event is left or stop() is called.
  void run();
  /// Runs every event with time <= t, then sets now() to t (unless stopped earlier).
  void run_until(Time t);
  /// Makes run()/run_until() return after the current event.
  void stop() { stopped_ = true; }

  [[nodiscard]] Time now() const { return now_; }
  [[nodiscard]] std::uint64_t event_count() const { return events_; }
  [[nodiscard]] std::size_t pending() const { return queue_.size(); }
  void reserve(std::size_t n) { queue_.reserve(n); }

  /// Emitted before each event runs, with its time and insertion sequence number. Used for
  /// run fingerprints (tests pin them) and tracing.
  Signal<Time, std::uint64_t> on_event;

  /// FNV-1a hash of the (time, sequence) of every event run so far: a cheap fingerprint of
  /// the event trace (OMNeT++ test/fingerprint), maintained only while fingerprinting is on.
  void enable_fingerprint() { fingerprint_on_ = true; }
  [[nodiscard]] std::uint64_t fingerprint() const { return fingerprint_; }

 private:
  bool step(Time limit);
  [[noreturn]] void throw_past(Time t) const;
  EventQueue queue_;
  Time now_ = Time::zero();
  std::uint64_t events_ = 0;
  std::uint64_t fingerprint_ = 1469598103934665603ull;
  bool fingerprint_on_ = false;
  bool stopped_ = false;
};

}  // namespace shardsim::sim
