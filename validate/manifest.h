// Manifest: what one rank of a plan holds and does, derived from the Plan alone -- the
// allocations it makes (one per tensor of every memory term of its pipeline stage, with the
// term's lifetime across phases) and the collectives it runs (by group, at the phase they
// run, with sizes from the layout). The memory terms are the single source of truth: the
// manifest copies their bytes and never recomputes a memory formula. Pure: no I/O.
//
// Example:
//   SP_ASSIGN_OR_RETURN(RankManifest m, BuildManifest(plan, /*rank=*/3));
//   for (const Allocation& a : m.allocations) ...  // a.term, a.bytes, a.first..a.last
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "planner/memory_model.h"
#include "planner/plan.h"
#include "planner/status.h"
#include "validate/collective.h"

namespace shardplan::validate {

// One allocation: piece `index` of the `count` equal tensors that make up a term.
struct Allocation {
  std::string term;               // MemoryTerm::name ("parameters", "activations", ...)
  int64_t index = 0;              // 0-based piece of the term
  int64_t count = 1;              // the term's `tensors`
  int64_t bytes = 0;              // term bytes / count; the first pieces take the remainder
  Phase first = Phase::kSetup;    // allocated at the start of `first` ...
  Phase last = Phase::kStep;      // ... freed at the end of `last`
  Pool pool = Pool::kTorch;       // kNonTorch: CUDA context / NCCL, which a GPU run measures
  // Lives for the whole run: allocated once at setup, freed after the last iteration.
  bool persistent() const { return first == Phase::kSetup && last == Phase::kStep; }
  bool LiveAt(Phase p) const { return first <= p && p <= last; }
};

// One collective a rank runs, in the order the phase runs them.
struct CollectiveStep {
  std::string name;               // "tp_all_reduce_fwd", "dp_reduce_scatter_grads", ...
  std::string group;              // GroupOf kind: "tp", "cp", "dp", "pp", "ep", "shard", "replicate", "dp_cp", "shard_cp"
  CollectiveKind kind = CollectiveKind::kAllReduce;
  int64_t size_bytes = 0;         // nccl-tests size (validate/collective.h)
  int elem_bytes = 2;             // bytes per element of the data type it moves
  Phase phase = Phase::kForward;
  int64_t repeat = 1;             // times per iteration in the real run (layers x micro-batches)
  int direction = 0;              // send/recv only: +1 to the next stage, -1 to the previous
  int buffer = -1;                // allocation whose memory it uses; -1 = a scratch buffer
  std::string why;                // one line: what it is and where its size comes from
};

struct RankManifest {
  int rank = 0;                   // global rank in the plan
  int stage = 0;                  // pipeline stage = pp coordinate (MakeRankMap)
  RankPlace place;
  std::vector<Allocation> allocations;
  std::vector<CollectiveStep> collectives;
  // The global ranks of each group kind the collectives use, in rank order.
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  std::array<int64_t, kPhaseCount> live_bytes{};  // sum of live allocations at each phase
  int64_t planned_device_peak = 0;  // the device bytes the estimate says this stage needs
  Phase planned_peak_phase = Phase::kSetup;
  int64_t capacity_bytes = 0;       // the plan's per-GPU capacity
  int64_t headroom_bytes = 0;       // the margin the plan requires to stay free

  const std::vector<int>* Group(const std::string& kind) const;
};

// Every rank's manifest needs only the plan and the rank. Bad input: a rank outside the
// plan's world, or a stage the estimate lacks.
StatusOr<RankManifest> BuildManifest(const Plan& plan, int rank);

// One Allocation per tensor of every term, in term order.
std::vector<Allocation> AllocationsFromTerms(const std::vector<MemoryTerm>& terms);

// Sum of the allocations live at each phase.
std::array<int64_t, kPhaseCount> LiveBytesByPhase(const std::vector<Allocation>& allocations);

// Points each collective at a torch allocation live at its phase that is large enough
// (validate/collective.h BufferBytes), preferring terms whose names suit it (activations
// for TP/CP/PP/EP traffic, gathered parameters for all-gathers, gradient buckets for
// reductions), else the smallest that fits; -1 when none does.
void AssignBuffers(const std::vector<Allocation>& allocations,
                   std::vector<CollectiveStep>* collectives);

}  // namespace shardplan::validate
