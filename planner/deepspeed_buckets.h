// The ZeRO bucket sizes of a DeepSpeed plan, in elements: one answer for the config the
// emitter writes, the buffers the memory model budgets and the collectives the validator
// rehearses, so the three cannot disagree.
#pragma once

#include <cstdint>

#include "planner/layout.h"
#include "planner/model_spec.h"
#include "planner/workload.h"

namespace shardplan {

struct ZeroBuckets {
  int64_t reduce_bucket = 0;          // reduce_bucket_size
  int64_t allgather_bucket = 0;       // allgather_bucket_size (stages 1-2)
  int64_t prefetch_bucket = 0;        // stage3_prefetch_bucket_size
  int64_t persistence_threshold = 0;  // stage3_param_persistence_threshold
  int64_t max_live_parameters = 0;    // stage3_max_live_parameters
  int64_t max_reuse_distance = 0;     // stage3_max_reuse_distance
  int64_t sub_group_size = 0;         // sub_group_size
  int64_t param_buffer = 0;           // offload_param.buffer_size (>= the largest parameter)
  bool overlap_comm = false;          // reduce under backward; stages 1-2 double the IPG buffer
};

// Stage 3 takes the sizes transformers' DeepSpeed integration fills in for "auto" (reduce
// hidden^2, prefetch 0.9 hidden^2, persistence 10 hidden), which scale with the model;
// stages 0-2 keep DeepSpeed's defaults (runtime/zero/config.py). overlap_comm is the
// workload's, else on from stage 2: DeepSpeed turns it on for stage 3 only, but the ZeRO-2
// configs users start from set it (the DeepSpeed ZeRO tutorial's, transformers' DeepSpeed
// guide's, LLaMA-Factory's ds_z2_config.json through 2024).
ZeroBuckets DeepSpeedBuckets(const ModelSpec& m, const Workload& w, const Layout& l);
bool DeepSpeedOverlapComm(const Workload& w, const Layout& l);

}  // namespace shardplan
