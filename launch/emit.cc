#include "launch/emit.h"

#include <fmt/format.h>

#include "launch/accelerate_config.h"
#include "launch/deepspeed_config.h"
#include "launch/job_shape.h"
#include "launch/launch_script.h"
#include "launch/litgpt_config.h"
#include "launch/megatron_args.h"
#include "launch/torchtitan_config.h"

namespace shardplan::launch {
namespace {

StatusOr<Emitted> DeepSpeedFiles(const Plan& plan, const JobShape& s, const EmitOptions& opt) {
  SP_RETURN_IF_ERROR(CheckDeepSpeed(plan));
  DeepSpeedOptions ds;
  ds.nvme_path = opt.nvme_path;
  Emitted out;
  out.Add("deepspeed.json", DeepSpeedJson(plan, s, DeepSpeedFlavor::kStandalone, ds).dump(2) + "\n");
  // The HF Trainer and accelerate drive no DeepSpeed pipeline engine: no HF flavour with pp > 1.
  if (plan.layout.pp == 1)
    out.Add("deepspeed_hf.json", DeepSpeedJson(plan, s, DeepSpeedFlavor::kHfAuto, ds).dump(2) + "\n");
  return out;
}

StatusOr<Emitted> AccelerateFiles(const Plan& plan, const JobShape& s, const EmitOptions& opt) {
  AccelerateOptions ao;
  ao.main_process_port = opt.master_port;
  ao.deepspeed_hostfile = opt.launcher == Launcher::kDeepSpeed && s.multi_node();
  SP_ASSIGN_OR_RETURN(Emitted out, AccelerateConfig(plan, s, ao));
  if (plan.layout.framework == Framework::kDeepSpeed) {  // the YAML points at the HF flavour
    SP_ASSIGN_OR_RETURN(Emitted ds, DeepSpeedFiles(plan, s, opt));
    out.Append(std::move(ds));
  } else if (s.grad_accum > 1 && plan.layout.dp > 1 && plan.layout.zero >= 2) {
    // accelerate's accumulate() skips FSDP's gradient sync between micro-batches unless told
    // otherwise, and FSDP then keeps unsharded gradients: memory the plan does not budget.
    out.Note(fmt::format("accelerate: build the Accelerator with gradient_accumulation_plugin="
                         "GradientAccumulationPlugin(num_steps={}, sync_each_batch=True); without it FSDP keeps "
                         "unsharded gradients across the {} accumulation steps, which this plan does not budget",
                         s.grad_accum, s.grad_accum));
  }
  return out;
}

StatusOr<Emitted> FormatFilesOf(const Plan& plan, const JobShape& s, Format f, const EmitOptions& opt) {
  // NVFP4 training is Transformer Engine's recipe under Megatron-core; the other formats have
  // no switch that turns it on, and a bf16 config in its place would be a different run.
  if (plan.workload.precision == Dtype::kFp4 && f != Format::kMegatron && f != Format::kAll)
    return Status::BadInput(fmt::format("{}: has no NVFP4 training recipe; precision nvfp4 is emitted as Megatron-LM "
                                        "arguments (--format megatron)", FormatName(f)));
  switch (f) {
    case Format::kDeepSpeed: return DeepSpeedFiles(plan, s, opt);
    case Format::kAccelerate: return AccelerateFiles(plan, s, opt);
    case Format::kTorchtitan: return TorchtitanConfig(plan, s);
    case Format::kMegatron: return MegatronArgs(plan, s);
    case Format::kLitgpt: return LitgptConfig(plan, s);
    case Format::kAll: break;
  }
  return Status::Internal("emit: kAll is not one format");
}

StatusOr<Emitted> FormatFiles(const Plan& plan, const JobShape& s, Format f, const EmitOptions& opt) {
  SP_ASSIGN_OR_RETURN(Emitted out, FormatFilesOf(plan, s, f, opt));
  // Megatron-LM and DeepSpeed's pipeline engine run 1F1B (interleaved in Megatron) only.
  if (plan.layout.pp > 1 && plan.layout.pp_schedule != PpSchedule::k1f1b &&
      (f == Format::kMegatron || f == Format::kDeepSpeed))
    out.Note(fmt::format("{}: no zero-bubble schedule; this config runs 1F1B, slower than the plan's {} bubble",
                         FormatName(f), plan.layout.pp_schedule == PpSchedule::kZbv ? "ZB-V" : "ZB-H1"));
  return out;
}

// Adds files not already present (DeepSpeed JSON comes with both deepspeed and accelerate).
void Merge(Emitted& into, Emitted from) {
  for (EmittedFile& f : from.files) {
    bool seen = false;
    for (const EmittedFile& g : into.files) seen |= g.name == f.name;
    if (!seen) into.files.push_back(std::move(f));
  }
  for (std::string& n : from.notes) {
    bool seen = false;
    for (const std::string& m : into.notes) seen |= m == n;
    if (!seen) into.notes.push_back(std::move(n));
  }
}

std::string_view Describe(std::string_view file) {
  if (file == "deepspeed.json") return "DeepSpeed config, every value concrete (deepspeed / Megatron-DeepSpeed)";
  if (file == "deepspeed_hf.json") return "DeepSpeed config with \"auto\" where the HF Trainer / accelerate fill values in";
  if (file == "accelerate_config.yaml") return "accelerate config (`accelerate launch --config_file`)";
  if (file == "torchtitan.toml") return "torchtitan job config (`--job.config_file`)";
  if (file == "megatron_args.sh") return "Megatron-LM arguments as a bash array, MEGATRON_ARGS";
  if (file == "litgpt.yaml") return "LitGPT config (`litgpt finetune_lora|finetune_full|pretrain --config`)";
  if (file == "launch.sh" || file == "job.sbatch") return "launch script";
  if (file == "hostfile") return "one `host slots=N` line per node, in rank order: put real host names in";
  if (file == "deepspeed_env") return "variables the deepspeed launcher exports to every node (DS_ENV_FILE)";
  return "";
}

std::string Readme(const Plan& plan, const JobShape& s, const Emitted& e, Format entry,
                   const EmitOptions& opt) {
  const Layout& l = plan.layout;
  std::string r = fmt::format("# {} on {}: launch files from shardplan\n\n", plan.model.name,
                              plan.cluster.name.empty() ? "the cluster" : plan.cluster.name);
  r += fmt::format("- Layout: `{}`\n", LayoutSummary(l));
  r += fmt::format("- GPUs: {} = dp {} x tp {} x pp {} x cp {}, on {} node(s) x {} {}\n", s.world,
                   l.dp, l.tp, l.pp, l.cp, s.nodes, s.procs_per_node, plan.cluster.gpu.name);
  r += fmt::format("- Batch: micro {} x accumulation {} x data-parallel {} = {} sequences of {} tokens\n",
                   s.micro_batch, s.grad_accum, s.dp, s.global_batch, plan.workload.seq_len);
  r += "- Rank order: node-major, local rank i on GPU i (PCI bus order), so each TP group stays "
       "inside one node\n\n## Files\n\n";
  for (const EmittedFile& f : e.files) r += fmt::format("- `{}`: {}\n", f.name, Describe(f.name));
  r += "- `README.md`: this file\n\n## Launch\n\n";
  r += fmt::format("The launch script starts the {} config with {}. ", FormatName(entry),
                   LauncherName(opt.launcher));
  if (entry == Format::kLitgpt) r += fmt::format("It runs `litgpt {}` itself; no training script to give.\n\n", LitgptCommand(plan));
  else r += "Set `TRAIN_SCRIPT` to your training script (relative to where you run from).\n\n";
  if (opt.launcher == Launcher::kSlurm) r += "    cd THIS_DIR && sbatch job.sbatch\n";
  else if (opt.launcher == Launcher::kTorchrun && s.multi_node())
    r += fmt::format("    # on node i = 0..{}:\n    NODE_RANK=i MASTER_ADDR=<node 0> ./launch.sh\n", s.nodes - 1);
  else r += "    ./launch.sh   # on node 0\n";
  if (!e.notes.empty()) {
    r += "\n## Notes\n\n";
    for (const std::string& n : e.notes) r += "- " + n + "\n";
  }
  return r;
}

}  // namespace

StatusOr<Emitted> EmitPlan(const Plan& plan, const EmitOptions& opt) {
  if (!plan.workload.training())
    return Status::BadInput("emit writes training configs; this plan is an inference workload");
  SP_ASSIGN_OR_RETURN(JobShape s, ShapeOf(plan));
  const Format entry = opt.format == Format::kAll ? NativeFormat(plan.layout) : opt.format;
  Emitted out;
  SP_ASSIGN_OR_RETURN(Emitted main, FormatFiles(plan, s, entry, opt));
  Merge(out, std::move(main));
  if (opt.format == Format::kAll) {
    for (Format f : {Format::kDeepSpeed, Format::kAccelerate, Format::kTorchtitan, Format::kMegatron}) {
      if (f == entry) continue;
      StatusOr<Emitted> more = FormatFiles(plan, s, f, opt);
      if (more.ok()) Merge(out, std::move(more).value());
      else out.Note(fmt::format("no {} config: {}", FormatName(f), more.status().message()));
    }
  }
  LaunchOptions lo;
  lo.master_port = opt.master_port;
  SP_ASSIGN_OR_RETURN(Emitted scripts, LaunchScripts(plan, s, opt.launcher, entry, lo));
  Merge(out, std::move(scripts));
  out.Add("README.md", Readme(plan, s, out, entry, opt));
  return out;
}

}  // namespace shardplan::launch
