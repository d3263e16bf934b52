// Capacity sweeps against published runs and hand-checked limits, and the parsers of its
// flags (token counts, deadlines, prices).
#include "planner/capacity.h"

#include <gtest/gtest.h>

#include "planner/io/model_reader.h"
#include "planner/io/workload_reader.h"
#include "planner/units.h"
#include "topology/cluster_reader.h"
#include "topology/gpu_catalog.h"
#include "topology/gpu_prices.h"
#include "topology/standard_node.h"

namespace shardplan {
namespace {

struct Inputs {
  ModelSpec m;
  Workload w;
  GpuKind kind;
};

Inputs Load(const char* model, const char* workload) {
  Inputs in;
  in.m = LoadModel(model).value();
  in.w = LoadWorkload(workload).value();
  in.kind.node = LoadCluster("dgx-h100").value();  // the standard 8 x H100 node
  return in;
}

SearchOptions Megatron() {
  SearchOptions o;
  o.frameworks = {Framework::kMegatron};
  return o;
}

TEST(CapacityUnits, TokenCounts) {
  EXPECT_DOUBLE_EQ(ParseTokenCount("15T").value(), 15e12);
  EXPECT_DOUBLE_EQ(ParseTokenCount("15.6 T").value(), 15.6e12);
  EXPECT_DOUBLE_EQ(ParseTokenCount("500B").value(), 500e9);
  EXPECT_DOUBLE_EQ(ParseTokenCount("8m").value(), 8e6);
  EXPECT_DOUBLE_EQ(ParseTokenCount("2.5e12").value(), 2.5e12);
  EXPECT_DOUBLE_EQ(ParseTokenCount("4096").value(), 4096);
  for (const char* bad : {"15X", "", "T", "0", "-1T", "1e"}) EXPECT_FALSE(ParseTokenCount(bad).ok()) << bad;
  EXPECT_NE(ParseTokenCount("15X").status().message().find("suffixes K, M, B, T"), std::string::npos);
}

TEST(CapacityUnits, Deadlines) {
  EXPECT_DOUBLE_EQ(ParseDuration("60d").value(), 60 * 86400.0);
  EXPECT_DOUBLE_EQ(ParseDuration("1440h").value(), 1440 * 3600.0);
  EXPECT_DOUBLE_EQ(ParseDuration("8 w").value(), 8 * 7 * 86400.0);
  EXPECT_DOUBLE_EQ(ParseDuration("500ms").value(), 0.5);
  EXPECT_NE(ParseDuration("60").status().message().find("needs a unit"), std::string::npos);
}

TEST(CapacityUnits, Prices) {
  EXPECT_DOUBLE_EQ(ParsePricePerHour("2.9/h").value(), 2.9);
  EXPECT_DOUBLE_EQ(ParsePricePerHour("$2.9/hr").value(), 2.9);
  EXPECT_DOUBLE_EQ(ParsePricePerHour("12/hour").value(), 12);
  const Status bare = ParsePricePerHour("2.9").status();
  EXPECT_EQ(bare.code(), Code::kBadInput);
  EXPECT_NE(bare.message().find("add the unit: 2.9/h"), std::string::npos) << bare.message();
  for (const char* bad : {"2.9/month", "abc/h", "/h", "-1/h"}) EXPECT_FALSE(ParsePricePerHour(bad).ok()) << bad;
}

TEST(CapacityPrices, BuiltinTableIsDatedAndCoversTheDefaults) {
  const PriceTable t = BuiltinPrices().value();
  ASSERT_EQ(t.default_gpus.size(), 4u);
  for (const std::string& gpu : t.default_gpus) {
    const GpuPrice* p = t.Find(gpu);
    ASSERT_NE(p, nullptr) << gpu;
    EXPECT_GT(p->per_gpu_hour, 0) << gpu;
    EXPECT_FALSE(p->date.empty()) << gpu;
    EXPECT_NE(p->source.find("http"), std::string::npos) << gpu;
  }
}

TEST(CapacityPrices, PriceWithoutUnitIsLocated) {
  const Status s = ParsePrices("mine.yaml",
                               "default_gpus: [h100-sxm-80gb]\n"
                               "prices:\n"
                               "  h100-sxm-80gb: {price: 2.9, date: 2026-02, source: x}\n")
                       .status();
  EXPECT_EQ(s.code(), Code::kBadInput);
  EXPECT_NE(s.message().find("mine.yaml:3:"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("2.9/h"), std::string::npos) << s.message();
  EXPECT_FALSE(ParsePrices("mine.yaml", "default_gpus: [h900]\nprices: {}\n").ok());
}

// The standard node capacity assumes keeps a GB200's 72-GPU NVLink domain across its 8-GPU
// nodes, and says so; an H100 node's NVLink ends at the node.
TEST(CapacityNode, Gb200KeepsItsNvlinkDomain) {
  auto gb200 = CatalogGpu("gb200-186gb");
  ASSERT_TRUE(gb200.ok());
  const ClusterSpec rack = StandardNode(*gb200);
  EXPECT_EQ(rack.nvlink_domain_size(), 72);
  ASSERT_FALSE(rack.assumed.empty());
  EXPECT_NE(rack.assumed[0].find("72-GPU NVLink domain"), std::string::npos) << rack.assumed[0];
  auto h100 = CatalogGpu("h100-sxm-80gb");
  ASSERT_TRUE(h100.ok());
  EXPECT_EQ(StandardNode(*h100).nvlink_domain_size(), 8);
}

TEST(Capacity, GlobalBatchHeldUnlessAllowedToGrow) {
  Workload w;
  w.seq_len = 8192;
  w.global_batch = 1024;
  CapacityLimits held;
  EXPECT_EQ(GlobalBatchAt(w, held, 16384), 1024);
  CapacityLimits grow;
  grow.max_global_batch_tokens = int64_t{64} << 20;  // 64Mi tokens = 8,192 sequences
  EXPECT_EQ(GlobalBatchAt(w, grow, 512), 1024);     // a sequence per 8 GPUs already
  EXPECT_EQ(GlobalBatchAt(w, grow, 16384), 2048);
  EXPECT_EQ(GlobalBatchAt(w, grow, 131072), 8192);  // capped
}

// Llama 3 405B pre-training (Dubey et al. 2024, "The Llama 3 Herd of Models", sec. 3.3 and
// table 4): 3.8e25 FLOPs over ~15.6T tokens, 16,384 H100s, sequences of 8,192 tokens, 16M
// tokens per step, 38-43% BF16 MFU. At 43% those FLOPs take 63 days; the model card's
// 30.84M H100-hours (all of pre-training, restarts included) are 78 days on 16,384 GPUs.
TEST(Capacity, Llama3_405bPretrainingTimeOn16384H100) {
  Inputs in = Load("llama-3.1-405b", "pretrain");
  in.w.seq_len = 8192;
  in.w.global_batch = 2048;
  CapacityTarget t;
  t.kind = CapacityTarget::Kind::kTrainGpus;
  t.tokens = 15.6e12;
  t.gpus = 16384;
  const CapacityResult r = PlanCapacity(in.m, in.w, {in.kind}, t, CapacityLimits(), Megatron());
  ASSERT_TRUE(r.meets());
  const KindResult& k = r.kinds[0];
  const CapacityPoint& p = k.points[static_cast<size_t>(k.answer)];
  EXPECT_EQ(p.gpus, 16384);
  const double peak = in.kind.node.gpu.bf16_flops;
  const double fastest_published = 3.8e25 / (16384 * peak * 0.43) / 86400;  // 63.2 days
  const double slowest_published = 30.84e6 / 16384 / 24;                      // 78.4 days
  const double days = p.train_seconds / 86400;
  // The time model's median error is ~12% (bench/time_accuracy); allow 15% below the fastest.
  EXPECT_GE(days, 0.85 * fastest_published);
  EXPECT_LE(days, slowest_published);
  EXPECT_NEAR(p.gpu_hours(), days * 24 * 16384, 1);
  // The curve covers whole nodes from one node up, and the model does not fit on one.
  EXPECT_EQ(k.points.front().gpus, 8);
  EXPECT_FALSE(k.points.front().has_plan);
}

// Serving Llama-3.1-70B to 64 sequences of 32K + 1K tokens: the KV cache binds. At TP=8 a
// GPU holds one of the 8 KV heads: 2 x 80 layers x 128 x 2 bytes = 40,960 B per token, so 64
// sequences of 33,792 tokens need 88.6e9 B per GPU, more than an H100's whole 85.5e9 B: one
// node cannot hold them, two (a replica of 32 sequences each) can.
TEST(Capacity, ServingWhereTheKvCacheBinds) {
  Inputs in = Load("llama-3.1-70b", "inference");
  in.w.inference.prompt_len = 32768;
  in.w.inference.gen_len = 1024;
  const double kv_per_token_per_gpu = 2.0 * in.m.layers * (in.m.kv_heads / 8) * in.m.head_dim * 2;
  ASSERT_DOUBLE_EQ(kv_per_token_per_gpu, 40960);
  ASSERT_GT(64 * 33792 * kv_per_token_per_gpu, static_cast<double>(in.kind.node.gpu.memory_bytes));
  CapacityTarget t;
  t.kind = CapacityTarget::Kind::kServe;
  t.concurrency = 64;
  CapacityLimits limits;
  limits.max_gpus = 64;
  const CapacityResult r = PlanCapacity(in.m, in.w, {in.kind}, t, limits, SearchOptions());
  ASSERT_TRUE(r.meets());
  const KindResult& k = r.kinds[0];
  const CapacityPoint& one_node = k.points[0];
  EXPECT_EQ(one_node.gpus, 8);
  EXPECT_FALSE(one_node.meets);
  EXPECT_LT(one_node.sequences, 64);
  EXPECT_NE(one_node.miss.find("KV cache binds"), std::string::npos) << one_node.miss;
  const CapacityPoint& a = k.points[static_cast<size_t>(k.answer)];
  EXPECT_EQ(a.gpus, 16);
  EXPECT_GE(a.sequences, 64);
  EXPECT_GT(a.request_tokens_per_s, 0);
  EXPECT_GT(a.ttft_seconds, 0);
}

TEST(Capacity, ServingLatencyTargetsAreChecked) {
  Inputs in = Load("llama-3.1-8b", "inference");
  CapacityTarget t;
  t.kind = CapacityTarget::Kind::kServe;
  t.concurrency = 8;
  t.max_ttft_seconds = 1e-6;  // no prefill is this fast
  CapacityLimits limits;
  limits.max_gpus = 16;
  const CapacityResult r = PlanCapacity(in.m, in.w, {in.kind}, t, limits, SearchOptions());
  EXPECT_FALSE(r.meets());
  EXPECT_NE(r.kinds[0].points[0].miss.find("time to first token"), std::string::npos);
}

// The bisection lands on the smallest node count: one node fewer misses the deadline.
TEST(Capacity, BisectionFindsTheSmallestNodeCount) {
  Inputs in = Load("llama-3.1-8b", "pretrain");
  in.w.global_batch = 512;
  CapacityTarget t;
  t.tokens = 2e12;
  t.deadline_seconds = 5 * 86400;
  const CapacityResult r = PlanCapacity(in.m, in.w, {in.kind}, t, CapacityLimits{4096, 0, 1}, Megatron());
  ASSERT_TRUE(r.meets());
  const KindResult& k = r.kinds[0];
  const CapacityPoint& a = k.points[static_cast<size_t>(k.answer)];
  EXPECT_LE(a.train_seconds, t.deadline_seconds);
  bool below_checked = false;
  for (const CapacityPoint& p : k.points)
    if (p.nodes == a.nodes - 1) {
      EXPECT_FALSE(p.meets);
      below_checked = true;
    }
  EXPECT_TRUE(below_checked);
}

TEST(Capacity, MinMicroBatchIsHonoured) {
  Inputs in = Load("llama-3.1-8b", "pretrain");
  in.w.global_batch = 512;
  CapacityTarget t;
  t.kind = CapacityTarget::Kind::kTrainGpus;
  t.tokens = 1e12;
  t.gpus = 64;
  const CapacityResult r = PlanCapacity(in.m, in.w, {in.kind}, t, CapacityLimits{64, 0, 2}, Megatron());
  int priced = 0;
  for (const CapacityPoint& p : r.kinds[0].points) {
    if (!p.has_plan) continue;
    ++priced;
    EXPECT_GE(p.plan.layout.mbs, 2) << p.gpus;
  }
  EXPECT_GT(priced, 0);
}

TEST(Capacity, NothingMeetsSaysWhatWouldCloseTheGap) {
  Inputs in = Load("llama-3.1-405b", "pretrain");
  CapacityTarget t;
  t.tokens = 15e12;
  t.deadline_seconds = 86400;
  const CapacityResult r = PlanCapacity(in.m, in.w, {in.kind}, t, CapacityLimits{256, 0, 1}, Megatron());
  EXPECT_FALSE(r.meets());
  const KindResult& k = r.kinds[0];
  ASSERT_GE(k.closest, 0);
  EXPECT_TRUE(k.points[static_cast<size_t>(k.closest)].has_plan);
  ASSERT_FALSE(k.advice.empty());
  EXPECT_NE(k.advice[0].find("more time"), std::string::npos) << k.advice[0];
}

}  // namespace
}  // namespace shardplan
