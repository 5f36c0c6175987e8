// Sampled steps under per-rank compute noise (issue 16): 1,000 steps of a 1,024-rank
// data-parallel step (ResNet-50, replicated, dgx-h100-1024, analytical, lognormal:0.05 jitter),
// every rank simulated in every step (no folding: the ranks differ): target < 10 s.
#include <fmt/format.h>

#include "bench.hpp"
#include "models/compute/device.hpp"
#include "models/optimizer/optimizer.hpp"
#include "models/step/step.hpp"
#include "models/step/topology_comm.hpp"
#include "models/step/variation.hpp"
#include "topologies/load.hpp"
#include "traces/trace/workload.hpp"
#include "traces/zoo/zoo.hpp"

namespace shardsim::bench {

void bench_variation() {
  Stopwatch sw;
  const topo::Topology t = topo::make_topology("dgx-h100-1024", "bench");
  const auto& dev = compute::find_device("h100", "bench");
  const auto w = trace::to_workload(zoo::generate(zoo::find_model("resnet50", "bench"), 32, 0));
  step::StepConfig c;
  c.strategy = step::Strategy::replicated;
  c.optimizer = &opt::find_optimizer("adam", "bench");
  c.dp = t.num_devices();
  step::TopologyComm comm(t, step::Fidelity::analytical);
  step::ComputeVariation v;
  v.jitter = step::parse_jitter("lognormal:0.05", "bench");
  v.seed = 1;
  const auto s = step::simulate_step_samples(w, dev, c, comm, v, 1000);
  const double wall = sw.seconds(), cpu = sw.cpu_seconds();
  fmt::print(
      "variation: resnet50 b32 replicated, dgx-h100-1024, analytical, lognormal:0.05, 1000 sampled steps: {} ranks "
      "simulated, {} events/step; mean {:.6g} s, p50 {:.6g}, p99 {:.6g}, max {:.6g} s; wall {:.3f} s, cpu {:.3f} s, "
      "peak RSS {:.0f} MiB (target < 10 s)\n",
      s.first.ranks_simulated, s.first.events, s.mean_s, s.p50_s, s.p99_s, s.max_s, wall, cpu, peak_rss_mib());
}

}  // namespace shardsim::bench
