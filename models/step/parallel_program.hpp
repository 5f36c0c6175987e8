#pragma once
// Internal to models/step: the program of one pipeline stage of the parallel step
// (parallel_graphs.hpp has the schedule and the sources), built by parallel_graphs.cpp and
// instantiated on ranks by parallel_step.cpp. Op deps index earlier ops of the same program;
// a collective's role names the mesh axes of its group; a send/recv's dir the neighbour stage.
#include <cstdint>
#include <string>
#include <vector>

#include "models/parallel/layer_compute.hpp"
#include "models/step/parallel_graphs.hpp"
#include "models/step/task_graph.hpp"

namespace shardsim::step::detail {

using parallel::Axis;

enum class Role : std::uint8_t { tp, cp, ep, dp_dense, dp_expert };
enum class Cat : std::uint8_t { forward, backward, update, tp, ep, cp, dp, pp };

/// The mesh axes of a role's groups.
std::vector<Axis> role_axes(Role r);

// Streams of a rank (parallel_graphs.hpp).
constexpr std::uint32_t kCompute = 0, kModel = 1, kCp = 2, kDp = 3, kSendNext = 4, kRecvPrev = 5, kSendPrev = 6,
                        kRecvNext = 7, kStreams = 8;

struct Op {
  NodeKind kind = NodeKind::compute;
  NodePhase phase = NodePhase::forward;
  Cat cat = Cat::forward;
  std::uint32_t stream = kCompute;
  double duration_s = 0;  // compute
  double gemm_share = 0;  // compute: TaskNode::gemm_share
  bool takes_units = true;  // collective: runs on SMs (NCCL), not TE userbuffers' copy engines
  std::uint16_t units = 0;  // collective: TaskNode::units (0: the device's comm_units)
  coll::OpKind op = coll::OpKind::allreduce;
  std::uint64_t size_bytes = 0;
  Role role = Role::tp;
  int dir = 0;  // send/recv: +1 next stage, -1 previous
  std::uint64_t tag = 0;
  std::uint32_t deps_begin = 0, deps_end = 0;
  std::string name;
};


// What every stage's program shares.
struct Shape {
  const ParallelStepConfig* c = nullptr;
  const parallel::ModelSpec* m = nullptr;
  const compute::Device* dev = nullptr;
  std::uint64_t p = 1, v = 1, mb = 1, seq = 0;
  parallel::LayerCompute lc;
  parallel::HeadCompute head;
  std::uint64_t tp_bytes = 0, ep_bytes = 0, cp_bytes = 0, p2p_bytes = 0;
  parallel::ShardElements layer;  // elements of one layer on a rank
  double wb = 2, gb = 2;
  std::uint64_t dense_group = 1, expert_group = 1;
  double bucket_dense = 0, bucket_expert = 0;  // elements
  bool sharded = false, zero3 = false;
};

struct StageOps {
  std::vector<Op> ops;
  std::vector<std::uint32_t> deps;  ///< CSR by Op::deps_begin / deps_end
};

/// The program of stage `stage` (0..p-1). O(m v L/p) ops.
StageOps build_stage(const Shape& s, std::uint64_t stage);

}  // namespace shardsim::step::detail
