#include "planner/quantization.h"

#include <algorithm>

namespace shardplan {
namespace {

std::string LayerPrefix(const ModelSpec& m, int64_t layer) {
  const std::string i = std::to_string(layer);
  if (m.model_type == "gpt2" || m.model_type == "bloom") return "transformer.h." + i + ".";
  if (m.model_type == "opt") return "model.decoder.layers." + i + ".";
  if (m.model_type == "gpt_neox") return "gpt_neox.layers." + i + ".";
  return "model.layers." + i + ".";
}

// An MoE layer's router weight: vLLM builds every gate without a quantization method, so it
// stays 16-bit whatever the skip list says.
int64_t RouterWeights(const ModelSpec& m, int64_t layer) { return m.is_moe_layer(layer) ? m.experts * m.hidden : 0; }

}  // namespace

std::vector<LinearModule> LayerLinearModules(const ModelSpec& m, int64_t layer) {
  const std::string p = LayerPrefix(m, layer);
  const int64_t h = m.hidden, a = m.heads, i = m.intermediate;
  std::vector<LinearModule> out;
  auto add = [&](const std::string& name, int64_t params, bool expert = false) {
    out.push_back({p + name, params, expert});
  };
  // Fused-QKV families name their modules after the original GPT code.
  if (m.model_type == "gpt2") {
    add("attn.c_attn", h * (m.q_width() + 2 * m.kv_width()));
    add("attn.c_proj", m.q_width() * h);
    add("mlp.c_fc", h * i);
    add("mlp.c_proj", i * h);
    return out;
  }
  if (m.model_type == "bloom" || m.model_type == "gpt_neox") {
    const std::string attn = m.model_type == "bloom" ? "self_attention." : "attention.";
    add(attn + "query_key_value", h * (m.q_width() + 2 * m.kv_width()));
    add(attn + "dense", m.q_width() * h);
    add("mlp.dense_h_to_4h", h * i);
    add("mlp.dense_4h_to_h", i * h);
    return out;
  }
  if (m.model_type == "opt") {
    for (const char* n : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj"}) add(n, h * h);
    add("fc1", h * i);
    add("fc2", i * h);
    return out;
  }
  if (m.attention == AttentionKind::kMla) {
    const int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
    if (m.q_lora_rank > 0) {
      add("self_attn.q_a_proj", h * m.q_lora_rank);
      add("self_attn.q_b_proj", m.q_lora_rank * a * qk);
    } else {
      add("self_attn.q_proj", h * a * qk);
    }
    add("self_attn.kv_a_proj_with_mqa", h * (m.kv_lora_rank + m.qk_rope_head_dim));
    add("self_attn.kv_b_proj", m.kv_lora_rank * a * (m.qk_nope_head_dim + m.v_head_dim));
    add("self_attn.o_proj", a * m.v_head_dim * h);
  } else {
    add("self_attn.q_proj", h * m.q_width());
    add("self_attn.k_proj", h * m.kv_width());
    add("self_attn.v_proj", h * m.kv_width());
    add("self_attn.o_proj", m.q_width() * h);
  }
  if (!m.is_moe_layer(layer)) {
    for (const char* n : {"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}) add(n, h * i);
    return out;
  }
  const bool mixtral = m.model_type == "mixtral";
  add(mixtral ? "block_sparse_moe.experts" : "mlp.experts", m.experts * 3 * h * m.expert_intermediate, true);
  if (m.shared_experts > 0)
    add(m.model_type == "qwen2_moe" ? "mlp.shared_expert" : "mlp.shared_experts",
        m.shared_experts * 3 * h * m.shared_intermediate);
  return out;
}

bool SkipEntryMatches(std::string_view entry, std::string_view module) {
  if (entry.empty()) return false;
  for (size_t at = module.find(entry); at != std::string_view::npos; at = module.find(entry, at + 1)) {
    const size_t end = at + entry.size();
    if ((at == 0 || module[at - 1] == '.') && (end == module.size() || module[end] == '.')) return true;
  }
  return false;
}

void ResolveKeptModules(ModelSpec& m) {
  CheckpointQuant& q = m.quant;
  q.kept_dense.assign(static_cast<size_t>(m.layers), 0);
  q.kept_expert.assign(static_cast<size_t>(m.layers), 0);
  for (int64_t layer = 0; layer < m.layers; ++layer) {
    const size_t at = static_cast<size_t>(layer);
    q.kept_dense[at] += RouterWeights(m, layer);
    for (const LinearModule& mod : LayerLinearModules(m, layer)) {
      const bool kept = std::any_of(q.skip.begin(), q.skip.end(),
                                    [&](const std::string& e) { return SkipEntryMatches(e, mod.name); });
      if (kept) (mod.expert ? q.kept_expert : q.kept_dense)[at] += mod.params;
    }
  }
}

int64_t QuantizedParams(const ModelSpec& m) {
  if (!m.quant.quantized()) return 0;
  int64_t n = 0;
  for (int64_t layer = 0; layer < m.layers; ++layer) {
    for (const LinearModule& mod : LayerLinearModules(m, layer)) n += mod.params;
    const size_t at = static_cast<size_t>(layer);
    if (at < m.quant.kept_dense.size()) n -= m.quant.kept_dense[at] + m.quant.kept_expert[at];
    n += RouterWeights(m, layer);  // kept, but not a listed module
  }
  return n;
}

double CheckpointBytesPerParam(const ModelSpec& m) {
  const CheckpointQuant& q = m.quant;
  const double weight = q.bits / 8.0;
  const double in = static_cast<double>(std::max<int64_t>(1, m.hidden));  // a typical input width
  switch (q.format) {
    case Dtype::kNf4:
      // bitsandbytes: fp32 absmax per 64 weights, or with double quantization an 8-bit
      // absmax per 64 plus an fp32 scale per 256 blocks (memory-model.md 5.1).
      return q.double_quant ? 0.5 + 1.0 / 64.0 + 4.0 / 16384.0 : 0.5 + 4.0 / 64.0;
    case Dtype::kFp8:
      // An fp32 scale per block (DeepSeek 128x128), per group, per output row (fbgemm_fp8,
      // compressed-tensors "channel") or per tensor.
      if (q.block_rows > 0 && q.block_cols > 0) return weight + 4.0 / static_cast<double>(q.block_rows * q.block_cols);
      if (q.group_size > 0) return weight + 4.0 / static_cast<double>(q.group_size);
      return q.group_size < 0 ? weight : weight + 4.0 / in;
    default:
      // 4-bit floats (NVFP4, compressed-tensors "float" 4-bit): an fp8 scale per group, no zero.
      if (q.float_format && q.group_size > 0) return weight + 1.0 / static_cast<double>(q.group_size);
      // EETQ is symmetric: an fp16 scale per output channel and no zero point.
      if (q.method == "eetq") return weight + 2.0 / in;
      // Integer weights: an fp16 scale and a packed zero point per group (auto-gptq/AWQ), or
      // per output channel when the group is the whole row.
      if (q.group_size > 0) return weight + (2.0 + weight) / static_cast<double>(q.group_size);
      return q.group_size < 0 ? weight : weight + (2.0 + weight) / in;
  }
}

bool ServedAsShipped(const ModelSpec& m, Dtype format) { return m.quant.quantized() && format == m.quant.format; }

Dtype ServedFormat(const ModelSpec& m, Dtype requested) {
  if (!m.quant.quantized() || DtypeBytes(requested) < DtypeBytes(m.quant.format)) return requested;
  return m.quant.format;
}

double ServedBytesPerParam(const ModelSpec& m, Dtype format) {
  return ServedAsShipped(m, format) ? CheckpointBytesPerParam(m) : QuantizedBytesPerParam(format);
}

KeptParams KeptLinearParams(const ModelSpec& m, Dtype format, int64_t first, int64_t count) {
  KeptParams k;
  if (!ServedAsShipped(m, format) || m.quant.kept_dense.empty()) return k;
  const int64_t end = std::min<int64_t>(first + count, static_cast<int64_t>(m.quant.kept_dense.size()));
  for (int64_t layer = std::max<int64_t>(first, 0); layer < end; ++layer) {
    k.dense += m.quant.kept_dense[static_cast<size_t>(layer)];
    k.expert += m.quant.kept_expert[static_cast<size_t>(layer)];
  }
  return k;
}

double ServedWeightBytes(const ModelSpec& m, Dtype format, double linear, double kept, double sixteen_bit) {
  return (linear - kept) * ServedBytesPerParam(m, format) + (kept + sixteen_bit) * 2;
}

}  // namespace shardplan
