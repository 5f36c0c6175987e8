#include "analysis/sweep/progress.hpp"

#include <fmt/format.h>

#include <cmath>

namespace shardsim::sweep {

std::string format_eta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<std::uint64_t>(std::ceil(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::string ProgressBar::line(std::uint64_t done, std::uint64_t total, double rate_per_s, double eta_s) {
  constexpr std::uint64_t kWidth = 30;
  const std::uint64_t fill = total ? done * kWidth / total : kWidth;
  const double pct = total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0;
  return fmt::format("[{}{}] {}/{} {:5.1f}%  {:.1f}/s  ETA {}", std::string(fill, '#'), std::string(kWidth - fill, '.'),
                     done, total, pct, rate_per_s, format_eta(eta_s));
}

ProgressBar::ProgressBar(std::FILE* out, bool enabled, std::uint64_t start)
    : out_(out), enabled_(enabled), start_(start), t0_(std::chrono::steady_clock::now()), last_(t0_) {}

void ProgressBar::update(std::uint64_t done, std::uint64_t total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total && drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - t0_).count();
  const double fresh = static_cast<double>(done > start_ ? done - start_ : 0);
  const double rate = elapsed > 0 ? fresh / elapsed : 0;
  const double eta = rate > 0 ? static_cast<double>(total - done) / rate : -1;
  fmt::print(out_, "\r{}\033[K", line(done, total, rate, eta));
  std::fflush(out_);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (enabled_ && drawn_) {
    fmt::print(out_, "\n");
    std::fflush(out_);
  }
  drawn_ = false;
}

}  // namespace shardsim::sweep
