// Parallel-layout figures (issue 13):
//  - a 3D-parallel step: GPT-3 175B, tp=8, pp=8, dp=16, interleaved 1F1B (v = 2), 1,024 H100
//    (dgx-h100-1024), flow fidelity on the shared network (folded to one rank per stage):
//    target < 10 s;
//  - `plan` over every factorization and option for Llama 3.1 405B, analytical, on the largest
//    DGX H100 preset (1,024 GPUs; the 16,384 has no preset): target < 60 s.
#include <fmt/format.h>

#include "analysis/plan/mesh_plan.hpp"
#include "bench.hpp"
#include "models/compute/device.hpp"
#include "models/optimizer/optimizer.hpp"
#include "models/step/parallel_graphs.hpp"
#include "models/step/topology_comm.hpp"
#include "topologies/load.hpp"
#include "traces/models/model_config.hpp"

namespace shardsim::bench {

void bench_parallel() {
  {
    Stopwatch sw;
    const topo::Topology t = topo::make_topology("dgx-h100-1024", "bench");
    const auto& dev = compute::find_device("h100", "bench");
    const auto model = models::resolve_model("gpt3-175b", "bench");
    step::ParallelStepConfig c;
    c.model = &model;
    c.mesh = {16, 8, 8, 1, 1};
    c.micro_batch = 1;
    c.global_batch = 1536;
    c.schedule = {parallel::ScheduleKind::interleaved, 2};
    c.recompute = parallel::Recompute::selective;
    c.sequence_parallel = true;
    c.strategy.strategy = step::Strategy::zero1;
    c.optimizer = &opt::find_optimizer("adam", "bench");
    step::TopologyComm comm(t, step::Fidelity::flow);
    const auto r = step::simulate_parallel_step(c, dev, comm);
    fmt::print("parallel step gpt3-175b tp=8 pp=8 dp=16 interleaved:2, dgx-h100-1024, flow: step {:.4g} s, mfu {:.1f}%, "
               "{} ranks, {} simulated, {} events; wall {:.3f} s, cpu {:.3f} s, peak RSS {:.0f} MiB (target < 10 s)\n",
               r.step.step_time_s, 100 * r.step.mfu, r.step.ranks, r.step.ranks_simulated, r.step.events, sw.seconds(),
               sw.cpu_seconds(), peak_rss_mib());
  }
  {
    Stopwatch sw;
    plan::MeshPlanRequest r;
    r.plan.model = std::string(SHARDSIM_SOURCE_DIR) + "/tests/data/models/llama-3-405b/config.json";
    r.plan.seq = 8192;
    r.plan.tokens = 15e12;
    r.plan.global_batch = 2048;
    r.plan.hardware = {"meta-h100-roce-16384"};
    const auto p = plan::make_mesh_plan(r);
    const auto& b = p.feasible.at(p.pareto.at(0));
    fmt::print("plan llama-3.1-405b, meta-h100-roce-16384, analytical, every mesh x micro-batch x schedule x strategy: {} meshes, "
               "{} steps simulated, best {} micro-batch {} {} {} {:.4g} s; wall {:.3f} s, cpu {:.3f} s (target < 60 s)\n",
               p.considered, p.simulated, b.mesh, b.micro_batch, b.schedule, b.strategy, b.step_time_s, sw.seconds(),
               sw.cpu_seconds());
  }
}

}  // namespace shardsim::bench
