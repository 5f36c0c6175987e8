#pragma once
// Torus helpers shared by the torus builder, the presets and the tests.
#include <vector>

namespace shardsim::topo {

/// A ring over the ranks of a torus (row-major, last dimension fastest) in which consecutive
/// ranks are neighbours, including the closing edge, when the mesh has a Hamiltonian cycle
/// (dimensions of size 1 dropped: at least two dimensions and an even device count) or it is
/// one wrapped dimension: a boustrophedon snake. It starts with row 0 in order (ranks 0, 1, ..., dims.back()-1), so
/// the ring restricted to the first k ranks of a row is that row. Odd counts get the
/// boustrophedon path (its closing edge is not one link). O(N).
std::vector<int> torus_ring_order(const std::vector<int>& dims, const std::vector<bool>& wrap);

}  // namespace shardsim::topo
