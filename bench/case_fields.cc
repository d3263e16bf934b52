#include "bench/case_fields.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "planner/io/document.h"
#include "planner/io/model_reader.h"
#include "planner/layout.h"
#include "planner/units.h"
#include "topology/cluster_reader.h"
#include "topology/gpu_catalog.h"

namespace shardplan::bench::detail {

// ---- Reading free-form fields. The notes mix numbers and prose ("1024 (inferred)"), so a
// field that is not what a rule expects reads as absent rather than as an error.

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

bool Mentions(const std::string& text, std::string_view lowercase_word) {
  return Lower(text).find(lowercase_word) != std::string::npos;
}

YAML::Node Section(const YAML::Node& map, const char* key) {
  if (map.IsMap() && map[key] && map[key].IsMap()) return map[key];
  return YAML::Node(YAML::NodeType::Map);
}

std::string Str(const YAML::Node& map, const char* key) {
  if (!map.IsMap() || !map[key] || !map[key].IsScalar()) return "";
  return map[key].Scalar();
}

std::optional<int64_t> ParseInt(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> Int(const YAML::Node& map, const char* key) { return ParseInt(Str(map, key)); }

std::optional<double> Number(const YAML::Node& map, const char* key) {
  const std::string s = Str(map, key);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return v;
}

// The first run of digits in `text` ("max_model_len default (4096)" -> 4096).
std::optional<int64_t> FirstInt(const std::string& text) {
  const size_t at = text.find_first_of("0123456789");
  if (at == std::string::npos) return std::nullopt;
  return ParseInt(std::string_view(text).substr(at, text.find_first_not_of("0123456789", at) - at));
}

// "q_lora_rank=1536 kv_lora_rank=512" -> 1536 for "q_lora_rank=".
std::optional<int64_t> IntAfter(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  if (at == std::string::npos) return std::nullopt;
  return FirstInt(text.substr(at + key.size()));
}

bool Skip(PublicCase& pc, std::string why) {
  pc.skip = std::move(why);
  return false;
}

// source.repo -> the training framework whose memory layout the run used.
const std::map<std::string, Framework> kFrameworks = {
    {"bigscience-workshop/bigscience", Framework::kDeepSpeed},  // Megatron-DeepSpeed: PipelineEngine + ZeRO-1
    {"deepspeedai/DeepSpeed", Framework::kDeepSpeed}, {"microsoft/DeepSpeed", Framework::kDeepSpeed},
    {"huggingface/peft", Framework::kDeepSpeed},  // its examples run DeepSpeed ZeRO-3 offload
    {"foundation-model-stack/fms-fsdp", Framework::kFsdp}, {"mosaicml/llm-foundry", Framework::kFsdp},
    {"pytorch/torchtune", Framework::kFsdp},  // FSDP2 engine; the layout names torchtune for its recipe
    {"unslothai/unsloth", Framework::kFsdp},  // the HF + FA2 baseline column
    {"pytorch/torchtitan", Framework::kTorchtitan},
    {"NVIDIA/Megatron-LM", Framework::kMegatron}, {"NVIDIA/NeMo", Framework::kMegatron},
    {"NVIDIA-NeMo/Megatron-Bridge", Framework::kMegatron}, {"yanring/Megatron-MoE-ModelZoo", Framework::kMegatron}};

constexpr Override kOverrides[] = {
    {"torchtune-llama32-3b-ladder-packed-compile", nullptr, LossKind::kStandard, false},
    {"torchtune-llama32-3b-ladder-packed-compile-chunkedce-ac", nullptr, LossKind::kChunked, false},
    {"torchtune-llama32-3b-ladder-plus-optim-in-bwd", "full", LossKind::kChunked, true},
};

const Override* FindOverride(const std::string& id) {
  for (const Override& o : kOverrides)
    if (id == o.id) return &o;
  return nullptr;
}

}  // namespace shardplan::bench::detail
