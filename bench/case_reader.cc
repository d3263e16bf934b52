#include "bench/case_reader.h"
#include "bench/case_fields.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "planner/io/document.h"
#include "planner/io/model_reader.h"
#include "planner/layout.h"
#include "planner/units.h"
#include "topology/cluster_reader.h"
#include "topology/gpu_catalog.h"

namespace shardplan::bench {
namespace {

using namespace detail;

// model.family -> the HF model_type whose reader has the family's traits.
const std::map<std::string, std::string> kModelTypes = {
    {"llama1", "llama"}, {"llama2", "llama"}, {"llama3", "llama"}, {"mixtral", "mixtral"},
    {"qwen3-moe", "qwen3_moe"}, {"deepseek-v3", "deepseek_v3"}, {"bloom", "bloom"},
    {"gpt2", "gpt2"}, {"gpt", "gpt2"}, {"mpt", "gpt2"}, {"opt", "opt"}};

// cluster.gpu text -> catalog GPU and the built-in cluster whose links it sits on. First match
// wins; every keyword must appear.
struct GpuRule {
  const char* keyword;
  const char* and_keyword;
  const char* catalog;
  const char* cluster;
};
constexpr GpuRule kGpuRules[] = {
    {"gb200", "", "b200-180gb", "dgx-h100"},  // NVL72 tray: NVLink inside the node
    {"b200", "", "b200-180gb", "dgx-h100"},
    {"h200", "", "h200-141gb", "h200-node"},
    {"h100", "", "h100-sxm-80gb", "dgx-h100"},
    {"a100", "40gb", "a100-sxm-40gb", "dgx-a100"},
    {"a100", "", "a100-sxm-80gb", "dgx-a100"},
    {"v100", "", "v100-sxm-32gb", "dgx-a100"},
    {"rtx 4090", "", "rtx-4090-24gb", "rtx4090-pc"},
    {"rtx a6000", "", "rtx-a6000-48gb", "rtxa6000-workstation"},
    {"rtx pro 6000", "", "l40s-48gb", "rtx4090-pc"},  // PCIe card without NVLink; memory from the case
};


// ---- Outcome: what was measured.

Metric MetricFromText(const std::string& text) {
  if (Mentions(text, "nvidia-smi")) return Metric::kDevice;
  if (Mentions(text, "reserved")) return Metric::kReserved;
  if (Mentions(text, "active") || Mentions(text, "allocated")) return Metric::kAllocated;
  return Metric::kUnspecified;
}

void MapOutcome(Fields& f, PublicCase& pc) {
  const YAML::Node& o = f.outcome;
  if (const std::string fits = Str(o, "fits"); fits == "true" || fits == "false") pc.fits = fits == "true";
  if (auto gib = Number(o, "weights_per_gpu_gb")) {  // vLLM logs GiB and prints "GB"
    pc.metric = Metric::kWeights;
    pc.measured_bytes = std::llround(*gib * kGiB);
  } else if (auto tokens = Int(o, "kv_cache_tokens")) {
    pc.metric = Metric::kKvBudget;
    pc.measured_kv_tokens = *tokens;
  } else if (o["nvidia_smi_used_mib"] && o["nvidia_smi_used_mib"].IsSequence()) {
    int64_t mib = 0;
    for (const YAML::Node& v : o["nvidia_smi_used_mib"]) mib = std::max(mib, ParseInt(v.Scalar()).value_or(0));
    pc.metric = Metric::kDevice;
    pc.measured_bytes = mib * kMiB;
  } else if (auto gib = Number(o, "measured_peak_gib")) {
    pc.metric = MetricFromText(Str(o, "memory_metric"));
    pc.measured_bytes = std::llround(*gib * kGiB);
  }
  // Max-context tables: the HF + FlashAttention-2 column is the standard stack we model.
  if (o["max_seq_len_fits_hf_fa2"]) {
    pc.unmodelled.push_back("Unsloth's own kernels (its column is not scored; the HF + FA2 column is)");
    if (auto seq = Int(o, "max_seq_len_fits_hf_fa2")) {
      f.seq_override = *seq;
      pc.fits = true;
    } else {
      f.seq_override = 1024;
      pc.fits = false;
      pc.assumed.push_back("HF + FA2 OOMs at every length; scored at seq 1024");
    }
  }
}

// ---- Model: an HF-style config built from the case's dimensions, read by the project's reader.

using ConfigKeys = std::vector<std::pair<std::string, std::optional<int64_t>>>;

StatusOr<ModelSpec> ParseConfig(const std::string& id, const std::string& type, const ConfigKeys& keys, bool tied,
                                const YAML::Node& quant) {
  std::string text = "model_type: " + type + "\n";
  for (const auto& [key, value] : keys)
    if (value) text += key + ": " + std::to_string(*value) + "\n";
  if (tied) text += "tie_word_embeddings: true\n";
  if (quant.IsDefined() && !quant.IsNull()) {
    YAML::Emitter block;
    block << quant;
    std::istringstream lines(block.c_str());
    text += "quantization_config:\n";
    for (std::string line; std::getline(lines, line);) text += "  " + line + "\n";
  }
  SP_ASSIGN_OR_RETURN(Document doc, Document::Parse(id + " (model)", text));
  return ParseModel(doc, id);
}

// The config keys of `type` that carry the case's dimensions; absent ones take the reader's
// transformers defaults.
ConfigKeys ConfigFor(const std::string& type, const YAML::Node& m, int64_t heads) {
  const auto hidden = Int(m, "hidden"), layers = Int(m, "layers"), ffn = Int(m, "ffn");
  const auto experts = Int(m, "experts"), topk = Int(m, "topk"), moe_ffn = Int(m, "moe_ffn");
  if (type == "bloom")  // BloomMLP is always 4h
    return {{"vocab_size", Int(m, "vocab")}, {"hidden_size", hidden}, {"n_layer", layers}, {"n_head", heads}};
  if (type == "gpt2")
    return {{"vocab_size", Int(m, "vocab")}, {"n_embd", hidden}, {"n_layer", layers}, {"n_head", heads},
            {"n_inner", ffn}, {"n_positions", FirstInt(Str(m, "seq_len")).value_or(2048)}};
  if (type == "opt")
    return {{"vocab_size", Int(m, "vocab")}, {"hidden_size", hidden}, {"num_hidden_layers", layers},
            {"num_attention_heads", heads}, {"ffn_dim", ffn.value_or(4 * hidden.value_or(0))}};
  ConfigKeys k = {{"vocab_size", Int(m, "vocab")}, {"hidden_size", hidden}, {"num_hidden_layers", layers},
                  {"num_attention_heads", heads}, {"num_key_value_heads", Int(m, "kv_heads").value_or(heads)},
                  {"head_dim", Int(m, "head_dim")}, {"intermediate_size", type == "mixtral" ? moe_ffn : ffn}};
  auto add = [&](ConfigKeys more) { k.insert(k.end(), more.begin(), more.end()); };
  if (type == "mixtral") add({{"num_local_experts", experts}, {"num_experts_per_tok", topk}});
  if (type == "qwen3_moe")
    add({{"num_experts", experts}, {"num_experts_per_tok", topk}, {"moe_intermediate_size", moe_ffn}});
  if (type == "deepseek_v3")
    add({{"n_routed_experts", experts}, {"num_experts_per_tok", topk}, {"moe_intermediate_size", moe_ffn},
         {"n_shared_experts", Int(m, "shared_experts")}, {"first_k_dense_replace", Int(m, "dense_layers")},
         {"q_lora_rank", IntAfter(Str(m, "attention"), "q_lora_rank=")},
         {"kv_lora_rank", IntAfter(Str(m, "attention"), "kv_lora_rank=")},
         {"num_nextn_predict_layers", Int(m, "mtp_layers")}});
  return k;
}

bool MapModel(const Fields& f, PublicCase& pc) {
  const YAML::Node& m = f.model;
  const auto hidden = Int(m, "hidden");
  if (!Int(m, "layers") || !hidden) return Skip(pc, "model dimensions not stated (" + Str(m, "name") + ")");
  const auto type_it = kModelTypes.find(Str(m, "family"));
  if (type_it == kModelTypes.end()) return Skip(pc, "model family '" + Str(m, "family") + "' has no model_type");
  const std::string& type = type_it->second;
  if (Str(m, "family") == "mpt") pc.assumed.push_back("MPT read as gpt2 (ALiBi and no biases not distinguished)");
  if (!Int(m, "heads")) pc.assumed.push_back("heads = hidden / 128 (not stated)");
  if (!Int(m, "vocab")) pc.assumed.push_back("vocab: the transformers default for " + type);
  const ConfigKeys keys = ConfigFor(type, m, Int(m, "heads").value_or(*hidden / 128));
  // A case that names NVIDIA's ModelOpt FP4 checkpoints serves NVFP4 weights: what their
  // quantization_config says (quant_method modelopt, quant_algo NVFP4, lm_head excluded).
  const YAML::Node stated = m["quantization_config"];
  YAML::Node quant(YAML::NodeType::Null);
  if (stated.IsDefined()) quant = YAML::Clone(stated);
  const std::string precision = Lower(Str(f.layout, "precision"));
  if (quant.IsNull() && Mentions(precision, "fp4") && Mentions(precision, "modelopt")) {
    quant = YAML::Node(YAML::NodeType::Map);
    quant["quant_method"] = "modelopt";
    quant["quant_algo"] = "NVFP4";
    pc.assumed.push_back("ModelOpt NVFP4 checkpoint: 4-bit float weights with an fp8 scale per 16");
  }
  StatusOr<ModelSpec> spec = ParseConfig(pc.id, type, keys, false, quant);
  if (!spec.ok()) return Skip(pc, "model: " + spec.status().message());
  // Llama-style configs do not say whether the head is tied (Llama 3.2 1B/3B tie it): take
  // the choice whose parameter count is nearer the case's params_b.
  const auto billions = Number(m, "params_b");
  if (billions && !spec->tied_embeddings && (type == "llama" || type == "mixtral" || type == "qwen3_moe")) {
    const double untied = static_cast<double>(CountParams(*spec).total);
    const double tied = untied - static_cast<double>(spec->vocab * spec->hidden);
    if (std::fabs(tied - *billions * 1e9) < std::fabs(untied - *billions * 1e9)) {
      spec = ParseConfig(pc.id, type, keys, true, quant);
      if (!spec.ok()) return Skip(pc, "model: " + spec.status().message());
      pc.assumed.push_back("tied embeddings (nearer params_b)");
    }
  }
  pc.model = *spec;
  return true;
}

// ---- Cluster: a catalog GPU with the case's memory, on a built-in node of its kind.

bool MapCluster(const Fields& f, PublicCase& pc) {
  const YAML::Node& c = f.cluster;
  const std::string gpu_text = Lower(Str(c, "gpu"));
  const GpuRule* rule = nullptr;
  for (const GpuRule& r : kGpuRules)
    if (gpu_text.find(r.keyword) != std::string::npos && gpu_text.find(r.and_keyword) != std::string::npos) {
      rule = &r;
      break;
    }
  static const GpuRule kUnnamed = {"", "", "a100-sxm-80gb", "dgx-a100"};
  if (!rule) {
    rule = &kUnnamed;
    pc.assumed.push_back("GPU model not stated: an A100-class GPU of the stated memory");
  }
  StatusOr<GpuSpec> gpu = CatalogGpu(rule->catalog);
  StatusOr<ClusterSpec> base = LoadCluster(rule->cluster);
  if (!gpu.ok() || !base.ok()) return Skip(pc, "built-in config missing: " + std::string(rule->catalog));
  const auto gib = Number(c, "mem_gib"), nominal = Number(c, "mem_gb_nominal");
  if (gib) {
    gpu->memory_bytes = std::llround(*gib * kGiB);
  } else if (nominal && std::fabs(ToGiB(gpu->memory_bytes) - *nominal) > 0.02 * *nominal) {
    // Usable share of the nominal size as the H100 80GB shows it (81559 of 81920 MiB).
    gpu->memory_bytes = std::llround(*nominal * (81559.0 / 81920.0) * kGiB);
    pc.assumed.push_back("capacity " + FormatBytes(gpu->memory_bytes) + " from the nominal " +
                         Str(c, "mem_gb_nominal") + " GB");
  }
  gpu->display_name = Str(c, "gpu");
  const auto total = Int(c, "total_gpus");
  const int64_t per_node = std::min(Int(c, "gpus_per_node").value_or(1), total.value_or(1));
  if (!total || per_node < 1 || *total % per_node != 0) return Skip(pc, "cluster: GPU count not stated as whole nodes");
  ClusterSpec spec = *base;
  spec.name = pc.id;
  spec.gpu = *gpu;
  spec.gpus_per_node = static_cast<int>(per_node);
  spec.nodes = static_cast<int>(*total / per_node);
  if (auto host_gb = Number(c, "cpu_ram_gb")) spec.host_memory_bytes = std::llround(*host_gb * 1e9);
  pc.cluster = spec;
  return true;
}

// ---- Workload.

Dtype PrecisionFrom(const std::string& text) {
  const std::string t = Lower(text);
  if (t.find("4-bit") != std::string::npos) return Dtype::kBf16;  // QLoRA: bf16 compute
  if (t.find("fp32") != std::string::npos) return Dtype::kFp32;
  if (t.find("fp8") != std::string::npos || t.find("float8") != std::string::npos) return Dtype::kFp8;
  if (t.find("fp16") != std::string::npos) return Dtype::kFp16;
  return Dtype::kBf16;
}

void MapLora(const std::string& peft, PublicCase& pc) {
  static const std::map<std::string, std::vector<std::string>> kTargets = {
      {"q", {"q_proj"}},       {"k", {"k_proj"}},   {"v", {"v_proj"}},       {"o", {"o_proj"}},
      {"output_proj", {"o_proj"}}, {"gate", {"gate_proj"}}, {"up", {"up_proj"}}, {"down", {"down_proj"}},
      {"mlp", {"gate_proj", "up_proj", "down_proj"}}};
  LoraSpec& lora = pc.workload.lora;
  if (auto r = IntAfter(peft, "r=")) lora.rank = *r;
  else pc.assumed.push_back("LoRA rank " + std::to_string(lora.rank) + " (not stated)");
  const size_t on = peft.find(" on ");  // "LoRA r=8 on q,v,output_proj + MLP"
  if (on == std::string::npos) return pc.assumed.push_back("LoRA on every projection (targets not stated)");
  std::string words = Lower(peft.substr(on + 4));
  if (words.find("all linear") != std::string::npos) return void(lora.targets = {"all-linear"});
  std::replace_if(words.begin(), words.end(), [](unsigned char ch) { return !std::isalnum(ch) && ch != '_'; }, ' ');
  lora.targets.clear();
  std::istringstream in(words);
  for (std::string w; in >> w;)
    if (const auto it = kTargets.find(w); it != kTargets.end())
      lora.targets.insert(lora.targets.end(), it->second.begin(), it->second.end());
}

// The longest ISL/OSL pair a serving table reports: a single sequence of that length ran.
void LongestServedContext(const YAML::Node& outcome, InferenceSpec& in) {
  for (const auto& table : outcome) {
    if (!table.second.IsMap() || Lower(table.first.Scalar()).find("isl_osl") == std::string::npos) continue;
    for (const auto& kv : table.second) {
      const std::string key = kv.first.Scalar();
      const size_t slash = key.find('/');
      auto isl = ParseInt(key.substr(0, slash)), osl = ParseInt(key.substr(slash + 1));
      if (slash != std::string::npos && isl && osl && *isl + *osl > in.prompt_len + in.gen_len)
        in.prompt_len = *isl, in.gen_len = *osl;
    }
  }
}

bool MapWorkload(const Fields& f, PublicCase& pc) {
  static const std::map<std::string, Task> kTasks = {
      {"training-dense", Task::kPretrain}, {"training-moe", Task::kPretrain}, {"finetune-full", Task::kFinetune},
      {"finetune-lora", Task::kLora}, {"finetune-qlora", Task::kQlora}, {"inference", Task::kInference}};
  const auto task = kTasks.find(f.category);
  if (task == kTasks.end()) return Skip(pc, "category '" + f.category + "' is not a task");
  Workload& w = pc.workload;
  w.task = task->second;
  w.name = f.category;
  const std::string precision = Str(f.layout, "precision");
  w.precision = PrecisionFrom(precision);
  if (w.precision == Dtype::kFp8) pc.unmodelled.push_back("FP8 weight copies and scaling state (fp8 counted as bf16)");
  if (Optimizer o; ParseOptimizer(Lower(Str(f.layout, "optimizer")), &o)) w.optimizer = o;
  if (w.lora_like()) MapLora(Str(f.layout, "peft"), pc);
  const auto seq = f.seq_override ? f.seq_override : FirstInt(Str(f.model, "seq_len"));
  if (w.training()) {
    if (!seq) return Skip(pc, "sequence length not stated (" + Str(f.model, "seq_len") + ")");
    w.seq_len = *seq;
    return true;
  }
  InferenceSpec& in = w.inference;
  in.batch = 1;
  const bool fp4 = Mentions(precision, "fp4");
  in.weights = fp4 ? Dtype::kInt4 : w.precision == Dtype::kFp32 ? Dtype::kBf16 : w.precision;
  if (fp4 && !pc.model.quant.quantized()) pc.assumed.push_back("FP4 weights counted as int4 (0.5 B + group scales)");
  if (Mentions(precision, "fp16 kv")) in.kv_cache = Dtype::kFp16;
  if (auto util = Number(f.layout, "gpu_memory_utilization")) in.gpu_memory_utilization = *util;
  if (seq) {
    in.prompt_len = *seq;
    in.gen_len = 0;
  } else {
    in.prompt_len = in.gen_len = 0;
    LongestServedContext(f.outcome, in);
    if (in.prompt_len + in.gen_len == 0) in.prompt_len = in.gen_len = 1024;
    pc.assumed.push_back("one sequence of " + std::to_string(in.prompt_len) + " + " + std::to_string(in.gen_len) +
                         " tokens");
  }
  return true;
}


PublicCase MapCase(const YAML::Node& c) {
  PublicCase pc;
  pc.id = Str(c, "id");
  Fields f{Section(c, "model"), Section(c, "cluster"), Section(c, "layout"), Section(c, "outcome"), Str(c, "category"),
           Str(Section(c, "source"), "repo"), std::nullopt};
  pc.source = f.repo.empty() ? Str(Section(c, "source"), "paper") : f.repo;
  MapOutcome(f, pc);
  if (MapModel(f, pc) && MapCluster(f, pc) && MapWorkload(f, pc)) MapLayout(f, pc);
  // torchtune's two LoRA rows run one recipe yet measure 16.2 and 30.3 GiB, so they differ
  // in settings the source omits.
  if (pc.skip.empty() && f.repo == "pytorch/torchtune" && pc.workload.task != Task::kFinetune)
    Skip(pc, "torchtune LoRA rows differ in unstated settings (same recipe, 16.2 vs 30.3 GiB)");
  return pc;
}

}  // namespace

std::string_view MetricName(Metric m) {
  switch (m) {
    case Metric::kNone: return "fit";
    case Metric::kAllocated: return "allocated";
    case Metric::kReserved: return "reserved";
    case Metric::kDevice: return "nvidia-smi";
    case Metric::kUnspecified: return "unstated~reserved";
    case Metric::kWeights: return "weights";
    case Metric::kKvBudget: return "kv-budget";
  }
  return "?";
}

// case_annotations.yaml beside the cases: id -> the entry whose sections are merged in.
StatusOr<std::map<std::string, YAML::Node>> ReadAnnotations(const std::string& cases_path, Document& keep) {
  std::map<std::string, YAML::Node> out;
  const std::filesystem::path path = std::filesystem::path(cases_path).parent_path() / "case_annotations.yaml";
  if (!std::filesystem::exists(path)) return out;
  SP_ASSIGN_OR_RETURN(keep, Document::Load(path.string()));
  const YAML::Node list = keep.root()["annotations"];
  if (!list || !list.IsSequence()) return keep.ErrorAt(keep.root(), "annotations: expected a list of {id, note, source, sections}");
  for (const YAML::Node& a : list) {
    if (!a.IsMap() || Str(a, "id").empty() || Str(a, "source").empty() || Str(a, "note").empty())
      return keep.ErrorAt(a, "expected an annotation with an id, a note and a source");
    out[Str(a, "id")] = a;
  }
  return out;
}

StatusOr<std::vector<PublicCase>> ReadPublicCases(const std::string& path) {
  SP_ASSIGN_OR_RETURN(Document doc, Document::Load(path));
  const YAML::Node cases = doc.root()["cases"];
  if (!cases || !cases.IsSequence()) return doc.ErrorAt(doc.root(), "cases: expected a list of published runs");
  Document notes = doc;
  SP_ASSIGN_OR_RETURN(auto annotations, ReadAnnotations(path, notes));
  std::vector<PublicCase> out;
  for (const YAML::Node& c : cases) {
    if (!c.IsMap() || Str(c, "id").empty()) return doc.ErrorAt(c, "expected a case with an id");
    const auto a = annotations.find(Str(c, "id"));
    if (a == annotations.end()) {
      out.push_back(MapCase(c));
      continue;
    }
    YAML::Node merged = YAML::Clone(c);
    for (const auto& section : a->second) {
      const std::string name = section.first.Scalar();
      if (!section.second.IsMap()) continue;  // id, note, source
      for (const auto& kv : section.second) merged[name][kv.first.Scalar()] = YAML::Clone(kv.second);
    }
    PublicCase pc = MapCase(merged);
    pc.assumed.push_back("annotated: " + Str(a->second, "note"));
    out.push_back(std::move(pc));
    annotations.erase(a);
  }
  if (!annotations.empty())
    return notes.ErrorAt(annotations.begin()->second, "annotation for unknown case '" + annotations.begin()->first + "'");
  return out;
}

}  // namespace shardplan::bench
