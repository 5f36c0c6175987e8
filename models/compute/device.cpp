#include "models/compute/device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>

#include "models/compute/attention.hpp"
#include "models/compute/device_json.hpp"
#include "sim/error.hpp"

namespace shardsim::compute {

const char* to_string(MathType m) {
  switch (m) {
    case MathType::fp32: return "fp32";
    case MathType::tf32: return "tf32";
    case MathType::bf16: return "bf16";
    case MathType::fp16: return "fp16";
    case MathType::fp8: return "fp8";
    case MathType::int8: return "int8";
  }
  return "?";
}

double Device::peak(MathType m) const {
  if (auto it = peak_flops.find(m); it != peak_flops.end()) return it->second;
  if (auto it = peak_flops.find(MathType::bf16); it != peak_flops.end()) return it->second;
  return peak_flops.at(MathType::fp32);
}

double Device::op_time_s(double flops, double bytes, MathType m) const {
  const double tc = flops > 0 ? flops / (peak(m) * flops_eff) : 0.0;
  const double tm = bytes > 0 ? bytes / (hbm_Bps * mem_eff) : 0.0;
  return std::max(tc, tm) + launch_s;
}

double Device::stream_time_s(double flops, double bytes) const {
  const double tc = flops > 0 ? flops / (peak(MathType::fp32) * flops_eff) : 0.0;
  const double tm = bytes > 0 ? bytes / (hbm_Bps * mem_eff) : 0.0;
  return std::max(tc, tm);
}

double Device::comm_slowdown() const {
  if (comm_units == 0 || comm_units >= compute_units) return 1.0;
  return static_cast<double>(compute_units) / static_cast<double>(compute_units - comm_units);
}


namespace {

constexpr double T = 1e12;
constexpr double GB = 1e9;
constexpr std::uint64_t GiB = 1ULL << 30;

// Default efficiencies (assumptions, to be calibrated per system):
//  - flops_eff 0.7: large GEMMs sustain 70-80 % of dense tensor-core peak (NVIDIA "Matrix
//    Multiplication Background User's Guide", Deep Learning Performance docs); TPU MXU
//    utilisation is similar (PaLM: 57.8 % of peak for the whole step including
//    communication on TPU v4, Chowdhery et al. 2022, Table 3).
//  - mem_eff 0.8: streaming kernels reach 80-90 % of HBM peak (Jia et al. 2018,
//    "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", sec. 3).
//  - launch_s: ~4 us per CUDA kernel launch (NVIDIA CUDA C++ Best Practices Guide, "Kernel
//    launch overhead" is a few microseconds); 1 us per fused XLA op on TPU (ops are fused
//    into few programs; assumption).
Device tpu(std::string name, std::string desc, double bf16, double int8, std::uint64_t hbm, double bw, std::string src) {
  Device d;
  d.name = std::move(name);
  d.description = std::move(desc);
  d.peak_flops[MathType::bf16] = bf16;
  // No fp32 matmul unit: fp32 (jax.lax.Precision.HIGHEST) runs as 6 bf16 passes on the MXU
  // (JAX docs, jax.lax.Precision), so 1/6 of the bf16 peak.
  d.peak_flops[MathType::fp32] = bf16 / 6.0;
  if (int8 > 0) d.peak_flops[MathType::int8] = int8;
  d.hbm_bytes = hbm;
  d.hbm_Bps = bw;
  d.flops_eff = 0.7;
  d.mem_eff = 0.8;
  d.launch_s = 1e-6;
  d.source = std::move(src);
  return d;
}

Device gpu(std::string name, std::string desc, double fp32, double tf32, double bf16, double fp8, double int8,
           std::uint64_t hbm, double bw, std::string src) {
  Device d;
  d.name = std::move(name);
  d.description = std::move(desc);
  d.peak_flops[MathType::fp32] = fp32;
  d.peak_flops[MathType::tf32] = tf32;
  d.peak_flops[MathType::bf16] = bf16;
  d.peak_flops[MathType::fp16] = bf16;
  if (fp8 > 0) d.peak_flops[MathType::fp8] = fp8;
  d.peak_flops[MathType::int8] = int8;
  d.hbm_bytes = hbm;
  d.hbm_Bps = bw;
  d.flops_eff = 0.7;
  d.mem_eff = 0.8;
  d.launch_s = 4e-6;
  d.unfused_mem_eff_fwd = kUnfusedMemEffFwd;  // measured on NVIDIA's CUDA kernels (attention.hpp)
  d.unfused_mem_eff_bwd = kUnfusedMemEffBwd;
  d.source = std::move(src);
  return d;
}

// Per-op constants (Device::compute_units ... attn_bwd_eff).
//  - Tiles: cuBLAS picks among output tiles such as 256x128, 128x256 and 128x128; the larger
//    ones are the most efficient (NVIDIA "Matrix Multiplication Background User's Guide",
//    "Tile quantization"). TPUs: one 128x128 MXU systolic array per tile (Cloud TPU docs,
//    "System architecture").
//  - gemm_eff: the fraction of the dense peak that back-to-back GEMMs on random-valued data
//    sustain at the board's power limit, which is what a training step runs. Two measurements
//    of the same matmuls separate it from the best-case figure the presets used before:
//      * the Maximum Achievable Matmul FLOPS (MAMF) is the FASTEST of 100 timed iterations of the
//        best shape a brute-force search found (S. Bekman, "Machine Learning Engineering Open
//        Book", compute/accelerator/benchmarks/README.md: "fastest result is picked (not the
//        average)"): A100 SXM 267.9 / 312 = 0.859, H100 SXM 792.1 / 989 = 0.801 (v1 table,
//        CUDA 12.1); H100/H200 SXM 794.5 (v2), B200 1745 (insights/when-to-upgrade-gpus);
//      * the same book's Maximum SUSTAINABLE Matmul FLOPS (MSMF, mamf-finder.py benchmark
//        version 3+: "what the chip holds once saturated near TDP (matches sustained training
//        throughput)"): a burst runs at the boost clock below the power limit, a GEMM that fills
//        every SM draws the whole limit and the clock settles lower. H200 SXM (the GH100 die of
//        the H100 at the same 700 W): MAMF 834, MSMF 755 TFLOPS, 755 / 989 = 0.763 of peak and
//        755 / 834 = 0.905 of the burst; B200 (1000 W, the clock settling from 1965 to about
//        1450 MHz): MSMF 1429 / 2250 = 0.635 of peak, 1429 / 1745 = 0.819 of the burst.
//      * A100 SXM at its 400 W limit: cuBLAS bf16 8192 x 8192 x 8192 (19 full waves of 256x128
//        tiles on 108 SMs) reaches 257 TFLOPS on torch.randn inputs, 295 on zeros: the power
//        limit lowers the clock more the more bits toggle (H. He, "Strangely, Matrix
//        Multiplications on GPUs Run Faster When Given 'Predictable' Data!", thonking.ai, 2024):
//        257 / 312 = 0.824 of peak, 257 / 267.9 = 0.959 of the MAMF burst.
//    Devices without a sustained measurement carry an assumption, named in compute_source.
//  - Attention: FlashAttention-2 (the kernel of PyTorch's SDPA flash backend and of the
//    frameworks of the published corpus) reaches 50-73 % of peak on A100 (Dao 2023, "Flash-
//    Attention-2", arXiv 2307.08691, abstract and sec. 4.1: forward near the top of the range
//    for head dimension 128, backward near the bottom) and 35 % on H100 (Shah et al. 2024,
//    "FlashAttention-3", arXiv 2407.08608, sec. 1). Those are kernel benchmarks (short runs at
//    the boost clock); in a training step attention runs on the same clock as the GEMMs around
//    it, so its fractions are scaled by the same sustained / burst ratio as gemm_eff (A100 0.959,
//    Hopper 0.905, B200 0.819 above).
// Constant-initialised (no constructor runs): make_presets() may run during another
// translation unit's static initialisation (a registration that reads the device registry),
// before a std::vector at namespace scope here would have been built. With vectors, the CLI
// (which has such registrations) got presets with no tiles and predicted faster GEMMs than a
// program without them (issue 13: plan steps 2-8 % apart for the same request).
constexpr GemmTile kCudaTiles[] = {{256, 128}, {128, 256}, {128, 128}};
constexpr GemmTile kMxuTiles[] = {{128, 128}};

void per_op(Device& d, std::uint32_t units, std::span<const GemmTile> tiles, double gemm_eff, double afwd,
            double abwd, std::string src) {
  d.compute_units = units;
  d.gemm_tiles.assign(tiles.begin(), tiles.end());
  d.gemm_eff = gemm_eff;
  d.attn_fwd_eff = afwd;
  d.attn_bwd_eff = abwd;
  d.compute_source = std::move(src);
}

// Sustained fractions of peak (gemm_eff) and sustained / burst clock ratios, cited above.
constexpr double kA100Sustained = 257.0 / 312.0;
constexpr double kA100Clock = 257.0 / 267.9;
constexpr double kHopperSustained = 755.0 / 989.0;
constexpr double kHopperClock = 755.0 / 834.0;
constexpr double kB200Sustained = 1429.0 / 2250.0;
constexpr double kB200Clock = 1429.0 / 1745.0;
const char* const kTpuAssumed =
    "MXU count: Cloud TPU docs 'System architecture'; gemm_eff 0.7 and attention 0.5/0.4 of peak are assumptions "
    "(no published matmul microbenchmark)";

std::vector<Device> make_presets() {
  std::vector<Device> v;
  // Jouppi et al., "A Domain-Specific Supercomputer for Training Deep Neural Networks",
  // CACM 63(7), 2020, Table 3: TPUv2 46 TFLOPS bf16, 16 GiB HBM, 700 GB/s. Two cores, one
  // MXU each.
  v.push_back(tpu("tpu-v2", "Google TPU v2 chip (2 cores)", 46 * T, 0, 16 * GiB, 700 * GB,
                  "Jouppi et al., CACM 63(7) 2020, Table 3"));
  per_op(v.back(), 2, kMxuTiles, 0.7, 0.5, 0.4, kTpuAssumed);
  // Same paper, Table 3: TPUv3 123 TFLOPS bf16, 32 GiB HBM, 900 GB/s. Two cores, two MXUs each.
  v.push_back(tpu("tpu-v3", "Google TPU v3 chip (2 cores)", 123 * T, 0, 32 * GiB, 900 * GB,
                  "Jouppi et al., CACM 63(7) 2020, Table 3"));
  per_op(v.back(), 4, kMxuTiles, 0.7, 0.5, 0.4, kTpuAssumed);
  // Jouppi et al., "TPU v4: An Optically Reconfigurable Supercomputer...", ISCA 2023, Table 1:
  // 275 TFLOPS bf16 and int8, 32 GiB HBM2, 1200 GB/s. Two TensorCores of four MXUs.
  v.push_back(tpu("tpu-v4", "Google TPU v4 chip", 275 * T, 275 * T, 32 * GiB, 1200 * GB,
                  "Jouppi et al., ISCA 2023, Table 1; Cloud TPU docs 'TPU v4'"));
  per_op(v.back(), 8, kMxuTiles, 0.7, 0.5, 0.4, kTpuAssumed);
  // Cloud TPU docs, "TPU v5e" system architecture: 197 TFLOPS bf16, 394 TOPS int8,
  // 16 GiB HBM2, 819 GB/s. One TensorCore of four MXUs.
  v.push_back(tpu("tpu-v5e", "Google TPU v5e chip", 197 * T, 394 * T, 16 * GiB, 819 * GB, "Cloud TPU docs 'TPU v5e'"));
  per_op(v.back(), 4, kMxuTiles, 0.7, 0.5, 0.4, kTpuAssumed);
  // Cloud TPU docs, "TPU v5p": 459 TFLOPS bf16, 918 TOPS int8, 95 GiB HBM2e, 2765 GB/s. Two
  // TensorCores of four MXUs.
  v.push_back(tpu("tpu-v5p", "Google TPU v5p chip", 459 * T, 918 * T, 95 * GiB, 2765 * GB, "Cloud TPU docs 'TPU v5p'"));
  per_op(v.back(), 8, kMxuTiles, 0.7, 0.5, 0.4, kTpuAssumed);
  // NVIDIA A100 Tensor Core GPU datasheet (2021), SXM: FP32 19.5 TF, TF32 156 TF, BF16/FP16
  // 312 TF, INT8 624 TOPS (dense); 40GB HBM2 1,555 GB/s; 80GB HBM2e 2,039 GB/s. 108 SMs
  // (NVIDIA A100 Tensor Core GPU Architecture whitepaper, 2020).
  const char* const a100_src =
      "108 SMs: A100 architecture whitepaper; gemm_eff: cuBLAS 8192^3 on random data at the 400 W limit, 257/312 "
      "(H. He 2024); attention: FlashAttention-2 on A100, Dao 2023 (0.65 forward, 0.50 backward) x 257/267.9, the "
      "sustained / burst clock";
  v.push_back(gpu("a100-40gb", "NVIDIA A100 SXM 40GB", 19.5 * T, 156 * T, 312 * T, 0, 624 * T, 40 * GiB, 1555 * GB,
                  "NVIDIA A100 datasheet (2021)"));
  per_op(v.back(), 108, kCudaTiles, kA100Sustained, 0.65 * kA100Clock, 0.50 * kA100Clock, a100_src);
  v.push_back(gpu("a100-80gb", "NVIDIA A100 SXM 80GB", 19.5 * T, 156 * T, 312 * T, 0, 624 * T, 80 * GiB, 2039 * GB,
                  "NVIDIA A100 datasheet (2021)"));
  per_op(v.back(), 108, kCudaTiles, kA100Sustained, 0.65 * kA100Clock, 0.50 * kA100Clock, a100_src);
  // NCCL channels on an 8-GPU HGX A100 (NVSwitch): 24, as NCCL logs them ("Channel 00/24 ...
  // 23/24", NVIDIA/nccl-tests issue 100; NVIDIA/nccl issue 578); one SM each (see device.hpp).
  const char* const a100_comm = "24 NCCL channels on HGX A100 NVSwitch (NCCL INIT logs: NVIDIA/nccl-tests#100, NVIDIA/nccl#578)";
  for (auto* d : {&v[v.size() - 2], &v.back()}) {
    d->comm_units = 24;
    d->comm_units_source = a100_comm;
    d->p2p_comm_units = 2;  // NCCL's channels per network peer (Device::p2p_comm_units)
  }
  // NVIDIA H100 Tensor Core GPU datasheet, SXM: FP32 67 TF; TF32 989, BF16 1,979, FP8 3,958,
  // INT8 3,958 TOPS with sparsity -> dense half; 80GB HBM3, 3.35 TB/s. 132 SMs (NVIDIA H100
  // Tensor Core GPU Architecture whitepaper, SXM5).
  v.push_back(gpu("h100", "NVIDIA H100 SXM 80GB", 67 * T, 494.5 * T, 989.5 * T, 1979 * T, 1979 * T, 80 * GiB,
                  3350 * GB, "NVIDIA H100 datasheet (SXM)"));
  const char* const hopper_src =
      "132 SMs: H100 architecture whitepaper; gemm_eff: MSMF 755/989 of the GH100 die at 700 W (ml-engineering, "
      "H200 SXM); attention: FlashAttention-2 at 35 % of peak on Hopper (Shah et al. 2024, sec. 1) x 755/834, the "
      "sustained / burst clock";
  per_op(v.back(), 132, kCudaTiles, kHopperSustained, 0.35 * kHopperClock, 0.35 * kHopperClock, hopper_src);
  // NCCL channels on an 8-GPU HGX H100 (NVSwitch, 18 NVLink4 links): 32, NCCL's channel
  // maximum (MAXCHANNELS; NCCL_MAX_NCHANNELS docs), which its topology search reaches there;
  // the INIT log of a DGX H100 lists channels past 22 (NVIDIA/nccl issue 1259). NVLS (NVLink
  // SHARP) collectives use 16 (NCCL_NVLS_NCHANNELS default); the 2023-24 FSDP runs of the
  // published corpus used ring all-gather / reduce-scatter.
  const char* const h100_comm =
      "32 NCCL channels on HGX H100 NVSwitch (NCCL MAXCHANNELS; DGX H100 INIT log, NVIDIA/nccl#1259); cuBLAS GEMMs "
      "persistent, one CTA per SM (pytorch/pytorch#143988, PR #144974)";
  v.back().comm_units = 32;
  v.back().comm_units_source = h100_comm;
  // cuBLAS's Hopper GEMMs are persistent kernels of one CTA per SM (Device::persistent_gemm;
  // pytorch/pytorch#143988: an H100's matmuls "launch 132 CTAs" and "take 2x as long" beside a
  // NCCL kernel; NVIDIA developer forum, "Compute-Communication Overlap Causes Severe GEMM
  // Performance Degradation because of Tail Effect": a 132-block GEMM beside a 24-block
  // ncclAllGather "nearly doubles"). Ampere's cuBLAS kernels are launched one CTA per tile
  // (no such second wave: A100 presets keep persistent_gemm false); Blackwell's persistent
  // kernels take their tiles through cluster launch control, so they fill whatever SMs are
  // free (NVIDIA CUTLASS docs, "Blackwell cluster launch control"): B200 / GB200 keep false.
  v.back().persistent_gemm = true;
  v.back().p2p_comm_units = 2;  // NCCL's channels per network peer (Device::p2p_comm_units)
  // The H100 SXM part Meta's Grand Teton hosts carry, as torchtitan's H100 benchmarks ran it
  // (pytorch/torchtitan docs/performance.md @ eaea6f6: "96GB HBM2e with 2.4 TB/sec peak memory
  // bandwidth", "the default 500W power limit"; its footnote 2: "the actual peak TFLOPs number is
  // between SXM and NVL"). The same GH100 die and 132 SMs, so the SXM datasheet peaks; its
  // sustained rates are the 700 W part's times the clock a 500 W limit holds. A saturated GEMM
  // runs at the power limit, and dynamic power is P = a C V^2 f with the voltage scaled with the
  // clock in the DVFS range, so P ~ f^3 and f(500 W) / f(700 W) = (500 / 700)^(1/3) = 0.894
  // (the CMOS dynamic-power relation: Mittal & Vetter, "A Survey of Methods for Analyzing and
  // Improving GPU Energy Efficiency", ACM Computing Surveys 47(2), 2014, sec. 2.1). This is a
  // model, not a measurement of this part (none is published); it lies inside the bound the
  // torchtitan footnote states: the H100 NVL (350-400 W) datasheet's BF16 1,671 TFLOPS with
  // sparsity, 835.5 dense, is 0.844 of the SXM's 989.5 (NVIDIA H100 datasheet, NVL column).
  {
    // Computed here, not at namespace scope: std::cbrt is not constexpr, and make_presets() may
    // run before this file's dynamic initialisation (see kCudaTiles).
    const double at500w = std::cbrt(500.0 / 700.0);
    Device d = v.back();
    d.name = "h100-hbm2e-500w";
    d.description = "NVIDIA H100 SXM 96GB HBM2e at a 500 W power limit (Grand Teton)";
    d.hbm_bytes = 96 * GiB;
    d.hbm_Bps = 2400 * GB;
    d.source = "NVIDIA H100 datasheet (SXM) peaks; 96GB HBM2e, 2.4 TB/s, 500 W: pytorch/torchtitan docs/performance.md";
    d.gemm_eff *= at500w;
    d.attn_fwd_eff *= at500w;
    d.attn_bwd_eff *= at500w;
    d.compute_source = std::string(hopper_src) +
                       "; x (500/700)^(1/3) = 0.894, the clock a 500 W limit holds if P ~ f^3 (dynamic CMOS power "
                       "with voltage scaled with clock; Mittal & Vetter 2014), inside torchtitan's bound (NVL/SXM "
                       "0.844 .. 1)";
    v.push_back(std::move(d));
  }
  // Same datasheet, PCIe: FP32 51 TF; TF32 756, BF16 1,513, FP8 3,026, INT8 3,026 TOPS with
  // sparsity -> dense half; 80GB HBM2e, 2.0 TB/s; 114 SMs (architecture whitepaper).
  v.push_back(gpu("h100-pcie", "NVIDIA H100 PCIe 80GB", 51 * T, 378 * T, 756.5 * T, 1513 * T, 1513 * T, 80 * GiB,
                  2000 * GB, "NVIDIA H100 datasheet (PCIe)"));
  per_op(v.back(), 114, kCudaTiles, kHopperSustained, 0.35 * kHopperClock, 0.35 * kHopperClock,
         "114 SMs: H100 architecture whitepaper; gemm_eff and attention: the SXM part's sustained fractions "
         "(assumption: no PCIe measurement; its 350 W limit may hold a lower clock)");
  v.back().persistent_gemm = true;  // Hopper's cuBLAS (above)
  // NVIDIA H200 Tensor Core GPU datasheet, SXM: same compute as H100; 141 GB HBM3e, 4.8 TB/s.
  v.push_back(gpu("h200", "NVIDIA H200 SXM 141GB", 67 * T, 494.5 * T, 989.5 * T, 1979 * T, 1979 * T,
                  141ULL * 1000000000ULL, 4800 * GB, "NVIDIA H200 datasheet (SXM)"));
  per_op(v.back(), 132, kCudaTiles, kHopperSustained, 0.35 * kHopperClock, 0.35 * kHopperClock, hopper_src);
  v.back().comm_units = 32;  // the H100 board's NCCL channels (above)
  v.back().comm_units_source = h100_comm;
  v.back().persistent_gemm = true;  // Hopper's cuBLAS (above)
  v.back().p2p_comm_units = 2;
  // NVIDIA HGX B200 datasheet (8 GPUs): FP32 600 TF; TF32 18, BF16 36, FP8 72 PF and INT8
  // 72 POPS with sparsity; 1.4 TB HBM3e, 64 TB/s. Per GPU, dense: /8, then /2.
  v.push_back(gpu("b200", "NVIDIA B200 (HGX B200)", 75 * T, 1125 * T, 2250 * T, 4500 * T, 4500 * T,
                  180ULL * 1000000000ULL, 8000 * GB, "NVIDIA HGX B200 datasheet"));
  per_op(v.back(), 148, kCudaTiles, kB200Sustained, 0.5 * kB200Clock, 0.4 * kB200Clock,
         "148 SMs (device query as publicly reported; NVIDIA publishes no count); gemm_eff: MSMF 1429/2250 at 1000 W "
         "(ml-engineering); attention 0.5/0.4 of peak is an assumption (no published Blackwell fraction in the "
         "sources) x 1429/1745, the sustained / burst clock");
  const char* const gb_src =
      "148 SMs (device query as publicly reported; NVIDIA publishes no count); gemm_eff 0.8 and attention 0.5/0.4 "
      "are assumptions (a burst fraction; no published GB200 sustained measurement in the sources: at its higher "
      "power limit it may keep more of its clock than the B200)";
  // NVIDIA GB200 NVL72 datasheet (72 GPUs): FP32 5,760 TF; TF32 180, BF16 360, FP8 720 PF and
  // INT8 720 POPS with sparsity; 13.4 TB HBM3e, 576 TB/s. Per GPU, dense: /72, then /2.
  v.push_back(gpu("gb200", "NVIDIA Blackwell GPU of a GB200 superchip (NVL72)", 80 * T, 1250 * T, 2500 * T,
                  5000 * T, 5000 * T, 186ULL * 1000000000ULL, 8000 * GB, "NVIDIA GB200 NVL72 datasheet"));
  per_op(v.back(), 148, kCudaTiles, 0.8, 0.5, 0.4, gb_src);
  // NVIDIA GB300 NVL72 (Blackwell Ultra), per GPU without sparsity as tabulated from NVIDIA's
  // figures by verda.com/blog/gb300-nvl72-architecture: FP32 80 TF, TF32 1.25, BF16 2.5, FP8 5 PF,
  // INT8 0.165 POPS (Blackwell Ultra cut INT8), 279 GB HBM3e, 8 TB/s; consistent with the rack
  // totals NVIDIA quotes (360 PF FP8 dense, 20 TB HBM at 576 TB/s: glennklockwood.com
  // garden/processors/B300).
  v.push_back(gpu("gb300", "NVIDIA Blackwell Ultra GPU of a GB300 superchip (NVL72)", 80 * T, 1250 * T, 2500 * T,
                  5000 * T, 165 * T, 279ULL * 1000000000ULL, 8000 * GB,
                  "NVIDIA GB300 NVL72 figures per GPU (verda.com GB300 NVL72 architecture post; glennklockwood.com B300)"));
  per_op(v.back(), 160, kCudaTiles, 0.8, 0.5, 0.4,
         "160 SMs (publicly reported; NVIDIA publishes no count); gemm_eff 0.8 and attention 0.5/0.4 are assumptions "
         "as for gb200 (no published GB300 sustained measurement in the sources)");
  // AMD Instinct MI300X datasheet: FP32 matrix 163.4 TF, TF32 653.7, BF16 1,307.4, FP8 2,614.9,
  // INT8 2,614.9 TOPS (dense); 192 GB HBM3, 5.3 TB/s; 304 compute units.
  v.push_back(gpu("mi300x", "AMD Instinct MI300X 192GB", 163.4 * T, 653.7 * T, 1307.4 * T, 2614.9 * T, 2614.9 * T,
                  192ULL * 1000000000ULL, 5300 * GB, "AMD Instinct MI300X datasheet"));
  v.back().unfused_mem_eff_fwd = v.back().unfused_mem_eff_bwd = 0;  // the fit is of NVIDIA's kernels
  per_op(v.back(), 304, kCudaTiles, 781.9 / 1300.0, 0.35, 0.3,
         "304 CUs: MI300X datasheet; gemm_eff: MAMF 781.9/1300 (ml-engineering, ROCm 6.2); attention 0.35/0.30 of "
         "peak is an assumption (no published CK flash-attention fraction in the sources)");
  return v;
}

}  // namespace

const std::vector<Device>& device_presets() {
  static const std::vector<Device> presets = make_presets();
  return presets;
}

const Registry& device_registry() {
  static const Registry r = [] {
    Registry reg("device", "devices", "accelerator presets for --device");
    for (const auto& d : device_presets()) reg.add({d.name, d.description, d.source, {}});
    return reg;
  }();
  return r;
}

const Device& find_device(const std::string& name, const std::string& where) {
  if (is_device_file(name)) {
    // Loaded once per path and kept for the process, so the reference stays valid like a
    // preset's; a mutex because commands may resolve devices from several threads.
    static std::mutex mu;
    static std::map<std::string, std::unique_ptr<const Device>> files;
    const std::lock_guard lock(mu);
    auto& slot = files[name];
    if (!slot) slot = std::make_unique<const Device>(load_device_file(name, where));
    return *slot;
  }
  return device_presets()[device_registry().at(name, where)];
}

const Device& device_for_model(const std::string& device_model, const std::string& where) {
  // DGX A100 640GB carries A100 80GB parts (NVIDIA DGX A100 datasheet): dgx-a100-* presets
  // name the family "a100", which has two presets.
  if (device_model == "a100") return find_device("a100-80gb", where);
  return find_device(device_model, where);
}

}  // namespace shardsim::compute
