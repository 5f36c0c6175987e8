// shardsim-nccl-bench: an nccl-tests-compatible benchmark (one process, all visible GPUs, one
// NCCL communicator per GPU via ncclCommInitAll), written against the CUDA runtime and NCCL
// host APIs only, so it builds with the host compiler (no nvcc).
//
// Output matches nccl-tests' stdout (src/util.cu): "# Collective test starting: <binary>", the
// "#  Rank" device lines and the 13-column table (size count type redop root, then time algbw
// busbw #wrong for out-of-place and in-place; #wrong is N/A: no data check), so
// traces/logs/parse.hpp reads it; -o appends JSONL records. Timing as nccl-tests: warm-up
// calls, then `iters` calls on every GPU's stream, synchronised, wall time / iters.
// Without a GPU it prints "skipped: ..." and exits 77 (the automake skip code).
#include <CLI/CLI.hpp>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <chrono>
#include <fstream>
#include <vector>

#include "analysis/backends/mpi/bench_math.hpp"
#include "sim/units.hpp"
#include "traces/logs/record.hpp"

namespace {

constexpr int kSkip = 77;

#define SHARDSIM_CUDA(call)                                                                  \
  do {                                                                                       \
    const cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess) {                                                                 \
      fmt::print(stderr, "shardsim-nccl-bench: {}: {}\n", #call, cudaGetErrorString(e_));    \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)
#define SHARDSIM_NCCL(call)                                                                  \
  do {                                                                                       \
    const ncclResult_t r_ = (call);                                                          \
    if (r_ != ncclSuccess) {                                                                 \
      fmt::print(stderr, "shardsim-nccl-bench: {}: {}\n", #call, ncclGetErrorString(r_));    \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

struct Options {
  std::string collective = "allreduce", min_bytes = "8", max_bytes = "128M", jsonl;
  std::uint64_t factor = 2;
  int warmup = 5, iters = 20, gpus = 0;
};

const char* binary_of(const std::string& c) {
  if (c == "allreduce") return "all_reduce_perf";
  if (c == "reducescatter") return "reduce_scatter_perf";
  if (c == "allgather") return "all_gather_perf";
  return nullptr;
}

int run(const Options& o) {
  int ngpu = 0;
  const cudaError_t e = cudaGetDeviceCount(&ngpu);
  if (e != cudaSuccess || ngpu == 0) {
    fmt::print(stderr, "shardsim-nccl-bench: skipped: no CUDA GPU ({})\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount returned 0");
    return kSkip;
  }
  const int n = o.gpus > 0 ? std::min(o.gpus, ngpu) : ngpu;
  const char* binary = binary_of(o.collective);
  if (!binary) {
    fmt::print(stderr, "shardsim-nccl-bench: unknown collective '{}' (allreduce, reducescatter, allgather)\n", o.collective);
    return 2;
  }
  const auto sizes = shardsim::bench::size_list(shardsim::units::parse_bytes(o.min_bytes, "-b"),
                                                shardsim::units::parse_bytes(o.max_bytes, "-e"), o.factor, 0);
  const std::uint64_t max_bytes = sizes.back();
  std::vector<int> devs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) devs[static_cast<size_t>(i)] = i;
  std::vector<ncclComm_t> comms(static_cast<size_t>(n));
  SHARDSIM_NCCL(ncclCommInitAll(comms.data(), n, devs.data()));
  std::vector<cudaStream_t> streams(static_cast<size_t>(n));
  std::vector<void*> send(static_cast<size_t>(n)), recv(static_cast<size_t>(n));
  fmt::print("# Collective test starting: {}\n", binary);
  fmt::print("# nThread 1 nGpus {} minBytes {} maxBytes {} step: {}(factor) warmup iters: {} iters: {}\n#\n", n,
             sizes.front(), max_bytes, o.factor, o.warmup, o.iters);
  for (int i = 0; i < n; ++i) {
    SHARDSIM_CUDA(cudaSetDevice(i));
    SHARDSIM_CUDA(cudaStreamCreate(&streams[static_cast<size_t>(i)]));
    SHARDSIM_CUDA(cudaMalloc(&send[static_cast<size_t>(i)], max_bytes));
    SHARDSIM_CUDA(cudaMalloc(&recv[static_cast<size_t>(i)], max_bytes));
    SHARDSIM_CUDA(cudaMemset(send[static_cast<size_t>(i)], 0, max_bytes));
    cudaDeviceProp prop{};
    SHARDSIM_CUDA(cudaGetDeviceProperties(&prop, i));
    fmt::print("#  Rank {:2d} Group  0 Pid {:6d} on {:>10} device {:2d} [{:04x}:{:02x}:{:02x}] {}\n", i, 0,
               shardsim::logs::local_host_name(), i, prop.pciDomainID, prop.pciBusID, prop.pciDeviceID, prop.name);
  }
  fmt::print("#\n# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}\n", "size",
             "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::ofstream jsonl;
  if (!o.jsonl.empty()) jsonl.open(o.jsonl, std::ios::app);
  const std::string date = shardsim::logs::utc_now_iso8601();
  for (const auto s : sizes) {
    const std::uint64_t count = shardsim::bench::call_count(o.collective, s, n, 4);
    const std::uint64_t eff = shardsim::bench::effective_bytes(o.collective, s, n, 4);
    double t_us[2] = {0, 0};
    for (int inplace = 0; inplace < 2; ++inplace) {
      const auto launch = [&]() -> int {
        SHARDSIM_NCCL(ncclGroupStart());
        for (int i = 0; i < n; ++i) {
          const auto k = static_cast<size_t>(i);
          char* rb = static_cast<char*>(recv[k]);
          const void* sb = inplace ? (o.collective == "allgather" ? rb + count * 4 * k : rb) : send[k];
          if (o.collective == "allreduce") {
            SHARDSIM_NCCL(ncclAllReduce(sb, rb, count, ncclFloat, ncclSum, comms[k], streams[k]));
          } else if (o.collective == "reducescatter") {
            SHARDSIM_NCCL(ncclReduceScatter(inplace ? rb : sb, inplace ? rb + count * 4 * k : rb, count, ncclFloat,
                                            ncclSum, comms[k], streams[k]));
          } else {
            SHARDSIM_NCCL(ncclAllGather(sb, rb, count, ncclFloat, comms[k], streams[k]));
          }
        }
        SHARDSIM_NCCL(ncclGroupEnd());
        return 0;
      };
      for (int w = 0; w < o.warmup; ++w) {
        if (launch() != 0) return 1;
      }
      for (int i = 0; i < n; ++i) SHARDSIM_CUDA(cudaStreamSynchronize(streams[static_cast<size_t>(i)]));
      const auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < o.iters; ++it) {
        if (launch() != 0) return 1;
      }
      for (int i = 0; i < n; ++i) SHARDSIM_CUDA(cudaStreamSynchronize(streams[static_cast<size_t>(i)]));
      t_us[inplace] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / o.iters;
    }
    const double factor = shardsim::logs::busbw_factor(o.collective, n);
    const double a0 = shardsim::bench::algbw_GBps(eff, t_us[0]), a1 = shardsim::bench::algbw_GBps(eff, t_us[1]);
    fmt::print("  {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7.2f}  {:>6.2f}  {:>6.2f}  {:>6}  {:>7.2f}  {:>6.2f}  {:>6.2f}  {:>6}\n",
               eff, count, "float", o.collective == "allgather" ? "none" : "sum", -1, t_us[0], a0, a0 * factor, "N/A",
               t_us[1], a1, a1 * factor, "N/A");
    if (jsonl.is_open()) {
      shardsim::logs::BenchRecord r;
      r.source = "shardsim-nccl-bench";
      r.host = shardsim::logs::local_host_name();
      r.date = date;
      r.backend = "nccl";
      r.collective = o.collective;
      r.ranks = n;
      r.ranks_per_node = n;
      r.bytes = eff;
      r.time_us = t_us[0];
      r.algbw_GBps = a0;
      r.busbw_GBps = a0 * factor;
      jsonl << shardsim::logs::to_json(r).dump() << '\n';
    }
  }
  for (int i = 0; i < n; ++i) {
    ncclCommDestroy(comms[static_cast<size_t>(i)]);
    cudaFree(send[static_cast<size_t>(i)]);
    cudaFree(recv[static_cast<size_t>(i)]);
  }
  fmt::print("# Collective test concluded: {}\n", binary);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"shardsim-nccl-bench: nccl-tests-compatible NCCL benchmark (one process, all visible GPUs)"};
  app.add_option("-c,--collective", o.collective, "allreduce, reducescatter or allgather");
  app.add_option("-b,--minbytes", o.min_bytes, "Smallest size (K/M/G = 1024^k)");
  app.add_option("-e,--maxbytes", o.max_bytes, "Largest size");
  app.add_option("-f,--stepfactor", o.factor, "Size factor between steps")->check(CLI::Range(2, 1024));
  app.add_option("-w,--warmup_iters", o.warmup, "Untimed calls per size")->check(CLI::Range(0, 100000));
  app.add_option("-n,--iters", o.iters, "Timed calls per size")->check(CLI::Range(1, 100000));
  app.add_option("-g,--ngpus", o.gpus, "GPUs to use (0 = all visible)")->check(CLI::Range(0, 1024));
  app.add_option("-o,--jsonl", o.jsonl, "Append JSONL records here");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "shardsim-nccl-bench: {}\n", e.what());
    return 2;
  }
}
