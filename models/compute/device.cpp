#include "models/compute/device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

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
  d.source = std::move(src);
  return d;
}

std::vector<Device> make_presets() {
  std::vector<Device> v;
  // Jouppi et al., "A Domain-Specific Supercomputer for Training Deep Neural Networks",
  // CACM 63(7), 2020, Table 3: TPUv2 46 TFLOPS bf16, 16 GiB HBM, 700 GB/s.
  v.push_back(tpu("tpu-v2", "Google TPU v2 chip (2 cores)", 46 * T, 0, 16 * GiB, 700 * GB,
                  "Jouppi et al., CACM 63(7) 2020, Table 3"));
  // Same paper, Table 3: TPUv3 123 TFLOPS bf16, 32 GiB HBM, 900 GB/s.
  v.push_back(tpu("tpu-v3", "Google TPU v3 chip (2 cores)", 123 * T, 0, 32 * GiB, 900 * GB,
                  "Jouppi et al., CACM 63(7) 2020, Table 3"));
  // Jouppi et al., "TPU v4: An Optically Reconfigurable Supercomputer...", ISCA 2023, Table 1:
  // 275 TFLOPS bf16 and int8, 32 GiB HBM2, 1200 GB/s.
  v.push_back(tpu("tpu-v4", "Google TPU v4 chip", 275 * T, 275 * T, 32 * GiB, 1200 * GB,
                  "Jouppi et al., ISCA 2023, Table 1; Cloud TPU docs 'TPU v4'"));
  // Cloud TPU docs, "TPU v5e" system architecture: 197 TFLOPS bf16, 394 TOPS int8,
  // 16 GiB HBM2, 819 GB/s.
  v.push_back(tpu("tpu-v5e", "Google TPU v5e chip", 197 * T, 394 * T, 16 * GiB, 819 * GB, "Cloud TPU docs 'TPU v5e'"));
  // Cloud TPU docs, "TPU v5p": 459 TFLOPS bf16, 918 TOPS int8, 95 GiB HBM2e, 2765 GB/s.
  v.push_back(tpu("tpu-v5p", "Google TPU v5p chip", 459 * T, 918 * T, 95 * GiB, 2765 * GB, "Cloud TPU docs 'TPU v5p'"));
  // NVIDIA A100 Tensor Core GPU datasheet (2021), SXM: FP32 19.5 TF, TF32 156 TF, BF16/FP16
  // 312 TF, INT8 624 TOPS (dense); 40GB HBM2 1,555 GB/s; 80GB HBM2e 2,039 GB/s.
  v.push_back(gpu("a100-40gb", "NVIDIA A100 SXM 40GB", 19.5 * T, 156 * T, 312 * T, 0, 624 * T, 40 * GiB, 1555 * GB,
                  "NVIDIA A100 datasheet (2021)"));
  v.push_back(gpu("a100-80gb", "NVIDIA A100 SXM 80GB", 19.5 * T, 156 * T, 312 * T, 0, 624 * T, 80 * GiB, 2039 * GB,
                  "NVIDIA A100 datasheet (2021)"));
  // NVIDIA H100 Tensor Core GPU datasheet, SXM: FP32 67 TF; TF32 989, BF16 1,979, FP8 3,958,
  // INT8 3,958 TOPS with sparsity -> dense half; 80GB HBM3, 3.35 TB/s.
  v.push_back(gpu("h100", "NVIDIA H100 SXM 80GB", 67 * T, 494.5 * T, 989.5 * T, 1979 * T, 1979 * T, 80 * GiB,
                  3350 * GB, "NVIDIA H100 datasheet (SXM)"));
  // NVIDIA H200 Tensor Core GPU datasheet, SXM: same compute as H100; 141 GB HBM3e, 4.8 TB/s.
  v.push_back(gpu("h200", "NVIDIA H200 SXM 141GB", 67 * T, 494.5 * T, 989.5 * T, 1979 * T, 1979 * T,
                  141ULL * 1000000000ULL, 4800 * GB, "NVIDIA H200 datasheet (SXM)"));
  // NVIDIA HGX B200 datasheet (8 GPUs): FP32 600 TF; TF32 18, BF16 36, FP8 72 PF and INT8
  // 72 POPS with sparsity; 1.4 TB HBM3e, 64 TB/s. Per GPU, dense: /8, then /2.
  v.push_back(gpu("b200", "NVIDIA B200 (HGX B200)", 75 * T, 1125 * T, 2250 * T, 4500 * T, 4500 * T,
                  180ULL * 1000000000ULL, 8000 * GB, "NVIDIA HGX B200 datasheet"));
  // NVIDIA GB200 NVL72 datasheet (72 GPUs): FP32 5,760 TF; TF32 180, BF16 360, FP8 720 PF and
  // INT8 720 POPS with sparsity; 13.4 TB HBM3e, 576 TB/s. Per GPU, dense: /72, then /2.
  v.push_back(gpu("gb200", "NVIDIA Blackwell GPU of a GB200 superchip (NVL72)", 80 * T, 1250 * T, 2500 * T,
                  5000 * T, 5000 * T, 186ULL * 1000000000ULL, 8000 * GB, "NVIDIA GB200 NVL72 datasheet"));
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
  return device_presets()[device_registry().at(name, where)];
}

const Device& device_for_model(const std::string& device_model, const std::string& where) {
  // DGX A100 640GB carries A100 80GB parts (NVIDIA DGX A100 datasheet): dgx-a100-* presets
  // name the family "a100", which has two presets.
  if (device_model == "a100") return find_device("a100-80gb", where);
  return find_device(device_model, where);
}

}  // namespace shardsim::compute
