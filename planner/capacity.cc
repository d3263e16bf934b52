#include "planner/capacity.h"

#include <algorithm>
#include <cmath>

#include "planner/capacity_explain.h"
#include "planner/quantization.h"

namespace shardplan {
namespace {

// One Llama-3-405B-style sequence per this many GPUs when the batch may grow (capacity.h).
constexpr int kGpusPerSequence = 8;

struct Sweep {
  const ModelSpec& m;
  const Workload& w;
  const CapacityTarget& target;
  const CapacityLimits& limits;
  const SearchOptions& base;
  CapacityResult& result;
};

// Serving: how one plan does against the target.
void PriceServing(const Sweep& s, const ClusterSpec& c, const Workload& wk, const Candidate& cand, CapacityPoint& p) {
  const Layout& l = cand.layout;
  p.plan = cand;
  p.has_plan = true;
  p.sequences = static_cast<int64_t>(std::max(1, l.batch)) * std::max(1, l.dp);
  p.request_tokens_per_s = cand.time.step_seconds > 0 ? 1 / cand.time.step_seconds : 0;
  p.tokens_per_s = cand.time.tokens_per_second_per_gpu * c.world_size();
  // A request's first token: its own prompt's prefill on the replica, then the decode step
  // of the running batch it joins (continuous batching, as vLLM schedules it).
  Layout one = l;
  one.batch = 1;
  double prefill = 0;
  for (const TimeTerm& t : EstimateTime(s.m, wk, one, c).terms)
    if (t.name == "prefill") prefill = t.raw_seconds;
  p.ttft_seconds = prefill + cand.time.step_seconds;
  std::vector<std::string> short_of;
  if (p.sequences < s.target.concurrency) short_of.push_back(ConcurrencyShortfall(wk, cand, p.sequences, s.target.concurrency));
  if (s.target.min_tokens_per_s > 0 && p.request_tokens_per_s < s.target.min_tokens_per_s)
    short_of.push_back(Words("decode %.1f tokens/s per sequence, under the %.1f asked", p.request_tokens_per_s,
                             s.target.min_tokens_per_s));
  if (s.target.max_ttft_seconds > 0 && p.ttft_seconds > s.target.max_ttft_seconds)
    short_of.push_back(Words("time to first token %.3f s, over the %.3f s asked", p.ttft_seconds, s.target.max_ttft_seconds));
  p.meets = short_of.empty();
  p.miss.clear();
  for (const std::string& part : short_of) p.miss += (p.miss.empty() ? "" : "; ") + part;
}

CapacityPoint Evaluate(const Sweep& s, const GpuKind& kind, int nodes, int64_t batch_override = 0) {
  CapacityPoint p;
  ClusterSpec c = kind.node;
  c.nodes = nodes;
  p.nodes = nodes;
  p.gpus = c.world_size();
  Workload wk = s.w;
  SearchOptions o = s.base;
  o.advise = false;
  o.progress = nullptr;
  if (s.target.training()) {
    wk.global_batch = batch_override > 0 ? batch_override : GlobalBatchAt(s.w, s.limits, p.gpus);
    p.global_batch = wk.global_batch;
    o.top_k = 1;
    o.min_mbs = s.limits.min_micro_batch;
  } else {
    wk.inference.batch = s.target.concurrency;
    // Capacity at the formats the user serves; lower precision is advice, not an answer.
    if (!(o.fixed.fixed & kKeyWeights)) o.fixed.weights = ServedFormat(s.m, s.w.inference.weights);
    if (!(o.fixed.fixed & kKeyKvCache)) o.fixed.kv_cache = s.w.inference.kv_cache;
    o.fixed.fixed |= kKeyWeights | kKeyKvCache;
    o.top_k = 64;  // every tensor/pipeline split, so the one that meets the target is among them
  }
  SearchResult r = Search(s.m, wk, c, o);
  ++s.result.searches;
  s.result.layouts += r.considered;
  if (r.plans.empty()) {
    p.miss = "nothing fits: " + r.binding;
    return p;
  }
  if (s.target.training()) {
    p.plan = std::move(r.plans.front());
    p.has_plan = true;
    p.tokens_per_s = p.plan.time.tokens_per_second_per_gpu * p.gpus;
    p.train_seconds = p.tokens_per_s > 0 ? s.target.tokens / p.tokens_per_s : INFINITY;
    p.meets = s.target.kind == CapacityTarget::Kind::kTrainGpus || p.train_seconds <= s.target.deadline_seconds;
    if (!p.meets)
      p.miss = Words("%.1f days, over the %.1f-day deadline", p.train_seconds / 86400, s.target.deadline_seconds / 86400);
    return p;
  }
  // Serving: the fastest plan that meets every constraint, else the one holding the most.
  CapacityPoint best;
  for (const Candidate& cand : r.plans) {
    CapacityPoint q = p;
    PriceServing(s, c, wk, cand, q);
    if (q.meets) return q;
    if (!best.has_plan || q.sequences > best.sequences) best = std::move(q);
  }
  return best;
}

std::vector<int> Ladder(int max_nodes) {
  std::vector<int> v;
  for (int n = 1; n < max_nodes; n *= 2) v.push_back(n);
  v.push_back(max_nodes);
  return v;
}

KindResult SweepKind(const Sweep& s, const GpuKind& kind,
                     const std::function<void(int64_t, const std::string&)>& progress) {
  KindResult k;
  k.kind = kind;
  // A training target is a time; a GPU whose step time is not modelled cannot meet or miss it.
  if (s.target.training() && !StepTimeKnown(kind.node.gpu)) {
    k.advice.push_back("step time not modelled for " + kind.node.gpu.display_name +
                       " (kernel efficiencies are measured on NVIDIA GPUs); shardplan plan answers whether a layout fits");
    return k;
  }
  const int gpn = std::max(1, kind.node.gpus_per_node);
  int max_nodes = std::max(1, (s.target.kind == CapacityTarget::Kind::kTrainGpus ? s.target.gpus : s.limits.max_gpus) / gpn);
  // A node shape with no network between nodes (a workstation) cannot grow past one.
  if (kind.node.inter_node.bandwidth <= 0 || kind.node.inter_node.fabric == "none") max_nodes = 1;
  auto add = [&](CapacityPoint p, bool ladder) {
    p.on_ladder = ladder;
    k.points.push_back(std::move(p));
    if (progress) progress(s.result.searches, kind.node.gpu.name);
  };
  int first_meet = -1, last_miss = -1;  // node counts
  for (int n : Ladder(max_nodes)) {
    add(Evaluate(s, kind, n), true);
    if (k.points.back().meets && first_meet < 0) first_meet = n;
    if (first_meet < 0) last_miss = n;
  }
  if (s.target.kind != CapacityTarget::Kind::kTrainGpus && first_meet > 0 && last_miss > 0) {
    int lo = last_miss, hi = first_meet;  // lo misses, hi meets
    while (hi - lo > 1) {
      const int mid = lo + (hi - lo) / 2;
      add(Evaluate(s, kind, mid), false);
      (k.points.back().meets ? hi : lo) = mid;
    }
    first_meet = hi;
  }
  std::sort(k.points.begin(), k.points.end(), [](const CapacityPoint& a, const CapacityPoint& b) { return a.nodes < b.nodes; });
  for (size_t i = 0; i < k.points.size(); ++i) {
    const CapacityPoint& p = k.points[i];
    const bool answer = s.target.kind == CapacityTarget::Kind::kTrainGpus ? p.nodes == max_nodes && p.has_plan
                                                                          : p.nodes == first_meet;
    if (answer) k.answer = static_cast<int>(i);
  }
  FindKnee(s.target, k);
  if (k.answer < 0) {
    k.closest = Closest(s.target, k);
    Advise(s.target, s.w.seq_len, k, [&](int nodes, int64_t batch) { return Evaluate(s, kind, nodes, batch); });
  }
  return k;
}

}  // namespace

bool CapacityResult::meets() const {
  for (const KindResult& k : kinds)
    if (k.answer >= 0) return true;
  return false;
}

int64_t GlobalBatchAt(const Workload& w, const CapacityLimits& limits, int gpus) {
  const int64_t seq = std::max<int64_t>(1, w.seq_len);
  if (limits.max_global_batch_tokens <= 0) return w.global_batch;
  const int64_t cap = std::max<int64_t>(1, limits.max_global_batch_tokens / seq);
  int64_t b = w.global_batch;
  while (b * kGpusPerSequence < gpus && b * 2 <= cap) b *= 2;
  return std::min(b, cap);
}

CapacityResult PlanCapacity(const ModelSpec& m, const Workload& w, const std::vector<GpuKind>& kinds,
                            const CapacityTarget& target, const CapacityLimits& limits, const SearchOptions& base,
                            const std::function<void(int64_t, const std::string&)>& progress) {
  CapacityResult result;
  const Sweep s{m, w, target, limits, base, result};
  for (const GpuKind& kind : kinds) result.kinds.push_back(SweepKind(s, kind, progress));
  AdviseOtherKinds(result);
  return result;
}

}  // namespace shardplan
