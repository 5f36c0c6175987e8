#pragma once
// Launching the MPI benchmark (analysis/backends/mpi/mpi_bench.cpp) through mpirun, with a
// timeout on every launch: a hang, a crashing rank or a missing mpirun becomes a LaunchError
// with the command and the tail of its output, never a hang.
//
// OpenMPI algorithm selection (ompi_info --param coll tuned --level 9, OpenMPI 4.1):
//   coll_tuned_use_dynamic_rules 1 and coll_tuned_<coll>_algorithm N, where N is
//   allreduce:      1 basic_linear, 2 nonoverlapping, 3 recursive_doubling, 4 ring,
//                   5 segmented_ring, 6 rabenseifner
//   reduce_scatter: 1 non_overlapping, 2 recursive_halving, 3 ring, 4 butterfly
//   allgather:      1 linear, 2 bruck, 3 recursive_doubling, 4 ring, 5 neighbor, 6 two_proc
//   bcast:          1 basic_linear, 2 chain, 3 pipeline, 4 split_binary_tree, 5 binary_tree,
//                   6 binomial, 7 knomial, 8 scatter_allgather, 9 scatter_allgather_ring
//   alltoall:       1 linear, 2 pairwise, 3 modified_bruck, 4 linear_sync, 5 two_proc
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace shardsim::backends {

/// An external program failed (not found, crashed, timed out, non-zero exit).
class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ProcessResult {
  int exit_code = 0;      ///< exit status, or 128 + signal
  bool timed_out = false;
  std::string output;     ///< stdout and stderr together
};

/// Runs argv[0] (searched in PATH) with a timeout; the child gets its own process group, and
/// on timeout the whole group gets SIGTERM, then SIGKILL 2 s later. `echo` copies the output
/// to our stdout as it arrives. Throws LaunchError if the program cannot be started.
/// `interruptible` = false ignores the interrupt flag (teardown must run after a signal).
ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s, bool echo = false,
                          bool interruptible = true);

/// Set (async-signal-safe) by a SIGINT/SIGTERM handler: run_process() then kills its child's
/// process group and throws LaunchError("interrupted by signal N"). 0 = not interrupted.
void request_interrupt(int signal_number) noexcept;
int interrupt_signal() noexcept;
/// Installs SIGINT/SIGTERM handlers calling request_interrupt (no SA_RESTART) for the
/// lifetime of the object, restoring the previous ones after.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct Saved;
  Saved* saved_;
};

/// Full path of `program` in PATH (or as given when it contains '/'), nullopt if absent.
std::optional<std::string> find_in_path(const std::string& program);

/// MCA value of an OpenMPI algorithm for a collective (allreduce, reducescatter, allgather,
/// broadcast, alltoall); nullopt if that collective has no algorithm of that name.
std::optional<int> ompi_algorithm_id(const std::string& collective, const std::string& algorithm);
/// Names accepted by ompi_algorithm_id for a collective, comma separated.
std::string ompi_algorithm_names(const std::string& collective);

/// One `--algorithm` entry of `bench emulate`: NAME runs the OpenMPI algorithm NAME for every
/// collective of `collectives` that has one of that name (`--collective allreduce,broadcast
/// --algorithm ring,binomial` runs ring for all-reduce, binomial for broadcast);
/// COLLECTIVE:NAME for that collective only (alltoall:linear, not allgather's linear). An
/// empty entry: OpenMPI's own choice for all. Throws ConfigError naming --algorithm when no
/// collective has it.
struct AlgorithmRun {
  std::vector<std::string> collectives;
  std::string algorithm;
};
AlgorithmRun collectives_with_algorithm(const std::vector<std::string>& collectives, const std::string& entry);

/// Every (collective, algorithm) pair the `--algorithm` entries ask for (collectives_with_algorithm
/// each), grouped by collective in the order of `collectives`, then in the order of the entries:
/// what one mpirun of `bench emulate` runs, switching the algorithm in the process (MpiRun::
/// algorithms). An empty entry (OpenMPI's own choice) adds every collective with "". Throws what
/// collectives_with_algorithm throws.
struct AlgorithmSequence {
  std::vector<std::string> collectives;  ///< may repeat: one entry per pair
  std::vector<std::string> algorithms;   ///< parallel to collectives
};
AlgorithmSequence algorithm_sequence(const std::vector<std::string>& collectives, const std::vector<std::string>& entries);

struct MpiRun {
  int np = 2;
  std::vector<std::string> collectives{"allreduce"};
  std::string algorithm;  ///< OpenMPI name; empty = OpenMPI's default decision
  /// Not empty: one per entry of `collectives`, which may then repeat a collective; the program
  /// runs the entries in order and, before each, sets that collective's coll_tuned_<coll>_algorithm
  /// through MPI_T (MPI_T_cvar_write) and times it on a fresh MPI_Comm_dup, whose tuned module
  /// reads the variable when it is created ("" = 0, OpenMPI's own decision). One mpirun for all
  /// algorithms: mpirun's start-up, a daemon per emulated host through the rsh agent, took 8-10 s
  /// per launch at 8 hosts on the loaded 2-core machine, more than the data of most pairs.
  std::vector<std::string> algorithms;
  std::string min_bytes = "1M", max_bytes = "8M";
  std::uint64_t factor = 2;
  int warmup = 2, iters = 10, peer = 1;
  std::string jsonl;           ///< records are appended here
  std::string topology_file;   ///< embedded into the records
  std::string source = "shardsim bench mpi";
  double timeout_s = 300;
  std::string program;         ///< shardsim-mpi-bench; empty = next to the running executable
  std::string mpirun = "mpirun";
  /// Extra mpirun arguments (hostfile, rsh agent, interface selection), before the program.
  std::vector<std::string> mpirun_args;
  /// Prefix of the whole command (e.g. ip netns exec NS).
  std::vector<std::string> wrapper;
  std::vector<std::string> program_args;  ///< extra program arguments (failure injection)
  /// > 0: the program sleeps this long where OpenMPI would sched_yield (--idle-sleep-us;
  /// needs mpi_yield_when_idle). For ranks that share cores (emulated clusters).
  int idle_sleep_us = 0;
  /// > 0 (with idle_sleep_us): the ranks run SCHED_RR at this priority (--rt-priority).
  int rt_priority = 0;
  bool echo = true;
};

/// The mpirun command line for a run: --allow-run-as-root --oversubscribe (2 cores), the
/// algorithm's MCA parameters, then the program and its options (with `algorithms`: only
/// coll_tuned_use_dynamic_rules on the command line, and the program gets `-a COLL:NAME,...`,
/// the records' labels, and `--cvar VAR=ID,...`, both parallel to `-c`). Throws ConfigError for an algorithm a requested
/// collective does not have (naming --algorithm and the valid names).
std::vector<std::string> mpirun_command(const MpiRun& r);

/// Runs it; throws LaunchError (mpirun missing, program missing, timeout, non-zero exit)
/// with the command line and the last lines of output.
ProcessResult launch_mpi(const MpiRun& r);

/// Directory of the running executable (/proc/self/exe), where shardsim-mpi-bench is built.
std::string self_dir();

}  // namespace shardsim::backends
