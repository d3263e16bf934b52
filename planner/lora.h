// LoRA adapters: which Linear modules of a layer a workload's `lora.targets` names, and the
// parameters peft adds there, r x (in + out) per matched module.
#pragma once

#include <cstdint>
#include <string_view>

#include "planner/model_spec.h"
#include "planner/status.h"
#include "planner/workload.h"

namespace shardplan {

// Adapter parameters of one layer. A target is `all-linear` (every Linear module of the layer,
// peft's shorthand), a module name as the model's modeling file spells it (GPT-2's c_attn,
// BLOOM's query_key_value, Qwen's w1, ...), or one of llama's names (q_proj, k_proj, v_proj,
// o_proj, gate_proj, up_proj, down_proj), which stand for those roles in any family, or
// `mlp`, every Linear module of the MLP (LitGPT's lora_mlp).
int64_t AdapterParamsPerLayer(const ModelSpec& m, const LoraSpec& lora, int64_t layer);

// Adapter parameters outside the layers: r x (hidden + vocab) on the output head when a
// target is `lm_head` (peft's module name; LitGPT's lora_head), held by the last stage.
int64_t HeadAdapterParams(const ModelSpec& m, const LoraSpec& lora);

// The Linear modules of one layer that the targets adapt, and the sum of their input widths:
// what peft's LoRA layers keep copies of (planner/activations.cc). Hybrid layers give none.
struct AdapterInputs {
  int64_t modules = 0;
  int64_t inputs = 0;    // summed over the adapted modules
  // Each input tensor once (q, k and v read one, gate and up another), leaving out the
  // attention output o_proj reads, which the attention kernel keeps for its own backward.
  int64_t distinct = 0;
};
AdapterInputs AdapterInputsPerLayer(const ModelSpec& m, const LoraSpec& lora, int64_t layer);

// Whether the targets adapt the module of that name (a family's own, or one of llama's) in
// the layer.
bool AdaptsModule(const ModelSpec& m, const LoraSpec& lora, int64_t layer, std::string_view name);

// The same, averaged over the model's layers (the time model prices a stage by its layer count).
double AdapterParamsPerLayerMean(const ModelSpec& m, const LoraSpec& lora);

// The input and output widths of the adapted Linear modules, summed over a layer and averaged
// over the model's layers: the time model's passes over what each adapter reads and writes.
struct AdapterWidths {
  double inputs = 0, outputs = 0;
};
AdapterWidths AdapterWidthsPerLayerMean(const ModelSpec& m, const LoraSpec& lora);

// BadInput naming each target that matches no Linear module of the model, with the names it has.
Status CheckLoraTargets(const ModelSpec& m, const LoraSpec& lora);

}  // namespace shardplan
