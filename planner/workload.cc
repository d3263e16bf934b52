#include "planner/workload.h"

#include "planner/strings.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>

namespace shardplan {
namespace {

constexpr std::array<std::pair<Task, std::string_view>, 5> kTasks = {{
    {Task::kPretrain, "pretrain"}, {Task::kFinetune, "finetune"}, {Task::kLora, "lora"},
    {Task::kQlora, "qlora"}, {Task::kInference, "inference"}}};

constexpr std::array<std::pair<Optimizer, std::string_view>, 14> kOptimizers = {{
    {Optimizer::kAdamW, "adamw"}, {Optimizer::kAdam, "adam"}, {Optimizer::kAdamW8bit, "adamw-8bit"},
    {Optimizer::kSgd, "sgd"}, {Optimizer::kSgdMomentum, "sgd-momentum"},
    {Optimizer::kAdafactor, "adafactor"}, {Optimizer::kLion, "lion"}, {Optimizer::kMuon, "muon"},
    {Optimizer::kLion8bit, "lion-8bit"}, {Optimizer::kRmsprop, "rmsprop"}, {Optimizer::kAdagrad, "adagrad"},
    {Optimizer::kAdemamix, "ademamix"}, {Optimizer::kAdemamix8bit, "ademamix-8bit"},
    {Optimizer::kAdamW4bit, "adamw-4bit"}}};

template <typename E, size_t N>
std::string_view NameOf(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [k, v] : table)
    if (k == e) return v;
  return "?";
}

template <typename E, size_t N>
bool Parse(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s, E* out) {
  for (const auto& [k, v] : table)
    if (v == s) {
      *out = k;
      return true;
    }
  return false;
}

}  // namespace

std::string_view TaskName(Task t) { return NameOf(kTasks, t); }
std::string_view OptimizerName(Optimizer o) { return NameOf(kOptimizers, o); }
bool ParseTask(std::string_view written, Task* out) {
  // Any case, and the words sources use for the same runs.
  const std::string s = Spelling(written);
  static const std::array<std::pair<std::string_view, Task>, 19> kSynonyms = {{
      {"pretraining", Task::kPretrain}, {"pre-training", Task::kPretrain}, {"pre-train", Task::kPretrain},
      {"continued-pretraining", Task::kPretrain}, {"continual-pretraining", Task::kPretrain},
      {"continued-pre-training", Task::kPretrain}, {"cpt", Task::kPretrain},
      {"sft", Task::kFinetune}, {"full", Task::kFinetune}, {"full-finetune", Task::kFinetune},
      {"fine-tune", Task::kFinetune}, {"finetuning", Task::kFinetune}, {"fine-tuning", Task::kFinetune},
      {"full-fine-tuning", Task::kFinetune}, {"full-ft", Task::kFinetune}, {"instruction-tuning", Task::kFinetune},
      {"instruction-finetuning", Task::kFinetune}, {"serving", Task::kInference}, {"serve", Task::kInference}}};
  for (const auto& [name, task] : kSynonyms)
    if (s == name) {
      *out = task;
      return true;
    }
  if (Parse(kTasks, s, out)) return true;
  // A phrase naming one ("LoRA fine-tuning", "QLoRA SFT", "full-parameter fine-tuning"): the
  // adapters decide over the fine-tuning they do.
  if (s.find("qlora") != std::string::npos) *out = Task::kQlora;
  else if (s.find("lora") != std::string::npos) *out = Task::kLora;
  else if (s.find("pretrain") != std::string::npos || s.find("pre-train") != std::string::npos) *out = Task::kPretrain;
  else if (s.find("fine-tun") != std::string::npos || s.find("finetun") != std::string::npos || s.find("sft") != std::string::npos)
    *out = Task::kFinetune;
  else if (s.find("inference") != std::string::npos || s.find("serving") != std::string::npos) *out = Task::kInference;
  else return false;
  return true;
}

bool ParseOptimizer(std::string_view s, Optimizer* out, bool* paged, OptimizerStep* step) {
  std::string n = Spelling(s);
  // A class path as configs name the optimizer (torchtune's _component_: torch.optim.AdamW or
  // bitsandbytes.optim.PagedAdamW8bit, torchao.optim.AdamW8bit, apex.optimizers.FusedAdam):
  // the class name says it.
  if (const size_t dot = n.rfind('.'); dot != std::string::npos) n = n.substr(dot + 1);
  // GaLore projects the gradients of AdamW, 8-bit AdamW or Adafactor; its _layerwise forms
  // step in the gradient hooks (OptimizerStepsInBackward).
  if (GaloreOptimizer(s)) {
    n = n.substr(7);
    if (n.ends_with("-layerwise")) n.resize(n.size() - 10);
    if (n != "adamw" && n != "adamw-8bit" && n != "adafactor") return false;
  }
  bool is_paged = false;
  if (n.rfind("paged-", 0) == 0) n = n.substr(6), is_paged = true;
  else if (n.rfind("paged", 0) == 0) n = n.substr(5), is_paged = true;  // PagedAdamW8bit
  // HF Trainer's `optim` values and bitsandbytes class names for the same optimizers, and
  // what the name says about the step: adamw_torch is torch's foreach AdamW; the fused ones
  // and HF's own AdamW step tensor by tensor.
  struct Alias {
    std::string_view name;
    Optimizer optimizer;
    OptimizerStep step;
  };
  constexpr OptimizerStep kAny = OptimizerStep::kAuto, kForeach = OptimizerStep::kForeach,
                          kPerTensor = OptimizerStep::kPerTensor;
  static const std::array<Alias, 31> kAliases = {{
      {"adamw-torch", Optimizer::kAdamW, kForeach}, {"adamw-torch-fused", Optimizer::kAdamW, kPerTensor},
      {"adamw-hf", Optimizer::kAdamW, kPerTensor}, {"adamw-apex-fused", Optimizer::kAdamW, kPerTensor},
      {"fusedadam", Optimizer::kAdamW, kPerTensor}, {"adamw-32bit", Optimizer::kAdamW, kAny},
      {"adamw-bnb-8bit", Optimizer::kAdamW8bit, kAny}, {"bnb-adamw-8bit", Optimizer::kAdamW8bit, kAny},
      {"adam-8bit", Optimizer::kAdamW8bit, kAny},
      // torchao's AdamWFp8 keeps both moments in float8 with a scale per block, 8-bit AdamW's bytes.
      {"adamwfp8", Optimizer::kAdamW8bit, kAny},
      {"sgd-nesterov", Optimizer::kSgdMomentum, kAny}, {"lion-32bit", Optimizer::kLion, kAny},
      {"adafactor-hf", Optimizer::kAdafactor, kAny}, {"adamw-anyprecision", Optimizer::kAdamW, kAny},
      {"muonclip", Optimizer::kMuon, kAny}, {"distributed-muon", Optimizer::kMuon, kAny},
      // HF Trainer's names for bitsandbytes' and torchao's low-bit optimizers; schedule-free
      // AdamW keeps z and exp_avg_sq, AdamW's two fp32 states (facebookresearch/schedule_free).
      {"ademamix-32bit", Optimizer::kAdemamix, kAny},
      {"adamw-torch-4bit", Optimizer::kAdamW4bit, kAny}, {"adamw4bit", Optimizer::kAdamW4bit, kAny},
      {"adamw-torch-8bit", Optimizer::kAdamW8bit, kAny}, {"schedule-free-adamw", Optimizer::kAdamW, kAny},
      {"rmsprop-torch", Optimizer::kRmsprop, kAny},
      // Same states as AdamW: ADOPT keeps exp_avg and exp_avg_sq (Taniguchi et al. 2024,
      // iShohei220/adopt), SophiaG exp_avg and the Hessian EMA hessian (Liu et al. 2023,
      // Liuhong99/Sophia), both fp32 like the parameters. DeepSpeed's CPU Adam is Adam on
      // wherever the layout's offload_optimizer puts it.
      {"adopt", Optimizer::kAdamW, kAny}, {"sophia", Optimizer::kAdamW, kAny},
      {"sophiag", Optimizer::kAdamW, kAny}, {"deepspeedcpuadam", Optimizer::kAdamW, kAny},
      // LAMB (You et al. 2019) is Adam's two moments with a per-tensor trust ratio: DeepSpeed's
      // FusedLamb (its config's "type": "Lamb") and apex's FusedLAMB keep exp_avg and
      // exp_avg_sq in fp32, and step tensor by tensor.
      {"lamb", Optimizer::kAdamW, kPerTensor}, {"fusedlamb", Optimizer::kAdamW, kPerTensor},
      {"fused-lamb", Optimizer::kAdamW, kPerTensor},
      // LOMO and AdaLomo (OpenLMLab/LOMO; HF Trainer's optim "lomo" and "adalomo") step each
      // parameter inside backward: LOMO plain SGD, AdaLomo with Adafactor's factored second
      // moment. OptimizerStepsInBackward says so.
      {"lomo", Optimizer::kSgd, kAny}, {"adalomo", Optimizer::kAdafactor, kAny}}};
  // bitsandbytes' class names write the state width without a dash (AdamW8bit, Lion32bit,
  // AdEMAMix8bit): 32-bit states are the plain optimizer's, 8-bit ones its -8bit form.
  if (n.ends_with("32bit") && !n.ends_with("-32bit") && n.size() > 5) n.resize(n.size() - 5);
  if (n.ends_with("8bit") && !n.ends_with("-8bit") && n.size() > 4) n.insert(n.size() - 4, "-");
  OptimizerStep named = kAny;
  bool found = Parse(kOptimizers, n, out);
  for (const Alias& a : kAliases)
    if (!found && a.name == n) *out = a.optimizer, named = a.step, found = true;
  if (found && paged) *paged = is_paged;
  if (found && step) *step = is_paged ? kAny : named;
  // bitsandbytes pages its AdamW, Lion and AdEMAMix variants (paged_adamw_8bit, paged_lion_32bit, ...).
  const bool pageable = *out == Optimizer::kAdamW || *out == Optimizer::kAdam || *out == Optimizer::kAdamW8bit ||
                        *out == Optimizer::kLion || *out == Optimizer::kLion8bit || *out == Optimizer::kAdemamix ||
                        *out == Optimizer::kAdemamix8bit;
  if (found) return !is_paged || pageable;
  // The step written beside the name ("AdamW (fused)", "fused AdamW", "AdamW, foreach"): the
  // optimizer, stepped that way.
  std::string bare = Spelling(s);
  bare.erase(std::remove_if(bare.begin(), bare.end(), [](char c) { return c == '(' || c == ')' || c == ','; }), bare.end());
  OptimizerStep said = kAny;
  for (const auto& [word, how] : {std::pair<std::string_view, OptimizerStep>{"fused", kPerTensor}, {"foreach", kForeach}})
    for (const std::string& form : {"-" + std::string(word), std::string(word) + "-"})
      if (const size_t at = bare.find(form); at != std::string::npos && said == kAny) {
        bare.erase(at, form.size());
        said = how;
      }
  while (!bare.empty() && bare.back() == '-') bare.pop_back();
  if (said == kAny || bare.empty() || !ParseOptimizer(bare, out, paged, nullptr)) return false;
  if (step) *step = said;
  return true;
}

bool QuantizedStates(Optimizer o) {
  return o == Optimizer::kAdamW8bit || o == Optimizer::kLion8bit || o == Optimizer::kAdemamix8bit ||
         o == Optimizer::kAdamW4bit;
}

bool OptimizerStepsInBackward(std::string_view s) {
  const std::string n = Spelling(s);
  return n == "lomo" || n == "adalomo" || (GaloreOptimizer(s) && n.ends_with("-layerwise"));
}

std::optional<int64_t> ParseKiloTokens(std::string_view s) {
  if (s.size() < 2 || (s.back() != 'k' && s.back() != 'K')) return std::nullopt;
  const std::string_view digits = s.substr(0, s.size() - 1);
  if (digits.size() > 5 || !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
    return std::nullopt;
  return std::stoll(std::string(digits)) * 1024;
}

bool GaloreOptimizer(std::string_view s) { return Spelling(s).rfind("galore-", 0) == 0; }

OptimizerStep ParseOptimizerStep(std::string_view s) {
  Optimizer o;
  OptimizerStep step = OptimizerStep::kAuto;
  ParseOptimizer(s, &o, nullptr, &step);
  return step;
}

std::string_view MasterWeightsName(MasterWeights m) {
  return m == MasterWeights::kAuto ? "auto" : m == MasterWeights::kFp32 ? "fp32" : "none";
}

std::string_view LossName(LossKind k) {
  switch (k) {
    case LossKind::kAuto: return "auto";
    case LossKind::kStandard: return "standard";
    case LossKind::kChunked: return "chunked";
    case LossKind::kFused: return "fused";
    case LossKind::kNoUpcast: return "no_upcast";
    case LossKind::kCompiled: return "compiled";
    case LossKind::kKernel: return "kernel";
    case LossKind::kInplace: return "inplace";
  }
  return "?";
}

std::string_view Fp8RecipeName(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kAuto: return "auto";
    case Fp8Recipe::kTensorwise: return "tensorwise";
    case Fp8Recipe::kRowwise: return "rowwise";
    case Fp8Recipe::kBlockwise: return "blockwise";
    case Fp8Recipe::kMxfp8: return "mxfp8";
  }
  return "?";
}

bool ParseFp8Recipe(std::string_view s, Fp8Recipe* out) {
  const std::string n = Spelling(s);
  struct Name {
    std::string_view name;
    Fp8Recipe recipe;
  };
  // torchao's Float8LinearRecipeName values, Transformer Engine's recipe classes
  // (DelayedScaling, Float8CurrentScaling, Float8BlockScaling, MXFP8BlockScaling) and
  // Megatron's --fp8-recipe choices.
  static constexpr Name kNames[] = {
      {"auto", Fp8Recipe::kAuto},           {"tensorwise", Fp8Recipe::kTensorwise}, {"delayed", Fp8Recipe::kTensorwise},
      {"current", Fp8Recipe::kTensorwise},  {"tensorwise-current", Fp8Recipe::kTensorwise},
      {"cs", Fp8Recipe::kTensorwise},  // NeMo's and Megatron-Bridge's FP8-CS: current scaling
      {"rowwise", Fp8Recipe::kRowwise},     {"rowwise-with-gw-hp", Fp8Recipe::kRowwise},
      {"blockwise", Fp8Recipe::kBlockwise}, {"mxfp8", Fp8Recipe::kMxfp8},           {"mx", Fp8Recipe::kMxfp8}};
  for (const Name& k : kNames)
    if (n == k.name) {
      *out = k.recipe;
      return true;
    }
  return false;
}

Fp8Recipe Fp8RecipeInPrecision(std::string_view precision) {
  Fp8Recipe named = Fp8Recipe::kAuto;
  for (const std::string& word : Split(Spelling(precision), '-'))
    if (Fp8Recipe r; ParseFp8Recipe(word, &r) && r != Fp8Recipe::kAuto) named = r;
  return named;
}

std::string_view SettingName(Setting s) { return s == Setting::kAuto ? "auto" : s == Setting::kOn ? "true" : "false"; }

int32_t ParseRelease(std::string_view s) {
  // YYYY-MM or YYYY-MM-DD, digits only between the dashes.
  if (s.size() != 7 && s.size() != 10) return 0;
  auto digits = [&](size_t from, size_t n) -> int {
    int v = 0;
    for (size_t i = from; i < from + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return -1;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  if (s[4] != '-' || (s.size() == 10 && s[7] != '-')) return 0;
  const int year = digits(0, 4), month = digits(5, 2), day = s.size() == 10 ? digits(8, 2) : 0;
  if (year < 2015 || year > 2099 || month < 1 || month > 12 || day < 0 || day > 31 || (s.size() == 10 && day == 0)) return 0;
  return year * 10000 + month * 100 + day;
}

int32_t ParseTorchVersion(std::string_view s) {
  // MAJOR.MINOR, then anything (a patch number, a local tag such as +cu130).
  size_t i = 0;
  auto number = [&](int* v) {
    const size_t from = i;
    *v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - from < 3) *v = *v * 10 + (s[i++] - '0');
    return i > from;
  };
  int major = 0, minor = 0;
  if (!number(&major) || i >= s.size() || s[i++] != '.' || !number(&minor)) return 0;
  if (i < s.size() && s[i] != '.' && s[i] != '+' && s[i] != 'a' && s[i] != 'd' && s[i] != 'r') return 0;
  if (major < 1 || major > 9 || minor > 99) return 0;
  return major * 100 + minor;
}

std::string TorchVersionName(int32_t version) {
  if (version <= 0) return "";
  return std::to_string(version / 100) + "." + std::to_string(version % 100);
}

std::string ReleaseName(int32_t release) {
  if (release <= 0) return "";
  auto two = [](int v) { return std::string(v < 10 ? "0" : "") + std::to_string(v); };
  std::string out = std::to_string(release / 10000) + "-" + two(release / 100 % 100);
  if (release % 100 != 0) out += "-" + two(release % 100);
  return out;
}

}  // namespace shardplan
