// ModelSpec -> HF config keys, for plan.yaml. Every key ParseModel needs is written, so a
// plan stands alone and parses back to the same spec.
#include <algorithm>
#include <iomanip>
#include <sstream>

#include "planner/io/model_reader.h"

namespace shardplan {
namespace {

class Out {
 public:
  explicit Out(int indent) : pad_(static_cast<size_t>(indent), ' ') {}
  template <typename T>
  void Key(const char* k, const T& v) { ss_ << pad_ << k << ": " << v << "\n"; }
  void Bool(const char* k, bool v) { ss_ << pad_ << k << ": " << (v ? "true" : "false") << "\n"; }
  // A one-key mapping under `k`.
  void Child(const char* k, const char* inner, const std::string& v) {
    ss_ << pad_ << k << ":\n" << pad_ << "  " << inner << ": " << v << "\n";
  }
  std::string str() const { return ss_.str(); }

 private:
  std::string pad_;
  std::ostringstream ss_;
};

// The dimensions under llama's key names (the reader's ReadLlamaDims).
void LlamaDims(Out& o, const ModelSpec& m, int64_t intermediate) {
  o.Key("vocab_size", m.vocab);
  o.Key("hidden_size", m.hidden);
  o.Key("intermediate_size", intermediate);
  o.Key("num_hidden_layers", m.layers);
  o.Key("num_attention_heads", m.heads);
}

void Common(Out& o, const ModelSpec& m) {
  LlamaDims(o, m, m.model_type == "llama4_text" ? m.expert_intermediate : m.intermediate);
  o.Key("num_key_value_heads", m.kv_heads);
  o.Key("head_dim", m.head_dim);
  o.Key("max_position_embeddings", m.max_positions);
  o.Bool("tie_word_embeddings", m.tied_embeddings);
  // GLM's, Seed-OSS's and Helium's attention_bias biases q, k and v only; elsewhere it is every projection's.
  const std::string& t = m.model_type;
  const bool qkv_only =
      t == "glm4_moe" || t == "glm" || t == "glm4" || t == "seed_oss" || t == "helium" || t == "solar_open";
  o.Bool("attention_bias", qkv_only ? m.qkv_bias : m.o_bias);
  o.Bool("mlp_bias", m.mlp_bias);
  if (m.sliding_window > 0) o.Key("sliding_window", m.sliding_window);
}

// "[1, 3, 5]": the layers whose MLP is (`moe`) or is not an MoE block.
std::string LayerList(const ModelSpec& m, bool moe) {
  std::string list = "[";
  for (size_t i = 0; i < m.moe_layer.size(); ++i)
    if (m.moe_layer[i] == moe) list += (list.size() > 1 ? ", " : "") + std::to_string(i);
  return list + "]";
}

// A hybrid's layer_types list: `attention` for its 'A' layers, `mixer` for the others.
std::string LayerTypes(const ModelSpec& m, const char* attention, const char* mixer) {
  std::string types = "[";
  for (char c : m.hybrid) types += std::string(types.size() > 1 ? ", " : "") + (c == 'A' ? attention : mixer);
  return types + "]";
}

// A linear mixer's widths under the reader's keys for its family.
void LinearMixerWidths(Out& o, const std::string& model_type, const ModelSpec::LinearMixer& x) {
  const LinearMixerKeys& k = LinearMixerKeysOf(model_type);
  o.Key(k.heads.name, x.heads);
  o.Key(k.head_dim.name, x.head_dim);
  o.Key(k.groups.name, x.groups);
  o.Key(k.state.name, x.state);
  o.Key(k.conv_kernel.name, x.conv_kernel);
}

// DeepSeek's experts and the reader's rule for their layers: MoE where layer >=
// first_k_dense_replace and layer % moe_layer_freq == 0, written as the first MoE layer and the
// gap to the next one, which reads back to the same layers.
void DeepseekExperts(Out& o, const ModelSpec& m) {
  int64_t first_dense = 0;
  while (first_dense < m.layers && !m.moe_layer[static_cast<size_t>(first_dense)]) ++first_dense;
  int64_t freq = 1;
  for (int64_t l = first_dense + 1; l < m.layers; ++l)
    if (m.moe_layer[static_cast<size_t>(l)]) {
      freq = l - first_dense;
      break;
    }
  if (first_dense % freq != 0) freq = 1;  // not of the reader's form: keep every later layer MoE
  o.Key("n_routed_experts", m.experts);
  o.Key("n_shared_experts", m.shared_experts);
  o.Key("num_experts_per_tok", m.experts_per_token);
  o.Key("moe_intermediate_size", m.expert_intermediate);
  o.Key("first_k_dense_replace", first_dense);
  o.Key("moe_layer_freq", freq);
}

void MoeLayers(Out& o, const ModelSpec& m) {
  o.Key("mlp_only_layers", LayerList(m, false));
  o.Key("decoder_sparse_step", 1);
}

std::string Quoted(const std::string& s) { return YamlQuoted(s); }

std::string NameList(const std::vector<std::string>& names) {
  std::string list = "[";
  for (size_t i = 0; i < names.size(); ++i) list += (i ? ", " : "") + Quoted(names[i]);
  return list + "]";
}

// quantization_config in the keys of the method's own config class, so the reader
// rebuilds the same CheckpointQuant.
void Quantization(std::ostringstream& ss, const std::string& pad, const CheckpointQuant& q) {
  const std::string in = pad + "  ";
  ss << pad << "quantization_config:\n" << in << "quant_method: " << Quoted(q.method) << "\n";
  const std::string& m = q.method;
  if (m == "fbgemm_fp8" || m == "fp8") {
    if (q.block_rows > 0) ss << in << "weight_block_size: [" << q.block_rows << ", " << q.block_cols << "]\n";
    ss << in << "modules_to_not_convert: " << NameList(q.skip) << "\n";
  } else if (m == "gptq" || m == "awq" || m == "auto-round") {
    ss << in << "bits: " << q.bits << "\n" << in << "group_size: " << (q.group_size > 0 ? q.group_size : -1) << "\n";
    ss << in << "modules_to_not_convert: " << NameList(q.skip) << "\n";
  } else if (m == "eetq" || m == "mxfp4") {
    ss << in << "modules_to_not_convert: " << NameList(q.skip) << "\n";
  } else if (m == "bitsandbytes") {
    ss << in << (q.bits == 4 ? "load_in_4bit" : "load_in_8bit") << ": true\n";
    ss << in << "bnb_4bit_use_double_quant: " << (q.double_quant ? "true" : "false") << "\n";
    ss << in << "llm_int8_skip_modules: " << NameList(q.skip) << "\n";
  } else if (m == "modelopt") {
    ss << in << "quant_algo: " << (q.bits == 8 ? "\"FP8\"" : "\"NVFP4\"") << "\n";
    if (q.bits == 4) ss << in << "group_size: " << q.group_size << "\n";
    ss << in << "exclude_modules: " << NameList(q.skip) << "\n";
  } else {  // compressed-tensors
    ss << in << "config_groups:\n" << in << "  group_0:\n" << in << "    weights:\n";
    const std::string w = in + "      ";
    ss << w << "num_bits: " << q.bits << "\n" << w << "type: " << (q.float_format ? "float" : "int") << "\n";
    if (q.group_size > 0) ss << w << "group_size: " << q.group_size << "\n";
    else ss << w << "strategy: " << (q.group_size < 0 ? "tensor" : "channel") << "\n";
    ss << in << "ignore: " << NameList(q.skip) << "\n";
  }
}

}  // namespace

std::string ModelToYaml(const ModelSpec& m, int indent) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  const std::string& kind = m.vision.kind;
  const bool qwen_vit = kind == "qwen3_5" || kind == "qwen3_5_moe" || kind == "qwen3_vl" || kind == "qwen3_vl_moe";
  const bool llava = kind == "llava" || kind == "llava_next";
  if (kind == "gemma3" || kind == "mistral3" || qwen_vit || llava || kind == "internvl") {
    // These VLMs nest their text tower in text_config, beside vision_config and, at the top,
    // quantization_config (and Mistral 3's and LLaVA's projector settings).
    ModelSpec text = m;
    text.vision = {};
    text.quant = {};
    const ModelSpec::VisionTower& v = m.vision;
    std::ostringstream g;
    g << pad << "model_type: " << v.kind << "\n" << pad << "text_config:\n" << ModelToYaml(text, indent + 2);
    if (v.kind == "mistral3")
      g << pad << "spatial_merge_size: " << v.merge << "\n" << pad << "multimodal_projector_bias: "
        << (v.projector_bias ? "true" : "false") << "\n";
    const std::string in = pad + "  ";
    if (llava) {  // CLIP's keys, and the projector's and the head's settings at the top
      g << pad << "tie_word_embeddings: " << (m.tied_embeddings ? "true" : "false") << "\n" << pad
        << "multimodal_projector_bias: " << (v.projector_bias ? "true" : "false") << "\n" << pad << "vision_feature_layer: [";
      for (int64_t i = 0; i < v.feature_layers; ++i) g << (i ? ", " : "") << -2 - i;  // only their number counts
      g << "]\n" << pad << "vision_config:\n" << in << "model_type: clip_vision_model\n" << in << "num_hidden_layers: " << v.depth
        << "\n" << in << "hidden_size: " << v.width << "\n" << in << "intermediate_size: " << v.intermediate << "\n" << in
        << "patch_size: " << v.patch << "\n" << in << "image_size: " << v.image << "\n" << in << "num_channels: " << v.in_channels
        << "\n";
      if (m.quant.quantized()) Quantization(g, pad, m.quant);
      return g.str();
    }
    if (kind == "internvl") {  // transformers' InternVLConfig keys, whichever format was read
      g << pad << "downsample_ratio: " << 1.0 / static_cast<double>(v.merge) << "\n" << pad << "vision_config:\n" << in
        << "num_hidden_layers: " << v.depth << "\n" << in << "hidden_size: " << v.width << "\n" << in
        << "intermediate_size: " << v.intermediate << "\n" << in << "patch_size: " << v.patch << "\n" << in
        << "image_size: " << v.image << "\n" << in << "num_channels: " << v.in_channels << "\n" << in
        << "attention_bias: " << (v.qkv_bias ? "true" : "false") << "\n" << in << "use_qk_norm: " << (v.qk_norm ? "true" : "false")
        << "\n" << in << "norm_type: " << (v.rms_norm ? "rms_norm" : "layer_norm") << "\n";
      if (m.quant.quantized()) Quantization(g, pad, m.quant);
      return g.str();
    }
    if (qwen_vit) {  // the head's tie is the top level's to say
      g << pad << "tie_word_embeddings: " << (m.tied_embeddings ? "true" : "false") << "\n";
      g << pad << "vision_config:\n" << in << "depth: " << v.depth << "\n" << in << "hidden_size: " << v.width << "\n" << in
        << "intermediate_size: " << v.intermediate << "\n" << in << "patch_size: " << v.patch << "\n" << in
        << "temporal_patch_size: " << v.temporal_patch << "\n" << in << "in_channels: " << v.in_channels << "\n" << in
        << "spatial_merge_size: " << v.merge << "\n" << in << "out_hidden_size: " << v.out << "\n" << in
        << "num_position_embeddings: " << v.image << "\n";
      if (kind == "qwen3_vl" || kind == "qwen3_vl_moe") {
        g << in << "deepstack_visual_indexes: [";
        for (int64_t i = 0; i < v.deepstack; ++i) g << (i ? ", " : "") << i;  // only their number counts
        g << "]\n";
      }
      if (m.quant.quantized()) Quantization(g, pad, m.quant);
      return g.str();
    }
    g << pad << "vision_config:\n" << in << "num_hidden_layers: " << v.depth << "\n" << in << "hidden_size: " << v.width
      << "\n" << in << "intermediate_size: " << v.intermediate << "\n" << in << "patch_size: " << v.patch << "\n" << in
      << "num_channels: " << v.in_channels << "\n";
    if (v.kind == "gemma3")
      g << in << "image_size: " << v.image << "\n" << in << "vision_use_head: " << (v.pooling_head ? "true" : "false") << "\n";
    if (m.quant.quantized()) Quantization(g, pad, m.quant);
    return g.str();
  }
  Out o(indent);
  // A VLM writes its own model_type, its text keys at the top level and its vision_config.
  o.Key("model_type", m.vision.kind.empty() ? m.model_type : m.vision.kind);
  o.Key("dtype", DtypeName(m.dtype));
  const std::string& t = m.model_type;
  if (t == "gpt2" || t == "gptj" || t == "codegen" || t == "gpt_bigcode" || t == "gpt_neo") {
    const GptKeys& k = GptKeysOf(t);
    o.Key("vocab_size", m.vocab);
    o.Key(k.hidden, m.hidden);
    o.Key(k.layers, m.layers);
    o.Key(k.heads, m.heads);
    o.Key(k.positions, m.max_positions);
    // Left out when it is the config class's None (4h): a wide model's 4h can exceed the
    // largest width a config may state, and the reader derives it again.
    if (m.intermediate != 4 * m.hidden) o.Key(k.inner, m.intermediate);
    o.Bool("tie_word_embeddings", m.tied_embeddings);
    if (t == "gpt_bigcode") o.Bool("multi_query", m.kv_heads == 1 && m.heads != 1);
  } else if (t == "dbrx") {
    o.Key("vocab_size", m.vocab);
    o.Key("d_model", m.hidden);
    o.Key("n_layers", m.layers);
    o.Key("n_heads", m.heads);
    o.Key("max_seq_len", m.max_positions);
    o.Bool("tie_word_embeddings", m.tied_embeddings);
    o.Child("attn_config", "kv_n_heads", std::to_string(m.kv_heads));
    o.Key("ffn_config", "{ffn_hidden_size: " + std::to_string(m.expert_intermediate) + ", moe_num_experts: " +
                            std::to_string(m.experts) + ", moe_top_k: " + std::to_string(m.experts_per_token) + "}");
  } else if (t == "opt") {
    o.Key("vocab_size", m.vocab);
    o.Key("hidden_size", m.hidden);
    o.Key("ffn_dim", m.intermediate);
    o.Key("num_hidden_layers", m.layers);
    o.Key("num_attention_heads", m.heads);
    o.Key("max_position_embeddings", m.max_positions);
    o.Key("word_embed_proj_dim", m.word_embed_proj_dim > 0 ? m.word_embed_proj_dim : m.hidden);
    o.Bool("tie_word_embeddings", m.tied_embeddings);
    o.Bool("enable_bias", m.qkv_bias);
    o.Bool("do_layer_norm_before", m.final_norm);
  } else if (t == "bloom") {
    o.Key("vocab_size", m.vocab);
    o.Key("hidden_size", m.hidden);
    o.Key("n_layer", m.layers);
    o.Key("n_head", m.heads);
  } else if (t == "mpt") {
    o.Key("vocab_size", m.vocab);
    o.Key("d_model", m.hidden);
    o.Key("n_layers", m.layers);
    o.Key("n_heads", m.heads);
    o.Key("max_seq_len", m.max_positions);
    o.Key("expansion_ratio", m.intermediate / m.hidden);
    o.Bool("no_bias", !m.norm_bias);
    if (const char* impl = MptAttnImplName(m.attention_impl)) o.Child("attn_config", "attn_impl", impl);
  } else if (t == "falcon") {
    o.Key("vocab_size", m.vocab);
    o.Key("hidden_size", m.hidden);
    if (m.intermediate != 4 * m.hidden) o.Key("ffn_hidden_size", m.intermediate);  // absent: 4h, as n_inner
    o.Key("num_hidden_layers", m.layers);
    o.Key("num_attention_heads", m.heads);
    o.Key("max_position_embeddings", m.max_positions);
    o.Bool("tie_word_embeddings", m.tied_embeddings);
    o.Bool("bias", m.qkv_bias);
    o.Bool("alibi", m.position == PositionKind::kAlibi);
    // The older layout when it says it all (one KV head or all of them; one norm when
    // parallel, two when not), else the new one with its KV heads and norms.
    const bool old_arch = (m.kv_heads == 1 || m.kv_heads == m.heads) && m.norms_per_layer == (m.parallel_residual ? 1 : 2);
    o.Bool("new_decoder_architecture", !old_arch);
    if (old_arch) {
      o.Bool("multi_query", m.kv_heads == 1 && m.heads != 1);
      o.Bool("parallel_attn", m.parallel_residual);
    } else {
      o.Key("num_kv_heads", m.kv_heads);
      o.Key("num_ln_in_parallel_attn", m.norms_per_layer);
    }
  } else if (t == "chatglm" && m.mlp == MlpKind::kPlain) {  // ChatGLM-6B's first generation (ReadChatglm1)
    o.Key("vocab_size", m.vocab);
    o.Key("hidden_size", m.hidden);
    o.Key("inner_hidden_size", m.intermediate);
    o.Key("num_layers", m.layers);
    o.Key("num_attention_heads", m.heads);
    o.Key("max_sequence_length", m.max_positions);
    o.Bool("position_encoding_2d", true);
    o.Bool("tie_word_embeddings", m.tied_embeddings);
  } else if (t == "chatglm") {
    o.Key("padded_vocab_size", m.vocab);
    o.Key("hidden_size", m.hidden);
    o.Key("ffn_hidden_size", m.intermediate);
    o.Key("num_layers", m.layers);
    o.Key("num_attention_heads", m.heads);
    o.Key("kv_channels", m.head_dim);
    o.Bool("multi_query_attention", m.kv_heads != m.heads);
    o.Key("multi_query_group_num", m.kv_heads);
    o.Key("seq_length", m.max_positions);
    o.Bool("tie_word_embeddings", m.tied_embeddings);
    o.Bool("add_bias_linear", m.o_bias);
    o.Bool("add_qkv_bias", m.qkv_bias);
    o.Bool("rmsnorm", m.norm == NormKind::kRms);
  } else if (t == "internlm2" || t == "internlm" || t == "baichuan") {
    // Remote-code families whose heads are hidden / heads (no head_dim key); Baichuan has no
    // KV heads and takes its position kind from hidden_size, InternLM biases q/k/v/o with `bias`.
    LlamaDims(o, m, m.intermediate);
    if (t == "internlm2") o.Key("num_key_value_heads", m.kv_heads);
    o.Key(t == "baichuan" ? "model_max_length" : "max_position_embeddings", m.max_positions);
    o.Bool("tie_word_embeddings", m.tied_embeddings);
    if (t != "baichuan") o.Bool("bias", m.o_bias);
  } else if (t == "qwen") {  // Qwen-1: intermediate_size is twice the MLP's width
    LlamaDims(o, m, 2 * m.intermediate);
    o.Key("kv_channels", m.head_dim);
    o.Key("max_position_embeddings", m.max_positions);
    o.Bool("tie_word_embeddings", m.tied_embeddings);
    o.Bool("no_bias", !m.o_bias);
  } else {
    Common(o, m);
  }
  if (t == "gpt_neox") o.Bool("use_parallel_residual", m.parallel_residual);
  if (t == "stablelm") {
    o.Bool("use_qkv_bias", m.qkv_bias);
    o.Bool("qk_layernorm", m.qk_norm_whole);
    o.Bool("use_parallel_residual", m.parallel_residual);
  }
  if (t == "seed_oss") o.Bool("attention_out_bias", m.o_bias);
  if (t == "ernie4_5") o.Bool("use_bias", m.o_bias);
  // The sliding families: every how many layers one is global, and for those whose window
  // defaults to 4,096 when the key is absent, a window of none.
  if (t == "gemma3_text" || t == "cohere2" || t == "exaone4" || t == "olmo3" || t == "smollm3" || t == "ministral" ||
      t == "vaultgemma" || t == "exaone_moe" || t == "dots1") {
    if (m.sliding_window == 0 && t != "gemma3_text") o.Key("sliding_window", 0);
    if (t == "smollm3") o.Bool("use_sliding_window", m.sliding_window > 0);
    o.Key("sliding_window_pattern", m.sliding_window_pattern);
  }
  if (t == "cohere") o.Bool("use_qk_norm", m.qk_norm_whole);
  if (t == "olmoe" || t == "flex_olmo") {
    o.Key("num_experts", m.experts);
    o.Key("num_experts_per_tok", m.experts_per_token);
  }
  if (t == "mixtral" || t == "gpt_oss" || t == "phimoe" || t == "granitemoe" || t == "granitemoeshared") {
    o.Key("num_local_experts", m.experts);
    o.Key("num_experts_per_tok", m.experts_per_token);
    if (t == "phimoe") o.Bool("lm_head_bias", m.head_bias);
    if (t == "granitemoeshared") o.Key("shared_intermediate_size", m.shared_intermediate);
  } else if (t == "qwen2_moe" || t == "qwen3_moe" || t == "qwen3_vl_moe_text") {
    o.Key("num_experts", m.experts);
    o.Key("num_experts_per_tok", m.experts_per_token);
    o.Key("moe_intermediate_size", m.expert_intermediate);
    MoeLayers(o, m);
    if (t == "qwen2_moe") o.Key("shared_expert_intermediate_size", m.shared_intermediate);
  } else if (t == "deepseek" && m.is_moe()) {
    DeepseekExperts(o, m);
  } else if (t == "deepseek_v3" || t == "deepseek_v2" || t == "deepseek_v32" || t == "glm_moe_dsa") {
    DeepseekExperts(o, m);
    o.Key("q_lora_rank", m.q_lora_rank);
    o.Key("kv_lora_rank", m.kv_lora_rank);
    o.Key("qk_nope_head_dim", m.qk_nope_head_dim);
    o.Key("qk_rope_head_dim", m.qk_rope_head_dim);
    o.Key("v_head_dim", m.v_head_dim);
    o.Key("topk_method", m.router_bias ? "noaux_tc" : "greedy");
    o.Key("num_nextn_predict_layers", m.mtp_layers);
    if (m.index_heads > 0) {
      o.Key("index_n_heads", m.index_heads);
      o.Key("index_head_dim", m.index_head_dim);
      o.Key("index_topk", m.index_topk);
    }
  }
  if (m.expert_groups > 0) {
    o.Key("n_group", m.expert_groups);
    o.Key("topk_group", m.groups_per_token);
  }
  if (t == "minimax_m2") {
    o.Key("num_local_experts", m.experts);
    o.Key("num_experts_per_tok", m.experts_per_token);
    o.Bool("use_qk_norm", m.qk_norm_whole);
    o.Bool("use_routing_bias", m.router_bias);
  }
  if (t == "glm4_moe") {
    int64_t first_dense = 0;  // the reader's rule: every layer from first_k_dense_replace on is MoE
    while (first_dense < m.layers && !m.moe_layer[static_cast<size_t>(first_dense)]) ++first_dense;
    o.Key("n_routed_experts", m.experts);
    o.Key("n_shared_experts", m.shared_experts);
    o.Key("num_experts_per_tok", m.experts_per_token);
    o.Key("moe_intermediate_size", m.expert_intermediate);
    o.Key("first_k_dense_replace", first_dense);
    o.Bool("use_qk_norm", m.qk_norm);
    o.Key("num_nextn_predict_layers", m.mtp_layers);
  }
  if (t == "ernie4_5_moe") {  // the reader's rule: MoE from the first to the last MoE layer, every `interval`
    int64_t first = m.layers, last = -1, interval = 1;
    for (int64_t l = 0; l < m.layers; ++l) {
      if (!m.moe_layer[static_cast<size_t>(l)]) continue;
      if (last >= 0 && interval == 1) interval = l - last;
      first = std::min(first, l);
      last = l;
    }
    o.Bool("use_bias", m.o_bias);
    o.Key("moe_num_experts", m.experts);
    o.Key("moe_k", m.experts_per_token);
    o.Key("moe_num_shared_experts", m.shared_experts);
    o.Key("moe_intermediate_size", m.expert_intermediate);
    o.Key("moe_layer_start_index", first);
    o.Key("moe_layer_end_index", last < 0 ? 0 : last);
    o.Key("moe_layer_interval", interval);
  }
  if (t == "solar_open" || t == "exaone_moe" || t == "glm4_moe_lite" || t == "dots1") {
    const bool exaone = t == "exaone_moe";
    o.Key(exaone ? "num_experts" : "n_routed_experts", m.experts);
    o.Key(exaone ? "num_shared_experts" : "n_shared_experts", m.shared_experts);
    o.Key("num_experts_per_tok", m.experts_per_token);
    o.Key("moe_intermediate_size", m.expert_intermediate);
    if (t != "solar_open") {  // the reader's per-layer list
      std::string types = "[";
      for (size_t l = 0; l < m.moe_layer.size(); ++l) types += std::string(l ? ", " : "") + (m.moe_layer[l] ? "sparse" : "dense");
      o.Key("mlp_layer_types", types + "]");
    }
    if (t == "glm4_moe_lite") {
      o.Key("q_lora_rank", m.q_lora_rank);
      o.Key("kv_lora_rank", m.kv_lora_rank);
      o.Key("qk_nope_head_dim", m.qk_nope_head_dim);
      o.Key("qk_rope_head_dim", m.qk_rope_head_dim);
      o.Key("v_head_dim", m.v_head_dim);
      o.Key("num_nextn_predict_layers", m.mtp_layers);
    }
  }
  if (t == "apertus") o.Key("hidden_act", m.mlp_act_params > 0 ? "xielu" : "relu2");
  if (t == "mamba2") {  // head_dim (Common's) is the mixer's head width
    const ModelSpec::LinearMixer& x = m.linear;
    o.Key("num_heads", x.heads);
    o.Key("n_groups", x.groups);
    o.Key("state_size", x.state);
    o.Key("conv_kernel", x.conv_kernel);
    o.Key("chunk_size", x.chunk);
    o.Bool("use_conv_bias", x.conv_bias);
    o.Bool("use_bias", x.proj_bias);
  }
  if (t == "nemotron_h") {
    o.Key("hybrid_override_pattern", "\"" + m.hybrid + "\"");
    const ModelSpec::LinearMixer& x = m.linear;
    if (x.heads > 0) {
      LinearMixerWidths(o, t, x);
      o.Key("chunk_size", x.chunk);
      o.Bool("use_conv_bias", x.conv_bias);
      o.Bool("use_bias", x.proj_bias);
      o.Key("mamba_ssm_cache_dtype", DtypeName(x.ssm_cache));
    }
    o.Key("num_nextn_predict_layers", m.mtp_layers);
    if (m.is_moe()) {
      o.Key("n_routed_experts", m.experts);
      o.Key("num_experts_per_tok", m.experts_per_token);
      o.Key("moe_intermediate_size", m.expert_intermediate);
      o.Key("moe_shared_expert_intermediate_size", m.shared_intermediate);
      if (m.moe_latent > 0) o.Key("moe_latent_size", m.moe_latent);
    }
  }
  if (t == "qwen3_next" || t == "qwen3_5_text" || t == "qwen3_5_moe_text") {
    o.Key("layer_types", LayerTypes(m, "full_attention", "linear_attention"));
    o.Bool("attn_output_gate", m.attention_gate);
    if (m.linear.heads > 0) LinearMixerWidths(o, t, m.linear);
    if (m.is_moe()) {
      o.Key("num_experts", m.experts);
      o.Key("num_experts_per_tok", m.experts_per_token);
      o.Key("moe_intermediate_size", m.expert_intermediate);
      o.Key("shared_expert_intermediate_size", m.shared_intermediate);
      if (t == "qwen3_next") MoeLayers(o, m);
    }
  }
  if (t == "granitemoehybrid" || t == "bamba") {
    if (t == "bamba") {
      std::string attn = "[";
      for (size_t l = 0; l < m.hybrid.size(); ++l)
        if (m.hybrid[l] == 'A') attn += (attn.size() > 1 ? ", " : "") + std::to_string(l);
      o.Key("attn_layer_indices", attn + "]");
    } else {
      o.Key("layer_types", LayerTypes(m, "attention", "mamba"));
    }
    const ModelSpec::LinearMixer& x = m.linear;
    if (x.heads > 0) {
      LinearMixerWidths(o, t, x);
      o.Key("mamba_expand", x.inner() / m.hidden);  // the reader holds the width to mamba_expand x hidden_size
      o.Key("mamba_chunk_size", x.chunk);
      o.Bool("mamba_conv_bias", x.conv_bias);
      o.Bool("mamba_proj_bias", x.proj_bias);
    } else {  // no Mamba layer: any widths transformers' check accepts
      o.Key("mamba_n_heads", 1);
      o.Key("mamba_d_head", m.hidden);
      o.Key("mamba_expand", 1);
    }
    if (t == "granitemoehybrid") {
      o.Key("num_local_experts", m.experts);
      if (m.is_moe()) o.Key("num_experts_per_tok", m.experts_per_token);
      o.Key("shared_intermediate_size", m.is_moe() ? m.shared_intermediate : m.intermediate);
    }
  }
  if (t == "falcon_h1") {
    const ModelSpec::LinearMixer& x = m.linear;
    LinearMixerWidths(o, t, x);
    o.Key("mamba_d_ssm", x.inner());
    o.Key("mamba_chunk_size", x.chunk);
    o.Bool("mamba_conv_bias", x.conv_bias);
    o.Bool("mamba_proj_bias", x.proj_bias);
    o.Bool("projectors_bias", x.out_bias);
    o.Bool("mamba_rms_norm", x.norm);
  }
  if (t == "llama4_text") {
    // intermediate_size (written by Common as the dense MLP's) is the expert's here.
    o.Key("intermediate_size_mlp", m.intermediate);
    o.Key("num_local_experts", m.experts);
    o.Key("num_experts_per_tok", m.experts_per_token);
    o.Key("moe_layers", LayerList(m, true));
    if (m.sliding_window > 0 && m.sliding_window_pattern == 4) o.Key("attention_chunk_size", m.sliding_window);
  }
  std::string out = o.str();
  if (const ModelSpec::VisionTower& v = m.vision; !v.kind.empty()) {
    const std::string in = pad + "  ";
    std::ostringstream vs;
    vs << pad << "vision_config:\n" << in << "depth: " << v.depth << "\n" << in << "in_channels: " << v.in_channels << "\n"
       << in << "patch_size: " << v.patch << "\n" << in << "temporal_patch_size: " << v.temporal_patch << "\n" << in
       << "spatial_merge_size: " << v.merge << "\n";
    if (v.kind == "qwen2_5_vl")
      vs << in << "hidden_size: " << v.width << "\n" << in << "intermediate_size: " << v.intermediate << "\n" << in
         << "out_hidden_size: " << v.out << "\n";
    else  // mlp_ratio such that int(width x ratio), the reader's (and transformers') rule, is the same width
      vs << in << "embed_dim: " << v.width << "\n" << in << "mlp_ratio: " << std::setprecision(17)
         << (v.intermediate % v.width == 0 ? static_cast<double>(v.intermediate / v.width)
                                           : (static_cast<double>(v.intermediate) + 0.5) / static_cast<double>(v.width))
         << "\n" << in << "hidden_size: " << v.out << "\n";
    out += vs.str();
  }
  if (m.quant.quantized()) {
    std::ostringstream q;
    Quantization(q, pad, m.quant);
    out += q.str();
  }
  return out;
}

}  // namespace shardplan
