// shardsim-mpi-bench: an OpenMPI microbenchmark in the manner of nccl-tests and the OSU
// micro-benchmarks. For each collective and size: `warmup` untimed calls, then `iters` timed
// calls, each after an MPI_Barrier and timed alone (osu_allreduce.c; see time_collective)
// (broadcast: root 0; all-to-all: S = a rank's whole send buffer, n blocks of S/n, as
// nccl-tests' alltoall); the time is the median over the calls of the call's slowest rank
// (MPI_Allreduce MAX per call, as nccl-tests reports the slowest rank). Point-to-point kinds run between
// rank 0 and --peer while the other ranks wait at the barrier:
//   pingpong: 0 sends, peer echoes; time = round trip / 2 (osu_latency.c);
//   exchange: 0 and peer MPI_Sendrecv S bytes each way at once (osu_bibw, window 1); the time
//             is the slower end's.
// The OpenMPI algorithm is chosen by the launcher (--mca coll_tuned_*_algorithm), or per -c
// entry by --cvar VAR=ID (MPI_T_cvar_write, then a fresh MPI_Comm_dup that the entry runs on;
// launch.hpp MpiRun::algorithms); --algorithm only labels the records. Rank 0 prints an nccl-tests-like table and appends JSONL records
// (traces/logs/record.hpp) to --jsonl.
//
// --idle-sleep-us N (emulated clusters: N hosts on a few shared cores): OpenMPI polls for
// progress in a loop and, with mpi_yield_when_idle, calls sched_yield() when a poll found
// nothing. This program defines sched_yield() (exported, so libopen-pal's call binds here)
// and sleeps N us instead: a waiting rank leaves the core to the ranks that move data, as
// it would on a host of its own. N = 0 (default) is the real sched_yield().
// Backoff: a rank whose polls have found nothing for longer than kIdleBackoff_us in a row
// (it waits for a parent in a tree, for the next step) sleeps kIdleBackoffFactor x N per
// poll until a poll finds work. Without it, 6-8 ranks polling every N = 20 us under
// SCHED_RR took the 2 cores whole (up to the kernel's real-time limit, 95 %): the daemons,
// mpirun and the kernel's deferred packet processing (ksoftirqd), all at normal priority,
// got the remaining 5 %, the emulated network stalled and every 6- and 8-host mpirun timed
// out (docs/measurements.md, "Emulated matrix"). A rank that is moving data keeps N: its
// socket has data again within a segment's time.
// --rt-priority P (with --idle-sleep-us): each rank's main thread, which runs OpenMPI's
// progress, is scheduled SCHED_RR at priority P, so that other work on the machine (builds)
// does not delay a rank whose data has arrived; the emulated host's CPU is then its own. The
// ranks sleep whenever they wait, so they take little CPU. Where the policy is refused
// (no CAP_SYS_NICE, no real-time budget in the cgroup) rank 0 says so and the run goes on.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <mpi.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "analysis/backends/mpi/bench_math.hpp"
#include "sim/units.hpp"
#include "traces/logs/record.hpp"

namespace {

std::atomic<long> g_idle_sleep_ns{0};
// sched_yield backoff (header comment): after this long without work a rank polls every
// kIdleBackoffFactor x N. 200 us is ~4 % of a step of the smallest checked message (1 MiB / 8
// ranks at 400 Mbit/s = 2.6 ms), so a rank within a transfer is never slowed; a poll that
// takes longer than kPollGap_us (reading a segment off the socket) counts as work.
constexpr double kIdleBackoff_us = 200;
constexpr long kIdleBackoffFactor = 5;
constexpr double kPollGap_us = 30;

}  // namespace

// Interposes libc's sched_yield for OpenMPI's idle loop (see the header comment); exported by
// the link option in CMakeLists.txt.
extern "C" int sched_yield() noexcept {
  const long ns = g_idle_sleep_ns.load(std::memory_order_relaxed);
  if (ns <= 0) return static_cast<int>(::syscall(SYS_sched_yield));
  // Only the thread that polls (OpenMPI's progress, the main thread) calls this in a loop:
  // thread-local state, no locking.
  thread_local timespec last_return{0, 0}, idle_since{0, 0};
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const auto us_between = [](const timespec& a, const timespec& b) {
    return static_cast<double>(b.tv_sec - a.tv_sec) * 1e6 + static_cast<double>(b.tv_nsec - a.tv_nsec) / 1e3;
  };
  // A call soon after the previous one returned: the poll between them found nothing (OpenMPI
  // yields only after an empty poll), so the idle stretch goes on; a longer gap: work was done.
  const double poll_gap_us = us_between(last_return, now);
  if (poll_gap_us > kPollGap_us) idle_since = now;
  const bool long_idle = us_between(idle_since, now) > kIdleBackoff_us;
  timespec t{0, long_idle ? ns * kIdleBackoffFactor : ns};
  ::nanosleep(&t, nullptr);
  ::clock_gettime(CLOCK_MONOTONIC, &last_return);
  return 0;
}

namespace {

struct Options {
  std::string collectives = "allreduce";
  std::string min_bytes = "1M", max_bytes = "8M", step_bytes = "0";
  std::uint64_t factor = 2;
  int warmup = 2, iters = 10, peer = 1;
  std::string algorithm, jsonl, topology_file, source = "shardsim-mpi-bench";
  std::string cvars;  // --cvar VAR=VALUE,... parallel to -c (launch.hpp MpiRun::algorithms)
  int crash_rank = -1, hang_rank = -1;  // failure injection for the launcher tests
  int idle_sleep_us = 0;
  int rt_priority = 0;
};

// A barrier that sleeps between tests instead of spinning: ranks idle during a point-to-point
// test must not take CPU from the two that measure (2 cores, oversubscribed).
void gentle_barrier(MPI_Comm comm) {
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Ibarrier(comm, &req);
  int done = 0;
  while (!done) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done) ::usleep(200);
  }
}

double time_collective(MPI_Comm comm, const std::string& coll, std::uint64_t bytes, int rank, int n, int peer,
                       int warmup, int iters, std::vector<float>& a, std::vector<float>& b) {
  const auto count = static_cast<int>(shardsim::bench::call_count(coll, bytes, n, sizeof(float)));
  const std::vector<int> counts(static_cast<std::size_t>(n), count);
  const auto one = [&] {
    if (coll == "allreduce") {
      MPI_Allreduce(a.data(), b.data(), count, MPI_FLOAT, MPI_SUM, comm);
    } else if (coll == "reducescatter") {
      // MPI_Reduce_scatter with equal counts, not MPI_Reduce_scatter_block: the block variant is
      // a separate tuned collective (coll_tuned_reduce_scatter_block_algorithm, other ids), so
      // forcing coll_tuned_reduce_scatter_algorithm left it on its own fixed decision.
      MPI_Reduce_scatter(a.data(), b.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm);
    } else if (coll == "allgather") {
      MPI_Allgather(a.data(), count, MPI_FLOAT, b.data(), count, MPI_FLOAT, comm);
    } else if (coll == "broadcast") {
      MPI_Bcast(a.data(), count, MPI_FLOAT, 0, comm);
    } else if (coll == "alltoall") {
      MPI_Alltoall(a.data(), count, MPI_FLOAT, b.data(), count, MPI_FLOAT, comm);
    } else if (coll == "pingpong") {
      if (rank == 0) {
        MPI_Send(a.data(), count, MPI_FLOAT, peer, 1, comm);
        MPI_Recv(b.data(), count, MPI_FLOAT, peer, 1, comm, MPI_STATUS_IGNORE);
      } else if (rank == peer) {
        MPI_Recv(b.data(), count, MPI_FLOAT, 0, 1, comm, MPI_STATUS_IGNORE);
        MPI_Send(b.data(), count, MPI_FLOAT, 0, 1, comm);
      }
    } else if (coll == "exchange") {
      if (rank == 0 || rank == peer) {
        MPI_Sendrecv(a.data(), count, MPI_FLOAT, rank == 0 ? peer : 0, 2, b.data(), count, MPI_FLOAT,
                     rank == 0 ? peer : 0, 2, comm, MPI_STATUS_IGNORE);
      }
    }
  };
  const bool p2p = coll == "pingpong" || coll == "exchange";
  const bool idle = p2p && rank != 0 && rank != peer;
  gentle_barrier(comm);
  if (!idle) {
    for (int i = 0; i < warmup; ++i) one();
  }
  gentle_barrier(comm);
  double dt = 0;
  if (!idle && p2p) {
    // Three back-to-back batches when there are 6 or more iterations (the last takes the
    // remainder), the median of the batch means: one slow iteration (a burst of other work on
    // shared cores) moves one batch, not the record (a mean over 3 or 10 iterations put whole
    // emulated clusters' profiles 4-11 % low, docs/measurements.md "Lossless queues").
    const int batches = iters >= 6 ? 3 : 1;
    std::vector<double> means;
    for (int batch = 0; batch < batches; ++batch) {
      const int k = batch + 1 < batches ? iters / batches : iters - (batches - 1) * (iters / batches);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < k; ++i) one();
      means.push_back((MPI_Wtime() - t0) / k);
    }
    dt = shardsim::bench::median(means);
  } else if (!idle) {
    // Collectives: a barrier before each timed call, as osu_bcast / osu_allreduce do, so that a
    // call starts with every rank ready and none still busy with the previous one. Back to back,
    // a broadcast or a pipelined tree overlaps call i+1 at the root with call i downstream, and
    // the mean per call is the throughput of the busiest link, not the time of one call
    // (chain broadcast of 4 MiB on 4 hosts at 400 Mbit/s: 150 ms per call back to back, one
    // call alone crosses 3 links of 84 ms each).
    std::vector<double> mine(static_cast<std::size_t>(iters)), slowest(static_cast<std::size_t>(iters));
    for (int i = 0; i < iters; ++i) {
      MPI_Barrier(comm);
      const double t0 = MPI_Wtime();
      one();
      mine[static_cast<std::size_t>(i)] = MPI_Wtime() - t0;
    }
    // Each call's time is its slowest rank's (as nccl-tests reports the slowest rank); the
    // record is the median over the calls, not the mean: on emulated hosts that share cores
    // with other work, one call now and then is held up by a burst of that work (docs/
    // measurements.md, "Emulated matrix"), and the median keeps it out of a record of 3 calls.
    MPI_Allreduce(mine.data(), slowest.data(), iters, MPI_DOUBLE, MPI_MAX, comm);
    return shardsim::bench::median(slowest);
  }
  // Point-to-point stays a mean over back-to-back iterations (per batch): timing each iteration and taking
  // the median of the slower end per iteration biased the exchange upward (the two ends'
  // iteration boundaries are offset, so the per-iteration maximum exceeds the period): in a
  // matrix run every exchange fit came out 1-6 % lower in efficiency (0.89-0.94 against
  // 0.94-0.97) and a whole cluster's pairs 6-8 % off (docs/measurements.md "Emulated matrix").
  if (coll == "pingpong") dt /= 2;  // one way = half the round trip
  double worst = 0;
  MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
  // pingpong: rank 0's round trip covers both directions. exchange: the slower of the two ends,
  // because an end's MPI_Sendrecv returns once its own receive is done and its send is in the
  // socket buffer, possibly before the other end has the data (the last iteration's data can
  // still be in flight when rank 0 stops its clock).
  return coll == "pingpong" ? dt : worst;
}

// Comma-separated items (empty items kept).
std::vector<std::string> split_items(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string e; std::getline(ss, e, ',');) out.push_back(e);
  if (!s.empty() && s.back() == ',') out.emplace_back();
  return out;
}

// Sets an MPI_T control variable (an OpenMPI MCA variable such as
// coll_tuned_allreduce_algorithm) to an integer in this process. "" = fine, else why not.
std::string write_cvar(const std::string& name, int value) {
  int index = -1;
  if (MPI_T_cvar_get_index(name.c_str(), &index) != MPI_SUCCESS) return "no MPI_T control variable " + name;
  MPI_T_cvar_handle h{};
  int count = 0;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &h, &count) != MPI_SUCCESS || count != 1) return "cannot bind " + name;
  int back = -1;
  const int rc = MPI_T_cvar_write(h, &value);
  MPI_T_cvar_read(h, &back);
  MPI_T_cvar_handle_free(&h);
  if (rc != MPI_SUCCESS || back != value) return fmt::format("cannot set {} to {} (rc {}, reads {})", name, value, rc, back);
  return "";
}

int run(const Options& o, int rank, int n) {
  namespace u = shardsim::units;
  std::vector<std::string> colls;
  std::stringstream ss(o.collectives);
  for (std::string c; std::getline(ss, c, ',');) {
    const auto canon = shardsim::logs::canonical_collective(c);
    if (!canon || (*canon != "allreduce" && *canon != "reducescatter" && *canon != "allgather" &&
                   *canon != "broadcast" && *canon != "alltoall" && *canon != "pingpong" && *canon != "exchange")) {
      if (rank == 0) fmt::print(stderr, "shardsim-mpi-bench: unknown collective '{}' (allreduce, reducescatter, allgather, broadcast, alltoall, pingpong, exchange)\n", c);
      return 2;
    }
    colls.push_back(*canon);
  }
  const bool p2p_needed = o.peer < 1 || o.peer >= n;
  std::vector<std::uint64_t> sizes;
  try {
    sizes = shardsim::bench::size_list(u::parse_bytes(o.min_bytes, "-b"), u::parse_bytes(o.max_bytes, "-e"), o.factor,
                                       u::parse_bytes(o.step_bytes, "-i"));
  } catch (const std::exception& e) {
    if (rank == 0) fmt::print(stderr, "shardsim-mpi-bench: {}\n", e.what());
    return 2;
  }
  nlohmann::json topology;
  if (!o.topology_file.empty()) {
    std::ifstream in(o.topology_file);
    try {
      topology = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      if (rank == 0) fmt::print(stderr, "shardsim-mpi-bench: {}: {}\n", o.topology_file, e.what());
      return 2;
    }
  }
  std::vector<char> host(MPI_MAX_PROCESSOR_NAME + 1, '\0');
  int len = 0;
  MPI_Get_processor_name(host.data(), &len);
  const std::uint64_t max_size = sizes.back();
  std::vector<float> a(max_size / sizeof(float) + 1, 1.0f), b(max_size / sizeof(float) + 1, 0.0f);
  std::ofstream jsonl;
  if (rank == 0 && !o.jsonl.empty()) {
    jsonl.open(o.jsonl, std::ios::app);
    if (!jsonl) {
      fmt::print(stderr, "shardsim-mpi-bench: cannot open {} for writing\n", o.jsonl);
      return 2;
    }
  }
  // -a: one label for all, or COLL:NAME per -c entry (with --cvar, parallel to -c).
  const auto label_items = split_items(o.algorithm);
  const bool per_entry = o.algorithm.find(':') != std::string::npos;
  const auto cvar_items = split_items(o.cvars);
  if (per_entry && label_items.size() != colls.size()) {
    if (rank == 0) fmt::print(stderr, "shardsim-mpi-bench: -a has {} COLL:NAME entries for {} collectives\n", label_items.size(), colls.size());
    return 2;
  }
  if (!o.cvars.empty() && cvar_items.size() != colls.size()) {
    if (rank == 0) fmt::print(stderr, "shardsim-mpi-bench: --cvar has {} entries for {} collectives\n", cvar_items.size(), colls.size());
    return 2;
  }
  const std::string date = shardsim::logs::utc_now_iso8601();
  for (std::size_t ci = 0; ci < colls.size(); ++ci) {
    const auto& coll = colls[ci];
    const bool p2p = coll == "pingpong" || coll == "exchange";
    if (p2p && p2p_needed) {
      if (rank == 0) fmt::print(stderr, "shardsim-mpi-bench: --peer {} needs 1 <= peer < {} ranks\n", o.peer, n);
      return 2;
    }
    std::string label = o.algorithm;
    if (per_entry) {
      const auto& e = label_items[ci];
      const auto colon = e.find(':');
      if (colon == std::string::npos || e.substr(0, colon) != coll) {
        if (rank == 0) fmt::print(stderr, "shardsim-mpi-bench: -a entry '{}' does not name collective {}\n", e, coll);
        return 2;
      }
      label = e.substr(colon + 1);
    }
    if (p2p) label.clear();
    // The algorithm switch: set the variable, then a new communicator, whose coll/tuned module
    // reads the forced algorithm when it is enabled (ompi_coll_tuned_forced_getvalues).
    MPI_Comm comm = MPI_COMM_WORLD;
    if (!o.cvars.empty() && cvar_items[ci] != "none") {
      const auto& item = cvar_items[ci];
      const auto eq = item.find('=');
      const std::string why = eq == std::string::npos ? "--cvar entry '" + item + "' is not VAR=VALUE"
                                                      : write_cvar(item.substr(0, eq), std::atoi(item.c_str() + eq + 1));
      if (!why.empty()) {
        fmt::print(stderr, "shardsim-mpi-bench: rank {}: {}\n", rank, why);
        return 2;
      }
      MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    }
    if (rank == 0) {
      fmt::print("# shardsim-mpi-bench collective: {}  algorithm: {}  ranks: {}{}  warmup: {}  iters: {}\n", coll,
                 label.empty() ? "default" : label, n, p2p ? fmt::format("  peer: {}", o.peer) : "",
                 o.warmup, o.iters);
      fmt::print("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9}  {:>8}  {:>8}\n", "size", "count", "type", "redop", "root",
                 "time", "algbw", "busbw");
      fmt::print("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9}  {:>8}  {:>8}\n", "(B)", "(elements)", "", "", "", "(us)",
                 "(GB/s)", "(GB/s)");
    }
    for (const auto s : sizes) {
      const std::uint64_t eff = shardsim::bench::effective_bytes(coll, s, n, sizeof(float));
      const double t_us = 1e6 * time_collective(comm, coll, s, rank, n, o.peer, o.warmup, o.iters, a, b);
      if (rank != 0) continue;
      shardsim::logs::BenchRecord r;
      r.source = o.source;
      r.host = host.data();
      r.date = date;
      r.backend = "mpi";
      r.collective = coll;
      if (!label.empty()) r.algorithm = label;
      r.ranks = n;  // point-to-point records keep the job size; peer names the other end
      r.bytes = eff;
      r.dtype = "float";
      r.time_us = t_us;
      r.algbw_GBps = shardsim::bench::algbw_GBps(eff, t_us);
      r.busbw_GBps = r.algbw_GBps * shardsim::logs::busbw_factor(coll, r.ranks);
      r.topology = topology;
      if (p2p) r.peer = o.peer;
      fmt::print("  {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9.1f}  {:>8.4f}  {:>8.4f}\n", eff,
                 shardsim::bench::call_count(coll, s, n, sizeof(float)), "float", p2p ? "none" : "sum", -1, t_us,
                 r.algbw_GBps, r.busbw_GBps);
      if (jsonl.is_open()) jsonl << shardsim::logs::to_json(r).dump() << '\n' << std::flush;
    }
    if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  Options o;
  CLI::App app{"shardsim-mpi-bench: MPI collective and point-to-point microbenchmark (nccl-tests style)"};
  app.add_option("-c,--collective", o.collectives, "Comma list: allreduce, reducescatter, allgather, broadcast, alltoall, pingpong, exchange");
  app.add_option("-b,--minbytes", o.min_bytes, "Smallest size (K/M/G = 1024^k)");
  app.add_option("-e,--maxbytes", o.max_bytes, "Largest size");
  app.add_option("-f,--stepfactor", o.factor, "Size factor between steps (> 1), else -i");
  app.add_option("-i,--stepbytes", o.step_bytes, "Size increment when -f is 1");
  app.add_option("-w,--warmup_iters", o.warmup, "Untimed calls per size")->check(CLI::Range(0, 1000000));
  app.add_option("-n,--iters", o.iters, "Timed calls per size")->check(CLI::Range(1, 1000000));
  app.add_option("-p,--peer", o.peer, "Other rank of point-to-point tests (rank 0 is one end)");
  app.add_option("-a,--algorithm", o.algorithm, "Algorithm label written into the records: NAME, or COLL:NAME,... per collective");
  app.add_option("-o,--jsonl", o.jsonl, "Append JSONL records here (rank 0)");
  app.add_option("-t,--topology", o.topology_file, "Topology JSON to embed into the records");
  app.add_option("--source", o.source, "Source label of the records");
  app.add_option("--cvar", o.cvars,
                 "Per -c entry: VAR=VALUE (an MPI_T control variable set before that entry, which then runs on a "
                 "fresh MPI_Comm_dup) or none");
  app.add_option("--idle-sleep-us", o.idle_sleep_us,
                 "Sleep this long where OpenMPI would sched_yield (with mpi_yield_when_idle); 0 = yield")
      ->check(CLI::Range(0, 100000));
  app.add_option("--rt-priority", o.rt_priority,
                 "SCHED_RR priority of the ranks' main thread (needs --idle-sleep-us > 0); 0 = normal scheduling")
      ->check(CLI::Range(0, 99));
  app.add_option("--crash-rank", o.crash_rank, "Testing: this rank aborts at start")->group("");
  app.add_option("--hang-rank", o.hang_rank, "Testing: this rank never returns")->group("");
  int rc = 0;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (rank == 0) rc = app.exit(e);
    MPI_Finalize();
    return rc == 0 ? 0 : 2;
  }
  if (o.idle_sleep_us > 0) {
    // Timer slack (50 us by default) would add to every sleep: 1 us keeps the wake-up near N.
    ::prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    g_idle_sleep_ns.store(1000L * o.idle_sleep_us, std::memory_order_relaxed);
  }
  if (o.rt_priority > 0) {
    if (o.idle_sleep_us <= 0) {
      // A real-time rank that spins would take the cores from everything else.
      if (rank == 0) fmt::print(stderr, "shardsim-mpi-bench: --rt-priority needs --idle-sleep-us > 0\n");
      MPI_Finalize();
      return 2;
    }
    sched_param sp{};
    sp.sched_priority = o.rt_priority;
    const int rc_rt = ::sched_setscheduler(0, SCHED_RR, &sp);
    const int err = rc_rt != 0 ? errno : 0;
    int refused = rc_rt != 0 ? 1 : 0, any_refused = 0;
    MPI_Allreduce(&refused, &any_refused, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && any_refused) {
      fmt::print("# note: SCHED_RR refused ({}): ranks run at normal priority\n",
                 err != 0 ? std::strerror(err) : "on another rank");
    }
  }
  if (rank == o.crash_rank) std::abort();
  if (rank == o.hang_rank) {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  int provided = 0;
  if (!o.cvars.empty() && MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
    if (rank == 0) fmt::print(stderr, "shardsim-mpi-bench: MPI_T_init_thread failed (needed by --cvar)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  rc = run(o, rank, n);
  if (rc != 0) MPI_Abort(MPI_COMM_WORLD, rc);
  if (!o.cvars.empty()) MPI_T_finalize();
  MPI_Finalize();
  return rc;
}
