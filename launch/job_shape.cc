#include "launch/job_shape.h"

#include <fmt/format.h>

#include <vector>

namespace shardplan::launch {
namespace {

Status CheckDegrees(const Layout& l) {
  for (int d : {l.dp, l.tp, l.pp, l.cp, l.mbs, l.grad_accum})
    if (d < 1) return Status::BadInput("layout: every degree, mbs and grad_accum must be >= 1");
  return Status::Ok();
}

Status CheckPlacement(const Plan& plan, const JobShape& s) {
  const ClusterSpec& c = plan.cluster;
  if (s.world > c.world_size())
    return Status::BadInput(fmt::format("layout uses {} GPUs but cluster '{}' has {} ({} x {})",
                                        s.world, c.name, c.world_size(), c.nodes, c.gpus_per_node));
  if (s.world > c.gpus_per_node && s.world % c.gpus_per_node != 0)
    return Status::BadInput(fmt::format(
        "layout uses {} GPUs, not a whole number of {}-GPU nodes; launchers start the same "
        "number of processes on every node (torchrun LOCAL_WORLD_SIZE is homogeneous)",
        s.world, c.gpus_per_node));
  // TP exchanges activations every layer: its group must stay inside one NVLink island.
  std::vector<int> tp_node(static_cast<size_t>(s.world), -1);
  for (const RankPlace& p : MakeRankMap(c, plan.layout)) {
    int group = (p.pp * plan.layout.dp + p.dp) * plan.layout.cp + p.cp;
    int& node = tp_node[static_cast<size_t>(group)];
    if (node >= 0 && node != p.node)
      return Status::BadInput(fmt::format(
          "tp={} spans nodes: a TP group must sit inside one {}-GPU node (rank {} is on node {})",
          plan.layout.tp, c.gpus_per_node, p.rank, p.node));
    node = p.node;
  }
  return Status::Ok();
}

Status CheckBatch(const Plan& plan, const JobShape& s) {
  if (!plan.workload.training() || s.global_batch == plan.workload.global_batch) return Status::Ok();
  return Status::BadInput(fmt::format(
      "batch identity broken: mbs {} x grad_accum {} x dp {} = {}, but the workload's "
      "global_batch is {} (DeepSpeed asserts train_batch_size == micro x accumulation x dp)",
      s.micro_batch, s.grad_accum, s.dp, s.global_batch, plan.workload.global_batch));
}

}  // namespace

StatusOr<JobShape> ShapeOf(const Plan& plan) {
  const Layout& l = plan.layout;
  SP_RETURN_IF_ERROR(CheckDegrees(l));
  const int gpn = plan.cluster.gpus_per_node > 0 ? plan.cluster.gpus_per_node : 1;
  JobShape s;
  s.world = l.world();
  s.procs_per_node = s.world < gpn ? s.world : gpn;
  s.nodes = (s.world + gpn - 1) / gpn;
  s.dp = l.dp;  // Megatron's world / (tp*pp*cp), which DeepSpeed's mpu reports
  s.micro_batch = l.mbs;
  s.grad_accum = l.grad_accum;
  s.global_batch = static_cast<int64_t>(l.mbs) * l.grad_accum * l.dp;
  SP_RETURN_IF_ERROR(CheckPlacement(plan, s));
  SP_RETURN_IF_ERROR(CheckBatch(plan, s));
  return s;
}

std::string_view MixedPrecisionName(const Plan& plan) {
  switch (plan.workload.precision) {
    case Dtype::kBf16: return "bf16";
    case Dtype::kFp16: return "fp16";
    case Dtype::kFp8: return "fp8";
    case Dtype::kFp4: return "nvfp4";
    default: return "no";
  }
}

std::string_view TorchDtypeName(const Plan& plan) {
  switch (plan.workload.precision) {
    case Dtype::kBf16:
    case Dtype::kFp8:
    case Dtype::kFp4: return "bfloat16";  // fp8 / nvfp4 matmuls run inside bf16 training
    case Dtype::kFp16: return "float16";
    default: return "float32";
  }
}

std::string LayoutSummary(const Layout& l) {
  std::string s = fmt::format("framework={},dp={},tp={},pp={}", FrameworkName(l.framework), l.dp,
                              l.tp, l.pp);
  if (l.vpp > 1) s += fmt::format(",vpp={}", l.vpp);
  if (l.cp > 1) s += fmt::format(",cp={}", l.cp);
  if (l.ep > 1) s += fmt::format(",ep={}", l.ep);
  if (l.etp > 1) s += fmt::format(",etp={}", l.etp);
  if (l.sp) s += ",sp=on";
  s += fmt::format(",zero={}", l.zero);
  if (l.shard_group > 0) s += fmt::format(",shard_group={}", l.shard_group);
  s += fmt::format(",ac={}", RecomputeName(l.ac));
  if (l.ac_layers > 0) s += fmt::format(",ac_layers={}", l.ac_layers);
  if (l.offload_optimizer != Offload::kNone)
    s += fmt::format(",offload_optimizer={}", OffloadName(l.offload_optimizer));
  if (l.offload_params != Offload::kNone) s += fmt::format(",offload_params={}", OffloadName(l.offload_params));
  if (!l.reshard_after_forward) s += ",reshard=off";
  return s + fmt::format(",mbs={},grad_accum={}", l.mbs, l.grad_accum);
}

std::string SafeName(std::string_view s) {
  std::string out;
  for (char ch : s) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-';
    out += ok ? ch : '-';
  }
  return out.empty() ? "job" : out;
}

}  // namespace shardplan::launch
