#include "analysis/backends/emulate/emulate.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "analysis/backends/mpi/launch.hpp"
#include "sim/enum_names.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"

namespace shardsim::backends {
namespace {

constexpr double kCmdTimeout_s = 30;

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Output of a command that must succeed (teardown helpers ignore failures instead).
std::string must(const std::vector<std::string>& argv, bool interruptible = true) {
  const auto r = run_process(argv, kCmdTimeout_s, false, interruptible);
  if (r.timed_out || r.exit_code != 0) {
    throw LaunchError(fmt::format("emulation: '{}' failed (exit {}): {}", join(argv), r.exit_code, r.output));
  }
  return r.output;
}

void kill_and_delete(const std::string& ns) noexcept {
  try {
    for (int round = 0; round < 3; ++round) {
      const auto pids = run_process({"ip", "netns", "pids", ns}, kCmdTimeout_s, false, false);
      if (pids.exit_code != 0 || pids.output.find_first_of("0123456789") == std::string::npos) break;
      size_t pos = 0;
      while (pos < pids.output.size()) {
        size_t end = pids.output.find('\n', pos);
        if (end == std::string::npos) end = pids.output.size();
        const std::string line = pids.output.substr(pos, end - pos);
        if (!line.empty()) {
          const long pid = std::strtol(line.c_str(), nullptr, 10);
          if (pid > 1 && pid != ::getpid()) ::kill(static_cast<pid_t>(pid), SIGKILL);
        }
        pos = end + 1;
      }
      ::usleep(100000);
    }
    run_process({"ip", "netns", "delete", ns}, kCmdTimeout_s, false, false);
  } catch (...) {
    // Teardown never throws: a failure here leaves a namespace that remove_stale() removes.
  }
}

double rate_of(const std::string& text, const char* where) { return units::parse_rate_Bps(text, where); }

std::string uplink_of(const EmuSpec& s) {
  if (s.uplink_rate) return *s.uplink_rate;
  // 4:1 oversubscription: the leaf's hosts together send 4x what its uplink carries.
  const double up_bits = rate_of(s.rate, "--rate") * 8.0 * s.hosts_per_leaf / 4.0;
  return fmt::format("{}Mbit", up_bits / 1e6);
}

// The emulated kinds: their names first (to_string), then the aliases the spec also accepts.
constexpr std::array<EnumName<EmuKind>, 3> kEmuKinds{
    {{EmuKind::bus, "bus"}, {EmuKind::switch_star, "switch"}, {EmuKind::two_level, "two-level"}}};
constexpr std::array<EnumName<EmuKind>, 3> kEmuAliases{
    {{EmuKind::switch_star, "star"}, {EmuKind::two_level, "two_level"}, {EmuKind::two_level, "fat_tree"}}};
}  // namespace

EmuKind emu_kind_from_string(const std::string& s) {
  for (const auto& a : kEmuAliases) {
    if (a.name == s) return a.value;
  }
  return enum_from_name(kEmuKinds, s, "emulated topology", "--spec");
}

const char* to_string(EmuKind k) { return enum_name(kEmuKinds, k); }

nlohmann::json emu_topology_json(const EmuSpec& s) {
  if (s.hosts < 2 || s.hosts > 64) throw ConfigError("--hosts", std::to_string(s.hosts), "2 to 64 hosts");
  (void)rate_of(s.rate, "--rate");
  (void)units::parse_seconds(s.lat, "--lat");
  nlohmann::json j;
  switch (s.kind) {
    case EmuKind::bus:
    case EmuKind::switch_star:
      j = {{"builder", s.kind == EmuKind::bus ? "bus" : "switch"}, {"n", s.hosts}, {"bw", s.rate}, {"lat", s.lat},
           {"class", "ethernet"}};
      break;
    case EmuKind::two_level: {
      if (s.hosts_per_leaf < 1 || s.hosts % s.hosts_per_leaf != 0 || s.hosts / s.hosts_per_leaf < 2) {
        throw ConfigError("--hosts-per-leaf", fmt::format("{} hosts in leaves of {}", s.hosts, s.hosts_per_leaf),
                          "a leaf size dividing hosts into at least 2 leaves");
      }
      const std::string up = uplink_of(s);
      (void)rate_of(up, "--uplink-rate");
      j = {{"builder", "fat_tree"}, {"hosts", s.hosts}, {"hosts_per_leaf", s.hosts_per_leaf}, {"bw", s.rate},
           {"uplink_bw", up}, {"spines", 1}, {"lat", s.lat}, {"class", "ethernet"}};
      break;
    }
  }
  return j;
}

std::optional<std::string> emulation_unavailable() {
  if (::geteuid() != 0) return "network emulation needs root (namespaces, veth, tc); run as root";
  for (const char* tool : {"ip", "tc"}) {
    if (!find_in_path(tool)) return fmt::format("'{}' not found (Debian: iproute2)", tool);
  }
  const std::string probe = fmt::format("{}probe{}", kEmuBase, ::getpid());
  const auto r = run_process({"ip", "netns", "add", probe}, kCmdTimeout_s, false, false);
  if (r.exit_code != 0) return "cannot create network namespaces here: " + r.output;
  run_process({"ip", "netns", "delete", probe}, kCmdTimeout_s, false, false);
  return std::nullopt;
}

std::vector<std::string> emu_namespaces() {
  std::vector<std::string> out;
  const auto r = run_process({"ip", "netns", "list"}, kCmdTimeout_s, false, false);
  size_t pos = 0;
  while (pos < r.output.size()) {
    size_t end = r.output.find('\n', pos);
    if (end == std::string::npos) end = r.output.size();
    std::string line = r.output.substr(pos, end - pos);
    const auto sp = line.find(' ');  // "name (id: 3)"
    if (sp != std::string::npos) line = line.substr(0, sp);
    if (line.rfind(kEmuBase, 0) == 0) out.push_back(line);
    pos = end + 1;
  }
  return out;
}

std::vector<std::string> remove_stale() {
  std::vector<std::string> removed;
  const std::string base = kEmuBase;
  for (const auto& ns : emu_namespaces()) {
    // shsm<pid>-<role>, or shsmprobe<pid>
    std::string digits;
    for (size_t i = base.size(); i < ns.size() && std::isdigit(static_cast<unsigned char>(ns[i])); ++i) digits += ns[i];
    if (ns.rfind(base + "probe", 0) == 0) {
      digits.clear();
      for (size_t i = base.size() + 5; i < ns.size() && std::isdigit(static_cast<unsigned char>(ns[i])); ++i) digits += ns[i];
    }
    const long pid = digits.empty() ? 0 : std::strtol(digits.c_str(), nullptr, 10);
    const bool alive = pid > 0 && pid != ::getpid() && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
    if (alive) continue;
    kill_and_delete(ns);
    removed.push_back(ns);
    std::error_code ec;
    std::filesystem::remove_all(fmt::format("/tmp/{}{}-run", base, digits), ec);
  }
  return removed;
}

EmulatedCluster::EmulatedCluster(const EmuSpec& spec) : spec_(spec) {
  (void)emu_topology_json(spec_);
  prefix_ = fmt::format("{}{}-", kEmuBase, ::getpid());
  net_ = 100 + static_cast<int>(::getpid() % 100);
  try {
    build();
  } catch (...) {
    teardown();
    throw;
  }
}

EmulatedCluster::~EmulatedCluster() { teardown(); }

std::string EmulatedCluster::host_ns(int i) const { return fmt::format("{}h{}", prefix_, i); }
std::string EmulatedCluster::host_ip(int i) const { return fmt::format("10.{}.0.{}", net_, i + 1); }

void EmulatedCluster::ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  must(argv);
}

void EmulatedCluster::shape(const std::string& ns, const std::string& dev, double rate_Bps) {
  // One direction of a link of `rate_Bps`, as a switch port with a priority queue for control
  // traffic would carry it (tc-htb(8), tc-u32(8)):
  //   1:1   htb, rate = ceil = the link rate: everything leaving `dev` shares it;
  //   1:10  prio 0: TCP segments under 128 B with ACK set (pure ACKs, MPI control headers);
  //   1:20  prio 1 (default): the bulk, a byte FIFO that drops nothing (below).
  // Why: with one FIFO, the ACKs of the flow arriving at a host wait behind the host's own
  // outgoing data (up to the whole queue), the ACK clock of that flow stalls, and a ring step
  // (every host sends and receives at once) got 60-70 % of the rate instead of the ~95 % one
  // stream gets: measured 184-209 ms for 6 x 1 MiB over a raw-TCP ring of 4 hosts at
  // 400 Mbit/s with tbf, 131-136 ms with this (docs/measurements.md). The ACK class is
  // guaranteed 1/10 of the rate (ACKs need ~2 %) and borrows first; both may use the whole.
  // Burst 16 KiB (0.33 ms at 400 Mbit/s): what an idle link saves up. A GSO packet (up to
  // 64 KiB) still passes whole once the bucket is not empty and is charged afterwards (htb
  // tokens go negative), so the average rate holds but a message that starts on an idle link
  // gets up to ~80 KB ahead of it, as every ping-pong message does (docs/measurements.md).
  // Smaller GSO packets cost more CPU than the cores had to spare.
  shaped_.emplace_back(ns, dev);
  const auto bits = static_cast<long long>(std::llround(rate_Bps * 8.0));
  const auto ack_bits = std::max(1LL, bits / 10);
  // The bulk FIFO holds 50 ms at the link rate, and at least what every other host can have in
  // flight toward it (hosts x the run's largest message): no tail drops, a lossless link, as the
  // flow model has it. With 50 ms alone the bus's one FIFO dropped packets under linear
  // all-to-all (8 hosts, 200 Mbit/s, 1 MiB: 549-556 drops per run, the calls 1.0-3.8 s against
  // 0.29 s declared; TCP's retransmission timeouts); with the bound, 0 drops and 0.954 of the
  // declared rate, the ping-pong's ratio (docs/measurements.md "Lossless queues").
  const auto in_flight = static_cast<long long>(spec_.hosts) * static_cast<long long>(spec_.max_message_bytes);
  const auto queue_bytes = std::max({128LL * 1024, std::llround(rate_Bps * 0.050), in_flight});
  const std::vector<std::string> tc{"tc", "-n", ns};
  const auto run = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = tc;
    argv.insert(argv.end(), args.begin(), args.end());
    must(argv);
  };
  const std::string burst = "16kb", quantum = "60000";  // quantum: DRR within a prio, one class each
  run({"qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "20"});
  run({"class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", fmt::format("{}bit", bits), "ceil",
       fmt::format("{}bit", bits), "burst", burst, "cburst", burst, "quantum", quantum});
  run({"class", "add", "dev", dev, "parent", "1:1", "classid", "1:10", "htb", "rate", fmt::format("{}bit", ack_bits),
       "ceil", fmt::format("{}bit", bits), "prio", "0", "burst", burst, "cburst", burst, "quantum", quantum});
  run({"class", "add", "dev", dev, "parent", "1:1", "classid", "1:20", "htb", "rate",
       fmt::format("{}bit", bits - ack_bits), "ceil", fmt::format("{}bit", bits), "prio", "1", "burst", burst, "cburst",
       burst, "quantum", quantum});
  run({"qdisc", "add", "dev", dev, "parent", "1:10", "handle", "10:", "pfifo", "limit", "1000"});
  run({"qdisc", "add", "dev", dev, "parent", "1:20", "handle", "20:", "bfifo", "limit", std::to_string(queue_bytes)});
  // IPv4 without options (IHL 5), protocol TCP, total length < 128, ACK flag (byte 33 = TCP
  // flags at 20 + 13).
  run({"filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match", "ip", "protocol",
       "6", "0xff", "match", "u8", "0x05", "0x0f", "at", "0", "match", "u16", "0x0000", "0xff80", "at", "2", "match", "u8",
       "0x10", "0x10", "at", "33", "flowid", "1:10"});
}

void EmulatedCluster::build() {
  if (auto why = emulation_unavailable()) throw LaunchError(*why);
  const double rate = rate_of(spec_.rate, "--rate");
  const std::string sw = prefix_ + "sw";
  const auto add_ns = [&](const std::string& ns) {
    ip({"netns", "add", ns});
    namespaces_.push_back(ns);
    ip({"-n", ns, "link", "set", "lo", "up"});
  };
  add_ns(sw);
  const int hosts = spec_.hosts;
  const bool bus = spec_.kind == EmuKind::bus;
  const bool two = spec_.kind == EmuKind::two_level;
  const int leaves = two ? hosts / spec_.hosts_per_leaf : 1;
  for (int l = 0; l < leaves; ++l) {
    const std::string br = two ? fmt::format("l{}", l) : "br0";
    ip({"-n", sw, "link", "add", br, "type", "bridge"});
    ip({"-n", sw, "link", "set", br, "up"});
  }
  if (two) {
    const double up = rate_of(uplink_of(spec_), "--uplink-rate");
    ip({"-n", sw, "link", "add", "spine", "type", "bridge"});
    ip({"-n", sw, "link", "set", "spine", "up"});
    for (int l = 0; l < leaves; ++l) {
      const std::string a = fmt::format("u{}a", l), b = fmt::format("u{}b", l);
      ip({"-n", sw, "link", "add", a, "type", "veth", "peer", "name", b});
      ip({"-n", sw, "link", "set", a, "master", fmt::format("l{}", l)});
      ip({"-n", sw, "link", "set", b, "master", "spine"});
      ip({"-n", sw, "link", "set", a, "up"});
      ip({"-n", sw, "link", "set", b, "up"});
      shape(sw, a, up);  // leaf -> spine
      shape(sw, b, up);  // spine -> leaf
    }
  }
  for (int i = 0; i < hosts; ++i) {
    const std::string ns = host_ns(i);
    add_ns(ns);
    const std::string port = fmt::format("h{}", i);
    const std::string br = two ? fmt::format("l{}", i / spec_.hosts_per_leaf) : "br0";
    ip({"-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", sw});
    ip({"-n", sw, "link", "set", port, "master", br});
    ip({"-n", sw, "link", "set", port, "up"});
    if (bus) {
      ip({"-n", ns, "addr", "add", host_ip(i) + "/32", "dev", "eth0"});
      ip({"-n", ns, "link", "set", "eth0", "up"});
      ip({"-n", ns, "route", "add", fmt::format("10.{}.0.254", net_), "dev", "eth0"});
      ip({"-n", ns, "route", "add", fmt::format("10.{}.0.0/24", net_), "via", fmt::format("10.{}.0.254", net_)});
      must({"ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv4.conf.all.accept_redirects=0"});
      must({"ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv4.conf.eth0.accept_redirects=0"});
    } else {
      ip({"-n", ns, "addr", "add", host_ip(i) + "/24", "dev", "eth0"});
      ip({"-n", ns, "link", "set", "eth0", "up"});
      shape(ns, "eth0", rate);  // host -> switch
      shape(sw, port, rate);    // switch -> host
    }
  }
  if (bus) {
    const std::string hub = prefix_ + "hub";
    add_ns(hub);
    ip({"-n", hub, "link", "add", "eth0", "type", "veth", "peer", "name", "hub", "netns", sw});
    ip({"-n", sw, "link", "set", "hub", "master", "br0"});
    ip({"-n", sw, "link", "set", "hub", "up"});
    ip({"-n", hub, "addr", "add", fmt::format("10.{}.0.254/24", net_), "dev", "eth0"});
    ip({"-n", hub, "link", "set", "eth0", "up"});
    for (const char* key : {"net.ipv4.ip_forward=1", "net.ipv4.conf.all.send_redirects=0",
                            "net.ipv4.conf.eth0.send_redirects=0", "net.ipv4.conf.default.send_redirects=0"}) {
      must({"ip", "netns", "exec", hub, "sysctl", "-q", "-w", key});
    }
    shape(hub, "eth0", rate);  // the shared medium
  }
  // mpirun support files: hostfile and the rsh agent mapping host addresses to namespaces.
  workdir_ = fmt::format("/tmp/{}run", prefix_);
  std::filesystem::create_directories(workdir_);
  std::ofstream hostfile(workdir_ + "/hostfile");
  std::ofstream agent(workdir_ + "/agent.sh");
  agent << "#!/bin/sh\n# rsh agent for OpenMPI (plm_rsh_agent): $1 = host address, the rest = the command.\n"
        << "host=\"$1\"; shift\ncase \"$host\" in\n";
  for (int i = 0; i < hosts; ++i) {
    hostfile << host_ip(i) << " slots=1\n";
    agent << "  " << host_ip(i) << ") ns=" << host_ns(i) << " ;;\n";
  }
  // Each host gets its own TMPDIR: OpenMPI's session directory and PMIx's shared-memory store
  // live under it, and hosts that share one (same /tmp, same host name) remove each other's
  // files at job end ("PMIX ERROR: NO-PERMISSIONS", and now and then a daemon that cannot
  // create its session directory or connect).
  agent << "  *) echo \"shardsim agent: unknown host $host\" >&2; exit 1 ;;\nesac\n"
        << "mkdir -p \"" << workdir_ << "/$ns\"\n"
        << "exec ip netns exec \"$ns\" env TMPDIR=\"" << workdir_ << "/$ns\" sh -c \"$*\"\n";
  std::filesystem::create_directories(workdir_ + "/" + host_ns(0));
  agent.close();
  hostfile.close();
  std::filesystem::permissions(workdir_ + "/agent.sh", std::filesystem::perms::owner_all);
}

std::vector<EmulatedCluster::QueueDrops> EmulatedCluster::queue_drops() const {
  // `tc -s qdisc show` prints, per qdisc, " Sent B bytes P pkt (dropped D, overlimits O ...)".
  // The htb root counts what its children dropped again, so only the leaves (bfifo, pfifo) count.
  std::vector<QueueDrops> out;
  for (const auto& [ns, dev] : shaped_) {
    const std::string text = must({"tc", "-n", ns, "-s", "qdisc", "show", "dev", dev});
    QueueDrops d{ns, dev, 0};
    bool leaf = false;
    std::size_t pos = 0;
    while (pos < text.size()) {
      std::size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      const std::string line = text.substr(pos, end - pos);
      if (line.rfind("qdisc ", 0) == 0) leaf = line.find("fifo") != std::string::npos;
      if (const auto at = line.find("(dropped "); leaf && at != std::string::npos) {
        d.dropped += std::strtoull(line.c_str() + at + 9, nullptr, 10);
      }
      pos = end + 1;
    }
    out.push_back(d);
  }
  return out;
}

std::vector<std::string> EmulatedCluster::mpirun_wrapper() const {
  return {"ip", "netns", "exec", host_ns(0), "env", "TMPDIR=" + workdir_ + "/" + host_ns(0)};
}

std::vector<std::string> EmulatedCluster::mpirun_args(std::uint64_t max_message_bytes) const {
  // Eager limit (whole message in one fragment, header included) above the largest message:
  // see the header comment. ob1's header is under 100 B; 64 KiB of slack keeps round numbers.
  const std::string eager = std::to_string(std::max<std::uint64_t>(max_message_bytes, 64 * 1024) + 64 * 1024);
  return {"--hostfile", workdir_ + "/hostfile", "--mca", "plm_rsh_agent", workdir_ + "/agent.sh", "--bind-to", "none",
          "--mca", "mpi_yield_when_idle", "1", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "eth0",
          "--mca", "oob_tcp_if_include", "eth0", "--mca", "btl_tcp_eager_limit", eager, "--mca",
          "btl_tcp_rndv_eager_limit", eager, "--mca", "btl_tcp_max_send_size", eager};
}

void EmulatedCluster::teardown() noexcept {
  // Reverse order: the hub and hosts first (their veths vanish with them), the switch last.
  for (auto it = namespaces_.rbegin(); it != namespaces_.rend(); ++it) kill_and_delete(*it);
  namespaces_.clear();
  if (!workdir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(workdir_, ec);
    workdir_.clear();
  }
}

}  // namespace shardsim::backends
