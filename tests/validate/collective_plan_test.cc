#include "validate/collective_plan.h"

#include <gtest/gtest.h>

#include "planner/recipe.h"

namespace shardplan::validate {
namespace {

// 120M local parameters in units of 10M, 4 micro-batches, bf16.
CommShape Shape() {
  CommShape s;
  s.micro = 4;
  s.local_params = 120'000'000;
  s.unit_params = 10'000'000;
  s.grad_params = 120'000'000;
  return s;
}

Layout DataParallel(Framework f, int zero, int dp, int shard_group = 0) {
  Layout l;
  l.framework = f;
  l.zero = zero;
  l.dp = dp;
  l.shard_group = shard_group;
  return l;
}

struct Expected {
  std::string name, group;
  CollectiveKind kind;
  int64_t size_bytes;
  Phase phase;
  int64_t repeat;
};

void ExpectSteps(const std::vector<CollectiveStep>& got, const std::vector<Expected>& want,
                 const std::string& label) {
  ASSERT_EQ(got.size(), want.size()) << label;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name) << label;
    EXPECT_EQ(got[i].group, want[i].group) << label << " " << want[i].name;
    EXPECT_EQ(got[i].kind, want[i].kind) << label << " " << want[i].name;
    EXPECT_EQ(got[i].size_bytes, want[i].size_bytes) << label << " " << want[i].name;
    EXPECT_EQ(got[i].phase, want[i].phase) << label << " " << want[i].name;
    EXPECT_EQ(got[i].repeat, want[i].repeat) << label << " " << want[i].name;
  }
}

constexpr auto kAR = CollectiveKind::kAllReduce, kAG = CollectiveKind::kAllGather,
               kRS = CollectiveKind::kReduceScatter;
constexpr Phase kFwd = Phase::kForward, kBwd = Phase::kBackward, kStep = Phase::kStep;

TEST(DataParallelTest, FsdpGathersUnitsAndReduceScattersThem) {
  // 12 units of one decoder layer (10M x 2 B), every micro-batch.
  ExpectSteps(DataParallelCollectives(DataParallel(Framework::kFsdp, 3, 8), Shape()),
              {{"fsdp_all_gather_fwd", "dp", kAG, 20'000'000, kFwd, 48},
               {"fsdp_all_gather_bwd", "dp", kAG, 20'000'000, kBwd, 48},
               {"fsdp_reduce_scatter_grads", "dp", kRS, 20'000'000, kBwd, 48}},
              "fsdp zero3");
  // SHARD_GRAD_OP keeps the unit from forward to backward: no second gather.
  ExpectSteps(DataParallelCollectives(DataParallel(Framework::kFsdp, 2, 8), Shape()),
              {{"fsdp_all_gather_fwd", "dp", kAG, 20'000'000, kFwd, 48},
               {"fsdp_reduce_scatter_grads", "dp", kRS, 20'000'000, kBwd, 48}},
              "fsdp zero2");
}

TEST(DataParallelTest, TorchtitanHsdpReducesInFp32AndAllReducesReplicas) {
  ExpectSteps(DataParallelCollectives(DataParallel(Framework::kTorchtitan, 3, 8, 4), Shape()),
              {{"fsdp_all_gather_fwd", "shard", kAG, 20'000'000, kFwd, 48},
               {"fsdp_all_gather_bwd", "shard", kAG, 20'000'000, kBwd, 48},
               {"fsdp_reduce_scatter_grads", "shard", kRS, 40'000'000, kBwd, 48},
               {"hsdp_all_reduce_grads", "replicate", kAR, 10'000'000, kBwd, 12}},
              "torchtitan hsdp");
}

TEST(DataParallelTest, DeepSpeedBuckets) {
  // Stage 3: 5e7-element prefetch chunks (3 per pass over 1.2e8), one 1.2e8 reduce bucket.
  ExpectSteps(DataParallelCollectives(DataParallel(Framework::kDeepSpeed, 3, 8), Shape()),
              {{"zero3_all_gather_fwd", "dp", kAG, 100'000'000, kFwd, 12},
               {"zero3_all_gather_bwd", "dp", kAG, 100'000'000, kBwd, 12},
               {"zero3_reduce_scatter_grads", "dp", kRS, 240'000'000, kBwd, 4}},
              "deepspeed zero3");
  ExpectSteps(DataParallelCollectives(DataParallel(Framework::kDeepSpeed, 2, 8), Shape()),
              {{"zero_reduce_scatter_grads", "dp", kRS, 240'000'000, kBwd, 4},
               {"zero_all_gather_params", "dp", kAG, 240'000'000, kStep, 1}},
              "deepspeed zero2");
  ExpectSteps(DataParallelCollectives(DataParallel(Framework::kDeepSpeed, 1, 8), Shape()),
              {{"zero_reduce_scatter_grads", "dp", kRS, 240'000'000, kBwd, 1},
               {"zero_all_gather_params", "dp", kAG, 240'000'000, kStep, 1}},
              "deepspeed zero1");
  ExpectSteps(DataParallelCollectives(DataParallel(Framework::kDeepSpeed, 0, 8), Shape()),
              {{"dp_all_reduce_grads", "dp", kAR, 240'000'000, kBwd, 1}}, "deepspeed zero0");
}

// A DeepSpeed ZeRO-3 plan rehearses the buckets its emitted config writes (hidden^2 reduce,
// 0.9 hidden^2 prefetch); stages 0-2 keep DeepSpeed's defaults.
TEST(DataParallelTest, DeepSpeedPlanCarriesItsOwnBuckets) {
  Plan p;
  p.model.hidden = 4096;
  p.layout.framework = Framework::kDeepSpeed;
  p.layout.zero = 3;
  const CommShape z3 = MakeCommShape(p, RankPlace{});
  EXPECT_EQ(z3.ds_reduce_bucket, 4096LL * 4096);
  EXPECT_EQ(z3.ds_prefetch_bucket, 4096LL * 4096 * 9 / 10);
  p.layout.zero = 1;
  const CommShape z1 = MakeCommShape(p, RankPlace{});
  EXPECT_EQ(z1.ds_reduce_bucket, 500'000'000);
  EXPECT_EQ(z1.ds_allgather_bucket, 500'000'000);
}

// With CP the data-parallel traffic spans dp x cp: Megatron's distributed optimizer and
// torchtitan's dp_shard x cp FSDP mesh, the groups whose size the memory model shards by.
TEST(DataParallelTest, ContextParallelRanksJoinTheDataParallelGroup) {
  Layout titan = DataParallel(Framework::kTorchtitan, 3, 4, 2);
  titan.cp = 2;
  ExpectSteps(DataParallelCollectives(titan, Shape()),
              {{"fsdp_all_gather_fwd", "shard_cp", kAG, 20'000'000, kFwd, 48},
               {"fsdp_all_gather_bwd", "shard_cp", kAG, 20'000'000, kBwd, 48},
               {"fsdp_reduce_scatter_grads", "shard_cp", kRS, 40'000'000, kBwd, 48},
               {"hsdp_all_reduce_grads", "replicate", kAR, 10'000'000, kBwd, 12}},
              "torchtitan hsdp x cp");
  Layout megatron = DataParallel(Framework::kMegatron, 1, 1);
  megatron.cp = 4;  // dp = 1: the optimizer still shards over the 4 CP ranks
  const auto steps = DataParallelCollectives(megatron, Shape());
  ASSERT_EQ(steps.size(), 2u);
  for (const CollectiveStep& c : steps) EXPECT_EQ(c.group, "dp_cp") << c.name;
}

TEST(DataParallelTest, MegatronBucketsGrowWithDp) {
  // max(40M, 1M x 64) = 64M elements: fp32 gradients, bf16 parameters, 2 buckets.
  ExpectSteps(DataParallelCollectives(DataParallel(Framework::kMegatron, 1, 64), Shape()),
              {{"zero_reduce_scatter_grads", "dp", kRS, 256'000'000, kBwd, 2},
               {"zero_all_gather_params", "dp", kAG, 128'000'000, kStep, 2}},
              "megatron distributed optimizer");
  ExpectSteps(DataParallelCollectives(DataParallel(Framework::kMegatron, 0, 8), Shape()),
              {{"dp_all_reduce_grads", "dp", kAR, 160'000'000, kBwd, 3}}, "megatron ddp");
}

TEST(DataParallelTest, DdpUses25MiBBuckets) {
  // 25 MiB / 2 B = 13,107,200 elements; 1.2e8 elements need 10 buckets.
  ExpectSteps(DataParallelCollectives(DataParallel(Framework::kFsdp, 0, 8), Shape()),
              {{"dp_all_reduce_grads", "dp", kAR, 26'214'400, kBwd, 10}}, "ddp");
  EXPECT_TRUE(DataParallelCollectives(DataParallel(Framework::kFsdp, 3, 1), Shape()).empty());
}

// A hand-made plan of one stage of 16 layers: h = 4096, 32 heads of 128, 8 KV heads.
Plan Dense(int tp, int pp, int cp, bool sp) {
  Plan p;
  p.model.hidden = 4096;
  p.model.heads = 32;
  p.model.kv_heads = 8;
  p.model.head_dim = 128;
  p.cluster.gpus_per_node = 8;
  p.workload.seq_len = 4096;
  p.layout.tp = tp;
  p.layout.pp = pp;
  p.layout.cp = cp;
  p.layout.sp = sp;
  p.layout.mbs = 2;
  p.layout.grad_accum = 4;
  p.layout.vpp = 2;
  StageMemory s;
  s.layers = 16;
  p.memory.stages.assign(static_cast<size_t>(pp), s);
  return p;
}

TEST(CollectivePlanTest, TensorParallelActivations) {
  // 2 x 4096 tokens x 4096 hidden x 2 B; 2 per layer x 16 layers x 4 micro-batches.
  ExpectSteps(PlanCollectives(Dense(2, 1, 1, false), RankPlace{}),
              {{"tp_all_reduce_fwd", "tp", kAR, 67'108'864, kFwd, 128},
               {"tp_all_reduce_bwd", "tp", kAR, 67'108'864, kBwd, 128}},
              "tp");
  ExpectSteps(PlanCollectives(Dense(2, 1, 1, true), RankPlace{}),
              {{"tp_all_gather_fwd", "tp", kAG, 67'108'864, kFwd, 128},
               {"tp_reduce_scatter_fwd", "tp", kRS, 67'108'864, kFwd, 128},
               {"tp_all_gather_bwd", "tp", kAG, 67'108'864, kBwd, 128},
               {"tp_reduce_scatter_bwd", "tp", kRS, 67'108'864, kBwd, 128}},
              "tp+sp");
}

// torchtitan runs TP without FSDP in fp32 (planner/recipe.h): the validator moves the fp32
// activations the estimate priced, twice the bf16 bytes above.
TEST(CollectivePlanTest, TorchtitanTensorParallelWithoutFsdpMovesFp32) {
  Plan p = Dense(2, 1, 1, true);
  p.layout.framework = Framework::kTorchtitan;
  p.layout.stack = Stack::kNative;
  p.workload.precision = Dtype::kBf16;
  ASSERT_TRUE(TorchtitanMixedPrecisionOff(p.workload, p.layout));
  ExpectSteps(PlanCollectives(p, RankPlace{}),
              {{"tp_all_gather_fwd", "tp", kAG, 134'217'728, kFwd, 128},
               {"tp_reduce_scatter_fwd", "tp", kRS, 134'217'728, kFwd, 128},
               {"tp_all_gather_bwd", "tp", kAG, 134'217'728, kBwd, 128},
               {"tp_reduce_scatter_bwd", "tp", kRS, 134'217'728, kBwd, 128}},
              "torchtitan tp+sp, fp32");
}

TEST(CollectivePlanTest, PipelineAndContextParallel) {
  // The stage boundary carries tokens x hidden once per micro-batch per virtual stage (vpp 2).
  ExpectSteps(PlanCollectives(Dense(1, 2, 1, false), RankPlace{}),
              {{"pp_send_activations", "pp", CollectiveKind::kSendRecv, 67'108'864, kFwd, 8},
               {"pp_send_gradients", "pp", CollectiveKind::kSendRecv, 67'108'864, kBwd, 8}},
              "pp");
  // CP 2: 4096 tokens per rank; K and V of 8 heads x 128 for the whole 8192-token sequence.
  ExpectSteps(PlanCollectives(Dense(1, 1, 2, false), RankPlace{}),
              {{"cp_all_gather_kv", "cp", kAG, 33'554'432, kFwd, 64},
               {"cp_reduce_scatter_dkv", "cp", kRS, 33'554'432, kBwd, 64}},
              "cp");
}

// A hybrid under CP: its 4 attention layers gather K and V as any layer does; its 12 Mamba-2
// layers each send in_proj's output (10,304 wide) to head shards and y (4,096) back, for 4,096
// tokens per rank, as the time model prices them.
TEST(CollectivePlanTest, LinearMixersUnderContextParallelism) {
  Plan p = Dense(1, 1, 2, false);
  p.model.hybrid = "MMM*MMM*MMM*MMM*";
  p.model.linear.heads = 64;
  p.model.linear.head_dim = 64;
  p.model.linear.groups = 8;
  p.model.linear.state = 128;
  ExpectSteps(PlanCollectives(p, RankPlace{}),
              {{"cp_all_gather_kv", "cp", kAG, 33'554'432, kFwd, 16},
               {"cp_all_to_all_mixer_fwd", "cp", CollectiveKind::kAllToAll, 4096LL * (10'304 + 4'096) * 2, kFwd, 48},
               {"cp_reduce_scatter_dkv", "cp", kRS, 33'554'432, kBwd, 16},
               {"cp_all_to_all_mixer_bwd", "cp", CollectiveKind::kAllToAll, 4096LL * (10'304 + 4'096) * 2, kBwd, 48}},
              "hybrid cp");
}

TEST(CollectivePlanTest, ExpertAllToAll) {
  Plan p = Dense(1, 1, 1, false);
  p.layout.ep = 2;
  p.model.experts = 8;
  p.model.experts_per_token = 2;
  p.model.moe_layer.assign(16, false);
  for (int i = 0; i < 16; i += 2) p.model.moe_layer[static_cast<size_t>(i)] = true;
  // 8192 tokens x top-2 x 4096 x 2 B, dispatch and combine in 8 MoE layers x 4 micro-batches.
  ExpectSteps(PlanCollectives(p, RankPlace{}),
              {{"ep_all_to_all_fwd", "ep", CollectiveKind::kAllToAll, 134'217'728, kFwd, 64},
               {"ep_all_to_all_bwd", "ep", CollectiveKind::kAllToAll, 134'217'728, kBwd, 64}},
              "ep");
}

TEST(CollectivePlanTest, LoraSynchronisesOnlyAdapterGradients) {
  Plan p = Dense(1, 1, 1, false);
  p.workload.task = Task::kLora;
  p.layout.dp = 2;
  p.memory.stages[0].terms = {{"adapter_gradients", 4000, 1, Phase::kBackward, Phase::kStep, Pool::kTorch, ""}};
  // 1000 fp32 adapter gradients, all-reduced in bf16 in one DDP bucket.
  ExpectSteps(PlanCollectives(p, RankPlace{}), {{"dp_all_reduce_grads", "dp", kAR, 2000, kBwd, 1}}, "lora ddp");
}

TEST(CollectivePlanTest, InferenceRunsForwardOnly) {
  Plan p = Dense(2, 1, 1, false);
  p.workload.task = Task::kInference;
  p.workload.inference.prompt_len = 1000;
  p.layout.batch = 3;
  // Prefill: 3 x 1000 tokens x 4096 x 2 B, twice per layer.
  ExpectSteps(PlanCollectives(p, RankPlace{}), {{"tp_all_reduce_fwd", "tp", kAR, 24'576'000, kFwd, 32}},
              "inference");
  // 64 x 1000 prompt tokens are prefilled in steps of at most 8192 (vLLM max_num_batched_tokens).
  p.layout.batch = 64;
  ExpectSteps(PlanCollectives(p, RankPlace{}), {{"tp_all_reduce_fwd", "tp", kAR, 67'108'864, kFwd, 32}},
              "inference, chunked prefill");
}

}  // namespace
}  // namespace shardplan::validate
