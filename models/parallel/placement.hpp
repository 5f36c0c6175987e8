#pragma once
// Placement of the mesh axes onto topology structure (DESIGN 8). Rank r of the mesh is
// topology device r; the mesh order decides which axis lands where:
//  - on GPU clusters the fast domain is an NVSwitch node (Topology::device_groups, e.g. the
//    8 GPUs of a DGX): an axis is "inside the NVLink domain" when every one of its groups lies
//    in one domain, otherwise "across domains". Megatron's default order keeps tp (then cp)
//    inside a node, puts dp across nodes and pp outermost (Narayanan et al. 2021, sec. 3.3:
//    tensor parallelism up to the GPUs of a server, pipeline parallelism across servers).
//    The topology model has no rack level; the slowest axis (pp by default) is the one whose
//    neighbours are farthest apart in rank order.
//  - on tori (Topology::torus_dims, rank = row-major coordinates, last dimension fastest) an
//    axis spans the dimensions along which its groups' coordinates vary; a GSPMD mesh
//    data=64,model=16 on a 32x32 TPU v3 pod puts model along half of dimension 1 and data
//    over the other half and all of dimension 0.
// The explicit override is the mesh order (`--mesh ...,order=tp-dp-pp` or the GSPMD written
// order); placement_issues() reports what a planner should reject, e.g. "tp=16 leaves the
// NVLink domain of 8".
#include <cstdint>
#include <string>
#include <vector>

#include "models/parallel/mesh.hpp"
#include "topologies/topology.hpp"

namespace shardsim::parallel {

/// What placement needs to know of a topology.
struct TopologyShape {
  std::uint64_t devices = 0;
  /// Size of the fast domain (NVSwitch node) when the devices form equal contiguous groups
  /// 0..g-1, g..2g-1, ...; 0 when there is no such structure (tori, flat topologies).
  std::uint64_t domain_size = 0;
  std::vector<int> torus_dims;  ///< empty unless a torus
};

/// Reads device_groups and torus_dims. O(devices).
TopologyShape shape_of(const topo::Topology& t);

struct AxisPlacement {
  Axis axis = Axis::tp;
  /// The axis as the mesh was written: its GSPMD name ("model", "data") when it was, else
  /// to_string(axis). place() sets to_string(axis); name_gspmd_axes() the GSPMD names.
  std::string name;
  std::uint64_t size = 1;
  std::uint64_t stride = 1;
  /// Domain structure: true when every group of the axis lies in one domain (or the axis
  /// has size 1). Meaningless (true) without domains.
  bool inside_domain = true;
  /// Torus dimensions spanned by a group of the axis, and how many distinct coordinates of each
  /// dimension the group touches.
  std::vector<int> torus_dims;
  std::vector<int> torus_extent;
  /// "inside the NVLink domain of 8", "across 16 NVLink domains", "torus dim 1 (16 of 32)",
  /// "torus dims 0 (32 of 32) x 1 (2 of 32)", "size 1".
  std::string where;
};

/// One entry per axis in mesh order (fastest first). Throws ConfigError if the mesh does not
/// use exactly the topology's devices. O(devices) per axis.
std::vector<AxisPlacement> place(const Mesh& mesh, const TopologyShape& shape);

/// Sets the GSPMD names of a mesh written that way (MeshSpec::gspmd_names) on its axes.
void name_gspmd_axes(std::vector<AxisPlacement>& placement, const MeshSpec& spec);

/// Placement problems a planner rejects: tp groups that leave the NVLink
/// domain: "tp=16 leaves the NVLink domain of 8" (or, for a tp that would fit but is laid out
/// with a stride, "tp=2 (stride 8) leaves the NVLink domain of 8"); tp on a torus spread over
/// more than one dimension while one dimension could hold it: "tp=16 spans 2 torus dimensions
/// though one dimension could hold it".
std::vector<std::string> placement_issues(const Mesh& mesh, const TopologyShape& shape);

}  // namespace shardsim::parallel
