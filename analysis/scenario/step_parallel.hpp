#pragma once
// Internal to analysis/scenario: the --mesh branch of StepRunner::run (step_run.hpp), a
// transformer step on a device mesh (models/step/parallel_graphs.hpp), and its JSON.
#include <nlohmann/json.hpp>

#include "analysis/scenario/step_run.hpp"
#include "models/compute/device.hpp"
#include "models/step/topology_comm.hpp"
#include "topologies/topology.hpp"

namespace shardsim::analysis::detail {

/// Throws ConfigError naming the first mesh-only option set without --mesh.
void reject_mesh_only(const StepOptions& o);

/// Options checked for a mesh step (flags that only apply without --mesh are errors naming
/// them), the mesh parsed for the topology's device count, the step simulated.
StepReport run_parallel_step(const StepOptions& o, const topo::Topology& topo, const compute::Device& dev,
                             step::CommModel& comm, bool record_timeline);

/// The "parallel" object of the step JSON: mesh, order, placement (per axis in mesh order: axis,
/// name as written (GSPMD names on TPU meshes), size, stride, where, torus_dims, torus_extent),
/// schedule, per-axis times (tp_comm_s, pp_bubble_s, dp_exposed_s, ep_alltoall_s, cp_exposed_s),
/// per-rank times, per-stage memory.
nlohmann::json parallel_json(const ParallelReport& p);

}  // namespace shardsim::analysis::detail
