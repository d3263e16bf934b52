// ModelSpec: the architecture of a decoder-only transformer, as much as memory and time
// need. Built from a Hugging Face config.json (planner/model_reader.h) or by hand in tests.
// All sizes are element counts; parameter counts come from the architecture alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/dtype.h"

namespace shardplan {

enum class NormKind { kRms, kLayer };         // RMSNorm has a weight; LayerNorm weight + bias
enum class MlpKind { kGated, kPlain };        // SwiGLU/GeGLU (3 matrices) or fc1/act/fc2 (2)
enum class AttentionKind { kGqa, kMla };      // grouped-query (MHA/MQA included) or DeepSeek MLA
enum class PositionKind { kRotary, kLearned, kAlibi };
// The attention kernel a config names (MPT's attn_config.attn_impl): unstated leaves it to the
// framework; eager materializes the scores; triton is the 2022 Triton FlashAttention. cudnn
// (Transformer Engine's fused attention) is never read from a config: the framework picks it.
enum class AttentionImpl { kUnstated, kEager, kTriton, kFlash, kCudnn };

// Weights a checkpoint ships quantized: the HF `quantization_config` (planner/quantization.h).
// Serving reads them as shipped; training upcasts them, so only inference uses this.
struct CheckpointQuant {
  std::string method;                   // quant_method as written; empty = not quantized
  Dtype format = Dtype::kBf16;          // fp8, int8, int4 or nf4 when quantized
  int bits = 16;                        // bits per stored weight
  bool float_format = false;            // compressed-tensors "type": "float"
  int64_t group_size = 0;               // weights per scale; 0 = one per output channel, -1 = per tensor
  int64_t block_rows = 0;               // fp8 2-D blocks (weight_block_size), one fp32 scale each;
  int64_t block_cols = 0;               //   0 = no blocks
  bool double_quant = false;            // bitsandbytes bnb_4bit_use_double_quant
  std::vector<std::string> skip;        // modules_to_not_convert / ignore / llm_int8_skip_modules
  std::vector<int64_t> kept_dense;      // per layer: linear params the skip list keeps 16-bit (TP-split)
  std::vector<int64_t> kept_expert;     // per layer: routed-expert params kept 16-bit (EP-split)

  bool quantized() const { return !method.empty(); }
  bool operator==(const CheckpointQuant&) const = default;
};

struct ModelSpec {
  std::string name;                 // display name ("llama-3.1-70b" or the file stem)
  std::string model_type;           // HF model_type ("llama", "deepseek_v3", ...)
  std::string decoder_layer_class;  // e.g. "LlamaDecoderLayer", for FSDP auto-wrap
  Dtype dtype = Dtype::kBf16;       // the checkpoint's dtype (HF dtype / torch_dtype)

  int64_t vocab = 0;                // vocab_size: rows of the embedding and the LM head
  int64_t hidden = 0;               // h
  int64_t layers = 0;               // L, decoder blocks (MTP modules excluded)
  int64_t heads = 0;                // a, query heads
  int64_t kv_heads = 0;             // key/value heads (= heads for MHA)
  int64_t head_dim = 0;             // d, per head (defaults to hidden / heads)
  int64_t intermediate = 0;         // FFN size of dense layers
  int64_t max_positions = 0;        // max_position_embeddings / n_positions
  int64_t position_offset = 0;      // extra learned-position rows (OPT keeps 2)
  int64_t word_embed_proj_dim = 0;  // OPT: embedding width when it differs from hidden (0 = hidden)

  AttentionKind attention = AttentionKind::kGqa;
  MlpKind mlp = MlpKind::kGated;
  NormKind norm = NormKind::kRms;
  PositionKind position = PositionKind::kRotary;
  AttentionImpl attention_impl = AttentionImpl::kUnstated;
  int norms_per_layer = 2;          // Gemma2/3: 4
  bool final_norm = true;
  bool norm_bias = true;            // LayerNorm keeps its bias (MPT removes it)
  bool embedding_norm = false;      // BLOOM: LayerNorm right after the embedding
  bool tied_embeddings = false;
  bool head_bias = false;           // the LM head has a bias, vocab params (Phi-1/1.5/2)
  bool qkv_bias = false;            // bias on q, k, v projections
  bool o_bias = false;              // bias on the attention output projection
  bool mlp_bias = false;            // bias on every MLP matrix
  bool qk_norm = false;             // per-head RMSNorm on q and k (Qwen3, Gemma3): 2*d params
  bool qk_norm_whole = false;       // q/k norm weights span the whole projection (OLMo-2, Command R+):
                                    //   q_width + kv_width params
  bool parallel_residual = false;   // GPT-NeoX: attention and MLP read the same input
  bool gelu = false;                // activation is GeLU-family (else SiLU/ReLU)
  // How transformers' modeling code computes, where it changes what autograd keeps (family
  // traits, set by the reader from model_type):
  bool norm_weight_fp32 = false;    // the RMSNorm multiplies by its weight in fp32, then casts (GemmaRMSNorm, Olmo2RMSNorm)
  bool router_input_fp32 = false;   // the MoE gate runs on an fp32 copy of the hidden states (DeepseekV3TopkRouter)
  int64_t mlp_act_params = 0;       // learned activation scalars per dense MLP (Apertus' xIELU: 4)
  int64_t sliding_window = 0;       // tokens; 0 = full attention in every layer
  int sliding_window_pattern = 0;   // every N-th layer is global (Gemma3: 6); 0 = all sliding

  // Mixture of experts. experts == 0 means dense.
  int64_t experts = 0;              // routed experts per MoE layer (E)
  int64_t experts_per_token = 0;    // top-k
  int64_t expert_intermediate = 0;  // FFN size of one routed expert
  int64_t shared_experts = 0;       // always-active experts (DeepSeek n_shared_experts)
  int64_t shared_intermediate = 0;  // FFN size of one shared expert
  // Group-limited routing (DeepSeek-V2/V3 n_group, topk_group): the experts fall in
  // expert_groups equal groups and a token picks its top-k inside groups_per_token of them.
  // 0 = not limited.
  int64_t expert_groups = 0, groups_per_token = 0;
  bool shared_expert_gate = false;  // Qwen2-MoE: sigmoid gate Linear(h, 1) on the shared expert
  bool shared_expert_bias = false;  // ERNIE 4.5 under use_bias: the shared MLP's gate/up and down biases
  bool router_bias = false;         // DeepSeek noaux_tc: e_score_correction_bias (E params); gpt-oss router bias
  bool expert_bias = false;         // gpt-oss: biases on every expert's gate_up and down projections
  bool attention_sinks = false;     // gpt-oss: one learned sink logit per head per layer
  std::vector<bool> moe_layer;      // per layer: true where the MLP is an MoE block

  // Multi-head latent attention (DeepSeek-V2/V3). Used when attention == kMla.
  int64_t q_lora_rank = 0;          // 0 = q projected directly from h
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  int64_t mtp_layers = 0;           // num_nextn_predict_layers: not counted in the totals
  // DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2, GLM-5): index_heads heads of
  // index_head_dim score every earlier token and each query attends to the index_topk best.
  // 0 = dense attention.
  int64_t index_heads = 0;
  int64_t index_head_dim = 0;
  int64_t index_topk = 0;

  // Hybrid models, one letter per layer. Nemotron-H's blocks hold one mixer behind one norm,
  // as HF's hybrid_override_pattern spells them: 'M' a linear mixer, '*' attention, '-' an MLP,
  // 'E' an MoE. Qwen3-Next's and Qwen3.5's layers are a token mixer and an MLP or MoE (as
  // moe_layer says) behind two norms: 'A' attention, 'G' a linear mixer. Falcon-H1's layers run
  // attention and a linear mixer side by side on one normed input, then an MLP: 'P'. Empty =
  // every layer is attention then an MLP or MoE.
  std::string hybrid;
  // The linear (recurrent) mixer of 'M' and 'G' blocks: `heads` value heads of head_dim (the
  // inner width), each with a head_dim x `state` recurrent state; keys (B) and queries (C) of
  // `state` per group of heads; a depthwise causal conv of conv_kernel taps over x, B and C; the
  // chunked scan in chunks of `chunk` tokens.
  //   Mamba-2 (transformers NemotronHMamba2Mixer): in_proj gives z, xBC and one dt per head;
  //     A_log, D and dt_bias per head; a gated RMSNorm over the inner width.
  //   Gated DeltaNet (Qwen3NextGatedDeltaNet): in_proj_qkvz gives q, k, v, z and in_proj_ba a
  //     beta and a decay per head; A_log and dt_bias per head; a gated RMSNorm of head_dim shared
  //     by the heads; no conv bias.
  struct LinearMixer {
    bool delta = false;             // Gated DeltaNet; else Mamba-2
    int64_t heads = 0, head_dim = 0, state = 0, groups = 0, conv_kernel = 0, chunk = 0;
    bool conv_bias = true, proj_bias = false;  // the conv's bias; in_proj's
    bool out_bias = false;          // out_proj's (Falcon-H1's projectors_bias; the others follow in_proj)
    bool norm = true;               // the gated RMSNorm over the inner width (Falcon-H1: mamba_rms_norm)
    Dtype ssm_cache = Dtype::kFp32;  // the serving engine's recurrent state (mamba_ssm_cache_dtype)
    int64_t inner() const { return heads * head_dim; }
    int64_t conv_dim() const { return inner() + 2 * groups * state; }                   // x (v), B (k), C (q)
    int64_t in_proj() const { return inner() + conv_dim() + (delta ? 2 : 1) * heads; }  // z, xBC, dt (beta, a)
    // Elements per token that context parallelism's all-to-alls move, there (in_proj's output)
    // and back (y): the time model prices them and the validator runs them.
    int64_t cp_exchange() const { return in_proj() + inner(); }
    bool operator==(const LinearMixer&) const = default;
  };
  LinearMixer linear;
  bool attention_gate = false;      // Qwen3-Next / Qwen3.5: q_proj also gives a sigmoid gate on the attention output
  int64_t moe_latent = 0;           // Nemotron 3 Super: routed experts work in this width (fc1/fc2_latent_proj); 0 = hidden

  // The vision encoder of a vision-language checkpoint (Qwen2-VL, Qwen2.5-VL, Gemma 3, Mistral 3): frozen, held in
  // the checkpoint's dtype beside the text tower, never counted in the text totals.
  struct VisionTower {
    std::string kind;               // the checkpoint's model_type ("qwen2_vl", "qwen2_5_vl", "qwen3_vl",
                                    // "gemma3", "mistral3", ...); empty = none
    int64_t depth = 0, width = 0;   // ViT blocks and their width
    int64_t intermediate = 0;       // MLP width (Qwen2-VL: width x mlp_ratio)
    int64_t patch = 0, temporal_patch = 0, in_channels = 0, merge = 0;
    int64_t image = 0;              // learned positions: SigLIP (Gemma 3) the image side, Qwen3.5 their count
    bool projector_bias = false;    // Mistral 3: multimodal_projector_bias
    bool pooling_head = false;      // SigLIP (Gemma 3): vision_use_head's attention-pooling head
    bool qkv_bias = false, qk_norm = false, rms_norm = false;  // InternViT (InternVL): its attention and norms
    int64_t deepstack = 0;          // Qwen3-VL: extra mergers fed from these ViT blocks (deepstack_visual_indexes)
    int64_t feature_layers = 0;     // LLaVA: ViT layers concatenated into the projector (vision_feature_layer)
    int64_t out = 0;                // the merger's (projector's) output, the text tower's width
    bool operator==(const VisionTower&) const = default;
  };
  VisionTower vision;

  CheckpointQuant quant;            // quantization_config, when the checkpoint ships one

  bool is_moe() const { return experts > 0; }
  bool is_hybrid() const { return !hybrid.empty(); }
  char block(int64_t layer) const {  // the hybrid pattern's letter; 0 for a transformer block
    return layer >= 0 && layer < static_cast<int64_t>(hybrid.size()) ? hybrid[static_cast<size_t>(layer)] : 0;
  }
  bool has_attention(int64_t layer) const {
    const char b = block(layer);
    return !is_hybrid() || b == '*' || b == 'A' || b == 'P';
  }
  bool has_linear_mixer(int64_t layer) const { return block(layer) == 'M' || block(layer) == 'G' || block(layer) == 'P'; }
  bool has_ffn(int64_t layer) const {  // an MLP or an MoE block
    const char b = block(layer);
    return !is_hybrid() || b == '-' || b == 'E' || b == 'A' || b == 'G' || b == 'P';
  }
  bool has_mlp(int64_t layer) const { return has_ffn(layer) && !is_moe_layer(layer); }  // a dense MLP
  // Mixer and FFN sub-blocks of a layer, each behind its norm and followed by its TP reduction.
  int sub_blocks(int64_t layer) const {
    const char b = block(layer);
    return !is_hybrid() || b == 'A' || b == 'G' || b == 'P' ? 2 : 1;
  }
  int64_t attention_layer_count() const;  // blocks with attention (all of a transformer's); KV lives there
  int64_t expert_width() const { return moe_latent > 0 ? moe_latent : hidden; }
  bool operator==(const ModelSpec&) const = default;  // field by field: a read-back check
  int64_t q_width() const { return heads * head_dim; }      // width of the Q projection output
  int64_t kv_width() const { return kv_heads * head_dim; }  // width of K (and of V)
  int64_t moe_layer_count() const;
  bool is_moe_layer(int64_t layer) const {  // false outside [0, layers) and for dense models
    return is_moe() && layer >= 0 && layer < static_cast<int64_t>(moe_layer.size()) &&
           moe_layer[static_cast<size_t>(layer)];
  }
};

// Parameters by part, all in elements. `total` adds them up; `active` counts top-k
// routed experts in place of all of them (DESIGN.md "params_active").
struct ParamCounts {
  int64_t embedding = 0;      // token embedding (+ projections, + embedding norm)
  int64_t position = 0;       // learned position embeddings
  int64_t attention = 0;      // every attention block (projections, biases, q/k norms)
  int64_t mlp = 0;            // dense MLPs
  int64_t experts = 0;        // routed experts of every MoE layer
  int64_t shared_experts = 0; // shared experts and their gates
  int64_t router = 0;         // routers (and correction biases)
  int64_t linear_mixers = 0;  // a hybrid's Mamba-2 or Gated DeltaNet mixers (projections, conv, per-head terms, gated norm)
  int64_t norms = 0;          // per-layer norms and the final norm
  int64_t head = 0;           // LM head (0 when tied)
  int64_t vision = 0;         // a VLM's vision encoder and merger: outside total and active
  int64_t total = 0;
  int64_t active = 0;
};

// Exact counts from the architecture (ecosystem.md 4.2 gives the formulas).
ParamCounts CountParams(const ModelSpec& m);

// A VLM's vision encoder and its merger into the text tower (0 for a text model).
int64_t VisionParams(const ModelSpec& m);
// One decoder layer's parameters (attention + MLP/MoE + its norms).
int64_t LayerParams(const ModelSpec& m, int64_t layer);
// The part of one layer that lives in routed experts (sharded by EP).
int64_t LayerExpertParams(const ModelSpec& m, int64_t layer);
// Attention parameters of one layer.
int64_t AttentionParams(const ModelSpec& m);
// One linear mixer's parameters, Mamba-2 or Gated DeltaNet (0 for a model without them).
int64_t LinearMixerParams(const ModelSpec& m);
// Parameters outside the decoder layers that sit on the first stage (embeddings) and on
// the last stage (final norm + head).
int64_t FirstStageExtraParams(const ModelSpec& m);
int64_t LastStageExtraParams(const ModelSpec& m);
// The largest single weight matrix in elements (DeepSpeed's largest_layer_params).
int64_t LargestParam(const ModelSpec& m);

}  // namespace shardplan
