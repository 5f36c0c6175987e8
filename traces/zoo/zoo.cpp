#include "traces/zoo/zoo.hpp"

#include <fmt/format.h>

#include "sim/error.hpp"

namespace shardsim::zoo {

namespace {

using trace::Tensor;

Tensor mat(std::string name, std::uint64_t rows, std::uint64_t cols) {
  return Tensor{std::move(name), rows * cols, trace::DType::bf16, {rows, cols}};
}
Tensor vec(std::string name, std::uint64_t n) { return Tensor{std::move(name), n, trace::DType::bf16, {n}}; }

// Builds forward ops in order, then mirrors them into backward ops in reverse order; each op
// depends on the one before it (one compute stream).
class Builder {
 public:
  Builder(std::string name, std::uint64_t batch, std::uint64_t seq) {
    t_.name = std::move(name);
    t_.source = "zoo";
    t_.batch_per_replica = batch;
    t_.seq_len = seq;
  }
  void fwd(std::string name, std::uint32_t unit, double flops, double bytes, std::vector<Tensor> params,
           double activation_bytes, std::optional<compute::OpShape> shape = std::nullopt) {
    trace::Op op;
    op.id = t_.ops.size();
    op.name = std::move(name);
    op.phase = trace::Phase::forward;
    op.unit = unit;
    op.flops = flops;
    for (const auto& p : params) bytes += 2.0 * static_cast<double>(p.elements);  // read the 16-bit weights
    op.bytes = bytes;
    op.params = std::move(params);
    op.activation_bytes = static_cast<std::uint64_t>(activation_bytes);
    if (!t_.ops.empty()) op.deps.push_back(t_.ops.back().id);
    op.shape = std::move(shape);
    t_.ops.push_back(std::move(op));
  }
  trace::Trace finish(nlohmann::json config) {
    const std::size_t n = t_.ops.size();
    for (std::size_t i = n; i-- > 0;) {
      trace::Op b;
      b.id = t_.ops.size();
      b.name = t_.ops[i].name + ".bwd";
      b.phase = trace::Phase::backward;
      b.unit = t_.ops[i].unit;
      b.flops = 2.0 * t_.ops[i].flops;
      b.bytes = 2.0 * t_.ops[i].bytes;
      b.shape = t_.ops[i].shape;  // the same kernels, timed backward (op_cost.hpp)
      b.deps.push_back(t_.ops.back().id);
      t_.ops.push_back(std::move(b));
    }
    t_.config = std::move(config);
    return std::move(t_);
  }

 private:
  trace::Trace t_;
};

double d(std::uint64_t v) { return static_cast<double>(v); }

compute::OpShape elementwise(double fwd_bytes, double bwd_bytes, std::uint32_t fwd_kernels, std::uint32_t bwd_kernels) {
  compute::OpShape s;
  s.ew_bytes_fwd = fwd_bytes;
  s.ew_bytes_bwd = bwd_bytes;
  s.ew_kernels_fwd = fwd_kernels;
  s.ew_kernels_bwd = bwd_kernels;
  return s;
}

}  // namespace

compute::LayerShape layer_shape(const TransformerConfig& c, std::uint64_t batch, std::uint64_t seq) {
  compute::LayerShape s;
  s.hidden = c.d_model;
  s.heads = c.heads;
  s.kv_heads = c.kv_heads;
  s.ffn = c.ffn;
  s.seq = seq;
  s.micro_batch = batch;
  s.gated = c.gated_ffn;
  s.flash = c.flash_attention;
  s.causal = !c.encoder;
  s.dropout = c.dropout;
  s.rotary = c.learned_positions == 0 && !c.encoder;
  s.fused_qkv = c.fused_qkv;
  s.eager_norm = c.eager_kernels && c.rmsnorm;  // PyTorch's LayerNorm is one native kernel
  s.repeat_kv = c.eager_kernels;
  s.triton_attention = c.triton_attention;
  return s;
}

trace::Trace transformer_trace(const std::string& name, const TransformerConfig& c, std::uint64_t batch,
                               std::uint64_t seq) {
  if (batch == 0) throw ConfigError("--batch-per-device", "0", "a positive batch");
  if (seq == 0) throw ConfigError("--seq", "0", "a positive sequence length");
  Builder b(name, batch, seq);
  const double T = d(batch) * d(seq);  // tokens in the micro-batch
  const double h = d(c.d_model), f = d(c.ffn), V = d(c.vocab), s = d(seq), B = d(batch);
  const std::uint64_t dkv = c.d_model * c.kv_heads / c.heads;  // K/V width (GQA: fewer heads)
  const double kv = d(dkv);
  const double a = d(c.heads);
  const double act = 2.0;  // bytes per 16-bit activation element
  auto norm = [&](const std::string& p) {
    std::vector<Tensor> v{vec(p + ".weight", c.d_model)};
    if (!c.rmsnorm) v.push_back(vec(p + ".bias", c.d_model));
    return v;
  };
  auto with_bias = [&](std::vector<Tensor> v, const std::string& p, std::uint64_t n) {
    if (c.biases) v.push_back(vec(p + ".bias", n));
    return v;
  };
  const double norm_flops = (c.rmsnorm ? 4.0 : 8.0) * T * h;  // square, sum, scale (+ mean, shift)
  // Saved by a norm: its input (fused); the eager reference RMSNorm keeps its fp32 copy of x and
  // the 16-bit normalised output instead (transformer_cost.hpp, eager_norm).
  const double norm_saved = c.eager_kernels && c.rmsnorm ? (4.0 + act) * T * h : act * T * h;

  // Unit 0: embeddings (a lookup: no FLOPs, writes T x h).
  std::vector<Tensor> emb{mat("embed.tokens", c.vocab, c.d_model)};
  if (c.learned_positions) emb.push_back(mat("embed.positions", c.learned_positions, c.d_model));
  if (c.token_types) emb.push_back(mat("embed.token_types", c.token_types, c.d_model));
  double emb_flops = 0;
  if (c.encoder) {  // BERT normalises the summed embeddings
    for (auto& t : norm("embed.norm")) emb.push_back(t);
    emb_flops = norm_flops;
  }
  // Kernels: the gather (read and write T x h); backward zeroes the fp32 V x h gradient and
  // scatter-adds T x h rows into it. BERT's embedding LayerNorm adds a norm's passes.
  compute::OpShape emb_k = elementwise(2.0 * act * T * h, act * T * h + 4.0 * V * h, 1, 2);
  if (c.encoder) {
    emb_k.ew_bytes_fwd += 2.0 * act * T * h;
    emb_k.ew_bytes_bwd += 3.0 * act * T * h;
    emb_k.ew_kernels_fwd += 1;
    emb_k.ew_kernels_bwd += 2;
  }
  b.fwd("embed", 0, emb_flops, 2.0 * act * T * h, std::move(emb), c.encoder ? act * T * h : 0.0, emb_k);

  // The kernels of every layer, in the order of the ops below (transformer_cost.hpp).
  const std::vector<compute::LayerOp> k = compute::layer_ops(layer_shape(c, batch, seq));
  for (std::uint64_t l = 0; l < c.layers; ++l) {
    const auto u = static_cast<std::uint32_t>(l + 1);
    const std::string p = fmt::format("layers.{}", l);
    b.fwd(p + ".norm1", u, norm_flops, 2.0 * act * T * h, norm(p + ".norm1"), norm_saved, k[0].shape);
    std::vector<Tensor> qkv{mat(p + ".attn.q", c.d_model, c.d_model), mat(p + ".attn.k", c.d_model, dkv),
                            mat(p + ".attn.v", c.d_model, dkv)};
    if (c.biases) {
      qkv.push_back(vec(p + ".attn.q.bias", c.d_model));
      qkv.push_back(vec(p + ".attn.k.bias", dkv));
      qkv.push_back(vec(p + ".attn.v.bias", dkv));
    }
    b.fwd(p + ".attn.qkv", u, 2.0 * T * h * (h + 2 * kv), act * T * (2 * h + 2 * kv), std::move(qkv), act * T * h,
          k[1].shape);
    // Scores and values: 2 b s^2 h each (QK^T, AV); softmax ~5 FLOPs per score.
    const double attn_flops = 4.0 * B * s * s * h + 5.0 * B * a * s * s;
    // Q, K, V (eager repeat_kv: the attention keeps K and V copied to every query head)
    double attn_saved = act * T * (h + 2 * (c.eager_kernels ? h : kv));
    double attn_bytes = act * T * (2 * h + 2 * kv);
    if (c.flash_attention) {
      // fp32 log-sum-exp per row; the output O is the saved input of attn.out (Korthikanti et
      // al. 2022's 34 s b h less the s^2 terms, as models/parallel/memory_activations.cpp).
      attn_saved += 4.0 * B * a * s;
    } else {
      // softmax output 2as^2b, dropout mask as^2b, dropout output 2as^2b (Korthikanti sec. 4.1)
      attn_saved += (c.dropout ? 5.0 : 2.0) * B * a * s * s;
      attn_bytes += 3.0 * act * B * a * s * s;  // write scores, softmax read + write
    }
    b.fwd(p + ".attn.core", u, attn_flops, attn_bytes, {}, attn_saved, k[2].shape);
    b.fwd(p + ".attn.out", u, 2.0 * T * h * h, 2.0 * act * T * h,
          with_bias({mat(p + ".attn.o", c.d_model, c.d_model)}, p + ".attn.o", c.d_model),
          act * T * h + (c.dropout ? T * h : 0.0), k[3].shape);
    b.fwd(p + ".norm2", u, norm_flops, 2.0 * act * T * h, norm(p + ".norm2"), norm_saved, k[4].shape);
    if (c.gated_ffn) {
      b.fwd(p + ".mlp.gate_up", u, 4.0 * T * h * f, act * T * (h + 2 * f),
            {mat(p + ".mlp.gate", c.d_model, c.ffn), mat(p + ".mlp.up", c.d_model, c.ffn)}, act * T * h, k[5].shape);
      b.fwd(p + ".mlp.act", u, 4.0 * T * f, act * T * 3 * f, {}, 2.0 * act * T * f, k[6].shape);  // silu(gate) * up
      b.fwd(p + ".mlp.down", u, 2.0 * T * f * h, act * T * (f + h), {mat(p + ".mlp.down", c.ffn, c.d_model)}, act * T * f,
            k[7].shape);
    } else {
      b.fwd(p + ".mlp.fc1", u, 2.0 * T * h * f, act * T * (h + f),
            with_bias({mat(p + ".mlp.fc1", c.d_model, c.ffn)}, p + ".mlp.fc1", c.ffn), act * T * h, k[5].shape);
      b.fwd(p + ".mlp.act", u, 8.0 * T * f, 2.0 * act * T * f, {}, act * T * f, k[6].shape);  // GELU (tanh form)
      b.fwd(p + ".mlp.fc2", u, 2.0 * T * f * h, act * T * (f + h),
            with_bias({mat(p + ".mlp.fc2", c.ffn, c.d_model)}, p + ".mlp.fc2", c.d_model),
            act * T * f + (c.dropout ? T * h : 0.0), k[7].shape);
    }
  }

  const auto head = static_cast<std::uint32_t>(c.layers + 1);
  if (c.encoder) {
    // BERT pre-training heads (Devlin et al. 2018, sec. 3.1; Hugging Face BertForPreTraining):
    // pooler (h x h) on [CLS], NSP classifier (h x 2), MLM transform (h x h, LayerNorm) and the
    // tied decoder with its own bias, run on the 15 % masked tokens.
    const double Tm = 0.15 * T;
    b.fwd("pooler", head, 2.0 * B * h * h, act * B * 2 * h,
          {mat("pooler.dense", c.d_model, c.d_model), vec("pooler.dense.bias", c.d_model), mat("nsp", c.d_model, 2),
           vec("nsp.bias", 2)},
          act * B * h);
    std::vector<Tensor> mlm{mat("mlm.transform", c.d_model, c.d_model), vec("mlm.transform.bias", c.d_model)};
    for (auto& t : norm("mlm.norm")) mlm.push_back(t);
    mlm.push_back(vec("mlm.decoder.bias", c.vocab));
    b.fwd("mlm.head", head, 2.0 * Tm * h * h + 2.0 * Tm * h * V + 5.0 * Tm * V, act * Tm * (2 * h + 2 * V), std::move(mlm),
          act * Tm * (2 * h + V));
  } else {
    b.fwd("final_norm", head, norm_flops, 2.0 * act * T * h, norm("final_norm"), norm_saved,
          compute::norm_kernels(act, T * h, c.eager_kernels && c.rmsnorm));
    std::vector<Tensor> lm;
    if (!c.tied_embeddings) lm.push_back(mat("lm_head", c.d_model, c.vocab));
    // Logits (2ThV) and softmax cross-entropy (~5 FLOPs per logit); saved: input and logits.
    // Kernels: the logits GEMM; cross-entropy as PyTorch runs it on 16-bit logits: cast to
    // fp32 (read 2, write 4 bytes per logit), log_softmax (read 4, write 4), the NLL gather;
    // backward the NLL gradient (write 4), log_softmax backward (read 8, write 4) and the cast
    // back (read 4, write 2): 14 and 22 bytes per logit, three kernels each way.
    compute::OpShape lm_k = elementwise((act + 12.0) * T * V, (act + 20.0) * T * V, 3, 3);
    lm_k.gemms.push_back({batch * seq, c.vocab, c.d_model, 1});
    b.fwd("lm_head", head, 2.0 * T * h * V + 5.0 * T * V, act * T * (h + 2 * V), std::move(lm), act * T * (h + V),
          std::move(lm_k));
  }
  nlohmann::json cfg = {{"family", c.encoder ? "encoder-transformer" : "decoder-transformer"},
                        {"layers", c.layers}, {"d_model", c.d_model}, {"heads", c.heads}, {"kv_heads", c.kv_heads},
                        {"ffn", c.ffn}, {"vocab", c.vocab}, {"gated_ffn", c.gated_ffn},
                        {"tied_embeddings", c.tied_embeddings}, {"flash_attention", c.flash_attention}};
  return b.finish(cfg);
}

trace::Trace resnet50_trace(std::uint64_t batch) {
  if (batch == 0) throw ConfigError("--batch-per-device", "0", "a positive batch");
  // He et al. 2016, "Deep Residual Learning", Table 1 (50-layer), torchvision v1.5 layout
  // (stride on the 3x3 convolution), 224 x 224 input. Each op is a convolution with its
  // batch norm and ReLU; it saves its input, the convolution output (for BN) and the BN
  // output (for ReLU), 16-bit.
  Builder b("resnet50", batch, 0);
  const double B = d(batch), act = 2.0;
  auto conv = [&](const std::string& name, std::uint32_t unit, std::uint64_t cin, std::uint64_t cout, std::uint64_t k,
                  std::uint64_t hin, std::uint64_t stride) {
    const std::uint64_t hout = hin / stride;
    const double in = B * d(cin * hin * hin), out = B * d(cout * hout * hout);
    const double flops = 2.0 * out * d(cin * k * k) + 6.0 * out;  // MACs x 2, BN + ReLU
    b.fwd(name, unit, flops, act * (in + 3.0 * out),
          {Tensor{name + ".weight", cout * cin * k * k, trace::DType::bf16, {cout, cin, k, k}},
           vec(name + ".bn.weight", cout), vec(name + ".bn.bias", cout)},
          act * (in + 2.0 * out));
    return hout;
  };
  std::uint64_t hw = conv("conv1", 0, 3, 64, 7, 224, 2);
  b.fwd("maxpool", 0, 9.0 * B * d(64 * 56 * 56), act * B * d(64 * (hw * hw + 56 * 56)), {}, act * B * d(64 * hw * hw));
  hw = 56;
  const std::uint64_t blocks[4] = {3, 4, 6, 3};
  const std::uint64_t widths[4] = {64, 128, 256, 512};
  std::uint64_t cin = 64;
  std::uint32_t unit = 1;
  for (int stage = 0; stage < 4; ++stage) {
    const std::uint64_t mid = widths[stage], out = 4 * mid;
    for (std::uint64_t i = 0; i < blocks[stage]; ++i, ++unit) {
      const std::uint64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      const std::string p = fmt::format("layer{}.{}", stage + 1, i);
      conv(p + ".conv1", unit, cin, mid, 1, hw, 1);
      const std::uint64_t hout = conv(p + ".conv2", unit, mid, mid, 3, hw, stride);
      conv(p + ".conv3", unit, mid, out, 1, hout, 1);
      if (i == 0) conv(p + ".downsample", unit, cin, out, 1, hw, stride);
      hw = hout;
      cin = out;
    }
  }
  // Global average pool and the 1000-way classifier.
  b.fwd("fc", unit, 2.0 * B * 2048 * 1000 + B * 2048 * 49, act * B * (2048 * 49 + 1000),
        {mat("fc.weight", 1000, 2048), vec("fc.bias", 1000)}, act * B * 2048);
  return b.finish({{"family", "resnet"}, {"depth", 50}, {"image", 224}});
}

namespace {

ModelInfo gpt3(std::string name, std::string size, std::uint64_t L, std::uint64_t dm, std::uint64_t heads, double pub) {
  // Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1; GPT-2 vocabulary
  // (50257), learned positions (2048), biases, LayerNorm, tied embeddings, d_ff = 4 d_model.
  ModelInfo m;
  m.name = std::move(name);
  m.description = "GPT-3 " + size + " decoder";
  m.source = "Brown et al. 2020, Table 2.1";
  m.published_params = pub;
  m.default_seq = 2048;
  // Flash attention: decoders train with it by default (PyTorch SDPA, Megatron-LM
  // --use-flash-attn), so the s x s scores are neither stored nor timed as HBM traffic.
  m.transformer = {L, dm, heads, heads, 4 * dm, 50257, 2048, 0, false, true, false, true, false, true, true, true};
  return m;
}

ModelInfo llama(std::string name, std::string desc, std::string src, std::uint64_t L, std::uint64_t dm,
                std::uint64_t heads, std::uint64_t kvh, std::uint64_t ffn, std::uint64_t vocab, std::uint64_t seq, double pub) {
  // RMSNorm, SwiGLU, rotary positions, no biases, untied output head (Touvron et al. 2023).
  ModelInfo m;
  m.name = std::move(name);
  m.description = std::move(desc);
  m.source = std::move(src);
  m.published_params = pub;
  m.default_seq = seq;
  // Three Q, K, V projections (wq, wk, wv in the reference code and torchtitan).
  m.transformer = {L, dm, heads, kvh, ffn, vocab, 0, 0, true, false, true, false, false, false, true, false};
  return m;
}

ModelInfo bert(std::string name, std::string size, std::uint64_t L, std::uint64_t dm, std::uint64_t heads, double pub) {
  // Devlin et al. 2018, sec. 3: L, H, A; vocabulary 30522 (WordPiece, uncased), 512 positions,
  // 2 token types, d_ff = 4H.
  ModelInfo m;
  m.name = std::move(name);
  m.description = "BERT " + size + " encoder (pre-training heads)";
  m.source = "Devlin et al. 2018, sec. 3";
  m.published_params = pub;
  m.default_seq = 512;
  m.transformer = {L, dm, heads, heads, 4 * dm, 30522, 512, 2, false, true, false, true, true, true, false, true};
  return m;
}

std::vector<ModelInfo> make() {
  std::vector<ModelInfo> v;
  v.push_back(gpt3("gpt3-125m", "Small 125M", 12, 768, 12, 125e6));
  v.push_back(gpt3("gpt3-350m", "Medium 350M", 24, 1024, 16, 350e6));
  v.push_back(gpt3("gpt3-760m", "Large 760M", 24, 1536, 16, 760e6));
  v.push_back(gpt3("gpt3-1.3b", "XL 1.3B", 24, 2048, 24, 1.3e9));
  v.push_back(gpt3("gpt3-2.7b", "2.7B", 32, 2560, 32, 2.7e9));
  v.push_back(gpt3("gpt3-6.7b", "6.7B", 32, 4096, 32, 6.7e9));
  v.push_back(gpt3("gpt3-13b", "13B", 40, 5140, 40, 13.0e9));  // d_model 5140 as printed in Table 2.1
  v.push_back(gpt3("gpt3-175b", "175B", 96, 12288, 96, 175.0e9));
  const std::string l2 = "Touvron et al. 2023, Llama 2, Table 1 and sec. 2.2; released config.json";
  v.push_back(llama("llama2-7b", "Llama 2 7B", l2, 32, 4096, 32, 32, 11008, 32000, 4096, 7e9));
  v.push_back(llama("llama2-13b", "Llama 2 13B", l2, 40, 5120, 40, 40, 13824, 32000, 4096, 13e9));
  v.push_back(llama("llama2-70b", "Llama 2 70B (GQA, 8 KV heads)", l2, 80, 8192, 64, 8, 28672, 32000, 4096, 70e9));
  const std::string l3 = "Dubey et al. 2024, The Llama 3 Herd of Models, Table 3";
  v.push_back(llama("llama3-8b", "Llama 3 8B", l3, 32, 4096, 32, 8, 14336, 128256, 8192, 8e9));
  v.push_back(llama("llama3-70b", "Llama 3 70B", l3, 80, 8192, 64, 8, 28672, 128256, 8192, 70e9));
  v.push_back(llama("llama3-405b", "Llama 3 405B", l3, 126, 16384, 128, 8, 53248, 128256, 8192, 405e9));
  v.push_back(bert("bert-base", "base", 12, 768, 12, 110e6));
  v.push_back(bert("bert-large", "large", 24, 1024, 16, 340e6));
  ModelInfo r;
  r.name = "resnet50";
  r.description = "ResNet-50 v1.5, 224x224 ImageNet, per-layer convolutions";
  r.source = "He et al. 2016, Table 1; torchvision resnet50 (25,557,032 parameters)";
  r.published_params = 25.6e6;
  r.resnet = true;
  v.push_back(r);
  return v;
}

}  // namespace

const std::vector<ModelInfo>& models() {
  static const std::vector<ModelInfo> v = make();
  return v;
}

const Registry& model_registry() {
  static const Registry r = [] {
    Registry reg("model", "models", "zoo models for --model");
    for (const auto& m : models()) reg.add({m.name, m.description, m.source, {}});
    return reg;
  }();
  return r;
}

const ModelInfo& find_model(const std::string& name, const std::string& where) {
  return models()[model_registry().at(name, where)];
}

trace::Trace generate(const ModelInfo& m, std::uint64_t batch, std::uint64_t seq, std::optional<bool> flash,
                      bool eager_kernels) {
  if (m.resnet) return resnet50_trace(batch);
  TransformerConfig c = m.transformer;
  if (flash) c.flash_attention = *flash;
  c.eager_kernels = eager_kernels;
  return transformer_trace(m.name, c, batch, seq == 0 ? m.default_seq : seq);
}

}  // namespace shardsim::zoo
