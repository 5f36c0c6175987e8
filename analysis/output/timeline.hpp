#pragma once
// Perfetto / Chrome trace writer (DESIGN 7): {"traceEvents":[...]} with "ph":"X" slices,
// one pid per device (process_name metadata), one tid per stream or link (thread_name),
// ts and dur in microseconds, and flow events ("s"/"f") from a send to its receive.
// Output is deterministic: events are written in the order they were added, numbers with
// fixed precision (picosecond-exact microseconds).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "sim/time.hpp"

namespace shardsim::analysis {

class ChromeTrace {
 public:
  void process(int pid, const std::string& name, int sort_index);
  void thread(int pid, int tid, const std::string& name);
  void slice(int pid, int tid, const std::string& name, const std::string& cat, Time start, Time end,
             const nlohmann::json& args = nullptr);
  /// A flow arrow from (pid_from, tid_from) at t_from to (pid_to, tid_to) at t_to.
  void flow(std::uint64_t id, int pid_from, int tid_from, Time t_from, int pid_to, int tid_to, Time t_to);
  /// Free-form metadata stored under "otherData" (e.g. the effective configuration).
  void metadata(const std::string& key, const nlohmann::json& value) { other_[key] = value; }
  [[nodiscard]] std::size_t size() const { return events_.size(); }
  [[nodiscard]] std::string str() const;

 private:
  std::vector<std::string> events_;
  nlohmann::json other_ = nlohmann::json::object();
};

/// Microseconds with 6 decimals (picosecond resolution), as text.
std::string us(Time t);

}  // namespace shardsim::analysis
