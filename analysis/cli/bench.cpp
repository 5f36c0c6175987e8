// shardsim bench parse|mpi|emulate: measurements into records (DESIGN 6).
//   parse    nccl-tests / OSU logs (or JSONL records) -> JSONL records
//   mpi      the OpenMPI benchmark on this machine through mpirun (timeout on every launch)
//   emulate  an emulated cluster (namespaces, veth, bridges, tbf), the benchmark across it,
//            the records plus the topology JSON, achieved vs declared bandwidth; always torn
//            down (analysis/backends/emulate/emulate.hpp)
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

#include "analysis/backends/emulate/emulate.hpp"
#include "analysis/backends/mpi/launch.hpp"
#include "analysis/calibration/profile.hpp"
#include "analysis/cli/command.hpp"
#include "analysis/validation/validate.hpp"
#include "sim/error.hpp"
#include "sim/units.hpp"
#include "traces/logs/parse.hpp"
#include "traces/logs/record.hpp"

namespace shardsim::cli {
namespace {

struct ParseCmd {
  std::vector<std::string> files;
  std::string out, collective, topology;
  int ranks = 0;
  bool in_place = false;
};

struct SizeFlags {
  std::string bytes = "1M:8M:x2";
};

struct MpiCmd {
  int np = 2;
  std::string algorithm, collectives = "allreduce", out, topology, program, mpirun = "mpirun";
  SizeFlags sizes;
  int warmup = 2, iters = 10, peer = 1;
  double timeout_s = 600;
  std::vector<std::string> inject;  // hidden: extra program arguments (failure injection)
};

struct EmulateCmd {
  backends::EmuSpec spec;
  std::string kind = "switch", out, topology_out, algorithms, collectives = "allreduce", program;
  std::string bytes = "1M:8M:x2", p2p_bytes = "4K:8M:x2", peers;
  int warmup = 2, iters = 5, p2p_iters = 10, idle_sleep_us = 20, rt_priority = 1;
  double timeout_s = 300;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) {
    if (!x.empty()) out.push_back(x);
  }
  return out;
}

// "MIN:MAX:xF" or "S" -> (min, max, factor), as the benchmark program takes them.
std::tuple<std::string, std::string, std::uint64_t> size_flags(const std::string& text, const char* where) {
  const auto sizes = units::parse_size_range(text, where);  // validates the whole text
  if (sizes.size() == 1) return {std::to_string(sizes[0]), std::to_string(sizes[0]), 2};
  if (sizes.size() >= 2 && sizes[1] % sizes[0] == 0 && sizes[1] / sizes[0] > 1) {
    const std::uint64_t f = sizes[1] / sizes[0];
    bool geometric = true;
    for (size_t i = 1; i < sizes.size(); ++i) geometric = geometric && sizes[i] == sizes[i - 1] * f;
    if (geometric) return {std::to_string(sizes.front()), std::to_string(sizes.back()), f};
  }
  throw ConfigError(where, fmt::format("'{}'", text), "a single size or a geometric range MIN:MAX:xF with an integer F");
}

nlohmann::json topology_value(const std::string& spec) {
  if (spec.empty()) return nullptr;
  if (spec.front() == '{') return nlohmann::json::parse(spec);
  if (spec.size() > 5 && spec.substr(spec.size() - 5) == ".json") {
    std::ifstream in(spec);
    if (!in) throw ConfigError("--topology", fmt::format("cannot open '{}'", spec), "a readable topology JSON file");
    try {
      return nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
      throw ConfigError(spec, fmt::format("invalid JSON ({})", e.what()), "a topology JSON object");
    }
  }
  return spec;  // a preset name or builder:k=v spec, kept as text
}

void run_parse(const ParseCmd& c) {
  logs::ParseOptions o;
  if (!c.collective.empty()) o.collective = c.collective;
  if (c.ranks > 0) o.ranks = c.ranks;
  o.in_place = c.in_place;
  o.topology = topology_value(c.topology);
  std::vector<logs::BenchRecord> all;
  for (const auto& f : c.files) {
    auto recs = logs::parse_log_file(f, o);
    fmt::print("{}: {} records ({} ranks, {})\n", f, recs.size(), recs.front().ranks, recs.front().collective);
    all.insert(all.end(), recs.begin(), recs.end());
  }
  logs::write_jsonl_file(c.out, all);
  fmt::print("wrote {} records to {}\n", all.size(), c.out);
}

int launch_error(const backends::LaunchError& e) {
  fmt::print(stderr, "shardsim: error: {}\n", e.what());
  const int sig = backends::interrupt_signal();
  return sig != 0 ? 128 + sig : 1;
}

void run_mpi(const MpiCmd& c) {
  backends::MpiRun r;
  r.np = c.np;
  r.collectives = split_list(c.collectives);
  r.algorithm = c.algorithm;
  std::tie(r.min_bytes, r.max_bytes, r.factor) = size_flags(c.sizes.bytes, "--bytes");
  r.warmup = c.warmup;
  r.iters = c.iters;
  r.peer = c.peer;
  r.timeout_s = c.timeout_s;
  r.program = c.program;
  r.mpirun = c.mpirun;
  r.program_args = c.inject;
  r.topology_file = c.topology;
  r.jsonl = c.out;
  { std::ofstream trunc(c.out, std::ios::trunc); if (!trunc) throw ConfigError("--out", c.out, "a writable path"); }
  try {
    backends::InterruptGuard guard;
    backends::launch_mpi(r);
    fmt::print("wrote {} records to {}\n", logs::read_jsonl_file(c.out).size(), c.out);
  } catch (const backends::LaunchError& e) {
    exit_status() = launch_error(e);
  }
}

// Achieved vs declared, per kind (largest size of each): the time the declared topology
// allows for the record (point-to-point: calibration's T_decl, e.g. 2 S / B for an exchange
// on a bus; collectives: the flow model at the declared bandwidths, no profile) against the
// measured time. What the emulation loses below 1.0 is what the profile has to explain.
void print_achieved(const nlohmann::json& topo, const std::vector<logs::BenchRecord>& recs) {
  const topo::Topology t = calib::record_topology(topo, "emulated topology");
  fmt::print("\n# achieved vs declared (largest size of each kind): declared = time at the declared rates\n");
  fmt::print("# {:<14} {:>4} {:>14} {:>10} {:>14} {:>14} {:>8}\n", "kind", "peer", "algorithm", "bytes", "measured",
             "declared", "ratio");
  std::vector<std::string> seen;
  std::vector<logs::BenchRecord> largest;
  for (auto it = recs.rbegin(); it != recs.rend(); ++it) {
    const std::string key = fmt::format("{}/{}/{}", it->collective, it->peer.value_or(-1), it->algorithm.value_or(""));
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    largest.insert(largest.begin(), *it);
  }
  for (const auto& r : largest) {
    const bool p2p = logs::is_point_to_point(r.collective);
    std::optional<double> declared_us;
    if (p2p) {
      declared_us = 1e6 * calib::declared_p2p_time(t, r.collective, static_cast<std::size_t>(r.peer.value_or(1)),
                                                   static_cast<double>(r.bytes))
                              .first;
    } else {
      try {  // OpenMPI's schedule (ompi_tuned.hpp; its fixed decision's without --algorithm)
        declared_us = validation::predict({r}, validation::Options{}).at(0).predicted_us;
      } catch (const ConfigError&) {
        // an OpenMPI algorithm without a model: no declared time
      }
    }
    fmt::print("  {:<14} {:>4} {:>14} {:>10} {:>11.1f} ms {:>14} {:>8}\n", r.collective,
               p2p ? std::to_string(r.peer.value_or(1)) : "-", r.algorithm.value_or("-"), r.bytes, r.time_us / 1e3,
               declared_us ? fmt::format("{:.1f} ms", *declared_us / 1e3) : "-",
               declared_us ? fmt::format("{:.3f}", *declared_us / r.time_us) : "-");
  }
}

// Tail drops of the emulated links' queues: a lossless link is what the flow model assumes, so
// a run with drops measured the emulation's loss recovery as well (docs/measurements.md).
void print_drops(const backends::EmulatedCluster& cluster) {
  std::uint64_t total = 0;
  std::string where;
  for (const auto& d : cluster.queue_drops()) {
    total += d.dropped;
    if (d.dropped > 0) where += fmt::format(" {}/{} {}", d.ns, d.dev, d.dropped);
  }
  fmt::print("queue drops (every run): {} packets{}{}\n", total, where.empty() ? "" : ":", where);
}

void run_emulate(EmulateCmd c) {
  c.spec.kind = backends::emu_kind_from_string(c.kind);
  const nlohmann::json topo = backends::emu_topology_json(c.spec);
  const std::string topo_path = c.topology_out.empty() ? c.out + ".topology.json" : c.topology_out;
  std::vector<int> peers;
  for (const auto& p : split_list(c.peers)) peers.push_back(std::stoi(p));
  if (peers.empty()) {
    peers.push_back(1);
    if (c.spec.kind == backends::EmuKind::two_level) peers.push_back(c.spec.hosts_per_leaf);
  }
  for (int p : peers) {
    if (p < 1 || p >= c.spec.hosts) throw ConfigError("--peers", std::to_string(p), fmt::format("ranks 1..{}", c.spec.hosts - 1));
  }
  backends::MpiRun base;
  base.np = c.spec.hosts;
  base.warmup = c.warmup;
  base.iters = c.iters;
  base.timeout_s = c.timeout_s;
  base.program = c.program;
  base.topology_file = topo_path;
  base.jsonl = c.out;
  base.source = fmt::format("shardsim bench emulate --spec {} --hosts {} --rate {}", c.kind, c.spec.hosts, c.spec.rate);
  auto coll_sizes = size_flags(c.bytes, "--bytes");
  auto p2p_sizes = size_flags(c.p2p_bytes, "--p2p-bytes");
  auto algorithms = split_list(c.algorithms);
  if (algorithms.empty()) algorithms.push_back("");
  for (const auto& a : algorithms) {  // check every algorithm before building anything
    backends::MpiRun probe = base;
    const auto run = backends::collectives_with_algorithm(split_list(c.collectives), a);
    probe.collectives = run.collectives;
    probe.algorithm = run.algorithm;
    (void)backends::mpirun_command(probe);
  }
  if (auto why = backends::emulation_unavailable()) throw backends::LaunchError(*why);
  for (const auto& ns : backends::remove_stale()) fmt::print("removed leftover namespace {} of a dead run\n", ns);
  {
    std::ofstream t(topo_path, std::ios::trunc);
    if (!t) throw ConfigError("--topology-out", topo_path, "a writable path");
    t << topo.dump(2) << '\n';
    std::ofstream trunc(c.out, std::ios::trunc);
    if (!trunc) throw ConfigError("--out", c.out, "a writable path");
  }
  const std::uint64_t max_message = std::max(std::stoull(std::get<1>(p2p_sizes)), std::stoull(std::get<1>(coll_sizes)));
  c.spec.max_message_bytes = max_message;
  try {
    backends::InterruptGuard guard;
    backends::EmulatedCluster cluster(c.spec);
    fmt::print("emulated {} cluster: {} hosts at {} ({} namespaces), topology {}\n", c.kind, c.spec.hosts, c.spec.rate,
               cluster.namespaces().size(), topo_path);
    base.wrapper = cluster.mpirun_wrapper();
    base.mpirun_args = cluster.mpirun_args(max_message);
    base.idle_sleep_us = c.idle_sleep_us;
    base.rt_priority = c.idle_sleep_us > 0 ? c.rt_priority : 0;
    for (int p : peers) {
      backends::MpiRun r = base;
      r.collectives = {"pingpong", "exchange"};
      r.peer = p;
      r.iters = c.p2p_iters;
      std::tie(r.min_bytes, r.max_bytes, r.factor) = p2p_sizes;
      backends::launch_mpi(r);
    }
    {  // One mpirun for every (collective, algorithm) pair, switched in the process (MpiRun::algorithms).
      backends::MpiRun r = base;
      const auto seq = backends::algorithm_sequence(split_list(c.collectives), algorithms);
      r.collectives = seq.collectives;
      r.algorithms = seq.algorithms;
      std::tie(r.min_bytes, r.max_bytes, r.factor) = coll_sizes;
      backends::launch_mpi(r);
    }
    print_drops(cluster);
    cluster.teardown();
    const auto recs = logs::read_jsonl_file(c.out);
    print_achieved(topo, recs);
    fmt::print("wrote {} records to {} and the topology to {}\n", recs.size(), c.out, topo_path);
  } catch (const backends::LaunchError& e) {
    exit_status() = launch_error(e);
  }
}

void setup_bench(CLI::App& root) {
  auto* bench = root.add_subcommand("bench", "Measure: parse benchmark logs, run the MPI backend, emulate clusters");
  bench->require_subcommand(1);

  auto pc = std::make_shared<ParseCmd>();
  auto* parse = bench->add_subcommand("parse", "nccl-tests (plain, srun/mpirun prefixes, -J JSON) and OSU logs -> JSONL records");
  parse->add_option("files", pc->files, "Log files")->required()->check(CLI::ExistingFile);
  parse->add_option("--out", pc->out, "JSONL records to write")->required();
  parse->add_option("--collective", pc->collective, "Collective, when the log does not name it");
  parse->add_option("--ranks", pc->ranks, "Ranks, when the log does not list them")->check(CLI::Range(1, 1 << 24));
  parse->add_option("--topology", pc->topology, "Topology the logs came from (JSON file, inline JSON or spec)");
  parse->add_flag("--in-place", pc->in_place, "Take nccl-tests' in-place columns");
  parse->callback([pc] { run_parse(*pc); });

  auto mc = std::make_shared<MpiCmd>();
  auto* mpi = bench->add_subcommand("mpi", "Run shardsim-mpi-bench through mpirun on this machine");
  mpi->add_option("--np", mc->np, "Ranks")->check(CLI::Range(2, 4096));
  mpi->add_option("--algorithm", mc->algorithm, "OpenMPI algorithm (ring, recursive_doubling, rabenseifner, ...)");
  mpi->add_option("--collective", mc->collectives, "Comma list: allreduce, reducescatter, allgather, broadcast, alltoall, pingpong, exchange");
  mpi->add_option("--bytes", mc->sizes.bytes, "Sizes: S or MIN:MAX:xF (K/M/G = 1024^k)");
  mpi->add_option("--warmup", mc->warmup, "Untimed calls per size")->check(CLI::Range(0, 100000));
  mpi->add_option("--iters", mc->iters, "Timed calls per size")->check(CLI::Range(1, 100000));
  mpi->add_option("--peer", mc->peer, "Other rank of point-to-point tests")->check(CLI::Range(1, 4095));
  mpi->add_option("--timeout", mc->timeout_s, "Seconds before mpirun is killed")->check(CLI::Range(1.0, 86400.0));
  mpi->add_option("--topology", mc->topology, "Topology JSON file embedded into the records");
  mpi->add_option("--program", mc->program, "shardsim-mpi-bench path (default: next to shardsim)");
  mpi->add_option("--mpirun", mc->mpirun, "mpirun to use");
  mpi->add_option("--out", mc->out, "JSONL records to write")->required();
  mpi->add_option("--inject", mc->inject, "Testing: extra benchmark arguments")->group("")->allow_extra_args(false);
  mpi->callback([mc] { run_mpi(*mc); });

  auto ec = std::make_shared<EmulateCmd>();
  auto* emu = bench->add_subcommand("emulate", "Emulate a cluster with namespaces + veth + tbf and run the MPI benchmark across it (root)");
  emu->add_option("--spec", ec->kind, "bus, switch or two-level")->required();
  emu->add_option("--hosts", ec->spec.hosts, "Hosts (one rank each)")->check(CLI::Range(2, 64));
  emu->add_option("--rate", ec->spec.rate, "Host link rate (bus: the medium), e.g. 400Mbit");
  emu->add_option("--uplink-rate", ec->spec.uplink_rate, "two-level leaf uplink rate (default: 4:1 oversubscribed)");
  emu->add_option("--hosts-per-leaf", ec->spec.hosts_per_leaf, "two-level hosts per leaf")->check(CLI::Range(1, 64));
  emu->add_option("--lat", ec->spec.lat, "Declared per-link latency in the topology JSON");
  emu->add_option("--algorithm", ec->algorithms, "Comma list of OpenMPI algorithms, one run each over the collectives that have it, or COLLECTIVE:NAME (default: OpenMPI's choice)");
  emu->add_option("--collective", ec->collectives, "Comma list of collectives");
  emu->add_option("--bytes", ec->bytes, "Collective sizes MIN:MAX:xF");
  emu->add_option("--p2p-bytes", ec->p2p_bytes, "Ping-pong and exchange sizes MIN:MAX:xF");
  emu->add_option("--peers", ec->peers, "Comma list of ranks paired with rank 0 for point-to-point (default: 1, and the first rank of leaf 1)");
  emu->add_option("--warmup", ec->warmup, "Untimed calls per size")->check(CLI::Range(0, 100000));
  emu->add_option("--iters", ec->iters, "Timed calls per size")->check(CLI::Range(1, 100000));
  emu->add_option("--p2p-iters", ec->p2p_iters,
                  "Timed calls per size of the point-to-point records, the calibration's (their median of three "
                  "batch means from 6 calls on)")
      ->check(CLI::Range(1, 100000));
  emu->add_option("--timeout", ec->timeout_s, "Seconds before each mpirun is killed")->check(CLI::Range(1.0, 86400.0));
  emu->add_option("--idle-sleep-us", ec->idle_sleep_us,
                  "A waiting rank sleeps this long instead of spinning (hosts share cores); 0 = spin and yield")
      ->check(CLI::Range(0, 100000));
  emu->add_option("--rt-priority", ec->rt_priority,
                  "SCHED_RR priority of the ranks (with --idle-sleep-us > 0), so other work on the machine does "
                  "not delay them; 0 = normal scheduling")
      ->check(CLI::Range(0, 99));
  emu->add_option("--program", ec->program, "shardsim-mpi-bench path (default: next to shardsim)");
  emu->add_option("--out", ec->out, "JSONL records to write")->required();
  emu->add_option("--topology-out", ec->topology_out, "Topology JSON to write (default: OUT.topology.json)");
  emu->callback([ec] { run_emulate(*ec); });
}

const Registration reg{"bench", 60, setup_bench};

}  // namespace
}  // namespace shardsim::cli
