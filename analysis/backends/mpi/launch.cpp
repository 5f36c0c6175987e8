#include "analysis/backends/mpi/launch.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "sim/error.hpp"

namespace shardsim::backends {
namespace {

struct AlgorithmId {
  const char* collective;
  const char* name;
  int id;
};

// ompi_info --param coll tuned --level 9 (OpenMPI 4.1.4, this machine). reducescatter is
// MPI_Reduce_scatter (the bench calls it with equal counts), whose ids are those of
// coll_tuned_reduce_scatter_algorithm.
constexpr std::array<AlgorithmId, 30> kOmpi{{
    {"allreduce", "basic_linear", 1}, {"allreduce", "nonoverlapping", 2}, {"allreduce", "recursive_doubling", 3},
    {"allreduce", "ring", 4}, {"allreduce", "segmented_ring", 5}, {"allreduce", "rabenseifner", 6},
    {"reducescatter", "non_overlapping", 1}, {"reducescatter", "recursive_halving", 2}, {"reducescatter", "ring", 3},
    {"reducescatter", "butterfly", 4},
    {"allgather", "linear", 1}, {"allgather", "bruck", 2}, {"allgather", "recursive_doubling", 3},
    {"allgather", "ring", 4}, {"allgather", "neighbor", 5}, {"allgather", "two_proc", 6},
    {"broadcast", "basic_linear", 1}, {"broadcast", "chain", 2}, {"broadcast", "pipeline", 3},
    {"broadcast", "split_binary_tree", 4}, {"broadcast", "binary_tree", 5}, {"broadcast", "binomial", 6},
    {"broadcast", "knomial", 7}, {"broadcast", "scatter_allgather", 8}, {"broadcast", "scatter_allgather_ring", 9},
    {"alltoall", "linear", 1}, {"alltoall", "pairwise", 2}, {"alltoall", "modified_bruck", 3},
    {"alltoall", "linear_sync", 4}, {"alltoall", "two_proc", 5},
}};

const char* mca_name(const std::string& collective) {
  if (collective == "allreduce") return "coll_tuned_allreduce_algorithm";
  if (collective == "reducescatter") return "coll_tuned_reduce_scatter_algorithm";
  if (collective == "allgather") return "coll_tuned_allgather_algorithm";
  if (collective == "broadcast") return "coll_tuned_bcast_algorithm";
  if (collective == "alltoall") return "coll_tuned_alltoall_algorithm";
  return nullptr;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string tail_lines(const std::string& s, int n) {
  if (s.empty()) return s;  // mpirun that printed nothing (s.substr(1) would throw)
  size_t pos = s.size();
  for (int i = 0; i <= n && pos > 0; ++i) {
    const auto p = s.rfind('\n', pos - 1);
    if (p == std::string::npos) return s;
    pos = p;
  }
  return s.substr(pos + 1);
}

volatile std::sig_atomic_t g_interrupt = 0;

void on_signal(int sig) { request_interrupt(sig); }

}  // namespace

void request_interrupt(int signal_number) noexcept { g_interrupt = signal_number; }
int interrupt_signal() noexcept { return g_interrupt; }

struct InterruptGuard::Saved {
  struct sigaction int_action {};
  struct sigaction term_action {};
};

InterruptGuard::InterruptGuard() : saved_(new Saved) {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  ::sigaction(SIGINT, &sa, &saved_->int_action);
  ::sigaction(SIGTERM, &sa, &saved_->term_action);
}

InterruptGuard::~InterruptGuard() {
  ::sigaction(SIGINT, &saved_->int_action, nullptr);
  ::sigaction(SIGTERM, &saved_->term_action, nullptr);
  delete saved_;
}

std::optional<std::string> find_in_path(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    return ::access(program.c_str(), X_OK) == 0 ? std::optional<std::string>(program) : std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    auto colon = p.find(':', start);
    if (colon == std::string::npos) colon = p.size();
    const std::string dir = p.substr(start, colon - start);
    const std::string full = (dir.empty() ? "." : dir) + "/" + program;
    struct stat st {};
    if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(full.c_str(), X_OK) == 0) return full;
    start = colon + 1;
  }
  return std::nullopt;
}

std::string self_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

ProcessResult run_process(const std::vector<std::string>& argv, double timeout_s, bool echo, bool interruptible) {
  if (argv.empty()) throw LaunchError("run_process: empty command");
  const auto exe = find_in_path(argv[0]);
  if (!exe) throw LaunchError(fmt::format("'{}' not found in PATH (command: {})", argv[0], join(argv)));
  std::array<int, 2> fds{};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) throw LaunchError(std::string("pipe: ") + std::strerror(errno));
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid < 0) throw LaunchError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::execv(exe->c_str(), cargv.data());
    _exit(127);
  }
  ::setpgid(pid, pid);
  ::close(fds[1]);
  ProcessResult res;
  const auto start = std::chrono::steady_clock::now();
  bool term_sent = false;
  std::chrono::steady_clock::time_point term_at;
  bool eof = false;
  int status = 0;
  bool reaped = false;
  while (!reaped) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!term_sent && interruptible && g_interrupt != 0) {
      ::kill(-pid, SIGTERM);
      term_sent = true;
      term_at = std::chrono::steady_clock::now();
    }
    if (!term_sent && elapsed > timeout_s) {
      res.timed_out = true;
      ::kill(-pid, SIGTERM);
      term_sent = true;
      term_at = std::chrono::steady_clock::now();
    }
    if (term_sent && std::chrono::steady_clock::now() - term_at > std::chrono::seconds(2)) ::kill(-pid, SIGKILL);
    if (!eof) {
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) {
        std::array<char, 4096> buf{};
        const auto n = ::read(fds[0], buf.data(), buf.size());
        if (n > 0) {
          res.output.append(buf.data(), static_cast<size_t>(n));
          if (echo) {
            std::fwrite(buf.data(), 1, static_cast<size_t>(n), stdout);
            std::fflush(stdout);
          }
        } else if (n == 0) {
          eof = true;
        }
      }
    } else {
      ::usleep(50000);
    }
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) reaped = true;
  }
  // Children that outlived the leader (orted, ranks) are killed with their group.
  ::kill(-pid, SIGKILL);
  ::close(fds[0]);
  res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (interruptible && g_interrupt != 0) throw LaunchError(fmt::format("interrupted by signal {} ({})", static_cast<int>(g_interrupt), join(argv)));
  return res;
}

std::optional<int> ompi_algorithm_id(const std::string& collective, const std::string& algorithm) {
  for (const auto& a : kOmpi) {
    if (collective == a.collective && algorithm == a.name) return a.id;
  }
  return std::nullopt;
}

std::string ompi_algorithm_names(const std::string& collective) {
  std::string s;
  for (const auto& a : kOmpi) {
    if (collective == a.collective) s += (s.empty() ? "" : ", ") + std::string(a.name);
  }
  return s;
}

AlgorithmRun collectives_with_algorithm(const std::vector<std::string>& collectives, const std::string& entry) {
  AlgorithmRun run;
  run.algorithm = entry;
  std::optional<std::string> only;
  if (const auto colon = entry.find(':'); colon != std::string::npos) {
    only = entry.substr(0, colon);
    run.algorithm = entry.substr(colon + 1);
  }
  for (const auto& c : collectives) {
    if (only && c != *only) continue;
    if (run.algorithm.empty() || ompi_algorithm_id(c, run.algorithm)) run.collectives.push_back(c);
  }
  if (run.collectives.empty()) {
    std::string valid;
    for (const auto& c : collectives) valid += (valid.empty() ? "" : "; ") + c + ": " + ompi_algorithm_names(c);
    std::string colls;
    for (const auto& c : collectives) colls += (colls.empty() ? "" : ",") + c;
    throw ConfigError("--algorithm", fmt::format("'{}' is not an OpenMPI algorithm of {}", entry, colls),
                      "one of " + valid + " (optionally as COLLECTIVE:NAME)");
  }
  return run;
}

AlgorithmSequence algorithm_sequence(const std::vector<std::string>& collectives, const std::vector<std::string>& entries) {
  std::vector<AlgorithmRun> runs;
  for (const auto& e : entries) runs.push_back(collectives_with_algorithm(collectives, e));
  AlgorithmSequence out;
  for (const auto& c : collectives) {
    for (const auto& run : runs) {
      if (std::find(run.collectives.begin(), run.collectives.end(), c) == run.collectives.end()) continue;
      out.collectives.push_back(c);
      out.algorithms.push_back(run.algorithm);
    }
  }
  return out;
}

std::vector<std::string> mpirun_command(const MpiRun& r) {
  std::vector<std::string> cmd = r.wrapper;
  cmd.insert(cmd.end(), {r.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", std::to_string(r.np)});
  if (!r.algorithms.empty() && r.algorithms.size() != r.collectives.size()) {
    throw ConfigError("--algorithm", fmt::format("{} algorithms for {} collectives", r.algorithms.size(), r.collectives.size()),
                      "one algorithm per collective");
  }
  const auto id_of = [&](const std::string& c, const std::string& alg) {
    const auto id = ompi_algorithm_id(c, alg);
    if (!id) {
      throw ConfigError("--algorithm", fmt::format("'{}' is not an OpenMPI {} algorithm", alg, c),
                        "one of " + ompi_algorithm_names(c));
    }
    return *id;
  };
  std::string labels, cvars;  // per entry (r.algorithms), for the program
  if (!r.algorithms.empty()) {
    bool any = false;
    for (std::size_t i = 0; i < r.collectives.size(); ++i) {
      const auto& c = r.collectives[i];
      const auto& alg = r.algorithms[i];
      const char* mca = mca_name(c);
      if (!alg.empty() && !mca) {
        throw ConfigError("--algorithm", fmt::format("'{}' for {}, which has no OpenMPI algorithm", alg, c),
                          "no algorithm for point-to-point kinds");
      }
      const int id = alg.empty() ? 0 : id_of(c, alg);  // 0: OpenMPI's own decision
      any = any || id != 0;
      labels += fmt::format("{}{}:{}", i ? "," : "", c, alg);
      cvars += fmt::format("{}{}", i ? "," : "", mca ? fmt::format("{}={}", mca, id) : std::string("none"));
    }
    if (any) cmd.insert(cmd.end(), {"--mca", "coll_tuned_use_dynamic_rules", "1"});
  } else if (!r.algorithm.empty()) {
    cmd.insert(cmd.end(), {"--mca", "coll_tuned_use_dynamic_rules", "1"});
    for (const auto& c : r.collectives) {
      const char* mca = mca_name(c);
      if (!mca) continue;  // point-to-point kinds have no algorithm
      cmd.insert(cmd.end(), {"--mca", mca, std::to_string(id_of(c, r.algorithm))});
    }
    labels = r.algorithm;
  }
  cmd.insert(cmd.end(), r.mpirun_args.begin(), r.mpirun_args.end());
  const std::string program = r.program.empty() ? self_dir() + "/shardsim-mpi-bench" : r.program;
  std::string colls;
  for (const auto& c : r.collectives) colls += (colls.empty() ? "" : ",") + c;
  cmd.insert(cmd.end(), {program, "-c", colls, "-b", r.min_bytes, "-e", r.max_bytes, "-f", std::to_string(r.factor),
                         "-w", std::to_string(r.warmup), "-n", std::to_string(r.iters), "-p", std::to_string(r.peer),
                         "--source", r.source});
  if (!labels.empty()) cmd.insert(cmd.end(), {"-a", labels});
  if (!cvars.empty()) cmd.insert(cmd.end(), {"--cvar", cvars});
  if (!r.jsonl.empty()) cmd.insert(cmd.end(), {"-o", r.jsonl});
  if (!r.topology_file.empty()) cmd.insert(cmd.end(), {"-t", r.topology_file});
  if (r.idle_sleep_us > 0) cmd.insert(cmd.end(), {"--idle-sleep-us", std::to_string(r.idle_sleep_us)});
  if (r.rt_priority > 0) cmd.insert(cmd.end(), {"--rt-priority", std::to_string(r.rt_priority)});
  cmd.insert(cmd.end(), r.program_args.begin(), r.program_args.end());
  return cmd;
}

ProcessResult launch_mpi(const MpiRun& r) {
  const auto cmd = mpirun_command(r);
  if (!find_in_path(r.mpirun)) {
    throw LaunchError(fmt::format("'{}' not found in PATH: install OpenMPI (Debian: openmpi-bin) or pass --mpirun", r.mpirun));
  }
  const std::string program = r.program.empty() ? self_dir() + "/shardsim-mpi-bench" : r.program;
  if (::access(program.c_str(), X_OK) != 0) {
    throw LaunchError(fmt::format("MPI benchmark program '{}' not found: build the shardsim-mpi-bench target "
                                  "(needs SHARDSIM_WITH_MPI and OpenMPI) or pass --program",
                                  program));
  }
  auto res = run_process(cmd, r.timeout_s, r.echo);
  if (res.timed_out) {
    throw LaunchError(fmt::format("mpirun timed out after {} s and was killed (command: {})\n{}", r.timeout_s, join(cmd),
                                  tail_lines(res.output, 15)));
  }
  if (res.exit_code != 0) {
    throw LaunchError(fmt::format("mpirun failed with exit status {} (a rank crashed or aborted?) (command: {})\n{}",
                                  res.exit_code, join(cmd), tail_lines(res.output, 15)));
  }
  return res;
}

}  // namespace shardsim::backends
