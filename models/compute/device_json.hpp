#pragma once
// A device described in JSON: what `--device FILE.json` loads (find_device, device.hpp), so a
// user's measured chip carries its own peaks and per-op tables without a new preset.
//
// One JSON object; every key optional except as noted, unknown keys are errors:
//   name              string, required                the device's name in every output
//   base              string                          a preset to start from (shardsim list
//                                                     devices); the other keys override it
//   description, source, compute_source, comm_units_source   strings (provenance)
//   peak_flops        {"bf16": 9.895e14, ...}         dense FLOP/s per math type (fp32, tf32,
//                                                     bf16, fp16, fp8, int8); replaces the
//                                                     base's entries it names; the result
//                                                     needs bf16 or fp32 (the fallbacks)
//   hbm_bytes         bytes or "80GiB"                capacity, > 0
//   hbm_Bps           bytes/s or "3.35TB/s"           bandwidth, > 0
//   launch_s          seconds or "4us"                per-kernel launch overhead, >= 0
//   flops_eff, mem_eff, gemm_eff, attn_fwd_eff, attn_bwd_eff   fractions in (0, 1]
//   compute_units     integer > 0                     SMs / CUs / MXUs
//   gemm_tiles        [[256, 128], ...]               output tiles (m, n), each > 0
//   gemm_tile_k       integer > 0                     K step of the GEMM main loop
//   comm_units        integer >= 0, < compute_units   units a collective in flight occupies
//   persistent_gemm   true | false                    GEMMs launch one CTA per unit (Hopper cuBLAS)
//   p2p_comm_units    integer >= 0, < compute_units   units one send/recv occupies on each end
// Without `base`: name, peak_flops, hbm_bytes and hbm_Bps are required. The meaning of each
// field is Device's (device.hpp). Errors: ConfigError("<file>: <JSON pointer>", what was found,
// what was expected), e.g. "dev.json: /gemm_eff: 1.5; expected a fraction in (0, 1]".
#include <nlohmann/json.hpp>
#include <string>

#include "models/compute/device.hpp"

namespace shardsim::compute {

/// The device `j` describes; `file` names it in errors. Throws ConfigError.
Device device_from_json(const nlohmann::json& j, const std::string& file);

/// Reads and parses `path` (device_from_json). Throws ConfigError naming `where` when the file
/// cannot be read, naming the file for bad JSON or bad fields.
Device load_device_file(const std::string& path, const std::string& where);

/// True when `spec` names a device file rather than a preset: it ends in ".json".
bool is_device_file(const std::string& spec);

}  // namespace shardsim::compute
