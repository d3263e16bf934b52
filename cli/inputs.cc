#include "cli/inputs.h"

#include "cli/command.h"

#include <iostream>

#include "planner/io/model_reader.h"
#include "planner/io/workload_reader.h"
#include "planner/lora.h"
#include "planner/recipe.h"
#include "planner/units.h"
#include "topology/cluster_reader.h"

namespace shardplan::cli {

void AddInputFlags(CLI::App* cmd, InputFlags& f, bool with_layout) {
  cmd->add_option("--model,-m", f.model, kModelHelp)->capture_default_str();
  cmd->add_option("--cluster,-c", f.cluster,
                  "built-in cluster name, a cluster YAML path, or GPUs in words (8xH100, 2x8xA100-80GB)")
      ->capture_default_str();
  cmd->add_option("--nodes", f.nodes, "override the cluster's node count");
  cmd->add_option("--gpus-per-node", f.gpus_per_node, "override the cluster's GPUs per node");
  cmd->add_option("--workload,-w", f.workload, "built-in workload name or a workload YAML path (default: pretrain)");
  cmd->add_option("--task", f.task, "pretrain|finetune|lora|qlora|inference (overrides the workload)");
  // 4k and 128K read as 4,096 and 131,072 tokens, as the workload's seq_len does.
  cmd->add_option("--seq-len", f.seq_len, "tokens per sequence, such as 4096 or 4k (overrides the workload)")
      ->transform(CLI::Validator(
          [](std::string& v) {
            if (const std::optional<int64_t> kilo = ParseKiloTokens(v)) v = std::to_string(*kilo);
            return std::string();
          },
          "", "kilo-tokens"));
  cmd->add_option("--global-batch", f.global_batch, "sequences per optimizer step (overrides the workload)");
  cmd->add_option("--precision", f.precision, "bf16|fp16|fp32|fp8|nvfp4 (overrides the workload)");
  cmd->add_option("--optimizer", f.optimizer, "adamw|adam|adamw-8bit|sgd|sgd-momentum|adafactor|lion");
  if (with_layout) cmd->add_option("--layout,-l", f.layout, "key=value,... e.g. framework=megatron,tp=8,pp=2");
  cmd->add_option("--headroom", f.headroom, "memory kept free on every GPU for the fit test")->capture_default_str();
  cmd->add_flag("--json", f.json, "print JSON on stdout");
  cmd->add_option("--html", f.html, "also write a self-contained HTML report (charts of the --json numbers) to this file");
}

nlohmann::json InputsJson(const InputFlags& f) {
  nlohmann::json j;
  j["model"] = f.model;
  if (!f.cluster.empty()) j["cluster"] = f.cluster;
  if (f.nodes > 0) j["nodes"] = f.nodes;
  if (f.gpus_per_node > 0) j["gpus_per_node"] = f.gpus_per_node;
  j["workload"] = f.workload.empty() ? (f.task.empty() ? "pretrain" : f.task) : f.workload;
  if (f.seq_len > 0) j["seq_len"] = f.seq_len;
  if (f.global_batch > 0) j["global_batch"] = f.global_batch;
  if (!f.precision.empty()) j["precision"] = f.precision;
  if (!f.optimizer.empty()) j["optimizer"] = f.optimizer;
  if (!f.layout.empty()) j["layout"] = f.layout;
  j["headroom"] = f.headroom;
  return j;
}

// The degrees, micro-batch, accumulation and checkpointing a pasted trainer or serving config
// states (Workload::tensor_parallel, micro_batch, ...), where --layout leaves them; one that
// --layout states otherwise is an error naming both.
static Status ApplyTrainerBatch(const Workload& w, const std::string& file, Layout& l) {
  const auto clash = [&](const char* key, const std::string& ours, const std::string& theirs) {
    return Status::BadInput(file + ": " + key + " " + theirs + ", but --layout says " + ours + "; give it once");
  };
  for (const auto& [stated, degree, bit, key, theirs] :
       {std::tuple{w.tensor_parallel, &l.tp, kKeyTp, "tp", "tensor_parallel_size is"},
        std::tuple{w.pipeline_parallel, &l.pp, kKeyPp, "pp", "pipeline_parallel_size is"}}) {
    if (stated <= 0) continue;
    if ((l.fixed & bit) && *degree != stated)
      return clash(theirs, std::string(key) + "=" + std::to_string(*degree), std::to_string(stated));
    *degree = static_cast<int>(stated);
    l.fixed |= bit;
  }
  // LitGPT's devices: its data parallelism alone (tensor and pipeline parallelism it has not).
  if (w.devices > 0) {
    if ((l.fixed & kKeyDp) && l.dp != w.devices)
      return clash("devices x num_nodes is", "dp=" + std::to_string(l.dp), std::to_string(w.devices));
    l.dp = static_cast<int>(w.devices);
    l.fixed |= kKeyDp;
  }
  if (w.micro_batch > 0) {
    if ((l.fixed & kKeyMbs) && l.mbs != w.micro_batch)
      return clash("the micro-batch is", "mbs=" + std::to_string(l.mbs), std::to_string(w.micro_batch));
    l.mbs = static_cast<int>(w.micro_batch);
    l.fixed |= kKeyMbs;
  }
  if (w.grad_accum > 0) {
    if ((l.fixed & kKeyGradAccum) && l.grad_accum != w.grad_accum)
      return clash("gradient accumulation is", "grad_accum=" + std::to_string(l.grad_accum), std::to_string(w.grad_accum));
    l.grad_accum = static_cast<int>(w.grad_accum);
    l.fixed |= kKeyGradAccum;
  }
  if (w.checkpointing != Setting::kAuto) {
    const bool on = w.checkpointing == Setting::kOn;
    // gradient_checkpointing: true is whole layers; a stated ac=selective refines it.
    if ((l.fixed & kKeyAc) && (l.ac != Recompute::kNone) != on)
      return clash("gradient checkpointing is", "ac=" + std::string(RecomputeName(l.ac)), on ? "on" : "off");
    if (!(l.fixed & kKeyAc)) l.ac = on ? Recompute::kFull : Recompute::kNone;
    l.fixed |= kKeyAc;
  }
  return Status::Ok();
}

// A run on part of the cluster: LitGPT's devices: 1 on an eight-GPU node, or an estimate's
// dp x tp x pp x cp stated below the cluster's count. Per-GPU memory and time are those of the
// GPUs the run uses, one node's worth or whole nodes of it; any other part is left to the
// layout's own rule (dp x tp x pp x cp must equal the GPUs).
static void UsePartOfCluster(bool allowed, Inputs& in) {
  const Layout& l = in.layout;
  ClusterSpec& c = in.cluster;
  const int world = c.world_size();
  const int used = l.dp * l.tp * l.pp * l.cp;
  if (!allowed || !(l.fixed & kKeyDp) || world <= 0 || used >= world || c.gpus_per_node <= 0) return;
  if (used > c.gpus_per_node && used % c.gpus_per_node != 0) return;
  const int nodes = used <= c.gpus_per_node ? 1 : used / c.gpus_per_node;
  in.assumed.push_back("the layout runs on " + std::to_string(used) + " of the cluster's " + std::to_string(world) +
                       " GPUs (dp x tp x pp x cp" + (in.workload.devices > 0 ? ", the workload's devices" : "") +
                       "): " + (nodes == 1 ? "one node" : std::to_string(nodes) + " nodes") + " of it");
  if (used < c.gpus_per_node) c.gpus_per_node = used;
  c.nodes = nodes;
}

StatusOr<Inputs> LoadInputs(const InputFlags& f) {
  Inputs in;
  SP_ASSIGN_OR_RETURN(in.model, LoadModel(f.model));
  if (f.nodes < 0 || f.gpus_per_node < 0) return Status::BadInput("--nodes and --gpus-per-node must be positive");
  if (!f.cluster.empty()) {
    SP_ASSIGN_OR_RETURN(in.cluster, LoadCluster(f.cluster));
    if (f.nodes > 0) in.cluster.nodes = f.nodes;
    if (f.gpus_per_node > 0) in.cluster.gpus_per_node = f.gpus_per_node;
  }
  if (!f.cluster.empty() && in.cluster.nodes > 1 && (in.cluster.inter_node.bandwidth <= 0 || in.cluster.inter_node.fabric == "none"))
    return Status::BadInput(f.cluster + ": " + std::to_string(in.cluster.nodes) +
                            " nodes, but the cluster has no network between nodes (inter_node fabric \"" +
                            in.cluster.inter_node.fabric + "\"); set inter_node in the cluster file");
  if (!f.workload.empty()) {
    SP_ASSIGN_OR_RETURN(in.workload, LoadWorkload(f.workload));
  } else if (Task t; !f.task.empty() && ParseTask(f.task, &t) && t != Task::kPretrain) {
    SP_ASSIGN_OR_RETURN(in.workload, LoadWorkload(std::string(TaskName(t))));  // the built-in of that task (sft: finetune)
  } else {
    SP_ASSIGN_OR_RETURN(in.workload, LoadWorkload("pretrain"));
  }
  Workload& w = in.workload;
  if (!f.task.empty() && !ParseTask(f.task, &w.task))
    return Status::BadInput("--task: expected pretrain, finetune, lora, qlora or inference, got \"" + f.task + "\"");
  if (f.seq_len < 0 || f.global_batch < 0) return Status::BadInput("--seq-len and --global-batch must be positive");
  // The same bounds as the workload file's keys (planner/io/workload_reader.cc).
  if (f.seq_len > (int64_t{1} << 26)) return Status::BadInput("--seq-len: expected at most 67108864 tokens, got " + std::to_string(f.seq_len));
  if (f.global_batch > (int64_t{1} << 30))
    return Status::BadInput("--global-batch: expected at most 1073741824 sequences, got " + std::to_string(f.global_batch));
  if (w.lora_like()) {  // the adapters' targets must name modules this model has
    const Status targets = CheckLoraTargets(in.model, w.lora);
    if (!targets.ok()) return Status::BadInput((f.workload.empty() ? "--task" : f.workload) + ": " + targets.message());
  }
  if (f.seq_len > 0) w.seq_len = f.seq_len;
  if (f.global_batch > 0) w.global_batch = f.global_batch, w.global_batch_stated = true;
  if (!f.precision.empty()) {
    auto d = ParseDtype(f.precision);
    if (!d) return Status::BadInput("--precision: expected bf16, fp16, fp32, fp8 or nvfp4, got \"" + f.precision + "\"");
    if (*d == Dtype::kFp4 && !w.training())
      return Status::BadInput("--precision: nvfp4 is a training recipe; this workload serves (got \"" + f.precision + "\")");
    w.precision = *d;
  }
  if (!f.optimizer.empty() && !ParseOptimizer(f.optimizer, &w.optimizer, &w.paged_optimizer, &w.optimizer_step))
    return Status::BadInput("--optimizer: unknown optimizer \"" + f.optimizer + "\"");
  if (!f.optimizer.empty() && OptimizerStepsInBackward(f.optimizer)) w.optimizer_in_backward = Setting::kOn;
  if (!f.optimizer.empty())  // a rank the workload states stays with a GaLore optimizer named here
    w.galore_rank = !GaloreOptimizer(f.optimizer) ? 0 : w.galore_rank > 0 ? w.galore_rank : kGaloreDefaultRank;
  SP_ASSIGN_OR_RETURN(in.layout, ParseLayout(f.layout));
  SP_RETURN_IF_ERROR(ApplyTrainerBatch(w, f.workload, in.layout));
  UsePartOfCluster(f.part_of_cluster || w.devices > 0, in);
  auto headroom = ParseBytes(f.headroom);
  if (!headroom.ok()) return Status::BadInput("--headroom: " + headroom.status().message());
  in.memory.headroom_bytes = *headroom;
  return in;
}

Plan MakePlan(const InputFlags& f, const Inputs& in, const Layout& resolved) {
  Plan p;
  p.model_ref = f.model;
  p.cluster_ref = f.cluster;
  p.workload_ref = f.workload.empty() ? (f.task.empty() ? "pretrain" : f.task) : f.workload;
  p.model = in.model;
  p.cluster = in.cluster;
  p.workload = in.workload;
  p.layout = resolved;
  p.assumed.insert(p.assumed.end(), in.assumed.begin(), in.assumed.end());
  if (p.workload.training() && !p.workload.global_batch_stated) {
    p.workload.global_batch = static_cast<int64_t>(resolved.mbs) * resolved.dp * resolved.grad_accum;
    p.workload.global_batch_stated = true;
    p.assumed.push_back("global_batch: " + std::to_string(p.workload.global_batch) +
                        " sequences (not stated: mbs x dp x grad_accum)");
  }
  // An unstated micro-batch is the layout's default, one sequence (Megatron's
  // --micro-batch-size, torchtitan's pipeline_parallel_microbatch_size); say so, with the
  // accumulation that then makes up the global batch.
  if (p.workload.training() && !(resolved.fixed & kKeyMbs)) {
    std::string why = "not stated; grad_accum " + std::to_string(resolved.grad_accum) + " makes up the global batch";
    // ResolveLayout's torchtitan pipeline split (planner/layout.cc).
    if (TorchtitanStageSplit(resolved))
      why = p.workload.release > 0
                ? "not stated; torchtitan releases before 2025-04-07, as the one stated, cut each rank's batch into pp "
                  "micro-batches (pipeline_parallel_microbatches unset)"
                : "not stated; torchtitan releases before 2025-04-07 cut each rank's batch into pp micro-batches, the "
                  "larger memory of the two; later ones default to pipeline_parallel_microbatch_size 1: say release: "
                  "with the date of yours, or mbs=1";
    p.assumed.push_back("mbs: " + std::to_string(resolved.mbs) + " (" + why + ")");
  }
  if (p.workload.task == Task::kInference) ResolveServingProfile(p.workload, p.cluster.gpu, &p.assumed);
  p.memory_options = in.memory;
  return p;
}

int Fail(const Status& s) {
  std::cerr << "shardplan: " << s.message() << "\n";
  ExitCode() = s.exit_code();
  return s.exit_code();
}

}  // namespace shardplan::cli
