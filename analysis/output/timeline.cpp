#include "analysis/output/timeline.hpp"

#include <fmt/format.h>

namespace shardsim::analysis {

std::string us(Time t) {
  const std::int64_t ps = t.ps();
  const std::int64_t whole = ps / 1'000'000;
  const std::int64_t frac = ps % 1'000'000;
  return fmt::format("{}{}.{:06d}", ps < 0 ? "-" : "", whole < 0 ? -whole : whole, frac < 0 ? -frac : frac);
}

void ChromeTrace::process(int pid, const std::string& name, int sort_index) {
  events_.push_back(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", pid,
                                nlohmann::json(name).dump()));
  events_.push_back(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})",
                                pid, sort_index));
}

void ChromeTrace::thread(int pid, int tid, const std::string& name) {
  events_.push_back(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pid, tid,
                                nlohmann::json(name).dump()));
}

void ChromeTrace::slice(int pid, int tid, const std::string& name, const std::string& cat, Time start, Time end,
                        const nlohmann::json& args) {
  std::string e = fmt::format(R"({{"ph":"X","name":{},"cat":{},"pid":{},"tid":{},"ts":{},"dur":{})",
                              nlohmann::json(name).dump(), nlohmann::json(cat).dump(), pid, tid, us(start),
                              us(end - start));
  if (!args.is_null()) e += fmt::format(R"(,"args":{})", args.dump());
  e += "}";
  events_.push_back(std::move(e));
}

void ChromeTrace::flow(std::uint64_t id, int pid_from, int tid_from, Time t_from, int pid_to, int tid_to, Time t_to) {
  events_.push_back(fmt::format(R"({{"ph":"s","name":"xfer","cat":"flow","id":{},"pid":{},"tid":{},"ts":{}}})", id,
                                pid_from, tid_from, us(t_from)));
  events_.push_back(fmt::format(R"({{"ph":"f","bp":"e","name":"xfer","cat":"flow","id":{},"pid":{},"tid":{},"ts":{}}})",
                                id, pid_to, tid_to, us(t_to)));
}

std::string ChromeTrace::str() const {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"otherData\":" + other_.dump() + ",\"traceEvents\":[\n";
  for (std::size_t i = 0; i < events_.size(); ++i) {
    out += events_[i];
    out += i + 1 < events_.size() ? ",\n" : "\n";
  }
  out += "]}\n";
  return out;
}

}  // namespace shardsim::analysis
