// Small plans for the validator's tests, built through the planner's own API (model
// reader, layout resolver, memory model), so they follow the planner as it changes.
#pragma once

#include <string>

#include "planner/io/model_reader.h"
#include "planner/layout.h"
#include "planner/plan.h"
#include "planner/time_model.h"
#include "topology/cluster_reader.h"

namespace shardplan::validate::testing {

// GPT-2 (124M) pretraining on one node of `gpus` H100s with `layout`, sequences of 1024
// tokens, `global_batch` sequences per step.
inline StatusOr<Plan> Gpt2Plan(const std::string& layout, int gpus, int64_t global_batch = 16) {
  Plan p;
  p.model_ref = "gpt2";
  p.cluster_ref = "dgx-h100";
  p.workload_ref = "pretrain";
  SP_ASSIGN_OR_RETURN(p.model, LoadModel("gpt2"));
  SP_ASSIGN_OR_RETURN(p.cluster, LoadCluster("dgx-h100"));
  p.cluster.gpus_per_node = gpus;
  p.workload.seq_len = 1024;
  p.workload.global_batch = global_batch;
  SP_ASSIGN_OR_RETURN(Layout parsed, ParseLayout(layout));
  SP_ASSIGN_OR_RETURN(p.layout, ResolveLayout(p.model, p.workload, p.cluster, parsed));
  p.memory = EstimateMemory(p.model, p.workload, p.layout, p.cluster, p.memory_options);
  p.time = EstimateTime(p.model, p.workload, p.layout, p.cluster);
  return p;
}

}  // namespace shardplan::validate::testing
