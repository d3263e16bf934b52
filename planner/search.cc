#include "planner/search.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <thread>

#include "planner/search_space.h"

namespace shardplan {
namespace {

// Ordered so that memory only grows along each inner loop: full recomputation first,
// micro-batches ascending. When the cheapest variant of a group does not fit, none will.
constexpr Recompute kRecomputeOrder[] = {Recompute::kFull, Recompute::kSelective, Recompute::kNone};

// How far a layout is from fitting: GPU bytes over the budget, or, when its GPUs fit,
// the host or NVMe bytes it lacks (weighted lightly so GPU-bound misses rank first).
int64_t Overshoot(const MemoryEstimate& e) {
  int64_t gpu = e.fullest().required_peak - (e.capacity_bytes - e.headroom_required_bytes);
  if (gpu > 0) return gpu;
  int64_t host = e.host_fits ? 0 : e.per_node_host_bytes;
  int64_t nvme = e.nvme_fits ? 0 : e.per_node_nvme_bytes;
  return (host + nvme) / 64;
}

int64_t SpeedBucket(const Candidate& c) {
  const double tps = c.rank_tokens_per_second;
  return tps > 0 ? static_cast<int64_t>(std::floor(std::log(tps) / std::log(1.01))) : INT64_MIN;
}

bool Better(const Candidate& a, const Candidate& b) {
  // Serving keeps the user's weight and KV formats when they fit; lower precision is the
  // fallback, not a speed trick.
  if (a.memory.inference) {
    if (a.layout.weights != b.layout.weights) return DtypeBytes(a.layout.weights) > DtypeBytes(b.layout.weights);
    if (a.layout.kv_cache != b.layout.kv_cache) return DtypeBytes(a.layout.kv_cache) > DtypeBytes(b.layout.kv_cache);
  }
  // Speeds within about 1% are a tie (the time model is not that precise): the tie goes to
  // the plan with more memory left. Buckets keep the order a strict weak ordering.
  const int64_t sa = SpeedBucket(a), sb = SpeedBucket(b);
  if (sa != sb) return sa > sb;
  if (a.memory.headroom_bytes != b.memory.headroom_bytes) return a.memory.headroom_bytes > b.memory.headroom_bytes;
  return a.rank_tokens_per_second > b.rank_tokens_per_second;
}

// The cluster the ranking prices a GPU without a modelled step time on: the same datasheet
// peaks under NVIDIA's measured kernel efficiencies (Hopper's where it has no compute
// capability). Unused where the step time is known, or where there is no peak to scale.
ClusterSpec RankingCluster(const ClusterSpec& c) {
  ClusterSpec proxy = c;
  proxy.gpu.vendor = "nvidia";
  if (proxy.gpu.compute_capability == 0) proxy.gpu.compute_capability = 90;
  return proxy;
}

// A layout's hash (FNV-1a of its string): which fits the sample keeps, independent of the
// order in which threads price them.
uint64_t LayoutKey(const Layout& l) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : FormatLayout(l)) h = (h ^ ch) * 1099511628211ull;
  return h;
}

// Faster or equal and smaller or equal; between equals, the smaller key (so the frontier
// does not depend on which thread priced a layout first).
bool Dominates(const SeenLayout& a, const SeenLayout& b) {
  if (a.step_seconds > b.step_seconds || a.peak_bytes > b.peak_bytes) return false;
  return a.step_seconds < b.step_seconds || a.peak_bytes < b.peak_bytes || a.key < b.key;
}

constexpr size_t kClosestMisses = 16;

// What a search saw, bounded: the Pareto frontier of fits, the fits with the smallest keys,
// the misses that came closest. Merging two collectors gives what one would have kept.
struct Seen {
  size_t sample = 0;
  std::vector<SeenLayout> frontier, kept, misses;

  void Fit(const SeenLayout& s) {
    Frontier(s);
    Keep(s);
  }
  void Frontier(const SeenLayout& s) {
    if (std::none_of(frontier.begin(), frontier.end(),
                     [&](const SeenLayout& f) { return f.key == s.key || Dominates(f, s); })) {
      std::erase_if(frontier, [&](const SeenLayout& f) { return Dominates(s, f); });
      frontier.push_back(s);
    }
  }
  void Keep(SeenLayout s) {
    auto by_key = [](const SeenLayout& a, const SeenLayout& b) { return a.key < b.key; };  // max-heap on key
    if (kept.size() < sample) {
      kept.push_back(std::move(s));
      std::push_heap(kept.begin(), kept.end(), by_key);
    } else if (!kept.empty() && s.key < kept.front().key) {
      std::pop_heap(kept.begin(), kept.end(), by_key);
      kept.back() = std::move(s);
      std::push_heap(kept.begin(), kept.end(), by_key);
    }
  }
  void Miss(SeenLayout s) {
    auto closer = [](const SeenLayout& a, const SeenLayout& b) {
      return a.peak_bytes != b.peak_bytes ? a.peak_bytes < b.peak_bytes : a.key < b.key;
    };
    if (misses.size() >= kClosestMisses && !closer(s, misses.back())) return;
    misses.insert(std::upper_bound(misses.begin(), misses.end(), s, closer), std::move(s));
    if (misses.size() > kClosestMisses) misses.pop_back();
  }
  void Merge(const Seen& o) {
    for (const SeenLayout& s : o.frontier) Frontier(s);
    for (const SeenLayout& s : o.kept) Keep(s);
    for (const SeenLayout& s : o.misses) Miss(s);
  }
  std::vector<SeenLayout> Result() const {
    std::vector<SeenLayout> out;
    for (const SeenLayout& f : frontier) out.push_back(f), out.back().pareto = true;
    for (const SeenLayout& k : kept)
      if (std::none_of(frontier.begin(), frontier.end(), [&](const SeenLayout& f) { return f.key == k.key; }))
        out.push_back(k);
    std::sort(out.begin(), out.end(), [](const SeenLayout& a, const SeenLayout& b) {
      return a.step_seconds != b.step_seconds ? a.step_seconds < b.step_seconds : a.key < b.key;
    });
    out.insert(out.end(), misses.begin(), misses.end());
    return out;
  }
};

struct Worker {
  // Prices on the fast path (first and last stage) and keeps `keep` best candidates.
  Worker(const ModelSpec& m, const Workload& w, const ClusterSpec& c, const SearchOptions& opt,
         const CostModels& models, size_t keep)
      : m(m), w(w), c(c), opt(opt), models(models), fast(opt.memory), keep(keep), ranking(RankingCluster(c)),
        proxy_ranking(RanksByKernelProxy(c.gpu)) {
    fast.extreme_stages_only = true;
  }

  const ModelSpec& m;
  const Workload& w;
  const ClusterSpec& c;
  const SearchOptions& opt;
  const CostModels& models;
  MemoryOptions fast;
  std::vector<Candidate> best;  // kept sorted, at most `keep` entries
  size_t keep = 0;
  int64_t considered = 0, estimated = 0, feasible = 0;
  bool has_closest = false;
  Candidate closest;
  Seen seen;
  ClusterSpec ranking;  // RankingCluster(c)
  bool proxy_ranking = false;

  void Offer(Candidate&& cand) {
    if (best.size() >= keep && !Better(cand, best.back())) return;
    auto at = std::upper_bound(best.begin(), best.end(), cand, Better);
    best.insert(at, std::move(cand));
    if (best.size() > keep) best.pop_back();
  }

  void Miss(const Layout& l, MemoryEstimate&& e) {
    if (has_closest && Overshoot(e) >= Overshoot(closest.memory)) return;
    has_closest = true;
    closest.layout = l;
    closest.memory = std::move(e);
  }

  enum class Outcome { kInvalid, kNoFit, kFit };

  // Prices one layout: kInvalid when it breaks a framework rule.
  Outcome Try(const Layout& raw) {
    ++considered;
    auto l = ResolveLayout(m, w, c, raw);
    if (!l.ok() || !StackRunsLayout(*l, w)) return Outcome::kInvalid;
    ++estimated;
    MemoryEstimate e = models.memory(m, w, *l, c, fast);
    if (!e.fits) {
      if (opt.sample > 0) seen.Miss({*l, e.fullest().required_peak, 0, 0, false, false, LayoutKey(*l)});
      Miss(*l, std::move(e));
      return Outcome::kNoFit;
    }
    ++feasible;
    Candidate cand{*l, std::move(e), models.time(m, w, *l, c), {}};
    cand.rank_tokens_per_second =
        proxy_ranking ? models.time(m, w, *l, ranking).tokens_per_second_per_gpu : cand.time.tokens_per_second_per_gpu;
    if (opt.sample > 0)
      seen.Fit({*l, cand.memory.fullest().required_peak, cand.time.step_seconds, cand.time.tokens_per_second_per_gpu, true,
                false, LayoutKey(*l)});
    Offer(std::move(cand));
    return Outcome::kFit;
  }

  void TrainingGroup(const Layout& g, const SearchSpace& space) {
    const std::vector<int> mbs = space.MicroBatches(g);
    bool any_fit = false, any_priced = false;
    for (Recompute ac : kRecomputeOrder) {
      if ((opt.fixed.fixed & kKeyAc) && ac != opt.fixed.ac) continue;
      size_t tried = 0;
      for (int b : mbs) {
        Layout l = g;
        l.ac = ac;
        l.mbs = b;
        l.fixed |= kKeyAc | kKeyMbs;
        ++tried;
        Outcome o = Try(l);
        any_priced |= o != Outcome::kInvalid;
        if (o == Outcome::kNoFit) break;  // a larger micro-batch holds more activations
        any_fit |= o == Outcome::kFit;
      }
      considered += static_cast<int64_t>(mbs.size() - tried);  // pruned by the bound
      // Less recomputation holds more; but where full recomputation is not what the stack runs
      // (LitGPT on one GPU), nothing was priced and the others are still to try.
      if (!any_fit && any_priced && ac == Recompute::kFull && !(opt.fixed.fixed & kKeyAc)) {
        considered += static_cast<int64_t>(mbs.size()) * 2;  // selective and none hold more
        return;
      }
    }
  }

  void InferenceGroup(const Layout& g, const SearchSpace& space) {
    const std::vector<int> batches = space.Batches(g);  // descending
    for (size_t i = 0; i < batches.size(); ++i) {
      Layout l = g;
      l.batch = batches[i];
      l.fixed |= kKeyBatch;
      if (Try(l) == Outcome::kFit) {
        considered += static_cast<int64_t>(batches.size() - i - 1);  // smaller batches: slower, dominated
        return;
      }
    }
  }
};

}  // namespace

bool StepFollowsLayout(const Workload& w, const Layout& fixed) {
  return w.training() && !w.global_batch_stated && (fixed.fixed & kKeyMbs) && (fixed.fixed & kKeyGradAccum);
}

SearchResult Search(const ModelSpec& m, const Workload& stated, const ClusterSpec& c, const SearchOptions& opt,
                    const CostModels& models) {
  // The search needs a step size to split into micro-batches (StepFollowsLayout): where each
  // layout takes its own, every dp the cluster allows has a sequence per replica.
  Workload w = stated;
  const bool per_layout_step = StepFollowsLayout(stated, opt.fixed);
  w.global_batch_stated = !per_layout_step;
  if (per_layout_step) w.global_batch = std::max<int64_t>(w.global_batch, c.world_size());
  const SearchSpace space(m, w, c, opt);
  const std::vector<Layout> groups = space.Groups();
  int threads = opt.threads > 0 ? opt.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::max(1, std::min<int>(threads, static_cast<int>(groups.size() / 8) + 1));
  std::vector<Worker> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back(m, w, c, opt, models, static_cast<size_t>(std::max(1, opt.top_k) * 8));
    workers.back().seen.sample = static_cast<size_t>(std::max(0, opt.sample));
  }
  std::atomic<int64_t> next{0};
  auto run = [&](Worker& wk) {
    for (int64_t i = next++; i < static_cast<int64_t>(groups.size()); i = next++) {
      if (w.training()) wk.TrainingGroup(groups[static_cast<size_t>(i)], space);
      else wk.InferenceGroup(groups[static_cast<size_t>(i)], space);
      if (opt.progress && (i % 64) == 0) opt.progress(i, static_cast<int64_t>(groups.size()));
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(run, std::ref(workers[static_cast<size_t>(t)]));
  run(workers[0]);
  for (auto& th : pool) th.join();

  SearchResult r;
  std::vector<Candidate> all;
  Seen seen;
  seen.sample = static_cast<size_t>(std::max(0, opt.sample));
  for (Worker& wk : workers) {
    seen.Merge(wk.seen);
    r.considered += wk.considered;
    r.estimated += wk.estimated;
    r.feasible += wk.feasible;
    for (Candidate& cand : wk.best) all.push_back(std::move(cand));
    if (wk.has_closest && (!r.has_closest || Overshoot(wk.closest.memory) < Overshoot(r.closest.memory))) {
      r.has_closest = true;
      r.closest = std::move(wk.closest);
    }
  }
  std::sort(all.begin(), all.end(), Better);
  for (Candidate& cand : all) {
    if (static_cast<int>(r.plans.size()) >= opt.top_k) break;
    // The fast path priced two stages; the plans shown carry every stage.
    cand.memory = models.memory(m, w, cand.layout, c, opt.memory);
    cand.time = models.detailed_time(m, w, cand.layout, c);
    r.plans.push_back(std::move(cand));
  }
  if (opt.sample > 0) r.seen = seen.Result();
  for (Candidate& p : r.plans) p.reason = ExplainPlan(m, c, p, r.plans.empty() ? nullptr : &r.plans.front());
  if (r.plans.empty()) ExplainMiss(m, w, c, opt, models, r);
  return r;
}

namespace {

// The fewest layers, 1 to `most`, that full recomputation must cover for `l` to fit, given
// that `most` fits: memory falls as more blocks recompute.
int FewestRecomputedLayers(const ModelSpec& m, const Workload& w, Layout l, const ClusterSpec& c,
                           const MemoryOptions& opt, int most) {
  int lo = 1, hi = most;
  while (lo < hi) {
    l.ac_layers = (lo + hi) / 2;
    if (EstimateMemory(m, w, l, c, opt).fits) hi = l.ac_layers;
    else lo = l.ac_layers + 1;
  }
  return hi;
}

}  // namespace

std::pair<Layout, MemoryEstimate> LeastRecomputationThatFits(const ModelSpec& m, const Workload& w, const Layout& l,
                                                            const ClusterSpec& c, const MemoryOptions& opt,
                                                            std::string* note) {
  if (note) note->clear();
  // fms-fsdp's selective checkpointing wraps a fraction of the blocks in full checkpointing
  // (selective_checkpointing, policies/ac_handler.py): unstated, the fewest blocks that fit.
  if (w.training() && l.stack == Stack::kFmsFsdp && l.ac == Recompute::kSelective && !(l.fixed & kKeyAcLayers)) {
    Layout tried = l;
    tried.ac = Recompute::kFull;
    tried.ac_layers = static_cast<int>(m.layers);
    MemoryEstimate e = EstimateMemory(m, w, tried, c, opt);
    if (e.fits) {
      tried.ac_layers = FewestRecomputedLayers(m, w, tried, c, opt, tried.ac_layers);
      e = EstimateMemory(m, w, tried, c, opt);
    }
    if (note)
      *note = "ac: selective is fms-fsdp's block checkpointing: " + std::to_string(tried.ac_layers) + " of " +
              std::to_string(m.layers) + " blocks recompute, " +
              (e.fits ? "the fewest that fit (say ac=full,ac_layers=N for your selective_checkpointing)" : "all, and it still does not fit");
    return {tried, std::move(e)};
  }
  // Stacks whose recipes set recomputation (torchtune, Unsloth, HF, AutoModel, LitGPT) keep theirs.
  const bool own_default = l.stack == Stack::kTorchtune || l.stack == Stack::kUnsloth || l.stack == Stack::kHf ||
                           l.stack == Stack::kAutomodel || l.stack == Stack::kLitgpt;
  if (!w.training() || (l.fixed & kKeyAc) || own_default)
    return {l, EstimateMemory(m, w, l, c, opt)};
  // Where full (and block) recomputation is ruled out, selective is the most there is.
  const Recompute most = FullRecomputeAllowed(l) ? Recompute::kFull : Recompute::kSelective;
  for (Recompute ac : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    Layout tried = l;
    tried.ac = ac;
    MemoryEstimate e = EstimateMemory(m, w, tried, c, opt);
    // Megatron recomputes whole blocks for only the first --recompute-num-layers of each
    // stage (--recompute-method block), which NeMo and Megatron-Bridge recipes use: the fewest
    // per stage that fit, before every layer.
    if (ac == Recompute::kFull && l.framework == Framework::kMegatron && !(l.fixed & kKeyAcLayers) && e.fits) {
      const std::vector<int> layers = StageLayers(m, l);
      const int most = *std::max_element(layers.begin(), layers.end());
      const int fewest = FewestRecomputedLayers(m, w, tried, c, opt, most);
      tried.ac_layers = fewest == most ? 0 : fewest;
      if (tried.ac_layers > 0) {
        e = EstimateMemory(m, w, tried, c, opt);
        if (note)
          *note = "ac: full, ac_layers " + std::to_string(tried.ac_layers) +
                  " (not stated; the least recomputation that fits: whole blocks for that many layers of each "
                  "stage, Megatron's --recompute-method block)";
        return {tried, std::move(e)};
      }
    }
    if (!e.fits && ac != most) continue;
    if (note && (ac != l.ac || ac != Recompute::kNone))
      *note = "ac: " + std::string(RecomputeName(ac)) +
              (e.fits                    ? " (not stated; the least recomputation that fits)"
               : most == Recompute::kFull ? " (not stated; even full recomputation does not fit)"
                                          : " (not stated; ep_overlap rules out full recomputation, and selective does not fit)");
    return {tried, std::move(e)};
  }
  return {l, EstimateMemory(m, w, l, c, opt)};  // not reached: `most` always returns
}

}  // namespace shardplan
