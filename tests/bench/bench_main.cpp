// shardsim_bench [--quick] [queue] [flow] [step] [sweep] [cluster] [variation] [parallel]: prints
// figures for the performance targets of issues 2, 3, 12, 13 and 16 (all sections unless some are
// named; --quick skips the 128x128 torus and the 16,384-GPU step). `cluster`: the issue-12 ones.
#include <fmt/format.h>
#include <sys/resource.h>

#include <set>
#include <string>

#include "bench.hpp"

namespace shardsim::bench {
double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}
}  // namespace shardsim::bench

int main(int argc, char** argv) {
  bool large = true;
  std::set<std::string> only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      large = false;
    } else if (a == "queue" || a == "flow" || a == "step" || a == "sweep" || a == "cluster" || a == "variation" ||
               a == "parallel") {
      only.insert(a);
    } else {
      fmt::print(stderr, "shardsim_bench: unknown argument '{}'; expected --quick or a section: queue, flow, step, sweep, cluster, variation, parallel\n", a);
      return 2;
    }
  }
  auto want = [&](const char* s) { return only.empty() || only.count(s) != 0; };
  if (want("queue")) shardsim::bench::bench_event_queue();
  if (want("flow")) shardsim::bench::bench_collectives(large);
  if (want("step")) shardsim::bench::bench_step();
  if (want("sweep")) shardsim::bench::bench_sweep();
  if (want("cluster")) {
    shardsim::bench::bench_gpt3_steps(large);
    shardsim::bench::bench_groups();
  }
  if (want("variation")) shardsim::bench::bench_variation();
  if (want("parallel")) shardsim::bench::bench_parallel();
  return 0;
}
