#include "launch/torchtitan_config.h"

#include <fmt/format.h>

#include <string>

#include "planner/recipe.h"

namespace shardplan::launch {
namespace {

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

std::string_view Bool(bool b) { return b ? "true" : "false"; }

// torchtitan's model registry names (torchtitan/models/*); others keep the HF model_type.
std::string TitanModelName(const ModelSpec& m) {
  if (m.model_type == "llama") return "llama3";
  if (m.model_type == "deepseek_v3") return "deepseek_v3";
  if (m.model_type == "qwen3" || m.model_type == "qwen3_moe") return "qwen3";
  return m.model_type.empty() ? m.name : m.model_type;
}

struct DpDegrees {
  int replicate = 1;
  int shard = 1;
};

// ZeRO-0 is plain replication (DDP); any sharding becomes FSDP2 over the shard group,
// with the rest replicated (HSDP) when the plan has a smaller shard group.
DpDegrees DpOf(const Layout& l) {
  if (l.zero == 0) return {l.dp, 1};
  const int shard = l.shard_group > 0 && l.shard_group < l.dp ? l.shard_group : l.dp;
  return {l.dp / shard, shard};
}

// torchtitan's schedule names (torch.distributed.pipelining): the zero-bubble ones run
// several stages per rank.
std::string_view Schedule(const Layout& l) {
  switch (l.pp_schedule) {
    case PpSchedule::kZeroBubble: return "InterleavedZeroBubble";
    case PpSchedule::kZbv: return "ZBVZeroBubble";
    case PpSchedule::k1f1b: break;
  }
  return l.vpp > 1 ? "Interleaved1F1B" : "1F1B";
}

std::string_view AcMode(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "none";
}

std::string TrainingSection(const Plan& plan, const JobShape& s) {
  const Layout& l = plan.layout;
  // With PP, local_batch_size / microbatch_size is the number of microbatches in flight;
  // without PP, accumulation = global / (local x dp) (torchtitan/train.py).
  const int local = l.pp > 1 ? s.micro_batch * s.grad_accum : s.micro_batch;
  const bool offload = l.offload_optimizer == Offload::kCpu || l.offload_params == Offload::kCpu;
  std::string t = "[training]\n";
  t += fmt::format("local_batch_size = {}\n", local);
  t += fmt::format("global_batch_size = {}\n", s.global_batch);
  t += fmt::format("seq_len = {}\n", plan.workload.seq_len);
  t += "max_norm = 1.0  # gradient clipping\n";
  t += fmt::format("mixed_precision_param = {}\n", Quote(TorchDtypeName(plan)));
  t += "mixed_precision_reduce = \"float32\"  # torchtitan default\n";
  t += fmt::format("enable_cpu_offload = {}\n", Bool(offload));
  return t;
}

std::string ParallelismSection(const Plan& plan, Emitted& out) {
  const Layout& l = plan.layout;
  const DpDegrees dp = DpOf(l);
  std::string reshard = "\"default\"";
  if (l.zero == 1 || l.zero == 2 || (l.zero == 3 && !l.reshard_after_forward)) {
    reshard = "\"never\"";
    if (l.zero < 3)
      out.Note(fmt::format("torchtitan has no ZeRO-{}: FSDP2 without resharding after forward "
                           "is the nearest setting and keeps gathered weights", l.zero));
  }
  std::string p = "[parallelism]\n";
  p += fmt::format("data_parallel_replicate_degree = {}\n", dp.replicate);
  p += fmt::format("data_parallel_shard_degree = {}\n", dp.shard);
  p += fmt::format("fsdp_reshard_after_forward = {}\n", reshard);
  p += fmt::format("tensor_parallel_degree = {}\n", l.tp);
  p += fmt::format("enable_async_tensor_parallel = {}\n", l.tp_overlap && l.tp > 1);
  p += fmt::format("pipeline_parallel_degree = {}\n", l.pp);
  if (l.pp > 1) {
    p += fmt::format("pipeline_parallel_schedule = {}\n", Quote(Schedule(l)));
    p += fmt::format("pipeline_parallel_microbatch_size = {}\n", l.mbs);
    // Stages the layout states: torchtitan's split points, the first layer of each stage but
    // the first. Unstated, torchtitan's own split is the one the plan priced (StageLayers).
    if (static_cast<int>(l.stages.size()) == l.pp && l.vpp <= 1) {
      std::string points;
      int layer = 0;
      for (size_t i = 0; i + 1 < l.stages.size(); ++i)
        points += (i > 0 ? ", " : "") + Quote("layers." + std::to_string(layer += l.stages[i]));
      p += "pipeline_parallel_split_points = [" + points + "]\n";
    } else if (!l.stages.empty()) {
      out.Note("torchtitan: stages per rank over interleaved virtual stages have no split points to write; "
               "torchtitan splits its own way");
    }
  }
  p += fmt::format("context_parallel_degree = {}\n", l.cp);
  p += fmt::format("expert_parallel_degree = {}\n", l.ep);
  p += fmt::format("expert_tensor_parallel_degree = {}\n", l.etp);
  return p;
}

std::string ActivationSection(const Plan& plan) {
  std::string a = "[activation_checkpoint]\n";
  a += fmt::format("mode = {}\n", Quote(AcMode(plan.layout.ac)));
  if (plan.layout.ac == Recompute::kSelective) a += "selective_ac_option = \"op\"\n";
  return a;
}

std::string Float8Section(const Plan& plan, bool sharded) {
  if (plan.workload.precision != Dtype::kFp8) return "";
  // torchao float8 training (docs/float8.md): tensorwise scaling all-gathers in fp8 when FSDP
  // shards weights, unless the workload says fp8_all_gather: off (recipe.h); a recipe_name
  // (rowwise) communicates in bf16, and torchtitan refuses it beside
  // enable_fsdp_float8_all_gather (components/quantization/float8.py).
  std::string f = "[quantize.linear.float8]\n";
  if (TorchtitanFp8Recipe(plan.workload) == Fp8Recipe::kRowwise) f += "recipe_name = \"rowwise\"\n";
  const bool fp8_gather = TorchtitanFloat8AllGather(plan.workload, sharded);
  f += fmt::format("enable_fsdp_float8_all_gather = {}\n", Bool(fp8_gather));
  f += fmt::format("precompute_float8_dynamic_scale_for_fsdp = {}\n", Bool(fp8_gather));
  f += "filter_fqns = [\"output\"]\n";
  return f;
}

}  // namespace

StatusOr<Emitted> TorchtitanConfig(const Plan& plan, const JobShape& s) {
  const Layout& l = plan.layout;
  if (plan.workload.lora_like())
    return Status::BadInput("torchtitan: no LoRA fine-tuning; use --format accelerate or deepspeed");
  if (l.offload_optimizer == Offload::kNvme || l.offload_params == Offload::kNvme)
    return Status::BadInput("torchtitan: no NVMe offload (training.enable_cpu_offload is CPU only)");
  Emitted out;
  std::string t = "# torchtitan job config written by shardplan emit (TOML-era schema).\n";
  t += "[job]\n";
  t += fmt::format("description = {}\n", Quote("shardplan: " + plan.model.name));
  t += "dump_folder = \"./outputs\"\n\n";
  t += "[model]\n";
  t += fmt::format("name = {}  # set flavor to the matching torchtitan preset\n",
                   Quote(TitanModelName(plan.model)));
  if (plan.workload.precision == Dtype::kFp8) t += "converters = [\"quantize.linear.float8\"]\n";
  t += "\n" + TrainingSection(plan, s) + "\n" + ParallelismSection(plan, out) + "\n";
  t += ActivationSection(plan);
  const std::string f8 = Float8Section(plan, DpOf(l).shard > 1);
  if (!f8.empty()) t += "\n" + f8;
  if (plan.model.model_type != "llama" && plan.model.model_type != "qwen3" &&
      plan.model.model_type != "deepseek_v3")
    out.Note("torchtitan: model '" + plan.model.model_type + "' may have no torchtitan preset");
  if (l.pp > 1 && l.pp_schedule == PpSchedule::kZeroBubble && l.vpp < 2)
    out.Note("torchtitan: InterleavedZeroBubble runs two or more stages per rank; plan with vpp=2 for a config it accepts");
  out.Add("torchtitan.toml", t);
  return out;
}

}  // namespace shardplan::launch
