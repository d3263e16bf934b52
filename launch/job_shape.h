// JobShape: the numbers every emitted config and launch script must agree on -- processes,
// nodes, the data-parallel size and the batch identity -- derived once from a Plan and
// checked against the plan's rank map, so no two emitted files can disagree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "planner/plan.h"
#include "planner/status.h"

namespace shardplan::launch {

struct JobShape {
  int world = 1;            // processes (GPUs) the plan uses: dp x tp x pp x cp
  int nodes = 1;            // nodes the plan uses
  int procs_per_node = 1;   // processes started on each node (torchrun --nproc-per-node)
  int dp = 1;               // data-parallel size as DeepSpeed and Megatron count it: world/(tp*pp*cp)
  int micro_batch = 1;      // sequences per GPU per forward (train_micro_batch_size_per_gpu)
  int grad_accum = 1;       // micro-batches per optimizer step per DP rank
  int64_t global_batch = 1; // sequences per optimizer step: micro_batch x grad_accum x dp

  bool multi_node() const { return nodes > 1; }
};

// Derives the shape and checks what a launcher relies on: the layout's degrees multiply to
// its world, the world fits the cluster and fills whole nodes, every TP group sits inside
// one node (the rank map's NVLink island), and micro x accumulation x dp equals the
// workload's global batch (DeepSpeed's _batch_assertion, runtime/config.py).
StatusOr<JobShape> ShapeOf(const Plan& plan);

// "bf16", "fp16", "fp8" or "no": accelerate's mixed_precision values (utils/dataclasses.py).
std::string_view MixedPrecisionName(const Plan& plan);
// "bfloat16", "float16" or "float32": torch dtype names used by torchtitan.
std::string_view TorchDtypeName(const Plan& plan);

// The layout keys that matter to a launch, as `--layout` text ("framework=deepspeed,dp=2,
// tp=8,..."): always framework, degrees, zero, mbs and grad_accum; the rest when set.
std::string LayoutSummary(const Layout& l);

// A file name or identifier fragment made of [A-Za-z0-9._-] only (for job names, hosts).
std::string SafeName(std::string_view s);

}  // namespace shardplan::launch
