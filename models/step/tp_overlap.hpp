#pragma once
// How TransformerEngine's userbuffers overlap each tensor-parallel collective with its GEMM
// (Megatron-LM --tp-comm-overlap, NeMo ub_tp_comm_overlap), per overlapped layer of a
// transformer layer: the ten names of TE's initialize_ub (transformer_engine/pytorch/module/
// base.py) and of NeMo's userbuffers configs (ub_tp_comm_overlap_cfg):
//   forward   qkv_fprop, fc1_fprop  (all-gather into the column-parallel GEMM)
//             proj_fprop, fc2_fprop (row-parallel GEMM into the reduce-scatter)
//   backward  proj_dgrad, fc2_dgrad (output-gradient all-gather into the row-parallel layer's
//                                    input-gradient GEMM)
//             qkv_dgrad, fc1_dgrad  (all-gather of the saved sequence-parallel input beside the
//                                    column-parallel layer's input-gradient GEMM)
//             qkv_wgrad, fc1_wgrad  (reduce-scatter of that input gradient beside the
//                                    weight-gradient GEMM)
// Each runs by one method (TE comm_gemm_overlap.cpp, CommOverlapBase / CommOverlapP2PBase):
//  - ring_exchange: the GEMM in num_splits chunks (default tp) while the chunks travel between
//    neighbours by copy engines (use_ce): no SMs taken;
//  - pipeline (reduce-scatters only): the GEMM in num_splits chunks (default 4), each chunk's
//    reduce-scatter on the communication kernel's num_sm SMs beside the next chunk;
//  - bulk: the whole collective on num_sm SMs beside an unrelated GEMM.
// With set_sm_margin the GEMM is launched on the SMs the communication kernel leaves
// (`_math_sms = set_sm_margin ? sm_count - num_comm_sm : sm_count`, TE comm_gemm_overlap.cpp;
// cuBLASLt CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET; any method, NeMo's configs set it on ring
// exchanges with num_sm 1 too): the model runs it units / (units - num_sm) longer, for its whole
// duration (the SM ratio, not the GEMM's own wave count on fewer SMs), and the collective takes
// no further SMs. Without it a
// pipeline or bulk kernel's SMs are taken from a GEMM sized for all of them: the executor's
// contention rule (executor.hpp; Hopper's persistent GEMMs in two waves while it runs).
// A margin of num_sm >= the device's units is ignored (factor 1) in TE's defaults, so that they
// apply to any device (a TPU's 4 MXUs); a config given as a file must fit the device.
// Defaults: TE 2.x's get_default_config: ring_exchange num_sm 1, no margin, splits tp; pipeline
// and bulk num_sm 16, set_sm_margin true, splits 4.
#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstdint>
#include <string>

namespace shardsim::step {

enum class UbMethod : std::uint8_t { ring_exchange, pipeline, bulk };

enum class UbLayer : std::uint8_t {
  qkv_fprop,
  proj_fprop,
  fc1_fprop,
  fc2_fprop,
  proj_dgrad,
  fc2_dgrad,
  qkv_dgrad,
  fc1_dgrad,
  qkv_wgrad,
  fc1_wgrad,
  count
};

struct UbOverlap {
  UbMethod method = UbMethod::ring_exchange;
  std::uint32_t num_sm = 1;     ///< SMs of the communication kernel (pipeline, bulk)
  bool set_sm_margin = false;   ///< the GEMM runs on the others
  std::uint32_t num_splits = 0; ///< GEMM chunks (ring_exchange, pipeline); 0: the default
  /// ring_exchange: the received chunks two at a time, tp / 2 GEMMs (TE CommOverlapP2PBase
  /// split_overlap_ag with _aggregate: `num_steps = _tp_size / 2`)
  bool aggregate = false;
};

struct TpOverlapConfig {
  std::array<UbOverlap, static_cast<std::size_t>(UbLayer::count)> layers = te_defaults();
  bool te_default = true;  ///< false when read from a config (tp_overlap_from_json)

  [[nodiscard]] const UbOverlap& at(UbLayer l) const { return layers[static_cast<std::size_t>(l)]; }
  /// TE 2.x's get_default_config for every layer (header).
  static std::array<UbOverlap, static_cast<std::size_t>(UbLayer::count)> te_defaults();
  /// GEMM chunks of `l` at tensor-parallel size tp (num_splits, else tp for ring_exchange and 4
  /// for pipeline; bulk: 1).
  [[nodiscard]] std::uint64_t splits(UbLayer l, std::uint64_t tp) const;
  /// The GEMM's time factor: units / (units - num_sm) with set_sm_margin, else 1.
  [[nodiscard]] double gemm_factor(UbLayer l, std::uint32_t units) const;
  /// Whether the collective takes SMs from the GEMM beside it (pipeline or bulk, no margin).
  [[nodiscard]] bool takes_units(UbLayer l) const;
  /// Throws ConfigError naming `where` when a num_sm is not below `units` (a device with units).
  void check_units(std::uint32_t units, const std::string& where) const;
};

[[nodiscard]] const char* to_string(UbLayer l);
[[nodiscard]] const char* to_string(UbMethod m);

/// A NeMo / TE userbuffers config as JSON: {"qkv_dgrad": {"method": "bulk", "num_sm": 4,
/// "cga_size": 2, "set_sm_margin": 0}, ...}; layers left out keep TE's defaults; cga_size,
/// atomic_gemm, fp8_buf are accepted and not modelled. Throws ConfigError naming
/// `source` and the JSON path for an unknown layer or key, a method the layer cannot run
/// (pipeline on an all-gather; bulk outside the dgrad / wgrad layers, which run nothing else),
/// or a value of the wrong type.
TpOverlapConfig tp_overlap_from_json(const nlohmann::json& j, const std::string& source);
/// Reads the file; ConfigError naming `where` (the flag) when it cannot be opened.
TpOverlapConfig load_tp_overlap_file(const std::string& path, const std::string& where);

}  // namespace shardsim::step
