#pragma once
// Emulated clusters (DESIGN 6): a topology spec becomes Linux network namespaces, veth pairs,
// bridges and tc tbf shaping; the MPI benchmark runs across them over TCP. Needs root (or
// CAP_NET_ADMIN + CAP_SYS_ADMIN), iproute2 (`ip`, `tc`) and OpenMPI.
//
// Layout (every object lives inside a namespace named <prefix><role>, so deleting the
// namespaces removes every veth and bridge; nothing is created in the caller's namespace):
//   <p>sw       the switch fabric: bridges, the switch side of every veth
//   <p>h<i>     host i: eth0 (10.<net>.0.<i+1>), lo; rank i runs here
//   <p>hub      bus only: the shared medium, a router with one leg on the bridge
//   switch:    host eth0 <-> sw:h<i> on bridge br0; tbf `rate` on both ends (each direction
//              of each host link is shaped), a non-blocking star.
//   two-level: leaves of hosts_per_leaf hosts on bridges l<k>, each leaf joined to bridge
//              spine by a veth pair shaped at `uplink_rate` both ways (fat_tree, 1 spine).
//   bus:       hosts have /32 addresses and route everything via the hub (10.<net>.0.254),
//              which forwards back out of its single, tbf-shaped interface: every packet of
//              every flow (and its ACKs) crosses one queue of `rate` = one shared medium.
//              ICMP redirects are off so hosts never learn the direct path.
// OpenMPI across namespaces: mpirun runs inside <p>h0 with a hostfile of the host addresses
// and an rsh agent script (plm_rsh_agent) that runs the daemon as `ip netns exec <p>h<i>
// sh -c CMD`; BTL tcp and OOB over eth0 only (--mca btl tcp,self, btl_tcp_if_include eth0).
//
// Teardown: the EmulatedCluster destructor kills every process left in its namespaces and
// deletes them (success, failure, exception). SIGINT/SIGTERM during a run stop the launch
// (launch.hpp interrupt flag), so the destructor runs. A run killed with SIGKILL leaves its
// namespaces; the next run removes every <base>*<pid>- namespace whose pid is not alive
// (remove_stale()).
#include <cstdint>
#include <optional>
#include <string>
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
  /// mpirun wrapper (ip netns exec <p>h0) and arguments (hostfile, agent, TCP on eth0).
  [[nodiscard]] std::vector<std::string> mpirun_wrapper() const;
  [[nodiscard]] std::vector<std::string> mpirun_args() const;
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
};

}  // namespace shardsim::backends
