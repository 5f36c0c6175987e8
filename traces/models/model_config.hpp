#pragma once
// Models users describe themselves (issue 13 item 4): a parallel::ModelSpec from
//  - a Hugging Face config.json (model_type gpt2, gpt_neox, llama, mistral, mixtral, qwen2,
//    qwen2_moe). Keys read per type (transformers' configuration_<type>.py names and
//    defaults): hidden size, layers, heads, KV heads, head_dim, FFN size, gating, vocabulary,
//    max positions, tied embeddings, biases, experts and top-k. Other keys are ignored (HF
//    configs carry many that do not change the shapes); a missing required key is an error
//    naming its JSON pointer.
//  - shardsim's own model JSON (no "model_type"): {"name", "layers", "hidden", "heads",
//    "kv_heads"?, "head_dim"?, "ffn", "gated_ffn"?, "vocab", "max_positions"?,
//    "learned_positions"?, "tied_embeddings"?, "norm": "layernorm"|"rmsnorm"?, "qkv_bias"?,
//    "linear_bias"?, "dropout"?, "decoder"?, "experts"?, "top_k"?, "expert_ffn"?,
//    "shared_expert_ffn"?, "seq"?}; unknown keys are errors (STYLE 5).
//  - a zoo name (traces/zoo): gpt3-175b, llama3-70b, ...
// Errors are ConfigErrors naming the file and JSON pointer ("config.json: /hidden_size").
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "models/parallel/model_spec.hpp"

namespace shardsim::models {

/// From a parsed HF config; `file` names it in errors. An unknown model_type is an error
/// listing the supported ones.
parallel::ModelSpec from_hf_config(const nlohmann::json& j, const std::string& file);
/// The Hugging Face model_type values from_hf_config reads, in table order.
std::vector<std::string> hf_architectures();
/// From shardsim's own model JSON.
parallel::ModelSpec from_model_json(const nlohmann::json& j, const std::string& file);
/// Reads a .json file and dispatches on "model_type" (HF) or not (own format).
parallel::ModelSpec load_model_file(const std::string& path);
/// A zoo transformer; ResNet-50 is refused (`where` names the flag).
parallel::ModelSpec from_zoo(const std::string& name, const std::string& where);
/// `--model NAME|config.json`: a path (ends in .json) or a zoo name.
parallel::ModelSpec resolve_model(const std::string& name_or_path, const std::string& where);

}  // namespace shardsim::models
