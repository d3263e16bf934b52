// Search: enumerates the layouts of every allowed framework, prunes with memory bounds that
// only grow as a dimension shrinks, ranks what fits by predicted tokens/s (then headroom),
// and says what came closest when nothing fits. Pure: the cost models are arguments, it
// reads no file, GPU or clock; "nothing fits" is an answer.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "planner/memory_model.h"
#include "planner/time_model.h"

namespace shardplan {

struct CostModels {
  std::function<MemoryEstimate(const ModelSpec&, const Workload&, const Layout&, const ClusterSpec&,
                               const MemoryOptions&)>
      memory = EstimateMemory;
  // The search prices thousands of layouts; it skips the per-term breakdown.
  std::function<TimeEstimate(const ModelSpec&, const Workload&, const Layout&, const ClusterSpec&)> time =
      [](const ModelSpec& m, const Workload& w, const Layout& l, const ClusterSpec& c) {
        TimeOptions o;
        o.with_terms = false;
        return EstimateTime(m, w, l, c, o);
      };
  // The plans shown carry every term.
  std::function<TimeEstimate(const ModelSpec&, const Workload&, const Layout&, const ClusterSpec&)> detailed_time =
      [](const ModelSpec& m, const Workload& w, const Layout& l, const ClusterSpec& c) { return EstimateTime(m, w, l, c); };
};

struct SearchOptions {
  int top_k = 5;
  std::vector<Framework> frameworks = {Framework::kMegatron, Framework::kTorchtitan, Framework::kDeepSpeed,
                                       Framework::kFsdp};
  Layout fixed;                      // keys with bits in `fixed.fixed` are held
  MemoryOptions memory;
  int threads = 0;                   // 0 = one per core
  int min_mbs = 1;                   // training: no micro-batch smaller than this
  bool advise = true;                // nothing fits: run the smaller searches behind `advice`
  // Called now and then with (groups done, groups total), from worker threads.
  std::function<void(int64_t, int64_t)> progress;
  // > 0: SearchResult::seen keeps the layouts priced on the way, for a chart: every fitting
  // layout on the Pareto frontier of step time and peak memory, a sample of up to `sample`
  // other fits (the same whatever the thread count), and the 16 closest misses.
  int sample = 0;
};

// A layout priced by the search, in the few numbers a chart needs.
struct SeenLayout {
  Layout layout;
  int64_t peak_bytes = 0;            // device peak of the fullest stage
  double step_seconds = 0;           // 0 for a miss (not priced for time)
  double tokens_per_second_per_gpu = 0;
  bool fits = false;
  bool pareto = false;               // no other fit is both faster and smaller
  uint64_t key = 0;                  // a hash of the layout: picks the sample
};

// Whether the search ranks this GPU's layouts by the NVIDIA-kernel proxy (Candidate::
// rank_tokens_per_second): its step time is not modelled, but it states a peak to scale.
inline bool RanksByKernelProxy(const GpuSpec& gpu) {
  return !StepTimeKnown(gpu) && (gpu.bf16_flops > 0 || gpu.fp16_flops > 0);
}

struct Candidate {
  Layout layout;
  MemoryEstimate memory;
  TimeEstimate time;
  std::string reason;
  // The speed the ranking uses: the time's tokens/s, or, on a GPU whose step time is not
  // modelled (StepTimeKnown: AMD Instinct), what NVIDIA-measured kernels would do at its
  // datasheet peaks, so plans still order by their structure (offload, recomputation,
  // communication) rather than by memory alone. Never printed as a speed.
  double rank_tokens_per_second = 0;
};

struct SearchResult {
  std::vector<Candidate> plans;      // fits, best first
  int64_t considered = 0;            // layouts looked at (priced or pruned by a bound)
  int64_t estimated = 0;             // layouts whose memory was estimated
  int64_t feasible = 0;              // layouts that fit
  bool has_closest = false;
  Candidate closest;                 // when nothing fits: the smallest overshoot
  std::string binding;               // which constraint bound the closest
  std::vector<std::string> advice;   // what would make it fit, with numbers
  std::vector<SeenLayout> seen;      // with SearchOptions::sample; fits by step time, then misses
};

// Whether the search lets each layout's step be mbs x grad_accum x dp: the workload states no
// global batch and `fixed` fixes both the micro-batch and the accumulation (a trainer's
// per-device batch and gradient_accumulation_steps). Otherwise an unstated global batch keeps
// the workload's default (256 sequences).
bool StepFollowsLayout(const Workload& w, const Layout& fixed);

SearchResult Search(const ModelSpec& m, const Workload& w, const ClusterSpec& c, const SearchOptions& opt,
                    const CostModels& models = CostModels());

// The one-line reason shown beside a plan ("TP=8 keeps its all-reduce on NVLink; ...").
std::string ExplainPlan(const ModelSpec& m, const ClusterSpec& c, const Candidate& plan, const Candidate* best);

// With `ac` left open on a framework that has no default of its own (Stack::kNative), a run
// recomputes as little as it must: the first of none, selective and full that fits, as a
// user turns recomputation on until the step fits. Returns the layout with its estimate;
// `note` (may be null) says what was chosen, empty when the layout was left as it was.
std::pair<Layout, MemoryEstimate> LeastRecomputationThatFits(const ModelSpec& m, const Workload& w, const Layout& l,
                                                            const ClusterSpec& c, const MemoryOptions& opt,
                                                            std::string* note);

}  // namespace shardplan
