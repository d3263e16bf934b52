// Plan: the inputs, one resolved layout, its estimates and the rank map -- what
// `shardplan plan -o plan.yaml` writes and `estimate --plan`, `emit` and `validate` read
// (planner/io/plan_file.h).
#pragma once

#include <string>
#include <vector>

#include "planner/layout.h"
#include "planner/memory_model.h"
#include "planner/model_spec.h"
#include "planner/time_model.h"
#include "planner/workload.h"
#include "topology/cluster_spec.h"

namespace shardplan {

// Where one global rank sits and which group coordinates it has. Rank order puts TP
// innermost, then CP, then DP, then PP (Megatron's tp-cp-ep-dp-pp, ecosystem.md 8.3), so a
// TP group never leaves a node when tp divides gpus_per_node.
struct RankPlace {
  int rank = 0;
  int node = 0;
  int local_gpu = 0;
  int tp = 0, cp = 0, dp = 0, pp = 0;
  int ep = 0;          // expert-parallel rank: position inside the EP group (etp x ep x dp refold)
  int shard = 0;       // position inside the ZeRO/FSDP shard group (HSDP)
};

std::vector<RankPlace> MakeRankMap(const ClusterSpec& c, const Layout& l);

// The global ranks of the group of `kind` that contains `rank`:
// "tp", "cp", "dp", "pp", "ep", "shard" (HSDP shard group), "replicate", or with context
// parallelism folded in, "dp_cp" (dp x cp) and "shard_cp" (shard group x cp).
std::vector<int> GroupOf(const ClusterSpec& c, const Layout& l, int rank, std::string_view kind);

struct Plan {
  std::string model_ref;      // what the user named (built-in name or path)
  std::string cluster_ref;
  std::string workload_ref;
  ModelSpec model;
  ClusterSpec cluster;
  Workload workload;
  Layout layout;              // resolved
  MemoryOptions memory_options;
  MemoryEstimate memory;
  TimeEstimate time;
  std::string reason;         // one line: why this layout ranks where it does
  std::vector<std::string> assumed;  // layout values the command chose for keys the user left open
};

}  // namespace shardplan
