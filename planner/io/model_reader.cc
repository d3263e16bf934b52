#include "planner/io/model_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "configs/builtin.h"
#include "planner/io/hub_cache.h"
#include "planner/quantization.h"
#include "planner/strings.h"

namespace shardplan {
namespace {

// Defaults of the transformers config classes (configuration_<type>.py, __init__
// signatures), for the keys a sparse config.json may omit.
struct Defaults {
  int64_t vocab, hidden, intermediate, layers, heads, kv_heads;  // kv_heads 0 = heads
  int64_t head_dim;                                              // 0 = hidden / heads
  int64_t max_positions;
  bool tied;
  const char* layer_class;
};

const std::map<std::string, Defaults>& DefaultsTable() {
  static const std::map<std::string, Defaults> t = {
      {"llama", {32000, 4096, 11008, 32, 32, 0, 0, 2048, false, "LlamaDecoderLayer"}},
      {"mistral", {32000, 4096, 14336, 32, 32, 8, 0, 131072, false, "MistralDecoderLayer"}},
      {"mixtral", {32000, 4096, 14336, 32, 32, 8, 0, 131072, false, "MixtralDecoderLayer"}},
      {"qwen2", {151936, 4096, 22016, 32, 32, 32, 0, 32768, false, "Qwen2DecoderLayer"}},
      {"qwen2_moe", {151936, 2048, 5632, 24, 16, 16, 0, 32768, false, "Qwen2MoeDecoderLayer"}},
      {"qwen3", {151936, 4096, 22016, 32, 32, 32, 128, 32768, false, "Qwen3DecoderLayer"}},
      {"qwen3_moe", {151936, 2048, 6144, 24, 32, 4, 0, 32768, false, "Qwen3MoeDecoderLayer"}},
      {"gemma2", {256000, 2304, 9216, 26, 8, 4, 256, 8192, true, "Gemma2DecoderLayer"}},
      {"gemma3_text", {262208, 2304, 9216, 26, 8, 4, 256, 131072, true, "Gemma3DecoderLayer"}},
      {"deepseek_v3", {129280, 7168, 18432, 61, 128, 128, 0, 4096, false, "DeepseekV3DecoderLayer"}},
      {"deepseek_v2", {102400, 4096, 11008, 30, 32, 32, 0, 2048, false, "DeepseekV2DecoderLayer"}},
      // DeepSeek-V3.2 and GLM-5 (transformers DeepseekV32Config, GlmMoeDsaConfig): MLA and
      // DeepSeek MoE with the DSA lightning indexer in every layer.
      {"deepseek_v32", {129280, 7168, 18432, 61, 128, 128, 0, 163840, false, "DeepseekV32DecoderLayer"}},
      {"glm_moe_dsa", {154880, 6144, 12288, 78, 64, 64, 0, 202752, false, "GlmMoeDsaDecoderLayer"}},
      // MiniMaxM2Config (MiniMax-M2 / M2.1): GQA with q/k RMSNorms over the whole projections,
      // every layer MoE (intermediate_size is the expert's), a biased sigmoid router.
      {"minimax_m2", {200064, 3072, 1536, 62, 48, 8, 128, 196608, false, "MiniMaxM2DecoderLayer"}},
      {"gpt2", {50257, 768, 0, 12, 12, 0, 0, 1024, true, "GPT2Block"}},
      {"gpt_neox", {50432, 6144, 24576, 44, 64, 0, 0, 2048, false, "GPTNeoXLayer"}},
      // GPTJConfig (GPT-J-6B), CodeGenConfig, GPTNeoConfig (GPT-Neo 1.3B's widths) and
      // GPTBigCodeConfig (GPT-2's widths): their MLPs are 4h wide unless n_inner /
      // intermediate_size say otherwise (ReadGptj, ReadGptNeo, ReadGptBigCode).
      {"gptj", {50400, 4096, 0, 28, 16, 0, 0, 2048, false, "GPTJBlock"}},
      {"codegen", {50400, 4096, 0, 28, 16, 0, 0, 2048, false, "CodeGenBlock"}},
      {"gpt_neo", {50257, 2048, 0, 24, 16, 0, 0, 2048, true, "GPTNeoBlock"}},
      {"gpt_bigcode", {50257, 768, 0, 12, 12, 0, 0, 1024, true, "GPTBigCodeBlock"}},
      {"opt", {50272, 768, 3072, 12, 12, 0, 0, 2048, true, "OPTDecoderLayer"}},
      {"bloom", {250880, 64, 0, 2, 8, 0, 0, 0, true, "BloomBlock"}},
      {"mpt", {50368, 2048, 8192, 24, 16, 0, 0, 2048, true, "MptBlock"}},
      {"gpt_oss", {201088, 2880, 2880, 36, 64, 8, 64, 131072, false, "GptOssDecoderLayer"}},
      // transformers' config defaults for the llama-shaped families (configuration_*.py).
      {"gemma", {256000, 3072, 24576, 28, 16, 16, 256, 8192, true, "GemmaDecoderLayer"}},
      {"phi3", {32064, 3072, 8192, 32, 32, 0, 0, 4096, false, "Phi3DecoderLayer"}},
      {"granite", {32000, 4096, 11008, 32, 32, 0, 0, 2048, false, "GraniteDecoderLayer"}},
      {"starcoder2", {49152, 3072, 12288, 30, 24, 2, 0, 4096, true, "Starcoder2DecoderLayer"}},
      // NemotronConfig (Nemotron-4, Minitron): relu2 up/down MLP, LayerNorm1P with bias.
      // FalconConfig (Falcon 7B defaults): fused query_key_value, GELU 4h MLP, LayerNorm.
      {"falcon", {65024, 4544, 18176, 32, 71, 0, 0, 2048, true, "FalconDecoderLayer"}},
      {"nemotron", {256000, 6144, 24576, 32, 48, 0, 0, 4096, false, "NemotronDecoderLayer"}},
      // ChatGLM / GLM-4 remote code (configuration_chatglm.py, GLM-4-9B values): Megatron
      // names, fused query_key_value with grouped KV, SwiGLU dense_h_to_4h, RMSNorm.
      {"chatglm", {151552, 4096, 13696, 40, 32, 2, 128, 131072, false, "GLMBlock"}},
      // Llama4TextConfig (Llama 4 Scout): intermediate_size is the expert's, the dense
      // layers' MLP is intermediate_size_mlp.
      {"llama4_text", {202048, 5120, 8192, 48, 40, 8, 128, 131072, false, "Llama4TextDecoderLayer"}},
      // InternLM2 / 2.5 remote code (internlm/internlm2_5-7b configuration_internlm2.py): note
      // `bias` defaults to true there; the published configs set it false.
      {"internlm2", {103168, 4096, 11008, 32, 32, 0, 0, 2048, false, "InternLM2DecoderLayer"}},
      // Baichuan / Baichuan2 remote code (baichuan-inc/Baichuan2-13B-Base configuration_baichuan.py;
      // the 7B's decoder class is DecoderLayer, set by ReadBaichuan).
      {"baichuan", {64000, 5120, 13696, 40, 40, 0, 0, 4096, false, "BaichuanLayer"}},
      // transformers OlmoConfig, Olmo2Config, PhiConfig (Phi-1 defaults), CohereConfig (Command-R).
      {"olmo", {50304, 4096, 11008, 32, 32, 0, 0, 2048, false, "OlmoDecoderLayer"}},
      {"olmo2", {50304, 4096, 11008, 32, 32, 0, 0, 2048, false, "Olmo2DecoderLayer"}},
      // OlmoeConfig (OLMoE-1B-7B): every layer MoE, experts of intermediate_size.
      {"olmoe", {50304, 2048, 2048, 16, 16, 0, 0, 4096, false, "OlmoeDecoderLayer"}},
      {"phi", {51200, 2048, 8192, 24, 32, 0, 0, 2048, false, "PhiDecoderLayer"}},
      {"cohere", {256000, 8192, 22528, 40, 64, 0, 0, 8192, true, "CohereDecoderLayer"}},
      // Glm4MoeConfig (GLM-4.5 / 4.6 / 4.7 and GLM-4.5-Air): the class defaults are the Air's,
      // whose head_dim 128 the published configs state (4096 / 96 heads does not divide).
      {"glm4_moe", {151552, 4096, 10944, 46, 96, 8, 0, 131072, false, "Glm4MoeDecoderLayer"}},
      // NemotronHConfig (Nemotron-H, Nemotron Nano 2, Nemotron 3 Nano / Super): one mixer per
      // block, as hybrid_override_pattern lists them.
      {"nemotron_h", {131072, 4096, 21504, 52, 32, 8, 128, 4096, false, "NemotronHBlock"}},
      // Qwen3NextConfig (Qwen3-Next-80B-A3B), Qwen3_5TextConfig and Qwen3_5MoeTextConfig: Gated
      // DeltaNet and gated-attention layers (ReadGatedDeltaNetHybrid).
      {"qwen3_next", {151936, 2048, 5632, 48, 16, 2, 256, 32768, false, "Qwen3NextDecoderLayer"}},
      {"qwen3_5_text", {248320, 4096, 12288, 32, 16, 4, 256, 32768, false, "Qwen3_5DecoderLayer"}},
      {"qwen3_5_moe_text", {248320, 2048, 512, 40, 16, 2, 256, 32768, false, "Qwen3_5MoeDecoderLayer"}},
      // GraniteMoeConfig (Granite 3.0 MoE), GraniteMoeSharedConfig (Granite 3.1 MoE, a shared
      // MLP beside the experts) and GraniteMoeHybridConfig (Granite 4.0, ReadGraniteHybrid):
      // intermediate_size is the expert's.
      {"granitemoe", {32000, 4096, 11008, 32, 32, 0, 0, 2048, false, "GraniteMoeDecoderLayer"}},
      {"granitemoeshared", {32000, 4096, 11008, 32, 32, 0, 0, 2048, false, "GraniteMoeSharedDecoderLayer"}},
      {"granitemoehybrid", {32000, 4096, 11008, 32, 32, 0, 0, 2048, false, "GraniteMoeHybridDecoderLayer"}},
      // FalconH1Config (ReadFalconH1).
      {"falcon_h1", {128000, 4096, 14336, 32, 32, 8, 0, 8192, false, "FalconH1DecoderLayer"}},
      // BambaConfig (Bamba-9B's widths).
      {"bamba", {128000, 4096, 14336, 32, 32, 8, 0, 262144, false, "BambaDecoderLayer"}},
      // Qwen3VLTextConfig and Qwen3VLMoeTextConfig (a Qwen3-MoE layer: 60 experts, top 4, 1408 wide
      // by default, ReadQwenMoe). Whether the head is tied is the top-level config's to say.
      {"qwen3_vl_text", {151936, 4096, 22016, 32, 32, 32, 128, 128000, false, "Qwen3VLTextDecoderLayer"}},
      {"qwen3_vl_moe_text", {151936, 2048, 5632, 24, 16, 16, 0, 128000, false, "Qwen3VLMoeTextDecoderLayer"}},
      // Llama-shaped families with their own twists (ApplyFamily and the dispatch in
      // ParseModelNode): GlmConfig and Glm4Config (GLM-4 in transformers' own format, GLM-4-0414),
      // StableLmConfig, Cohere2Config (Command R7B, Command A), SmolLM3Config, SeedOssConfig,
      // Exaone4Config, Olmo3Config, Ernie4_5Config, PhimoeConfig (Phi-3.5-MoE).
      {"glm", {151552, 4096, 13696, 40, 32, 2, 128, 131072, false, "GlmDecoderLayer"}},
      {"glm4", {151552, 4096, 13696, 40, 32, 2, 128, 131072, false, "Glm4DecoderLayer"}},
      {"stablelm", {50304, 2560, 6912, 32, 32, 0, 0, 4096, false, "StableLmDecoderLayer"}},
      {"cohere2", {256000, 8192, 22528, 40, 64, 0, 0, 8192, true, "Cohere2DecoderLayer"}},
      {"smollm3", {128256, 2048, 11008, 36, 16, 4, 0, 32768, true, "SmolLM3DecoderLayer"}},
      {"seed_oss", {155136, 4096, 27648, 64, 80, 8, 128, 524288, false, "SeedOssDecoderLayer"}},
      {"exaone4", {102400, 4096, 16384, 32, 32, 0, 0, 2048, false, "Exaone4DecoderLayer"}},
      // EXAONE 3.0 / 3.5 remote code (LGAI-EXAONE, configuration_exaone.py): llama's shape
      // under GPT-2-style names (wte, h, ln_1/ln_2, attn.attention.q/k/v/out_proj, mlp.c_fc_0 /
      // c_fc_1 / c_proj, ln_f) and the layer count as num_layers. Values here are
      // EXAONE-3.5-7.8B's, as its published config states them.
      {"exaone", {102400, 4096, 14336, 32, 32, 8, 128, 32768, false, "ExaoneBlock"}},
      {"olmo3", {50304, 4096, 11008, 32, 32, 0, 0, 2048, false, "Olmo3DecoderLayer"}},
      {"ernie4_5", {103424, 1024, 3072, 18, 16, 2, 128, 131072, true, "Ernie4_5DecoderLayer"}},
      {"phimoe", {32064, 4096, 6400, 32, 32, 8, 0, 131072, false, "PhimoeDecoderLayer"}},
      // HunYuanDenseV1Config (Hunyuan dense: per-head q/k norms), HeliumConfig (o_proj never
      // biased), ArceeConfig (AFM: an up/down MLP with squared ReLU).
      {"hunyuan_v1_dense", {290943, 4096, 11008, 32, 32, 0, 0, 2048, false, "HunYuanDenseV1DecoderLayer"}},
      {"helium", {48000, 2560, 7040, 24, 20, 20, 128, 4096, false, "HeliumDecoderLayer"}},
      {"arcee", {32000, 2560, 18432, 32, 32, 0, 80, 4096, false, "ArceeDecoderLayer"}},
      // Remote-code families of 2023-24: Qwen (Qwen-1, configuration_qwen.py; ReadQwen1), InternLM
      // (InternLM-1, configuration_internlm.py), MiniCPM (configuration_minicpm.py: llama's keys,
      // the head tied by default) and DeepSeek-MoE (configuration_deepseek.py: dense unless
      // n_routed_experts is given).
      {"qwen", {151936, 4096, 22016, 32, 32, 0, 128, 8192, false, "QWenBlock"}},
      // InternLM3Config (InternLM3-8B): llama's layer, which transformers builds it as
      // (qkv_bias and bias are its names for attention_bias and mlp_bias).
      {"internlm3", {128512, 4096, 10240, 48, 32, 2, 128, 32768, false, "LlamaDecoderLayer"}},
      // MinistralConfig (Ministral-8B-2410: mistral's layer, sliding per layer_types) and
      // Ministral3Config (Ministral 3's text tower, mistral's layer).
      {"ministral", {32000, 4096, 14336, 32, 32, 8, 0, 131072, false, "MinistralDecoderLayer"}},
      {"ministral3", {131072, 4096, 14336, 34, 32, 8, 128, 262144, false, "Ministral3DecoderLayer"}},
      // VaultGemmaConfig (VaultGemma 1B): Gemma 2's attention and GeGLU without the post-norms.
      {"vaultgemma", {256000, 2304, 9216, 26, 8, 4, 256, 8192, true, "VaultGemmaDecoderLayer"}},
      // FlexOlmoConfig (FlexOlmo-7x7B): OLMo 2's layer with an OLMoE block of num_experts.
      {"flex_olmo", {100352, 4096, 11008, 32, 32, 0, 0, 4096, false, "FlexOlmoDecoderLayer"}},
      // SolarOpenConfig (Solar Open 100B), ExaoneMoeConfig (K-EXAONE) and Glm4MoeLiteConfig
      // (GLM-4.7-Flash): DeepSeek-style MoE (routed experts, shared experts of their width, the
      // router's e_score_correction_bias) behind GQA, GQA with per-head q/k norms, and MLA.
      {"solar_open", {196608, 4096, 1280, 48, 64, 8, 128, 131072, false, "SolarOpenDecoderLayer"}},
      {"exaone_moe", {102400, 4096, 16384, 32, 32, 32, 0, 2048, false, "ExaoneMoeDecoderLayer"}},
      {"glm4_moe_lite", {154880, 2048, 10240, 47, 20, 20, 256, 202752, false, "Glm4MoeLiteDecoderLayer"}},
      // Ernie4_5_MoeConfig (ERNIE-4.5-21B-A3B's widths; the 300B-A47B states its own) and
      // Dots1Config (dots.llm1: DeepSeek's MoE behind GQA with per-head q/k norms).
      {"ernie4_5_moe", {103424, 2560, 12288, 28, 20, 4, 0, 131072, true, "Ernie4_5_MoeDecoderLayer"}},
      // Mamba2Config (Mamba-Codestral-7B's widths): Nemotron-H's Mamba-2 block in every layer, no
      // attention and no MLP (the attention and MLP widths here are placeholders no layer uses).
      {"mamba2", {32768, 4096, 8192, 64, 32, 0, 0, 1 << 20, false, "Mamba2Block"}},
      // ApertusConfig (Apertus 8B's widths): an up/down MLP around xIELU, per-head q/k norms.
      {"apertus", {131072, 4096, 14336, 32, 32, 0, 0, 65536, false, "ApertusDecoderLayer"}},
      {"dots1", {152064, 4608, 10944, 62, 32, 32, 0, 2048, false, "Dots1DecoderLayer"}},
      {"internlm", {103168, 4096, 11008, 32, 32, 0, 0, 2048, false, "InternLMDecoderLayer"}},
      {"minicpm", {32000, 4096, 11008, 32, 32, 0, 0, 2048, true, "MiniCPMDecoderLayer"}},
      {"deepseek", {102400, 4096, 11008, 30, 32, 0, 0, 2048, false, "DeepseekDecoderLayer"}},
      // DbrxConfig (ReadDbrx): d_model 2048, 16 heads, 24 layers; attn_config and ffn_config
      // carry the KV heads and the experts.
      {"dbrx", {32000, 2048, 3584, 24, 16, 1, 0, 2048, false, "DbrxBlock"}},
  };
  return t;
}

// Multimodal wrappers (Gemma3ForConditionalGeneration, Llama4ForConditionalGeneration) nest
// the text tower in text_config, which HF writes sparsely. Gemma 3's vision encoder is
// counted apart (ReadSiglipVision) and held frozen; Llama 4's and Mistral 3's are not counted.
const std::map<std::string, std::string> kTextTowers = {
    {"gemma3", "gemma3_text"}, {"llama4", "llama4_text"},
    // Mistral Small 3.1 / 3.2 (Mistral3ForConditionalGeneration): a mistral text tower.
    {"mistral3", "mistral"},
    // Kimi K2.5: the Kimi K2 text tower (transformers Kimi_K25Config reads it as deepseek_v3).
    {"kimi_k25", "kimi_k2"},
    // Qwen3.5 (Qwen3_5ForConditionalGeneration): Gated DeltaNet text towers and a ViT counted
    // apart (ReadQwen35Vision).
    {"qwen3_5", "qwen3_5_text"}, {"qwen3_5_moe", "qwen3_5_moe_text"},
    // Qwen3-VL (Qwen3VLForConditionalGeneration, Qwen3VLMoeForConditionalGeneration): Qwen3 and
    // Qwen3-MoE text towers, the Qwen3.5 ViT with deepstack mergers (ReadQwen35Vision).
    {"qwen3_vl", "qwen3_vl_text"}, {"qwen3_vl_moe", "qwen3_vl_moe_text"}};

// Model types whose configs carry another family's keys and modules under their own name.
// Kimi K2 is DeepSeek-V3's architecture (384 routed experts, 64 heads); Moonshot names it
// kimi_k2 so that engines can tell the two apart, and transformers reads it as deepseek_v3.
// Falcon's configs before transformers took the family in (the remote-code RWConfig):
// "RefinedWebModel" is Falcon-7B's layer, "RefinedWeb" Falcon-40B's (the new decoder
// architecture, which ReadFalcon takes as given for it).
const std::map<std::string, std::string> kSameArchitecture = {
    {"kimi_k2", "deepseek_v3"}, {"RefinedWebModel", "falcon"}, {"RefinedWeb", "falcon"}};

// Keys we read, per naming scheme; used to catch misspellings.
const std::vector<std::string> kCommonKeys = {
    "model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings",
    "tie_word_embeddings", "attention_bias", "mlp_bias", "hidden_act", "torch_dtype", "dtype",
    "num_local_experts", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
    "shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers", "n_routed_experts",
    "n_shared_experts", "num_shared_experts", "moe_num_experts", "moe_k", "moe_num_shared_experts",
    "moe_layer_start_index", "moe_layer_end_index", "moe_layer_interval", "max_window_layers", "num_heads",
    "state_size", "mlp_layer_types", "qkv_bias", "first_k_dense_replace", "moe_layer_freq", "q_lora_rank", "kv_lora_rank",
    "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "topk_method", "num_nextn_predict_layers",
    "sliding_window", "sliding_window_pattern", "text_config", "n_embd", "n_layer", "n_head",
    "n_positions", "n_inner", "ffn_dim", "word_embed_proj_dim", "enable_bias",
    "do_layer_norm_before", "use_parallel_residual", "d_model", "n_heads", "n_layers", "expansion_ratio",
    "max_seq_len", "no_bias", "hidden_activation", "activation_function", "use_bias",
    "quantization_config", "intermediate_size_mlp", "interleave_moe_layer_step", "moe_layers",
    "attention_chunk_size", "no_rope_layers", "use_qk_norm", "hybrid_override_pattern", "layers_block_type",
    "mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel", "chunk_size", "use_conv_bias",
    "mamba_proj_bias", "use_bias", "moe_shared_expert_intermediate_size", "moe_latent_size", "mlp_hidden_act",
    "mamba_hidden_act", "attention_head_dim", "mamba_ssm_cache_dtype", "n_group", "topk_group", "expand",
    "layer_types", "full_attention_interval", "linear_conv_kernel_dim", "linear_key_head_dim", "linear_value_head_dim",
    "linear_num_key_heads", "linear_num_value_heads", "shared_expert_intermediate_size", "attn_output_gate", "index_n_heads", "index_head_dim", "index_topk",
    "use_routing_bias", "partial_rotary_factor", "ffn_hidden_size", "num_mtp_layers",
    "num_kv_heads", "n_head_kv", "new_decoder_architecture", "multi_query", "parallel_attn", "bias",
    "num_layers", "padded_vocab_size", "kv_channels", "multi_query_attention", "multi_query_group_num",
    "seq_length", "add_bias_linear", "add_qkv_bias", "rmsnorm", "post_layer_norm",
    "num_ln_in_parallel_attn", "alibi", "attn_config", "model_max_length", "qk_layernorm", "clip_qkv", "logit_scale",
    "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state", "mamba_d_conv", "mamba_expand", "mamba_chunk_size",
    "mamba_conv_bias", "shared_intermediate_size", "position_embedding_type", "embedding_multiplier",
    "residual_multiplier", "attention_multiplier", "logits_scaling", "attn_layer_indices", "vision_feature_layer",
    "multimodal_projector_bias", "mamba_d_ssm", "mamba_rms_norm", "mamba_norm_before_gate", "projectors_bias",
    "lm_head_multiplier", "mlp_multipliers", "key_multiplier", "attention_out_multiplier", "attention_in_multiplier",
    "ssm_multipliers", "ssm_in_multiplier", "ssm_out_multiplier", "rotary_dim", "rotary_pct", "rope_pct", "rotary_emb_base", "n_ctx", "num_heads",
    "attention_types", "attention_layers", "window_size", "use_qkv_bias", "use_parallel_residual",
    "attention_out_bias", "lm_head_bias", "use_sliding_window", "no_rope_layers", "no_rope_layer_interval",
    "ffn_config", "scale_emb", "dim_model_base", "scale_depth", "use_flash_attn", "use_logn_attn",
    "use_dynamic_ntk", "inner_hidden_size", "max_sequence_length", "position_encoding_2d"};

struct Reader {
  const Document& doc;
  const YAML::Node& node;

  StatusOr<int64_t> Int(const char* key, int64_t fallback, int64_t min, int64_t max) const {
    SP_ASSIGN_OR_RETURN(std::optional<int64_t> v, doc.Int(node, key, min, max));
    return v.value_or(fallback);
  }
  StatusOr<bool> Bool(const char* key, bool fallback) const {
    SP_ASSIGN_OR_RETURN(std::optional<bool> v, doc.Bool(node, key));
    return v.value_or(fallback);
  }
  StatusOr<std::string> Str(const char* key, const std::string& fallback) const {
    SP_ASSIGN_OR_RETURN(std::optional<std::string> v, doc.String(node, key));
    return v.value_or(fallback);
  }
  bool Has(const char* key) const { return node[key].IsDefined() && !node[key].IsNull(); }
};

constexpr int64_t kMaxDim = int64_t{1} << 22;      // 4M: wider than any real hidden/FFN/vocab... 
constexpr int64_t kMaxVocab = int64_t{1} << 28;    // 268M rows
constexpr int64_t kMaxLayers = 100000;

Status ReadDtype(const Reader& r, ModelSpec& m) {
  for (const char* key : {"dtype", "torch_dtype"}) {
    SP_ASSIGN_OR_RETURN(std::optional<std::string> s, r.doc.String(r.node, key));
    if (!s) continue;
    std::optional<Dtype> d = ParseDtype(*s);
    if (!d) return r.doc.ErrorAt(r.node[key], std::string(key) + ": expected a dtype like \"bfloat16\", got \"" + *s + "\"");
    m.dtype = *d;
    return Status::Ok();
  }
  return Status::Ok();
}

// vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads: the
// dimensions every family written with llama's key names states.
Status ReadLlamaDims(const Reader& r, const Defaults& d, ModelSpec& m) {
  SP_ASSIGN_OR_RETURN(m.vocab, r.Int("vocab_size", d.vocab, 1, kMaxVocab));
  SP_ASSIGN_OR_RETURN(m.hidden, r.Int("hidden_size", d.hidden, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.intermediate, r.Int("intermediate_size", d.intermediate, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.layers, r.Int("num_hidden_layers", d.layers, 1, kMaxLayers));
  SP_ASSIGN_OR_RETURN(m.heads, r.Int("num_attention_heads", d.heads, 1, 1 << 16));
  return Status::Ok();
}

// Keys shared by the llama-like families (llama, mistral, mixtral, qwen*, gemma*, deepseek).
Status ReadCommon(const Reader& r, const Defaults& d, ModelSpec& m) {
  SP_RETURN_IF_ERROR(ReadLlamaDims(r, d, m));
  SP_ASSIGN_OR_RETURN(m.kv_heads, r.Int("num_key_value_heads", d.kv_heads ? d.kv_heads : m.heads, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.max_positions, r.Int("max_position_embeddings", d.max_positions, 1, int64_t{1} << 34));
  SP_ASSIGN_OR_RETURN(m.tied_embeddings, r.Bool("tie_word_embeddings", d.tied));
  if (r.Has("head_dim")) {
    SP_ASSIGN_OR_RETURN(m.head_dim, r.Int("head_dim", 0, 1, 1 << 16));
  } else if (d.head_dim) {
    m.head_dim = d.head_dim;
  } else {
    if (m.hidden % m.heads != 0)
      return r.doc.ErrorAt(r.node["num_attention_heads"].IsDefined() ? r.node["num_attention_heads"] : r.node,
                           "num_attention_heads (" + std::to_string(m.heads) + ") does not divide hidden_size (" +
                               std::to_string(m.hidden) + ") and no head_dim is given");
    m.head_dim = m.hidden / m.heads;
  }
  SP_ASSIGN_OR_RETURN(bool attention_bias, r.Bool("attention_bias", false));
  m.qkv_bias = m.o_bias = attention_bias;
  SP_ASSIGN_OR_RETURN(m.mlp_bias, r.Bool("mlp_bias", false));
  SP_ASSIGN_OR_RETURN(int64_t window, r.Int("sliding_window", 0, 0, int64_t{1} << 34));
  m.sliding_window = window;
  return ReadDtype(r, m);
}

void MarkAllMoe(ModelSpec& m) { m.moe_layer.assign(static_cast<size_t>(m.layers), true); }

// A list of layer indices (mlp_only_layers, moe_layers); with `layers` > 0 each must name one
// of the model's layers.
StatusOr<std::vector<int64_t>> ReadLayerList(const Reader& r, const char* key, int64_t layers) {
  std::vector<int64_t> out;
  if (!r.Has(key)) return out;
  const YAML::Node list = r.node[key];
  if (!list.IsSequence()) return r.doc.ErrorAt(list, std::string(key) + ": expected a list of layer indices");
  const std::string expected = layers > 0 ? "a layer index from 0 to " + std::to_string(layers - 1) : "a layer index";
  for (const auto& item : list) {
    int64_t l = -1;
    bool parsed = true;
    try {
      l = item.as<int64_t>();
    } catch (const YAML::Exception&) {
      parsed = false;
    }
    if (!parsed || (layers > 0 && (l < 0 || l >= layers)))
      return r.doc.ErrorAt(item, std::string(key) + ": expected " + expected + ", got \"" + item.Scalar() + "\"");
    out.push_back(l);
  }
  return out;
}

Status ReadQwenMoe(const Reader& r, ModelSpec& m, int64_t experts, int64_t topk, int64_t moe_inter) {
  SP_ASSIGN_OR_RETURN(m.experts, r.Int("num_experts", experts, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok", topk, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.expert_intermediate, r.Int("moe_intermediate_size", moe_inter, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(int64_t step, r.Int("decoder_sparse_step", 1, 1, kMaxLayers));
  SP_ASSIGN_OR_RETURN(std::vector<int64_t> mlp_only, ReadLayerList(r, "mlp_only_layers", 0));
  // transformers: MoE where layer not in mlp_only_layers and (layer + 1) % decoder_sparse_step == 0
  m.moe_layer.assign(static_cast<size_t>(m.layers), false);
  for (int64_t l = 0; l < m.layers; ++l)
    m.moe_layer[static_cast<size_t>(l)] =
        std::find(mlp_only.begin(), mlp_only.end(), l) == mlp_only.end() && (l + 1) % step == 0;
  return Status::Ok();
}

// The DSA lightning indexer of DeepSeek-V3.2 and GLM-5: index_n_heads (DeepseekV32Config 64,
// GlmMoeDsaConfig 32) heads of index_head_dim, each query attending to index_topk keys.
Status ReadIndexer(const Reader& r, ModelSpec& m, int64_t heads) {
  SP_ASSIGN_OR_RETURN(m.index_heads, r.Int("index_n_heads", heads, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.index_head_dim, r.Int("index_head_dim", 128, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.index_topk, r.Int("index_topk", 2048, 1, int64_t{1} << 34));
  return Status::Ok();
}

// DeepSeek's MoE layers (DeepSeek-MoE, V2, V3): n_routed_experts of moe_intermediate_size, the
// shared ones as wide, in layers from first_k_dense_replace on that are multiples of
// moe_layer_freq. `d` holds the config class's defaults; 0 routed experts is a dense model.
struct DeepseekMoeDefaults {
  int64_t experts, shared, topk, width, first_dense;
};

Status ReadDeepseekExperts(const Reader& r, ModelSpec& m, const DeepseekMoeDefaults& d) {
  SP_ASSIGN_OR_RETURN(m.experts, r.Int("n_routed_experts", d.experts, d.experts > 0 ? 1 : 0, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.shared_experts, r.Int("n_shared_experts", d.shared, 0, 1 << 10));
  SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok", d.topk, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.expert_intermediate, r.Int("moe_intermediate_size", d.width, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(int64_t first_dense, r.Int("first_k_dense_replace", d.first_dense, 0, kMaxLayers));
  SP_ASSIGN_OR_RETURN(int64_t freq, r.Int("moe_layer_freq", 1, 1, kMaxLayers));
  if (m.experts == 0) {  // DeepseekConfig's n_routed_experts None: every layer dense
    m.shared_experts = m.experts_per_token = m.expert_intermediate = 0;
    return Status::Ok();
  }
  m.shared_intermediate = m.expert_intermediate;
  m.moe_layer.assign(static_cast<size_t>(m.layers), false);
  for (int64_t l = 0; l < m.layers; ++l) m.moe_layer[static_cast<size_t>(l)] = l >= first_dense && l % freq == 0;
  return Status::Ok();
}

// DeepSeek-V2 shares V3's MLA and routed/shared experts; its config defaults differ
// (configuration_deepseek_v2.py: 160 routed and 2 shared experts of 1407, top-6, greedy
// routing without a correction bias, the first layer dense).
Status ReadDeepseek(const Reader& r, ModelSpec& m, bool v2) {
  m.attention = AttentionKind::kMla;
  m.kv_heads = m.heads;  // MLA has no separate KV heads; every head reads the shared latent
  SP_RETURN_IF_ERROR(ReadDeepseekExperts(r, m, v2 ? DeepseekMoeDefaults{160, 2, 6, 1407, 1} : DeepseekMoeDefaults{256, 1, 8, 2048, 3}));
  SP_ASSIGN_OR_RETURN(m.q_lora_rank, r.Int("q_lora_rank", 1536, 0, kMaxDim));
  if (r.node["q_lora_rank"].IsDefined() && r.node["q_lora_rank"].IsNull()) m.q_lora_rank = 0;  // None: q from h
  SP_ASSIGN_OR_RETURN(m.kv_lora_rank, r.Int("kv_lora_rank", 512, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.qk_nope_head_dim, r.Int("qk_nope_head_dim", 128, 0, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.qk_rope_head_dim, r.Int("qk_rope_head_dim", 64, 0, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.v_head_dim, r.Int("v_head_dim", 128, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(std::string topk_method, r.Str("topk_method", v2 ? "greedy" : "noaux_tc"));
  SP_ASSIGN_OR_RETURN(m.mtp_layers, r.Int("num_nextn_predict_layers", 0, 0, 64));
  m.router_bias = topk_method == "noaux_tc";  // e_score_correction_bias
  m.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
  return Status::Ok();
}

// GLM-4.5 and its successors (transformers modeling_glm4_moe.py): llama-style GQA attention
// whose q, k and v carry biases under attention_bias (o never), per-head q/k RMSNorms under
// use_qk_norm, dense MLPs on the first first_k_dense_replace layers and DeepSeek-style MoE
// after them: n_routed_experts of moe_intermediate_size, n_shared_experts folded into one
// always-on MLP, a sigmoid router with its e_score_correction_bias. The multi-token
// prediction layers (num_nextn_predict_layers) ship in the checkpoint but are not built.
// GLM-4.5-Air counts 106,852,251,264 parameters ("106B total, 12B active").
Status ReadGlm4Moe(const Reader& r, ModelSpec& m) {
  SP_ASSIGN_OR_RETURN(m.experts, r.Int("n_routed_experts", 128, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.shared_experts, r.Int("n_shared_experts", 1, 0, 1 << 10));
  SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok", 8, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.expert_intermediate, r.Int("moe_intermediate_size", 1408, 1, kMaxDim));
  m.shared_intermediate = m.expert_intermediate;
  SP_ASSIGN_OR_RETURN(int64_t first_dense, r.Int("first_k_dense_replace", 1, 0, kMaxLayers));
  SP_ASSIGN_OR_RETURN(m.qk_norm, r.Bool("use_qk_norm", false));
  SP_ASSIGN_OR_RETURN(m.mtp_layers, r.Int(r.Has("num_mtp_layers") ? "num_mtp_layers" : "num_nextn_predict_layers", 0, 0, 64));
  m.o_bias = false;
  m.router_bias = true;
  m.moe_layer.assign(static_cast<size_t>(m.layers), false);
  for (int64_t l = first_dense; l < m.layers; ++l) m.moe_layer[static_cast<size_t>(l)] = true;
  return Status::Ok();
}

// mlp_layer_types ("dense" or "sparse" per layer) where a config lists them, else the first
// `first_dense` layers dense (first_k_dense_replace) and the rest MoE.
Status ReadMlpLayerTypes(const Reader& r, ModelSpec& m, int64_t first_dense) {
  m.moe_layer.assign(static_cast<size_t>(m.layers), false);
  if (r.Has("mlp_layer_types")) {
    const YAML::Node types = r.node["mlp_layer_types"];
    const std::string expected =
        "mlp_layer_types: expected " + std::to_string(m.layers) + " entries (one per layer), \"dense\" or \"sparse\"";
    if (!types.IsSequence() || static_cast<int64_t>(types.size()) != m.layers) return r.doc.ErrorAt(types, expected);
    for (size_t l = 0; l < types.size(); ++l) {
      const std::string name = types[l].IsScalar() ? types[l].Scalar() : "";
      if (name != "dense" && name != "sparse") return r.doc.ErrorAt(types[l], expected + ", got \"" + name + "\"");
      m.moe_layer[l] = name == "sparse";
    }
    return Status::Ok();
  }
  SP_ASSIGN_OR_RETURN(first_dense, r.Int("first_k_dense_replace", first_dense, 0, kMaxLayers));
  for (int64_t l = first_dense; l < m.layers; ++l) m.moe_layer[static_cast<size_t>(l)] = true;
  return Status::Ok();
}

Status ReadSlidingLayers(const Reader& r, ModelSpec& m, int64_t fallback);

// ERNIE 4.5's MoE (transformers modeling_ernie4_5_moe.py): layer l is MoE when
// moe_layer_start_index <= l <= moe_layer_end_index (-1: the last) and (l + 1) is a multiple of
// moe_layer_interval; moe_num_experts SwiGLU experts of moe_intermediate_size, top moe_k, one
// shared MLP of moe_num_shared_experts x that width, a bias-free gate and its
// e_score_correction_bias; use_bias on every attention, MLP (the shared one too) and head
// projection, not on the routed experts. ERNIE-4.5-21B-A3B counts 21,825,437,888 parameters.
Status ReadErnieMoe(const Reader& r, ModelSpec& m) {
  SP_ASSIGN_OR_RETURN(m.experts, r.Int("moe_num_experts", 64, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("moe_k", 6, 1, m.experts));
  SP_ASSIGN_OR_RETURN(m.shared_experts, r.Int("moe_num_shared_experts", 2, 0, 1 << 10));
  SP_ASSIGN_OR_RETURN(m.expert_intermediate, r.Int("moe_intermediate_size", 1536, 1, kMaxDim));
  m.shared_intermediate = m.expert_intermediate;
  SP_ASSIGN_OR_RETURN(int64_t start, r.Int("moe_layer_start_index", 1, 0, kMaxLayers));
  SP_ASSIGN_OR_RETURN(int64_t end, r.Int("moe_layer_end_index", -1, -1, kMaxLayers));
  SP_ASSIGN_OR_RETURN(int64_t every, r.Int("moe_layer_interval", 1, 1, kMaxLayers));
  if (end < 0) end = m.layers - 1;
  m.moe_layer.assign(static_cast<size_t>(m.layers), false);
  for (int64_t l = 0; l < m.layers; ++l) m.moe_layer[static_cast<size_t>(l)] = l >= start && l <= end && (l + 1) % every == 0;
  SP_ASSIGN_OR_RETURN(bool bias, r.Bool("use_bias", false));
  m.qkv_bias = m.o_bias = m.mlp_bias = m.head_bias = m.shared_expert_bias = bias;
  m.router_bias = true;
  return Status::Ok();
}

// Solar Open, K-EXAONE, GLM-4.7-Flash and dots.llm1 (transformers modeling_solar_open.py,
// modeling_exaone_moe.py, modeling_glm4_moe_lite.py, modeling_dots1.py): DeepSeek-V3's MoE block
// (routed SwiGLU experts of moe_intermediate_size, one shared MLP of that width times the shared
// count, a bias-free router with its e_score_correction_bias) under four attentions. Solar Open:
// GQA, q/k/v biased under attention_bias and every layer MoE. K-EXAONE: GQA with per-head q_norm
// and k_norm, no biases, three of every four layers sliding. GLM-4.7-Flash: DeepSeek's MLA.
// dots.llm1: GQA with per-head q/k norms, full attention. Solar Open's class defaults count
// 102,651,793,408 parameters and 6,144 router correction biases.
Status ReadSharedExpertMoe(const Reader& r, const std::string& type, ModelSpec& m) {
  const bool exaone = type == "exaone_moe", glm = type == "glm4_moe_lite";
  if (type == "dots1") {  // Dots1Config: the experts' counts are None unless the file gives them
    for (const char* key : {"n_routed_experts", "num_experts_per_tok"})
      if (!r.Has(key)) return r.doc.ErrorAt(r.node, std::string("dots1: expected ") + key + " (Dots1Config has no default)");
  }
  SP_ASSIGN_OR_RETURN(m.experts, r.Int(exaone ? "num_experts" : "n_routed_experts", exaone ? 64 : glm ? 64 : 128, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.shared_experts, r.Int(exaone ? "num_shared_experts" : "n_shared_experts", 1, 0, 1 << 10));
  SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok", glm ? 4 : 8, 1, m.experts));
  SP_ASSIGN_OR_RETURN(m.expert_intermediate, r.Int("moe_intermediate_size", exaone ? 1024 : glm ? 1536 : 1280, 1, kMaxDim));
  m.shared_intermediate = m.expert_intermediate;
  m.router_bias = true;
  if (type == "dots1") {  // per-head q/k norms; full attention unless layer_types says otherwise
    m.qk_norm = true;
    m.o_bias = false;
    if (!r.Has("layer_types") && !r.Has("sliding_window_pattern")) m.sliding_window = 0;
    SP_RETURN_IF_ERROR(ReadSlidingLayers(r, m, 0));
    return ReadMlpLayerTypes(r, m, 0);
  }
  if (type == "solar_open") {  // SolarOpenConfig has no first_k_dense_replace: every layer MoE
    MarkAllMoe(m);
    m.o_bias = false;
    return Status::Ok();
  }
  SP_RETURN_IF_ERROR(ReadMlpLayerTypes(r, m, 1));
  if (exaone) {
    m.qk_norm = true;
    m.qkv_bias = m.o_bias = false;
    if (!r.Has("sliding_window")) m.sliding_window = 4096;
    return ReadSlidingLayers(r, m, 4);
  }
  m.attention = AttentionKind::kMla;
  m.kv_heads = m.heads;
  SP_ASSIGN_OR_RETURN(m.q_lora_rank, r.Int("q_lora_rank", 768, 0, kMaxDim));
  if (r.node["q_lora_rank"].IsDefined() && r.node["q_lora_rank"].IsNull()) m.q_lora_rank = 0;
  SP_ASSIGN_OR_RETURN(m.kv_lora_rank, r.Int("kv_lora_rank", 512, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.qk_nope_head_dim, r.Int("qk_nope_head_dim", 192, 0, 1 << 16));
  // Glm4MoeLiteConfig maps head_dim onto qk_rope_head_dim.
  SP_ASSIGN_OR_RETURN(m.qk_rope_head_dim, r.Int(r.Has("qk_rope_head_dim") ? "qk_rope_head_dim" : "head_dim", 64, 0, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.v_head_dim, r.Int("v_head_dim", 256, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.mtp_layers, r.Int("num_nextn_predict_layers", 0, 0, 64));
  m.qkv_bias = m.o_bias = false;
  m.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
  return Status::Ok();
}

// A linear mixer's widths under its family's keys (LinearMixerKeysOf); the groups must divide
// the heads, and the widths stay within a real model's. `auto_inner` > 0: the head width may be
// "auto" (or absent), auto_inner / heads, and heads x head width must equal auto_inner
// (GraniteMoeHybridConfig.validate_architecture).
Status ReadLinearMixerWidths(const Reader& r, const std::string& type, ModelSpec::LinearMixer& x, int64_t auto_inner = 0) {
  const LinearMixerKeys& k = LinearMixerKeysOf(type);
  SP_ASSIGN_OR_RETURN(x.heads, r.Int(k.heads.name, k.heads.fallback, 1, 1 << 16));
  const YAML::Node hd = r.node[k.head_dim.name];
  if (auto_inner > 0 && (!r.Has(k.head_dim.name) || (hd.IsScalar() && hd.Scalar() == "auto"))) {
    if (auto_inner % x.heads != 0)
      return r.doc.ErrorAt(r.node[k.heads.name].IsDefined() ? r.node[k.heads.name] : r.node,
                           std::string(k.heads.name) + " (" + std::to_string(x.heads) + ") must divide the Mamba width (" +
                               std::to_string(auto_inner) + ", mamba_expand x hidden_size)");
    x.head_dim = auto_inner / x.heads;
  } else {
    SP_ASSIGN_OR_RETURN(x.head_dim, r.Int(k.head_dim.name, k.head_dim.fallback, 1, 1 << 16));
  }
  if (auto_inner > 0 && x.inner() != auto_inner)
    return r.doc.ErrorAt(r.node[k.head_dim.name].IsDefined() ? r.node[k.head_dim.name] : r.node,
                         std::string(k.heads.name) + " x " + k.head_dim.name + " (" + std::to_string(x.inner()) +
                             ") must equal mamba_expand x hidden_size (" + std::to_string(auto_inner) + ")");
  SP_ASSIGN_OR_RETURN(x.groups, r.Int(k.groups.name, k.groups.fallback, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(x.state, r.Int(k.state.name, k.state.fallback, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(x.conv_kernel, r.Int(k.conv_kernel.name, k.conv_kernel.fallback, 1, 1 << 10));
  if (x.heads % x.groups != 0)
    return r.doc.ErrorAt(r.node[k.groups.name].IsDefined() ? r.node[k.groups.name] : r.node,
                         std::string(k.groups.name) + " (" + std::to_string(x.groups) + ") must divide " + k.heads.name + " (" +
                             std::to_string(x.heads) + ")");
  if (x.inner() > kMaxDim || x.groups * x.state > kMaxDim)
    return r.doc.ErrorAt(r.node, std::string(k.heads.name) + " x " + k.head_dim.name + " or " + k.groups.name + " x " +
                                     k.state.name + " is out of range");
  return Status::Ok();
}

// Mamba-2 (transformers modeling_mamba2.py): embeddings, a norm and a Mamba2Mixer per layer
// (in_proj, a biased depthwise conv1d under use_conv_bias, dt_bias, A_log, D, the gated RMSNorm
// and out_proj, in_proj and out_proj biased under use_bias), norm_f and the head.
// Mamba-Codestral-7B's widths count 7,285,403,648 parameters.
Status ReadMamba2(const Reader& r, ModelSpec& m) {
  m.hybrid.assign(static_cast<size_t>(m.layers), 'M');
  m.qkv_bias = m.o_bias = false;
  m.norms_per_layer = 1;
  ModelSpec::LinearMixer& x = m.linear;
  SP_RETURN_IF_ERROR(ReadLinearMixerWidths(r, "mamba2", x));
  m.head_dim = x.head_dim;  // head_dim is the mixer's; no layer attends
  SP_ASSIGN_OR_RETURN(x.chunk, r.Int("chunk_size", 256, 1, 1 << 20));
  SP_ASSIGN_OR_RETURN(x.conv_bias, r.Bool("use_conv_bias", true));
  SP_ASSIGN_OR_RETURN(x.proj_bias, r.Bool("use_bias", false));
  x.out_bias = x.proj_bias;
  return Status::Ok();
}

// Nemotron-H (transformers configuration_nemotron_h.py / modeling_nemotron_h.py): each block
// is one RMSNorm and one mixer, in the order hybrid_override_pattern spells ('M' Mamba-2, '*'
// attention, '-' MLP, 'E' MoE) or layers_block_type lists (transformers' names, or the remote
// code's "mamba" and "attention"); num_hidden_layers follows the pattern's length, as in
// transformers. Attention has no biases; the MLPs are up/down with squared ReLU; the Mamba-2
// mixer is heads x head_dim wide whatever `expand` says, its projections biased under use_bias.
// MoE blocks hold n_routed_experts up/down experts of moe_intermediate_size (over
// moe_latent_size when given, between fc1/fc2_latent_proj), one shared expert of
// moe_shared_expert_intermediate_size, a router and its e_score_correction_bias. The MTP
// blocks (num_nextn_predict_layers) are not built. Nemotron 3 Nano counts 31,577,937,344
// parameters in transformers, Nemotron 3 Super 120,668,687,360 (+ the routers' biases here).
Status ReadNemotronH(const Reader& r, ModelSpec& m) {
  const YAML::Node pattern = r.node["hybrid_override_pattern"], types = r.node["layers_block_type"];
  if (pattern.IsDefined() && !pattern.IsNull()) {
    if (!pattern.IsScalar() || pattern.Scalar().empty())
      return r.doc.ErrorAt(pattern, "hybrid_override_pattern: expected a string of M, *, - and E, one per layer");
    m.hybrid = pattern.Scalar();
    for (char c : m.hybrid)
      if (c != 'M' && c != '*' && c != '-' && c != 'E')
        return r.doc.ErrorAt(pattern, std::string("hybrid_override_pattern: expected M (Mamba-2), * (attention), - (MLP) or "
                                                  "E (MoE) per layer, got \"") + c + "\" in \"" + m.hybrid + "\"");
  } else if (types.IsDefined() && !types.IsNull()) {
    if (!types.IsSequence() || types.size() == 0)
      return r.doc.ErrorAt(types, "layers_block_type: expected a list of block types, one per layer");
    for (const auto& t : types) {
      const std::string name = t.IsScalar() ? t.Scalar() : "";
      char c = 0;
      if (name == "mamba" || name == "linear_attention") c = 'M';
      if (name == "attention" || name == "full_attention") c = '*';
      if (name == "mlp") c = '-';
      if (name == "moe") c = 'E';
      if (c == 0)
        return r.doc.ErrorAt(t, "layers_block_type: expected \"mamba\", \"attention\", \"mlp\" or \"moe\" (or "
                                "\"linear_attention\", \"full_attention\"), got \"" + name + "\"");
      m.hybrid.push_back(c);
    }
  } else {
    return r.doc.ErrorAt(r.node, "nemotron_h: expected hybrid_override_pattern (or layers_block_type) giving each layer's block");
  }
  if (static_cast<int64_t>(m.hybrid.size()) > kMaxLayers) return r.doc.ErrorAt(r.node, "nemotron_h: too many layers");
  m.layers = static_cast<int64_t>(m.hybrid.size());
  if (!r.Has("head_dim") && r.Has("attention_head_dim")) {
    SP_ASSIGN_OR_RETURN(m.head_dim, r.Int("attention_head_dim", 128, 1, 1 << 16));
  }
  m.qkv_bias = m.o_bias = false;
  m.mlp = MlpKind::kPlain;  // relu2
  m.norms_per_layer = 1;
  ModelSpec::LinearMixer& x = m.linear;
  SP_RETURN_IF_ERROR(ReadLinearMixerWidths(r, "nemotron_h", x));
  SP_ASSIGN_OR_RETURN(x.chunk, r.Int("chunk_size", 128, 1, 1 << 20));
  SP_ASSIGN_OR_RETURN(x.conv_bias, r.Bool("use_conv_bias", true));
  SP_ASSIGN_OR_RETURN(x.proj_bias, r.Bool("use_bias", false));
  x.out_bias = x.proj_bias;
  if (r.Has("mamba_ssm_cache_dtype")) {
    SP_ASSIGN_OR_RETURN(std::string cache, r.Str("mamba_ssm_cache_dtype", "float32"));
    std::optional<Dtype> dt = ParseDtype(cache);
    if (!dt) return r.doc.ErrorAt(r.node["mamba_ssm_cache_dtype"], "mamba_ssm_cache_dtype: expected a dtype like \"float32\", got \"" + cache + "\"");
    x.ssm_cache = *dt;
  }
  if (m.hybrid.find('M') == std::string::npos) m.linear = {};
  SP_ASSIGN_OR_RETURN(m.mtp_layers, r.Int("num_nextn_predict_layers", 0, 0, 64));
  if (m.hybrid.find('E') == std::string::npos) return Status::Ok();
  SP_ASSIGN_OR_RETURN(m.experts, r.Int("n_routed_experts", 8, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok", 2, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.expert_intermediate, r.Int("moe_intermediate_size", 7688, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.shared_intermediate, r.Int("moe_shared_expert_intermediate_size", 7688, 1, kMaxDim));
  m.shared_experts = 1;  // built whatever n_shared_experts says
  if (r.Has("moe_latent_size")) {
    SP_ASSIGN_OR_RETURN(m.moe_latent, r.Int("moe_latent_size", 0, 1, kMaxDim));
  }
  m.router_bias = true;
  m.moe_layer.assign(static_cast<size_t>(m.layers), false);
  for (int64_t l = 0; l < m.layers; ++l) m.moe_layer[static_cast<size_t>(l)] = m.hybrid[static_cast<size_t>(l)] == 'E';
  return Status::Ok();
}

// IBM Granite 4.0 hybrids (transformers configuration_granitemoehybrid.py,
// modeling_granitemoehybrid.py): each layer's token mixer is a Mamba-2 block ('G') or attention
// ('A'), as layer_types lists them ("mamba" / "linear_attention", "attention" /
// "full_attention"; absent: all Mamba), followed by the FFN behind two RMSNorms:
// num_local_experts experts of intermediate_size (fused gate_up and down, a bias-free router)
// beside a shared SwiGLU MLP of shared_intermediate_size, or that MLP alone when
// num_local_experts is 0 (H-Micro). attention_bias (read with the common keys) biases q, k,
// v and o; "nope" attention has no RoPE, which holds no parameters either way. The Mamba-2 mixer is
// mamba_n_heads x mamba_d_head wide, which must be mamba_expand x hidden_size ("auto" derives
// the head width), with mamba_n_groups groups of mamba_d_state, mamba_d_conv taps and
// projections biased under mamba_proj_bias. Granite-4.0-H-Small counts 32,207,337,984.
// IBM's Bamba (configuration_bamba.py, modeling_bamba.py) is the same layer with a dense SwiGLU
// MLP of intermediate_size, its attention layers listed by attn_layer_indices.
Status ReadGraniteHybrid(const Reader& r, const std::string& type, ModelSpec& m) {
  const char* key = r.Has("layer_types") ? "layer_types" : "layers_block_type";
  const YAML::Node types = r.node[key];
  if (type == "bamba") {
    SP_ASSIGN_OR_RETURN(std::vector<int64_t> attn, ReadLayerList(r, "attn_layer_indices", m.layers));
    m.hybrid.assign(static_cast<size_t>(m.layers), 'G');
    for (int64_t l : attn) m.hybrid[static_cast<size_t>(l)] = 'A';
  } else if (types.IsDefined() && !types.IsNull()) {
    if (!types.IsSequence() || static_cast<int64_t>(types.size()) != m.layers)
      return r.doc.ErrorAt(types, std::string(key) + ": expected a list of num_hidden_layers (" + std::to_string(m.layers) +
                                      ") entries, \"mamba\" or \"attention\"");
    for (const auto& t : types) {
      const std::string name = t.IsScalar() ? t.Scalar() : "";
      const bool mamba = name == "mamba" || name == "linear_attention";
      if (!mamba && name != "attention" && name != "full_attention")
        return r.doc.ErrorAt(t, std::string(key) + ": expected \"mamba\" or \"attention\" (or \"linear_attention\", "
                                "\"full_attention\"), got \"" + name + "\"");
      m.hybrid.push_back(mamba ? 'G' : 'A');
    }
  } else {
    m.hybrid.assign(static_cast<size_t>(m.layers), 'G');  // GraniteMoeHybridConfig's default
  }
  ModelSpec::LinearMixer& x = m.linear;
  SP_ASSIGN_OR_RETURN(int64_t expand, r.Int("mamba_expand", 2, 1, 64));
  SP_RETURN_IF_ERROR(ReadLinearMixerWidths(r, type, x, expand * m.hidden));
  SP_ASSIGN_OR_RETURN(x.chunk, r.Int("mamba_chunk_size", 256, 1, 1 << 20));
  SP_ASSIGN_OR_RETURN(x.conv_bias, r.Bool("mamba_conv_bias", true));
  SP_ASSIGN_OR_RETURN(x.proj_bias, r.Bool("mamba_proj_bias", false));
  x.out_bias = x.proj_bias;
  if (m.hybrid.find('G') == std::string::npos) m.linear = {};
  if (type == "bamba") return Status::Ok();  // the dense MLP of intermediate_size
  SP_ASSIGN_OR_RETURN(int64_t shared, r.Int("shared_intermediate_size", 1024, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(int64_t experts, r.Int("num_local_experts", 8, 0, 1 << 16));
  if (experts == 0) {  // the shared MLP is the layer's dense MLP
    m.intermediate = shared;
    return Status::Ok();
  }
  m.experts = experts;
  SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok", 2, 1, experts));
  m.expert_intermediate = m.intermediate;
  m.shared_experts = 1;
  m.shared_intermediate = shared;
  MarkAllMoe(m);
  return Status::Ok();
}

// Falcon-H1 (transformers configuration_falcon_h1.py, modeling_falcon_h1.py): every layer runs
// attention and a Mamba-2 mixer side by side on one RMSNormed input ('P'), then a SwiGLU MLP
// behind a second RMSNorm. The mixer is mamba_d_ssm wide (else mamba_expand x hidden_size; its
// heads x head width must equal it, "auto" deriving the head width), its in_proj biased under
// mamba_proj_bias and its out_proj under projectors_bias, its gated RMSNorm present only under
// mamba_rms_norm. The muP multipliers scale activations and hold no parameters. Falcon-H1-7B's
// widths count 7,585,519,712.
Status ReadFalconH1(const Reader& r, ModelSpec& m) {
  m.hybrid.assign(static_cast<size_t>(m.layers), 'P');
  ModelSpec::LinearMixer& x = m.linear;
  SP_ASSIGN_OR_RETURN(int64_t expand, r.Int("mamba_expand", 2, 1, 64));
  SP_ASSIGN_OR_RETURN(int64_t width, r.Int("mamba_d_ssm", expand * m.hidden, 1, kMaxDim));
  SP_RETURN_IF_ERROR(ReadLinearMixerWidths(r, "falcon_h1", x, width));
  SP_ASSIGN_OR_RETURN(x.chunk, r.Int("mamba_chunk_size", 256, 1, 1 << 20));
  SP_ASSIGN_OR_RETURN(x.conv_bias, r.Bool("mamba_conv_bias", true));
  SP_ASSIGN_OR_RETURN(x.proj_bias, r.Bool("mamba_proj_bias", false));
  SP_ASSIGN_OR_RETURN(x.out_bias, r.Bool("projectors_bias", false));
  SP_ASSIGN_OR_RETURN(x.norm, r.Bool("mamba_rms_norm", false));
  return Status::Ok();
}

// Qwen3-Next and Qwen3.5 (transformers modeling_qwen3_next.py, modeling_qwen3_5.py,
// modeling_qwen3_5_moe.py): layer_types names each layer's token mixer, "linear_attention" (a
// Gated DeltaNet, 'G') or "full_attention" ('A'), else every full_attention_interval-th layer
// attends in full; both are followed by an MLP or an MoE behind two RMSNorms. Attention has
// per-head q/k norms and a sigmoid output gate from a doubled q_proj. The DeltaNet has
// linear_num_value_heads heads of linear_value_head_dim with keys and queries of
// linear_key_head_dim in linear_num_key_heads groups, a depthwise conv of
// linear_conv_kernel_dim taps without bias and fla's chunk of 64 tokens. Qwen3-Next's MoE
// layers follow Qwen2-MoE's rule (decoder_sparse_step, mlp_only_layers) with a gated shared
// expert; Qwen3.5-MoE's are every layer; Qwen3.5's dense layers an MLP of intermediate_size.
// Qwen3-Next-80B-A3B counts 79,674,391,296 parameters.
Status ReadGatedDeltaNetHybrid(const Reader& r, const std::string& type, ModelSpec& m) {
  const YAML::Node types = r.node["layer_types"];
  if (types.IsDefined() && !types.IsNull()) {
    if (!types.IsSequence() || static_cast<int64_t>(types.size()) != m.layers)
      return r.doc.ErrorAt(types, "layer_types: expected a list of num_hidden_layers (" + std::to_string(m.layers) +
                                      ") entries, \"linear_attention\" or \"full_attention\"");
    for (const auto& t : types) {
      const std::string name = t.IsScalar() ? t.Scalar() : "";
      if (name != "linear_attention" && name != "full_attention")
        return r.doc.ErrorAt(t, "layer_types: expected \"linear_attention\" or \"full_attention\", got \"" + name + "\"");
      m.hybrid.push_back(name == "full_attention" ? 'A' : 'G');
    }
  } else {
    SP_ASSIGN_OR_RETURN(int64_t interval, r.Int("full_attention_interval", 4, 1, kMaxLayers));
    for (int64_t l = 0; l < m.layers; ++l) m.hybrid.push_back((l + 1) % interval == 0 ? 'A' : 'G');
  }
  m.qk_norm = true;
  SP_ASSIGN_OR_RETURN(m.attention_gate, r.Bool("attn_output_gate", true));
  ModelSpec::LinearMixer& x = m.linear;
  x.delta = true;
  SP_RETURN_IF_ERROR(ReadLinearMixerWidths(r, type, x));
  x.chunk = 64;
  x.conv_bias = false;
  x.ssm_cache = m.dtype;  // vLLM keeps the DeltaNet state in the model's dtype unless told otherwise
  if (m.hybrid.find('G') == std::string::npos) m.linear = {};
  if (type == "qwen3_5_text") return Status::Ok();
  if (type == "qwen3_next") {
    SP_RETURN_IF_ERROR(ReadQwenMoe(r, m, 512, 10, 512));
  } else {
    SP_ASSIGN_OR_RETURN(m.experts, r.Int("num_experts", 256, 1, 1 << 16));
    SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok", 8, 1, 1 << 16));
    SP_ASSIGN_OR_RETURN(m.expert_intermediate, r.Int("moe_intermediate_size", 512, 1, kMaxDim));
    MarkAllMoe(m);
  }
  m.shared_experts = 1;
  m.shared_expert_gate = true;
  SP_ASSIGN_OR_RETURN(m.shared_intermediate, r.Int("shared_expert_intermediate_size", 512, 1, kMaxDim));
  return Status::Ok();
}

// Llama 4's text tower (transformers Llama4TextConfig / modeling_llama4.py): MoE layers are
// moe_layers, or every interleave_moe_layer_step-th layer (Scout 1: all, Maverick 2); each
// holds num_local_experts routed experts of intermediate_size (fused gate_up and down, no
// bias), a bias-free router and one always-on shared expert of the same size; the dense
// layers' MLP is intermediate_size_mlp. Three layers in four attend within chunks of
// attention_chunk_size, the fourth (no RoPE) globally; its q/k L2 norm has no weights.
Status ReadLlama4(const Reader& r, ModelSpec& m) {
  SP_ASSIGN_OR_RETURN(m.experts, r.Int("num_local_experts", 16, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok", 1, 1, 1 << 16));
  m.expert_intermediate = m.intermediate;
  m.shared_experts = 1;
  m.shared_intermediate = m.intermediate;
  SP_ASSIGN_OR_RETURN(m.intermediate, r.Int("intermediate_size_mlp", 16384, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(int64_t step, r.Int("interleave_moe_layer_step", 1, 1, kMaxLayers));
  m.moe_layer.assign(static_cast<size_t>(m.layers), false);
  SP_ASSIGN_OR_RETURN(std::vector<int64_t> listed, ReadLayerList(r, "moe_layers", m.layers));
  if (!r.Has("moe_layers"))
    for (int64_t l = step - 1; l < m.layers; l += step) listed.push_back(l);
  for (int64_t l : listed) m.moe_layer[static_cast<size_t>(l)] = true;
  if (r.Has("attention_chunk_size")) {
    SP_ASSIGN_OR_RETURN(m.sliding_window, r.Int("attention_chunk_size", 0, 1, int64_t{1} << 34));
    m.sliding_window_pattern = 4;  // no_rope_layer_interval: every 4th layer global
  }
  return Status::Ok();
}

// Falcon (transformers FalconConfig / modeling_falcon.py; n_layer, n_head and n_head_kv are
// the older names). query_key_value projects to heads + 2 KV heads of hidden / heads: one
// KV head under multi_query (7B), num_kv_heads under new_decoder_architecture (40B, 180B),
// else all heads. Attention and MLP run in parallel (parallel_attn, always in the new
// architecture) behind one input LayerNorm, or ln_attn and ln_mlp in the new one
// (num_ln_in_parallel_attn, default 2); a sequential block has two. Biases only with `bias`.
Status ReadFalcon(const Reader& r, const Defaults& d, ModelSpec& m) {
  SP_ASSIGN_OR_RETURN(m.vocab, r.Int("vocab_size", d.vocab, 1, kMaxVocab));
  SP_ASSIGN_OR_RETURN(m.hidden, r.Int("hidden_size", d.hidden, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(int64_t n_layer, r.Int("n_layer", d.layers, 1, kMaxLayers));
  SP_ASSIGN_OR_RETURN(m.layers, r.Int("num_hidden_layers", n_layer, 1, kMaxLayers));
  SP_ASSIGN_OR_RETURN(int64_t n_head, r.Int("n_head", d.heads, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.heads, r.Int("num_attention_heads", n_head, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.intermediate, r.Int("ffn_hidden_size", 4 * m.hidden, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.max_positions, r.Int("max_position_embeddings", d.max_positions, 1, int64_t{1} << 34));
  SP_ASSIGN_OR_RETURN(m.tied_embeddings, r.Bool("tie_word_embeddings", d.tied));
  SP_ASSIGN_OR_RETURN(std::optional<std::string> written_type, r.doc.String(r.node, "model_type"));
  SP_ASSIGN_OR_RETURN(bool new_arch, r.Bool("new_decoder_architecture", written_type == "RefinedWeb"));
  SP_ASSIGN_OR_RETURN(bool multi_query, r.Bool("multi_query", true));
  SP_ASSIGN_OR_RETURN(bool parallel, r.Bool("parallel_attn", true));
  SP_ASSIGN_OR_RETURN(bool bias, r.Bool("bias", false));
  SP_ASSIGN_OR_RETURN(bool alibi, r.Bool("alibi", false));
  if (m.hidden % m.heads != 0)
    return r.doc.ErrorAt(r.node, "the number of attention heads (" + std::to_string(m.heads) +
                                     ") does not divide the hidden size (" + std::to_string(m.hidden) + ")");
  m.head_dim = m.hidden / m.heads;
  if (new_arch) {
    SP_ASSIGN_OR_RETURN(int64_t n_head_kv, r.Int("n_head_kv", m.heads, 1, 1 << 16));
    SP_ASSIGN_OR_RETURN(m.kv_heads, r.Int("num_kv_heads", n_head_kv, 1, 1 << 16));
    SP_ASSIGN_OR_RETURN(int64_t lns, r.Int("num_ln_in_parallel_attn", 2, 1, 2));
    m.norms_per_layer = static_cast<int>(lns);
  } else {
    m.kv_heads = multi_query ? 1 : m.heads;
    m.norms_per_layer = parallel ? 1 : 2;
  }
  m.parallel_residual = new_arch || parallel;
  m.qkv_bias = m.o_bias = m.mlp_bias = bias;
  m.norm = NormKind::kLayer;
  m.mlp = MlpKind::kPlain;
  m.gelu = true;
  if (alibi) m.position = PositionKind::kAlibi;
  return ReadDtype(r, m);
}

// GptKeys (model_reader.h) under GPT-2's names and under GPT-Neo's.
constexpr GptKeys kGpt2Keys{"n_embd", "n_layer", "n_head", "n_positions", "n_inner"};
constexpr GptKeys kGptNeoKeys{"hidden_size", "num_layers", "num_heads", "max_position_embeddings", "intermediate_size"};

Status ReadGptDims(const Reader& r, const Defaults& d, const GptKeys& k, ModelSpec& m) {
  SP_ASSIGN_OR_RETURN(m.vocab, r.Int("vocab_size", d.vocab, 1, kMaxVocab));
  SP_ASSIGN_OR_RETURN(m.hidden, r.Int(k.hidden, d.hidden, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.layers, r.Int(k.layers, d.layers, 1, kMaxLayers));
  SP_ASSIGN_OR_RETURN(m.heads, r.Int(k.heads, d.heads, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.max_positions, r.Int(k.positions, d.max_positions, 1, int64_t{1} << 34));
  SP_ASSIGN_OR_RETURN(m.intermediate, r.Int(k.inner, 4 * m.hidden, 1, kMaxDim));  // null -> 4h
  SP_ASSIGN_OR_RETURN(m.tied_embeddings, r.Bool("tie_word_embeddings", d.tied));
  return Status::Ok();
}

// The layer GPT-J, CodeGen, GPT-Neo, GPTBigCode and ChatGLM-6B share: LayerNorms, an up/down GELU
// MLP, heads that split the hidden size (every head its own KV unless the reader says otherwise).
void GptEraLayer(ModelSpec& m) {
  m.norm = NormKind::kLayer;
  m.mlp = MlpKind::kPlain;
  m.gelu = true;
  m.kv_heads = m.heads;
  m.head_dim = m.hidden / m.heads;
}

// ChatGLM-6B, the first generation (THUDM/chatglm-6b configuration_chatglm.py and
// modeling_chatglm.py), shares the model_type with GLM-2 to 4 but not their keys or layer:
// vocab_size (130,528), inner_hidden_size (a 4h GELU MLP), max_sequence_length; q/k/v fused
// into query_key_value of 3h, dense and both MLP matrices, all biased; LayerNorms with bias;
// 2-D rotary positions (no parameters); the head tied to the word embeddings (its config class
// leaves tie_word_embeddings at PretrainedConfig's true). chatglm-6b counts 6,173,286,400.
bool ChatglmFirstGeneration(const Reader& r) { return r.Has("inner_hidden_size") || r.Has("position_encoding_2d"); }

Status ReadChatglm1(const Reader& r, ModelSpec& m) {
  SP_ASSIGN_OR_RETURN(m.vocab, r.Int("vocab_size", 130528, 1, kMaxVocab));
  SP_ASSIGN_OR_RETURN(m.hidden, r.Int("hidden_size", 4096, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.intermediate, r.Int("inner_hidden_size", 16384, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.layers, r.Int("num_layers", 28, 1, kMaxLayers));
  SP_ASSIGN_OR_RETURN(m.heads, r.Int("num_attention_heads", 32, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.max_positions, r.Int("max_sequence_length", 2048, 1, int64_t{1} << 34));
  SP_ASSIGN_OR_RETURN(m.tied_embeddings, r.Bool("tie_word_embeddings", true));
  GptEraLayer(m);
  m.qkv_bias = m.o_bias = m.mlp_bias = true;
  return ReadDtype(r, m);
}

// ChatGLM's remote-code config (THUDM/GLM-4 configuration_chatglm.py): padded_vocab_size
// rows for the embedding and the untied output_layer; q/k/v of kv_channels per head, the
// keys and values grouped into multi_query_group_num heads when multi_query_attention;
// biases on query_key_value only (add_qkv_bias), none elsewhere unless add_bias_linear.
// GLM-4-9B counts 9,399,951,360 parameters.
Status ReadChatglm(const Reader& r, const Defaults& d, ModelSpec& m) {
  if (ChatglmFirstGeneration(r)) return ReadChatglm1(r, m);
  SP_ASSIGN_OR_RETURN(m.vocab, r.Int("padded_vocab_size", d.vocab, 1, kMaxVocab));
  SP_ASSIGN_OR_RETURN(m.hidden, r.Int("hidden_size", d.hidden, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.intermediate, r.Int("ffn_hidden_size", d.intermediate, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.layers, r.Int("num_layers", d.layers, 1, kMaxLayers));
  SP_ASSIGN_OR_RETURN(m.heads, r.Int("num_attention_heads", d.heads, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.head_dim, r.Int("kv_channels", m.hidden / m.heads, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(bool grouped, r.Bool("multi_query_attention", false));
  SP_ASSIGN_OR_RETURN(int64_t groups, r.Int("multi_query_group_num", d.kv_heads, 1, 1 << 16));
  m.kv_heads = grouped ? groups : m.heads;
  SP_ASSIGN_OR_RETURN(m.max_positions, r.Int("seq_length", d.max_positions, 1, int64_t{1} << 34));
  SP_ASSIGN_OR_RETURN(m.tied_embeddings, r.Bool("tie_word_embeddings", d.tied));
  SP_ASSIGN_OR_RETURN(bool bias_linear, r.Bool("add_bias_linear", false));
  SP_ASSIGN_OR_RETURN(m.qkv_bias, r.Bool("add_qkv_bias", false));
  SP_ASSIGN_OR_RETURN(bool rms, r.Bool("rmsnorm", true));
  m.qkv_bias = m.qkv_bias || bias_linear;
  m.o_bias = m.mlp_bias = bias_linear;
  if (!rms) m.norm = NormKind::kLayer;
  return ReadDtype(r, m);
}

// The dimensions of the remote-code families whose modeling files ignore head_dim (heads of
// hidden / heads) and, unless `gqa`, num_key_value_heads.
Status ReadFixedHeadDims(const Reader& r, const Defaults& d, ModelSpec& m, bool gqa) {
  SP_RETURN_IF_ERROR(ReadLlamaDims(r, d, m));
  m.kv_heads = m.heads;
  if (gqa) {
    SP_ASSIGN_OR_RETURN(m.kv_heads, r.Int("num_key_value_heads", m.heads, 1, 1 << 16));
  }
  SP_ASSIGN_OR_RETURN(m.tied_embeddings, r.Bool("tie_word_embeddings", d.tied));
  if (m.hidden % m.heads != 0)
    return r.doc.ErrorAt(r.node["num_attention_heads"].IsDefined() ? r.node["num_attention_heads"] : r.node,
                         "the number of attention heads (" + std::to_string(m.heads) +
                             ") does not divide the hidden size (" + std::to_string(m.hidden) + ")");
  m.head_dim = m.hidden / m.heads;
  return ReadDtype(r, m);
}

// InternLM remote code. InternLM2 / InternLM2.5 (internlm/internlm2_5-7b modeling_internlm2.py,
// configuration_internlm2.py): llama's keys; one fused wqkv of (heads + 2 x KV heads) x
// hidden / heads rows and wo, both biased only with `bias` (default true); SwiGLU w1/w3/w2
// without biases; attention_norm and ffn_norm RMSNorms; an untied `output` head.
// internlm2_5-7b counts 7,737,708,544 parameters. InternLM-1 (internlm/internlm-7b
// modeling_internlm.py): the same layer with separate q/k/v/o projections and no KV heads
// (`gqa` false); internlm-7b counts 7,321,948,160.
Status ReadInternlm(const Reader& r, const Defaults& d, ModelSpec& m, bool gqa) {
  SP_RETURN_IF_ERROR(ReadFixedHeadDims(r, d, m, gqa));
  SP_ASSIGN_OR_RETURN(m.max_positions, r.Int("max_position_embeddings", d.max_positions, 1, int64_t{1} << 34));
  SP_ASSIGN_OR_RETURN(bool bias, r.Bool("bias", true));
  m.qkv_bias = m.o_bias = bias;
  return Status::Ok();
}

// Qwen-1 remote code (Qwen/Qwen-7B modeling_qwen.py): a fused c_attn of 3 x heads x kv_channels
// rows, always biased; c_proj, w1, w2 and the MLP's c_proj biased only without no_bias (the
// default has none); the SwiGLU MLP is intermediate_size / 2 wide (w1 and w2 both project to
// it); RMSNorms ln_1, ln_2 and ln_f; an untied lm_head. Qwen-7B counts 7,721,324,544 parameters.
Status ReadQwen1(const Reader& r, const Defaults& d, ModelSpec& m) {
  SP_ASSIGN_OR_RETURN(m.vocab, r.Int("vocab_size", d.vocab, 1, kMaxVocab));
  SP_ASSIGN_OR_RETURN(m.hidden, r.Int("hidden_size", d.hidden, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(int64_t doubled, r.Int("intermediate_size", d.intermediate, 2, 2 * kMaxDim));
  if (doubled % 2 != 0)
    return r.doc.ErrorAt(r.node["intermediate_size"], "intermediate_size: expected an even number (Qwen's MLP is half "
                                                      "of it wide), got " + std::to_string(doubled));
  m.intermediate = doubled / 2;
  SP_ASSIGN_OR_RETURN(m.layers, r.Int("num_hidden_layers", d.layers, 1, kMaxLayers));
  SP_ASSIGN_OR_RETURN(m.heads, r.Int("num_attention_heads", d.heads, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.head_dim, r.Int("kv_channels", d.head_dim, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.max_positions, r.Int("max_position_embeddings", d.max_positions, 1, int64_t{1} << 34));
  SP_ASSIGN_OR_RETURN(m.tied_embeddings, r.Bool("tie_word_embeddings", d.tied));
  SP_ASSIGN_OR_RETURN(bool no_bias, r.Bool("no_bias", true));
  m.kv_heads = m.heads;
  m.qkv_bias = true;
  m.o_bias = m.mlp_bias = !no_bias;
  return ReadDtype(r, m);
}

// Baichuan / Baichuan2 remote code (baichuan-inc/Baichuan2-7B-Base and -13B-Base
// modeling_baichuan.py): W_pack (3 x hidden rows) and o_proj without biases, a SwiGLU MLP,
// two RMSNorms, an untied NormHead (vocab x hidden, no bias). Each size ships its own modeling
// file: the 7B applies RoPE up to max_position_embeddings, the 13B ALiBi up to
// model_max_length; the config names neither, so the position kind follows hidden_size as
// vLLM's model_executor/models/baichuan.py does (4096: RoPE, else ALiBi). Baichuan2-7B counts
// 7,505,973,248 parameters, Baichuan2-13B 13,896,668,160.
Status ReadBaichuan(const Reader& r, const Defaults& d, ModelSpec& m) {
  SP_RETURN_IF_ERROR(ReadFixedHeadDims(r, d, m, false));
  SP_ASSIGN_OR_RETURN(int64_t model_max, r.Int("model_max_length", d.max_positions, 1, int64_t{1} << 34));
  SP_ASSIGN_OR_RETURN(m.max_positions, r.Int("max_position_embeddings", model_max, 1, int64_t{1} << 34));
  if (m.hidden == 4096) {
    m.decoder_layer_class = "DecoderLayer";
  } else {
    m.position = PositionKind::kAlibi;
  }
  return Status::Ok();
}

Status ReadGpt2(const Reader& r, const Defaults& d, ModelSpec& m) {
  SP_RETURN_IF_ERROR(ReadGptDims(r, d, kGpt2Keys, m));
  m.position = PositionKind::kLearned;
  return ReadDtype(r, m);
}

// GPT-J and CodeGen (transformers modeling_gptj.py, modeling_codegen.py): q, k, v and out
// projections without biases (CodeGen fuses q/k/v into one qkv_proj), fc_in and fc_out with
// biases, one LayerNorm (ln_1) feeding attention and the gelu_new MLP in parallel, rotary
// positions over rotary_dim of each head (no parameters), ln_f and an untied lm_head with a
// bias. Neither modeling file has an SDPA path: attention is eager unless a run asks for
// flash_attention_2. GPT-J-6B counts 6,050,882,784 parameters, CodeGen-6B 7,064,213,504.
Status ReadGptj(const Reader& r, const Defaults& d, ModelSpec& m) {
  SP_RETURN_IF_ERROR(ReadGptDims(r, d, kGpt2Keys, m));
  GptEraLayer(m);
  m.norms_per_layer = 1;
  m.parallel_residual = true;
  m.mlp_bias = true;
  m.head_bias = true;
  m.attention_impl = AttentionImpl::kEager;
  return ReadDtype(r, m);
}

// Sliding-window attention with every N-th layer global (ModelSpec::sliding_window_pattern), as
// layer_types lists it ("sliding_attention" / "full_attention": Cohere 2, EXAONE 4, OLMo 3,
// SmolLM3) or sliding_window_pattern says, as a count or as EXAONE 4's letters ("LLLG": three
// local layers, then a global one). `fallback` is the family's pattern when neither is given.
// No sliding layer, or no window, is full attention everywhere.
Status ReadSlidingLayers(const Reader& r, ModelSpec& m, int64_t fallback) {
  if (r.Has("layer_types")) {
    const YAML::Node types = r.node["layer_types"];
    const std::string expected = "layer_types: expected " + std::to_string(m.layers) +
                                 " entries (one per layer), \"sliding_attention\" or \"full_attention\"";
    if (!types.IsSequence() || static_cast<int64_t>(types.size()) != m.layers) return r.doc.ErrorAt(types, expected);
    std::vector<bool> full;
    for (const auto& t : types) {
      const std::string name = t.IsScalar() ? t.Scalar() : "";
      if (name != "full_attention" && name != "sliding_attention")
        return r.doc.ErrorAt(t, expected + ", got \"" + name + "\"");
      full.push_back(name == "full_attention");
    }
    const auto first_full = std::find(full.begin(), full.end(), true);
    const int64_t every = first_full == full.end() ? 0 : (first_full - full.begin()) + 1;
    for (size_t i = 0; i < full.size(); ++i)
      if (full[i] != (every > 0 && (static_cast<int64_t>(i) + 1) % every == 0))
        return r.doc.ErrorAt(types[i], "layer_types: expected \"full_attention\" in every " + std::to_string(every) +
                                           "th layer (layers " + std::to_string(every - 1) + ", " +
                                           std::to_string(2 * every - 1) + ", ... from 0) and \"sliding_attention\" "
                                           "in the others, the interleaving shardplan models");
    if (every == 1) m.sliding_window = 0;
    m.sliding_window_pattern = static_cast<int>(every);
  } else if (r.Has("sliding_window_pattern")) {
    const YAML::Node p = r.node["sliding_window_pattern"];
    const std::string letters = p.IsScalar() ? p.Scalar() : "";
    if (!letters.empty() && letters.back() == 'G' && letters.find_first_not_of('L') == letters.size() - 1) {
      m.sliding_window_pattern = static_cast<int>(letters.size());
    } else {
      SP_ASSIGN_OR_RETURN(int64_t every, r.Int("sliding_window_pattern", fallback, 0, kMaxLayers));
      m.sliding_window_pattern = static_cast<int>(every);
    }
  } else {
    m.sliding_window_pattern = static_cast<int>(fallback);
  }
  if (m.sliding_window == 0) m.sliding_window_pattern = 0;
  return Status::Ok();
}

// DBRX (transformers modeling_dbrx.py): a fused Wqkv of heads + 2 x kv_n_heads heads and
// out_proj, both without biases; norm_1 and norm_2 LayerNorms without bias; every layer an MoE
// of moe_num_experts SwiGLU experts (w1, v1, w2) of ffn_hidden_size behind a bias-free router;
// an untied head. DBRX counts 131,596,523,520 parameters.
Status ReadDbrx(const Reader& r, const Defaults& d, ModelSpec& m) {
  SP_ASSIGN_OR_RETURN(m.vocab, r.Int("vocab_size", d.vocab, 1, kMaxVocab));
  SP_ASSIGN_OR_RETURN(m.hidden, r.Int("d_model", d.hidden, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.layers, r.Int("n_layers", d.layers, 1, kMaxLayers));
  SP_ASSIGN_OR_RETURN(m.heads, r.Int("n_heads", d.heads, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.max_positions, r.Int("max_seq_len", d.max_positions, 1, int64_t{1} << 34));
  SP_ASSIGN_OR_RETURN(m.tied_embeddings, r.Bool("tie_word_embeddings", d.tied));
  m.kv_heads = d.kv_heads;
  m.expert_intermediate = d.intermediate;
  m.experts = 4;
  m.experts_per_token = 1;
  if (const YAML::Node attn = r.node["attn_config"]; attn.IsDefined() && !attn.IsNull()) {
    SP_RETURN_IF_ERROR(r.doc.ExpectMap(attn, "attn_config"));
    const Reader in{r.doc, attn};
    SP_ASSIGN_OR_RETURN(m.kv_heads, in.Int("kv_n_heads", d.kv_heads, 1, 1 << 16));
  }
  if (const YAML::Node ffn = r.node["ffn_config"]; ffn.IsDefined() && !ffn.IsNull()) {
    SP_RETURN_IF_ERROR(r.doc.ExpectMap(ffn, "ffn_config"));
    const Reader in{r.doc, ffn};
    SP_ASSIGN_OR_RETURN(m.expert_intermediate, in.Int("ffn_hidden_size", d.intermediate, 1, kMaxDim));
    SP_ASSIGN_OR_RETURN(m.experts, in.Int("moe_num_experts", 4, 1, 1 << 16));
    SP_ASSIGN_OR_RETURN(m.experts_per_token, in.Int("moe_top_k", 1, 1, m.experts));
  }
  m.intermediate = m.expert_intermediate;
  m.head_dim = m.hidden / m.heads;
  m.norm = NormKind::kLayer;
  m.norm_bias = false;
  MarkAllMoe(m);
  return ReadDtype(r, m);
}

// GPT-Neo (transformers modeling_gpt_neo.py): q, k and v without biases, out_proj with one,
// c_fc and c_proj with biases, ln_1 and ln_2 LayerNorms, learned positions (wpe of
// max_position_embeddings rows), ln_f, the head tied to wte. attention_types alternates global
// and local layers; the local ones mask the scores to window_size keys but, eager (the file has
// no SDPA path), still compute and hold all of them, so they are priced as global ones.
// GPT-Neo 1.3B counts 1,315,575,808 parameters, 2.7B 2,651,307,520.
Status ReadGptNeo(const Reader& r, const Defaults& d, ModelSpec& m) {
  SP_RETURN_IF_ERROR(ReadGptDims(r, d, kGptNeoKeys, m));
  GptEraLayer(m);
  m.o_bias = m.mlp_bias = true;
  m.position = PositionKind::kLearned;
  m.attention_impl = AttentionImpl::kEager;
  return ReadDtype(r, m);
}

// GPTBigCode, StarCoder and SantaCoder (transformers modeling_gpt_bigcode.py): GPT-2's block
// with one fused c_attn of h + 2 x head_dim rows under multi_query (one KV head, the default),
// else 3h; biases on every Linear; learned positions; the head tied to wte. It attends through
// SDPA. StarCoder (15.5B) counts 15,517,456,384 parameters.
Status ReadGptBigCode(const Reader& r, const Defaults& d, ModelSpec& m) {
  SP_RETURN_IF_ERROR(ReadGptDims(r, d, kGpt2Keys, m));
  SP_ASSIGN_OR_RETURN(bool multi_query, r.Bool("multi_query", true));
  GptEraLayer(m);
  m.qkv_bias = m.o_bias = m.mlp_bias = true;
  if (multi_query) m.kv_heads = 1;
  m.position = PositionKind::kLearned;
  return ReadDtype(r, m);
}

Status ReadOpt(const Reader& r, const Defaults& d, ModelSpec& m) {
  SP_ASSIGN_OR_RETURN(m.vocab, r.Int("vocab_size", d.vocab, 1, kMaxVocab));
  SP_ASSIGN_OR_RETURN(m.hidden, r.Int("hidden_size", d.hidden, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.intermediate, r.Int("ffn_dim", d.intermediate, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.layers, r.Int("num_hidden_layers", d.layers, 1, kMaxLayers));
  SP_ASSIGN_OR_RETURN(m.heads, r.Int("num_attention_heads", d.heads, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.max_positions, r.Int("max_position_embeddings", d.max_positions, 1, int64_t{1} << 34));
  SP_ASSIGN_OR_RETURN(m.word_embed_proj_dim, r.Int("word_embed_proj_dim", m.hidden, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.tied_embeddings, r.Bool("tie_word_embeddings", true));
  SP_ASSIGN_OR_RETURN(bool bias, r.Bool("enable_bias", true));
  SP_ASSIGN_OR_RETURN(bool norm_before, r.Bool("do_layer_norm_before", true));
  SP_ASSIGN_OR_RETURN(bool remove_final, r.Bool("_remove_final_layer_norm", false));
  m.qkv_bias = m.o_bias = m.mlp_bias = bias;
  m.final_norm = norm_before && !remove_final;  // modeling_opt.py: final_layer_norm only then
  m.position = PositionKind::kLearned;
  m.position_offset = 2;                        // OPTLearnedPositionalEmbedding keeps 2 extra rows
  return ReadDtype(r, m);
}

Status ReadBloom(const Reader& r, ModelSpec& m) {
  SP_ASSIGN_OR_RETURN(m.vocab, r.Int("vocab_size", 250880, 1, kMaxVocab));
  SP_ASSIGN_OR_RETURN(int64_t n_embed, r.Int("n_embed", 64, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.hidden, r.Int("hidden_size", n_embed, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.layers, r.Int("n_layer", 2, 1, kMaxLayers));
  SP_ASSIGN_OR_RETURN(int64_t n_head, r.Int("n_head", 8, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.heads, r.Int("num_attention_heads", n_head, 1, 1 << 16));
  m.intermediate = 4 * m.hidden;  // BloomMLP: dense_h_to_4h
  m.embedding_norm = true;
  m.position = PositionKind::kAlibi;
  m.tied_embeddings = true;
  return ReadDtype(r, m);
}

// MPT's attn_config.attn_impl values: "torch" materializes the scores, "triton" is
// flash_attn_triton.py, "flash" is flash-attn. Read here, written back by ModelToYaml.
constexpr std::pair<const char*, AttentionImpl> kMptAttnImpls[] = {
    {"torch", AttentionImpl::kEager}, {"triton", AttentionImpl::kTriton}, {"flash", AttentionImpl::kFlash}};

// MosaicML MPT (transformers MptConfig / modeling_mpt.py): fused Wqkv and out_proj, an
// up/down GELU MLP of expansion_ratio x d_model, LayerNorms whose bias is removed and no
// Linear biases when no_bias (the default), ALiBi positions, the head tied to wte.
Status ReadMpt(const Reader& r, const Defaults& d, ModelSpec& m) {
  SP_ASSIGN_OR_RETURN(m.vocab, r.Int("vocab_size", d.vocab, 1, kMaxVocab));
  SP_ASSIGN_OR_RETURN(m.hidden, r.Int("d_model", d.hidden, 1, kMaxDim));
  SP_ASSIGN_OR_RETURN(m.layers, r.Int("n_layers", d.layers, 1, kMaxLayers));
  SP_ASSIGN_OR_RETURN(m.heads, r.Int("n_heads", d.heads, 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(m.max_positions, r.Int("max_seq_len", d.max_positions, 1, int64_t{1} << 34));
  SP_ASSIGN_OR_RETURN(int64_t ratio, r.Int("expansion_ratio", 4, 1, 64));
  SP_RETURN_IF_ERROR(ReadDtype(r, m));
  SP_ASSIGN_OR_RETURN(bool no_bias, r.Bool("no_bias", true));
  m.intermediate = ratio * m.hidden;
  m.qkv_bias = m.o_bias = m.mlp_bias = !no_bias;
  m.norm_bias = !no_bias;
  m.tied_embeddings = true;  // MptForCausalLM ties lm_head to transformer.wte
  m.position = PositionKind::kAlibi;
  // attn_config.attn_impl picks llm-foundry's attention kernel (kMptAttnImpls).
  const YAML::Node attn = r.node["attn_config"];
  if (!attn.IsDefined() || attn.IsNull()) return Status::Ok();
  SP_RETURN_IF_ERROR(r.doc.ExpectMap(attn, "attn_config"));
  SP_ASSIGN_OR_RETURN(std::optional<std::string> impl, r.doc.String(attn, "attn_impl"));
  if (!impl) return Status::Ok();
  for (const auto& [name, kind] : kMptAttnImpls) {
    if (*impl != name) continue;
    m.attention_impl = kind;
    return Status::Ok();
  }
  return r.doc.ErrorAt(attn["attn_impl"], "attn_config.attn_impl: expected \"torch\", \"triton\" or \"flash\", got \"" + *impl + "\"");
}

// Vision encoders far past any real one (SigLIP-so400m: 27 x 1,152; Qwen2.5-VL: 32 x 1,280)
// are refused before their counts could overflow.
constexpr int64_t kMaxVisionWidth = int64_t{1} << 16;
constexpr int64_t kMaxVisionDepth = 1024;

// The vision_config of Qwen2-VL (transformers Qwen2VLVisionConfig: embed_dim, mlp_ratio, and
// hidden_size for the merger's output) and Qwen2.5-VL (Qwen2_5_VLVisionConfig: hidden_size,
// intermediate_size, out_hidden_size), with their classes' defaults; in_chans is the name the
// published files use for in_channels. Qwen2.5-VL-7B's counts 676,550,144 parameters.
Status ReadQwenVision(const Document& doc, const YAML::Node& node, const std::string& kind, ModelSpec::VisionTower& v) {
  const YAML::Node cfg = node.IsDefined() && !node.IsNull() ? node : YAML::Node(YAML::NodeType::Map);
  SP_RETURN_IF_ERROR(doc.ExpectMap(cfg, "vision_config"));
  const Reader r{doc, cfg};
  v.kind = kind;
  SP_ASSIGN_OR_RETURN(v.depth, r.Int("depth", 32, 1, kMaxVisionDepth));
  SP_ASSIGN_OR_RETURN(int64_t chans, r.Int("in_chans", 3, 1, 64));
  SP_ASSIGN_OR_RETURN(v.in_channels, r.Int("in_channels", chans, 1, 64));
  SP_ASSIGN_OR_RETURN(v.patch, r.Int("patch_size", 14, 1, 256));
  SP_ASSIGN_OR_RETURN(v.temporal_patch, r.Int("temporal_patch_size", 2, 1, 64));
  SP_ASSIGN_OR_RETURN(v.merge, r.Int("spatial_merge_size", 2, 1, 16));
  if (kind == "qwen2_5_vl") {
    SP_ASSIGN_OR_RETURN(v.width, r.Int("hidden_size", 3584, 1, kMaxVisionWidth));
    SP_ASSIGN_OR_RETURN(v.intermediate, r.Int("intermediate_size", 3420, 1, kMaxVisionWidth));
    SP_ASSIGN_OR_RETURN(v.out, r.Int("out_hidden_size", 3584, 1, kMaxDim));
  } else {
    SP_ASSIGN_OR_RETURN(v.width, r.Int("embed_dim", 1280, 1, kMaxVisionWidth));
    SP_ASSIGN_OR_RETURN(std::optional<double> ratio, doc.Number(cfg, "mlp_ratio", 0.01, 64));
    v.intermediate = static_cast<int64_t>(static_cast<double>(v.width) * ratio.value_or(4.0));
    SP_ASSIGN_OR_RETURN(v.out, r.Int("hidden_size", 3584, 1, kMaxDim));
  }
  return Status::Ok();
}

// A transformers ViT config of the CLIP / SigLIP family (CLIPVisionConfig, SiglipVisionConfig):
// the same keys, each family's own defaults.
struct VitDefaults {
  int64_t depth, width, intermediate, patch, image;
};
Status ReadVitWidths(const Reader& r, const VitDefaults& d, ModelSpec::VisionTower& v) {
  SP_ASSIGN_OR_RETURN(v.depth, r.Int("num_hidden_layers", d.depth, 1, kMaxVisionDepth));
  SP_ASSIGN_OR_RETURN(v.width, r.Int("hidden_size", d.width, 1, kMaxVisionWidth));
  SP_ASSIGN_OR_RETURN(v.intermediate, r.Int("intermediate_size", d.intermediate, 1, kMaxVisionWidth));
  SP_ASSIGN_OR_RETURN(v.patch, r.Int("patch_size", d.patch, 1, 256));
  SP_ASSIGN_OR_RETURN(v.image, r.Int("image_size", d.image, 1, 1 << 14));
  SP_ASSIGN_OR_RETURN(v.in_channels, r.Int("num_channels", 3, 1, 64));
  return Status::Ok();
}

// Gemma 3's vision_config (SiglipVisionConfig, as every Gemma 3 VLM publishes it: 27 layers
// of 1,152, MLP 4,304, 14-pixel patches of 896-pixel images); its projector maps to the text
// width, set once the text tower is read.
Status ReadSiglipVision(const Document& doc, const YAML::Node& cfg, ModelSpec::VisionTower& v) {
  SP_RETURN_IF_ERROR(doc.ExpectMap(cfg, "vision_config"));
  v.kind = "gemma3";
  const Reader r{doc, cfg};
  // SiglipVisionConfig builds the pooling head unless vision_use_head says false, as Gemma 3's
  // published configs do.
  SP_ASSIGN_OR_RETURN(v.pooling_head, r.Bool("vision_use_head", true));
  return ReadVitWidths(r, {27, 1152, 4304, 14, 896}, v);
}

// Qwen3.5's ViT (transformers Qwen3_5VisionModel, Qwen3-VL's): a biased Conv3d patch embedding,
// num_position_embeddings learned positions, LayerNorm blocks with biased qkv, proj, fc1 and
// fc2, and a merger of a LayerNorm and two biased Linears to the text width. Qwen3-VL
// (Qwen3VLVisionModel) adds a merger per deepstack_visual_indexes entry, default (8, 16, 24).
Status ReadQwen35Vision(const Document& doc, const YAML::Node& cfg, ModelSpec::VisionTower& v, const std::string& kind) {
  SP_RETURN_IF_ERROR(doc.ExpectMap(cfg, "vision_config"));
  const Reader r{doc, cfg};
  v.kind = kind;
  SP_ASSIGN_OR_RETURN(v.depth, r.Int("depth", 27, 1, kMaxVisionDepth));
  SP_ASSIGN_OR_RETURN(v.width, r.Int("hidden_size", 1152, 1, kMaxVisionWidth));
  SP_ASSIGN_OR_RETURN(v.intermediate, r.Int("intermediate_size", 4304, 1, kMaxVisionWidth));
  SP_ASSIGN_OR_RETURN(v.patch, r.Int("patch_size", 16, 1, 256));
  SP_ASSIGN_OR_RETURN(v.temporal_patch, r.Int("temporal_patch_size", 2, 1, 64));
  SP_ASSIGN_OR_RETURN(v.in_channels, r.Int("in_channels", 3, 1, 64));
  SP_ASSIGN_OR_RETURN(v.merge, r.Int("spatial_merge_size", 2, 1, 16));
  SP_ASSIGN_OR_RETURN(v.out, r.Int("out_hidden_size", 3584, 1, kMaxVisionWidth));
  SP_ASSIGN_OR_RETURN(v.image, r.Int("num_position_embeddings", 2304, 1, 1 << 20));
  if (kind == "qwen3_vl" || kind == "qwen3_vl_moe") {
    v.deepstack = 3;
    if (r.Has("deepstack_visual_indexes")) {
      SP_ASSIGN_OR_RETURN(std::vector<int64_t> taps, ReadLayerList(r, "deepstack_visual_indexes", 0));
      v.deepstack = static_cast<int64_t>(taps.size());
    }
  }
  return Status::Ok();
}

// LLaVA's and LLaVA-NeXT's CLIP encoder (CLIPVisionConfig; absent, LlavaConfig's own default,
// CLIP ViT-L/14 at 336 px) and the projector's settings at the top of the config: how many ViT
// layers vision_feature_layer concatenates, and multimodal_projector_bias.
Status ReadClipVision(const Document& doc, const YAML::Node& root, ModelSpec::VisionTower& v, const std::string& kind) {
  const YAML::Node cfg = root["vision_config"];
  const Reader top{doc, root};
  v.kind = kind;
  SP_ASSIGN_OR_RETURN(v.projector_bias, top.Bool("multimodal_projector_bias", true));
  v.feature_layers = 1;
  if (const YAML::Node fl = root["vision_feature_layer"]; fl.IsDefined() && fl.IsSequence()) {
    SP_ASSIGN_OR_RETURN(std::vector<int64_t> taps, ReadLayerList(top, "vision_feature_layer", 0));
    if (taps.empty()) return doc.ErrorAt(fl, "vision_feature_layer: expected a layer index or a non-empty list of them");
    v.feature_layers = static_cast<int64_t>(taps.size());
  }
  if (!cfg.IsDefined() || cfg.IsNull()) {
    const YAML::Node none(YAML::NodeType::Map);
    return ReadVitWidths(Reader{doc, none}, {24, 1024, 4096, 14, 336}, v);
  }
  SP_RETURN_IF_ERROR(doc.ExpectMap(cfg, "vision_config"));
  const Reader r{doc, cfg};
  SP_ASSIGN_OR_RETURN(std::string tower, r.Str("model_type", "clip_vision_model"));
  if (tower != "clip_vision_model")
    return doc.ErrorAt(cfg["model_type"], "vision_config.model_type: \"" + tower + "\" is not modelled under " + kind +
                                              " (supported: clip_vision_model)");
  return ReadVitWidths(r, {12, 768, 3072, 32, 224}, v);
}

// A size given as one number or as [height, width] (InternVLVisionConfig writes lists): the first.
StatusOr<int64_t> ReadSide(const Reader& r, const char* key, int64_t fallback) {
  const YAML::Node n = r.node[key];
  if (n.IsDefined() && n.IsSequence()) {
    const std::string expected = std::string(key) + ": expected a size or [height, width] from 1 to 65536";
    if (n.size() == 0 || !n[0].IsScalar()) return r.doc.ErrorAt(n, expected);
    const std::string& text = n[0].Scalar();
    int64_t side = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), side);
    if (ec != std::errc() || end != text.data() + text.size() || side < 1 || side > (1 << 16)) return r.doc.ErrorAt(n[0], expected);
    return side;
  }
  return r.Int(key, fallback, 1, 1 << 16);
}

// InternVL's InternViT (transformers InternVLVisionConfig under InternVLConfig, or the remote
// code's InternVisionConfig under InternVLChatConfig) and the pixel shuffle before its projector
// (downsample_ratio, 0.5: 2 x 2 patches into one token). The two spell the attention switches
// differently (attention_bias / use_qk_norm, qkv_bias / qk_normalization) and default the norm
// differently (layer_norm / rms_norm). InternViT-300M's widths are the defaults.
Status ReadInternVision(const Document& doc, const YAML::Node& root, ModelSpec::VisionTower& v, bool remote) {
  v.kind = "internvl";
  SP_ASSIGN_OR_RETURN(std::optional<double> ratio, doc.Number(root, "downsample_ratio", 0.01, 1));
  v.merge = std::max<int64_t>(1, static_cast<int64_t>(std::llround(1 / ratio.value_or(0.5))));
  YAML::Node cfg(YAML::NodeType::Map);  // absent: InternViT-300M's defaults
  if (const YAML::Node given = root["vision_config"]; given.IsDefined() && !given.IsNull()) cfg.reset(given);
  SP_RETURN_IF_ERROR(doc.ExpectMap(cfg, "vision_config"));
  const Reader r{doc, cfg};
  SP_ASSIGN_OR_RETURN(v.depth, r.Int("num_hidden_layers", 24, 1, kMaxVisionDepth));
  SP_ASSIGN_OR_RETURN(v.width, r.Int("hidden_size", 1024, 1, kMaxVisionWidth));
  SP_ASSIGN_OR_RETURN(v.intermediate, r.Int("intermediate_size", 4096, 1, kMaxVisionWidth));
  SP_ASSIGN_OR_RETURN(v.patch, ReadSide(r, "patch_size", 14));
  SP_ASSIGN_OR_RETURN(v.image, ReadSide(r, "image_size", 448));
  SP_ASSIGN_OR_RETURN(v.in_channels, r.Int("num_channels", 3, 1, 64));
  SP_ASSIGN_OR_RETURN(v.qkv_bias, r.Bool(remote ? "qkv_bias" : "attention_bias", false));
  SP_ASSIGN_OR_RETURN(v.qk_norm, r.Bool(remote ? "qk_normalization" : "use_qk_norm", false));
  SP_ASSIGN_OR_RETURN(std::string norm, r.Str("norm_type", remote ? "rms_norm" : "layer_norm"));
  if (norm != "rms_norm" && norm != "layer_norm")
    return doc.ErrorAt(cfg["norm_type"], "vision_config.norm_type: expected rms_norm or layer_norm, got \"" + norm + "\"");
  v.rms_norm = norm == "rms_norm";
  return Status::Ok();
}

// Mistral 3's Pixtral encoder (PixtralVisionConfig under Mistral3Config; Mistral Small 3.1's
// values as defaults) and the projector's settings, which sit at the top of the config.
Status ReadPixtralVision(const Document& doc, const YAML::Node& root, ModelSpec::VisionTower& v) {
  const YAML::Node cfg = root["vision_config"];
  SP_RETURN_IF_ERROR(doc.ExpectMap(cfg, "vision_config"));
  const Reader r{doc, cfg}, top{doc, root};
  v.kind = "mistral3";
  SP_ASSIGN_OR_RETURN(v.depth, r.Int("num_hidden_layers", 24, 1, kMaxVisionDepth));
  SP_ASSIGN_OR_RETURN(v.width, r.Int("hidden_size", 1024, 1, kMaxVisionWidth));
  SP_ASSIGN_OR_RETURN(v.intermediate, r.Int("intermediate_size", 4096, 1, kMaxVisionWidth));
  SP_ASSIGN_OR_RETURN(v.patch, r.Int("patch_size", 14, 1, 256));
  SP_ASSIGN_OR_RETURN(v.in_channels, r.Int("num_channels", 3, 1, 64));
  SP_ASSIGN_OR_RETURN(v.merge, top.Int("spatial_merge_size", 2, 1, 16));
  SP_ASSIGN_OR_RETURN(v.projector_bias, top.Bool("multimodal_projector_bias", false));
  return Status::Ok();
}

// GPT-2, GPT-NeoX, OPT, BLOOM and MPT: LayerNorm, a plain MLP, and heads that split the
// hidden size (their configs carry no head_dim).
bool GptStyle(const std::string& type) {
  return type == "gpt2" || type == "gpt_neox" || type == "opt" || type == "bloom" || type == "mpt";
}

// GPT-J, CodeGen, GPT-Neo, GPTBigCode, StableLM and DBRX split the hidden size into their heads
// whatever a head_dim key says.
bool GptEra(const std::string& type) {
  return type == "gptj" || type == "codegen" || type == "gpt_neo" || type == "gpt_bigcode" || type == "stablelm" ||
         type == "dbrx";
}

// Family traits that are not config keys.
void ApplyFamily(const std::string& type, ModelSpec& m) {
  // Gemma's (VaultGemma's) and OLMo 2/3's (FlexOlmo's) RMSNorm multiply by the weight in fp32,
  // then cast; llama's and the others' cast first.
  static const std::set<std::string> kFp32WeightNorms = {"gemma", "gemma2", "gemma3_text", "vaultgemma",
                                                         "olmo2", "olmo3",  "flex_olmo"};
  // DeepSeek-style routers (DeepseekV3TopkRouter and its copies) run the gate linear in fp32 on
  // an fp32 copy of the hidden states; Qwen's, Mixtral's and MiniMax-M2's run in the model's dtype.
  static const std::set<std::string> kFp32InputRouters = {"deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa",
                                                          "glm4_moe",    "glm4_moe_lite", "dots1",     "ernie4_5_moe",
                                                          "exaone_moe",  "solar_open",  "nemotron_h"};
  m.norm_weight_fp32 = kFp32WeightNorms.count(type) > 0;
  m.router_input_fp32 = kFp32InputRouters.count(type) > 0;
  if (GptStyle(type)) {
    m.norm = NormKind::kLayer;
    m.mlp = MlpKind::kPlain;
    m.gelu = type != "opt";  // OPT uses ReLU
    if (type != "opt" && type != "mpt") m.qkv_bias = m.o_bias = m.mlp_bias = true;
    m.kv_heads = m.heads;
    if (m.head_dim == 0) m.head_dim = m.hidden / m.heads;
  }
  if (type == "qwen2" || type == "qwen2_moe") m.qkv_bias = true;  // q, k, v biased; o not
  if (type == "gemma") m.gelu = true;  // GeGLU (gelu_pytorch_tanh), two norms per layer
  if (type == "starcoder2") {          // c_fc/c_proj GELU MLP and LayerNorm, biases everywhere (use_bias)
    m.norm = NormKind::kLayer;
    m.mlp = MlpKind::kPlain;
    m.gelu = true;
    m.qkv_bias = m.o_bias = m.mlp_bias = true;
  }
  if (type == "qwen3" || type == "qwen3_moe" || type == "gemma3_text" || type == "qwen3_vl_text" || type == "qwen3_vl_moe_text")
    m.qk_norm = true;
  if (type == "gemma2" || type == "gemma3_text") {
    m.norms_per_layer = 4;  // input, post_attention, pre_feedforward, post_feedforward
    m.gelu = true;
  }
  if (type == "vaultgemma") m.gelu = true;  // input and pre_feedforward norms only
  if (type == "flex_olmo") m.mlp_bias = false;
  if (type == "qwen2_moe") m.shared_expert_gate = true;
  if (type == "nemotron") {  // LayerNorm1P (weight and bias), up/down MLP with squared ReLU
    m.norm = NormKind::kLayer;
    m.mlp = MlpKind::kPlain;
  }
  // OLMo, OLMo-2 and Cohere keep llama's keys (attention_bias on q/k/v/o); their MLPs have no
  // bias whatever mlp_bias says.
  if (type == "olmo" || type == "olmo2" || type == "olmo3" || type == "cohere" || type == "cohere2") m.mlp_bias = false;
  // Hunyuan dense (modeling_hunyuan_v1_dense.py): query_layernorm and key_layernorm of head_dim in
  // every layer; attention_bias on all four projections (the common keys).
  if (type == "hunyuan_v1_dense") m.qk_norm = true;
  // Helium (modeling_helium.py): attention_bias on q, k and v; o_proj never.
  if (type == "helium") m.o_bias = false;
  // Arcee (modeling_arcee.py): up_proj and down_proj around a squared ReLU, no gate.
  if (type == "arcee") m.mlp = MlpKind::kPlain;
  // EXAONE 4 (modeling_exaone4.py): per-head q_norm and k_norm of head_dim; post_attention and
  // post_feedforward norms after each block in place of pre-norms. EXAONE-4.0-32B counts
  // 32,003,216,384 parameters.
  if (type == "exaone4") m.qk_norm = true;
  // OLMo-1 (transformers modeling_olmo.py): OlmoLayerNorm is F.layer_norm with neither weight
  // nor bias, so its input, post-attention and final norms hold no parameters: counted as
  // none. OLMo-7B-hf counts 6,888,095,744 parameters.
  if (type == "olmo") {
    m.norm = NormKind::kLayer;
    m.norms_per_layer = 0;
    m.final_norm = false;
  }
  // OLMo-2 (modeling_olmo2.py): q_norm and k_norm are RMSNorms over the whole q and k
  // projections (heads x d and KV heads x d), not per head; post_attention_layernorm and
  // post_feedforward_layernorm sit after each block (norms of the output, same count as
  // pre-norms), then a final norm. OLMo-2-1124-7B counts 7,298,617,344 parameters.
  // OLMo 3 (modeling_olmo3.py) keeps OLMo-2's layer and slides in three of every four
  // layers. Olmo-3-1025-7B counts 7,298,011,136 parameters.
  if (type == "olmo2" || type == "olmo3") m.qk_norm_whole = true;
  // Phi-1/1.5/2 (modeling_phi.py): q/k/v/dense and fc1/fc2 all with biases, one LayerNorm
  // (weight and bias) feeding attention and the gelu_new MLP in parallel, partial rotary
  // (partial_rotary_factor, no parameters), final_layernorm, an lm_head with a bias.
  // phi-2 counts 2,779,683,840 parameters.
  if (type == "phi") {
    m.norm = NormKind::kLayer;
    m.mlp = MlpKind::kPlain;
    m.gelu = true;
    m.norms_per_layer = 1;
    m.parallel_residual = true;
    m.qkv_bias = m.o_bias = m.mlp_bias = true;
    m.head_bias = true;
  }
  // Cohere / Command-R (modeling_cohere.py): CohereLayerNorm has a weight and no bias; one
  // input_layernorm feeds attention and the SwiGLU MLP in parallel; the head is tied by
  // default; logit_scale multiplies the logits (a constant, no parameter).
  // c4ai-command-r-v01 counts 34,980,831,232 parameters.
  // Cohere 2 (Command R7B, Command A; modeling_cohere2.py) keeps that layer, with no q/k norms,
  // and slides in three of every four layers. c4ai-command-r7b-12-2024 counts 8,028,033,024.
  if (type == "cohere" || type == "cohere2") {
    m.norm = NormKind::kLayer;
    m.norm_bias = false;
    m.norms_per_layer = 1;
    m.parallel_residual = true;
  }
}

}  // namespace

const std::vector<std::string>& SupportedModelTypes() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> v;
    for (const auto& [k, _] : DefaultsTable()) v.push_back(k);
    for (const auto& [wrapper, _] : kTextTowers) v.push_back(wrapper);
    for (const auto& [alias, _] : kSameArchitecture) v.push_back(alias);
    v.insert(v.end(), {"qwen2_vl", "qwen2_5_vl"});  // qwen2 text towers with a vision encoder
    v.insert(v.end(), {"llava", "llava_next"});     // text_config's tower behind a CLIP encoder
    v.insert(v.end(), {"internvl", "internvl_chat"});  // a text tower behind InternViT
    std::sort(v.begin(), v.end());
    return v;
  }();
  return types;
}

const char* MptAttnImplName(AttentionImpl impl) {
  for (const auto& [name, kind] : kMptAttnImpls)
    if (kind == impl) return name;
  return nullptr;
}

const GptKeys& GptKeysOf(const std::string& model_type) { return model_type == "gpt_neo" ? kGptNeoKeys : kGpt2Keys; }

const LinearMixerKeys& LinearMixerKeysOf(const std::string& model_type) {
  static const LinearMixerKeys kMamba{{"mamba_num_heads", 128}, {"mamba_head_dim", 64}, {"n_groups", 8},
                                      {"ssm_state_size", 128}, {"conv_kernel", 4}};
  // GraniteMoeHybridConfig; its mamba_d_head defaults to "auto" (ReadGraniteHybrid).
  static const LinearMixerKeys kGranite{{"mamba_n_heads", 128}, {"mamba_d_head", 0}, {"mamba_n_groups", 1},
                                        {"mamba_d_state", 256}, {"mamba_d_conv", 4}};
  static const LinearMixerKeys kDelta{{"linear_num_value_heads", 32}, {"linear_value_head_dim", 128},
                                      {"linear_num_key_heads", 16}, {"linear_key_head_dim", 128},
                                      {"linear_conv_kernel_dim", 4}};
  // Mamba2Config (Mamba-Codestral): the same mixer under its own keys.
  static const LinearMixerKeys kMamba2{{"num_heads", 128}, {"head_dim", 64}, {"n_groups", 8}, {"state_size", 128},
                                       {"conv_kernel", 4}};
  if (model_type == "nemotron_h") return kMamba;
  if (model_type == "mamba2") return kMamba2;
  if (model_type == "granitemoehybrid" || model_type == "bamba" || model_type == "falcon_h1") return kGranite;
  return kDelta;
}

Status ValidateModel(const ModelSpec& m) {
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
    return Status::BadInput("num_key_value_heads (" + std::to_string(m.kv_heads) +
                            ") must divide num_attention_heads (" + std::to_string(m.heads) + ")");
  if (m.is_moe() && m.experts_per_token > m.experts)
    return Status::BadInput("num_experts_per_tok (" + std::to_string(m.experts_per_token) +
                            ") exceeds the number of experts (" + std::to_string(m.experts) + ")");
  ParamCounts c = CountParams(m);
  if (c.total <= 0 || c.total > (int64_t{1} << 52))
    return Status::BadInput("the model's parameter count (" + std::to_string(c.total) + ") is out of range");
  return Status::Ok();
}

StatusOr<ModelSpec> ParseModel(const Document& doc, const std::string& display_name) {
  return ParseModelNode(doc, doc.root(), display_name);
}

// quantization_config: the weight format a checkpoint ships (fbgemm_fp8, fp8, compressed-tensors,
// gptq, awq, bitsandbytes) and the modules it leaves in 16-bit. Key names follow each
// method's transformers config class.
Status ReadSkipList(const Document& doc, const YAML::Node& q, const char* key, CheckpointQuant& out) {
  const YAML::Node list = q[key];
  if (!list.IsDefined() || list.IsNull()) return Status::Ok();
  if (!list.IsSequence()) return doc.ErrorAt(list, std::string("quantization_config.") + key + ": expected a list of module names");
  for (const auto& e : list) {
    if (!e.IsScalar()) return doc.ErrorAt(e, std::string("quantization_config.") + key + ": expected module names (strings)");
    std::string name = e.Scalar();
    // vLLM's compressed-tensors lists may hold "re:" regular expressions; a literal tail
    // such as "re:.*lm_head" still names the module.
    if (name.rfind("re:", 0) == 0) {
      name = name.substr(3);
      const size_t cut = name.find_last_of("*+?)]^$\\");
      if (cut != std::string::npos) name = name.substr(cut + 1);
    }
    // "model.layers.*.self_attn" (gpt-oss) names the module under every layer.
    if (const size_t star = name.rfind("*."); star != std::string::npos) name = name.substr(star + 2);
    while (!name.empty() && name.front() == '.') name.erase(name.begin());
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0) name.resize(name.size() - 7);
    if (!name.empty()) out.skip.push_back(name);
  }
  return Status::Ok();
}

Status ReadQuantization(const Document& doc, const YAML::Node& q, ModelSpec& m) {
  if (!q.IsDefined() || q.IsNull()) return Status::Ok();
  SP_RETURN_IF_ERROR(doc.ExpectMap(q, "quantization_config"));
  CheckpointQuant out;
  SP_ASSIGN_OR_RETURN(std::optional<std::string> method, doc.String(q, "quant_method"));
  SP_ASSIGN_OR_RETURN(std::optional<bool> in4, doc.Bool(q, "load_in_4bit"));
  SP_ASSIGN_OR_RETURN(std::optional<bool> in8, doc.Bool(q, "load_in_8bit"));
  if (!method && (in4 || in8)) method = "bitsandbytes";  // configs written before quant_method existed
  const std::vector<std::string> supported = {"fbgemm_fp8", "fp8", "compressed-tensors", "gptq", "awq", "auto-round",
                                              "bitsandbytes", "eetq", "modelopt", "mxfp4"};
  if (!method) return doc.ErrorAt(q, "quantization_config: missing quant_method; expected one of " + Join(supported));
  out.method = *method;
  if (out.method == "intel/auto-round" || out.method == "auto_round") out.method = "auto-round";  // its other spellings
  auto bits_key = [&](const YAML::Node& n, const char* key, int64_t fallback) -> StatusOr<int> {
    SP_ASSIGN_OR_RETURN(std::optional<int64_t> b, doc.Int(n, key, 2, 16));
    return static_cast<int>(b.value_or(fallback));
  };
  if (out.method == "fbgemm_fp8" || out.method == "fp8") {
    out.format = Dtype::kFp8;
    out.bits = 8;
    out.float_format = true;
    out.group_size = out.method == "fbgemm_fp8" ? 0 : -1;  // fbgemm: a scale per output row
    const YAML::Node block = q["weight_block_size"];
    if (block.IsDefined() && !block.IsNull()) {
      const auto side = [&](size_t i) -> int64_t {
        if (!block.IsSequence() || block.size() != 2 || !block[i].IsScalar()) return 0;
        const std::string& t = block[i].Scalar();
        if (t.empty() || t.size() > 7 || !std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isdigit(c); })) return 0;
        return std::stoll(t);
      };
      const int64_t rows = side(0), cols = side(1);
      if (rows <= 0 || cols <= 0)
        return doc.ErrorAt(block, "quantization_config.weight_block_size: expected [rows, columns] of positive integers");
      out.block_rows = rows;
      out.block_cols = cols;
    }
    SP_RETURN_IF_ERROR(ReadSkipList(doc, q, "modules_to_not_convert", out));
  } else if (out.method == "gptq" || out.method == "awq" || out.method == "auto-round") {
    // AutoRound (intel/auto-round, transformers' AutoRoundConfig) stores GPTQ's layout: packed
    // integer weights with an fp16 scale and a packed zero point per group (128 by default).
    const char* bits = out.method == "awq" && !q["bits"].IsDefined() ? "w_bit" : "bits";
    const char* group = out.method == "awq" && !q["group_size"].IsDefined() ? "q_group_size" : "group_size";
    SP_ASSIGN_OR_RETURN(out.bits, bits_key(q, bits, 4));
    SP_ASSIGN_OR_RETURN(std::optional<int64_t> g, doc.Int(q, group, -1, 1 << 20));
    out.group_size = g.value_or(128) == -1 ? 0 : g.value_or(128);  // -1: one scale per output channel
    SP_RETURN_IF_ERROR(ReadSkipList(doc, q, "modules_to_not_convert", out));
  } else if (out.method == "eetq") {
    // EETQ (NetEase-FuXi/EETQ, transformers' EetqConfig): int8 weights, one fp16 scale per
    // output channel; "int8" is the only weights value it takes.
    SP_ASSIGN_OR_RETURN(std::optional<std::string> weights, doc.String(q, "weights"));
    if (weights.value_or("int8") != "int8")
      return doc.ErrorAt(q["weights"], "quantization_config.weights: EETQ stores int8 weights, got \"" + *weights + "\"");
    out.bits = 8;
    out.group_size = 0;
    SP_RETURN_IF_ERROR(ReadSkipList(doc, q, "modules_to_not_convert", out));
  } else if (out.method == "bitsandbytes") {
    if (in4.value_or(false)) {
      out.format = Dtype::kNf4;
      out.bits = 4;
      SP_ASSIGN_OR_RETURN(std::optional<bool> dq, doc.Bool(q, "bnb_4bit_use_double_quant"));
      out.double_quant = dq.value_or(false);
    } else if (in8.value_or(false)) {
      out.format = Dtype::kInt8;
      out.bits = 8;
    } else {
      return doc.ErrorAt(q, "quantization_config: bitsandbytes needs load_in_4bit or load_in_8bit set to true");
    }
    SP_RETURN_IF_ERROR(ReadSkipList(doc, q, "llm_int8_skip_modules", out));
  } else if (out.method == "mxfp4") {
    // OCP MX FP4 (gpt-oss): 4-bit e2m1 weights with one 8-bit e8m0 scale per 32.
    out.bits = 4;
    out.float_format = true;
    out.group_size = 32;
    SP_RETURN_IF_ERROR(ReadSkipList(doc, q, "modules_to_not_convert", out));
  } else if (out.method == "modelopt") {
    // NVIDIA ModelOpt checkpoints (TensorRT-LLM, vLLM): quant_algo and exclude_modules, at
    // the top or nested under "quantization" as in hf_quant_config.json.
    const YAML::Node nested = q["quantization"];
    const YAML::Node algo_at = nested.IsDefined() && nested.IsMap() ? nested : q;
    SP_ASSIGN_OR_RETURN(std::optional<std::string> algo, doc.String(algo_at, "quant_algo"));
    if (algo.value_or("") == "FP8") {
      out.bits = 8;
      out.float_format = true;
      out.group_size = -1;  // one fp32 scale per tensor
    } else if (algo.value_or("") == "NVFP4") {
      out.bits = 4;
      out.float_format = true;
      SP_ASSIGN_OR_RETURN(std::optional<int64_t> g, doc.Int(algo_at, "group_size", 1, 1 << 20));
      out.group_size = g.value_or(16);  // an fp8 scale per 16 weights
    } else {
      return doc.ErrorAt(algo_at["quant_algo"].IsDefined() ? algo_at["quant_algo"] : algo_at,
                         "quantization_config.quant_algo: expected \"FP8\" or \"NVFP4\" for modelopt, got \"" +
                             algo.value_or("") + "\"");
    }
    SP_RETURN_IF_ERROR(ReadSkipList(doc, algo_at, "exclude_modules", out));
  } else if (out.method == "compressed-tensors") {
    // The widest weight scheme among config_groups decides the format (a conservative read
    // of mixed-precision recipes).
    const YAML::Node groups = q["config_groups"];
    if (!groups.IsDefined() || !groups.IsMap() || groups.size() == 0)
      return doc.ErrorAt(groups.IsDefined() ? groups : q, "quantization_config.config_groups: expected a map of schemes with \"weights\"");
    out.bits = 0;
    for (const auto& g : groups) {
      const YAML::Node w = g.second.IsMap() ? g.second["weights"] : YAML::Node();
      if (!w.IsDefined() || !w.IsMap()) return doc.ErrorAt(g.second, "quantization_config.config_groups." + g.first.Scalar() + ": expected a \"weights\" scheme");
      SP_ASSIGN_OR_RETURN(int b, bits_key(w, "num_bits", 8));
      if (b <= out.bits) continue;
      out.bits = b;
      SP_ASSIGN_OR_RETURN(std::optional<std::string> type, doc.String(w, "type"));
      out.float_format = type.value_or("int") == "float";
      SP_ASSIGN_OR_RETURN(std::optional<std::string> strategy, doc.String(w, "strategy"));
      SP_ASSIGN_OR_RETURN(std::optional<int64_t> gs, doc.Int(w, "group_size", 1, 1 << 20));
      out.group_size = gs ? *gs : strategy.value_or("") == "tensor" ? -1 : 0;
    }
    SP_RETURN_IF_ERROR(ReadSkipList(doc, q, "ignore", out));
  } else {
    std::string hint = Suggest(out.method, supported);
    return doc.ErrorAt(q["quant_method"], "quantization_config.quant_method: \"" + out.method + "\" is not modelled" +
                                               (hint.empty() ? "" : ", did you mean '" + hint + "'?") + " (supported: " +
                                               Join(supported) + ")");
  }
  if (out.format == Dtype::kBf16) {  // integer and float schemes by width
    if (out.bits > 8 || out.bits < 2)
      return doc.ErrorAt(q, "quantization_config: " + std::to_string(out.bits) + "-bit weights are not a quantized format");
    out.format = out.bits == 8 ? (out.float_format ? Dtype::kFp8 : Dtype::kInt8) : Dtype::kInt4;
    if (out.bits != 8 && out.bits != 4)  // 2/3-bit GPTQ: counted at 4 bits, the next stored width
      out.bits = out.bits < 8 ? 4 : 8;
  }
  m.quant = std::move(out);
  ResolveKeptModules(m);
  return Status::Ok();
}

namespace {
StatusOr<ModelSpec> ParseModelUnguarded(const Document& doc, const YAML::Node& root, const std::string& display_name);
}  // namespace

StatusOr<ModelSpec> ParseModelNode(const Document& doc, const YAML::Node& root, const std::string& display_name) {
  return Guarded(doc, [&] { return ParseModelUnguarded(doc, root, display_name); });
}

namespace {
StatusOr<ModelSpec> ParseModelUnguarded(const Document& doc, const YAML::Node& root, const std::string& display_name) {
  YAML::Node node = root;
  SP_ASSIGN_OR_RETURN(std::optional<std::string> type, doc.String(node, "model_type"));
  if (!type) {
    std::vector<std::string> expected = SupportedModelTypes();
    return doc.ErrorAt(node, "model_type: missing; expected one of " + Join(expected));
  }
  ModelSpec m;
  m.name = display_name;
  ModelSpec::VisionTower vision;
  const std::string wrapper = *type;
  if (const auto tower = kTextTowers.find(*type); tower != kTextTowers.end()) {
    // Gemma 3's and Mistral 3's vision encoders are counted apart when the file gives them.
    if (const YAML::Node vc = root["vision_config"]; vc.IsDefined() && !vc.IsNull()) {
      if (*type == "gemma3") SP_RETURN_IF_ERROR(ReadSiglipVision(doc, vc, vision));
      if (*type == "mistral3") SP_RETURN_IF_ERROR(ReadPixtralVision(doc, root, vision));
      if (*type == "qwen3_5" || *type == "qwen3_5_moe" || *type == "qwen3_vl" || *type == "qwen3_vl_moe")
        SP_RETURN_IF_ERROR(ReadQwen35Vision(doc, vc, vision, *type));
    }
    YAML::Node text = node["text_config"];
    if (!text.IsDefined() || text.IsNull()) text = YAML::Node(YAML::NodeType::Map);
    SP_RETURN_IF_ERROR(doc.ExpectMap(text, "text_config"));
    node.reset(text);  // rebinds; `node = text` would overwrite root's content (yaml-cpp)
    type = tower->second;
    if (!node["torch_dtype"].IsDefined() && !node["dtype"].IsDefined()) {
      Reader top{doc, root};
      SP_RETURN_IF_ERROR(ReadDtype(top, m));
    }
  }
  // LLaVA and LLaVA-NeXT (LlavaForConditionalGeneration, LlavaNextForConditionalGeneration): a
  // CLIP encoder and projector counted apart (ReadClipVision) and whichever text tower
  // text_config names (llama by default, as LlavaConfig builds it).
  // InternVL (InternVLForConditionalGeneration, text_config; the remote code's InternVLChatModel,
  // llm_config): an InternViT encoder and projector counted apart (ReadInternVision) and whichever
  // text tower the config names (qwen2 by default, as InternVLConfig builds it).
  const bool internvl = *type == "internvl" || *type == "internvl_chat";
  if (*type == "llava" || *type == "llava_next" || internvl) {
    if (internvl) {
      SP_RETURN_IF_ERROR(ReadInternVision(doc, root, vision, *type == "internvl_chat"));
    } else {
      SP_RETURN_IF_ERROR(ReadClipVision(doc, root, vision, *type));
    }
    YAML::Node text = node[*type == "internvl_chat" ? "llm_config" : "text_config"];
    if (!text.IsDefined() || text.IsNull()) text = YAML::Node(YAML::NodeType::Map);
    SP_RETURN_IF_ERROR(doc.ExpectMap(text, "text_config"));
    node.reset(text);
    SP_ASSIGN_OR_RETURN(std::optional<std::string> text_type, doc.String(node, "model_type"));
    type = text_type.value_or(internvl ? "qwen2" : "llama");
    if (kTextTowers.count(*type) || *type == "llava" || *type == "llava_next" || *type == "qwen2_vl" || *type == "qwen2_5_vl" ||
        *type == "internvl" || *type == "internvl_chat")
      return doc.ErrorAt(node["model_type"], "text_config.model_type: expected a decoder-only text model, got \"" + *type + "\"");
    if (!node["torch_dtype"].IsDefined() && !node["dtype"].IsDefined()) {
      Reader top{doc, root};
      SP_RETURN_IF_ERROR(ReadDtype(top, m));
    }
  }
  // Qwen2-VL and Qwen2.5-VL: a qwen2 text tower, its keys at the top level as the checkpoints
  // publish them or in text_config as newer transformers re-save them, and a vision encoder
  // (vision_config) counted apart (ReadQwenVision).
  if (*type == "qwen2_vl" || *type == "qwen2_5_vl") {
    SP_RETURN_IF_ERROR(ReadQwenVision(doc, root["vision_config"], *type, vision));
    const YAML::Node text = node["text_config"];
    if (text.IsDefined() && text.IsMap() && text["hidden_size"].IsDefined()) {
      node.reset(text);
      if (!node["torch_dtype"].IsDefined() && !node["dtype"].IsDefined()) {
        Reader top{doc, root};
        SP_RETURN_IF_ERROR(ReadDtype(top, m));
      }
    }
    type = "qwen2";
  }
  if (const auto same = kSameArchitecture.find(*type); same != kSameArchitecture.end()) type = same->second;
  // Encoder-decoder models have a second stack, cross-attention and two sequence lengths;
  // counting them as a decoder would give a wrong answer, so say they are not supported.
  static const std::vector<std::string> kEncoderDecoder = {"t5", "mt5", "umt5", "longt5", "bart", "mbart", "pegasus",
                                                          "marian", "whisper", "switch_transformers", "encoder-decoder",
                                                          "bigbird_pegasus", "led", "nllb-moe", "m2m_100", "prophetnet"};
  const bool enc_dec_flag = root["is_encoder_decoder"].IsDefined() && root["is_encoder_decoder"].IsScalar() &&
                            root["is_encoder_decoder"].Scalar() == "true";
  if (enc_dec_flag || std::find(kEncoderDecoder.begin(), kEncoderDecoder.end(), *type) != kEncoderDecoder.end())
    return doc.ErrorAt(root["model_type"], "model_type: \"" + *type + "\" is an encoder-decoder model, which shardplan "
                                           "does not support: it plans decoder-only models (" + Join(SupportedModelTypes()) + ")");
  auto it = DefaultsTable().find(*type);
  if (it == DefaultsTable().end()) {
    std::string hint = Suggest(*type, SupportedModelTypes());
    return doc.ErrorAt(root["model_type"], "model_type: unsupported \"" + *type + "\"" +
                                                     (hint.empty() ? "" : ", did you mean '" + hint + "'?") +
                                                     " (supported: " + Join(SupportedModelTypes()) + ")");
  }
  SP_RETURN_IF_ERROR(doc.CheckMisspelledKeys(node, kCommonKeys));
  const Defaults& d = it->second;
  m.model_type = *type;
  m.decoder_layer_class = d.layer_class;
  Reader r{doc, node};
  if (*type == "gpt2") {
    SP_RETURN_IF_ERROR(ReadGpt2(r, d, m));
  } else if (*type == "opt") {
    SP_RETURN_IF_ERROR(ReadOpt(r, d, m));
  } else if (*type == "gptj" || *type == "codegen") {
    SP_RETURN_IF_ERROR(ReadGptj(r, d, m));
  } else if (*type == "gpt_neo") {
    SP_RETURN_IF_ERROR(ReadGptNeo(r, d, m));
  } else if (*type == "gpt_bigcode") {
    SP_RETURN_IF_ERROR(ReadGptBigCode(r, d, m));
  } else if (*type == "dbrx") {
    SP_RETURN_IF_ERROR(ReadDbrx(r, d, m));
  } else if (*type == "qwen") {
    SP_RETURN_IF_ERROR(ReadQwen1(r, d, m));
  } else if (*type == "internlm" || *type == "internlm2") {
    SP_RETURN_IF_ERROR(ReadInternlm(r, d, m, *type == "internlm2"));
  } else if (*type == "bloom") {
    SP_RETURN_IF_ERROR(ReadBloom(r, m));
  } else if (*type == "mpt") {
    SP_RETURN_IF_ERROR(ReadMpt(r, d, m));
  } else if (*type == "falcon") {
    SP_RETURN_IF_ERROR(ReadFalcon(r, d, m));
  } else if (*type == "chatglm") {
    SP_RETURN_IF_ERROR(ReadChatglm(r, d, m));
  } else if (*type == "baichuan") {
    SP_RETURN_IF_ERROR(ReadBaichuan(r, d, m));
  } else if (*type == "exaone") {
    SP_RETURN_IF_ERROR(ReadCommon(r, d, m));
    // The layer count is num_layers there (num_hidden_layers maps to it).
    if (!r.Has("num_hidden_layers")) {
      SP_ASSIGN_OR_RETURN(m.layers, r.Int("num_layers", d.layers, 1, kMaxLayers));
    }
  } else {
    SP_RETURN_IF_ERROR(ReadCommon(r, d, m));
  }
  if (*type == "gpt_neox") {
    SP_ASSIGN_OR_RETURN(m.parallel_residual, r.Bool("use_parallel_residual", true));
  }
  // GLM (GLM-4 in transformers' format) and GLM-4-0414: attention_bias (default true) biases q,
  // k and v; o_proj never. GLM-4-0414 adds post_self_attn_layernorm and post_mlp_layernorm.
  // glm-4-9b-chat-hf counts 9,399,951,360 parameters, GLM-4-32B-0414 32,566,487,552.
  if (*type == "glm" || *type == "glm4") {
    SP_ASSIGN_OR_RETURN(m.qkv_bias, r.Bool("attention_bias", true));
    m.o_bias = false;
    if (*type == "glm4") m.norms_per_layer = 4;
  }
  // StableLM (modeling_stablelm.py): heads of hidden / heads; q/k/v biased under use_qkv_bias,
  // o_proj never; LayerNorms with weight and bias; under use_parallel_residual one input norm
  // feeds attention and the SwiGLU MLP; qk_layernorm is a LayerNorm (weight only) per head,
  // heads x d and KV heads x d weights in all. stablelm-2-1_6b counts 1,644,515,328,
  // stablelm-2-12b 12,143,185,920.
  if (*type == "stablelm") {
    m.head_dim = m.hidden / m.heads;
    SP_ASSIGN_OR_RETURN(m.qkv_bias, r.Bool("use_qkv_bias", false));
    m.o_bias = false;
    SP_ASSIGN_OR_RETURN(m.qk_norm_whole, r.Bool("qk_layernorm", false));
    SP_ASSIGN_OR_RETURN(m.parallel_residual, r.Bool("use_parallel_residual", false));
    m.norms_per_layer = m.parallel_residual ? 1 : 2;
    m.norm = NormKind::kLayer;
  }
  // Seed-OSS (modeling_seed_oss.py): attention_bias (default true) on q, k and v,
  // attention_out_bias on o_proj. Seed-OSS-36B counts 36,151,104,512 parameters.
  if (*type == "seed_oss") {
    SP_ASSIGN_OR_RETURN(m.qkv_bias, r.Bool("attention_bias", true));
    SP_ASSIGN_OR_RETURN(m.o_bias, r.Bool("attention_out_bias", false));
  }
  // ERNIE 4.5 (modeling_ernie4_5.py): use_bias on every attention and MLP projection.
  // ERNIE-4.5-0.3B counts 360,748,032 parameters.
  if (*type == "ernie4_5") {
    SP_ASSIGN_OR_RETURN(bool bias, r.Bool("use_bias", false));
    m.qkv_bias = m.o_bias = m.mlp_bias = bias;
  }
  // SmolLM3 slides only under use_sliding_window (off in the published configs); Cohere 2, EXAONE 4
  // and OLMo 3 slide in three of every four layers unless their configs say otherwise.
  if (*type == "smollm3") {
    SP_ASSIGN_OR_RETURN(bool sliding, r.Bool("use_sliding_window", false));
    if (!sliding) m.sliding_window = 0;
    SP_RETURN_IF_ERROR(ReadSlidingLayers(r, m, 0));
  }
  // DeepSeek-MoE (deepseek-ai/deepseek-moe-16b-base modeling_deepseek.py): llama's attention and
  // DeepSeek's MoE layers, the shared experts one MLP of n_shared_experts x moe_intermediate_size
  // (the same parameters and FLOPs as that many experts) and a bias-free gate.
  // deepseek-moe-16b-base counts 16,375,728,128 parameters.
  if (*type == "deepseek") SP_RETURN_IF_ERROR(ReadDeepseekExperts(r, m, {0, 0, 1, 1407, 0}));
  // InternLM3 (InternLM3Config): qkv_bias and bias are transformers' attribute names for
  // attention_bias (all four projections in its llama layer) and mlp_bias.
  if (*type == "internlm3") {
    if (r.Has("qkv_bias")) {
      SP_ASSIGN_OR_RETURN(m.qkv_bias, r.Bool("qkv_bias", false));
      m.o_bias = m.qkv_bias;
    }
    if (r.Has("bias")) {
      SP_ASSIGN_OR_RETURN(m.mlp_bias, r.Bool("bias", false));
    }
  }
  // Ministral-8B slides in the layers layer_types names, by default every layer (MinistralConfig's
  // 4,096-token window); VaultGemma alternates sliding and global layers as Gemma 2 does.
  if (*type == "ministral") {
    if (!node["sliding_window"].IsDefined()) m.sliding_window = 4096;
    SP_RETURN_IF_ERROR(ReadSlidingLayers(r, m, 0));
  }
  if (*type == "vaultgemma") {
    if (!node["sliding_window"].IsDefined()) m.sliding_window = 4096;
    SP_RETURN_IF_ERROR(ReadSlidingLayers(r, m, 2));
  }
  if (*type == "cohere2" || *type == "exaone4" || *type == "olmo3") {
    // Their config classes default to a 4,096-token window; a null one turns it off.
    if (!node["sliding_window"].IsDefined()) m.sliding_window = 4096;
    SP_RETURN_IF_ERROR(ReadSlidingLayers(r, m, 4));
  }
  // Phi-3.5-MoE (modeling_phimoe.py): q/k/v/o biased under attention_bias; LayerNorms with
  // weight and bias; every layer an MoE of num_local_experts SwiGLU experts of
  // intermediate_size behind a bias-free router; lm_head biased under lm_head_bias.
  // Phi-3.5-MoE-instruct counts 41,873,153,344 parameters.
  if (*type == "phimoe") {
    SP_ASSIGN_OR_RETURN(m.experts, r.Int("num_local_experts", 16, 1, 1 << 16));
    SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok", 2, 1, m.experts));
    SP_ASSIGN_OR_RETURN(m.head_bias, r.Bool("lm_head_bias", false));
    m.expert_intermediate = m.intermediate;
    m.norm = NormKind::kLayer;
    MarkAllMoe(m);
  }
  if (*type == "cohere") {  // q_norm/k_norm: CohereLayerNorm weights of (heads, head_dim), (kv_heads, head_dim)
    SP_ASSIGN_OR_RETURN(m.qk_norm_whole, r.Bool("use_qk_norm", false));
  }
  if (*type == "phi") {
    SP_ASSIGN_OR_RETURN(bool qk_layernorm, r.Bool("qk_layernorm", false));
    if (qk_layernorm)  // LayerNorms over head_dim with weight and bias: no ModelSpec term holds them
      return doc.ErrorAt(node["qk_layernorm"], "qk_layernorm: true (phi's LayerNorms on q and k) is not modelled; "
                                               "the published Phi-1, Phi-1.5 and Phi-2 configs set it false");
  }
  if (*type == "gpt_oss") {
    // transformers GptOssConfig / modeling_gpt_oss.py: q/k/v/o with biases and a sink logit per
    // head; every layer MoE, a router Linear with bias, experts whose fused gate_up and down
    // projections carry biases. gpt-oss-120b counts 116,829,156,672 parameters.
    SP_ASSIGN_OR_RETURN(m.experts, r.Int("num_local_experts", 128, 1, 1 << 16));
    SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok", 4, 1, 1 << 16));
    SP_ASSIGN_OR_RETURN(bool bias, r.Bool("attention_bias", true));
    m.qkv_bias = m.o_bias = bias;
    m.expert_intermediate = m.intermediate;
    m.expert_bias = m.router_bias = m.attention_sinks = true;
    m.sliding_window_pattern = 2;  // layer_types alternates sliding (128) and full attention
    MarkAllMoe(m);
  } else if (*type == "olmoe" || *type == "flex_olmo") {
    // transformers modeling_olmoe.py: OLMo-2's q_norm and k_norm over the whole projections;
    // num_experts SwiGLU experts of intermediate_size in every layer, a bias-free router, no
    // shared expert. OLMoE-1B-7B-0924 counts 6,919,161,856 parameters.
    // FlexOlmo (modeling_flex_olmo.py) keeps that block behind OLMo 2's post-norms: the same
    // parameters. FlexOlmo-7x7B-1T counts 33,270,665,216 with the class defaults.
    const bool flex = *type == "flex_olmo";
    SP_ASSIGN_OR_RETURN(m.experts, r.Int("num_experts", flex ? 7 : 64, 1, 1 << 16));
    SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok", flex ? 5 : 8, 1, 1 << 16));
    m.expert_intermediate = m.intermediate;
    m.qk_norm_whole = true;
    MarkAllMoe(m);
  } else if (*type == "mixtral") {
    SP_ASSIGN_OR_RETURN(m.experts, r.Int("num_local_experts", 8, 1, 1 << 16));
    SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok", 2, 1, 1 << 16));
    m.expert_intermediate = m.intermediate;
    MarkAllMoe(m);
  } else if (*type == "qwen2_moe") {
    SP_RETURN_IF_ERROR(ReadQwenMoe(r, m, 60, 4, 1408));
    m.shared_experts = 1;
    SP_ASSIGN_OR_RETURN(m.shared_intermediate, r.Int("shared_expert_intermediate_size", 5632, 1, kMaxDim));
  } else if (*type == "qwen3_moe") {
    SP_RETURN_IF_ERROR(ReadQwenMoe(r, m, 128, 8, 768));
  } else if (*type == "qwen3_vl_moe_text") {
    SP_RETURN_IF_ERROR(ReadQwenMoe(r, m, 60, 4, 1408));
  } else if (*type == "deepseek_v3" || *type == "deepseek_v2") {
    SP_RETURN_IF_ERROR(ReadDeepseek(r, m, *type == "deepseek_v2"));
  } else if (*type == "deepseek_v32" || *type == "glm_moe_dsa") {
    // DeepSeek-V3.2's layers; GLM-5's router always keeps its correction bias (GlmMoeDsaTopkRouter).
    SP_RETURN_IF_ERROR(ReadDeepseek(r, m, false));
    const bool glm = *type == "glm_moe_dsa";
    SP_RETURN_IF_ERROR(ReadIndexer(r, m, glm ? 32 : 64));
    if (glm) {  // GlmMoeDsaConfig's own MLA widths where a config leaves them out
      SP_ASSIGN_OR_RETURN(m.q_lora_rank, r.Int("q_lora_rank", 2048, 0, kMaxDim));
      SP_ASSIGN_OR_RETURN(m.qk_nope_head_dim, r.Int("qk_nope_head_dim", 192, 0, 1 << 16));
      SP_ASSIGN_OR_RETURN(m.v_head_dim, r.Int("v_head_dim", 256, 1, 1 << 16));
      m.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
      m.router_bias = true;
    }
  } else if (*type == "minimax_m2") {
    // transformers modeling_minimax_m2.py: q_norm and k_norm over heads x d and KV heads x d;
    // num_local_experts of intermediate_size, no shared expert; the router's
    // e_score_correction_bias (use_routing_bias). The MTP modules are not built.
    // MiniMax-M2 counts 228,689,764,864 parameters ("230B total").
    SP_ASSIGN_OR_RETURN(m.experts, r.Int("num_local_experts", 256, 1, 1 << 16));
    SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok", 8, 1, 1 << 16));
    SP_ASSIGN_OR_RETURN(m.qk_norm_whole, r.Bool("use_qk_norm", true));
    SP_ASSIGN_OR_RETURN(m.router_bias, r.Bool("use_routing_bias", true));
    m.expert_intermediate = m.intermediate;
    MarkAllMoe(m);
  } else if (*type == "llama4_text") {
    SP_RETURN_IF_ERROR(ReadLlama4(r, m));
  } else if (*type == "glm4_moe") {
    SP_RETURN_IF_ERROR(ReadGlm4Moe(r, m));
  } else if (*type == "apertus") {
    // Apertus (modeling_apertus.py): up_proj and down_proj around xIELU, whose alpha_p and alpha_n
    // are parameters and beta and eps persistent buffers (4 per layer, in the checkpoint);
    // per-head q_norm and k_norm; attention_layernorm and feedforward_layernorm before each block.
    // Apertus-8B's widths (21,504-wide MLP, 8 KV heads) count 8,053,338,240 with those buffers.
    m.mlp = MlpKind::kPlain;
    m.qk_norm = true;
    SP_ASSIGN_OR_RETURN(std::string act, r.Str("hidden_act", "xielu"));
    m.mlp_act_params = act == "xielu" ? 4 : 0;
  } else if (*type == "mamba2") {
    SP_RETURN_IF_ERROR(ReadMamba2(r, m));
  } else if (*type == "ernie4_5_moe") {
    SP_RETURN_IF_ERROR(ReadErnieMoe(r, m));
  } else if (*type == "solar_open" || *type == "exaone_moe" || *type == "glm4_moe_lite" || *type == "dots1") {
    SP_RETURN_IF_ERROR(ReadSharedExpertMoe(r, *type, m));
  } else if (*type == "nemotron_h") {
    SP_RETURN_IF_ERROR(ReadNemotronH(r, m));
  } else if (*type == "falcon_h1") {
    SP_RETURN_IF_ERROR(ReadFalconH1(r, m));
  } else if (*type == "granitemoehybrid" || *type == "bamba") {
    SP_RETURN_IF_ERROR(ReadGraniteHybrid(r, *type, m));
  } else if (*type == "granitemoe" || *type == "granitemoeshared") {
    // transformers modeling_granitemoe.py / modeling_granitemoeshared.py: every layer an MoE of
    // num_local_experts SwiGLU experts of intermediate_size (fused input/output_linear) and a
    // bias-free router; q, k, v and o biased under attention_bias (the common keys). Granite 3.1's MoE adds a
    // shared MLP of shared_intermediate_size (none when 0, its default).
    SP_ASSIGN_OR_RETURN(m.experts, r.Int("num_local_experts", 8, 1, 1 << 16));
    SP_ASSIGN_OR_RETURN(m.experts_per_token, r.Int("num_experts_per_tok", 2, 1, m.experts));
    m.expert_intermediate = m.intermediate;
    if (*type == "granitemoeshared") {
      SP_ASSIGN_OR_RETURN(m.shared_intermediate, r.Int("shared_intermediate_size", 0, 0, kMaxDim));
      m.shared_experts = m.shared_intermediate > 0 ? 1 : 0;
    }
    MarkAllMoe(m);
  } else if (*type == "qwen3_next" || *type == "qwen3_5_text" || *type == "qwen3_5_moe_text") {
    SP_RETURN_IF_ERROR(ReadGatedDeltaNetHybrid(r, *type, m));
  }
  if (*type == "gemma3_text") {
    SP_ASSIGN_OR_RETURN(int64_t pattern, r.Int("sliding_window_pattern", 6, 0, kMaxLayers));
    m.sliding_window_pattern = static_cast<int>(pattern);
  }
  ApplyFamily(*type, m);
  // Group-limited routing, whichever family states it (DeepSeek-V2/V3, Kimi K2, GLM-4.5):
  // n_group groups of experts, topk_group of them open to each token.
  if (m.experts > 0 && r.Has("n_group") && r.Has("topk_group")) {
    SP_ASSIGN_OR_RETURN(m.expert_groups, r.Int("n_group", 1, 1, m.experts));
    SP_ASSIGN_OR_RETURN(m.groups_per_token, r.Int("topk_group", 1, 1, m.expert_groups));
    if (m.experts % m.expert_groups != 0)
      return doc.ErrorAt(node, "n_group (" + std::to_string(m.expert_groups) + ") must divide the routed experts (" +
                                   std::to_string(m.experts) + ")");
    if (m.groups_per_token >= m.expert_groups) m.expert_groups = m.groups_per_token = 0;  // every group open: not limited
  }
  // GPT-style families read no head_dim key, so a stated one does not excuse heads that do
  // not divide the hidden size (fuzzing found a gpt2 config whose plan did not read back).
  if (m.attention == AttentionKind::kGqa && m.hidden % m.heads != 0 && m.model_type != "gemma2" && m.model_type != "gemma" &&
      m.model_type != "gemma3_text" && m.head_dim * m.heads != m.hidden &&
      (GptStyle(*type) || GptEra(*type) || (!r.Has("head_dim") && d.head_dim == 0)))
    return doc.ErrorAt(node, "the number of attention heads (" + std::to_string(m.heads) +
                                 ") does not divide the hidden size (" + std::to_string(m.hidden) + ")");
  // Qwen3.5, Qwen3-VL and LLaVA-NeXT tie the head as the top-level config says (transformers reads the
  // composite config's tie_word_embeddings, default false), whatever text_config holds.
  if (wrapper == "qwen3_5" || wrapper == "qwen3_5_moe" || wrapper == "qwen3_vl" || wrapper == "qwen3_vl_moe" ||
      wrapper == "llava_next") {
    Reader top{doc, root};
    SP_ASSIGN_OR_RETURN(m.tied_embeddings, top.Bool("tie_word_embeddings", false));
  }
  if (wrapper == "llava") {  // LlavaConfig (not LLaVA-NeXT's) ties when either level says so
    Reader top{doc, root};
    SP_ASSIGN_OR_RETURN(bool tied, top.Bool("tie_word_embeddings", false));
    m.tied_embeddings = m.tied_embeddings || tied;
  }
  // The VLM's own decoder-layer class, which FSDP's auto-wrap policy must name.
  if (wrapper == "qwen2_vl") m.decoder_layer_class = "Qwen2VLDecoderLayer";
  if (wrapper == "qwen2_5_vl") m.decoder_layer_class = "Qwen2_5_VLDecoderLayer";
  m.vision = vision;
  if (m.vision.kind == "gemma3" || m.vision.kind == "mistral3" || m.vision.kind == "llava" || m.vision.kind == "llava_next" ||
      m.vision.kind == "internvl")
    m.vision.out = m.hidden;  // the projector's output
  Status valid = ValidateModel(m);
  if (!valid.ok()) return doc.ErrorAt(node, valid.message());
  // Multimodal configs keep quantization_config at the top, next to text_config.
  SP_RETURN_IF_ERROR(ReadQuantization(doc, root["quantization_config"], m));
  return m;
}

}  // namespace

StatusOr<ModelSpec> LoadModel(const std::string& ref) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // 1. An existing file, or a folder holding config.json (a local checkout or snapshot).
  if (fs::exists(ref, ec)) {
    fs::path p(ref);
    if (fs::is_directory(p, ec)) {
      if (!fs::exists(p / "config.json", ec))
        return Status::BadInput(ref + ": is a directory without a config.json; give a config.json or YAML model file, "
                                      "or a model folder that holds config.json");
      SP_ASSIGN_OR_RETURN(Document doc, Document::Load((p / "config.json").string()));
      const fs::path folder = p.lexically_normal();
      return ParseModel(doc, (folder.has_filename() ? folder : folder.parent_path()).filename().string());
    }
    SP_ASSIGN_OR_RETURN(Document doc, Document::Load(ref));
    return ParseModel(doc, p.stem() == "config" && p.has_parent_path() ? p.parent_path().filename().string()
                                                                        : p.stem().string());
  }
  // 2. A built-in name (configs/models/).
  if (FindBuiltin("models", ref)) {
    SP_ASSIGN_OR_RETURN(Document doc, LoadBuiltinOrFile("models", ref));
    return ParseModel(doc, ref);
  }
  // 3. A hub id, through the local Hugging Face cache.
  if (std::optional<HubId> id = ParseHubId(ref)) {
    SP_ASSIGN_OR_RETURN(std::string path, FindCachedConfig(*id, HubCacheDir()));
    SP_ASSIGN_OR_RETURN(Document doc, Document::Load(path));
    return ParseModel(doc, ref);
  }
  // Neither: the built-in or file error, with its did-you-mean.
  SP_ASSIGN_OR_RETURN(Document doc, LoadBuiltinOrFile("models", ref));
  return ParseModel(doc, ref);
}

}  // namespace shardplan
