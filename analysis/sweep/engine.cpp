#include "analysis/sweep/engine.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "analysis/scenario/scenario.hpp"
#include "analysis/sweep/distribute.hpp"
#include "analysis/sweep/output.hpp"
#include "sim/error.hpp"

namespace shardsim::sweep {
namespace {

/// Runs task(0..count-1) on `jobs` threads and hands the outcomes back in index order.
class OrderedPool {
 public:
  OrderedPool(std::uint64_t count, unsigned jobs, std::size_t window, std::function<Outcome(std::uint64_t)> task,
              const std::atomic<bool>* stop)
      : count_(count), window_(window), task_(std::move(task)), stop_(stop) {
    for (unsigned i = 0; i < jobs && i < count; ++i) threads_.emplace_back([this] { work(); });
  }
  ~OrderedPool() {
    {
      std::lock_guard lk(m_);
      quit_ = true;
    }
    space_.notify_all();
    for (auto& t : threads_) t.join();
  }
  OrderedPool(const OrderedPool&) = delete;
  OrderedPool& operator=(const OrderedPool&) = delete;

  /// The next outcome in order; nullopt when all are consumed or the run was stopped and the
  /// next one will never come.
  std::optional<Outcome> next() {
    std::unique_lock lk(m_);
    while (true) {
      auto it = done_.find(consumed_);
      if (it != done_.end()) {
        Outcome o = std::move(it->second);
        done_.erase(it);
        ++consumed_;
        lk.unlock();
        space_.notify_all();
        return o;
      }
      if (consumed_ >= count_) return std::nullopt;
      if (consumed_ >= issued_ && stopped()) return std::nullopt;
      // A signal handler cannot notify: poll the stop flag now and then.
      ready_.wait_for(lk, std::chrono::milliseconds(50));
    }
  }

 private:
  [[nodiscard]] bool stopped() const { return stop_ != nullptr && stop_->load(std::memory_order_relaxed); }

  void work() {
    while (true) {
      std::uint64_t k = 0;
      {
        std::unique_lock lk(m_);
        space_.wait(lk, [&] { return quit_ || issued_ >= count_ || issued_ < consumed_ + window_; });
        if (quit_ || issued_ >= count_ || stopped()) return;
        k = issued_++;
      }
      Outcome o;
      try {
        o = task_(k);
      } catch (const std::exception& e) {
        o.status = "error";
        o.reason = e.what();
      }
      {
        std::lock_guard lk(m_);
        done_.emplace(k, std::move(o));
      }
      ready_.notify_all();
    }
  }

  std::uint64_t count_;
  std::size_t window_;
  std::function<Outcome(std::uint64_t)> task_;
  const std::atomic<bool>* stop_;
  std::mutex m_;
  std::condition_variable ready_, space_;
  std::uint64_t issued_ = 0, consumed_ = 0;
  bool quit_ = false;
  std::map<std::uint64_t, Outcome> done_;
  std::vector<std::thread> threads_;
};

void count(SweepSummary& s, const Outcome& o) {
  ++s.written;
  if (o.status == "ok") ++s.ok;
  else if (o.status == "does-not-fit") ++s.does_not_fit;
  else if (o.status == "invalid") ++s.invalid;
  else ++s.errors;
}

}  // namespace

unsigned default_jobs() {
  unsigned hw = std::thread::hardware_concurrency();
  if (hw == 0) hw = 1;
  unsigned local = 1;
  if (const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) local = static_cast<unsigned>(std::max(1L, std::atol(v)));
  return std::max(1u, hw / local);
}

SweepSummary run_sweep(const SweepSpec& spec, const SweepOptions& options) {
  const MpiWorld world = mpi_world();
  const auto* cmd = analysis::find_scenario_command(spec.command());
  if (!cmd) throw ConfigError(spec.source() + ": /base/command", "unknown command '" + spec.command() + "'", "a registered command");
  SweepSummary s;
  s.total = spec.size();
  s.jobs = options.jobs ? options.jobs : default_jobs();
  s.ranks = static_cast<unsigned>(world.size);
  s.writer = world.rank == 0;

  std::unique_ptr<ResultWriter> writer;
  std::int64_t first = 0;
  if (world.rank == 0) {
    try {
      writer = std::make_unique<ResultWriter>(spec, options.out, options.resume);
      first = static_cast<std::int64_t>(writer->first_scenario());
    } catch (...) {
      mpi_broadcast(-1);
      throw;
    }
  }
  first = mpi_broadcast(first);
  if (first < 0) {
    s.writer_failed = true;
    return s;
  }
  s.resumed = static_cast<std::uint64_t>(first);
  const std::uint64_t remaining = s.total - s.resumed;
  const auto P = static_cast<std::uint64_t>(world.size);
  const auto r = static_cast<std::uint64_t>(world.rank);
  const std::uint64_t mine = r < remaining ? (remaining - r + P - 1) / P : 0;
  const std::size_t window = options.window ? options.window : 64 * static_cast<std::size_t>(s.jobs);
  OrderedPool pool(
      mine, s.jobs, window, [&](std::uint64_t k) { return run_scenario(spec, *cmd, s.resumed + r + k * P); },
      options.stop);

  if (world.rank != 0) {
    for (std::uint64_t k = 0; k < mine; ++k) {
      auto o = pool.next();
      if (!o) {
        mpi_send_text("stop", 0);
        s.interrupted = true;
        break;
      }
      mpi_send_text(to_json(*o).dump(), 0);
    }
    return s;
  }

  s.written = 0;
  for (std::uint64_t g = 0; g < remaining; ++g) {
    const std::uint64_t owner = g % P;
    std::optional<Outcome> o;
    if (owner == 0) {
      o = pool.next();
    } else {
      const std::string text = mpi_recv_text(static_cast<int>(owner));
      if (text != "stop") o = outcome_from_json(nlohmann::json::parse(text));
    }
    if (!o) {
      s.interrupted = true;
      break;
    }
    writer->write(*o);
    count(s, *o);
    if (options.progress) options.progress(s.resumed + s.written, s.total);
    if (P > 1 && options.stop && options.stop->load()) {
      s.interrupted = true;
      break;
    }
  }
  if (!s.interrupted) writer->finish();
  s.dropped_columns = writer->dropped_columns();
  if (s.interrupted && P > 1) {
    writer.reset();
    mpi_abort(130);
  }
  return s;
}

}  // namespace shardsim::sweep
