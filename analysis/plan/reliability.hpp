#pragma once
// Goodput under failures (issue 16): a job's failure rate from per-component rates, the
// checkpoint cost from the model state and the storage bandwidth, the optimal checkpoint
// interval and the expected time to train.
//
// Failure rates (defaults: the Llama 3 405B pre-training, Dubey et al., "The Llama 3 Herd of
// Models", arXiv:2407.21783, 2024, sec. 3.3.4 and Table 5: 466 job interruptions in a 54-day
// snapshot on 16,384 H100 GPUs in 2,048 hosts of 8; 47 planned, 419 unexpected, by root
// cause). Each unexpected cause is charged to one component, and its rate is the count over
// the component-hours of the snapshot (54 x 24 = 1,296 h):
//   gpu      faulty GPU 148, GPU HBM3 72, GPU SRAM 19, GPU system processor 17, silent data
//            corruption 6, GPU thermal interface and sensor 6          = 268 per 16,384 GPUs
//   nic      NIC 7                                                    =   7 per 16,384 (one per GPU)
//   link     network switch and cable 35                              =  35 per 16,384 (a GPU's fabric share)
//   host     host maintenance 32, SSD 3, power supply 3, server chassis 2, IO expansion
//            board 2, CPU 2, system memory 2                          =  46 per 2,048 hosts
//   software software bug 54, NCCL watchdog timeout 7, dependency 2   =  63 per 16,384 GPUs
// (419 in all). A synchronous job stops at any of them, and independent exponential failures
// add (a series system): lambda_job = N (gpu + nic + link + software) + ceil(N / per_host) x host,
// MTBF M = 1 / lambda_job. At N = 16,384 that is the paper's 419 / 1,296 h: one every 3.1 h.
//
// Checkpoint: delta = state bytes / write bandwidth (aggregate, to the storage), restore
// R = restart overhead + state bytes / read bandwidth.
// Optimal interval of compute between checkpoints:
//   Young (1974), "A first order approximation to the optimum checkpoint interval", CACM
//   17(9): tau = sqrt(2 delta M);
//   Daly (2006), "A higher order estimate of the optimum checkpoint interval for restart
//   dumps", FGCS 22(3): tau = sqrt(2 delta M) [1 + sqrt(delta / (2M)) / 3 +
//   (delta / (2M)) / 9] - delta for delta < 2M, else tau = M.
// Expected wall-clock time for T_s of work (Daly 2006, the complete model for exponential
// failures, which may strike during work, checkpoint or restart; tau + delta << T_s):
//   T_w = M e^(R/M) (e^((tau + delta)/M) - 1) T_s / tau,   goodput = T_s / T_w.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardsim::plan {

/// Failures per component-hour.
struct ComponentRates {
  double gpu_per_h = 0, nic_per_h = 0, link_per_h = 0, host_per_h = 0, software_per_h = 0;
  std::string source;
};

/// The Llama 3 defaults above.
ComponentRates llama3_rates();

struct ReliabilityInput {
  std::uint64_t devices = 1;
  std::uint32_t devices_per_host = 8;
  ComponentRates rates = llama3_rates();
  double state_bytes = 0;        ///< checkpointed bytes (the whole job's model state)
  double write_Bps = 0;          ///< storage write bandwidth, aggregate
  double read_Bps = 0;           ///< storage read bandwidth, aggregate (0: = write_Bps)
  double restart_s = 0;          ///< rescheduling and initialisation before the restore
  std::optional<double> interval_s;  ///< compute between checkpoints; default: Daly's optimum
};

struct ReliabilityResult {
  double failures_per_h = 0;   ///< lambda_job
  double mtbf_s = 0;           ///< M
  double checkpoint_s = 0;     ///< delta
  double restore_s = 0;        ///< R (restart + read)
  double young_interval_s = 0, daly_interval_s = 0;
  double interval_s = 0;       ///< the interval used
  double goodput = 0;          ///< expected useful fraction of wall-clock time
};

/// Throws ConfigError naming the flag: devices 0 (--devices), devices per host 0, a negative
/// rate or restart, state bytes <= 0 (--state-bytes), write bandwidth <= 0
/// (--storage-bandwidth), an interval <= 0 (--checkpoint-interval).
ReliabilityResult reliability(const ReliabilityInput& in);

/// lambda_job of N devices (per hour).
double job_failures_per_h(const ComponentRates& r, std::uint64_t devices, std::uint32_t devices_per_host);
double young_interval(double checkpoint_s, double mtbf_s);
double daly_interval(double checkpoint_s, double mtbf_s);
/// Daly's T_w / T_s for one interval (>= 1).
double wall_per_work(double interval_s, double checkpoint_s, double restore_s, double mtbf_s);

}  // namespace shardsim::plan
