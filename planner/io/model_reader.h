// Reads a Hugging Face config.json (or a YAML file with the same keys) into a ModelSpec.
// Missing keys take the defaults of the transformers config class for the model_type;
// unknown keys are ignored (HF configs carry many) unless they look like a misspelling.
#pragma once

#include <string>

#include "planner/io/document.h"
#include "planner/model_spec.h"

namespace shardplan {

// model_type values this reader understands.
const std::vector<std::string>& SupportedModelTypes();

StatusOr<ModelSpec> ParseModel(const Document& doc, const std::string& display_name);
// The same for a mapping nested in a larger file (plan.yaml).
StatusOr<ModelSpec> ParseModelNode(const Document& doc, const YAML::Node& node, const std::string& display_name);
// Writes the spec back as HF config keys that ParseModel reads to the same spec.
std::string ModelToYaml(const ModelSpec& m, int indent);
// MPT's attn_config.attn_impl name for a kernel ("torch", "triton", "flash"); null for one
// MPT configs cannot name.
const char* MptAttnImplName(AttentionImpl impl);
// `ref`, tried in this order: an existing file (config.json or YAML) or a folder holding
// config.json; a built-in name (configs/models/); a hub id `org/name[@revision]` read from
// the local Hugging Face cache (planner/io/hub_cache.h).
StatusOr<ModelSpec> LoadModel(const std::string& ref);

// The config keys of a linear mixer's widths and transformers' defaults for them: Mamba-2's
// (NemotronHConfig, GraniteMoeHybridConfig) or the Gated DeltaNet's (Qwen3NextConfig). The reader and the writer share
// them, so a plan's model section reads back to the same widths.
struct LinearMixerKey {
  const char* name;
  int64_t fallback;
};
// The widths of the GPT-2-shaped families (gpt2, gptj, codegen, gpt_bigcode, gpt_neo) under
// their config key names, for the reader and the plan writer: hidden, layers, heads, positions
// and the MLP's inner width (4h when the key is null or absent).
struct GptKeys {
  const char *hidden, *layers, *heads, *positions, *inner;
};
const GptKeys& GptKeysOf(const std::string& model_type);

struct LinearMixerKeys {
  LinearMixerKey heads, head_dim, groups, state, conv_kernel;
};
// By model_type: nemotron_h's Mamba-2 keys, those of granitemoehybrid, bamba and falcon_h1 (mamba_n_heads, ...), else the
// Gated DeltaNet's.
const LinearMixerKeys& LinearMixerKeysOf(const std::string& model_type);

// Checks sizes a real model can have; the error names the key.
Status ValidateModel(const ModelSpec& m);

}  // namespace shardplan
