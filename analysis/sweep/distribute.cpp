#include "analysis/sweep/distribute.hpp"

#include <cstdlib>
#include <stdexcept>

#include "sim/error.hpp"

#ifdef SHARDSIM_SWEEP_MPI
#include <mpi.h>
#endif

namespace shardsim::sweep {

bool mpi_launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

#ifdef SHARDSIM_SWEEP_MPI

bool mpi_built() { return true; }

namespace {
void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}
}  // namespace

MpiWorld mpi_world() {
  static const MpiWorld world = [] {
    MpiWorld w;
    if (!mpi_launched()) return w;
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    std::atexit(finalize_at_exit);
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
    return w;
  }();
  return world;
}

std::int64_t mpi_broadcast(std::int64_t value) {
  if (mpi_world().size == 1) return value;
  long long v = value;
  MPI_Bcast(&v, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  return v;
}

void mpi_send_text(const std::string& text, int dest) {
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, dest, 1, MPI_COMM_WORLD);
}

std::string mpi_recv_text(int source) {
  MPI_Status st;
  MPI_Probe(source, 1, MPI_COMM_WORLD, &st);
  int n = 0;
  MPI_Get_count(&st, MPI_CHAR, &n);
  std::string text(static_cast<std::size_t>(n), '\0');
  MPI_Recv(text.data(), n, MPI_CHAR, source, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return text;
}

void mpi_abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

#else

bool mpi_built() { return false; }

MpiWorld mpi_world() {
  if (mpi_launched()) {
    throw ConfigError("shardsim sweep", "started by an MPI launcher, but this shardsim was built without MPI",
                      "a build with MPI (SHARDSIM_WITH_MPI=ON) or a run without mpirun");
  }
  return {};
}

std::int64_t mpi_broadcast(std::int64_t value) { return value; }
void mpi_send_text(const std::string&, int) { throw std::logic_error("mpi_send_text without MPI"); }
std::string mpi_recv_text(int) { throw std::logic_error("mpi_recv_text without MPI"); }
void mpi_abort(int code) { std::_Exit(code); }

#endif

}  // namespace shardsim::sweep
