#include "planner/io/workload_reader.h"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <iterator>

#include "planner/strings.h"

namespace shardplan {
namespace {

Status ReadDtypeKey(const Document& doc, const YAML::Node& map, const char* key, Dtype* out) {
  SP_ASSIGN_OR_RETURN(std::optional<std::string> s, doc.String(map, key));
  if (!s) return Status::Ok();
  if (Lower(*s) == "auto") return Status::Ok();  // a serving engine's dtype: auto, the checkpoint's own
  std::optional<Dtype> d = ParseDtype(*s);
  if (!d) return doc.ErrorAt(map[key], std::string(key) + ": expected bf16, fp16, fp32, fp8, nvfp4, int8, int4 or nf4, got \"" + *s + "\"");
  if (*d == Dtype::kFp4 && std::string_view(key) == "kv_cache")
    return doc.ErrorAt(map[key], "kv_cache: nvfp4 is not a KV-cache format the serving engines offer; expected bf16, fp16 or fp8, got \"" + *s + "\"");
  *out = *d;
  return Status::Ok();
}

// peft's LoraConfig names, so a config can be pasted as it is (r=16, lora_alpha=32,
// target_modules="all-linear", lora_dropout=0.05).
static const Document::Synonyms kLoraSynonyms = {
    {"r", "rank"}, {"lora_alpha", "alpha"}, {"target_modules", "targets"}, {"lora_dropout", "dropout"}};

Status ReadLora(const Document& doc, const YAML::Node& given, LoraSpec& lora) {
  SP_RETURN_IF_ERROR(doc.ExpectMap(given, "lora"));
  SP_RETURN_IF_ERROR(doc.CheckKeys(given, {"rank", "targets", "alpha", "dropout"}, kLoraSynonyms));
  SP_ASSIGN_OR_RETURN(const YAML::Node node, doc.WithOurNames(given, kLoraSynonyms));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> rank, doc.Int(node, "rank", 1, 65536));
  if (rank) lora.rank = *rank;
  SP_ASSIGN_OR_RETURN(std::optional<double> dropout, doc.Number(node, "dropout", 0, 0.999));
  if (dropout) lora.dropout = *dropout;
  YAML::Node targets = node["targets"];
  if (targets.IsDefined() && targets.IsScalar() && !targets.Scalar().empty()) {
    lora.targets = {targets.Scalar()};  // peft's target_modules="all-linear", or one module
  } else if (targets.IsDefined()) {
    if (!targets.IsSequence() || targets.size() == 0)
      return doc.ErrorAt(targets, "targets: expected a list of module names like [q_proj, v_proj]");
    lora.targets.clear();
    for (const auto& t : targets) {
      if (!t.IsScalar()) return doc.ErrorAt(t, "targets: expected a module name");
      lora.targets.push_back(t.Scalar());
    }
  }
  return Status::Ok();
}

// Megatron's --first-last-layers-bf16 with --num-layers-at-start-in-bf16 /
// --num-layers-at-end-in-bf16, as Megatron-Bridge's MixedPrecisionConfig names them too.
static const Document::Synonyms kBf16LayersSynonyms = {{"num_layers_at_start_in_bf16", "start"},
                                                       {"num_layers_at_end_in_bf16", "end"}};

Status ReadBf16Layers(const Document& doc, const YAML::Node& given, Workload& w) {
  SP_RETURN_IF_ERROR(doc.ExpectMap(given, "bf16_layers"));
  SP_RETURN_IF_ERROR(doc.CheckKeys(given, {"start", "end"}, kBf16LayersSynonyms));
  SP_ASSIGN_OR_RETURN(const YAML::Node node, doc.WithOurNames(given, kBf16LayersSynonyms));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> start, doc.Int(node, "start", 0, 1 << 16));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> end, doc.Int(node, "end", 0, 1 << 16));
  w.bf16_layers_start = static_cast<int>(start.value_or(0));
  w.bf16_layers_end = static_cast<int>(end.value_or(0));
  return Status::Ok();
}

// The serving engines' names for a request's longest context and the sequences run at once:
// SGLang's context_length and max_running_requests, TensorRT-LLM's max_seq_len and
// max_batch_size, for vLLM's max_model_len and max_num_seqs.
static const Document::Synonyms kServingSynonyms = {{"context_length", "max_model_len"},
                                                    {"max_seq_len", "max_model_len"},
                                                    {"max_running_requests", "max_num_seqs"},
                                                    {"max_batch_size", "max_num_seqs"},
                                                    // a serving benchmark's words for a request's sizes
                                                    {"input_len", "prompt_len"},
                                                    {"isl", "prompt_len"},
                                                    {"output_len", "gen_len"},
                                                    {"osl", "gen_len"},
                                                    {"max_new_tokens", "gen_len"},
                                                    {"concurrency", "batch"},
                                                    {"batch_size", "batch"}};

Status ReadInference(const Document& doc, const YAML::Node& given, InferenceSpec& inf, std::vector<std::string>& assumed) {
  SP_RETURN_IF_ERROR(doc.ExpectMap(given, "inference"));
  SP_RETURN_IF_ERROR(doc.CheckKeys(given, {"batch", "prompt_len", "gen_len", "weights", "kv_cache",
                                           "gpu_memory_utilization", "mem_fraction_static", "engine",
                                           "max_num_batched_tokens", "free_gpu_memory_fraction",
                                           "kv_cache_free_gpu_mem_fraction", "max_num_tokens", "max_model_len",
                                           "max_num_seqs"},
                                   kServingSynonyms));
  SP_ASSIGN_OR_RETURN(const YAML::Node node, doc.WithOurNames(given, kServingSynonyms));
  SP_ASSIGN_OR_RETURN(std::optional<std::string> engine, doc.String(node, "engine"));
  if (engine) {
    const std::string e = Lower(*engine);
    if (e == "vllm") inf.engine = ServingEngine::kVllm;
    else if (e == "sglang") inf.engine = ServingEngine::kSglang;
    else if (e == "transformers" || e == "hf") inf.engine = ServingEngine::kTransformers;
    else if (e == "tensorrt-llm" || e == "tensorrt_llm" || e == "trtllm" || e == "trt-llm" || e == "trtllm-serve" ||
             e == "trtllm-bench")
      inf.engine = ServingEngine::kTensorrtLlm;
    else
      return doc.ErrorAt(node["engine"], "engine: expected vllm, sglang, tensorrt-llm or transformers (its generate), got \"" +
                                             *engine + "\"");
    if (inf.engine == ServingEngine::kTransformers) {
      for (const char* key : {"gpu_memory_utilization", "mem_fraction_static", "max_num_batched_tokens"})
        if (node[key].IsDefined())
          return doc.ErrorAt(node[key], std::string(key) + ": a serving engine's setting; transformers' generate has none");
    }
  }
  // TensorRT-LLM's KvCacheConfig.free_gpu_memory_fraction (trtllm-bench's
  // --kv_cache_free_gpu_mem_fraction), and its max_num_tokens for the profiling forward.
  for (const char* key : {"free_gpu_memory_fraction", "kv_cache_free_gpu_mem_fraction"}) {
    if (!node[key].IsDefined()) continue;
    if (node["gpu_memory_utilization"].IsDefined() || node["mem_fraction_static"].IsDefined())
      return doc.ErrorAt(node[key], std::string(key) + ": a TensorRT-LLM fraction, given beside another engine's");
    if (engine && inf.engine != ServingEngine::kTensorrtLlm)
      return doc.ErrorAt(node[key], std::string(key) + ": a TensorRT-LLM setting, but engine is " + *engine);
    inf.engine = ServingEngine::kTensorrtLlm;
    SP_ASSIGN_OR_RETURN(std::optional<double> frac, doc.Number(node, key, 0.05, 1.0));
    if (frac) inf.gpu_memory_utilization = *frac;  // a key with no value says nothing
  }
  if (node["mem_fraction_static"].IsDefined()) {  // SGLang's name for its fraction
    if (node["gpu_memory_utilization"].IsDefined())
      return doc.ErrorAt(node["mem_fraction_static"], "mem_fraction_static: give it or gpu_memory_utilization, not both");
    if (engine && inf.engine != ServingEngine::kSglang)
      return doc.ErrorAt(node["mem_fraction_static"], "mem_fraction_static: an SGLang setting, but engine is vllm");
    inf.engine = ServingEngine::kSglang;
    SP_ASSIGN_OR_RETURN(std::optional<double> frac, doc.Number(node, "mem_fraction_static", 0.05, 1.0));
    if (frac) inf.gpu_memory_utilization = *frac;
  }
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> batch, doc.Int(node, "batch", 1, 1 << 20));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> prompt, doc.Int(node, "prompt_len", 1, int64_t{1} << 26));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> gen, doc.Int(node, "gen_len", 0, int64_t{1} << 26));
  SP_ASSIGN_OR_RETURN(std::optional<double> util, doc.Number(node, "gpu_memory_utilization", 0.05, 1.0));
  if (node["max_num_tokens"].IsDefined() && node["max_num_batched_tokens"].IsDefined())
    return doc.ErrorAt(node["max_num_tokens"], "max_num_tokens: TensorRT-LLM's name for max_num_batched_tokens; give one");
  const char* batched_key = node["max_num_tokens"].IsDefined() ? "max_num_tokens" : "max_num_batched_tokens";
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> batched, doc.Int(node, batched_key, 1, int64_t{1} << 26));
  if (batched) inf.max_num_batched_tokens = *batched;
  if (batch) inf.batch = *batch;
  if (prompt) inf.prompt_len = *prompt;
  if (gen) inf.gen_len = *gen;
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> seqs, doc.Int(node, "max_num_seqs", 1, 1 << 20));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> max_len, doc.Int(node, "max_model_len", 2, int64_t{1} << 26));
  if ((seqs || max_len) && inf.engine == ServingEngine::kTransformers)
    return doc.ErrorAt(node[seqs ? "max_num_seqs" : "max_model_len"], "a serving engine's setting; transformers' generate has none");
  if (seqs) {
    inf.max_num_seqs = *seqs;
    if (!batch) {
      inf.batch = *seqs;
      assumed.push_back("batch: " + std::to_string(*seqs) + " concurrent sequences (max_num_seqs, the most the engine "
                        "runs at once; say batch: for fewer)");
    }
  }
  if (max_len) {
    // The longest a request may run: its prompt and what it generates together.
    if (prompt) return doc.ErrorAt(node["max_model_len"], "max_model_len: give it or prompt_len, not both");
    if (gen && *gen >= *max_len)
      return doc.ErrorAt(node["gen_len"], "gen_len: " + std::to_string(*gen) + " tokens leave no prompt within max_model_len " +
                                              std::to_string(*max_len));
    if (!gen) inf.gen_len = std::min<int64_t>(inf.gen_len, *max_len / 2);
    inf.prompt_len = *max_len - inf.gen_len;
    assumed.push_back("max_model_len: " + std::to_string(*max_len) + " tokens a request at its longest, prompt_len " +
                      std::to_string(inf.prompt_len) + " + gen_len " + std::to_string(inf.gen_len) +
                      (gen ? std::string() : std::string(" (say gen_len: for your split)")));
  }
  if (util) inf.gpu_memory_utilization = *util;
  SP_RETURN_IF_ERROR(ReadDtypeKey(doc, node, "weights", &inf.weights));
  return ReadDtypeKey(doc, node, "kv_cache", &inf.kv_cache);
}

// A yes/no recipe key; absent leaves it to the framework (Setting::kAuto).
Status ReadSetting(const Document& doc, const YAML::Node& map, const char* key, Setting* out) {
  SP_ASSIGN_OR_RETURN(std::optional<std::string> s, doc.String(map, key));
  if (!s) return Status::Ok();
  const std::string v = Lower(*s);
  if (v == "true" || v == "yes" || v == "on") *out = Setting::kOn;
  else if (v == "false" || v == "no" || v == "off") *out = Setting::kOff;
  else if (v != "auto") return doc.ErrorAt(map[key], std::string(key) + ": expected true, false or auto, got \"" + *s + "\"");
  return Status::Ok();
}

// GaLore's rank: HF Trainer's optim_args string ("rank=64, update_proj_gap=100, scale=0.1"; only
// the rank changes memory) or galore_rank, 128 when neither says; both need a galore_* optimizer.
Status ReadGalore(const Document& doc, const YAML::Node& root, const std::optional<std::string>& opt, Workload& w) {
  const bool galore = opt && GaloreOptimizer(*opt);
  if (galore) w.galore_rank = kGaloreDefaultRank;
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> rank, doc.Int(root, "galore_rank", 1, 1 << 20));
  SP_ASSIGN_OR_RETURN(std::optional<std::string> args, doc.String(root, "optim_args"));
  bool rank_in_args = false;  // optim_args carries other optimizers' settings too (AdEMAMix's beta3, ...)
  if (args) {
    for (const std::string& part : Split(*args, ',')) {
      const std::string item = Trim(part);
      if (!item.starts_with("rank=")) continue;
      const std::string v = item.substr(5);
      if (v.empty() || v.size() > 7 || !std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); }) ||
          std::stoll(v) < 1)
        return doc.ErrorAt(root["optim_args"], "optim_args: rank= expects a positive integer, got \"" + item + "\"");
      rank = std::stoll(v);
      rank_in_args = true;
    }
  }
  if (rank && !galore)
    return doc.ErrorAt(root[rank_in_args ? "optim_args" : "galore_rank"],
                       "GaLore's rank needs a galore optimizer (galore_adamw, galore_adamw_8bit, galore_adafactor, "
                       "or their _layerwise forms)");
  if (rank) w.galore_rank = *rank;
  return Status::Ok();
}

// The training recipe keys (DESIGN.md: "the workload names the training recipe as users run it").
Status ReadRecipe(const Document& doc, const YAML::Node& root, Workload& w) {
  SP_ASSIGN_OR_RETURN(std::optional<std::string> master, doc.String(root, "master_weights"));
  if (master) {
    const MasterWeights said = w.master_weights;  // what a Lightning precision (bf16-true) said
    const std::string v = Lower(*master);
    if (v == "fp32") w.master_weights = MasterWeights::kFp32;
    else if (v == "none" || v == "false" || v == "no") w.master_weights = MasterWeights::kNone;
    else if (v != "auto")
      return doc.ErrorAt(root["master_weights"], "master_weights: expected fp32 (mixed precision), none (pure " +
                                                     std::string(DtypeName(w.precision)) + ") or auto, got \"" + *master + "\"");
    if (said != MasterWeights::kAuto && w.master_weights != said)
      return doc.ErrorAt(root["master_weights"], "master_weights: the precision says " +
                                                     std::string(MasterWeightsName(said)) + " already");
  }
  SP_ASSIGN_OR_RETURN(std::optional<std::string> loss, doc.String(root, "loss"));
  if (loss) {
    const std::string v = Lower(*loss);
    if (v == "standard") w.loss = LossKind::kStandard;
    else if (v == "chunked") w.loss = LossKind::kChunked;
    else if (v == "fused") w.loss = LossKind::kFused;
    else if (v == "no_upcast") w.loss = LossKind::kNoUpcast;
    else if (v == "compiled") w.loss = LossKind::kCompiled;
    else if (v == "kernel") w.loss = LossKind::kKernel;
    else if (v == "inplace") w.loss = LossKind::kInplace;
    else if (v != "auto")
      return doc.ErrorAt(root["loss"], "loss: expected standard, chunked, fused, no_upcast, compiled, kernel, inplace or auto, "
                                       "got \"" + *loss + "\"");
  }
  SP_ASSIGN_OR_RETURN(std::optional<std::string> recipe, doc.String(root, "fp8_recipe"));
  if (recipe && !ParseFp8Recipe(*recipe, &w.fp8_recipe))
    return doc.ErrorAt(root["fp8_recipe"], "fp8_recipe: expected tensorwise (or delayed, current), rowwise, blockwise, "
                                           "mxfp8 or auto, got \"" + *recipe + "\"");
  // A precision written as sources name the recipe (float8 rowwise, FP8-CS, MXFP8) says the
  // scaling as well, unless fp8_recipe says otherwise.
  SP_ASSIGN_OR_RETURN(std::optional<std::string> precision, doc.String(root, "precision"));
  if (!recipe && precision && w.precision == Dtype::kFp8) w.fp8_recipe = Fp8RecipeInPrecision(*precision);
  SP_RETURN_IF_ERROR(ReadSetting(doc, root, "optimizer_in_backward", &w.optimizer_in_backward));
  SP_RETURN_IF_ERROR(ReadSetting(doc, root, "activation_offload", &w.activation_offload));
  SP_RETURN_IF_ERROR(ReadSetting(doc, root, "fp8_all_gather", &w.fp8_all_gather));
  SP_RETURN_IF_ERROR(ReadSetting(doc, root, "compile", &w.compile));
  SP_RETURN_IF_ERROR(ReadSetting(doc, root, "grad_reduce_in_fp32", &w.grad_reduce_fp32));
  SP_RETURN_IF_ERROR(ReadSetting(doc, root, "overlap_comm", &w.overlap_comm));
  SP_RETURN_IF_ERROR(ReadSetting(doc, root, "flash_attention", &w.flash_attention));
  SP_RETURN_IF_ERROR(ReadSetting(doc, root, "kbit_prepare", &w.kbit_prepare));
  SP_RETURN_IF_ERROR(ReadSetting(doc, root, "double_quant", &w.double_quant));
  SP_ASSIGN_OR_RETURN(std::optional<bool> fake_gate, doc.Bool(root, "fake_balanced_gate"));
  SP_ASSIGN_OR_RETURN(std::optional<bool> forced, doc.Bool(root, "force_load_balancing"));
  if (fake_gate && *fake_gate && forced && *forced)
    return doc.ErrorAt(root["force_load_balancing"], "force_load_balancing: random logits (Megatron) and "
                                                     "fake_balanced_gate (AutoModel) are two routers; give one");
  if (fake_gate && *fake_gate) w.moe_routing = MoeRouting::kDealt;
  if (forced && *forced) w.moe_routing = MoeRouting::kRandom;
  SP_ASSIGN_OR_RETURN(std::optional<std::string> release, doc.String(root, "release"));
  if (release) {
    w.release = ParseRelease(*release);
    if (w.release == 0)
      return doc.ErrorAt(root["release"], "release: expected the framework release's date as YYYY-MM or YYYY-MM-DD "
                                          "(such as 2025-06 or 2025-06-13), got \"" + *release + "\"");
  }
  SP_ASSIGN_OR_RETURN(std::optional<std::string> torch, doc.String(root, "torch"));
  if (torch) {
    w.torch_version = ParseTorchVersion(*torch);
    if (w.torch_version == 0)
      return doc.ErrorAt(root["torch"], "torch: expected PyTorch's version as MAJOR.MINOR (such as \"2.8\" or 2.11.0+cu130), "
                                        "got \"" + *torch + "\"");
  }
  if (YAML::Node sharded = root["custom_sharded_layers"]; sharded.IsDefined()) {
    const std::string expected =
        "custom_sharded_layers: expected a list of tok_embeddings and output (torchtune's names), such as "
        "[tok_embeddings, output] or []";
    if (!sharded.IsSequence()) return doc.ErrorAt(sharded, expected);
    w.custom_sharded_layers = 0;
    for (const auto& name : sharded) {
      const std::string v = name.IsScalar() ? name.Scalar() : "";
      const auto* known = std::find_if(std::begin(kShardedLayerNames), std::end(kShardedLayerNames),
                                       [&](const auto& n) { return v == n.first; });
      if (known == std::end(kShardedLayerNames)) return doc.ErrorAt(name, expected + ", got \"" + v + "\"");
      w.custom_sharded_layers |= known->second;
    }
  }
  SP_ASSIGN_OR_RETURN(std::optional<std::string> paged, doc.String(root, "paged_optimizer"));
  if (paged) {
    Setting p = Setting::kAuto;
    SP_RETURN_IF_ERROR(ReadSetting(doc, root, "paged_optimizer", &p));
    w.paged_optimizer = w.paged_optimizer || p == Setting::kOn;
  }
  return Status::Ok();
}

// Sequence lengths as sources write them: 4096, or 4k / 128K (x 1024).
StatusOr<std::optional<int64_t>> ReadSeqLen(const Document& doc, const YAML::Node& root) {
  constexpr int64_t kMaxSeq = int64_t{1} << 26;
  const YAML::Node s = root["seq_len"];
  const bool k = s.IsDefined() && s.IsScalar() && s.Scalar().size() > 1 && (s.Scalar().back() == 'k' || s.Scalar().back() == 'K');
  if (!k) return doc.Int(root, "seq_len", 1, kMaxSeq);
  const std::optional<int64_t> kilo = ParseKiloTokens(s.Scalar());
  if (!kilo) return doc.ErrorAt(s, "seq_len: expected tokens such as 4096 or 4k, got \"" + s.Scalar() + "\"");
  const int64_t seq = *kilo;
  if (seq < 1 || seq > kMaxSeq) return doc.ErrorAt(s, "seq_len: expected tokens from 1 to 64M, got \"" + s.Scalar() + "\"");
  return std::optional<int64_t>(seq);
}

// The global batch: sequences, or tokens as papers give it ("4M tokens", global_batch_tokens:
// 4194304), which make sequences of seq_len. K, M and B are binary (a "4M-token" batch of
// 4,096-token sequences is 1,024 of them) unless only the decimal reading divides.
StatusOr<std::optional<int64_t>> ReadGlobalBatch(const Document& doc, const YAML::Node& root, int64_t seq_len,
                                                 std::vector<std::string>& assumed) {
  const YAML::Node batch = root["global_batch"], tokens = root["global_batch_tokens"];
  const bool in_tokens = batch.IsDefined() && batch.IsScalar() && Lower(batch.Scalar()).ends_with("tokens");
  if (!in_tokens && !tokens.IsDefined()) return doc.Int(root, "global_batch", 1, int64_t{1} << 30);
  if (in_tokens && tokens.IsDefined())
    return doc.ErrorAt(tokens, "global_batch_tokens: the global batch is given in global_batch already");
  const YAML::Node& node = in_tokens ? batch : tokens;
  const char* key = in_tokens ? "global_batch" : "global_batch_tokens";
  std::string v = node.IsScalar() ? Trim(node.Scalar()) : "";
  if (Lower(v).ends_with("tokens")) v = Trim(v.substr(0, v.size() - 6));
  double scale_binary = 1, scale_decimal = 1;
  if (!v.empty()) {
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(v.back())));
    if (unit == 'K') scale_binary = 1024, scale_decimal = 1e3;
    if (unit == 'M') scale_binary = 1048576, scale_decimal = 1e6;
    if (unit == 'B' || unit == 'G') scale_binary = 1073741824, scale_decimal = 1e9;
    if (scale_binary > 1) v = Trim(v.substr(0, v.size() - 1));
  }
  double number = 0;
  const bool ok = !v.empty() && v.size() < 16 &&
                  std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c) || c == '.'; }) &&
                  std::count(v.begin(), v.end(), '.') <= 1;
  if (ok) number = std::stod(v);
  if (!ok || number <= 0 || number * scale_binary > 1e13)
    return doc.ErrorAt(node, std::string(key) + ": expected a token count such as 4194304, 4M tokens or 16M, got \"" +
                                 (node.IsScalar() ? node.Scalar() : std::string("a block")) + "\"");
  const double binary = number * scale_binary, decimal = number * scale_decimal;
  const auto seq = static_cast<double>(seq_len);
  const bool binary_divides = std::fmod(binary, seq) == 0, decimal_divides = std::fmod(decimal, seq) == 0;
  const double total = binary_divides || !decimal_divides ? binary : decimal;
  const auto sequences = static_cast<int64_t>(std::llround(total / seq));
  if (sequences < 1 || sequences > (int64_t{1} << 30))
    return doc.ErrorAt(node, std::string(key) + ": " + node.Scalar() + " makes " + std::to_string(sequences) +
                                 " sequences of " + std::to_string(seq_len) + " tokens; expected 1 or more");
  assumed.push_back("global_batch: " + std::to_string(sequences) + " sequences (" + node.Scalar() + " over seq_len " +
                    std::to_string(seq_len) + (std::fmod(total, seq) == 0 ? "" : ", rounded") + ")");
  return std::optional<int64_t>(sequences);
}

// The --layout key for a layout setting a workload file gave.
std::string LayoutKeyFor(std::string_view key) {
  if (key == "deepspeed") return "framework=deepspeed,zero=...";
  if (key == "fsdp" || key == "fsdp_config") return "framework=fsdp,zero=3 or sharding_strategy=...";
  if (key == "tensor_parallel_size") return "tp=...";
  if (key == "pipeline_parallel_size") return "pp=...";
  if (key == "zero_stage") return "zero=...";
  return std::string(key) + "=...";
}

// Preference and RL training hold more than one model (a frozen reference, a reward or value
// model) and paired or generated sequences: a different memory picture. `key` is task, or
// LLaMA-Factory's stage (rm, ppo, dpo, kto).
Status RefuseRlTask(const Document& doc, const YAML::Node& root, const char* key) {
  const YAML::Node node = root[key];
  if (!node.IsDefined() || !node.IsScalar()) return Status::Ok();
  // The task as a word, or a word of a phrase ("DPO fine-tuning").
  std::vector<std::string> words = {Lower(node.Scalar())};
  for (const std::string& part : Split(Spelling(node.Scalar()), '-')) words.push_back(part);
  for (const char* rl : {"dpo", "orpo", "kto", "simpo", "ppo", "grpo", "rlhf", "rl", "rm"})
    if (std::find(words.begin(), words.end(), rl) != words.end())
      return doc.ErrorAt(node, std::string(key) + ": \"" + node.Scalar() + "\" is preference or RL training (a reference or "
                               "reward model beside the policy), which shardplan does not model; expected pretrain, "
                               "finetune, lora, qlora or inference");
  return Status::Ok();
}

// A precision switch as trainers write it: HF's and LLaMA-Factory's `bf16: true`, axolotl's
// `bf16: auto`, DeepSpeed's `bf16: {enabled: true}` ("auto" under accelerate). Unset or auto:
// nothing said.
StatusOr<std::optional<bool>> ReadSwitch(const Document& doc, const YAML::Node& root, const char* key) {
  const YAML::Node node = root[key];
  if (!node.IsDefined()) return std::optional<bool>();
  Setting s = Setting::kAuto;
  if (node.IsMap()) {
    SP_RETURN_IF_ERROR(doc.CheckMisspelledKeys(node, {"enabled", "auto_cast", "loss_scale", "initial_scale_power",
                                                      "loss_scale_window", "hysteresis", "min_loss_scale",
                                                      "immediate_grad_sync"}));
    SP_RETURN_IF_ERROR(ReadSetting(doc, node, "enabled", &s));
  } else {
    SP_RETURN_IF_ERROR(ReadSetting(doc, root, key, &s));
  }
  if (s == Setting::kAuto) return std::optional<bool>();
  return std::optional<bool>(s == Setting::kOn);
}

// LLaMA-Factory's lora_target ("all", or "q_proj,v_proj"), axolotl's and peft scripts'
// lora_target_modules (a list, or "all-linear").
Status ReadLoraTarget(const Document& doc, const YAML::Node& node, LoraSpec& lora) {
  const std::string expected = "lora_target: expected module names such as q_proj,v_proj or [q_proj, v_proj], or all";
  std::vector<std::string> names;
  if (node.IsScalar()) {
    for (const std::string& part : Split(node.Scalar(), ',')) names.push_back(Trim(part));
  } else if (node.IsSequence()) {
    for (const auto& t : node) {
      if (!t.IsScalar()) return doc.ErrorAt(t, expected);
      names.push_back(Trim(t.Scalar()));
    }
  }
  if (names.empty() || std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.empty(); }))
    return doc.ErrorAt(node, expected);
  for (std::string& n : names)
    if (Lower(n) == "all" || Lower(n) == "all-linear" || Lower(n) == "all_linear") n = "all-linear";
  lora.targets = names;
  return Status::Ok();
}

// The precision, also as Lightning names it (LitGPT, Fabric, the Trainer): bf16-true and
// 16-true train everything in that dtype, bf16-mixed and 16-mixed keep fp32 weights under
// autocast (Fabric's MixedPrecision), 32-true is fp32.
Status ReadPrecision(const Document& doc, const YAML::Node& root, Workload& w) {
  const YAML::Node p = root["precision"];
  std::string v = p.IsDefined() && p.IsScalar() ? Lower(Trim(p.Scalar())) : "";
  // In prose's order too: "mixed bf16", "pure bf16", "bf16 mixed".
  for (const char* mode_word : {"mixed", "pure", "true"})
    for (const char* sep : {" ", "-", "_"})
      if (const std::string lead = std::string(mode_word) + sep; v.starts_with(lead))
        v = Trim(v.substr(lead.size())) + "-" + (std::string(mode_word) == "mixed" ? "mixed" : "true");
  std::replace(v.begin(), v.end(), ' ', '-');
  if (v.starts_with("fp16-") || v.starts_with("float16-")) v = "16" + v.substr(v.find('-'));
  if (v.starts_with("bfloat16-")) v = "bf16" + v.substr(v.find('-'));
  if (v.ends_with("-pure")) v = v.substr(0, v.size() - 5) + "-true";
  const size_t dash = v.rfind('-');
  const std::string mode = dash == std::string::npos ? "" : v.substr(dash + 1);
  if (v.starts_with("transformer-engine"))
    return doc.ErrorAt(p, "precision: Lightning's transformer-engine plugin is not modelled; expected bf16-true, "
                          "bf16-mixed, 16-true, 16-mixed or 32-true, got \"" + p.Scalar() + "\"");
  const std::string base = dash == std::string::npos ? "" : v.substr(0, dash);
  const bool lightning = (mode == "true" && (base == "bf16" || base == "16" || base == "32")) ||
                         (mode == "mixed" && (base == "bf16" || base == "16"));
  if (!lightning) return ReadDtypeKey(doc, root, "precision", &w.precision);
  w.precision = base == "bf16" ? Dtype::kBf16 : base == "16" ? Dtype::kFp16 : Dtype::kFp32;
  if (w.precision != Dtype::kFp32) w.master_weights = mode == "true" ? MasterWeights::kNone : MasterWeights::kFp32;
  return Status::Ok();
}

// LitGPT's config files (config_hub/finetune/*/lora.yaml, what `litgpt finetune --config`
// reads) hold the batch and the sequence in a train: block beside the schedule and saving.
// Returns the file with micro_batch_size, global_batch_size and max_seq_length lifted to the
// top level and the block gone; its other keys are named in `read_past`.
StatusOr<YAML::Node> LiftTrainBlock(const Document& doc, const YAML::Node& file, std::vector<std::string>& read_past) {
  const YAML::Node train = file.IsMap() ? file["train"] : YAML::Node();
  if (!train.IsDefined() || train.IsNull()) return file;
  if (!train.IsMap())
    return doc.ErrorAt(train, "train: expected LitGPT's block of training arguments (micro_batch_size, "
                              "global_batch_size, max_seq_length, ...)");
  static const char* const kLifted[] = {"micro_batch_size", "global_batch_size", "max_seq_length"};
  // litgpt/args.py TrainArgs: the schedule, logging and saving.
  static const std::vector<std::string> kSchedule = {"save_interval", "log_interval", "lr_warmup_steps",
                                                     "lr_warmup_fraction", "epochs", "max_tokens", "max_steps",
                                                     "tie_embeddings", "max_norm", "min_lr"};
  std::vector<std::string> known = kSchedule;
  known.insert(known.end(), std::begin(kLifted), std::end(kLifted));
  SP_RETURN_IF_ERROR(doc.CheckKeys(train, known));
  SP_ASSIGN_OR_RETURN(std::optional<bool> tie, doc.Bool(train, "tie_embeddings"));
  if (tie && *tie)
    return doc.ErrorAt(train["tie_embeddings"], "tie_embeddings: true ties the head to the embeddings whatever the "
                                                "model's config.json says; give tie_word_embeddings in config.json instead");
  YAML::Node out(YAML::NodeType::Map);
  for (auto it = file.begin(); it != file.end(); ++it)
    if (it->first.Scalar() != "train") out.force_insert(it->first, it->second);
  for (auto it = train.begin(); it != train.end(); ++it) {  // the key's own node, for errors that name it
    const std::string key = it->first.Scalar();
    if (std::find(kSchedule.begin(), kSchedule.end(), key) != kSchedule.end()) {
      read_past.push_back("train." + key);
      continue;
    }
    if (it->second.IsNull()) continue;  // a lifted key with no value says nothing
    if (file[key].IsDefined())
      return doc.ErrorAt(it->second, key + ": given in train: and at the top level; give it once");
    out.force_insert(it->first, it->second);
  }
  return out;
}

// The flat keys that give a trainer file's adapters: peft's, LLaMA-Factory's and axolotl's
// (lora_r reads as lora_rank), and LitGPT's switches per projection.
constexpr const char* kFlatLoraKeys[] = {"lora_rank",  "lora_alpha", "lora_dropout",    "lora_target", "lora_target_linear",
                                         "lora_query", "lora_key",   "lora_value",      "lora_projection", "lora_mlp",
                                         "lora_head"};

// What a pasted trainer file says that the workload's own keys would (planner/workload.h):
// the precision as bf16/fp16 switches; the task as LLaMA-Factory's stage and finetuning_type,
// axolotl's adapter, TRL's use_peft and a 4-bit base (quantization_bit: 4, load_in_4bit);
// the adapters as flat lora_* keys; Liger's fused loss; the attention kernel; and the batch and
// checkpointing it runs (Workload::micro_batch, ...). `task_given`: the file has task:, which
// the others must agree with.
Status ReadTrainerArguments(const Document& doc, const YAML::Node& root, bool task_given, bool litgpt_file, Workload& w) {
  SP_ASSIGN_OR_RETURN(std::optional<bool> bf16, ReadSwitch(doc, root, "bf16"));
  SP_ASSIGN_OR_RETURN(std::optional<bool> fp16, ReadSwitch(doc, root, "fp16"));
  if (bf16 && fp16 && *bf16 && *fp16) return doc.ErrorAt(root["fp16"], "fp16: bf16 is on as well; a run trains in one");
  if ((bf16 || fp16) && root["precision"].IsDefined()) {
    const Dtype said = (bf16 && *bf16) ? Dtype::kBf16 : (fp16 && *fp16) ? Dtype::kFp16 : w.precision;
    if (said != w.precision)
      return doc.ErrorAt(root[bf16 && *bf16 ? "bf16" : "fp16"], std::string(bf16 && *bf16 ? "bf16" : "fp16") +
                                                                     ": the precision is given as " +
                                                                     std::string(DtypeName(w.precision)) + " already");
  }
  if (bf16 && *bf16) w.precision = Dtype::kBf16;
  else if (fp16 && *fp16) w.precision = Dtype::kFp16;
  else if (bf16 && fp16 && !root["precision"].IsDefined()) w.precision = Dtype::kFp32;  // both off: HF trains in fp32

  // The task, from the words trainers use for it.
  SP_RETURN_IF_ERROR(RefuseRlTask(doc, root, "stage"));
  SP_ASSIGN_OR_RETURN(std::optional<std::string> stage, doc.String(root, "stage"));
  if (stage && Lower(*stage) != "pt" && Lower(*stage) != "sft")
    return doc.ErrorAt(root["stage"], "stage: expected pt or sft (LLaMA-Factory's pre-training and supervised "
                                      "fine-tuning), got \"" + *stage + "\"");
  SP_ASSIGN_OR_RETURN(std::optional<std::string> type, doc.String(root, "finetuning_type"));
  if (type && Lower(*type) != "full" && Lower(*type) != "lora")
    return doc.ErrorAt(root["finetuning_type"], "finetuning_type: expected full or lora; \"" + *type + "\" trains part of "
                                                "the model in a way shardplan does not model");
  SP_ASSIGN_OR_RETURN(std::optional<std::string> adapter, doc.String(root, "adapter"));
  if (adapter && Lower(*adapter) != "lora" && Lower(*adapter) != "qlora")
    return doc.ErrorAt(root["adapter"], "adapter: expected lora or qlora, got \"" + *adapter + "\"");
  SP_ASSIGN_OR_RETURN(std::optional<bool> use_peft, doc.Bool(root, "use_peft"));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> bits, doc.Int(root, "quantization_bit", 2, 16));
  if (bits && *bits != 4)
    return doc.ErrorAt(root["quantization_bit"], "quantization_bit: " + std::to_string(*bits) + "-bit base weights are "
                                                 "not modelled; expected 4 (bitsandbytes NF4, QLoRA)");
  SP_ASSIGN_OR_RETURN(std::optional<std::string> method, doc.String(root, "quantization_method"));
  if (method && Lower(*method) != "bitsandbytes" && Lower(*method) != "bnb")
    return doc.ErrorAt(root["quantization_method"], "quantization_method: expected bitsandbytes (NF4); \"" + *method +
                                                    "\" is not modelled");
  // LitGPT's quantize: Fabric's BitsandbytesPrecision on every Linear of the base.
  SP_ASSIGN_OR_RETURN(std::optional<std::string> quantize, doc.String(root, "quantize"));
  if (quantize) {
    const std::string q = Lower(*quantize);
    if (q.starts_with("bnb.int8"))
      return doc.ErrorAt(root["quantize"], "quantize: an 8-bit base (LLM.int8) is not modelled; expected bnb.nf4, "
                                           "bnb.nf4-dq, bnb.fp4 or bnb.fp4-dq");
    if (q != "bnb.nf4" && q != "bnb.nf4-dq" && q != "bnb.fp4" && q != "bnb.fp4-dq")
      return doc.ErrorAt(root["quantize"], "quantize: expected bnb.nf4, bnb.nf4-dq, bnb.fp4 or bnb.fp4-dq (LitGPT's "
                                           "4-bit bases), got \"" + *quantize + "\"");
    if (w.master_weights == MasterWeights::kFp32)  // litgpt/finetune/lora.py setup
      return doc.ErrorAt(root["quantize"], "quantize: LitGPT refuses a quantized base under mixed precision (\"Quantization "
                                           "and mixed precision is not supported\"); expected precision: bf16-true");
    // Fabric's _NF4Linear and _FP4Linear keep fp32 block scales (compress_statistics=False);
    // the -dq forms quantize them.
    const Setting dq = q.ends_with("-dq") ? Setting::kOn : Setting::kOff;
    if (w.double_quant != Setting::kAuto && w.double_quant != dq)
      return doc.ErrorAt(root["quantize"], "quantize: " + *quantize + " says double quantization " +
                                           (dq == Setting::kOn ? "on" : "off") + ", but double_quant says otherwise");
    w.double_quant = dq;
  }
  // A training file's quantization: the base's, as write-ups name QLoRA's ("4bit", "nf4",
  // "bitsandbytes"); a serving config's is its weights' (ReadServingConfig).
  bool quantized_base = false;
  if (w.training() && root["quantization"].IsDefined()) {
    SP_ASSIGN_OR_RETURN(std::optional<std::string> q, doc.String(root, "quantization"));
    const std::string v = q ? Spelling(*q) : "";
    if (v == "8bit" || v == "8-bit" || v == "int8" || v == "llm.int8" || v == "bnb-8bit")
      return doc.ErrorAt(root["quantization"], "quantization: an 8-bit base (LLM.int8) is not modelled; expected 4bit "
                                               "(bitsandbytes NF4, QLoRA)");
    if (v != "4bit" && v != "4-bit" && v != "nf4" && v != "bnb" && v != "bitsandbytes" && v != "bnb-4bit" &&
        v != "bnb-nf4" && v != "qlora")
      return doc.ErrorAt(root["quantization"], "quantization: expected 4bit, nf4 or bitsandbytes for a fine-tune's base "
                                               "(QLoRA), got \"" + (q ? *q : std::string("a block")) + "\"");
    quantized_base = true;
  }
  SP_ASSIGN_OR_RETURN(std::optional<bool> in4, doc.Bool(root, "load_in_4bit"));
  SP_ASSIGN_OR_RETURN(std::optional<bool> in8, doc.Bool(root, "load_in_8bit"));
  if (in8 && *in8)
    return doc.ErrorAt(root["load_in_8bit"], "load_in_8bit: an 8-bit base (LLM.int8) is not modelled; expected "
                                             "load_in_4bit (QLoRA) or neither");
  const bool four_bit = (bits && *bits == 4) || (in4 && *in4) || (adapter && Lower(*adapter) == "qlora") || quantize ||
                        quantized_base;
  const char* four_bit_key = bits && *bits == 4 ? "quantization_bit"
                             : in4 && *in4      ? "load_in_4bit"
                             : quantize         ? "quantize"
                             : quantized_base   ? "quantization"
                                                : "adapter";
  const char* flat_key = nullptr;  // the first flat LoRA key the file gives
  for (const char* key : kFlatLoraKeys)
    if (!flat_key && root[key].IsDefined()) flat_key = key;
  const bool flat_lora = flat_key != nullptr;
  const bool adapters = (type && Lower(*type) == "lora") || adapter || (use_peft && *use_peft) || flat_lora;
  const bool full = type && Lower(*type) == "full";
  const char* said_by = type ? "finetuning_type" : adapter ? "adapter" : use_peft ? "use_peft"
                        : bits ? "quantization_bit" : in4 ? "load_in_4bit" : quantize ? "quantize"
                        : quantized_base ? "quantization" : flat_key;
  if (full && four_bit)
    return doc.ErrorAt(root[four_bit_key], "a 4-bit base trains adapters only; expected finetuning_type: lora");
  if (task_given && said_by) {
    if (four_bit && w.task == Task::kLora) w.task = Task::kQlora;  // LoRA on a 4-bit base is QLoRA
    const bool agrees = four_bit   ? w.task == Task::kQlora
                        : adapters ? w.lora_like()
                        : full     ? w.task == Task::kFinetune || w.task == Task::kPretrain
                                   : true;
    if (!agrees)
      return doc.ErrorAt(root[said_by], std::string(said_by) + ": says " +
                                            (four_bit ? "qlora" : adapters ? "lora" : "a full fine-tune") +
                                            ", but task is " + std::string(TaskName(w.task)));
  } else if (!task_given) {
    if (four_bit && !adapters && !full)
      return doc.ErrorAt(root[four_bit_key],
                         "a 4-bit base trains adapters only; say finetuning_type: lora or task: qlora");
    if (adapters || four_bit) w.task = four_bit ? Task::kQlora : Task::kLora;
    else if (full || stage) w.task = stage && Lower(*stage) == "pt" ? Task::kPretrain : Task::kFinetune;
    // A LitGPT config (its train: block) without adapters is `litgpt finetune_full`'s, or
    // `litgpt pretrain`'s when it names model_name.
    else if (litgpt_file) w.task = root["model_name"].IsDefined() ? Task::kPretrain : Task::kFinetune;
  }

  // The adapters, as flat keys.
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> rank, doc.Int(root, "lora_rank", 1, 65536));
  if (rank) w.lora.rank = *rank;
  SP_ASSIGN_OR_RETURN(std::optional<double> dropout, doc.Number(root, "lora_dropout", 0, 0.999));
  if (dropout) w.lora.dropout = *dropout;
  SP_ASSIGN_OR_RETURN(std::optional<double> alpha, doc.Number(root, "lora_alpha", 0, 1e9));
  (void)alpha;  // a scale on the update: no memory, no time
  SP_ASSIGN_OR_RETURN(std::optional<bool> linear, doc.Bool(root, "lora_target_linear"));
  if (linear && *linear && root["lora_target"].IsDefined())
    return doc.ErrorAt(root["lora_target_linear"], "lora_target_linear: the targets are named in lora_target already");
  if (linear && *linear) w.lora.targets = {"all-linear"};
  if (root["lora_target"].IsDefined()) SP_RETURN_IF_ERROR(ReadLoraTarget(doc, root["lora_target"], w.lora));
  // LitGPT's switches for the projections that carry adapters (litgpt/lora.py Config:
  // lora_query and lora_value on unless told, the others off). lora_mlp is each Linear of the
  // MLP; lora_head the output head.
  static const std::pair<const char*, const char*> kLitgptParts[] = {
      {"lora_query", "q_proj"}, {"lora_key", "k_proj"}, {"lora_value", "v_proj"},
      {"lora_projection", "o_proj"}, {"lora_mlp", "mlp"}, {"lora_head", "lm_head"}};
  const auto* first_part = std::find_if(std::begin(kLitgptParts), std::end(kLitgptParts),
                                        [&](const auto& p) { return root[p.first].IsDefined(); });
  const bool litgpt_defaults = litgpt_file && flat_lora && !root["lora_target"].IsDefined() && !(linear && *linear);
  if (first_part != std::end(kLitgptParts) || litgpt_defaults) {
    if (root["lora_target"].IsDefined() || (linear && *linear))
      return doc.ErrorAt(root[first_part->first], std::string(first_part->first) + ": the targets are named in " +
                                                      (root["lora_target"].IsDefined() ? "lora_target" : "lora_target_linear") +
                                                      " already; give them one way");
    std::vector<std::string> targets;
    for (const auto& [key, target] : kLitgptParts) {
      SP_ASSIGN_OR_RETURN(std::optional<bool> on, doc.Bool(root, key));
      if (on.value_or(std::string_view(key) == "lora_query" || std::string_view(key) == "lora_value"))
        targets.emplace_back(target);
    }
    if (targets.empty())  // a switch was given, or LitGPT's defaults would have held
      return doc.ErrorAt(root[first_part->first], "every lora_* switch is off: no projection carries an adapter");
    w.lora.targets = targets;
  }

  // Liger's kernels: its fused linear cross-entropy never holds the logits whole.
  SP_ASSIGN_OR_RETURN(std::optional<bool> liger, doc.Bool(root, "use_liger_kernel"));
  if (liger && *liger && w.loss == LossKind::kAuto) {
    w.loss = LossKind::kFused;
    w.assumed.push_back("use_liger_kernel: Liger's fused linear cross-entropy (loss: fused); its RMSNorm, SwiGLU and "
                        "RoPE kernels are priced as the framework's own");
  }
  // The attention kernel: HF's attn_implementation, LLaMA-Factory's flash_attn.
  SP_ASSIGN_OR_RETURN(std::optional<std::string> attn, doc.String(root, "attn_implementation"));
  if (attn) {
    if (root["flash_attention"].IsDefined())
      return doc.ErrorAt(root["attn_implementation"], "attn_implementation: flash_attention says the kernel already");
    const std::string a = Lower(*attn);
    if (a == "eager" || a == "disabled") w.flash_attention = Setting::kOff;
    else if (a == "sdpa" || a == "fa2" || a == "fa3" || a == "flash_attention_2" || a == "flash_attention_3" ||
             a == "flex_attention" || a == "flash" || a == "flash_attn")
      w.flash_attention = Setting::kOn;
    else if (a != "auto")
      return doc.ErrorAt(root["attn_implementation"], "attn_implementation: expected eager, sdpa, flash_attention_2, "
                                                      "flash_attention_3, fa2 or auto, got \"" + *attn + "\"");
  }
  SP_ASSIGN_OR_RETURN(std::optional<bool> packing, doc.Bool(root, "packing"));
  if (packing && !*packing)
    w.assumed.push_back("packing: false; every sequence sized at seq_len " + std::to_string(w.seq_len) +
                        ", the longest a batch holds (shorter ones need less)");

  // The batch and checkpointing the trainer runs, for the layout.
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> tp, doc.Int(root, "tensor_parallel_size", 1, 1 << 16));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> pp, doc.Int(root, "pipeline_parallel_size", 1, 1 << 16));
  if (tp) w.tensor_parallel = *tp;
  if (pp) w.pipeline_parallel = *pp;
  // LitGPT's devices (a count, or "auto" / -1 for every GPU) and num_nodes.
  const YAML::Node devices = root["devices"];
  const bool every_gpu = devices.IsDefined() && devices.IsScalar() &&
                         (Lower(devices.Scalar()) == "auto" || devices.Scalar() == "-1");
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> nodes, doc.Int(root, "num_nodes", 1, 1 << 16));
  if (!every_gpu) {
    SP_ASSIGN_OR_RETURN(std::optional<int64_t> count, doc.Int(root, "devices", 1, 1 << 16));
    if (count || nodes) w.devices = count.value_or(1) * nodes.value_or(1);
  }
  if (quantize && (w.devices > 1 || every_gpu))
    return doc.ErrorAt(root["quantize"], "quantize: LitGPT trains a quantized base on one GPU only (\"Quantization is "
                                         "currently not supported for multi-GPU training\"); expected devices: 1");
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> micro, doc.Int(root, "micro_batch", 1, 1 << 20));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> accum, doc.Int(root, "grad_accum", 1, 1 << 20));
  if (micro) w.micro_batch = *micro;
  if (accum) w.grad_accum = *accum;
  const YAML::Node ckpt = root["gradient_checkpointing"];
  if (ckpt.IsDefined() && ckpt.IsScalar() && Lower(ckpt.Scalar()) == "unsloth") {
    w.checkpointing = Setting::kOn;  // Unsloth's offloaded checkpointing: its stack's own (layout.cc)
  } else {
    SP_ASSIGN_OR_RETURN(std::optional<bool> on, doc.Bool(root, "gradient_checkpointing"));
    if (on) w.checkpointing = *on ? Setting::kOn : Setting::kOff;
  }
  // LLaMA-Factory (whose keys stage and finetuning_type are) checkpoints every layer unless
  // told disable_gradient_checkpointing (model/model_utils/checkpointing.py).
  SP_ASSIGN_OR_RETURN(std::optional<bool> disable, doc.Bool(root, "disable_gradient_checkpointing"));
  if (disable && w.checkpointing != Setting::kAuto && (*disable == (w.checkpointing == Setting::kOn)))
    return doc.ErrorAt(root["disable_gradient_checkpointing"], "disable_gradient_checkpointing: gradient_checkpointing "
                                                               "says the opposite");
  if (disable) w.checkpointing = *disable ? Setting::kOff : Setting::kOn;
  if (w.checkpointing == Setting::kAuto && (stage || type)) {
    w.checkpointing = Setting::kOn;
    w.assumed.push_back("gradient_checkpointing: on (LLaMA-Factory, whose stage and finetuning_type these are, "
                        "checkpoints every layer unless told disable_gradient_checkpointing: true)");
  }
  return Status::Ok();
}

// A serving engine's own config as the workload (`vllm serve --config`, SGLang's server
// arguments): its top-level max_model_len, gpu_memory_utilization, max_num_seqs,
// max_num_batched_tokens, kv_cache_dtype and quantization (vLLM) or mem_fraction_static,
// context_length and max_running_requests (SGLang) are the inference block's, and make the
// task inference. `auto` leaves a setting to the engine; a quantization the checkpoint's own
// config states (compressed-tensors, modelopt) is read from there.
Status ReadServingConfig(const Document& doc, const YAML::Node& root, bool task_given, Workload& w) {
  static const char* const kEngineKeys[] = {"max_model_len",          "gpu_memory_utilization", "max_num_seqs",
                                            "max_num_batched_tokens", "kv_cache_dtype",         "mem_fraction_static",
                                            "context_length",         "max_running_requests",   "quantization"};
  // A request's sizes at the top level, as a serving benchmark states them: the input and
  // output lengths (ISL, OSL) and the requests run at once.
  static const char* const kSizeKeys[] = {"prompt_len", "gen_len", "concurrency", "batch_size"};
  // batch_size alone says neither a step's sequences over every GPU nor one GPU's micro-batch.
  if (root["batch_size"].IsDefined() && !(task_given && w.task == Task::kInference))
    return doc.ErrorAt(root["batch_size"], "batch_size: say global_batch (the sequences of a step, over every GPU) or "
                                           "micro_batch (one GPU's); for serving, task: inference with batch_size is the "
                                           "requests run at once");
  // A trainer's file names its 4-bit base as quantization too (ReadTrainerArguments).
  bool training_file = task_given && w.training();
  for (const char* key : kFlatLoraKeys) training_file |= root[key].IsDefined();
  const char* first = nullptr;
  bool engine_key = false;
  for (const char* key : kEngineKeys)
    if (root[key].IsDefined() && !(training_file && std::string_view(key) == "quantization")) {
      if (!first) first = key;
      engine_key = true;
    }
  for (const char* key : kSizeKeys)
    if (root[key].IsDefined() && !first) first = key;
  if (!first) return Status::Ok();
  if (root["inference"].IsDefined())
    return doc.ErrorAt(root[first], std::string(first) + ": give the serving settings in inference: or at the top "
                                                         "level, not both");
  if (task_given && w.task != Task::kInference)
    return doc.ErrorAt(root[first], std::string(first) + ": a serving engine's setting, but task is " +
                                        std::string(TaskName(w.task)));
  w.task = Task::kInference;
  YAML::Node node(YAML::NodeType::Map);
  const bool sglang = root["mem_fraction_static"].IsDefined() || root["context_length"].IsDefined() ||
                      root["max_running_requests"].IsDefined();
  if (engine_key) node["engine"] = sglang ? "sglang" : "vllm";
  for (const char* key : {"max_model_len", "gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens",
                          "mem_fraction_static", "context_length", "max_running_requests", "prompt_len", "gen_len"})
    if (root[key].IsDefined()) node[key] = root[key];
  if (root["concurrency"].IsDefined() && root["batch_size"].IsDefined())
    return doc.ErrorAt(root["batch_size"], "batch_size: the requests run at once are given as concurrency already");
  if (root["concurrency"].IsDefined()) node["batch"] = root["concurrency"];
  if (root["batch_size"].IsDefined()) node["batch"] = root["batch_size"];
  if (const YAML::Node kv = root["kv_cache_dtype"]; kv.IsDefined()) {
    const std::string v = kv.IsScalar() ? Lower(kv.Scalar()) : "";
    if (v.starts_with("fp8")) node["kv_cache"] = "fp8";  // fp8, fp8_e4m3, fp8_e5m2
    else if (v == "bfloat16" || v == "float16" || v == "half") node["kv_cache"] = kv;
    else if (v != "auto")
      return doc.ErrorAt(kv, "kv_cache_dtype: expected auto, fp8, fp8_e4m3 or fp8_e5m2, got \"" +
                                 (kv.IsScalar() ? kv.Scalar() : std::string("a block")) + "\"");
  }
  if (const YAML::Node q = root["quantization"]; q.IsDefined() && !training_file) {
    const std::string v = q.IsScalar() ? Lower(q.Scalar()) : "";
    if (v == "fp8" || v == "fbgemm_fp8") node["weights"] = "fp8";
    else if (v == "awq" || v == "gptq" || v == "awq_marlin" || v == "gptq_marlin" || v == "marlin") node["weights"] = "int4";
    else if (v == "bitsandbytes") node["weights"] = "nf4";
    else if (v != "compressed-tensors" && v != "modelopt" && v != "modelopt_fp4" && v != "mxfp4")
      return doc.ErrorAt(q, "quantization: expected fp8, awq, gptq, bitsandbytes, or the checkpoint's own "
                            "(compressed-tensors, modelopt, mxfp4), got \"" + (q.IsScalar() ? q.Scalar() : std::string("a block")) + "\"");
  }
  return ReadInference(doc, node, w.inference, w.assumed);
}

}  // namespace

StatusOr<Workload> ParseWorkload(const Document& doc) { return ParseWorkloadNode(doc, doc.root()); }

// The optimizer by name (adamw, paged_adamw_8bit, torch.optim.AdamW), or as a config block
// names it: torchtune's {_component_: torch.optim.AdamW, fused: true, lr: ...} or DeepSpeed's
// {type: AdamW, params: {...}}. Of the block's settings, fused and foreach say how the step
// runs and override what the name implies; momentum > 0 gives SGD a momentum buffer; the
// rest (learning rate, betas, ...) do not change memory. Returns the name as written.
StatusOr<std::optional<std::string>> ReadOptimizer(const Document& doc, const YAML::Node& root, Workload& w) {
  const YAML::Node given = root["optimizer"];
  const bool block = given.IsDefined() && given.IsMap();
  const YAML::Node& holder = block ? given : root;
  const char* key = !block                               ? "optimizer"
                    : given["_component_"].IsDefined()   ? "_component_"
                    : given["class_path"].IsDefined()    ? "class_path"
                                                         : "type";
  SP_ASSIGN_OR_RETURN(std::optional<std::string> name, doc.String(holder, key));
  if (block && !name)
    return doc.ErrorAt(given, "optimizer: a block needs the optimizer's class, as _component_ (torchtune: "
                              "torch.optim.AdamW), class_path (LitGPT) or type (DeepSpeed: AdamW)");
  if (!name) return name;
  std::string resolved = *name;
  std::optional<bool> fused, foreach;
  if (block) {
    SP_RETURN_IF_ERROR(doc.CheckMisspelledKeys(given, {"type", "class_path", "init_args", "fused", "foreach", "momentum",
                                                       "amsgrad", "params", "lr", "betas", "eps", "weight_decay"}));
    // LitGPT names the class as class_path and its arguments in init_args (jsonargparse's form).
    const YAML::Node init = given["init_args"];
    if (init.IsDefined() && !init.IsNull() && !init.IsMap())
      return doc.ErrorAt(init, "init_args: expected the optimizer's arguments as a block (lr, weight_decay, betas, ...)");
    const bool init_block = init.IsDefined() && init.IsMap();
    const YAML::Node& args = init_block ? init : given;
    if (init_block)
      SP_RETURN_IF_ERROR(doc.CheckMisspelledKeys(init, {"fused", "foreach", "momentum", "amsgrad", "lr", "betas", "eps",
                                                        "weight_decay", "capturable", "maximize", "differentiable"}));
    SP_ASSIGN_OR_RETURN(std::optional<bool> amsgrad, doc.Bool(args, "amsgrad"));
    if (amsgrad && *amsgrad)
      return doc.ErrorAt(args["amsgrad"], "optimizer: amsgrad keeps a third state (max_exp_avg_sq), which shardplan "
                                          "does not model; expected amsgrad: false");
    SP_ASSIGN_OR_RETURN(std::optional<double> momentum, doc.Number(args, "momentum", 0, 1));
    SP_ASSIGN_OR_RETURN(fused, doc.Bool(args, "fused"));
    SP_ASSIGN_OR_RETURN(foreach, doc.Bool(args, "foreach"));
    Optimizer o;
    if (momentum && *momentum > 0 && ParseOptimizer(*name, &o) && o == Optimizer::kSgd) resolved = "sgd-momentum";
  }
  if (!ParseOptimizer(resolved, &w.optimizer, &w.paged_optimizer, &w.optimizer_step))
    return doc.ErrorAt(block ? given[key] : given,
                       "optimizer: expected adamw, adam, adamw-8bit, adamw-4bit, paged-adamw-8bit, paged-adamw, sgd, "
                       "sgd-momentum, adafactor, lion, lion-8bit, rmsprop, adagrad, ademamix, ademamix-8bit, muon, lamb, "
                       "lomo, adalomo or galore_adamw[_8bit] (HF Trainer's optim names and class paths such as "
                       "torch.optim.AdamW work too), got \"" + *name + "\"");
  // torch.optim: fused=True runs one kernel per tensor group; foreach=False loops over the
  // tensors one at a time; foreach=True stacks the whole group (torch/optim/adamw.py).
  if (fused && *fused) w.optimizer_step = OptimizerStep::kPerTensor;
  else if (foreach) w.optimizer_step = *foreach ? OptimizerStep::kForeach : OptimizerStep::kPerTensor;
  return name;
}

StatusOr<Workload> ParseWorkloadUnguarded(const Document& doc, const YAML::Node& root);

StatusOr<Workload> ParseWorkloadNode(const Document& doc, const YAML::Node& root) {
  return Guarded(doc, [&] { return ParseWorkloadUnguarded(doc, root); });
}

// Other names sources and frameworks give the same settings (Megatron's seq_length and
// global_batch_size, HF's max_seq_length, LLaMA-Factory's cutoff_len, a config's dtype).
static const Document::Synonyms kWorkloadSynonyms = {
    {"seq_length", "seq_len"},           {"sequence_length", "seq_len"}, {"max_seq_length", "seq_len"},
    {"max_seq_len", "seq_len"},          {"cutoff_len", "seq_len"},      {"global_batch_size", "global_batch"},
    {"gbs", "global_batch"},             {"dtype", "precision"},         {"mixed_precision", "precision"},
    // torchtitan's own key ([float8] / [quantize.linear.float8] enable_fsdp_float8_all_gather).
    {"enable_fsdp_float8_all_gather", "fp8_all_gather"},
    // Alpaca's, FastChat's and Qwen's train.py (--model_max_length), HF run_clm.py (--block_size).
    {"model_max_length", "seq_len"},     {"block_size", "seq_len"},
    // Megatron's TransformerConfig field (--moe-router-force-load-balancing).
    {"moe_router_force_load_balancing", "force_load_balancing"},
    // A trainer's own file pasted as it is: HF TrainingArguments (optim, torch_compile,
    // per_device_train_batch_size, gradient_accumulation_steps), TRL's SFTConfig (max_length),
    // axolotl (sequence_len, micro_batch_size, lora_r, lora_target_modules), LLaMA-Factory
    // (lora_rank, lora_target, enable_liger_kernel, flash_attn), DeepSpeed's JSON
    // (train_batch_size, the global one; train_micro_batch_size_per_gpu) and torchtune
    // (enable_activation_checkpointing).
    {"optim", "optimizer"},              {"torch_compile", "compile"},   {"max_length", "seq_len"},
    {"sequence_len", "seq_len"},         {"torch_dtype", "precision"},   {"train_batch_size", "global_batch"},
    {"per_device_train_batch_size", "micro_batch"},     {"micro_batch_size", "micro_batch"},
    {"mbs", "micro_batch"},              {"train_micro_batch_size_per_gpu", "micro_batch"},
    {"gradient_accumulation_steps", "grad_accum"},      {"enable_activation_checkpointing", "gradient_checkpointing"},
    {"activation_checkpointing", "gradient_checkpointing"},                 {"lora_r", "lora_rank"},
    {"lora_target_modules", "lora_target"},             {"enable_liger_kernel", "use_liger_kernel"},
    {"flash_attn", "attn_implementation"},              {"sample_packing", "packing"},
    {"bnb_4bit_use_double_quant", "double_quant"},      {"double_quantization", "double_quant"},
    // A serving benchmark's request sizes (ReadServingConfig) and a global batch in tokens.
    {"input_len", "prompt_len"},         {"isl", "prompt_len"},          {"input_length", "prompt_len"},
    {"input_tokens", "prompt_len"},      {"prompt_length", "prompt_len"}, {"output_len", "gen_len"},
    {"osl", "gen_len"},                  {"output_length", "gen_len"},   {"output_tokens", "gen_len"},
    {"max_new_tokens", "gen_len"},       {"max_concurrency", "concurrency"},
    {"tokens_per_batch", "global_batch_tokens"},        {"batch_tokens", "global_batch_tokens"},
    {"global_batch_size_tokens", "global_batch_tokens"},
    // A serving engine's own config, as `vllm serve --config` and SGLang's server arguments
    // take it (dashes or underscores): ReadServingConfig.
    {"max-model-len", "max_model_len"},                 {"gpu-memory-utilization", "gpu_memory_utilization"},
    {"max-num-seqs", "max_num_seqs"},                   {"max-num-batched-tokens", "max_num_batched_tokens"},
    {"kv-cache-dtype", "kv_cache_dtype"},               {"mem-fraction-static", "mem_fraction_static"},
    {"context-length", "context_length"},               {"max-running-requests", "max_running_requests"},
    {"tensor-parallel-size", "tensor_parallel_size"},   {"tp_size", "tensor_parallel_size"},
    {"tp-size", "tensor_parallel_size"},                {"pipeline-parallel-size", "pipeline_parallel_size"},
    {"pp_size", "pipeline_parallel_size"},              {"pp-size", "pipeline_parallel_size"}};

// Trainer arguments with no bearing on per-GPU memory or step time (learning rate and its
// schedule, logging, saving, paths, data selection): a pasted HF TrainingArguments,
// LLaMA-Factory, axolotl or TRL file reads past them, and the answer lists the ones it saw.
static const std::vector<std::string_view> kReadPast = {
    "output_dir", "overwrite_output_dir", "do_train", "do_eval", "do_predict", "eval_strategy", "evaluation_strategy",
    "eval_steps", "per_device_eval_batch_size", "eval_accumulation_steps", "learning_rate", "weight_decay", "adam_beta1",
    "adam_beta2", "adam_epsilon", "max_grad_norm", "num_train_epochs", "num_epochs", "max_steps", "lr_scheduler_type",
    "lr_scheduler", "lr_scheduler_kwargs", "warmup_ratio", "warmup_steps", "logging_dir", "logging_strategy",
    "logging_steps", "logging_first_step", "save_strategy", "save_steps", "save_total_limit", "save_only_model",
    "saves_per_epoch", "evals_per_epoch", "seed", "data_seed", "run_name", "report_to", "push_to_hub", "hub_model_id",
    "hub_strategy", "dataloader_num_workers", "dataloader_pin_memory", "remove_unused_columns", "label_names",
    "load_best_model_at_end", "metric_for_best_model", "resume_from_checkpoint", "ddp_timeout",
    "ddp_find_unused_parameters", "gradient_checkpointing_kwargs", "group_by_length", "disable_tqdm", "log_level",
    "tf32", "bf16_full_eval", "fp16_full_eval", "include_num_input_tokens_seen", "model_name_or_path", "base_model",
    "tokenizer_type", "trust_remote_code", "template", "dataset", "datasets", "dataset_dir", "dataset_name",
    "dataset_text_field", "dataset_prepared_path", "eval_dataset", "val_size", "val_set_size", "max_samples",
    "overwrite_cache", "preprocessing_num_workers", "plot_loss", "train_on_inputs", "special_tokens", "wandb_project",
    "wandb_entity", "wandb_name", "wandb_watch", "wandb_log_model", "use_rslora", "lora_task_type",
    "bnb_4bit_quant_type", "quantization_type", "strict",
    "early_stopping_patience", "local_rank", "debug",
    // a serving engine's config: the endpoint, logging, the chat front end
    "model", "served_model_name", "served-model-name", "host", "port", "api_key", "api-key", "tokenizer", "revision",
    "download_dir", "download-dir", "load_format", "load-format", "disable_log_requests", "disable-log-requests",
    "disable_log_stats", "disable-log-stats", "uvicorn_log_level", "uvicorn-log-level", "max_log_len", "max-log-len",
    "chat_template", "chat-template", "enable_auto_tool_choice", "enable-auto-tool-choice", "tool_call_parser",
    "tool-call-parser", "reasoning_parser", "reasoning-parser", "trust-remote-code", "enable_prefix_caching",
    "enable-prefix-caching", "swap_space", "swap-space", "model_path", "model-path",
    // LitGPT's config files: paths, data, evaluation, logging (litgpt/args.py, finetune/*.py)
    "checkpoint_dir", "out_dir", "data", "eval", "logger_name", "resume", "access_token", "log", "model_name",
    "model_config", "initial_checkpoint_dir", "tokenizer_dir"};

StatusOr<Workload> ParseWorkloadUnguarded(const Document& doc, const YAML::Node& file) {
  std::vector<std::string> train_read_past;
  SP_ASSIGN_OR_RETURN(const YAML::Node given, LiftTrainBlock(doc, file, train_read_past));
  const bool litgpt_file = file.IsMap() && file["train"].IsDefined() && file["train"].IsMap();
  const std::vector<std::string> allowed = {"name", "task", "seq_len", "global_batch", "precision", "optimizer",
                                            "lora", "inference", "description", "master_weights", "optimizer_in_backward",
                                            "paged_optimizer", "activation_offload", "loss", "compile",
                                            "grad_reduce_in_fp32", "overlap_comm", "flash_attention", "release",
                                            "optim_args", "galore_rank", "torch", "fp8_recipe",
                                            "fp8_all_gather", "bf16_layers", "custom_sharded_layers", "kbit_prepare",
                                            "fake_balanced_gate", "force_load_balancing", "double_quant",
                                            "prompt_len", "gen_len", "concurrency", "global_batch_tokens", "batch_size",
                                            // a trainer's own arguments (ReadTrainerArguments)
                                            "micro_batch", "grad_accum", "gradient_checkpointing", "bf16", "fp16",
                                            "finetuning_type", "stage", "adapter", "use_peft", "quantization_bit",
                                            "quantization_method", "load_in_4bit", "load_in_8bit", "lora_rank",
                                            "lora_alpha", "lora_dropout", "lora_target", "lora_target_linear",
                                            // LitGPT's (ReadTrainerArguments)
                                            "quantize", "devices", "num_nodes", "lora_query", "lora_key", "lora_value",
                                            "lora_projection", "lora_mlp", "lora_head",
                                            "use_liger_kernel", "attn_implementation", "packing",
                                            "disable_gradient_checkpointing",
                                            // a serving engine's own config (ReadServingConfig)
                                            "max_model_len", "gpu_memory_utilization", "max_num_seqs",
                                            "max_num_batched_tokens", "kv_cache_dtype", "mem_fraction_static",
                                            "context_length", "max_running_requests", "quantization",
                                            "tensor_parallel_size", "pipeline_parallel_size"};
  // The parallel layout itself: how a trainer file names it is a path (deepspeed: ds_z3.json)
  // or a wrapping policy, so it is given as a layout. A config's tensor_parallel_size and
  // pipeline_parallel_size, plain degrees, are read as its micro-batch is.
  for (const char* layout_key : {"tp", "pp", "dp", "zero", "zero_stage", "deepspeed", "fsdp", "fsdp_config"})
    if (given[layout_key].IsDefined())
      return doc.ErrorAt(given[layout_key], std::string(layout_key) + ": a layout setting; give it in --layout (" +
                                                LayoutKeyFor(layout_key) + "), not in the workload");
  SP_RETURN_IF_ERROR(doc.CheckKeys(given, allowed, kWorkloadSynonyms, kReadPast));
  SP_ASSIGN_OR_RETURN(const YAML::Node root, doc.WithOurNames(given, kWorkloadSynonyms));
  Workload w;
  std::string read_past;
  for (auto it = given.begin(); it != given.end(); ++it)
    if (std::find(kReadPast.begin(), kReadPast.end(), it->first.Scalar()) != kReadPast.end())
      read_past += (read_past.empty() ? "" : ", ") + it->first.Scalar();
  for (const std::string& key : train_read_past) read_past += (read_past.empty() ? "" : ", ") + key;
  if (!read_past.empty())
    w.assumed.push_back("read past " + read_past + ": arguments with no bearing on memory or step time");
  SP_ASSIGN_OR_RETURN(std::optional<std::string> name, doc.String(root, "name"));
  if (name) w.name = *name;
  SP_ASSIGN_OR_RETURN(std::optional<std::string> task, doc.String(root, "task"));
  SP_RETURN_IF_ERROR(RefuseRlTask(doc, root, "task"));
  if (task && !ParseTask(*task, &w.task)) {
    return doc.ErrorAt(root["task"], "task: expected pretrain, finetune, lora, qlora or inference, got \"" + *task + "\"");
  }
  SP_RETURN_IF_ERROR(ReadServingConfig(doc, root, task.has_value(), w));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> seq, ReadSeqLen(doc, root));
  if (seq) w.seq_len = *seq;
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> gb, ReadGlobalBatch(doc, root, w.seq_len, w.assumed));
  if (gb) w.global_batch = *gb;
  w.global_batch_stated = gb.has_value() || !w.training();
  SP_RETURN_IF_ERROR(ReadPrecision(doc, root, w));
  if (w.precision == Dtype::kFp4 && !w.training())
    return doc.ErrorAt(root["precision"], "precision: nvfp4 is a training recipe; to serve NVFP4 weights say inference: "
                                          "{weights: nvfp4}, got \"nvfp4\" for task inference");
  SP_ASSIGN_OR_RETURN(std::optional<std::string> opt, ReadOptimizer(doc, root, w));
  SP_RETURN_IF_ERROR(ReadRecipe(doc, root, w));
  SP_RETURN_IF_ERROR(ReadTrainerArguments(doc, root, task.has_value(), litgpt_file, w));
  if (opt && w.optimizer_in_backward == Setting::kAuto && OptimizerStepsInBackward(*opt))
    w.optimizer_in_backward = Setting::kOn;
  SP_RETURN_IF_ERROR(ReadGalore(doc, root, opt, w));
  if (root["lora"].IsDefined()) {
    for (const char* flat : kFlatLoraKeys)
      if (root[flat].IsDefined())
        return doc.ErrorAt(root[flat], std::string(flat) + ": the adapters are given in lora: already; give them one way");
    SP_RETURN_IF_ERROR(ReadLora(doc, root["lora"], w.lora));
  }
  if (root["bf16_layers"].IsDefined()) SP_RETURN_IF_ERROR(ReadBf16Layers(doc, root["bf16_layers"], w));
  if (root["inference"].IsDefined()) SP_RETURN_IF_ERROR(ReadInference(doc, root["inference"], w.inference, w.assumed));
  if (w.task == Task::kQlora) w.inference.weights = Dtype::kNf4;
  if (!name) w.name = std::string(TaskName(w.task));  // a trainer's file names no workload
  return w;
}

StatusOr<Workload> LoadWorkload(const std::string& ref) {
  SP_ASSIGN_OR_RETURN(Document doc, LoadBuiltinOrFile("workloads", ref));
  return ParseWorkload(doc);
}

}  // namespace shardplan

namespace shardplan {

std::string WorkloadToYaml(const Workload& w, int indent) {
  const std::string p(static_cast<size_t>(indent), ' ');
  std::string targets;
  for (const std::string& t : w.lora.targets) targets += (targets.empty() ? "" : ", ") + YamlQuoted(t);
  std::string out;
  out += p + "name: " + YamlQuoted(w.name) + "\n";
  out += p + "task: " + std::string(TaskName(w.task)) + "\n";
  out += p + "seq_len: " + std::to_string(w.seq_len) + "\n";
  // Left out when the workload left it out: the reader then makes one step what the layout runs.
  if (w.global_batch_stated || !w.training()) out += p + "global_batch: " + std::to_string(w.global_batch) + "\n";
  out += p + "precision: " + std::string(DtypeName(w.precision)) + "\n";
  // The step kernel rides on the name, as the reader takes it (adamw_torch / adamw_torch_fused).
  const bool adamw = w.optimizer == Optimizer::kAdamW && !w.paged_optimizer;
  const std::string optimizer = adamw && w.optimizer_step == OptimizerStep::kForeach     ? "adamw_torch"
                                : adamw && w.optimizer_step == OptimizerStep::kPerTensor ? "adamw_torch_fused"
                                : std::string(w.paged_optimizer ? "paged-" : "") + std::string(OptimizerName(w.optimizer));
  out += p + "optimizer: " + (w.galore_rank > 0 ? "galore-" : "") + optimizer + "\n";
  if (w.galore_rank > 0) out += p + "galore_rank: " + std::to_string(w.galore_rank) + "\n";
  if (w.master_weights != MasterWeights::kAuto) out += p + "master_weights: " + std::string(MasterWeightsName(w.master_weights)) + "\n";
  if (w.optimizer_in_backward != Setting::kAuto) out += p + "optimizer_in_backward: " + std::string(SettingName(w.optimizer_in_backward)) + "\n";
  if (w.grad_reduce_fp32 != Setting::kAuto) out += p + "grad_reduce_in_fp32: " + std::string(SettingName(w.grad_reduce_fp32)) + "\n";
  if (w.overlap_comm != Setting::kAuto) out += p + "overlap_comm: " + std::string(SettingName(w.overlap_comm)) + "\n";
  if (w.activation_offload != Setting::kAuto) out += p + "activation_offload: " + std::string(SettingName(w.activation_offload)) + "\n";
  if (w.loss != LossKind::kAuto) out += p + "loss: " + std::string(LossName(w.loss)) + "\n";
  if (w.fp8_recipe != Fp8Recipe::kAuto) out += p + "fp8_recipe: " + std::string(Fp8RecipeName(w.fp8_recipe)) + "\n";
  if (w.fp8_all_gather != Setting::kAuto) out += p + "fp8_all_gather: " + std::string(SettingName(w.fp8_all_gather)) + "\n";
  if (w.bf16_layers_start >= 0)
    out += p + "bf16_layers: {start: " + std::to_string(w.bf16_layers_start) + ", end: " + std::to_string(w.bf16_layers_end) + "}\n";
  if (w.compile != Setting::kAuto) out += p + "compile: " + std::string(SettingName(w.compile)) + "\n";
  if (w.kbit_prepare != Setting::kAuto) out += p + "kbit_prepare: " + std::string(SettingName(w.kbit_prepare)) + "\n";
  if (w.double_quant != Setting::kAuto) out += p + "double_quant: " + std::string(SettingName(w.double_quant)) + "\n";
  if (w.moe_routing == MoeRouting::kDealt) out += p + "fake_balanced_gate: true\n";
  if (w.moe_routing == MoeRouting::kRandom) out += p + "force_load_balancing: true\n";
  if (w.flash_attention != Setting::kAuto) out += p + "flash_attention: " + std::string(SettingName(w.flash_attention)) + "\n";
  if (w.tensor_parallel > 0) out += p + "tensor_parallel_size: " + std::to_string(w.tensor_parallel) + "\n";
  if (w.pipeline_parallel > 0) out += p + "pipeline_parallel_size: " + std::to_string(w.pipeline_parallel) + "\n";
  if (w.devices > 0) out += p + "devices: " + std::to_string(w.devices) + "\n";
  if (w.micro_batch > 0) out += p + "micro_batch_size: " + std::to_string(w.micro_batch) + "\n";
  if (w.grad_accum > 0) out += p + "gradient_accumulation_steps: " + std::to_string(w.grad_accum) + "\n";
  if (w.checkpointing != Setting::kAuto)
    out += p + "gradient_checkpointing: " + (w.checkpointing == Setting::kOn ? "true" : "false") + "\n";
  if (w.release > 0) out += p + "release: \"" + ReleaseName(w.release) + "\"\n";
  if (w.torch_version > 0) out += p + "torch: \"" + TorchVersionName(w.torch_version) + "\"\n";
  if (w.custom_sharded_layers >= 0) {
    std::string names;
    for (const auto& [name, bit] : kShardedLayerNames)
      if (w.custom_sharded_layers & bit) names += std::string(names.empty() ? "" : ", ") + std::string(name);
    out += p + "custom_sharded_layers: [" + names + "]\n";
  }
  std::string dropout;
  if (w.lora.dropout > 0) dropout = ", dropout: " + ShortestNumber(w.lora.dropout);
  out += p + "lora: {rank: " + std::to_string(w.lora.rank) + ", targets: [" + targets + "]" + dropout + "}\n";
  const std::string util = ShortestNumber(w.inference.gpu_memory_utilization);
  out += p + "inference: {batch: " + std::to_string(w.inference.batch) + ", prompt_len: " +
         std::to_string(w.inference.prompt_len) + ", gen_len: " + std::to_string(w.inference.gen_len) +
         ", weights: " + std::string(DtypeName(w.inference.weights)) + ", kv_cache: " +
         std::string(DtypeName(w.inference.kv_cache)) +
         (w.inference.engine == ServingEngine::kSglang         ? ", engine: sglang, mem_fraction_static: " + util
          : w.inference.engine == ServingEngine::kTransformers ? std::string(", engine: transformers")
          : w.inference.engine == ServingEngine::kTensorrtLlm
              ? ", engine: tensorrt-llm, free_gpu_memory_fraction: " + util
              : ", gpu_memory_utilization: " + util) +
         (w.inference.max_num_batched_tokens > 0
              ? ", max_num_batched_tokens: " + std::to_string(w.inference.max_num_batched_tokens)
              : std::string()) +
         (w.inference.max_num_seqs > 0 ? ", max_num_seqs: " + std::to_string(w.inference.max_num_seqs) : std::string()) +
         "}\n";
  return out;
}

}  // namespace shardplan
