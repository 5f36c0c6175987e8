#include "sim/simulator.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace shardsim::sim {

void Simulator::throw_past(Time t) const {
  throw std::logic_error(fmt::format("event scheduled in the past: at {} while now is {}", t, now_));
}

bool Simulator::step(Time limit) {
  if (queue_.empty()) return false;
  if (limit != Time::max() && queue_.top_time() > limit) return false;
  auto ev = queue_.pop();
  now_ = ev.time;
  ++events_;
  if (fingerprint_on_) {
    auto mix = [this](std::uint64_t v) {
      for (int i = 0; i < 8; ++i) {
        fingerprint_ ^= (v >> (8 * i)) & 0xffu;
        fingerprint_ *= 1099511628211ull;
      }
    };
    mix(static_cast<std::uint64_t>(ev.time.ps()));
    mix(ev.sequence);
  }
  if (!on_event.empty()) on_event(ev.time, ev.sequence);
  ev.fn();
  return true;
}

void Simulator::run() {
  stopped_ = false;
  while (!stopped_ && step(Time::max())) {
  }
}

void Simulator::run_until(Time t) {
  stopped_ = false;
  while (!stopped_ && step(t)) {
  }
  if (!stopped_ && t > now_) now_ = t;
}

}  // namespace shardsim::sim
