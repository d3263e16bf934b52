#include "launch/accelerate_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace shardplan::launch {
namespace {

// PyYAML reads YAML 1.1, where bare no/yes/on/off are booleans: quote such strings.
YAML::Emitter& Str(YAML::Emitter& y, std::string_view v) {
  static const char* kBoolish[] = {"y", "n", "yes", "no", "on", "off", "true", "false"};
  std::string lower;
  for (char ch : v) lower += static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  for (const char* b : kBoolish)
    if (lower == b) return y << YAML::SingleQuoted << std::string(v);
  return y << std::string(v);
}

enum class Kind { kSingle, kDdp, kFsdp, kDeepSpeed };

Kind KindOf(const Plan& plan, const JobShape& s) {
  if (plan.layout.framework == Framework::kDeepSpeed) return Kind::kDeepSpeed;
  if (plan.layout.zero == 0 && plan.layout.tp == 1 && plan.layout.cp == 1)
    return s.world == 1 ? Kind::kSingle : Kind::kDdp;
  return Kind::kFsdp;
}

std::string_view DistributedType(Kind k) {
  switch (k) {
    case Kind::kSingle: return "NO";
    case Kind::kDdp: return "MULTI_GPU";
    case Kind::kFsdp: return "FSDP";
    case Kind::kDeepSpeed: return "DEEPSPEED";
  }
  return "NO";
}

Status Check(const Plan& plan, Kind kind) {
  const Layout& l = plan.layout;
  if (l.pp > 1)
    return Status::BadInput("accelerate: no pipeline parallelism (pp>1); use --format megatron, "
                            "torchtitan or deepspeed");
  if (kind == Kind::kFsdp &&
      (l.offload_params == Offload::kNvme || l.offload_optimizer == Offload::kNvme))
    return Status::BadInput("accelerate FSDP: offload to NVMe is not supported (CPU only); use DeepSpeed");
  return Status::Ok();
}

void FsdpBlock(const Plan& plan, YAML::Emitter& y, Emitted& out) {
  const Layout& l = plan.layout;
  const bool offload = l.offload_params != Offload::kNone || l.offload_optimizer != Offload::kNone;
  const bool reshard = l.zero == 3 && l.reshard_after_forward;
  y << YAML::Key << "fsdp_config" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "fsdp_version" << YAML::Value << 2;  // FSDP2 (fully_shard); needs torch >= 2.6
  // FSDP2 takes a bool here; FSDP1 strategy names would raise (utils/dataclasses.py).
  y << YAML::Key << "fsdp_reshard_after_forward" << YAML::Value << reshard;
  y << YAML::Key << "fsdp_offload_params" << YAML::Value << offload;  // CPUOffloadPolicy
  if (!plan.model.decoder_layer_class.empty()) {
    y << YAML::Key << "fsdp_auto_wrap_policy" << YAML::Value << "TRANSFORMER_BASED_WRAP";
    y << YAML::Key << "fsdp_transformer_layer_cls_to_wrap" << YAML::Value
      << plan.model.decoder_layer_class;
  } else {
    y << YAML::Key << "fsdp_auto_wrap_policy" << YAML::Value << "SIZE_BASED_WRAP";
    y << YAML::Key << "fsdp_min_num_params" << YAML::Value << 100000000;  // ~one block per unit
    out.Note("accelerate: the model names no decoder-layer class; FSDP wraps by size instead");
  }
  y << YAML::Key << "fsdp_activation_checkpointing" << YAML::Value << (l.ac == Recompute::kFull);
  y << YAML::Key << "fsdp_state_dict_type" << YAML::Value << "SHARDED_STATE_DICT";
  y << YAML::Key << "fsdp_cpu_ram_efficient_loading" << YAML::Value << true;
  y << YAML::EndMap;
  if (l.ac == Recompute::kSelective)
    out.Note("accelerate FSDP checkpoints whole layers only; the plan's selective recompute "
             "needs the model's own gradient_checkpointing settings");
  if (l.zero == 1 || l.zero == 2)
    out.Note(fmt::format("accelerate FSDP has no ZeRO-{}: it keeps gathered weights after forward "
                         "(reshard_after_forward: false), the nearest FSDP2 setting", l.zero));
  if (offload && l.offload_params == Offload::kNone)
    out.Note("FSDP2 CPU offload moves parameters as well as optimizer states to the host");
}

void ParallelismBlock(const Plan& plan, YAML::Emitter& y) {
  const Layout& l = plan.layout;
  const int shard = l.shard_group > 0 && l.shard_group < l.dp ? l.shard_group : l.dp;
  if (l.tp == 1 && l.cp == 1 && shard == l.dp) return;
  // ND parallelism with FSDP2 (accelerate ParallelismConfig; keys carry this prefix).
  y << YAML::Key << "parallelism_config" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "parallelism_config_dp_replicate_size" << YAML::Value << l.dp / shard;
  y << YAML::Key << "parallelism_config_dp_shard_size" << YAML::Value << shard;
  y << YAML::Key << "parallelism_config_tp_size" << YAML::Value << l.tp;
  y << YAML::Key << "parallelism_config_cp_size" << YAML::Value << l.cp;
  y << YAML::EndMap;
}

void DeepSpeedBlock(const Plan& plan, const AccelerateOptions& opt, YAML::Emitter& y) {
  y << YAML::Key << "deepspeed_config" << YAML::Value << YAML::BeginMap;
  // Everything else lives in the JSON; accelerate refuses duplicates beside a config file.
  y << YAML::Key << "deepspeed_config_file" << YAML::Value << opt.deepspeed_config_file;
  y << YAML::Key << "zero3_init_flag" << YAML::Value << (plan.layout.zero == 3);
  if (opt.deepspeed_hostfile) {
    y << YAML::Key << "deepspeed_hostfile" << YAML::Value << "hostfile";
    y << YAML::Key << "deepspeed_multinode_launcher" << YAML::Value << "pdsh";
  } else {
    y << YAML::Key << "deepspeed_multinode_launcher" << YAML::Value << "standard";  // torchrun per node
  }
  y << YAML::EndMap;
}

void MachineKeys(const JobShape& s, const AccelerateOptions& opt, YAML::Emitter& y) {
  y << YAML::Key << "num_machines" << YAML::Value << s.nodes;
  y << YAML::Key << "num_processes" << YAML::Value << s.world;  // the global total (utils/launch.py)
  y << YAML::Key << "machine_rank" << YAML::Value << 0;
  if (s.multi_node())
    y << YAML::Comment("placeholder: each node passes --machine_rank 0.." +
                       std::to_string(s.nodes - 1) + " and --main_process_ip");
  y << YAML::Key << "main_process_port" << YAML::Value << opt.main_process_port;
  y << YAML::Key << "rdzv_backend" << YAML::Value << "static";  // node order = machine_rank order
  y << YAML::Key << "same_network" << YAML::Value << true;
}

}  // namespace

StatusOr<Emitted> AccelerateConfig(const Plan& plan, const JobShape& s, const AccelerateOptions& opt) {
  const Kind kind = KindOf(plan, s);
  SP_RETURN_IF_ERROR(Check(plan, kind));
  Emitted out;
  YAML::Emitter y;
  y << YAML::Comment("accelerate config for " + plan.model.name + " written by shardplan emit");
  y << YAML::BeginMap;
  y << YAML::Key << "compute_environment" << YAML::Value << "LOCAL_MACHINE";
  y << YAML::Key << "distributed_type" << YAML::Value;
  Str(y, DistributedType(kind));
  y << YAML::Key << "mixed_precision" << YAML::Value;
  Str(y, MixedPrecisionName(plan));
  y << YAML::Key << "use_cpu" << YAML::Value << false;
  y << YAML::Key << "debug" << YAML::Value << false;
  y << YAML::Key << "main_training_function" << YAML::Value << "main";
  MachineKeys(s, opt, y);
  if (kind == Kind::kFsdp) {
    FsdpBlock(plan, y, out);
    ParallelismBlock(plan, y);
  } else if (kind == Kind::kDeepSpeed) {
    DeepSpeedBlock(plan, opt, y);
  }
  y << YAML::EndMap;
  out.Add("accelerate_config.yaml", std::string(y.c_str()) + "\n");
  return out;
}

}  // namespace shardplan::launch
