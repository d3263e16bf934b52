#include "planner/capacity_explain.h"

#include <cmath>

#include "planner/strings.h"
#include "planner/units.h"

namespace shardplan {
namespace {

// Doubling the GPUs must buy at least a 1.5x speed-up to count as paying.
constexpr double kPays = 0.75;

double Share(const Candidate& c, std::initializer_list<const char*> names) {
  double s = 0;
  for (const TimeTerm& t : c.time.terms)
    for (const char* n : names)
      if (t.name == n) s += t.seconds;
  return c.time.step_seconds > 0 ? s / c.time.step_seconds : 0;
}

// The exposed communication term that takes most of the step.
std::string LargestComm(const Candidate& c) {
  const TimeTerm* big = nullptr;
  for (const TimeTerm& t : c.time.terms)
    if (t.name.find("comm") != std::string::npos || t.name == "pp_p2p")
      if (!big || t.seconds > big->seconds) big = &t;
  return big ? big->name : "communication";
}

double Pct(double x) { return 100 * x; }

std::string TrainingWhy(const CapacityPoint& a, const CapacityPoint& b) {
  static const std::initializer_list<const char*> kComm = {"tp_comm", "cp_comm", "ep_comm", "dp_comm", "pp_p2p"};
  const double comm_a = Share(a.plan, kComm), comm_b = Share(b.plan, kComm);
  const double bubble_a = Share(a.plan, {"pp_bubble"}), bubble_b = Share(b.plan, {"pp_bubble"});
  const Layout& l = b.plan.layout;
  if (bubble_b - bubble_a >= comm_b - comm_a && bubble_b - bubble_a > 0.03)
    return Words("pipeline bubble: %.0f%% of the step (%.0f%% at %d GPUs); %lld sequences per step leave %lld "
                 "micro-batches per replica for pp=%d",
                 Pct(bubble_b), Pct(bubble_a), a.gpus, static_cast<long long>(b.global_batch),
                 static_cast<long long>(l.grad_accum), l.pp);
  if (comm_b - comm_a > 0.03)
    return Words("communication-bound: %s and the other exposed collectives take %.0f%% of the step (%.0f%% at %d GPUs)",
                 LargestComm(b.plan).c_str(), Pct(comm_b), Pct(comm_a), a.gpus);
  const double tokens_a = static_cast<double>(a.global_batch) / a.gpus, tokens_b = static_cast<double>(b.global_batch) / b.gpus;
  return Words("batch too small per GPU: %.3g sequences per GPU per step (%.3g at %d GPUs), so the matrix multiplies "
               "shrink and MFU falls to %.0f%% (%.0f%%)",
               tokens_b, tokens_a, a.gpus, Pct(b.plan.time.mfu), Pct(a.plan.time.mfu));
}

std::string ServingWhy(const CapacityPoint& a, const CapacityPoint& b) {
  const Layout& la = a.plan.layout;
  const Layout& lb = b.plan.layout;
  const double comm_a = Share(a.plan, {"tp_comm"}), comm_b = Share(b.plan, {"tp_comm"});
  if (comm_b - comm_a > 0.05)
    return Words("communication-bound: tp_comm takes %.0f%% of a decode step (%.0f%% at %d GPUs)", Pct(comm_b), Pct(comm_a), a.gpus);
  if (lb.batch < la.batch || lb.batch <= 1)
    return Words("batch too small per GPU: %d sequences per replica (%d at %d GPUs); a decode step reads every weight "
                 "however few sequences share it",
                 lb.batch, la.batch, a.gpus);
  return Words("pipeline: pp=%d stages decode one after another", lb.pp);
}

}  // namespace

std::string ConcurrencyShortfall(const Workload& w, const Candidate& plan, int64_t held, int64_t wanted) {
  const MemoryEstimate& e = plan.memory;
  const double per_seq = static_cast<double>(e.kv.kv_bytes_per_token) * static_cast<double>(w.context_len());
  return Words("KV cache binds: holds %lld of %lld sequences (%.2f GiB of KV per sequence of %s tokens on each GPU; "
               "%d per replica fit beside the weights)",
               static_cast<long long>(held), static_cast<long long>(wanted), per_seq / kGiB,
               Thousands(w.context_len()).c_str(), plan.layout.batch);
}

void FindKnee(const CapacityTarget& t, KindResult& k) {
  const CapacityPoint* prev = nullptr;
  for (size_t i = 0; i < k.points.size(); ++i) {
    const CapacityPoint& p = k.points[i];
    if (!p.on_ladder) continue;
    if (!p.has_plan) {
      if (prev) {
        k.knee = static_cast<int>(i);
        k.scaling = Words("past %d GPUs no layout runs at %d: ", prev->gpus, p.gpus) + p.miss;
        return;
      }
      continue;
    }
    if (prev && prev->tokens_per_s > 0) {
      const double speedup = p.tokens_per_s / prev->tokens_per_s;
      const double efficiency = speedup * prev->gpus / p.gpus;
      if (efficiency < kPays) {
        k.knee = static_cast<int>(i);
        k.scaling = Words("scaling stops paying past %d GPUs: %d GPUs run %.2fx as fast (%.0f%% efficient); ", prev->gpus,
                          p.gpus, speedup, Pct(efficiency)) +
                    (t.training() ? TrainingWhy(*prev, p) : ServingWhy(*prev, p));
        return;
      }
    }
    prev = &p;
  }
}

int Closest(const CapacityTarget& t, const KindResult& k) {
  int best = -1;
  for (size_t i = 0; i < k.points.size(); ++i) {
    const CapacityPoint& p = k.points[i];
    if (!p.has_plan) continue;
    if (best < 0) {
      best = static_cast<int>(i);
      continue;
    }
    const CapacityPoint& b = k.points[static_cast<size_t>(best)];
    const bool better = t.training() ? p.train_seconds < b.train_seconds
                                     : p.sequences > b.sequences ||
                                           (p.sequences == b.sequences && p.request_tokens_per_s > b.request_tokens_per_s);
    if (better) best = static_cast<int>(i);
  }
  return best >= 0 ? best : static_cast<int>(k.points.size()) - 1;
}

void Advise(const CapacityTarget& t, int64_t seq_len, KindResult& k,
            const std::function<CapacityPoint(int, int64_t)>& evaluate) {
  if (k.closest < 0) return;
  const CapacityPoint& c = k.points[static_cast<size_t>(k.closest)];
  const CapacityPoint& last = k.points.back();
  if (!c.has_plan) {
    k.advice.push_back(Words("nothing fits up to %d GPUs (", last.gpus) + last.miss +
                       "); a GPU with more memory, a shorter sequence or more GPUs (--max-gpus)");
    return;
  }
  if (!t.training()) {
    k.advice.push_back(Words("closest: %d GPUs: ", c.gpus) + c.miss);
    if (c.sequences < t.concurrency)
      k.advice.push_back("a smaller KV cache: kv_cache: fp8 in the workload halves its bytes per token, or a GPU with more memory");
    if (k.knee < 0 && k.closest + 1 == static_cast<int>(k.points.size()))
      k.advice.push_back(Words("more GPUs: still improving at %d GPUs, the --max-gpus cap", c.gpus));
    return;
  }
  if (t.kind == CapacityTarget::Kind::kTrainDeadline)
    k.advice.push_back(Words("more time: the fastest size swept, %s GPUs, takes %.1f days (the deadline is %.1f)",
                             Thousands(c.gpus).c_str(), c.train_seconds / 86400, t.deadline_seconds / 86400));
  const int64_t bigger = c.global_batch * 2;
  if (bigger <= (int64_t{1} << 30)) {
    const CapacityPoint b = evaluate(c.nodes, bigger);
    if (b.has_plan && b.train_seconds < c.train_seconds) {
      const bool meets = t.kind == CapacityTarget::Kind::kTrainDeadline && b.train_seconds <= t.deadline_seconds;
      k.advice.push_back(Words("a larger batch: %s sequences per step take %.1f days on %s GPUs", Thousands(bigger).c_str(),
                               b.train_seconds / 86400, Thousands(c.gpus).c_str()) +
                         (meets ? Words(" and meet the deadline (--max-global-batch %.4gM tokens)",
                                        static_cast<double>(bigger * seq_len) / 1e6)
                                : std::string()));
    }
  }
  if (t.kind == CapacityTarget::Kind::kTrainDeadline && k.knee < 0 && k.closest + 1 == static_cast<int>(k.points.size())) {
    const double needed = c.gpus * c.train_seconds / t.deadline_seconds;
    k.advice.push_back(Words("more GPUs: still scaling at %s GPUs (the --max-gpus cap); about %s GPUs at that efficiency",
                             Thousands(c.gpus).c_str(), Thousands(static_cast<long long>(std::ceil(needed))).c_str()));
  }
}

void AdviseOtherKinds(CapacityResult& r) {
  const KindResult* best = nullptr;
  for (const KindResult& k : r.kinds)
    if (k.answer >= 0 && (!best || k.points[static_cast<size_t>(k.answer)].gpus < best->points[static_cast<size_t>(best->answer)].gpus))
      best = &k;
  if (!best) return;
  for (KindResult& k : r.kinds)
    if (k.answer < 0)
      k.advice.push_back(Words("another GPU: %s meets it with %s GPUs", best->kind.node.gpu.name.c_str(),
                               Thousands(best->points[static_cast<size_t>(best->answer)].gpus).c_str()));
}

}  // namespace shardplan
