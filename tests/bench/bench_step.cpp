// Training-step figures (issue 3):
//  - `step` for GPT-3 175B on 1,024 H100s (dgx-h100-1024) with zero3 at flow fidelity, every
//    rank (folded where exact, rank_program.hpp), end to end as the CLI does it (topology, zoo
//    trace, workload, simulation): target < 5 s (issue 12);
//  - analytical fidelity: step evaluations per second on one core, target >= 1,000. Each
//    evaluation starts from scratch (a new CommModel, so no memoised collective), over a
//    mix of strategies and per-device batches of GPT-3 1.3B on dgx-h100-256; the topology
//    and the zoo traces are built once, as a sweep over strategies and sizes reuses them.
#include <fmt/format.h>

#include <array>

#include "bench.hpp"
#include "models/compute/device.hpp"
#include "models/optimizer/optimizer.hpp"
#include "models/step/step.hpp"
#include "models/strategy/strategy.hpp"
#include "models/step/topology_comm.hpp"
#include "topologies/load.hpp"
#include "traces/trace/workload.hpp"
#include "traces/zoo/zoo.hpp"

namespace shardsim::bench {
namespace {

step::StepConfig config(const std::string& strategy, std::uint64_t dp, bool checkpointing) {
  step::StepConfig c;
  c.strategy = step::strategy_from_string(strategy, "bench");
  c.optimizer = &opt::find_optimizer("adam", "bench");
  c.precision = opt::Precision::mixed;
  c.dp = dp;
  c.checkpointing = checkpointing;
  step::validate(c);
  return c;
}

void bench_gpt3_flow() {
  Stopwatch sw;
  const topo::Topology t = topo::make_topology("dgx-h100-1024", "bench");
  const auto& dev = compute::find_device("h100", "bench");
  const auto w = trace::to_workload(zoo::generate(zoo::find_model("gpt3-175b", "bench"), 1, 0));
  const auto c = config("zero3", t.num_devices(), true);
  step::TopologyComm comm(t, step::Fidelity::flow);
  const auto r = step::simulate_step(w, dev, c, comm);
  const double wall = sw.seconds(), cpu = sw.cpu_seconds();
  fmt::print(
      "step gpt3-175b zero3 adam, dgx-h100-1024, batch 1, checkpointing, flow fidelity: step {:.4g} s, mfu {:.1f}%, "
      "{} ranks, {} simulated, {} events, {} distinct collectives simulated; wall {:.3f} s, cpu {:.3f} s, peak RSS "
      "{:.0f} MiB (target < 5 s)\n",
      r.step_time_s, 100 * r.mfu, r.ranks, r.ranks_simulated, r.events, comm.evaluations(), wall, cpu, peak_rss_mib());
}

void bench_analytical_rate() {
  const topo::Topology t = topo::make_topology("dgx-h100-256", "bench");
  const auto& dev = compute::find_device("h100", "bench");
  const auto& m = zoo::find_model("gpt3-1.3b", "bench");
  const std::array<std::uint64_t, 4> batches{1, 2, 4, 8};
  std::vector<step::Workload> ws;
  for (auto b : batches) ws.push_back(trace::to_workload(zoo::generate(m, b, 0)));
  const std::array<const char*, 5> strategies{"replicated", "sharded", "zero1", "zero2", "zero3"};
  std::vector<step::StepConfig> cs;
  for (const char* s : strategies) cs.push_back(config(s, t.num_devices(), false));

  Stopwatch sw;
  std::uint64_t evals = 0;
  double checksum = 0;
  while (sw.cpu_seconds() < 2.0) {
    for (const auto& w : ws) {
      for (const auto& c : cs) {
        step::TopologyComm comm(t, step::Fidelity::analytical);  // fresh: nothing memoised
        checksum += step::simulate_step(w, dev, c, comm).step_time_s;
        ++evals;
      }
    }
  }
  const double wall = sw.seconds(), cpu = sw.cpu_seconds();
  fmt::print(
      "step analytical, gpt3-1.3b on dgx-h100-256, 5 strategies x 4 batches, from scratch: {} evaluations, "
      "{:.0f} per wall second, {:.0f} per cpu second (target >= 1000; mean step {:.4g} s)\n",
      evals, static_cast<double>(evals) / wall, static_cast<double>(evals) / cpu, checksum / static_cast<double>(evals));
}

}  // namespace

void bench_step() {
  bench_gpt3_flow();
  bench_analytical_rate();
}

}  // namespace shardsim::bench
