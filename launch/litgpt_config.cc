#include "launch/litgpt_config.h"

#include <algorithm>

#include <fmt/format.h>

#include "planner/recipe.h"

namespace shardplan::launch {
namespace {

bool Targets(const LoraSpec& lora, std::string_view name) {
  return std::find(lora.targets.begin(), lora.targets.end(), name) != lora.targets.end();
}

// LitGPT's switches for the adapted projections (litgpt/lora.py Config), from the targets:
// llama's role names, all-linear (every projection but the head, as peft's), mlp, lm_head.
StatusOr<std::string> LoraSwitches(const Plan& plan) {
  const LoraSpec& lora = plan.workload.lora;
  const bool all = Targets(lora, "all-linear");
  const bool gated = plan.model.mlp == MlpKind::kGated;
  int mlp_parts = 0;
  for (const char* part : {"gate_proj", "up_proj", "down_proj"}) mlp_parts += Targets(lora, part);
  const bool mlp = all || Targets(lora, "mlp") || mlp_parts == (gated ? 3 : 2);
  for (const std::string& t : lora.targets) {
    static const char* const kKnown[] = {"all-linear", "mlp", "lm_head", "q_proj", "k_proj", "v_proj", "o_proj",
                                         "gate_proj", "up_proj", "down_proj"};
    if (std::find(std::begin(kKnown), std::end(kKnown), t) == std::end(kKnown))
      return Status::BadInput("litgpt: LitGPT names adapters by projection (lora_query, lora_key, lora_value, "
                              "lora_projection, lora_mlp, lora_head); the target \"" + t + "\" is none of them");
  }
  if (!mlp && mlp_parts > 0)
    return Status::BadInput("litgpt: LitGPT adapts the MLP whole (lora_mlp); the targets name part of it");
  const auto on = [](bool b) { return b ? "true" : "false"; };
  std::string out;
  out += fmt::format("lora_r: {}\nlora_dropout: {}\n", lora.rank, lora.dropout);
  out += fmt::format("lora_query: {}\nlora_key: {}\nlora_value: {}\n", on(all || Targets(lora, "q_proj")),
                     on(all || Targets(lora, "k_proj")), on(all || Targets(lora, "v_proj")));
  out += fmt::format("lora_projection: {}\nlora_mlp: {}\nlora_head: {}\n", on(all || Targets(lora, "o_proj")), on(mlp),
                     on(Targets(lora, "lm_head")));
  return out;
}

// The optimizer as LitGPT's config names it: a class path and its arguments.
StatusOr<std::string> OptimizerBlock(const Workload& w) {
  std::string cls, args;
  switch (w.optimizer) {
    case Optimizer::kAdamW: cls = w.paged_optimizer ? "bitsandbytes.optim.PagedAdamW" : "torch.optim.AdamW"; break;
    case Optimizer::kAdam: cls = "torch.optim.Adam"; break;
    case Optimizer::kSgd: cls = "torch.optim.SGD"; break;
    case Optimizer::kSgdMomentum: cls = "torch.optim.SGD", args = "    momentum: 0.9\n"; break;
    case Optimizer::kAdamW8bit: cls = w.paged_optimizer ? "bitsandbytes.optim.PagedAdamW8bit" : "bitsandbytes.optim.AdamW8bit"; break;
    default:
      return Status::BadInput(fmt::format("litgpt: no class path written for the optimizer {}; LitGPT's configs take "
                                          "torch.optim and bitsandbytes classes", OptimizerName(w.optimizer)));
  }
  if (w.optimizer_step == OptimizerStep::kPerTensor && cls.starts_with("torch.optim.Adam")) args += "    fused: true\n";
  if (w.optimizer_step == OptimizerStep::kForeach && cls.starts_with("torch.optim.")) args += "    foreach: true\n";
  std::string out = "optimizer:\n  class_path: " + cls + "\n";
  if (!args.empty()) out += "  init_args:\n" + args;
  return out;
}

}  // namespace

std::string_view LitgptCommand(const Plan& plan) {
  if (plan.workload.lora_like()) return "finetune_lora";
  return plan.workload.task == Task::kPretrain ? "pretrain" : "finetune_full";
}

StatusOr<Emitted> LitgptConfig(const Plan& plan, const JobShape& s) {
  const Layout& l = plan.layout;
  const Workload& w = plan.workload;
  if (!w.training()) return Status::BadInput("litgpt: LitGPT's configs are for training");
  if (l.tp > 1 || l.pp > 1 || l.cp > 1 || l.ep > 1)
    return Status::BadInput("litgpt: LitGPT's finetune and pretrain scripts run data parallelism alone; this plan has "
                            "tp, pp, cp or ep above 1");
  const bool pretrain = w.task == Task::kPretrain;
  if (!StackRunsLayout([&] {
        Layout as_litgpt = l;
        as_litgpt.stack = Stack::kLitgpt;
        return as_litgpt;
      }(), w))
    return Status::BadInput(
        l.world() == 1 ? std::string("litgpt: on one GPU LitGPT runs without recomputation, sharding or offload; this "
                                     "plan is ") + LayoutSummary(l)
                       : fmt::format("litgpt: over several GPUs LitGPT's {} runs FSDP {} ({}); this plan is {}",
                                     LitgptCommand(plan), pretrain ? "HYBRID_SHARD" : "FULL_SHARD",
                                     pretrain ? "no recomputation" : "every block checkpointed", LayoutSummary(l)));
  if (w.task == Task::kQlora && s.world > 1)
    return Status::BadInput("litgpt: LitGPT trains a quantized base on one GPU only");
  const TrainingRecipe r = ResolveRecipe(plan.model, w, l);
  std::string precision;
  switch (w.precision) {
    case Dtype::kBf16: precision = r.pure_low_precision ? "bf16-true" : "bf16-mixed"; break;
    case Dtype::kFp16: precision = r.pure_low_precision ? "16-true" : "16-mixed"; break;
    case Dtype::kFp32: precision = "32-true"; break;
    default:
      return Status::BadInput(fmt::format("litgpt: no LitGPT precision for {} training", DtypeName(w.precision)));
  }
  std::string y = fmt::format("# {} on {} node(s) x {} {}: shardplan's plan as LitGPT's config.\n", plan.model.name,
                              s.nodes, s.procs_per_node, plan.cluster.gpu.name);
  y += fmt::format("# Run: litgpt {} --config litgpt.yaml (launch.sh does)\n", LitgptCommand(plan));
  if (pretrain) y += fmt::format("model_name: {}\n", plan.model.name);
  else y += fmt::format("checkpoint_dir: checkpoints/{}\n", plan.model.name);
  y += fmt::format("out_dir: out/{}/{}\n", LitgptCommand(plan), SafeName(plan.model.name));
  y += "precision: " + precision + "\n";
  if (w.task == Task::kQlora) y += w.double_quant == Setting::kOff ? "quantize: bnb.nf4\n" : "quantize: bnb.nf4-dq\n";
  y += fmt::format("devices: {}\nnum_nodes: {}\n", s.procs_per_node, s.nodes);
  if (w.lora_like()) {
    SP_ASSIGN_OR_RETURN(std::string switches, LoraSwitches(plan));
    y += switches;
  }
  y += fmt::format("train:\n  global_batch_size: {}\n  micro_batch_size: {}\n  max_seq_length: {}\n", s.global_batch,
                   s.micro_batch, w.seq_len);
  SP_ASSIGN_OR_RETURN(std::string optimizer, OptimizerBlock(w));
  y += optimizer;
  Emitted out;
  out.Add("litgpt.yaml", y);
  out.Note(pretrain ? "litgpt: model_name is the model's name here; use the name LitGPT's config registry gives it"
                    : "litgpt: checkpoint_dir is the model's name here; point it at the checkpoint `litgpt download` wrote");
  if (w.task == Task::kQlora && w.optimizer == Optimizer::kAdamW)
    out.Note("litgpt: with a quantized base LitGPT steps bitsandbytes' PagedAdamW whatever the class path says");
  return out;
}

}  // namespace shardplan::launch
