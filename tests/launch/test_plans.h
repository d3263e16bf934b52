// Hand-built plans the launch tests emit: the golden files pin their output and
// check_emitted.py feeds the same output to the real readers (DeepSpeed, accelerate, ...).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "launch/emit.h"
#include "planner/plan.h"

namespace shardplan::launch::testing {

// Llama-3.1-8B / 70B architecture from their HF config.json (configs/models/).
ModelSpec Llama31_8b();
ModelSpec Llama31_70b();
// `nodes` x `gpus_per_node` H100 SXM 80 GB with NVLink inside a node, InfiniBand across.
ClusterSpec H100Cluster(int nodes, int gpus_per_node);

Plan LoraSingleGpu();        // LoRA on Llama-3.1-8B, one GPU, full recompute
Plan FsdpOneNode();          // Llama-3.1-8B pretraining, FSDP2 full shard over 8 GPUs
Plan TpPpZero1MultiNode();   // Llama-3.1-70B, 4 nodes: tp 8 x pp 2 x dp 2, ZeRO-1, SP
Plan Zero3NvmeOffload();     // Llama-3.1-70B, 2 nodes: ZeRO-3 + hpZ 8, params/optimizer on NVMe
Plan HsdpTpTwoNodes();       // Llama-3.1-70B, 2 nodes: torchtitan FSDP2 tp 4 x dp 4 (HSDP 2 x 2)

struct EmitCase {
  std::string name;   // golden folder name under tests/launch/golden/
  Plan plan;
  EmitOptions options;
};
std::vector<EmitCase> EmitCases();
inline void PrintTo(const EmitCase& c, std::ostream* os) { *os << c.name; }  // for gtest

// What check_emitted.py holds the emitted files to: the plan's world, degrees, batch,
// ZeRO stage and offload, as JSON.
std::string ExpectationJson(const EmitCase& c);

}  // namespace shardplan::launch::testing
