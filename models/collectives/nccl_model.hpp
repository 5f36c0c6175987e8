#pragma once
// NCCL as a backend of `--algorithm auto` on GPU topologies: reads from a shardsim topology
// what NCCL's topology search would report (nccl_tuning.hpp System), runs NCCL's own tuning
// model and selection rule, and returns NCCL's choice and its predicted time.
//
// From the topology (per rank of the group):
// - architecture: from Topology::device_model (v100 Volta; a100/a800 Ampere; h100/h200/h800/
//   gh200 Hopper; b200/gb200/gb300 Blackwell); a topology without a GPU device model is not
//   an NCCL system (unsupported() says so);
// - nodes: the NVLink domains (devices joined by `nvlink` links, through NVSwitches); an NVL72
//   rack is one node, as NCCL treats an MNNVL domain;
// - NVLink: NCCL's NVLink bandwidth is its per-link figure x links, about 80 % of line rate
//   (NVIDIA/nccl src/graph/topo.h: SM80_NVLINK_BW 20.0, SM90_NVLINK_BW 20.6, SM100_NVLINK_BW
//   40.1 GB/s per link, against 25 GB/s (NVLink 3 and 4) and 50 GB/s (NVLink 5) per link and
//   direction): per-GPU NVLink x {0.8, 0.8, 0.824, 0.802} for Volta..Blackwell;
// - network: every NIC of the node's ranks (NCCL spreads its channels over all of them, one
//   ring or tree per channel), each at line rate x the wire efficiency of its link class
//   (nic_efficiency below); ring and tree bandwidth = min(NVLink, the node's NIC sum), a
//   tree's intra-node bandwidth min(NVLink, 2 x the NIC sum) (NCCL's search, see System);
// - channels: two per GPU or NIC of a node, at most 32 (NCCL duplicates the channels its
//   search finds, ncclTopoPostset; MAXCHANNELS = 32): only caps and the ring plateau use it;
// - NVLS: an NVSwitch with in_network_reduction, more than 2 local ranks, Hopper or later;
//   16 channels (NCCL_NVLS_NCHANNELS default, src/transport/nvls.cc), each at one NVLink's
//   NCCL bandwidth inside the node (x nvls_arch_factor) and the node's NIC sum / 16 across
//   nodes, at most one NIC's rate (a channel's tree crosses on its head GPU's NIC);
// - CollNet (IB SHARP): the NIC's switch has in_network_reduction; one channel per NIC.
//
// All-to-all has no NCCL tuning (grouped send/recv): time = baseLat[Ring][Simple] + hwLat of
// the slowest class + max(bytes over NVLink / NVLink bandwidth, bytes over the NICs / a rank's
// NIC share) (an assumption: p2p at the same effective rates as the collectives).
// Sendrecv (nccl-tests sendrecv_perf: rank i sends S to rank i+1 of the group, all at once) the
// same way, per pair: S over NVLink at the slower GPU's NVLink bandwidth inside a node, S over
// the network at the slower GPU's NIC share across nodes (a GPU's own NICs, NCCL's p2p path to
// a remote peer, src/graph/paths.cc); time = the latency + the slowest pair's S / rate.
#include <cstdint>
#include <optional>
#include <string>

#include "models/collectives/algorithm.hpp"
#include "models/collectives/collective.hpp"
#include "models/collectives/nccl_tuning.hpp"
#include "topologies/topology.hpp"

namespace shardsim::coll {

/// The floor nccl-tests' one-thread launches put under a collective's time: nccl-tests run as
/// one thread driving G GPUs (-g G, "nGpus G" in its header) issues each iteration's G launches
/// from that thread, one after the other (nccl-tests src/common.cu: ncclGroupStart, one call per
/// GPU, ncclGroupEnd; NCCL launches on every device from the one thread), and its iterations
/// follow each other without a synchronisation, so a small collective takes at least G x the
/// per-GPU launch cost. The cost: NVIDIA/nccl-tests#123 (DGX A100, one process, -g 2..8,
/// NCCL_ALGO=Ring, one channel, 8-128 B all-reduce): 10.0, 13.76, 16.88, 20.8, 25.2, 29.5,
/// 33.7 us, i.e. 4.2 us per GPU at 4 and 8 GPUs (33.7 / 8); the maintainers name the cause
/// (nccl-tests#333: "CUDA latency overheads of single process jobs"; nccl#613: "one thread is
/// now responsible for launching on all GPUs"). G x 33.7 / 8 us for G > 1, else 0 (one GPU per
/// thread: the model's own latency). Applied as max(model, floor) by `validate`.
double nccl_tests_launch_floor_s(int gpus_per_thread);

/// Wire efficiency of a network link class: payload / (payload + per-packet framing) at a
/// 4096 B MTU. InfiniBand: LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B (IBTA spec vol. 1, ch. 7):
/// 0.9937. Ethernet (RoCEv2; used for EFA and TCP fabrics too): Ethernet header 14 + FCS 4 +
/// preamble and inter-frame gap 20 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 = 82 B (IBTA RoCEv2
/// annex A17, IEEE 802.3): 0.9804. Other classes: 1.
double nic_efficiency(topo::LinkClass c);
/// NCCL's NVLink bandwidth / line rate for an architecture (see the header comment).
double nvlink_efficiency(nccl::Arch a);
/// The fraction of a link's line rate NCCL's model counts on: NVLink x nvlink_efficiency of the
/// topology's GPU architecture (1 when the topology names no NVIDIA GPU), IB / Ethernet x
/// nic_efficiency, other classes 1. For the flow network (add_topology_links).
double link_efficiency(const topo::Topology& t, const topo::Link& l);
/// NVLS channel bandwidth relative to Hopper's. NCCL 2.23's NVLS bandwidth (16 channels x one
/// NVLink x 5/6, tuning.cc) has no architecture term: its constants were set on Hopper, where
/// it matches the measured 8 x H100 busbw within 1 % (docs/validation.md). NCCL 2.32 added
/// nvlsEfficiency per architecture, Hopper 0.85 and Blackwell 0.74 (NVIDIA/nccl 2.32.3
/// src/tuning/nvls.cc, multiplying the NVLS graph's NVLink bandwidth): Blackwell's NVLS channel
/// runs at 0.74 / 0.85 = 0.871 of the Hopper-set figure. 1 for Hopper (and for architectures
/// without NVLS).
double nvls_arch_factor(nccl::Arch a);

struct NcclOptions {
  /// NCCL_ALGO as a mask over nccl::Algo (bit i = Algo i); 0 = NCCL's default (all).
  std::uint32_t allowed = 0;
  nccl::CpuVendor cpu = nccl::CpuVendor::intel;
};
/// Parses NCCL_ALGO-style names ("Ring", "Tree,NVLSTree", case-insensitive) into a mask;
/// throws ConfigError naming `where` for an unknown name.
std::uint32_t nccl_algo_mask(const std::string& names, const std::string& where);

struct NcclPrediction {
  nccl::System system;
  nccl::Choice choice;
  double time_s = 0, latency_s = 0, bandwidth_s = 0;
  std::string name;      ///< "NVLSTree/Simple"
  std::string schedule;  ///< registered algorithm that runs the choice at flow fidelity
  std::string why;       ///< every available (algorithm/protocol: time), the chosen one marked
  std::string formula;   ///< the terms, for --explain
};

/// nullopt when the NCCL model applies to this op on this topology, else why not (no GPU
/// device model, a device without NVLink or NIC, ...).
std::optional<std::string> nccl_unsupported(const topo::Topology& t, const CollectiveOp& op);
/// The System NCCL would see for this group. Throws ConfigError when nccl_unsupported.
nccl::System nccl_system(const topo::Topology& t, const CollectiveOp& op, const NcclOptions& o = {});
/// NCCL's choice and time for op. Throws ConfigError when nccl_unsupported or when the
/// allowed algorithms offer nothing for this op.
NcclPrediction nccl_predict(const topo::Topology& t, const CollectiveOp& op, const NcclOptions& o = {});

/// `--algorithm auto` on a GPU topology, as `shardsim collective` and the step model
/// (models/step/topology_comm.hpp) both run it: NCCL's prediction as the analytical cost, and
/// the registered schedule that runs NCCL's choice at flow fidelity (pred.schedule: Ring ->
/// ring-channels, Tree -> tree-channels, NVLS / CollNet -> in-network, NVLSTree -> nvls-tree,
/// PAT -> rabenseifner; where that schedule cannot run this group: double-binary-tree for
/// tree-channels, hierarchical for nvls-tree, direct for all-to-all, else ring).
struct NcclAuto {
  NcclPrediction pred;
  AnalyticalCost cost;                  ///< pred's time, latency and bandwidth terms
  const Algorithm* schedule = nullptr;  ///< never null
};
/// nullopt when nccl_unsupported (the caller keeps the registry's choose_auto).
std::optional<NcclAuto> nccl_auto(const topo::Topology& t, const CollectiveOp& op, const NcclOptions& o = {});

}  // namespace shardsim::coll
