#pragma once
// Emulated clusters (DESIGN 6): a topology spec becomes Linux network namespaces, veth pairs,
// bridges and tc htb shaping; the MPI benchmark runs across them over TCP. Needs root (or
// CAP_NET_ADMIN + CAP_SYS_ADMIN), iproute2 (`ip`, `tc`) and OpenMPI.
//
// Layout (every object lives inside a namespace named <prefix><role>, so deleting the
// namespaces removes every veth and bridge; nothing is created in the caller's namespace):
//   <p>sw       the switch fabric: bridges, the switch side of every veth
//   <p>h<i>     host i: eth0 (10.<net>.0.<i+1>), lo; rank i runs here
//   <p>hub      bus only: the shared medium, a router with one leg on the bridge
//   switch:    host eth0 <-> sw:h<i> on bridge br0; `rate` shaped on both ends (each direction
//              of each host link is shaped), a non-blocking star.
//   two-level: leaves of hosts_per_leaf hosts on bridges l<k>, each leaf joined to bridge
//              spine by a veth pair shaped at `uplink_rate` both ways (fat_tree, 1 spine).
//   bus:       hosts have /32 addresses and route everything via the hub (10.<net>.0.254),
//              which forwards back out of its single, shaped interface: every packet of
//              every flow (and its ACKs) crosses one queue of `rate` = one shared medium.
//              ICMP redirects are off so hosts never learn the direct path.
// Shaping (shape()): htb at the rate with two classes, small TCP ACK segments first, so that
// an ACK never waits behind the host's own outgoing data (tbf's single FIFO cost a ring step a
// third of the rate; docs/measurements.md), and the bulk in a FIFO that holds what the hosts
// can have in flight (lossless, as the flow model; queue_drops() counts what it dropped).
// OpenMPI across namespaces: mpirun runs inside <p>h0 with a hostfile of the host addresses
// and an rsh agent script (plm_rsh_agent) that runs the daemon as `ip netns exec <p>h<i>
// sh -c CMD`; BTL tcp and OOB over eth0 only (--mca btl tcp,self, btl_tcp_if_include eth0);
// every host (and mpirun) with its own TMPDIR under the run directory, as separate hosts have
// their own /tmp (OpenMPI session directories, PMIx store).
// Settings that make N "hosts" on a few shared cores behave as N hosts (mpirun_args(); the
// measured effect of each is in docs/measurements.md):
//   --bind-to none       every daemon sees one slot and would bind its rank to core 0: all
//                        ranks on one core;
//   mpi_yield_when_idle  a waiting rank calls sched_yield(), which the benchmark program turns
//                        into a short sleep (shardsim-mpi-bench --idle-sleep-us): waiting
//                        ranks leave the cores to the ranks that move data;
//   SCHED_RR for the ranks (shardsim-mpi-bench --rt-priority, with the sleep above): other
//                        work on the machine no longer delays a rank whose data has arrived;
//   btl_tcp_eager_limit, rndv_eager_limit, max_send_size above the largest message: every
//                        message is one TCP byte stream. With the default 64 KiB, larger
//                        messages use ob1's rendezvous/put protocol, whose control round
//                        trips wait behind bulk data in the queues: an exchange of 4 MiB each
//                        way ran at 51 % of the rate instead of 90 %.
//
// Teardown: the EmulatedCluster destructor kills every process left in its namespaces and
// deletes them (success, failure, exception). SIGINT/SIGTERM during a run stop the launch
// (launch.hpp interrupt flag), so the destructor runs. A run killed with SIGKILL leaves its
// namespaces; the next run removes every <base>*<pid>- namespace whose pid is not alive
// (remove_stale()).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace shardsim::backends {

enum class EmuKind { bus, switch_star, two_level };
/// "bus", "switch", "two-level" (also "two_level", "fat_tree"); ConfigError naming --spec.
EmuKind emu_kind_from_string(const std::string& s);
const char* to_string(EmuKind k);

struct EmuSpec {
  EmuKind kind = EmuKind::switch_star;
  int hosts = 4;
  std::string rate = "400Mbit";          ///< every host link, per direction (bus: the medium)
  std::optional<std::string> uplink_rate;  ///< two-level; default hosts_per_leaf x rate / 4 (4:1)
  int hosts_per_leaf = 2;                ///< two-level
  std::string lat = "20us";              ///< declared per-link latency (veths add no delay)
  /// Largest message the runs will send; sizes each link's queue so that nothing is dropped
  /// (hosts x this, at least 50 ms at the link rate). 0: 50 ms.
  std::uint64_t max_message_bytes = 0;
};

/// Checks the spec (hosts >= 2, rates parse, two-level leaves divide hosts) and returns the
/// topology JSON the simulator reads for it (topologies/load.hpp make_topology):
///   bus:       {"builder":"bus","n":N,"bw":R,"lat":L,"class":"ethernet"}
///   switch:    {"builder":"switch","n":N,"bw":R,"lat":L,"class":"ethernet"}
///   two-level: {"builder":"fat_tree","hosts":N,"hosts_per_leaf":H,"bw":R,"uplink_bw":U,
///               "spines":1,"lat":L,"class":"ethernet"}
nlohmann::json emu_topology_json(const EmuSpec& s);

/// Why emulation cannot run here (not root, no `ip`/`tc`, namespaces refused), or nullopt.
std::optional<std::string> emulation_unavailable();

/// Namespace names created by shardsim emulation start with this.
inline constexpr const char* kEmuBase = "shsm";

/// Deletes namespaces of dead runs (name shsm<pid>-*, pid not alive), killing their processes.
/// Returns the names removed.
std::vector<std::string> remove_stale();
/// Every namespace currently named shsm*.
std::vector<std::string> emu_namespaces();

class EmulatedCluster {
 public:
  /// Builds the namespaces, links and shaping. Throws LaunchError if a command fails (after
  /// tearing down what was built).
  explicit EmulatedCluster(const EmuSpec& spec);
  ~EmulatedCluster();
  EmulatedCluster(const EmulatedCluster&) = delete;
  EmulatedCluster& operator=(const EmulatedCluster&) = delete;

  [[nodiscard]] const std::vector<std::string>& namespaces() const { return namespaces_; }
  [[nodiscard]] std::string host_ns(int i) const;
  [[nodiscard]] std::string host_ip(int i) const;
  /// mpirun wrapper (ip netns exec <p>h0) and arguments (hostfile, agent, TCP on eth0, no
  /// binding, yield when idle, eager limit above `max_message_bytes`).
  [[nodiscard]] std::vector<std::string> mpirun_wrapper() const;
  [[nodiscard]] std::vector<std::string> mpirun_args(std::uint64_t max_message_bytes) const;
  /// Packets each shaped queue has dropped so far (tc -s qdisc: the bulk class's bfifo tail
  /// drops and the ACK class's pfifo), one entry per shaped link direction, in build order.
  /// A drop means the emulated link lost data, which the flow model (lossless) cannot follow.
  struct QueueDrops {
    std::string ns, dev;
    std::uint64_t dropped = 0;
  };
  [[nodiscard]] std::vector<QueueDrops> queue_drops() const;
  /// Removes everything now (idempotent; the destructor calls it).
  void teardown() noexcept;

 private:
  void build();
  void ip(const std::vector<std::string>& args);
  void shape(const std::string& ns, const std::string& dev, double rate_Bps);

  EmuSpec spec_;
  std::string prefix_;
  int net_ = 0;  ///< second octet of the 10.x.0.0/24 network
  std::string workdir_;
  std::vector<std::string> namespaces_;
  std::vector<std::pair<std::string, std::string>> shaped_;  ///< (namespace, device) per shape()
};

}  // namespace shardsim::backends
