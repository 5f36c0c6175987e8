#pragma once
// Scenario commands for the sweep tests (the real ones register in the shardsim executable).
//
// "fake" takes x (number), y (number), label (string), mode (string), delay_ms (integer) and
// returns {"x", "y", "product_s": x*y, "label", "fits": true, "config": {...}}; mode changes it:
//   invalid -> throws ConfigError("--mode", "'invalid'", "ok")
//   nofit   -> "fits": false, "reason": "needs 2x the memory"
//   multi   -> an array of two results (x*y and 2*x*y)
//   crash   -> throws std::runtime_error("boom")
// delay_ms sleeps first (out-of-order completion, interrupts).
namespace shardsim::test {
/// Forces the registration to be linked in.
void register_fake_commands();
}  // namespace shardsim::test
