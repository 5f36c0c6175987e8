#pragma once
// OpenMPI 4.1's own collective algorithms (coll/tuned forcing coll/base), as Schedules, so that
// a record of `shardsim-mpi-bench` with a forced algorithm id is predicted with what that id
// really runs: which rank sends how many bytes to which rank, in which order. These are not
// registered model algorithms (they would change `auto` and `shardsim list`); validation
// (analysis/validation/validate.cpp) calls them for MPI records.
//
// Ranks: schedule rank r = MPI rank r = op.group[r] (OpenMPI's rank order, no ring_order).
// Sizes follow DESIGN 2 (all-reduce and broadcast S = the buffer; reduce-scatter and
// all-gather S = n blocks of S/n; all-to-all S = a rank's send buffer, n blocks of S/n).
// Forced algorithms run with coll_tuned_<coll>_algorithm_segmentsize = 0 (the default), which
// coll/base reads as "no segmentation": every message below is one MPI message.
//
// Each step is a set of concurrent messages under the rank-local barrier rule of Step
// (collective.hpp): a rank sends its step-k messages once its step-(k-1) messages are done.
// OpenMPI sends them with blocking eager sends that return once the data is in the socket
// buffer: validation evaluates records of `bench emulate` (eager limit above every message)
// with FlowOptions::buffered_send_bytes, where a rank waits for its receives only.
// Sources (open-mpi/ompi, ompi/mca/coll/base/, v4.1.x; function names given per algorithm in
// ompi_tuned.cpp):
//   allreduce      ring, segmented_ring (= ring with segment size 0), recursive_doubling,
//                  rabenseifner, basic_linear
//   reducescatter  ring, recursive_halving                (MPI_Reduce_scatter)
//   allgather      ring, recursive_doubling (non-power-of-two n: bruck), bruck, neighbor (odd
//                  n: ring)
//   broadcast      basic_linear, chain (fanout 4), pipeline (chain of fanout 1), binary_tree,
//                  binomial, knomial (radix 4), scatter_allgather_ring
//   alltoall       linear, pairwise, modified_bruck, linear_sync (= linear: see the .cpp)
// Not modelled (ompi_unmodelled() says why): allreduce nonoverlapping, reduce-scatter
// non_overlapping and butterfly, allgather linear, broadcast split_binary_tree and
// scatter_allgather, two_proc (n = 2 only).
// Non-power-of-two n: the fold of the first 2 (n - 2^floor(log2 n)) ranks into pairs before,
// and the unfold after, exactly as the OpenMPI functions do (recursive doubling and recursive
// halving: the even rank of a pair hands its vector to the odd one, which goes on; Rabenseifner:
// the pair exchanges halves and the even rank goes on).
#include <optional>
#include <string>
#include <vector>

#include "models/collectives/collective.hpp"

namespace shardsim::coll {

/// The OpenMPI algorithm names this file models for a collective, in OpenMPI's id order.
std::vector<std::string> ompi_algorithms(OpKind kind);

/// Why (kind, algorithm) at n ranks has no schedule here (an OpenMPI name that is not
/// modelled, a name OpenMPI does not have, n < 2); nullopt when ompi_schedule() builds it.
std::optional<std::string> ompi_unmodelled(OpKind kind, const std::string& algorithm, std::size_t n);

/// OpenMPI 4.1's name of algorithm `id` (1-based, coll_tuned_<coll>_algorithm's values) for a
/// collective, modelled or not; ConfigError naming `where` for an id OpenMPI does not have.
std::string ompi_algorithm_name(OpKind kind, int id, const std::string& where);

/// The schedule of OpenMPI's `algorithm` for `op` (op.group.size() ranks, root 0 for
/// broadcast). Throws ConfigError("--algorithm", ...) for what ompi_unmodelled() rejects.
/// O(steps x n) transfers; deterministic.
Schedule ompi_schedule(const CollectiveOp& op, const std::string& algorithm);

}  // namespace shardsim::coll
