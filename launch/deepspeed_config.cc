#include "launch/deepspeed_config.h"

#include <fmt/format.h>

#include <algorithm>

#include "planner/deepspeed_buckets.h"
#include "planner/recipe.h"

namespace shardplan::launch {
namespace {

using Json = nlohmann::ordered_json;
const Json kAuto = "auto";

bool UsesNvme(const Layout& l) {
  return l.offload_optimizer == Offload::kNvme || l.offload_params == Offload::kNvme;
}

std::string DeviceName(Offload o) { return o == Offload::kNvme ? "nvme" : "cpu"; }

void PrecisionBlocks(const Plan& plan, DeepSpeedFlavor flavor, Json& root) {
  const Dtype p = plan.workload.precision;
  const bool hf = flavor == DeepSpeedFlavor::kHfAuto;
  if (p == Dtype::kBf16 || p == Dtype::kFp8) {
    // fp8 GEMMs come from Transformer Engine / torchao inside a bf16 run (accelerate maps fp8 to bf16).
    root["bf16"] = {{"enabled", hf ? kAuto : Json(true)}};
  } else if (p == Dtype::kFp16) {
    // Dynamic loss scaling with DeepSpeed's defaults (runtime/precision_config.py).
    root["fp16"] = {{"enabled", hf ? kAuto : Json(true)}, {"loss_scale", 0},
                    {"initial_scale_power", 16}, {"loss_scale_window", 1000},
                    {"hysteresis", 2}, {"min_loss_scale", 1}};
  }
}

Json OffloadOptimizer(const Layout& l, const DeepSpeedOptions& opt) {
  Json o = {{"device", DeviceName(l.offload_optimizer)}};
  if (l.offload_optimizer == Offload::kNvme) o["nvme_path"] = opt.nvme_path;
  o["pin_memory"] = true;  // default true, but it changed once for params (PR #8207): explicit
  o["buffer_count"] = 4;   // "at least the number of optimizer states per param": 4 for Adam (offload_config.py)
  return o;
}

Json OffloadParam(const Layout& l, const ZeroBuckets& b, const DeepSpeedOptions& opt) {
  Json o = {{"device", DeviceName(l.offload_params)}};
  if (l.offload_params == Offload::kNvme) o["nvme_path"] = opt.nvme_path;
  o["pin_memory"] = true;
  o["buffer_count"] = 5;                     // DeepSpeed default (zero/offload_config.py)
  o["buffer_size"] = b.param_buffer;         // must hold the largest parameter for nvme swapping
  o["max_in_cpu"] = 1000000000;              // DeepSpeed default
  return o;
}

Json ZeroBlock(const Plan& plan, DeepSpeedFlavor flavor, const DeepSpeedOptions& opt) {
  const Layout& l = plan.layout;
  const ZeroBuckets b = DeepSpeedBuckets(plan.model, plan.workload, l);
  const bool hf = flavor == DeepSpeedFlavor::kHfAuto;
  Json z = {{"stage", l.zero}};
  if (l.offload_optimizer != Offload::kNone) z["offload_optimizer"] = OffloadOptimizer(l, opt);
  if (l.offload_params != Offload::kNone) z["offload_param"] = OffloadParam(l, b, opt);
  z["overlap_comm"] = b.overlap_comm;  // reduce under backward (DeepSpeed alone: stage 3 only)
  z["contiguous_gradients"] = true;
  z["reduce_scatter"] = true;
  z["reduce_bucket_size"] = hf && l.zero == 3 ? kAuto : Json(b.reduce_bucket);
  if (l.zero == 3) {
    z["stage3_prefetch_bucket_size"] = hf ? kAuto : Json(b.prefetch_bucket);
    z["stage3_param_persistence_threshold"] = hf ? kAuto : Json(b.persistence_threshold);
    z["stage3_max_live_parameters"] = b.max_live_parameters;
    z["stage3_max_reuse_distance"] = b.max_reuse_distance;
    z["sub_group_size"] = b.sub_group_size;  // DeepSpeed default (zero/config.py)
    z["stage3_gather_16bit_weights_on_model_save"] = true;  // so save_model writes a whole checkpoint
    // ZeRO++ hpZ: a secondary copy of the weights sharded inside the HSDP group (usually a node).
    z["zero_hpz_partition_size"] = l.shard_group > 0 && l.shard_group < l.dp ? l.shard_group : 1;
  } else if (l.zero >= 1) {
    z["allgather_partitions"] = true;
    z["allgather_bucket_size"] = b.allgather_bucket;
  }
  return z;
}

// aio settings for NVMe swapping: DeepSpeed's defaults (runtime/swap_tensor/constants.py).
Json AioBlock() {
  return {{"block_size", 1048576}, {"queue_depth", 8}, {"intra_op_parallelism", 1},
          {"single_submit", false}, {"overlap_events", true}, {"use_gds", false}};
}

// Used by Megatron-DeepSpeed's checkpoint() and deepspeed.checkpointing
// (runtime/activation_checkpointing/config.py); HF models checkpoint through the Trainer instead.
Json ActivationCheckpointing(const Plan& plan) {
  const Layout& l = plan.layout;
  Json a = {{"partition_activations", l.tp > 1},  // shard saved inputs across the TP group
            {"cpu_checkpointing", false},
            {"contiguous_memory_optimization", false}};
  a["number_checkpoints"] = l.ac_layers > 0 ? Json(l.ac_layers) : Json(nullptr);
  a["synchronize_checkpoint_boundary"] = false;
  a["profile"] = false;
  return a;
}

Json HfOptimizer(const Plan& plan) {
  const Optimizer o = plan.workload.optimizer;
  if (o != Optimizer::kAdamW && o != Optimizer::kAdam) return nullptr;
  // A plan priced for the Trainer's own (foreach) AdamW leaves the block out, so DeepSpeed
  // steps that one; a block builds DeepSpeed's FusedAdam, which the workload asks for by
  // naming it (optimizer: fusedadam).
  if (ResolveRecipe(plan.model, plan.workload, plan.layout).deepspeed_foreach_step) return nullptr;
  // Filled by the HF Trainer from TrainingArguments (integrations/deepspeed.py).
  return {{"type", "AdamW"},
          {"params", {{"lr", kAuto}, {"betas", kAuto}, {"eps", kAuto}, {"weight_decay", kAuto}}}};
}

}  // namespace

Status CheckDeepSpeed(const Plan& plan) {
  const Layout& l = plan.layout;
  if (l.zero < 0 || l.zero > 3)
    return Status::BadInput(fmt::format("DeepSpeed: zero={} is not a ZeRO stage (0..3)", l.zero));
  if (l.offload_params != Offload::kNone && l.zero != 3)
    return Status::BadInput("DeepSpeed: offload_param needs ZeRO stage 3 (zero/offload_config.py)");
  if (l.offload_optimizer != Offload::kNone && l.zero == 0)
    return Status::BadInput("DeepSpeed: offload_optimizer needs ZeRO stage 1-3");
  if (l.pp > 1 && l.zero >= 2)
    return Status::BadInput(
        "DeepSpeed: pipeline parallelism works with ZeRO stage 0 or 1 only (PipelineEngine)");
  return Status::Ok();
}

nlohmann::ordered_json DeepSpeedJson(const Plan& plan, const JobShape& s, DeepSpeedFlavor flavor,
                                     const DeepSpeedOptions& opt) {
  const Layout& l = plan.layout;
  const bool hf = flavor == DeepSpeedFlavor::kHfAuto;
  Json root;
  // Batch identity with DeepSpeed's data-parallel size (runtime/config.py _batch_assertion).
  root["train_batch_size"] = hf ? kAuto : Json(s.global_batch);
  root["train_micro_batch_size_per_gpu"] = hf ? kAuto : Json(s.micro_batch);
  root["gradient_accumulation_steps"] = hf ? kAuto : Json(s.grad_accum);
  root["gradient_clipping"] = hf ? kAuto : Json(opt.gradient_clipping);
  root["steps_per_print"] = opt.steps_per_print;
  root["wall_clock_breakdown"] = false;
  if (l.cp > 1 && l.tp == 1 && l.pp == 1) root["sequence_parallel_size"] = l.cp;  // Ulysses
  if (hf) {
    Json optimizer = HfOptimizer(plan);
    if (!optimizer.is_null()) root["optimizer"] = optimizer;
    if (l.tp > 1 && l.pp == 1) root["tensor_parallel"] = {{"autotp_size", l.tp}};  // AutoTP
    root["zero_allow_untested_optimizer"] = true;  // the Trainer may build its own optimizer
  }
  PrecisionBlocks(plan, flavor, root);
  root["zero_optimization"] = ZeroBlock(plan, flavor, opt);
  if (UsesNvme(l)) root["aio"] = AioBlock();
  if (l.ac != Recompute::kNone && !hf) root["activation_checkpointing"] = ActivationCheckpointing(plan);
  return root;
}

}  // namespace shardplan::launch
