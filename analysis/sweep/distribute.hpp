#pragma once
// MPI distribution of a sweep (issue 4, "beyond one machine"). Compiled against MPI when the
// build found it (SHARDSIM_WITH_MPI, compile definition SHARDSIM_SWEEP_MPI); otherwise every
// function reports a single process.
//
// Scheme: static round-robin. Scenario first + k goes to rank k mod P. Every rank runs its
// share on its own thread pool and sends each outcome, in its own order, to rank 0 (point-to-
// point, one message per scenario). Rank 0 writes in global order, taking scenario g from
// rank (g - first) mod P; MPI's non-overtaking rule (same source, tag and communicator keeps
// the send order, MPI 4.0 section 3.5) makes that the next message from that rank, so rank 0
// needs no reordering beyond its own pool's, and the file is byte-identical to a
// single-process run. Only the main thread of each rank calls MPI (MPI_THREAD_FUNNELED).
#include <cstdint>
#include <string>

namespace shardsim::sweep {

/// True when this process was started by an MPI launcher (mpirun/mpiexec/srun set
/// OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK). A plain process never initializes MPI.
bool mpi_launched();
/// True when this binary was built with the MPI distribution.
bool mpi_built();

/// The world: rank 0 of 1 unless launched under MPI (then MPI is initialized once, on the
/// first call, and finalized at exit). Throws ConfigError when launched under MPI but built
/// without it (each rank would write the file).
struct MpiWorld {
  int rank = 0, size = 1;
};
MpiWorld mpi_world();

/// Broadcast from rank 0.
std::int64_t mpi_broadcast(std::int64_t value);
/// Point-to-point text messages (tag 1), blocking.
void mpi_send_text(const std::string& text, int dest);
std::string mpi_recv_text(int source);
/// Ends every rank (rank 0 after writing whole rows, on an interrupt).
[[noreturn]] void mpi_abort(int code);

}  // namespace shardsim::sweep
