#pragma once
// OpenMPI 4.1's own choice of algorithm: coll/tuned's fixed decision rules, the default when no
// algorithm is forced (coll_tuned_use_dynamic_rules off, or on without a rules file and with the
// forced algorithm 0). Source: open-mpi/ompi v4.1.4, ompi/mca/coll/tuned/
// coll_tuned_decision_fixed.c (Debian's openmpi 4.1.4-3 source package, the OpenMPI the MPI
// backend runs): ompi_coll_tuned_{allreduce, reduce_scatter, allgather, bcast,
// alltoall}_intra_dec_fixed. Each is a table of switch points on the communicator size, then on
// total_dsize, "generated based off of results that were gathered using the
// ompi-collectives-tuning package ... averaged" (the file's header); the switch points are
// transcribed here as data (ompi_decision.cpp), the commutative branch of all-reduce and
// reduce-scatter (the MPI bench reduces with MPI_SUM).
//
// total_dsize, in DESIGN 2's sizes S: all-reduce, broadcast and reduce-scatter (the sum of the
// receive counts) S; all-gather (the send count) and all-to-all (the count to each rank) S / n.
// Every decision calls ..._intra_do_this(..., alg, 0, 0): segment size 0 (no segmentation, as
// the forced algorithms the schedules model) and fan-out 0, which ompi_coll_base_topo_build_chain
// forces to 1 ("invalid fanout of ZERO, forcing to 1 (pipeline)"): the decision's broadcast
// "chain" runs the pipeline schedule.
#include <cstdint>
#include <string>

#include "models/collectives/collective.hpp"

namespace shardsim::coll {

struct OmpiDecision {
  int id = 0;                ///< OpenMPI's algorithm id (coll_tuned_<coll>_algorithm)
  std::string algorithm;     ///< its OpenMPI name (ompi_tuned.hpp)
  std::string schedule;      ///< the ompi_schedule() name that runs it (chain -> pipeline)
  std::uint64_t total_dsize = 0;  ///< the size the rule compared
};

/// OpenMPI 4.1.4's fixed decision for `kind` on `n` ranks and S = `bytes`. ConfigError naming
/// `where` for n < 2 or a collective without a decision here (reduce, barrier, ...).
OmpiDecision ompi_fixed_decision(OpKind kind, std::size_t n, std::uint64_t bytes, const std::string& where);

}  // namespace shardsim::coll
