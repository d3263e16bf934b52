// Reads the published runs (bench/data/public_cases.yaml, copied from the project's research
// notes) and maps each onto shardplan's inputs: a ModelSpec from the case's dimensions, a
// ClusterSpec from its GPU and node count, a Workload and a --layout string from its training
// or serving setup, and what the source measured. The notes are prose in places, so the rules
// that read them live in case_reader.cc, each beside the field it reads. A case that lacks
// what the model needs is kept, with the reason it cannot be scored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/model_spec.h"
#include "planner/status.h"
#include "planner/workload.h"
#include "topology/cluster_spec.h"

namespace shardplan::bench {

// What a source's per-GPU memory figure is, so the matching prediction is compared.
enum class Metric {
  kNone,         // no memory figure: a fit/OOM outcome only
  kAllocated,    // torch.cuda.max_memory_allocated ("active" / "allocated")
  kReserved,     // torch.cuda.max_memory_reserved
  kDevice,       // nvidia-smi: reserved + CUDA context + NCCL + workspaces
  kUnspecified,  // the source does not say which; compared with reserved
  kWeights,      // weights a server loaded per GPU
  kKvBudget,     // bytes a vLLM-style server gave the KV cache (blocks x block bytes)
};
std::string_view MetricName(Metric m);

struct PublicCase {
  std::string id;
  std::string source;                   // repository, or the paper when there is none
  ModelSpec model;
  ClusterSpec cluster;
  Workload workload;
  std::string layout;                   // `--layout` text for ParseLayout
  Metric metric = Metric::kNone;
  int64_t measured_bytes = 0;           // per GPU; 0 when only a fit outcome is known
  int64_t measured_kv_tokens = 0;       // kKvBudget: tokens of KV cache the server reported
  std::optional<bool> fits;             // the source's outcome: ran (true) or OOM (false)
  std::vector<std::string> assumed;     // values the case does not state that the mapping chose
  std::vector<std::string> unmodelled;  // settings of the run the memory model has no term for
  std::string skip;                     // non-empty: why the case cannot be mapped
  bool recompute_unstated = false;      // the source does not say which recomputation ran
};

// Every case of the file, mapped or with `skip` set. Errors only for a file that is not a
// case list (missing, unreadable, no `cases:` sequence).
StatusOr<std::vector<PublicCase>> ReadPublicCases(const std::string& path);

}  // namespace shardplan::bench
