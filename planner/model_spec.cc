#include <algorithm>

#include "planner/model_spec.h"

namespace shardplan {
namespace {

int64_t NormParams(const ModelSpec& m, int64_t width) {
  return m.norm == NormKind::kLayer && m.norm_bias ? 2 * width : width;  // LayerNorm has weight and bias
}

// An MLP of `inner` units over a `width`-wide input and output (the hidden size, or the
// latent width of Nemotron 3 Super's routed experts).
int64_t MlpParams(const ModelSpec& m, int64_t inner, bool bias, int64_t width) {
  const int64_t h = width;
  if (m.mlp == MlpKind::kGated) return 3 * h * inner + (bias ? 2 * inner + h : 0);  // gate, up, down
  return 2 * h * inner + (bias ? inner + h : 0);                                    // fc1, fc2
}

int64_t RouterParams(const ModelSpec& m) { return m.experts * m.hidden + (m.router_bias ? m.experts : 0); }

int64_t MlpParams(const ModelSpec& m, int64_t inner, bool bias) { return MlpParams(m, inner, bias, m.hidden); }

int64_t ExpertParams(const ModelSpec& m) { return MlpParams(m, m.expert_intermediate, m.expert_bias, m.expert_width()); }

// Shared experts and their gate, and the latent down and up projections around the routed
// experts (transformers NemotronHMoE fc1_latent_proj / fc2_latent_proj, biased as the MLPs are).
int64_t SharedExpertParams(const ModelSpec& m) {
  const int64_t latent = m.moe_latent > 0 ? 2 * m.hidden * m.moe_latent + (m.mlp_bias ? m.moe_latent + m.hidden : 0) : 0;
  if (m.shared_experts == 0) return latent;
  // One MLP of shared_experts x shared_intermediate: its biases are those of one MLP that wide.
  const int64_t bias = m.shared_expert_bias ? (m.mlp == MlpKind::kGated ? 2 : 1) * m.shared_experts * m.shared_intermediate + m.hidden : 0;
  return m.shared_experts * MlpParams(m, m.shared_intermediate, false) + bias + (m.shared_expert_gate ? m.hidden : 0) + latent;
}

// Norms of one layer: one per sub-block of a hybrid's, a transformer's norms_per_layer.
int64_t BlockNorms(const ModelSpec& m, int64_t layer) { return m.is_hybrid() ? m.sub_blocks(layer) : m.norms_per_layer; }

int64_t EmbedWidth(const ModelSpec& m) { return m.word_embed_proj_dim > 0 ? m.word_embed_proj_dim : m.hidden; }

}  // namespace

int64_t ModelSpec::moe_layer_count() const {
  return std::count(moe_layer.begin(), moe_layer.end(), true);
}

int64_t ModelSpec::attention_layer_count() const {
  if (!is_hybrid()) return layers;
  return std::count_if(hybrid.begin(), hybrid.end(), [](char c) { return c == '*' || c == 'A' || c == 'P'; });
}

int64_t LinearMixerParams(const ModelSpec& m) {
  // transformers NemotronHMamba2Mixer: in_proj (h -> z, xBC, dt), the depthwise conv1d over
  // xBC with its bias, dt_bias, A_log and D per head, the gated RMSNorm over the inner width,
  // out_proj (inner -> h); Falcon-H1 may leave the norm out and bias out_proj apart from
  // in_proj. Nemotron 3 Nano's 23 mixers hold 891,070,784.
  // Qwen3NextGatedDeltaNet: in_proj_qkvz and in_proj_ba, the conv1d without bias, dt_bias and
  // A_log per head, the gated RMSNorm of head_dim, out_proj. Qwen3-Next-80B-A3B's 36 hold
  // 1,213,864,704.
  const ModelSpec::LinearMixer& x = m.linear;
  if (x.heads == 0) return 0;
  const int64_t h = m.hidden, inner = x.inner(), conv = x.conv_dim();
  const int64_t per_head = x.delta ? 2 : 3, norm = !x.norm ? 0 : x.delta ? x.head_dim : inner;
  return h * x.in_proj() + (x.proj_bias ? x.in_proj() : 0) + conv * x.conv_kernel + (x.conv_bias ? conv : 0) +
         per_head * x.heads + norm + inner * h + (x.out_bias ? h : 0);
}

int64_t AttentionParams(const ModelSpec& m) {
  const int64_t h = m.hidden, a = m.heads;
  if (m.attention == AttentionKind::kMla) {
    // ecosystem.md 4.2 "DeepSeek MLA attention": q_a/q_a_norm/q_b, kv_a_with_mqa, kv_a_norm, kv_b, o
    const int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
    int64_t q = m.q_lora_rank > 0 ? h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * a * qk : h * a * qk;
    int64_t kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank +
                 m.kv_lora_rank * a * (m.qk_nope_head_dim + m.v_head_dim);
    int64_t o = a * m.v_head_dim * h;
    int64_t bias = m.qkv_bias ? (m.q_lora_rank > 0 ? m.q_lora_rank : 0) + m.kv_lora_rank + m.qk_rope_head_dim : 0;
    // The DSA indexer (transformers modeling_deepseek_v32.py Indexer): wq_b from the q latent,
    // wk from h, a LayerNorm on the key (weight and bias), weights_proj to one weight per head.
    const int64_t d = m.index_head_dim, n = m.index_heads;
    const int64_t indexer = n > 0 ? (m.q_lora_rank > 0 ? m.q_lora_rank : h) * n * d + h * d + 2 * d + h * n : 0;
    return q + kv + o + bias + (m.o_bias ? h : 0) + indexer;
  }
  // ecosystem.md 4.2 "Attention (GQA)": h*a*d + 2*h*k*d + a*d*h
  int64_t p = h * m.q_width() + 2 * h * m.kv_width() + m.q_width() * h;
  if (m.attention_gate) p += h * m.q_width() + (m.qkv_bias ? m.q_width() : 0);  // q_proj's gate half
  if (m.qkv_bias) p += m.q_width() + 2 * m.kv_width();
  if (m.o_bias) p += h;
  if (m.qk_norm) p += 2 * m.head_dim;
  if (m.qk_norm_whole) p += m.q_width() + m.kv_width();
  if (m.attention_sinks) p += a;
  return p;
}

int64_t LayerExpertParams(const ModelSpec& m, int64_t layer) {
  if (!m.is_moe_layer(layer)) return 0;
  return m.experts * ExpertParams(m);
}

int64_t LayerParams(const ModelSpec& m, int64_t layer) {
  int64_t p = BlockNorms(m, layer) * NormParams(m, m.hidden);
  if (m.has_linear_mixer(layer)) p += LinearMixerParams(m);
  if (m.has_attention(layer)) p += AttentionParams(m);
  if (!m.has_ffn(layer)) return p;
  if (m.is_moe_layer(layer)) {
    p += LayerExpertParams(m, layer) + RouterParams(m) + SharedExpertParams(m);
  } else {
    p += MlpParams(m, m.intermediate, m.mlp_bias);
  }
  return p;
}

int64_t FirstStageExtraParams(const ModelSpec& m) {
  ParamCounts c = CountParams(m);
  return c.embedding + c.position;
}

int64_t LastStageExtraParams(const ModelSpec& m) {
  return (m.final_norm ? NormParams(m, m.hidden) : 0) + CountParams(m).head;
}

int64_t LargestParam(const ModelSpec& m) {
  int64_t largest = m.vocab * EmbedWidth(m);
  largest = std::max(largest, m.hidden * std::max(m.q_width(), m.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)));
  const int64_t mlp_inner = std::max(m.intermediate, m.expert_intermediate);
  largest = std::max(largest, m.hidden * mlp_inner);
  largest = std::max(largest, m.hidden * m.linear.in_proj());
  return largest;
}

int64_t VisionParams(const ModelSpec& m) {
  const ModelSpec::VisionTower& v = m.vision;
  if (v.kind.empty()) return 0;
  const int64_t w = v.width, f = v.intermediate;
  if (v.kind == "mistral3") {
    // transformers PixtralVisionModel and Mistral3MultiModalProjector: a patch Conv2d and
    // RMSNorms without biases, blocks of q/k/v/o and a SwiGLU MLP without biases; the
    // projector's norm, patch merger Linear(w m^2, w) and two Linears to the text width
    // (biased under multimodal_projector_bias). Mistral Small 3.1's counts 438,958,080.
    const int64_t block = 2 * w + 4 * w * w + 3 * f * w;
    const int64_t bias = v.projector_bias ? 2 * v.out : 0;
    return v.in_channels * v.patch * v.patch * w + w + v.depth * block + w + w * v.merge * v.merge * w + w * v.out +
           v.out * v.out + bias;
  }
  if (v.kind == "qwen3_5" || v.kind == "qwen3_5_moe" || v.kind == "qwen3_vl" || v.kind == "qwen3_vl_moe") {
    // transformers Qwen3_5VisionModel (Qwen3VLVisionModel less its deepstack): a biased Conv3d
    // patch embedding, `image` learned positions (num_position_embeddings), LayerNorm blocks
    // with biased qkv, proj, fc1 and fc2, and a merger of a LayerNorm over the width and biased
    // Linear(w m^2, w m^2) and Linear(w m^2, out). Qwen3-VL adds one merger per
    // deepstack_visual_indexes entry, its LayerNorm over the merged width (use_postshuffle_norm).
    // Qwen3.5-35B-A3B's counts 446,571,248; Qwen3-VL-8B's 576,388,336.
    const int64_t merged = w * v.merge * v.merge;
    const int64_t block = 2 * (2 * w) + (3 * w * w + 3 * w) + (w * w + w) + (f * w + f) + (w * f + w);
    const int64_t linears = (merged * merged + merged) + (merged * v.out + v.out);
    return (v.in_channels * v.temporal_patch * v.patch * v.patch * w + w) + v.image * w + v.depth * block + 2 * w +
           linears + v.deepstack * (2 * merged + linears);
  }
  if (v.kind == "llava" || v.kind == "llava_next") {
    // transformers CLIPVisionModel under LLaVA's projector: a class embedding, a bias-free patch
    // Conv2d, (image / patch)^2 + 1 learned positions, pre- and post-LayerNorms, blocks of biased
    // q/k/v/o and fc1/fc2 with two LayerNorms; the projector's Linear(w x feature layers, out) and
    // Linear(out, out), biased under multimodal_projector_bias; LLaVA-NeXT's image_newline.
    // LLaVA-1.5-7B's counts 303,507,456 + 20,979,712.
    const int64_t side = v.patch > 0 ? v.image / v.patch : 0;
    const int64_t block = 4 * (w * w + w) + 2 * (2 * w) + (w * f + f) + (f * w + w);
    const int64_t tower = w + v.in_channels * v.patch * v.patch * w + (side * side + 1) * w + 2 * w + v.depth * block + 2 * w;
    const int64_t in = w * v.feature_layers, bias = v.projector_bias ? 2 * v.out : 0;
    return tower + in * v.out + v.out * v.out + bias + (v.kind == "llava_next" ? v.out : 0);
  }
  if (v.kind == "internvl") {
    // InternViT under InternVL's projector (transformers InternVLVisionModel, and the remote
    // code's InternVisionModel): a class token, (image / patch)^2 + 1 learned positions, a biased
    // patch Conv2d; blocks of two layer scales, q/k/v (biased under qkv_bias) with q/k RMSNorms
    // over the width under qk_norm, a biased output projection, a biased fc1/fc2 MLP and two
    // norms (LayerNorm, or RMSNorm under rms_norm); the projector (mlp1) a LayerNorm over the
    // pixel-shuffled width (w x merge^2) and two biased Linears to the text width.
    // InternVL3-8B's InternViT-300M and projector count 337,509,376 with a 4,096-wide text tower.
    const int64_t side = v.patch > 0 ? v.image / v.patch : 0;
    const int64_t norm = v.rms_norm ? w : 2 * w;
    const int64_t block = 2 * w + 3 * w * w + (v.qkv_bias ? 3 * w : 0) + (v.qk_norm ? 2 * w : 0) + (w * w + w) +
                          (w * f + f) + (f * w + w) + 2 * norm;
    const int64_t in = w * v.merge * v.merge;
    const int64_t embed = w + (side * side + 1) * w + (v.in_channels * v.patch * v.patch * w + w);
    return embed + v.depth * block + 2 * in + (in * v.out + v.out) + (v.out * v.out + v.out);
  }
  if (v.kind == "gemma3") {
    // transformers SiglipVisionModel under Gemma3's projector: a biased patch Conv2d, learned
    // positions for (image / patch)^2 patches, LayerNorm pre-norm blocks with biased q/k/v/o
    // and fc1/fc2, a post LayerNorm; the projector's input-projection matrix and soft-embedding
    // RMSNorm. Gemma 3 4B's counts 419,816,304. Under vision_use_head, SigLIP's attention-pooling
    // head: a probe token, nn.MultiheadAttention (packed biased q/k/v and a biased out_proj), a
    // LayerNorm and a biased fc1/fc2 MLP.
    const int64_t side = v.patch > 0 ? v.image / v.patch : 0;
    const int64_t block = 2 * (2 * w) + 4 * (w * w + w) + (f * w + f) + (w * f + w);
    const int64_t head = v.pooling_head ? w + 4 * (w * w + w) + 2 * w + (w * f + f) + (f * w + w) : 0;
    return (v.in_channels * v.patch * v.patch * w + w) + side * side * w + v.depth * block + 2 * w + head + (w * v.out + w);
  }
  // transformers modeling_qwen2_vl.py / modeling_qwen2_5_vl.py: a Conv3d patch embedding
  // without bias; blocks of two norms, qkv and proj with biases, and an MLP with biases
  // (Qwen2-VL: fc1/fc2 with LayerNorms; Qwen2.5-VL: SwiGLU with RMSNorms); a merger of a
  // norm and Linear(w m^2, w m^2) + Linear(w m^2, out), biased.
  const int64_t merged = w * v.merge * v.merge;
  const bool v25 = v.kind == "qwen2_5_vl";
  const int64_t norm = v25 ? w : 2 * w;
  const int64_t mlp = v25 ? 2 * (f * w + f) + w * f + w : (f * w + f) + (w * f + w);
  const int64_t block = 2 * norm + (3 * w * w + 3 * w) + (w * w + w) + mlp;
  const int64_t patch = v.in_channels * v.temporal_patch * v.patch * v.patch * w;
  const int64_t merger = norm + merged * merged + merged + merged * v.out + v.out;
  return patch + v.depth * block + merger;
}

ParamCounts CountParams(const ModelSpec& m) {
  ParamCounts c;
  const int64_t h = m.hidden;
  const int64_t ew = EmbedWidth(m);
  c.embedding = m.vocab * ew;
  if (ew != h) c.embedding += 2 * ew * h;  // OPT project_in and project_out (no bias)
  if (m.embedding_norm) c.embedding += NormParams(m, h);
  if (m.position == PositionKind::kLearned) c.position = (m.max_positions + m.position_offset) * h;
  c.head = (m.tied_embeddings ? 0 : m.vocab * ew) + (m.head_bias ? m.vocab : 0);

  int64_t active_experts = 0;
  for (int64_t l = 0; l < m.layers; ++l) {
    c.norms += BlockNorms(m, l) * NormParams(m, h);
    if (m.has_linear_mixer(l)) c.linear_mixers += LinearMixerParams(m);
    if (m.has_attention(l)) c.attention += AttentionParams(m);
    if (m.is_moe_layer(l)) {
      c.experts += LayerExpertParams(m, l);
      c.router += RouterParams(m);
      c.shared_experts += SharedExpertParams(m);
      active_experts += m.experts_per_token * ExpertParams(m);
    } else if (m.has_mlp(l)) {
      c.mlp += MlpParams(m, m.intermediate, m.mlp_bias) + m.mlp_act_params;
    }
  }
  if (m.final_norm) c.norms += NormParams(m, h);
  c.total = c.embedding + c.position + c.attention + c.linear_mixers + c.mlp + c.experts + c.shared_experts + c.router +
            c.norms + c.head;
  c.active = c.total - c.experts + active_experts;
  c.vision = VisionParams(m);
  return c;
}

}  // namespace shardplan
