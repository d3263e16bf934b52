// CollectivePlan: the collectives one rank runs in an iteration, by group and phase, with
// sizes from the model and the layout (not from memory formulas): TP all-reduce or, with
// sequence parallelism, all-gather + reduce-scatter of activations; CP all-gather of K/V;
// EP all-to-all dispatch and combine; PP neighbour send/recv; and the data-parallel traffic
// of the framework -- DDP/ZeRO-0 all-reduce buckets, ZeRO-1/2 reduce-scatter + all-gather
// buckets, ZeRO-3/FSDP all-gather of parameter units and reduce-scatter of gradients, HSDP
// replica all-reduce. Bucket sizes are each framework's defaults (constants below), and for
// DeepSpeed the plan's own (the sizes its emitted config writes).
#pragma once

#include <cstdint>
#include <vector>

#include "planner/framework_defaults.h"
#include "planner/plan.h"
#include "validate/manifest.h"

namespace shardplan::validate {

// Framework defaults shared with the memory model and the emitter (planner/framework_defaults.h;
// DeepSpeed's ZeRO buckets come per plan from planner/deepspeed_buckets.h).
constexpr int64_t kDdpBucketBytes = defaults::kDdpBucketBytes;
// Megatron DDP bucket: max(40M, 1M x dp) elements
// (megatron/core/distributed/distributed_data_parallel.py).
constexpr int64_t kMegatronMinBucketElems = 40'000'000;
constexpr int64_t kMegatronBucketElemsPerRank = 1'000'000;

// What the sizes of one rank's collectives depend on.
struct CommShape {
  bool training = true;
  int64_t tokens = 0;          // tokens of one micro-batch on this rank (after CP)
  int64_t micro = 1;           // micro-batches per iteration
  int64_t layers = 0;          // decoder layers on the rank's stage
  int64_t moe_layers = 0;      // of which MoE
  int64_t attention_layers = 0;  // of which hold attention (all but a hybrid's other blocks)
  int64_t linear_layers = 0;     // of which hold a linear mixer (Mamba-2, Gated DeltaNet)
  int64_t sub_blocks = 0;        // mixers and FFNs of those layers, each ending in a TP reduction
  int64_t local_params = 0;    // parameters of the stage on this rank after TP/EP, before DP sharding
  int64_t unit_params = 0;     // the largest decoder layer of the stage after TP/EP (FSDP unit)
  int64_t grad_params = 0;     // parameters whose gradients are synchronised (LoRA: adapters)
  int act_bytes = 2;           // bytes per activation element
  int param_bytes = 2;         // bytes per working-weight / gradient element
  int64_t ds_reduce_bucket = defaults::kDeepSpeedReduceBucket;      // DeepSpeed reduce_bucket_size
  int64_t ds_prefetch_bucket = defaults::kDeepSpeedPrefetchBucket;  // stage3_prefetch_bucket_size
  int64_t ds_allgather_bucket = defaults::kDeepSpeedAllgatherBucket;  // allgather_bucket_size
};

CommShape MakeCommShape(const Plan& plan, const RankPlace& me);

// The collectives of rank `me` in iteration order within each phase.
std::vector<CollectiveStep> PlanCollectives(const Plan& plan, const RankPlace& me);

// The data-parallel part alone (exposed for tests of each framework's buckets).
std::vector<CollectiveStep> DataParallelCollectives(const Layout& l, const CommShape& s);

}  // namespace shardplan::validate
