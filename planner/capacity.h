// Capacity: for each GPU kind, the smallest cluster of whole nodes that meets a training
// deadline or a serving target. Each size is priced by the layout search itself (Search(),
// the memory and time models `plan` uses), over a geometric ladder of node counts (1, 2,
// 4, ...) and then a bisection between the last size that misses and the first that meets.
// The ladder points are also the scaling curve: time (or throughput) against GPUs, with
// where scaling stops paying and why. Pure: no I/O, no clock.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "planner/search.h"

namespace shardplan {

struct CapacityTarget {
  enum class Kind {
    kTrainDeadline,  // the fewest GPUs that process `tokens` within `deadline_seconds`
    kTrainGpus,      // the time to process `tokens` on `gpus` GPUs
    kServe,          // the fewest GPUs that hold `concurrency` sequences at the speeds below
  };
  Kind kind = Kind::kTrainDeadline;
  double tokens = 0;               // training tokens
  double deadline_seconds = 0;     // kTrainDeadline
  int gpus = 0;                    // kTrainGpus: a multiple of every kind's GPUs per node
  int64_t concurrency = 0;         // kServe: sequences in flight across the cluster (the workload's
                                   // prompt_len and gen_len give their length)
  double min_tokens_per_s = 0;     // kServe: decode speed each sequence sees, tokens/s; 0 = any
  double max_ttft_seconds = 0;     // kServe: time to first token; 0 = any

  bool training() const { return kind != Kind::kServe; }
};

struct CapacityLimits {
  int max_gpus = 16384;            // the largest cluster swept (rounded down to whole nodes)
  int64_t max_global_batch_tokens = 0;  // training: the batch may grow with the cluster up to this
                                        // many tokens per step; 0 = held at the workload's
  int min_micro_batch = 1;         // training: no layout with a smaller micro-batch
};

struct GpuKind {
  ClusterSpec node;                // the node shape swept (its `nodes` is ignored)
  double price_per_gpu_hour = 0;   // US dollars; 0 = unknown
};

struct CapacityPoint {
  int nodes = 0, gpus = 0;
  int64_t global_batch = 0;        // training: sequences per step at this size
  bool on_ladder = false;          // a ladder size (the curve) rather than a bisection step
  bool has_plan = false;           // some layout fits
  Candidate plan;                  // the fastest that fits (serving: that meets the target, if one does)
  double train_seconds = 0;        // training: time to process the target's tokens
  double tokens_per_s = 0;         // training: tokens/s of the cluster; serving: generated tokens/s
  double request_tokens_per_s = 0; // serving: decode tokens/s one sequence sees
  double ttft_seconds = 0;         // serving: one prompt's prefill plus the decode step it joins
  int64_t sequences = 0;           // serving: sequences the cluster holds at once
  bool meets = false;
  std::string miss;                // why it misses: the binding constraint, or the shortfall

  double gpu_hours() const { return gpus * train_seconds / 3600; }
};

struct KindResult {
  GpuKind kind;
  std::vector<CapacityPoint> points;  // every size searched, by GPU count
  int answer = -1;                 // index of the smallest size that meets; -1 when none does
  int closest = -1;                // when none meets: the point nearest the target
  int knee = -1;                   // the first ladder point where scaling stops paying; -1 = none
  std::string scaling;             // why it stops paying there
  std::vector<std::string> advice; // when none meets: what would close the gap, with numbers
};

struct CapacityResult {
  std::vector<KindResult> kinds;
  int64_t searches = 0;            // Search() calls
  int64_t layouts = 0;             // layouts they considered
  bool meets() const;              // some kind meets the target
};

// Sweeps every kind. `base` carries the user's fixed layout keys, frameworks and memory
// options; the sweep sets the rest. `progress` (may be empty) is told (searches done, kind).
CapacityResult PlanCapacity(const ModelSpec& m, const Workload& w, const std::vector<GpuKind>& kinds,
                            const CapacityTarget& target, const CapacityLimits& limits, const SearchOptions& base,
                            const std::function<void(int64_t, const std::string&)>& progress = {});

// Training: the global batch (sequences) at `gpus` GPUs. Held at the workload's unless
// `limits` lets it grow: then doubled until it gives a sequence per 8 GPUs (Llama 3 405B ran
// 2,048 sequences of 8K on 16,384 H100s, Dubey et al. 2024, table 4), up to the cap.
int64_t GlobalBatchAt(const Workload& w, const CapacityLimits& limits, int gpus);

}  // namespace shardplan
