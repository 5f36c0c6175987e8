// NCCL's tuning model, transcribed (see nccl_tuning.hpp for the source). Every table below is
// the array of the same name in NVIDIA/nccl src/graph/tuning.cc (2.23+), in NCCL's units (us,
// GB/s); the comments name the NCCL line each rule comes from.
#include "models/collectives/nccl_tuning.hpp"

#include <algorithm>
#include <cstddef>

namespace shardsim::coll::nccl {
namespace {

constexpr std::size_t ix(Algo a) { return static_cast<std::size_t>(a); }
constexpr std::size_t ix(Proto p) { return static_cast<std::size_t>(p); }

// baseLat[algo][proto] (Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT).
constexpr double kBaseLat[kAlgos][kProtos] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};

// hwLat[NCCL_HW_NVLINK | NCCL_HW_PCI | NCCL_HW_NET][algo][proto] (PAT has no row: 0).
enum Hw : std::size_t { kNvlink = 0, kPci = 1, kNet = 2 };
constexpr double kHwLat[3][kAlgos][kProtos] = {
    {{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 14}, {0, 0, 0}}};

// Rows: Volta, Ampere, Hopper, Blackwell; columns: 1 node, 2 nodes, more (index2).
// llMaxBws: for one node the row is the GPU's; across nodes it is the CPU's (Intel row 0, AMD row 1).
constexpr double kLlMaxBws[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
constexpr double kPerChMaxRingLL128Bws[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {2 * 36.7, 2 * 36.7, 2 * 36.7}};
constexpr double kPerChMaxTreeLL128Bws[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {2 * 36.7, 2 * 36.7, 2 * 29.0}};
constexpr double kPerChMaxTreeBws[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {2 * 38.7, 2 * 41.4, 2 * 36.0}};

// perChMaxNVLSTreeBws (NVIDIA/nccl 2.32.3 src/tuning/cost_model.cc, ncclTunerConstantsDefaults;
// not in 2.23): the bus bandwidth of one NVLSTree channel (one head GPU and its NIC), per
// architecture and node count (1 node: NVLSTree is off). 2.32 caps each channel's bus
// bandwidth with it and converts to algorithm bandwidth as a ring does, x n / (2 (n-1))
// (src/tuning/nvls.cc). Volta / Ampere rows have no NVLS.
constexpr double kPerChMaxNvlsTreeBws[4][3] = {{0, 0, 0}, {0, 0, 0}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};

// treeCorrectionFactor[proto][log2(bytes / 64)], 64 B to 256 MiB.
constexpr double kTreeCorrection[kProtos][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

// NCCL's log2i: floor(log2(n)), 0 for n <= 1.
int log2i(std::uint64_t n) {
  int l = 0;
  while (n >>= 1) ++l;
  return l;
}

// getNetOverhead: 1 us on Intel, 2 us on AMD (x86); NCCL_NET_OVERHEAD unset.
double net_overhead_us(CpuVendor c) { return c == CpuVendor::amd ? 2.0 : 1.0; }

bool is_rs_ag(OpKind op) { return op == OpKind::reducescatter || op == OpKind::allgather; }

}  // namespace

const char* to_string(Algo a) {
  static constexpr const char* k[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
  return k[ix(a)];
}
const char* to_string(Proto p) {
  static constexpr const char* k[] = {"LL", "LL128", "Simple"};
  return k[ix(p)];
}
const char* to_string(Arch a) {
  static constexpr const char* k[] = {"Volta", "Ampere", "Hopper", "Blackwell"};
  return k[static_cast<std::size_t>(a)];
}

Table tune(const System& s, OpKind op) {
  Table t{};
  const int n = s.ranks, N = std::max(1, s.nodes);
  if (n <= 1 || op == OpKind::alltoall || op == OpKind::sendrecv) return t;
  const auto arch = static_cast<std::size_t>(s.arch);
  const std::size_t index2 = N <= 2 ? static_cast<std::size_t>(N - 1) : 2;
  const std::size_t index1 = N == 1 ? arch : (s.cpu == CpuVendor::amd ? 1 : 0);
  const double llMaxBw = kLlMaxBws[index1][index2];
  const double perChMaxTreeBw = kPerChMaxTreeBws[arch][index2];
  const double perChMaxRingLL128Bw = kPerChMaxRingLL128Bws[arch][index2];
  const double perChMaxTreeLL128Bw = kPerChMaxTreeLL128Bws[arch][index2];
  const double ppn = static_cast<double>(n) / N;
  const int local = n / N;  // NCCL's integer nRanks/nNodes
  const std::size_t intraHw = s.intra_nvlink ? kNvlink : kPci;
  const std::size_t hw = N == 1 ? intraHw : kNet;
  const bool ar = op == OpKind::allreduce;
  const int nsteps = ar ? 2 * (n - 1) : is_rs_ag(op) ? n - 1 : n;
  // ncclPatEnable: SM60+, one GPU per node, no net device offload.
  const bool pat_enable = N == n;

  for (std::size_t ai = 0; ai < kAlgos; ++ai) {
    const auto a = static_cast<Algo>(ai);
    if ((op == OpKind::broadcast || op == OpKind::reduce) && a != Algo::ring) continue;
    if (is_rs_ag(op) && a != Algo::pat && a != Algo::ring && a != Algo::nvls && a != Algo::collnet_direct) continue;
    if (ar && a == Algo::pat) continue;
    const bool collnet = a == Algo::collnet_direct || a == Algo::collnet_chain;
    for (std::size_t pi = 0; pi < kProtos; ++pi) {
      const auto p = static_cast<Proto>(pi);
      if ((a == Algo::nvls || a == Algo::nvls_tree) && p != Proto::simple) continue;
      if (is_rs_ag(op) && a == Algo::pat && (p != Proto::simple || !pat_enable)) continue;
      // Graph bandwidths: busBw = nChannels x bw ("float bw = nNodes <= 2 || collnet ?
      // bwIntra : bwInter"; the ring and tree graphs have bwIntra == bwInter).
      double busBw = 0;
      switch (a) {
        case Algo::ring:
        case Algo::pat: busBw = s.ring_GBps; break;
        case Algo::tree: busBw = N <= 2 ? s.tree_intra_GBps : s.tree_inter_GBps; break;
        case Algo::collnet_direct:
        case Algo::collnet_chain: busBw = s.collnet_channels * s.collnet_intra_GBps; break;
        case Algo::nvls: {
          const double bw = ar ? std::min(s.nvls_intra_GBps, s.nvls_inter_GBps)
                               : std::min(s.nvls_intra_GBps * (ppn - 1.0) / ppn, s.nvls_inter_GBps * 0.9);
          busBw = s.nvls_channels * bw;
          break;
        }
        case Algo::nvls_tree:
          busBw = s.nvls_channels * std::min(s.nvls_intra_GBps, N <= 2 ? s.nvls_inter_GBps : s.nvls_inter_GBps / 2);
          break;
      }
      // "Various model refinements".
      if (a == Algo::ring && p == Proto::ll) busBw = std::min(llMaxBw, busBw * .5);
      if (a == Algo::ring && p == Proto::ll128) busBw = std::min(busBw * 0.92, s.channels * perChMaxRingLL128Bw);
      if (a == Algo::tree && ar) busBw = std::min(busBw * .92, s.channels * perChMaxTreeBw);
      if (a == Algo::tree && p == Proto::ll) busBw = std::min(busBw * 1.0 / 3.8, llMaxBw);
      if (a == Algo::tree && p == Proto::ll128) {
        busBw = std::min(busBw * (N == 1 ? 7.0 / 9.0 : 120.0 / 128.0), s.channels * perChMaxTreeLL128Bw);
      }
      if (a == Algo::pat) busBw *= .75;
      if (collnet && p != Proto::simple) busBw = 0;
      if (a == Algo::collnet_direct && p == Proto::simple) {
        if (is_rs_ag(op)) {
          busBw = ppn * std::min(s.collnet_intra_GBps, s.collnet_inter_GBps * 0.9);
        } else {
          // "Collnet+Direct requires all GPUs to have a local NIC to work at full speed".
          double factor = ppn / (1.0 * s.collnet_channels);
          factor -= (factor - 1) / 2;
          busBw /= factor;
          if (s.arch >= Arch::hopper) busBw *= .85;
        }
      }
      // NVLS and CollNet reduce-scatter / all-gather across nodes need CollNet (NCCL: busBw 0
      // without the collnet plugin's iallgather / ireducescatter).
      if ((a == Algo::nvls || a == Algo::collnet_direct) && is_rs_ag(op) && N > 1 && !s.collnet) busBw = 0;
      // Bus bandwidth to algorithm bandwidth.
      if (!(a != Algo::ring && is_rs_ag(op))) {
        double ratio = 1.0;
        if (a == Algo::ring) {
          ratio = static_cast<double>(n) / nsteps;
        } else if (a == Algo::nvls || a == Algo::nvls_tree) {
          ratio = 5.0 / 6.0;
        } else {
          ratio = .5;
        }
        busBw *= ratio;
      }
      // NCCL 2.32's NVLSTree cap: heads x perChMaxNVLSTreeBw of bus bandwidth (see above).
      if (a == Algo::nvls_tree && ar && s.nvls_heads > 0 && kPerChMaxNvlsTreeBws[arch][index2] > 0) {
        const double cap_bus = s.nvls_heads * kPerChMaxNvlsTreeBws[arch][index2];
        busBw = std::min(busBw, cap_bus * n / (2.0 * (n - 1)));
      }
      Entry& e = t[ai][pi];
      e.bw_GBps = busBw;
      double lat = kBaseLat[ai][pi];
      double intraLat = kHwLat[intraHw][ai][pi];
      // "With ppn=1 latencies are fully exposed, use the Tree network latency".
      double interLat = (local == 1 ? kHwLat[kNet][ix(Algo::tree)][pi] : kHwLat[kNet][ai][pi]) + s.net_latency_us;
      if (p == Proto::simple) interLat += s.net_latency_us;  // the flush
      switch (a) {
        case Algo::ring:
          if (op == OpKind::broadcast || op == OpKind::reduce) {
            // Not sameChannels: nsteps x a chunk latency (Simple uses the tree's hwLat).
            const double l = p == Proto::simple ? kHwLat[hw][ix(Algo::tree)][pi] : kHwLat[hw][ai][pi];
            lat += nsteps * l;
          } else {
            double netOverhead = 0;
            if (N > 1) netOverhead = net_overhead_us(s.cpu) * (p == Proto::simple ? 3 : 1);
            intraLat = std::max(intraLat, netOverhead);
            const int nInterSteps = N == 1 ? 0 : ar ? 2 * (N - 1) : N - 1;
            lat += (nsteps - nInterSteps) * intraLat + nInterSteps * interLat;
          }
          break;
        case Algo::tree:
          if (ar) lat += 2 * ((local - 1) * intraLat + log2i(static_cast<std::uint64_t>(N)) * interLat);
          break;
        case Algo::collnet_direct:
          lat += 2 * (std::min(1, local - 1) * intraLat + (local - 1) * 0.4) + interLat;
          break;
        case Algo::collnet_chain: lat += 2 * (local - 1) * intraLat + interLat; break;
        case Algo::nvls:
          lat = intraLat;
          if (N > 1) lat += interLat;
          break;
        case Algo::nvls_tree: lat += intraLat + 2 * log2i(static_cast<std::uint64_t>(N)) * interLat; break;
        case Algo::pat:
          if (is_rs_ag(op)) lat = 8 + log2i(static_cast<std::uint64_t>(N)) * (interLat / 3.5) + n * 2.8;
          break;
      }
      e.latency_us = lat;
    }
  }
  // Enables. LL128: on by default for NVLink-connected GPUs of one architecture (typeIntra <=
  // PATH_NVB; the network path on DGX-class nodes is PXB/PXN, which passes).
  // NVLS-Tree: off on one node. CollNet Direct / Chain, and NVLS across nodes: off without
  // CollNet; CollNet Direct also needs NVSwitches. NVLS / NVLS-Tree need NVLS support.
  for (std::size_t ai = 0; ai < kAlgos; ++ai) {
    const auto a = static_cast<Algo>(ai);
    bool off = false;
    if (N == 1 && a == Algo::nvls_tree) off = true;
    if (!s.collnet && (a == Algo::collnet_direct || a == Algo::collnet_chain || (a == Algo::nvls && N > 1))) off = true;
    if (!s.intra_nvlink && a == Algo::collnet_direct) off = true;
    if (!s.nvls && (a == Algo::nvls || a == Algo::nvls_tree)) off = true;
    for (std::size_t pi = 0; pi < kProtos; ++pi) {
      if (off) t[ai][pi].bw_GBps = 0;
      if (static_cast<Proto>(pi) == Proto::ll128 && !s.intra_nvlink) t[ai][pi].bw_GBps = 0;
    }
  }
  return t;
}

std::optional<Terms> algo_terms(const System& s, const Table& t, OpKind op, Algo a, Proto p, std::uint64_t bytes) {
  Terms r{t[ix(a)][ix(p)].latency_us, t[ix(a)][ix(p)].bw_GBps};
  if (r.bw_GBps <= 0) return std::nullopt;
  const int logSize = log2i(bytes >> 6);
  if (a == Algo::tree && op == OpKind::allreduce && logSize < 23) r.bw_GBps *= kTreeCorrection[ix(p)][logSize];
  // "Plateau effect of ring".
  if (a == Algo::ring && p == Proto::simple && s.nodes > 1 && op == OpKind::allreduce &&
      bytes / static_cast<std::uint64_t>(std::max(1, s.channels) * s.ranks) >= 64) {
    r.latency_us *= s.arch < Arch::ampere ? 1.9 : 1.4;
  }
  return r;
}

std::optional<double> algo_time_us(const System& s, const Table& t, OpKind op, Algo a, Proto p, std::uint64_t bytes) {
  const auto r = algo_terms(s, t, op, a, p, bytes);
  if (!r) return std::nullopt;
  return r->latency_us + static_cast<double>(bytes) / (1000.0 * r->bw_GBps);
}

std::optional<Choice> choose(const System& s, OpKind op, std::uint64_t bytes, std::uint32_t allowed) {
  if (s.ranks <= 1) return Choice{};
  const Table t = tune(s, op);
  std::optional<Choice> best;
  for (std::size_t ai = 0; ai < kAlgos; ++ai) {
    if (allowed != 0 && (allowed & (1u << ai)) == 0) continue;
    for (std::size_t pi = 0; pi < kProtos; ++pi) {
      const auto a = static_cast<Algo>(ai);
      const auto p = static_cast<Proto>(pi);
      const auto r = algo_terms(s, t, op, a, p, bytes);
      if (!r) continue;
      const double time = r->latency_us + static_cast<double>(bytes) / (1000.0 * r->bw_GBps);
      if (!best || time < best->time_us) best = Choice{a, p, time, r->latency_us, r->bw_GBps};
    }
  }
  // NCCL_ALGO leaving nothing for this collective: NCCL restores the ring ("at least set ring
  // algo available", tuning.cc 2.19).
  const std::uint32_t ring = 1u << ix(Algo::ring);
  if (!best && allowed != 0 && allowed != ring) return choose(s, op, bytes, ring);
  return best;
}

}  // namespace shardsim::coll::nccl
