#include "traces/models/model_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <fstream>
#include <sstream>

#include "sim/error.hpp"
#include "sim/text/strings.hpp"
#include "traces/importers/json_util.hpp"
#include "traces/zoo/zoo.hpp"

namespace shardsim::models {

namespace {

using nlohmann::json;
using parallel::ModelSpec;

// Field access naming "<file>: /<key>" in errors.
class Fields {
 public:
  Fields(const json& j, std::string file) : j_(j), file_(std::move(file)) {
    if (!j_.is_object()) throw ConfigError(file_, j_.is_null() ? "null" : j_.type_name(), "a JSON object");
  }
  [[nodiscard]] bool has(const char* k) const { return j_.contains(k) && !j_.at(k).is_null(); }
  [[nodiscard]] std::string where(const char* k) const { return fmt::format("{}: /{}", file_, k); }
  [[nodiscard]] std::uint64_t uint(const char* k) const {
    if (!has(k)) throw ConfigError(where(k), "missing", "a positive integer");
    return importers::json_uint(j_.at(k), where(k));
  }
  [[nodiscard]] std::uint64_t uint_or(const char* k, std::uint64_t d) const { return has(k) ? uint(k) : d; }
  [[nodiscard]] bool flag_or(const char* k, bool d) const {
    if (!has(k)) return d;
    if (!j_.at(k).is_boolean()) throw ConfigError(where(k), j_.at(k).dump(), "true or false");
    return j_.at(k).get<bool>();
  }
  [[nodiscard]] double number_or(const char* k, double d) const {
    return has(k) ? importers::json_number(j_.at(k), where(k)) : d;
  }
  [[nodiscard]] std::string text_or(const char* k, const std::string& d) const {
    if (!has(k)) return d;
    if (!j_.at(k).is_string()) throw ConfigError(where(k), j_.at(k).dump(), "a string");
    return j_.at(k).get<std::string>();
  }
  [[nodiscard]] const json& raw() const { return j_; }
  [[nodiscard]] const std::string& file() const { return file_; }

 private:
  const json& j_;
  std::string file_;
};

std::string stem_name(const std::string& file) {
  // ".../Llama-3-8B/config.json" -> "Llama-3-8B"; "mixtral.json" -> "mixtral"
  std::string s = file;
  const auto slash = s.find_last_of('/');
  std::string base = slash == std::string::npos ? s : s.substr(slash + 1);
  if (base == "config.json" && slash != std::string::npos) {
    const std::string dir = s.substr(0, slash);
    const auto s2 = dir.find_last_of('/');
    return s2 == std::string::npos ? dir : dir.substr(s2 + 1);
  }
  if (base.size() > 5 && base.substr(base.size() - 5) == ".json") base.resize(base.size() - 5);
  return base;
}

// Llama-family keys (transformers LlamaConfig, MistralConfig, MixtralConfig, Qwen2Config,
// Qwen2MoeConfig): RMSNorm, SwiGLU, rotary positions, untied by default.
void llama_like(const Fields& f, ModelSpec& m) {
  m.hidden = f.uint("hidden_size");
  m.layers = f.uint("num_hidden_layers");
  m.heads = f.uint("num_attention_heads");
  m.kv_heads = f.uint_or("num_key_value_heads", m.heads);
  m.head_dim = f.uint_or("head_dim", 0);
  m.ffn = f.uint("intermediate_size");
  m.vocab = f.uint("vocab_size");
  m.max_positions = f.uint("max_position_embeddings");
  m.gated_ffn = true;
  m.rmsnorm = true;
  m.tied_embeddings = f.flag_or("tie_word_embeddings", false);
  m.dropout = f.number_or("attention_dropout", 0.0) > 0;
}

}  // namespace

namespace {

// One reader per Hugging Face model_type (transformers' *Config classes); the table below is the
// one list of supported architectures (issue 12).
void read_gpt2(const Fields& f, ModelSpec& m) {
  // transformers GPT2Config: n_embd, n_layer, n_head, n_positions, n_inner (None = 4 n_embd),
  // tied embeddings, LayerNorm, biases everywhere, learned positions, dropout 0.1.
  m.hidden = f.uint("n_embd");
  m.layers = f.uint("n_layer");
  m.heads = f.uint("n_head");
  m.kv_heads = m.heads;
  m.ffn = f.uint_or("n_inner", 4 * m.hidden);
  m.vocab = f.uint("vocab_size");
  m.max_positions = f.uint("n_positions");
  m.learned_positions = true;
  m.tied_embeddings = f.flag_or("tie_word_embeddings", true);
  m.qkv_bias = m.linear_bias = true;
  m.dropout = f.number_or("resid_pdrop", 0.1) > 0 || f.number_or("attn_pdrop", 0.1) > 0 ||
              f.number_or("embd_pdrop", 0.1) > 0;
}

void read_gpt_neox(const Fields& f, ModelSpec& m) {
  // GPTNeoXConfig: rotary, LayerNorm, biases (attention_bias default true), untied by default.
  m.hidden = f.uint("hidden_size");
  m.layers = f.uint("num_hidden_layers");
  m.heads = f.uint("num_attention_heads");
  m.kv_heads = m.heads;
  m.ffn = f.uint("intermediate_size");
  m.vocab = f.uint("vocab_size");
  m.max_positions = f.uint("max_position_embeddings");
  m.tied_embeddings = f.flag_or("tie_word_embeddings", false);
  m.qkv_bias = f.flag_or("attention_bias", true);
  m.linear_bias = true;
  m.dropout = f.number_or("hidden_dropout", 0.0) > 0 || f.number_or("attention_dropout", 0.0) > 0;
}

void read_llama(const Fields& f, ModelSpec& m) {
  llama_like(f, m);
  m.qkv_bias = f.flag_or("attention_bias", false);  // LlamaConfig: q, k, v and o together
  m.linear_bias = false;
  if (m.qkv_bias || f.flag_or("mlp_bias", false)) {
    throw ConfigError(f.where("attention_bias"), "biased Llama projections",
                      "attention_bias and mlp_bias false (biased Llama variants are not modelled)");
  }
}

void read_mistral(const Fields& f, ModelSpec& m) { llama_like(f, m); }

void read_qwen2(const Fields& f, ModelSpec& m) {
  llama_like(f, m);
  m.qkv_bias = true;  // Qwen2Attention: bias on q, k, v only
}

void read_mixtral(const Fields& f, ModelSpec& m) {
  llama_like(f, m);
  m.experts = f.uint("num_local_experts");
  m.top_k = f.uint("num_experts_per_tok");
}

void read_qwen2_moe(const Fields& f, ModelSpec& m) {
  llama_like(f, m);
  m.qkv_bias = true;
  m.experts = f.uint("num_experts");
  m.top_k = f.uint("num_experts_per_tok");
  m.expert_ffn = f.uint("moe_intermediate_size");
  m.shared_expert_ffn = f.uint_or("shared_expert_intermediate_size", 0);
  const bool mixed = f.uint_or("decoder_sparse_step", 1) != 1 ||
                     (f.has("mlp_only_layers") && !f.raw().at("mlp_only_layers").empty());
  if (mixed) {
    throw ConfigError(f.where("decoder_sparse_step"), "dense and MoE layers mixed",
                      "every layer MoE (decoder_sparse_step 1, no mlp_only_layers)");
  }
}

struct HfArchitecture {
  std::string_view model_type;
  void (*read)(const Fields&, ModelSpec&);
};
constexpr std::array<HfArchitecture, 7> kHfArchitectures{{{"gpt2", read_gpt2},
                                                          {"gpt_neox", read_gpt_neox},
                                                          {"llama", read_llama},
                                                          {"mistral", read_mistral},
                                                          {"mixtral", read_mixtral},
                                                          {"qwen2", read_qwen2},
                                                          {"qwen2_moe", read_qwen2_moe}}};

// Keys of shardsim's own model JSON.
const std::vector<std::string>& model_json_keys() {
  static const std::vector<std::string> keys = {
      "name", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "gated_ffn", "vocab", "max_positions",
      "learned_positions", "tied_embeddings", "norm", "qkv_bias", "linear_bias", "dropout", "decoder", "experts",
      "top_k", "expert_ffn", "shared_expert_ffn", "seq", "source"};
  return keys;
}

}  // namespace

std::vector<std::string> hf_architectures() {
  std::vector<std::string> out;
  for (const auto& a : kHfArchitectures) out.emplace_back(a.model_type);
  return out;
}

ModelSpec from_hf_config(const json& j, const std::string& file) {
  const Fields f(j, file);
  ModelSpec m;
  m.source = file;
  m.name = stem_name(file);
  m.architecture = f.text_or("model_type", "");
  const std::string& t = m.architecture;
  const auto* arch = std::find_if(kHfArchitectures.begin(), kHfArchitectures.end(),
                                  [&](const HfArchitecture& a) { return a.model_type == t; });
  if (arch == kHfArchitectures.end()) {
    throw ConfigError(f.where("model_type"), t.empty() ? "missing" : fmt::format("'{}'", t),
                      "one of " + text::join(hf_architectures()));
  }
  arch->read(f, m);
  m.default_seq = m.max_positions;
  m.validate(file + ": ");
  return m;
}

ModelSpec from_model_json(const json& j, const std::string& file) {
  const Fields f(j, file);
  const auto& keys = model_json_keys();
  for (const auto& [k, v] : j.items()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
      throw ConfigError(fmt::format("{}: /{}", file, k), "an unknown key",
                        "one of " + text::join(keys) + " (or a Hugging Face config with model_type)");
    }
  }
  ModelSpec m;
  m.architecture = "shardsim";
  m.source = f.text_or("source", file);
  m.name = f.text_or("name", stem_name(file));
  m.layers = f.uint("layers");
  m.hidden = f.uint("hidden");
  m.heads = f.uint("heads");
  m.kv_heads = f.uint_or("kv_heads", m.heads);
  m.head_dim = f.uint_or("head_dim", 0);
  m.ffn = f.uint("ffn");
  m.gated_ffn = f.flag_or("gated_ffn", false);
  m.vocab = f.uint("vocab");
  m.max_positions = f.uint_or("max_positions", 0);
  m.learned_positions = f.flag_or("learned_positions", false);
  if (m.learned_positions && m.max_positions == 0) {
    throw ConfigError(f.where("max_positions"), "missing with learned_positions", "the size of the position table");
  }
  m.tied_embeddings = f.flag_or("tied_embeddings", false);
  const std::string norm = f.text_or("norm", "layernorm");
  if (norm != "layernorm" && norm != "rmsnorm") throw ConfigError(f.where("norm"), "'" + norm + "'", "layernorm or rmsnorm");
  m.rmsnorm = norm == "rmsnorm";
  m.qkv_bias = f.flag_or("qkv_bias", false);
  m.linear_bias = f.flag_or("linear_bias", false);
  m.dropout = f.flag_or("dropout", false);
  m.decoder = f.flag_or("decoder", true);
  m.experts = f.uint_or("experts", 0);
  m.top_k = f.uint_or("top_k", 0);
  m.expert_ffn = f.uint_or("expert_ffn", 0);
  m.shared_expert_ffn = f.uint_or("shared_expert_ffn", 0);
  m.default_seq = f.uint_or("seq", m.max_positions);
  m.validate(file + ": ");
  return m;
}

ModelSpec load_model_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "a file that cannot be opened", "a readable model JSON file");
  std::ostringstream ss;
  ss << in.rdbuf();
  const json j = importers::parse_json(ss.str(), path);
  if (j.is_object() && j.contains("model_type")) return from_hf_config(j, path);
  return from_model_json(j, path);
}

ModelSpec from_zoo(const std::string& name, const std::string& where) {
  const auto& z = zoo::find_model(name, where);
  if (z.resnet) throw ConfigError(where, fmt::format("'{}' is not a transformer", name), "a transformer model or config.json");
  const auto& c = z.transformer;
  ModelSpec m;
  m.name = z.name;
  m.source = "zoo: " + z.source;
  m.architecture = c.encoder ? "encoder" : "decoder";
  m.layers = c.layers;
  m.hidden = c.d_model;
  m.heads = c.heads;
  m.kv_heads = c.kv_heads;
  m.ffn = c.ffn;
  m.gated_ffn = c.gated_ffn;
  m.vocab = c.vocab;
  m.max_positions = c.learned_positions != 0 ? c.learned_positions : z.default_seq;
  m.learned_positions = c.learned_positions != 0;
  m.tied_embeddings = c.tied_embeddings;
  m.rmsnorm = c.rmsnorm;
  m.qkv_bias = m.linear_bias = c.biases;
  m.dropout = c.dropout;
  m.decoder = !c.encoder;
  m.default_seq = z.default_seq;
  // gpt3-13b's printed d_model 5140 is not divisible by its 40 heads (Brown et al. Table 2.1
  // lists d_head 128): keep the printed head dimension.
  if (m.hidden % m.heads != 0) m.head_dim = 128;
  m.validate(where + ": ");
  return m;
}

ModelSpec resolve_model(const std::string& name_or_path, const std::string& where) {
  const bool is_file = name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".json";
  if (!is_file) return from_zoo(name_or_path, where);
  try {
    return load_model_file(name_or_path);
  } catch (const ConfigError& e) {
    throw e.prefixed(where + ": ");
  }
}

}  // namespace shardsim::models
