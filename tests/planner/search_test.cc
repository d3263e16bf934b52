// The search on small fake clusters and on real ones: what it returns, what it prunes,
// that fixed keys are held and that "nothing fits" explains itself.
#include <gtest/gtest.h>

#include "planner/io/model_reader.h"
#include "planner/search.h"
#include "topology/cluster_reader.h"
#include "topology/gpu_catalog.h"

namespace shardplan {
namespace {

Workload Train(int64_t seq, int64_t batch) {
  Workload w;
  w.seq_len = seq;
  w.global_batch = batch;
  return w;
}

// An MI300X node: no step time is printed, yet the plans come in the order the same peaks
// under NVIDIA-measured kernels give, not by memory alone (which would put CPU offload and
// full recomputation first).
TEST(Search, AmdPlansRankByTheKernelProxyWithoutATime) {
  ModelSpec m = *LoadModel("llama-3.1-8b");
  ClusterSpec amd = *LoadCluster("dgx-h100");
  amd.gpu = *CatalogGpu("mi300x-192gb");
  ClusterSpec proxy = amd;
  proxy.gpu.vendor = "nvidia";
  proxy.gpu.compute_capability = 90;
  SearchOptions opt;
  opt.top_k = 5;
  SearchResult a = Search(m, Train(4096, 64), amd, opt);
  SearchResult n = Search(m, Train(4096, 64), proxy, opt);
  ASSERT_EQ(a.plans.size(), n.plans.size());
  for (size_t i = 0; i < a.plans.size(); ++i) {
    EXPECT_EQ(FormatLayout(a.plans[i].layout), FormatLayout(n.plans[i].layout)) << i;
    EXPECT_EQ(a.plans[i].time.tokens_per_second_per_gpu, 0) << i;
  }
  EXPECT_EQ(a.plans.front().layout.offload_optimizer, Offload::kNone);
}

TEST(Search, EveryPlanFitsAndIsRankedBySpeed) {
  ModelSpec m = *LoadModel("llama-3.1-70b");
  ClusterSpec c = *LoadCluster("dgx-h100");
  c.nodes = 8;
  SearchOptions opt;
  opt.top_k = 10;
  SearchResult r = Search(m, Train(4096, 256), c, opt);
  ASSERT_FALSE(r.plans.empty());
  EXPECT_GT(r.considered, r.feasible);
  EXPECT_GE(r.feasible, static_cast<int64_t>(r.plans.size()));
  for (size_t i = 0; i < r.plans.size(); ++i) {
    const Candidate& p = r.plans[i];
    EXPECT_TRUE(p.memory.fits);
    EXPECT_EQ(static_cast<int>(p.memory.stages.size()), p.layout.pp);  // re-estimated on every stage
    EXPECT_EQ(p.layout.world(), 64);
    EXPECT_EQ(p.layout.mbs * p.layout.grad_accum * p.layout.dp, 256);
    if (i > 0) {  // best first; speeds within 1% are a tie that goes to the plan with more headroom
      const Candidate& prev = r.plans[i - 1];
      EXPECT_GE(prev.time.tokens_per_second_per_gpu, 0.98 * p.time.tokens_per_second_per_gpu);
      if (prev.time.tokens_per_second_per_gpu < p.time.tokens_per_second_per_gpu) {
        EXPECT_GT(prev.memory.headroom_bytes, p.memory.headroom_bytes);
      }
    }
    EXPECT_FALSE(p.reason.empty());
  }
}

TEST(Search, HoldsFixedKeys) {
  ModelSpec m = *LoadModel("llama-3.1-8b");
  ClusterSpec c = *LoadCluster("dgx-h100");
  SearchOptions opt;
  opt.fixed = *ParseLayout("framework=deepspeed,zero=3,ac=full");
  SearchResult r = Search(m, Train(4096, 64), c, opt);
  ASSERT_FALSE(r.plans.empty());
  for (const Candidate& p : r.plans) {
    EXPECT_EQ(p.layout.framework, Framework::kDeepSpeed);
    EXPECT_EQ(p.layout.zero, 3);
    EXPECT_EQ(p.layout.ac, Recompute::kFull);
  }
}

// A fake cost model: memory grows with micro-batch; nothing with mbs > 2 fits. The search
// must stop growing the micro-batch at the first miss (the bound), not price the rest.
TEST(Search, PrunesLargerMicroBatchesAfterAMiss) {
  ModelSpec m = *LoadModel("llama-3.1-8b");
  ClusterSpec c = *LoadCluster("dgx-h100");
  c.gpus_per_node = 2;
  CostModels fake;
  std::atomic<int> priced_large{0};
  fake.memory = [&](const ModelSpec&, const Workload&, const Layout& l, const ClusterSpec&, const MemoryOptions&) {
    MemoryEstimate e;
    StageMemory s;
    s.device_peak = l.mbs * (10LL << 30);
    e.stages.push_back(s);
    e.capacity_bytes = 30LL << 30;
    e.fits = l.mbs <= 2;
    if (l.mbs > 4) ++priced_large;
    return e;
  };
  fake.time = [](const ModelSpec&, const Workload&, const Layout& l, const ClusterSpec&) {
    TimeEstimate t;
    t.tokens_per_second_per_gpu = l.mbs;
    return t;
  };
  fake.detailed_time = fake.time;
  SearchOptions opt;
  opt.fixed = *ParseLayout("framework=fsdp,zero=3,ac=none");
  SearchResult r = Search(m, Train(1024, 64), c, opt, fake);
  ASSERT_FALSE(r.plans.empty());
  EXPECT_EQ(r.plans.front().layout.mbs, 2);
  EXPECT_EQ(priced_large.load(), 0);
}

TEST(Search, NothingFitsExplainsWhy) {
  ModelSpec m = *LoadModel("llama-3.1-405b");
  ClusterSpec c = *LoadCluster("dgx-h100");  // one node: 640 GB for 405B parameters
  SearchOptions opt;
  SearchResult r = Search(m, Train(8192, 64), c, opt);
  EXPECT_TRUE(r.plans.empty());
  EXPECT_TRUE(r.has_closest);
  EXPECT_NE(r.binding.find("GPU memory"), std::string::npos) << r.binding;
  ASSERT_FALSE(r.advice.empty());
  EXPECT_NE(r.advice.front().find("more GPUs"), std::string::npos) << r.advice.front();
}

TEST(Search, InferencePrefersTheRequestedFormat) {
  ModelSpec m = *LoadModel("llama-3.1-70b");
  ClusterSpec c = *LoadCluster("dgx-h100");
  Workload w;
  w.task = Task::kInference;
  w.inference.batch = 16;
  SearchResult r = Search(m, w, c, SearchOptions{});
  ASSERT_FALSE(r.plans.empty());
  EXPECT_EQ(r.plans.front().layout.weights, Dtype::kBf16);
  EXPECT_GT(r.plans.front().memory.kv.max_concurrent_sequences, 0);
}

// Megatron's block recomputation (--recompute-method block --recompute-num-layers N)
// recomputes whole blocks for only N layers of each stage. With recomputation unstated and
// selective not enough, the estimate takes the fewest such layers that fit, not every layer:
// Llama 3.1 8B at TP 2, micro-batch 4 x 8192 on DGX H100.
TEST(Search, MegatronBlockRecomputationIsTheFewestLayersThatFit) {
  ModelSpec m = *LoadModel("llama-3.1-8b");
  ClusterSpec c = *LoadCluster("dgx-h100");
  Workload w;
  w.seq_len = 8192;
  w.global_batch = 32;
  auto l = ResolveLayout(m, w, c, *ParseLayout("framework=megatron,tp=2,mbs=4"));
  ASSERT_TRUE(l.ok()) << l.status().message();
  Layout selective = *l;
  selective.ac = Recompute::kSelective;
  ASSERT_FALSE(EstimateMemory(m, w, selective, c).fits);
  std::string note;
  auto [chosen, e] = LeastRecomputationThatFits(m, w, *l, c, MemoryOptions{}, &note);
  EXPECT_EQ(chosen.ac, Recompute::kFull);
  EXPECT_GT(chosen.ac_layers, 1);
  EXPECT_LT(chosen.ac_layers, 32);
  EXPECT_TRUE(e.fits);
  Layout fewer = chosen;
  fewer.ac_layers -= 1;
  EXPECT_FALSE(EstimateMemory(m, w, fewer, c).fits);
  EXPECT_NE(note.find("ac: full, ac_layers " + std::to_string(chosen.ac_layers)), std::string::npos) << note;
  // Other frameworks recompute every layer or none.
  auto fsdp = ResolveLayout(m, w, c, *ParseLayout("framework=fsdp,mbs=4"));
  ASSERT_TRUE(fsdp.ok());
  EXPECT_EQ(LeastRecomputationThatFits(m, w, *fsdp, c, MemoryOptions{}, &note).first.ac_layers, 0);
}

// Megatron's EP all-to-all overlap asserts no full or block recomputation, so with
// ep_overlap on and recomputation unstated, selective is the most the estimate may take, and it
// says so when even that does not fit: Qwen3-30B-A3B at EP 8, micro-batch 1 x 4096, DGX H100.
TEST(Search, EpOverlapStopsAtSelectiveRecomputation) {
  const ModelSpec m = *LoadModel("qwen3-30b-a3b");
  const ClusterSpec c = *LoadCluster("dgx-h100");
  const Workload w = Train(4096, 64);
  std::string note;
  auto least = [&](const char* text) {
    auto l = ResolveLayout(m, w, c, *ParseLayout(text));
    EXPECT_TRUE(l.ok()) << text << ": " << l.status().message();
    return LeastRecomputationThatFits(m, w, *l, c, MemoryOptions{}, &note);
  };
  EXPECT_EQ(least("framework=megatron,ep=8,mbs=1").first.ac, Recompute::kFull);
  auto [chosen, e] = least("framework=megatron,ep=8,mbs=1,ep_overlap=on");
  EXPECT_EQ(chosen.ac, Recompute::kSelective);
  EXPECT_FALSE(e.fits);
  EXPECT_NE(note.find("ep_overlap rules out full recomputation"), std::string::npos) << note;
}

}  // namespace
}  // namespace shardplan

namespace shardplan {
namespace {

// SearchOptions::sample: the fits a chart shows are the same whatever the thread count;
// the frontier holds no point another fit beats on both step time and memory.
TEST(Search, SeenLayoutsForCharts) {
  ModelSpec m = *LoadModel("llama-3.1-70b");
  ClusterSpec c = *LoadCluster("dgx-h100");
  c.nodes = 4;
  SearchOptions opt;
  opt.sample = 50;
  opt.threads = 1;
  SearchResult one = Search(m, Train(8192, 64), c, opt);
  opt.threads = 4;
  SearchResult four = Search(m, Train(8192, 64), c, opt);
  ASSERT_EQ(one.seen.size(), four.seen.size());
  for (size_t i = 0; i < one.seen.size(); ++i) EXPECT_EQ(one.seen[i].key, four.seen[i].key) << i;
  std::vector<SeenLayout> fits, frontier;
  for (const SeenLayout& s : one.seen) {
    if (s.fits) fits.push_back(s);
    if (s.pareto) frontier.push_back(s);
  }
  EXPECT_GE(fits.size(), 50u);
  EXPECT_LE(fits.size(), 50u + frontier.size());
  ASSERT_FALSE(frontier.empty());
  for (const SeenLayout& f : frontier)
    for (const SeenLayout& s : fits)
      EXPECT_FALSE(s.step_seconds < f.step_seconds && s.peak_bytes < f.peak_bytes);
  // The fastest layout seen is the top plan's speed (the plans are re-priced on every stage).
  EXPECT_NEAR(fits.front().step_seconds, one.plans.front().time.step_seconds, 0.01 * one.plans.front().time.step_seconds);
  EXPECT_TRUE(Search(m, Train(8192, 64), c, SearchOptions()).seen.empty());  // off by default
}

// fms-fsdp's "Selective AC" wraps a fraction of the blocks in full checkpointing
// (selective_checkpointing); with the fraction unstated, the estimate takes the fewest
// blocks that fit and says how many. Llama 2 70B over 128 A100 80GB at micro-batch 2 x 4096
// (its README's throughput row) fits with some blocks recomputed, not with one fewer.
TEST(Search, FmsFsdpSelectiveIsTheFewestBlocksThatFit) {
  ModelSpec m = *LoadModel("llama-2-70b");
  ClusterSpec c = *LoadCluster("dgx-a100");
  c.nodes = 16;
  Workload w;
  w.seq_len = 4096;
  w.global_batch = 256;
  auto parsed = ParseLayout("framework=fms-fsdp,dp=128,mbs=2,ac=selective");
  ASSERT_TRUE(parsed.ok());
  auto l = ResolveLayout(m, w, c, *parsed);
  ASSERT_TRUE(l.ok()) << l.status().message();
  std::string note;
  auto [chosen, e] = LeastRecomputationThatFits(m, w, *l, c, MemoryOptions{}, &note);
  EXPECT_EQ(chosen.ac, Recompute::kFull);
  EXPECT_GT(chosen.ac_layers, 0);
  EXPECT_LT(chosen.ac_layers, 80);
  EXPECT_TRUE(e.fits);
  Layout fewer = chosen;
  fewer.ac_layers -= 1;
  EXPECT_FALSE(EstimateMemory(m, w, fewer, c).fits);
  EXPECT_NE(note.find("of 80 blocks recompute, the fewest that fit"), std::string::npos) << note;
  // Per-op selective recomputation, what plain FSDP's ac=selective means, does not fit.
  auto fsdp = ResolveLayout(m, w, c, *ParseLayout("framework=fsdp,dp=128,mbs=2,ac=selective"));
  ASSERT_TRUE(fsdp.ok());
  EXPECT_FALSE(EstimateMemory(m, w, *fsdp, c).fits);
}

}  // namespace
}  // namespace shardplan
