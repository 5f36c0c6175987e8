#include "fake_commands.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>

#include "analysis/scenario/scenario.hpp"
#include "sim/error.hpp"
#include "sim/time.hpp"

namespace shardsim::test {
namespace {

nlohmann::json run_fake(const nlohmann::json& f) {
  const double x = f.value("x", 1.0), y = f.value("y", 1.0);
  const std::string mode = f.value("mode", std::string("ok"));
  const int delay = f.value("delay_ms", 0);
  if (delay > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  nlohmann::json r = {{"x", x}, {"y", y}, {"product_s", x * y}, {"label", f.value("label", std::string())},
                      {"fits", true}, {"config", f}};
  if (mode == "invalid") throw ConfigError("--mode", "'invalid'", "ok");
  if (mode == "crash") throw std::runtime_error("boom");
  if (mode == "overflow") return {{"t", Time::from_seconds(1e300).to_seconds()}};
  if (mode == "nofit") {
    r["fits"] = false;
    r["reason"] = "needs 2x the memory";
  }
  if (mode == "multi") {
    nlohmann::json r2 = r;
    r2["product_s"] = 2 * x * y;
    return nlohmann::json::array({r, r2});
  }
  return r;
}

}  // namespace

void register_fake_commands() {
  static const analysis::ScenarioRegistration reg{
      analysis::ScenarioCommand{"fake", {"x", "y", "label", "mode", "delay_ms"}, run_fake}};
}

}  // namespace shardsim::test
