#include "tests/launch/test_plans.h"

#include <nlohmann/json.hpp>

namespace shardplan::launch::testing {

namespace {

ModelSpec Llama(std::string name, int64_t hidden, int64_t layers, int64_t heads, int64_t ffn) {
  ModelSpec m;
  m.name = std::move(name);
  m.model_type = "llama";
  m.decoder_layer_class = "LlamaDecoderLayer";
  m.vocab = 128256;
  m.hidden = hidden;
  m.layers = layers;
  m.heads = heads;
  m.kv_heads = 8;
  m.head_dim = hidden / heads;
  m.intermediate = ffn;
  m.max_positions = 131072;
  return m;
}

Workload Training(Task task, int64_t seq_len, int64_t global_batch, Dtype precision) {
  Workload w;
  w.name = std::string(TaskName(task));
  w.task = task;
  w.seq_len = seq_len;
  w.global_batch = global_batch;
  w.precision = precision;
  w.optimizer = Optimizer::kAdamW;
  return w;
}

Plan MakePlan(ModelSpec m, ClusterSpec c, Workload w, Layout l) {
  Plan p;
  p.model_ref = m.name;
  p.cluster_ref = c.name;
  p.workload_ref = w.name;
  p.model = std::move(m);
  p.cluster = std::move(c);
  p.workload = std::move(w);
  p.layout = std::move(l);
  return p;
}

}  // namespace

// configs/models/llama-3.1-8b.json
ModelSpec Llama31_8b() { return Llama("llama-3.1-8b", 4096, 32, 32, 14336); }
// configs/models/llama-3.1-70b.json
ModelSpec Llama31_70b() { return Llama("llama-3.1-70b", 8192, 80, 64, 28672); }

ClusterSpec H100Cluster(int nodes, int gpus_per_node) {
  ClusterSpec c;
  c.name = "h100-" + std::to_string(nodes) + "x" + std::to_string(gpus_per_node);
  c.nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.gpu.name = "h100-sxm-80gb";  // configs/gpus.yaml, dense peaks
  c.gpu.display_name = "NVIDIA H100 80GB HBM3";
  c.gpu.memory_bytes = 81559LL * 1024 * 1024;
  c.gpu.bf16_flops = c.gpu.fp16_flops = 989.4e12;
  c.gpu.fp8_flops = 1978.9e12;
  c.gpu.fp32_flops = 66.9e12;
  c.gpu.memory_bandwidth = 3.35e12;
  c.gpu.nvlink_bandwidth = 450e9;
  c.gpu.compute_capability = 90;
  c.pcie_bandwidth = 64e9;
  c.intra_node = {"nvlink", 450e9, 0, 0};
  c.inter_node = {"infiniband", 50e9, 5e-6, 8};
  c.host_memory_bytes = 2LL << 40;
  c.nvme_bytes = 30LL * 1000 * 1000 * 1000 * 1000;
  c.nvme_bandwidth = 25e9;
  return c;
}

Plan LoraSingleGpu() {
  Layout l;
  l.framework = Framework::kFsdp;
  l.zero = 0;
  l.ac = Recompute::kFull;
  l.mbs = 4;
  l.grad_accum = 4;  // 4 x 4 x dp 1 = 16
  return MakePlan(Llama31_8b(), H100Cluster(1, 1), Training(Task::kLora, 4096, 16, Dtype::kBf16), l);
}

Plan FsdpOneNode() {
  Layout l;
  l.framework = Framework::kFsdp;
  l.dp = 8;
  l.zero = 3;
  l.ac = Recompute::kFull;
  l.mbs = 2;
  l.grad_accum = 4;  // 2 x 4 x dp 8 = 64
  return MakePlan(Llama31_8b(), H100Cluster(1, 8), Training(Task::kPretrain, 8192, 64, Dtype::kBf16), l);
}

Plan TpPpZero1MultiNode() {
  Layout l;
  l.framework = Framework::kDeepSpeed;  // Megatron-DeepSpeed: DeepSpeed's dp = 32 / (tp 8 x pp 2)
  l.tp = 8;
  l.pp = 2;
  l.dp = 2;
  l.sp = true;
  l.zero = 1;
  l.ac = Recompute::kSelective;
  l.mbs = 1;
  l.grad_accum = 16;  // 1 x 16 x dp 2 = 32
  return MakePlan(Llama31_70b(), H100Cluster(4, 8), Training(Task::kPretrain, 8192, 32, Dtype::kBf16), l);
}

Plan Zero3NvmeOffload() {
  Layout l;
  l.framework = Framework::kDeepSpeed;
  l.dp = 16;
  l.zero = 3;
  l.shard_group = 8;  // ZeRO++ hpZ inside a node
  l.offload_optimizer = Offload::kNvme;
  l.offload_params = Offload::kNvme;
  l.ac = Recompute::kFull;
  l.mbs = 1;
  l.grad_accum = 2;  // 1 x 2 x dp 16 = 32
  return MakePlan(Llama31_70b(), H100Cluster(2, 8), Training(Task::kFinetune, 4096, 32, Dtype::kFp16), l);
}

Plan HsdpTpTwoNodes() {
  Layout l;
  l.framework = Framework::kTorchtitan;  // FSDP2 + TP; planner's framework=fsdp is DP-only
  l.tp = 4;
  l.dp = 4;
  l.sp = true;
  l.zero = 3;
  l.shard_group = 2;  // HSDP: shard over 2, replicate over 2
  l.ac = Recompute::kFull;
  l.mbs = 1;
  l.grad_accum = 8;  // 1 x 8 x dp 4 = 32
  return MakePlan(Llama31_70b(), H100Cluster(2, 8), Training(Task::kPretrain, 8192, 32, Dtype::kBf16), l);
}

std::vector<EmitCase> EmitCases() {
  auto opts = [](Format f, Launcher l) {
    EmitOptions o;
    o.format = f;
    o.launcher = l;
    return o;
  };
  return {
      {"lora_1gpu", LoraSingleGpu(), opts(Format::kAll, Launcher::kTorchrun)},
      {"fsdp_1node", FsdpOneNode(), opts(Format::kAll, Launcher::kSlurm)},
      {"tp_pp_zero1", TpPpZero1MultiNode(), opts(Format::kAll, Launcher::kDeepSpeed)},
      {"tp_pp_zero1_mpirun", TpPpZero1MultiNode(), opts(Format::kMegatron, Launcher::kMpirun)},
      {"zero3_nvme", Zero3NvmeOffload(), opts(Format::kAll, Launcher::kTorchrun)},
      {"hsdp_tp_mpirun", HsdpTpTwoNodes(), opts(Format::kAccelerate, Launcher::kMpirun)},
  };
}

std::string ExpectationJson(const EmitCase& c) {
  const Layout& l = c.plan.layout;
  const int gpn = c.plan.cluster.gpus_per_node;
  nlohmann::ordered_json j = {
      {"world", l.world()},
      {"nodes", (l.world() + gpn - 1) / gpn},
      {"procs_per_node", l.world() < gpn ? l.world() : gpn},
      {"hidden", c.plan.model.hidden},
      {"dp", l.dp}, {"tp", l.tp}, {"pp", l.pp}, {"cp", l.cp}, {"ep", l.ep},
      {"micro_batch", l.mbs}, {"grad_accum", l.grad_accum},
      {"global_batch", c.plan.workload.global_batch},
      {"zero", l.zero},
      {"offload_optimizer", std::string(OffloadName(l.offload_optimizer))},
      {"offload_params", std::string(OffloadName(l.offload_params))},
      {"precision", std::string(DtypeName(c.plan.workload.precision))},
      {"framework", std::string(FrameworkName(l.framework))},
      {"format", std::string(FormatName(c.options.format))},
      {"launcher", std::string(LauncherName(c.options.launcher))},
  };
  return j.dump(2) + "\n";
}

}  // namespace shardplan::launch::testing
