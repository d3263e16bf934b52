// Words for capacity's answers: where scaling stops paying and why, which point of a sweep
// came closest, and what would close the gap when no size meets the target. Internal to
// planner/capacity.cc.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

#include "planner/capacity.h"

namespace shardplan {

// printf into a string (the messages carry numbers).
template <typename... Args>
std::string Words(const char* format, Args... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}

// Serving: why a plan holds `held` of `wanted` sequences (the KV cache binds).
std::string ConcurrencyShortfall(const Workload& w, const Candidate& plan, int64_t held, int64_t wanted);

// Sets k.knee and k.scaling: the first ladder step where doubling the GPUs buys less than
// a 1.5x speed-up (75% efficiency), and which term grew: communication, the pipeline
// bubble, or a batch too small per GPU.
void FindKnee(const CapacityTarget& t, KindResult& k);

// The point nearest the target when none meets it: training's fastest, serving's fullest.
int Closest(const CapacityTarget& t, const KindResult& k);

// Fills k.advice (`seq_len`: training tokens per sequence). `evaluate(nodes, global_batch)` prices one more size (global_batch 0 =
// the sweep's), for the advice that tries a larger batch.
void Advise(const CapacityTarget& t, int64_t seq_len, KindResult& k,
            const std::function<CapacityPoint(int, int64_t)>& evaluate);

// A kind that meets nothing is told which other kind meets the target, on the fewest GPUs.
void AdviseOtherKinds(CapacityResult& r);

}  // namespace shardplan
