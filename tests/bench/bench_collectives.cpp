// Flow-simulation figures (issue 2): ring all-reduce of 1 GiB over 1,024 chips of a 32x32
// torus (target < 1 s), over 16,384 ranks of a 128x128 torus (target < 60 s and < 4 GiB),
// and over 512 GPUs of a rail-optimized cluster with a 2:1 oversubscribed spine (< 5 s).
// Concurrent collectives (issue 12): `collective --groups stride:8` on dgx-h100-1024, the 8
// rail groups of 128 GPUs each running a ring all-reduce of 1 GiB at once on one shared flow
// network (target < 5 s).
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "analysis/commands/collective_run.hpp"
#include "bench.hpp"
#include "models/collectives/algorithm.hpp"
#include "models/collectives/flow_eval.hpp"
#include "topologies/load.hpp"

namespace shardsim::bench {
namespace {

void run_one(const std::string& label, const std::string& spec, const std::string& algorithm, std::uint64_t bytes,
             double target_s) {
  Stopwatch build;
  topo::Topology t = topo::make_topology(spec, "bench");
  coll::CollectiveOp op;
  op.kind = coll::OpKind::allreduce;
  op.size_bytes = bytes;
  op.group.resize(t.num_devices());
  std::iota(op.group.begin(), op.group.end(), 0);
  const coll::CostParams p;
  const auto& algo = coll::find_algorithm(algorithm, op.kind, "bench");
  const coll::Schedule s = algo.build(t, op, p);
  const double build_s = build.seconds();
  Stopwatch sw;
  const auto r = coll::evaluate_flow(t, op, s, {});
  const double wall = sw.seconds(), cpu = sw.cpu_seconds();
  const double analytical = algo.analytical(t, op, p).time_s;
  fmt::print(
      "{}: {} ranks, simulated {:.6g} s (analytical {:.6g} s), wall {:.3f} s, cpu {:.3f} s (+{:.3f} s setup; "
      "target < {} s), {} events = {:.2f} M events/s, {} flows = {:.2f} M flow completions/s (by cpu: {:.2f}), "
      "peak RSS {:.0f} MiB\n",
      label, t.num_devices(), r.time_s, analytical, wall, cpu, build_s, target_s, r.events,
      static_cast<double>(r.events) / wall / 1e6, r.network.flows_completed,
      static_cast<double>(r.network.flows_completed) / wall / 1e6,
      static_cast<double>(r.network.flows_completed) / cpu / 1e6, peak_rss_mib());
}

void run_groups(const std::string& label, const cli::CollectiveOptions& o, double target_s) {
  Stopwatch sw;
  const auto rows = cli::run_collective(o);
  const double wall = sw.seconds(), cpu = sw.cpu_seconds();
  double slowest = 0;
  std::uint64_t transfers = 0;
  for (const auto& r : rows) {
    slowest = std::max(slowest, r.time_s);
    transfers += r.transfers;
  }
  fmt::print(
      "{}: {} groups of {} ranks, simulated {:.6g} s (slowest group), wall {:.3f} s, cpu {:.3f} s (all included; "
      "target < {} s), {} events, {} flows = {:.2f} M flow completions/s (by cpu), peak RSS {:.0f} MiB\n",
      label, rows.size(), rows.empty() ? 0 : rows.front().ranks, slowest, wall, cpu, target_s,
      rows.empty() ? 0 : rows.front().events, transfers, static_cast<double>(transfers) / cpu / 1e6, peak_rss_mib());
}

}  // namespace

void bench_groups() {
  cli::CollectiveOptions groups;
  groups.topology = "dgx-h100-1024";
  groups.bytes = "1GiB";
  groups.algorithm = "ring";
  groups.fidelity = "flow";
  groups.groups = "stride:8";
  run_groups("collective --groups stride:8: 8 concurrent ring all-reduces of 1 GiB, dgx-h100-1024", groups, 5.0);
}

void bench_collectives(bool large) {
  run_one("ring all-reduce 1 GiB, 32x32 torus", "torus:dims=32x32,bw=100GB/s,lat=1us", "ring", 1ull << 30, 1.0);
  run_one("ring all-reduce 1 GiB, 512 GPUs rail-optimized, 2:1 spine",
          "rail_optimized:nodes=64,gpus_per_node=8,nvlink_bw=450GB/s,nic_bw=400Gb/s,oversubscription=2,cross_rail=spine,nvlink_lat=250ns,ib_lat=1us",
          "ring", 1ull << 30, 5.0);
  bench_groups();
  if (large) {
    run_one("ring all-reduce 1 GiB, 128x128 torus", "torus:dims=128x128,bw=100GB/s,lat=1us", "ring", 1ull << 30, 60.0);
  }
}

}  // namespace shardsim::bench
