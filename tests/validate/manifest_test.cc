#include "validate/manifest.h"

#include <gtest/gtest.h>

namespace shardplan::validate {
namespace {

constexpr Phase kSetup = Phase::kSetup, kForward = Phase::kForward, kLoss = Phase::kLoss,
                kBackward = Phase::kBackward, kStep = Phase::kStep;

MemoryTerm Term(std::string name, int64_t bytes, int64_t tensors, Phase first, Phase last,
                Pool pool = Pool::kTorch) {
  MemoryTerm t;
  t.name = std::move(name);
  t.bytes = bytes;
  t.tensors = tensors;
  t.first = first;
  t.last = last;
  t.pool = pool;
  return t;
}

TEST(ManifestTest, TermsSplitIntoEqualTensorsWithExactSum) {
  const std::vector<Allocation> a = AllocationsFromTerms({
      Term("activations", 10, 3, kForward, kBackward),
      Term("empty", 0, 4, kSetup, kStep),            // no bytes: no allocation
      Term("tiny", 2, 5, kSetup, kStep),             // more tensors than bytes: 2 pieces of 1
  });
  ASSERT_EQ(a.size(), 5u);
  const int64_t want_bytes[] = {4, 3, 3, 1, 1};
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].bytes, want_bytes[i]) << i;
  EXPECT_EQ(a[0].term, "activations");
  EXPECT_EQ(a[2].index, 2);
  EXPECT_EQ(a[2].count, 3);
  EXPECT_EQ(a[2].first, kForward);
  EXPECT_EQ(a[2].last, kBackward);
  EXPECT_EQ(a[4].term, "tiny");
  EXPECT_EQ(a[4].count, 2);
  EXPECT_TRUE(a[4].persistent());
  EXPECT_FALSE(a[0].persistent());
}

TEST(ManifestTest, LiveBytesFollowLifetimes) {
  const auto live = LiveBytesByPhase(AllocationsFromTerms({
      Term("parameters", 100, 1, kSetup, kStep),
      Term("gradients", 40, 2, kBackward, kStep),
      Term("activations", 30, 3, kForward, kBackward),
      Term("logits_and_loss", 7, 1, kLoss, kLoss),
  }));
  const std::array<int64_t, kPhaseCount> want = {100, 130, 137, 130, 170, 140};
  EXPECT_EQ(live, want);
}

CollectiveStep Step(std::string group, CollectiveKind kind, int64_t size, Phase phase) {
  CollectiveStep c;
  c.name = group + "_" + std::string(CollectiveName(kind));
  c.group = std::move(group);
  c.kind = kind;
  c.size_bytes = size;
  c.phase = phase;
  return c;
}

// Paged optimizer states and offloaded activations sit in host memory: the rehearsal
// allocates nothing for them on the device.
TEST(ManifestTest, HostSideTermsAreNotAllocated) {
  const std::vector<Allocation> a = AllocationsFromTerms({
      Term("parameters", 2000, 1, kSetup, kStep),
      Term("optimizer_states", 4000, 1, kSetup, kStep, Pool::kPaged),
      Term("activations_offloaded", 9000, 1, kForward, kBackward, Pool::kHost),
  });
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].term, "parameters");
}

TEST(ManifestTest, BuffersComeFromTermsThatWouldHoldThem) {
  const std::vector<Allocation> a = AllocationsFromTerms({
      Term("activations", 1000, 1, kForward, kBackward),       // 0
      Term("reduce_bucket", 500, 1, kBackward, kBackward),     // 1
      Term("gradients", 800, 1, kBackward, kStep),             // 2
      Term("parameters", 2000, 1, kSetup, kStep),              // 3
      Term("cuda_context", 50000, 1, kSetup, kStep, Pool::kNonTorch),  // 4: never a buffer
  });
  std::vector<CollectiveStep> c = {
      Step("tp", CollectiveKind::kAllReduce, 600, kForward),       // activations
      Step("dp", CollectiveKind::kReduceScatter, 400, kBackward),  // smallest gradient-like: the bucket
      Step("dp", CollectiveKind::kAllGather, 1500, kForward),      // parameter-like: parameters
      Step("ep", CollectiveKind::kAllToAll, 600, kForward),        // needs 1200: no activation fits
      Step("dp", CollectiveKind::kAllReduce, 10000, kBackward),    // nothing torch is that large
  };
  AssignBuffers(a, &c);
  const int want[] = {0, 1, 3, 3, -1};
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i].buffer, want[i]) << c[i].name;
}

// A hand-made plan: 4 GPUs as tp=2 x pp=2, two stages of 3 and 2 layers.
Plan TwoStagePlan() {
  Plan p;
  p.model.hidden = 64;
  p.cluster.gpus_per_node = 4;
  p.cluster.gpu.memory_bytes = 1000;
  p.workload.seq_len = 128;
  p.layout.tp = 2;
  p.layout.pp = 2;
  p.layout.grad_accum = 4;
  StageMemory s0, s1;
  s0.stage = 0;
  s0.layers = 3;
  s0.terms = {Term("parameters", 300, 1, kSetup, kStep)};
  s0.device_peak = s0.required_peak = 310;
  s1.stage = 1;
  s1.layers = 2;
  s1.terms = {Term("parameters", 200, 2, kSetup, kStep), Term("activations", 64 * 1024, 1, kForward, kBackward)};
  s1.required_peak = 77000;
  s1.device_peak = 90000;  // what the cache would hold: the validator plans what the step needs
  s1.peak_phase = kBackward;
  p.memory.stages = {s0, s1};
  p.memory.headroom_required_bytes = 50;
  return p;
}

TEST(ManifestTest, RankTakesItsStageFromThePipelineCoordinate) {
  const Plan plan = TwoStagePlan();
  StatusOr<RankManifest> m = BuildManifest(plan, 3);  // tp 1, pp 1
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->stage, 1);
  ASSERT_EQ(m->allocations.size(), 3u);
  EXPECT_EQ(m->allocations[0].bytes, 100);
  EXPECT_EQ(m->allocations[2].term, "activations");
  EXPECT_EQ(m->planned_device_peak, 77000);
  EXPECT_EQ(m->planned_peak_phase, kBackward);
  EXPECT_EQ(m->capacity_bytes, 1000);  // the GPU's memory when the estimate has none
  EXPECT_EQ(m->headroom_bytes, 50);
  // 128 tokens x 64 hidden x 2 B, twice per layer per micro-batch, forward and backward;
  // then the stage boundary, once per micro-batch each way.
  ASSERT_EQ(m->collectives.size(), 4u);
  EXPECT_EQ(m->collectives[0].name, "tp_all_reduce_fwd");
  EXPECT_EQ(m->collectives[0].size_bytes, 16384);
  EXPECT_EQ(m->collectives[0].repeat, 16);
  EXPECT_EQ(m->collectives[0].buffer, 2);  // inside the activations
  EXPECT_EQ(m->collectives[1].name, "pp_send_activations");
  EXPECT_EQ(m->collectives[1].direction, +1);
  EXPECT_EQ(m->collectives[1].repeat, 4);
  EXPECT_EQ(m->collectives[3].name, "pp_send_gradients");
  EXPECT_EQ(m->collectives[3].direction, -1);
  ASSERT_NE(m->Group("tp"), nullptr);
  EXPECT_EQ(*m->Group("tp"), (std::vector<int>{2, 3}));
  EXPECT_EQ(*m->Group("pp"), (std::vector<int>{1, 3}));
  EXPECT_EQ(m->Group("dp"), nullptr);
}

TEST(ManifestTest, BadRanksAreBadInput) {
  Plan plan = TwoStagePlan();
  StatusOr<RankManifest> out = BuildManifest(plan, 4);
  EXPECT_EQ(out.status().code(), Code::kBadInput);
  EXPECT_EQ(out.status().message(), "rank 4 is outside the plan's 4 ranks");
  plan.memory.stages.pop_back();
  out = BuildManifest(plan, 2);
  EXPECT_EQ(out.status().message(), "rank 2 is on pipeline stage 1 but the memory estimate has 1 stages");
}

}  // namespace
}  // namespace shardplan::validate
