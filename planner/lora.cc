#include "planner/lora.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "planner/strings.h"

namespace shardplan {
namespace {

// llama's module names, which stand for the same roles in every family (the default targets).
constexpr std::string_view kRoles[] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
// A hybrid's mixer and MLP modules (AdapterParamsPerLayer's hybrid branch).
constexpr std::string_view kHybridNames[] = {"in_proj",   "in_proj_qkvz", "in_proj_ba",   "in_proj_qkv",  "in_proj_z",
                                             "in_proj_b", "in_proj_a",    "out_proj",     "input_linear", "output_linear"};

struct NamedLinear {
  std::string_view name;
  int64_t in, out;
};

// The Linear modules of one layer of the families whose modeling files do not use llama's
// names, as those files name them (peft matches target_modules against the last name of each
// module path, so GPT-2's attention c_proj and MLP c_proj both match "c_proj"). Empty for the
// families written with llama's names. Routed experts are 3-D parameters in transformers, not
// Linear modules, so no entry holds them.
std::vector<NamedLinear> FamilyLinears(const ModelSpec& m, int64_t layer) {
  const int64_t h = m.hidden, q = m.q_width(), kv = m.kv_width(), qkv = q + 2 * kv;
  const int64_t f = m.is_moe_layer(layer) ? m.shared_experts * m.shared_intermediate : m.intermediate;
  const std::string& t = m.model_type;
  auto mlp = [&](std::vector<NamedLinear> v, std::string_view up, std::string_view down, int64_t up_out) {
    if (f > 0) v.insert(v.end(), {{up, h, up_out}, {down, f, h}});
    return v;
  };
  if (t == "gpt2" || t == "gpt_bigcode") return mlp({{"c_attn", h, qkv}, {"c_proj", q, h}}, "c_fc", "c_proj", f);
  if (t == "gpt_neo") return mlp({{"q_proj", h, q}, {"k_proj", h, kv}, {"v_proj", h, kv}, {"out_proj", q, h}}, "c_fc", "c_proj", f);
  if (t == "gptj") return mlp({{"q_proj", h, q}, {"k_proj", h, kv}, {"v_proj", h, kv}, {"out_proj", q, h}}, "fc_in", "fc_out", f);
  if (t == "codegen") return mlp({{"qkv_proj", h, qkv}, {"out_proj", q, h}}, "fc_in", "fc_out", f);
  if (t == "opt") return mlp({{"q_proj", h, q}, {"k_proj", h, kv}, {"v_proj", h, kv}, {"out_proj", q, h}}, "fc1", "fc2", f);
  if (t == "phi") return mlp({{"q_proj", h, q}, {"k_proj", h, kv}, {"v_proj", h, kv}, {"dense", q, h}}, "fc1", "fc2", f);
  if (t == "gpt_neox" || t == "bloom" || t == "falcon")
    return mlp({{"query_key_value", h, qkv}, {"dense", q, h}}, "dense_h_to_4h", "dense_4h_to_h", f);
  if (t == "chatglm")  // GLM-2 to 4: dense_h_to_4h gives SwiGLU's gate and up; ChatGLM-6B's is a plain GELU MLP
    return mlp({{"query_key_value", h, qkv}, {"dense", q, h}}, "dense_h_to_4h", "dense_4h_to_h",
               m.mlp == MlpKind::kGated ? 2 * f : f);
  if (t == "mpt") return mlp({{"Wqkv", h, qkv}, {"out_proj", q, h}}, "up_proj", "down_proj", f);
  if (t == "dbrx") return {{"Wqkv", h, qkv}, {"out_proj", q, h}};
  if (t == "starcoder2") return mlp({{"q_proj", h, q}, {"k_proj", h, kv}, {"v_proj", h, kv}, {"o_proj", q, h}}, "c_fc", "c_proj", f);
  if (t == "nemotron") return mlp({{"q_proj", h, q}, {"k_proj", h, kv}, {"v_proj", h, kv}, {"o_proj", q, h}}, "up_proj", "down_proj", f);
  if (t == "phi3") return mlp({{"qkv_proj", h, qkv}, {"o_proj", q, h}}, "gate_up_proj", "down_proj", 2 * f);
  if (t == "glm" || t == "glm4")
    return mlp({{"q_proj", h, q}, {"k_proj", h, kv}, {"v_proj", h, kv}, {"o_proj", q, h}}, "gate_up_proj", "down_proj", 2 * f);
  if (t == "qwen") {  // w1 and w2 each give half of the SwiGLU input; c_proj closes attention and the MLP
    std::vector<NamedLinear> v = {{"c_attn", h, qkv}, {"c_proj", q, h}};
    if (f > 0) v.insert(v.end(), {{"w1", h, f}, {"w2", h, f}, {"c_proj", f, h}});
    return v;
  }
  if (t == "internlm2") {
    std::vector<NamedLinear> v = {{"wqkv", h, qkv}, {"wo", q, h}};
    if (f > 0) v.insert(v.end(), {{"w1", h, f}, {"w3", h, f}, {"w2", f, h}});
    return v;
  }
  if (t == "exaone")  // EXAONE 3.x: attn.attention.out_proj, a gated MLP as c_fc_0 (gate), c_fc_1 (up), c_proj
    return mlp({{"q_proj", h, q}, {"k_proj", h, kv}, {"v_proj", h, kv}, {"out_proj", q, h}, {"c_fc_0", h, f}}, "c_fc_1",
               "c_proj", f);
  if (t == "baichuan") {
    std::vector<NamedLinear> v = {{"W_pack", h, qkv}, {"o_proj", q, h}};
    if (f > 0) v.insert(v.end(), {{"gate_proj", h, f}, {"up_proj", h, f}, {"down_proj", f, h}});
    return v;
  }
  if (m.attention == AttentionKind::kMla) {  // DeepSeek-V2/V3's attention (modeling_deepseek_v3.py)
    const int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim, a = m.heads;
    std::vector<NamedLinear> v;
    if (m.q_lora_rank > 0) v.insert(v.end(), {{"q_a_proj", h, m.q_lora_rank}, {"q_b_proj", m.q_lora_rank, a * qk}});
    else v.push_back({"q_proj", h, a * qk});
    v.insert(v.end(), {{"kv_a_proj_with_mqa", h, m.kv_lora_rank + m.qk_rope_head_dim},
                       {"kv_b_proj", m.kv_lora_rank, a * (m.qk_nope_head_dim + m.v_head_dim)},
                       {"o_proj", a * m.v_head_dim, h}});
    if (f > 0) v.insert(v.end(), {{"gate_proj", h, f}, {"up_proj", h, f}, {"down_proj", f, h}});
    return v;
  }
  return {};
}

// One role under llama's name (all seven for all-linear), from the widths.
std::vector<NamedLinear> RoleLinears(const ModelSpec& m, std::string_view t) {
  const int64_t h = m.hidden, q = m.q_width(), kv = m.kv_width(), f = m.is_moe() ? m.expert_intermediate : m.intermediate;
  if (t == "all-linear")
    return {{"q_proj", h, q}, {"k_proj", h, kv}, {"v_proj", h, kv}, {"o_proj", q, h},
            {"gate_proj", h, f}, {"up_proj", h, f}, {"down_proj", f, h}};
  if (t == "q_proj") return {{t, h, q}};
  if (t == "k_proj" || t == "v_proj") return {{t, h, kv}};
  if (t == "o_proj") return {{t, q, h}};
  if (t == "gate_proj" || t == "up_proj") return {{t, h, f}};
  if (t == "down_proj") return {{t, f, h}};
  if (t == "mlp") {  // the MLP's Linear modules, by role: up and down, and the gate where there is one
    std::vector<NamedLinear> v = {{"up_proj", h, f}, {"down_proj", f, h}};
    if (m.mlp == MlpKind::kGated) v.insert(v.begin(), {"gate_proj", h, f});
    return v;
  }
  return {};
}

// The Linear modules of a transformer layer that the targets adapt: the family's own modules
// a target names (all of them for all-linear), else the llama role it names.
std::vector<NamedLinear> AdaptedLinears(const ModelSpec& m, const LoraSpec& lora, int64_t layer) {
  const std::vector<NamedLinear> named = FamilyLinears(m, layer);
  std::vector<NamedLinear> out;
  for (const std::string& t : lora.targets) {
    bool matched = false;
    for (const NamedLinear& n : named)
      if (t == "all-linear" || t == n.name) out.push_back(n), matched = true;
    if (!matched)
      for (const NamedLinear& n : RoleLinears(m, t)) out.push_back(n);
  }
  return out;
}

int64_t HybridLayerParams(const ModelSpec& m, const LoraSpec& lora, int64_t layer) {
  // A hybrid layer holds the projections of its mixer -- a linear mixer's in_proj (Qwen's
  // split in_proj_qkvz and in_proj_ba, or Qwen3.5's four) and out_proj, or attention's q/k/v/o,
  // q_proj doubled by an output gate -- and of its MLP's up/down (gate/up/down when gated,
  // Granite's fused input_linear and output_linear; an MoE block's shared expert, whose routed
  // experts are 3-D parameters, not Linear modules, which peft does not wrap).
  const int64_t h = m.hidden, q = m.q_width(), kv = m.kv_width();
  const int64_t q_out = m.attention_gate ? 2 * q : q;
  const int64_t up = m.is_moe_layer(layer) ? m.shared_intermediate : m.intermediate;
  const bool fused_ffn = m.model_type == "granitemoehybrid";
  int64_t sum = 0;
  for (const std::string& t : lora.targets) {
    const bool all = t == "all-linear";
    if (m.has_linear_mixer(layer)) {
      const ModelSpec::LinearMixer& x = m.linear;
      const int64_t conv = x.conv_dim(), inner = x.inner(), heads = x.heads;
      if (t == "in_proj") sum += h + x.in_proj();
      if (t == "in_proj_qkvz") sum += h + conv + inner;
      if (t == "in_proj_ba") sum += h + 2 * heads;
      if (t == "in_proj_qkv") sum += h + conv;
      if (t == "in_proj_z") sum += h + inner;
      if (t == "in_proj_b" || t == "in_proj_a") sum += h + heads;
      if (all) {  // each model's own split of in_proj into Linear modules
        const int modules = !x.delta ? 1 : m.model_type == "qwen3_next" ? 2 : 4;
        sum += modules * h + x.in_proj();
      }
      if (all || t == "out_proj") sum += inner + h;
    }
    if (m.has_attention(layer)) {
      if (all || t == "q_proj") sum += h + q_out;
      if (all || t == "k_proj") sum += h + kv;
      if (all || t == "v_proj") sum += h + kv;
      if (all || t == "o_proj") sum += q + h;
    }
    if (m.has_ffn(layer) && up > 0 && fused_ffn) {  // Granite's shared MLP: input_linear gives gate and up
      if (all || t == "mlp" || t == "input_linear") sum += h + 2 * up;
      if (all || t == "mlp" || t == "output_linear") sum += up + h;
    } else if (m.has_ffn(layer) && up > 0) {
      const bool mlp = all || t == "mlp";
      if ((mlp || t == "gate_proj") && m.mlp == MlpKind::kGated) sum += h + up;
      if (mlp || t == "up_proj") sum += h + up;
      if (mlp || t == "down_proj") sum += up + h;
    }
  }
  return sum;
}

}  // namespace

int64_t HeadAdapterParams(const ModelSpec& m, const LoraSpec& lora) {
  const bool head = std::find(lora.targets.begin(), lora.targets.end(), "lm_head") != lora.targets.end();
  return head ? lora.rank * (m.hidden + m.vocab) : 0;
}

int64_t AdapterParamsPerLayer(const ModelSpec& m, const LoraSpec& lora, int64_t layer) {
  if (m.is_hybrid()) return lora.rank * HybridLayerParams(m, lora, layer);
  int64_t sum = 0;
  for (const NamedLinear& n : AdaptedLinears(m, lora, layer)) sum += n.in + n.out;
  return lora.rank * sum;
}

AdapterInputs AdapterInputsPerLayer(const ModelSpec& m, const LoraSpec& lora, int64_t layer) {
  AdapterInputs a;
  if (m.is_hybrid()) return a;
  // The projections that read one tensor: the attention's normed input, the MLP's.
  auto shared = [](std::string_view name) -> int {
    for (std::string_view q : {"q_proj", "k_proj", "v_proj", "qkv_proj", "query_key_value", "c_attn", "Wqkv"})
      if (name == q) return 1;
    for (std::string_view g : {"gate_proj", "up_proj", "gate_up_proj"})
      if (name == g) return 2;
    for (std::string_view o : {"o_proj", "out_proj"})
      if (name == o) return 3;
    return 0;
  };
  bool seen[4] = {false, false, false, false};
  for (const NamedLinear& n : AdaptedLinears(m, lora, layer)) {
    a.modules += 1, a.inputs += n.in;
    const int group = shared(n.name);
    if (group == 0 || (group < 3 && !seen[group])) a.distinct += n.in;
    seen[group] = true;
  }
  return a;
}

bool AdaptsModule(const ModelSpec& m, const LoraSpec& lora, int64_t layer, std::string_view name) {
  for (const NamedLinear& n : AdaptedLinears(m, lora, layer))
    if (n.name == name) return true;
  return false;
}

namespace {

// Calls per_layer(layer, count) once for each kind of layer, with how many layers are of that
// kind. Layers differ only by their block letter and whether their FFN is an MoE: each such
// kind is counted once (the search prices a LoRA layout through here, layout after layout).
template <typename PerLayer>
void ForEachLayerKind(const ModelSpec& m, PerLayer per_layer) {
  struct Kind {
    char block;
    bool moe;
    int64_t layer, count;
  };
  std::vector<Kind> kinds;
  for (int64_t l = 0; l < m.layers; ++l) {
    const char b = m.block(l);
    const bool moe = m.is_moe_layer(l);
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const Kind& k) { return k.block == b && k.moe == moe; });
    if (it == kinds.end()) kinds.push_back({b, moe, l, 1});
    else ++it->count;
  }
  for (const Kind& k : kinds) per_layer(k.layer, static_cast<double>(k.count));
}

}  // namespace

double AdapterParamsPerLayerMean(const ModelSpec& m, const LoraSpec& lora) {
  if (m.layers <= 0) return 0;
  double sum = 0;
  ForEachLayerKind(m, [&](int64_t layer, double count) {
    sum += count * static_cast<double>(AdapterParamsPerLayer(m, lora, layer));
  });
  return sum / static_cast<double>(m.layers);
}

AdapterWidths AdapterWidthsPerLayerMean(const ModelSpec& m, const LoraSpec& lora) {
  AdapterWidths w;
  if (m.layers <= 0) return w;
  ForEachLayerKind(m, [&](int64_t layer, double count) {
    for (const NamedLinear& n : AdaptedLinears(m, lora, layer)) {
      w.inputs += count * static_cast<double>(n.in);
      w.outputs += count * static_cast<double>(n.out);
    }
  });
  w.inputs /= static_cast<double>(m.layers);
  w.outputs /= static_cast<double>(m.layers);
  return w;
}

Status CheckLoraTargets(const ModelSpec& m, const LoraSpec& lora) {
  std::vector<std::string> names = {"all-linear", "mlp", "lm_head"};
  for (int64_t l = 0; l < std::max<int64_t>(m.layers, 1); ++l)
    for (const NamedLinear& n : FamilyLinears(m, l))
      if (std::find(names.begin(), names.end(), n.name) == names.end()) names.emplace_back(n.name);
  for (std::string_view r : kRoles)
    if (std::find(names.begin(), names.end(), r) == names.end()) names.emplace_back(r);
  if (m.is_hybrid())
    for (std::string_view r : kHybridNames) names.emplace_back(r);
  for (const std::string& t : lora.targets)
    if (std::find(names.begin(), names.end(), t) == names.end())
      return Status::BadInput("lora.targets: \"" + t + "\" names no Linear module of a " + m.model_type +
                              " layer; expected one of " + Join(names) +
                              " (llama's q_proj ... down_proj names stand for those roles in any family)");
  return Status::Ok();
}

}  // namespace shardplan
