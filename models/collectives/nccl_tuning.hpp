#pragma once
// NCCL's cost model (the one NCCL itself uses to pick an algorithm and a protocol), as a pure
// function of what NCCL's topology search reports: ranks, nodes, GPU architecture and the
// bandwidth of each algorithm's channel graph.
//
// Source: NVIDIA/nccl src/graph/tuning.cc, release 2.23 or later (the version with PAT, the
// Blackwell rows of the per-channel tables and NCCL_LL128_C2C), read from a public copy:
// ncclTopoTuneModel() (latencies and bandwidths per collective x algorithm x protocol) and
// ncclTopoGetAlgoTime() (time = latency + bytes / bandwidth, with the tree correction factor
// and the ring "plateau"). Units follow NCCL's: latencies in microseconds, bandwidths in GB/s
// (1e9 B/s), so time_us = lat_us + bytes / (1000 x bw_GBps).
//
// The tables themselves (baseLat, hwLat[NVLINK|PCI|NET][algo][proto], llMaxBws,
// perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws, treeCorrectionFactor) are
// copied as numbers in nccl_tuning.cpp, each with its name in NCCL.
//
// What is not NCCL's: the graph bandwidths (System::*_GBps) are derived by nccl_model.cpp from
// a shardsim topology; NCCL finds them by searching its own topology graph.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "models/collectives/collective.hpp"

namespace shardsim::coll::nccl {

/// NCCL_ALGO_* in NCCL's order (tuning.cc loops over them in this order; ties keep the first).
enum class Algo : std::uint8_t { tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat };
/// NCCL_PROTO_* in NCCL's order.
enum class Proto : std::uint8_t { ll, ll128, simple };
inline constexpr std::size_t kAlgos = 7;
inline constexpr std::size_t kProtos = 3;
const char* to_string(Algo a);   ///< NCCL's names: "Tree", "Ring", "CollNetDirect", ... "PAT"
const char* to_string(Proto p);  ///< "LL", "LL128", "Simple"

/// Compute capability class, the row of NCCL's per-architecture tables.
enum class Arch : std::uint8_t { volta, ampere, hopper, blackwell };
const char* to_string(Arch a);
/// NCCL's LL bandwidth cap for multi-node runs depends on the CPU vendor (llMaxBws index1).
enum class CpuVendor : std::uint8_t { intel, amd };

/// What NCCL's topology search hands to the tuning model (ncclTopoGraph fields), per
/// communicator. Bandwidths in GB/s.
struct System {
  Arch arch = Arch::hopper;
  CpuVendor cpu = CpuVendor::intel;
  int ranks = 0;
  int nodes = 1;
  /// Largest number of the communicator's ranks on one node (NCCL's maxLocalRanks).
  int local_ranks = 1;
  /// GPUs of one node see each other over NVLink (graph typeIntra == LINK_NVL); else PCI.
  bool intra_nvlink = true;
  /// Ring and tree channels (graph nChannels) and the sum of their bandwidths, nChannels x
  /// bwIntra and nChannels x bwInter. A ring graph has bwIntra == bwInter; NCCL's search raises
  /// a tree's bwIntra up to 2 x bwInter (src/graph/search.cc, "3. See if we can increase
  /// bwIntra for trees (2 nodes or collnet)"), and tuning reads bwIntra for 2 nodes or fewer.
  int channels = 2;
  double ring_GBps = 0;
  double tree_intra_GBps = 0;
  double tree_inter_GBps = 0;
  /// NVLS: NVLink SHARP available (NVSwitch with in-network reduction, more than 2 local GPUs,
  /// Hopper or later). Channels and per-channel intra / inter bandwidths of the NVLS graph.
  bool nvls = false;
  int nvls_channels = 16;
  /// NVLS graph channels = head GPUs per node (each with its own NIC), at most the node's GPUs
  /// (src/graph/search.cc: "NVLS ... search must have ngpus heads at most"); 0 = unknown (no cap).
  int nvls_heads = 0;
  double nvls_intra_GBps = 0;
  double nvls_inter_GBps = 0;
  /// CollNet (IB SHARP): the network switches reduce. Channels = NICs per node.
  bool collnet = false;
  int collnet_channels = 1;
  double collnet_intra_GBps = 0;  ///< per channel
  double collnet_inter_GBps = 0;  ///< per channel
  /// graph->latencyInter: the network plugin's reported latency (IB: 0), microseconds.
  double net_latency_us = 0;
};

struct Entry {
  double latency_us = 0;
  double bw_GBps = 0;  ///< 0 = not available (NCCL: bandwidths[coll][a][p] == 0)
};
using Table = std::array<std::array<Entry, kProtos>, kAlgos>;

/// ncclTopoTuneModel for one collective: latency and (algorithm) bandwidth of every algorithm
/// and protocol, with one refinement of NCCL 2.32 (NVLSTree's per-channel cap,
/// perChMaxNVLSTreeBws, nccl_tuning.cpp), with NCCL's default enables (LL128 on NVLink systems, NVLS-Tree only across
/// nodes, CollNet only with network reduction, PAT only at one GPU per node). All-to-all and
/// sendrecv have no NCCL tuning (they are grouped send/recv): every entry is 0.
Table tune(const System& s, OpKind op);

struct Terms {
  double latency_us = 0;  ///< after the ring plateau factor
  double bw_GBps = 0;     ///< after the tree correction factor
};
/// The two terms of ncclTopoGetAlgoTime for `bytes`; nullopt when the entry is not available.
std::optional<Terms> algo_terms(const System& s, const Table& t, OpKind op, Algo a, Proto p, std::uint64_t bytes);
/// ncclTopoGetAlgoTime: microseconds for `bytes` (NCCL's nBytes = nccl-tests' S); nullopt
/// when the entry is not available.
std::optional<double> algo_time_us(const System& s, const Table& t, OpKind op, Algo a, Proto p, std::uint64_t bytes);

struct Choice {
  Algo algo = Algo::ring;
  Proto proto = Proto::simple;
  double time_us = 0;
  double latency_us = 0;  ///< the latency term (after the plateau factor)
  double bw_GBps = 0;     ///< the bandwidth used (after the tree correction)
};
/// NCCL's selection (ncclGetAlgoInfo / topoGetAlgoInfo): the smallest algo_time_us over every
/// available (algorithm, protocol), in NCCL's loop order, strictly smaller wins. `allowed` is
/// NCCL_ALGO as a mask over Algo (bit i = Algo i); 0 = all; a mask that leaves nothing for this
/// op falls back to the ring, as NCCL does. nullopt when nothing is available.
std::optional<Choice> choose(const System& s, OpKind op, std::uint64_t bytes, std::uint32_t allowed = 0);

}  // namespace shardsim::coll::nccl
