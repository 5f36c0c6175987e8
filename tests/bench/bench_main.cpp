// shardsim_bench [--quick|--large]: prints figures for the performance targets of issue 2.
#include <fmt/format.h>
#include <sys/resource.h>

#include <cstring>

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
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) large = false;
  }
  shardsim::bench::bench_event_queue();
  shardsim::bench::bench_collectives(large);
  shardsim::bench::bench_sweep();
  return 0;
}
