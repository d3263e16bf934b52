// MemoryModel: (ModelSpec, Workload, Layout, ClusterSpec) -> bytes per GPU by named term,
// per pipeline stage, with each term's lifetime across the phases of a training step (or
// of serving). The validator allocates exactly these terms (validate/manifest.h), so the
// prediction and the rehearsal share one source of truth. Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/layout.h"
#include "planner/model_spec.h"
#include "planner/workload.h"
#include "topology/cluster_spec.h"

namespace shardplan {

// Phases of one iteration, in order. A term is live from the start of `first` to the end
// of `last`. Inference uses kSetup (weights, KV cache) and kForward (prefill workspace).
// Backward is two phases: the loss's own backward, which holds the logits' gradients before
// any layer's backward has begun, then the layers' backward (re-gathered units, recomputed
// layers, activation gradients), which starts once those gradients are gone.
enum class Phase { kSetup = 0, kForward = 1, kLoss = 2, kLossBackward = 3, kBackward = 4, kStep = 5 };
constexpr int kPhaseCount = 6;
std::string_view PhaseName(Phase p);

enum class Pool {
  kTorch,    // through the PyTorch caching allocator (counts in max_memory_allocated)
  kNonTorch, // outside it: CUDA context, NCCL buffers (nvidia-smi sees them, torch does not)
  kPaged,    // CUDA unified memory (bitsandbytes paged optimizers): outside torch's allocator,
             // evicted to host memory under pressure, so it never decides a fit
  kHost,     // offloaded to pinned host memory (activation offloading): listed, never on the GPU
  kCached,   // freed, but kept by the caching allocator: in max_memory_reserved and nvidia-smi,
             // not allocated, and released (empty_cache, retry) before an allocation fails,
             // so it never decides a fit
  kStream,   // kept by the caching allocator for another CUDA stream (FSDP's all-gather and
             // reduce-scatter streams): each stream draws on blocks of its own, so these add
             // to the compute stream's reserve instead of being reused by it; like kCached,
             // released before an allocation fails, so it never decides a fit
  kFragment, // free blocks the caching allocator holds between live ones, too small for the
             // requests that come next (the bf16 logits' block among the loss's fp32 ones), or
             // the segment such a request maps (FSDP2's root grads after a chunked loss): they
             // add to the reserve grown over the live bytes; never decides a fit
};
std::string_view PoolName(Pool p);
// Whether a term of this pool is memory allocated on the GPU, by PyTorch or by the runtime:
// what the estimate's allocated and non-torch figures sum and what the validator allocates.
inline bool AllocatedOnGpu(Pool p) { return p == Pool::kTorch || p == Pool::kNonTorch; }

struct MemoryTerm {
  std::string name;        // stable key used in JSON and by the validator ("parameters", ...)
  int64_t bytes = 0;       // total bytes of the term on one GPU
  int64_t tensors = 1;     // how many equal allocations make it up (for allocator rounding)
  Phase first = Phase::kSetup;
  Phase last = Phase::kStep;
  Pool pool = Pool::kTorch;
  std::string source;      // where the formula comes from, one line
};

struct StageMemory {
  int stage = 0;
  int layers = 0;
  int first_layer = 0;         // global index of the stage's first decoder layer
  int64_t params = 0;          // parameter elements on one GPU of the stage (after TP and EP)
  int64_t unit_params = 0;     // its largest decoder layer on one GPU (an FSDP / gathered unit)
  std::vector<MemoryTerm> terms;
  int64_t allocated_peak = 0;  // max over phases of live torch bytes (max_memory_allocated)
  int64_t reserved_peak = 0;   // what the caching allocator holds when memory allows (max_memory_reserved)
  int64_t device_peak = 0;     // reserved + non-torch terms (what nvidia-smi shows)
  // What the step needs to run: allocated rounded as the caching allocator rounds, + the
  // least fragmentation, + non-torch terms. Fits and headroom are decided on it.
  int64_t required_peak = 0;
  Phase peak_phase = Phase::kSetup;  // the phase of required_peak
};

// How the PyTorch caching allocator's reserve relates to the live bytes. A step needs its
// rounded allocations plus `fragmentation`; when memory allows, the cache keeps blocks it
// cannot reuse for later requests of other sizes and grows by `cache_growth` instead. It
// never holds more than the card: an allocation that fails frees the cached blocks and
// retries (CUDACachingAllocator.cpp malloc -> release_cached_blocks), so a step that needs
// less than the card runs whatever the cache would have grown to.
struct AllocatorShare {
  double fragmentation = 0;
  double cache_growth = 0;
  int64_t capacity_bytes = 0;  // 0: no cap
};

struct InferenceMemory {
  int64_t kv_bytes_per_token = 0;      // per GPU (after TP/PP split)
  int64_t kv_bytes_per_token_model = 0;// whole model, one replica
  int64_t max_kv_tokens = 0;           // tokens whose KV fits in the vLLM-style budget
  int64_t max_concurrent_sequences = 0;// at the workload's context length
};

struct MemoryEstimate {
  std::vector<StageMemory> stages;
  int fullest_stage = 0;               // the pipeline stage whose required peak is largest
  int fullest_stage_index = 0;         // its position in `stages`
  int64_t capacity_bytes = 0;
  int64_t headroom_required_bytes = 0; // the --headroom margin
  int64_t headroom_bytes = 0;          // capacity - required peak (may be negative)
  bool fits = false;                   // GPU, host RAM and NVMe all fit (below)
  bool gpu_fits = false;               // required peak <= capacity - required headroom
  bool host_fits = true;               // per-node host bytes <= host memory; true (not
                                       // checked) when the cluster does not state host memory
  bool nvme_fits = true;               // per-node NVMe bytes <= NVMe capacity; true (not
                                       // checked) when the cluster does not state NVMe
  int64_t per_node_host_bytes = 0;     // pinned offload buffers, fp32 states, loading
  int64_t per_node_nvme_bytes = 0;
  bool inference = false;
  InferenceMemory kv;
  AllocatorShare allocator;            // how reserved and device peaks follow from the terms

  const StageMemory& fullest() const { return stages[static_cast<size_t>(fullest_stage_index)]; }
};

struct MemoryOptions {
  int64_t headroom_bytes = 2 * 1024LL * 1024 * 1024;  // default --headroom: 2 GiB kept free
  double fragmentation = -1;                          // reserved/allocated - 1; <0 = per framework
                                                      // (stated, it is both the need and the growth)
  // The search's fast path: estimate only the first and the last stage. With Megatron's
  // balanced split the first stage has the most layers and micro-batches in flight and the
  // last has the logits, so a middle stage never holds more.
  bool extreme_stages_only = false;
};

MemoryEstimate EstimateMemory(const ModelSpec& m, const Workload& w, const Layout& l,
                              const ClusterSpec& c, const MemoryOptions& opt = {});

// The live torch bytes, reserved bytes and device bytes of `stage` at phase `p`.
struct PhaseUsage {
  int64_t allocated = 0, reserved = 0, device = 0, required = 0;
};
PhaseUsage UsageAt(const StageMemory& s, Phase p, const AllocatorShare& a);

// Rounds one allocation as the PyTorch caching allocator does (memory-model.md 4.4).
int64_t RoundAllocation(int64_t bytes);

}  // namespace shardplan
