// The framework configs, key by key: batch identity, ZeRO blocks, accelerate YAML,
// torchtitan degrees, Megatron flags, and the rules that reject what a framework can't do.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "launch/accelerate_config.h"
#include "launch/deepspeed_config.h"
#include "launch/megatron_args.h"
#include "launch/torchtitan_config.h"
#include "planner/io/model_reader.h"
#include "planner/memory_model.h"
#include "tests/launch/test_plans.h"

namespace shardplan::launch::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

JobShape Shape(const Plan& p) {
  StatusOr<JobShape> s = ShapeOf(p);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : JobShape{};
}

TEST(JobShapeTest, DataParallelIsWorldOverTpTimesPp) {
  const JobShape s = Shape(TpPpZero1MultiNode());
  EXPECT_EQ(s.world, 32);
  EXPECT_EQ(s.nodes, 4);
  EXPECT_EQ(s.procs_per_node, 8);
  EXPECT_EQ(s.dp, 2);                  // 32 / (tp 8 x pp 2), as Megatron-DeepSpeed's mpu says
  EXPECT_EQ(s.global_batch, 1 * 16 * 2);
}

TEST(JobShapeTest, RejectsBrokenBatchIdentity) {
  Plan p = FsdpOneNode();
  p.layout.grad_accum = 3;  // 2 x 3 x 8 = 48, workload says 64
  EXPECT_THAT(ShapeOf(p).status().message(), HasSubstr("batch identity"));
}

TEST(JobShapeTest, RejectsTpGroupAcrossNodes) {
  Plan p = TpPpZero1MultiNode();
  p.cluster = H100Cluster(8, 4);  // 4-GPU nodes cannot hold tp 8
  EXPECT_THAT(ShapeOf(p).status().message(), HasSubstr("spans nodes"));
}

TEST(JobShapeTest, RejectsMoreGpusThanTheCluster) {
  Plan p = FsdpOneNode();
  p.cluster = H100Cluster(1, 4);
  EXPECT_EQ(ShapeOf(p).status().code(), Code::kBadInput);
}

TEST(DeepSpeedConfigTest, StandaloneIsConcrete) {
  const Plan p = TpPpZero1MultiNode();
  const auto j = DeepSpeedJson(p, Shape(p), DeepSpeedFlavor::kStandalone);
  EXPECT_EQ(j["train_batch_size"], 32);
  EXPECT_EQ(j["train_micro_batch_size_per_gpu"], 1);
  EXPECT_EQ(j["gradient_accumulation_steps"], 16);
  EXPECT_EQ(j["gradient_clipping"], 1.0);
  EXPECT_EQ(j["bf16"]["enabled"], true);
  EXPECT_FALSE(j.contains("fp16"));
  EXPECT_EQ(j["zero_optimization"]["stage"], 1);
  EXPECT_EQ(j["zero_optimization"]["reduce_bucket_size"], 500000000);
  EXPECT_EQ(j["activation_checkpointing"]["partition_activations"], true);  // tp 8
  EXPECT_THAT(j.dump(), Not(HasSubstr("auto")));
}

TEST(DeepSpeedConfigTest, Zero3NvmeWritesOffloadAioAndHpz) {
  const Plan p = Zero3NvmeOffload();
  const auto j = DeepSpeedJson(p, Shape(p), DeepSpeedFlavor::kStandalone);
  const auto& z = j["zero_optimization"];
  EXPECT_EQ(z["stage"], 3);
  EXPECT_EQ(z["offload_param"]["device"], "nvme");
  EXPECT_EQ(z["offload_param"]["nvme_path"], "/local_nvme");
  EXPECT_GE(z["offload_param"]["buffer_size"].get<int64_t>(), 128256LL * 8192);  // the embedding
  EXPECT_EQ(z["offload_optimizer"]["device"], "nvme");
  EXPECT_EQ(z["stage3_prefetch_bucket_size"], 8192LL * 8192 * 9 / 10);
  EXPECT_EQ(z["stage3_param_persistence_threshold"], 10 * 8192);
  EXPECT_EQ(z["zero_hpz_partition_size"], 8);
  EXPECT_TRUE(j.contains("aio"));
  EXPECT_EQ(j["fp16"]["enabled"], true);
  EXPECT_FALSE(j.contains("bf16"));
}

// The plan, the config and the rehearsal make one choice of bucket sizes: the memory model's
// ZeRO-3 buffers are the ones the emitted config asks DeepSpeed for.
TEST(DeepSpeedConfigTest, MemoryModelBudgetsTheEmittedBuckets) {
  Plan p = Zero3NvmeOffload();
  p.layout.offload_params = p.layout.offload_optimizer = Offload::kNone;
  const auto j = DeepSpeedJson(p, Shape(p), DeepSpeedFlavor::kStandalone);
  const int64_t reduce = j["zero_optimization"]["reduce_bucket_size"].get<int64_t>();
  const int64_t prefetch = j["zero_optimization"]["stage3_prefetch_bucket_size"].get<int64_t>();
  EXPECT_EQ(reduce, 8192LL * 8192);
  const MemoryEstimate e = EstimateMemory(p.model, p.workload, p.layout, p.cluster);
  const int wb = p.workload.precision == Dtype::kFp32 ? 4 : 2;
  int64_t bucket = 0, gathered = 0;
  for (const MemoryTerm& t : e.fullest().terms) {
    if (t.name == "reduce_bucket") bucket = t.bytes;
    if (t.name == "gathered_params") gathered = t.bytes;
  }
  EXPECT_EQ(bucket, wb * reduce);
  const int64_t live = j["zero_optimization"]["stage3_max_live_parameters"].get<int64_t>();
  EXPECT_EQ(gathered, wb * std::min(2 * e.fullest().unit_params + prefetch, live));
}

TEST(DeepSpeedConfigTest, HfFlavourUsesAutoWhereTheTrainerFillsIn) {
  const Plan p = Zero3NvmeOffload();
  const auto j = DeepSpeedJson(p, Shape(p), DeepSpeedFlavor::kHfAuto);
  for (const char* k : {"train_batch_size", "train_micro_batch_size_per_gpu",
                        "gradient_accumulation_steps", "gradient_clipping"})
    EXPECT_EQ(j[k], "auto") << k;
  EXPECT_EQ(j["fp16"]["enabled"], "auto");
  EXPECT_EQ(j["zero_optimization"]["reduce_bucket_size"], "auto");
  EXPECT_EQ(j["zero_optimization"]["stage"], 3);  // never auto: the plan decided it
  EXPECT_EQ(j["optimizer"]["params"]["lr"], "auto");
}

// The HF config names an optimizer (DeepSpeed's FusedAdam) only when the plan was priced for
// one; a full fine-tune priced for the Trainer's foreach AdamW leaves it to the Trainer.
TEST(DeepSpeedConfigTest, HfOptimizerBlockFollowsThePricedStep) {
  Plan p = FsdpOneNode();
  p.layout.framework = Framework::kDeepSpeed;
  p.layout.zero = 2;
  EXPECT_FALSE(DeepSpeedJson(p, Shape(p), DeepSpeedFlavor::kHfAuto).contains("optimizer"));
  p.workload.optimizer_step = OptimizerStep::kPerTensor;
  const auto fused = DeepSpeedJson(p, Shape(p), DeepSpeedFlavor::kHfAuto);
  ASSERT_TRUE(fused.contains("optimizer"));
  EXPECT_EQ(fused["optimizer"]["type"], "AdamW");
}

TEST(DeepSpeedConfigTest, RulesDeepSpeedEnforces) {
  Plan p = TpPpZero1MultiNode();
  p.layout.zero = 2;
  EXPECT_THAT(CheckDeepSpeed(p).message(), HasSubstr("pipeline"));
  p = FsdpOneNode();
  p.layout.zero = 2;
  p.layout.offload_params = Offload::kCpu;
  EXPECT_THAT(CheckDeepSpeed(p).message(), HasSubstr("stage 3"));
}

TEST(AccelerateConfigTest, FsdpTwoWithLayerClassAndGlobalProcessCount) {
  const Plan p = FsdpOneNode();
  StatusOr<Emitted> e = AccelerateConfig(p, Shape(p));
  ASSERT_TRUE(e.ok()) << e.status().message();
  const YAML::Node y = YAML::Load(e->files.at(0).text);
  EXPECT_EQ(y["distributed_type"].as<std::string>(), "FSDP");
  EXPECT_EQ(y["num_processes"].as<int>(), 8);
  EXPECT_EQ(y["num_machines"].as<int>(), 1);
  EXPECT_EQ(y["mixed_precision"].as<std::string>(), "bf16");
  EXPECT_EQ(y["fsdp_config"]["fsdp_version"].as<int>(), 2);
  EXPECT_TRUE(y["fsdp_config"]["fsdp_reshard_after_forward"].as<bool>());
  EXPECT_EQ(y["fsdp_config"]["fsdp_transformer_layer_cls_to_wrap"].as<std::string>(), "LlamaDecoderLayer");
  EXPECT_TRUE(y["fsdp_config"]["fsdp_activation_checkpointing"].as<bool>());
}

TEST(AccelerateConfigTest, DeepSpeedPlanPointsAtTheJson) {
  const Plan p = Zero3NvmeOffload();
  StatusOr<Emitted> e = AccelerateConfig(p, Shape(p));
  ASSERT_TRUE(e.ok()) << e.status().message();
  const YAML::Node y = YAML::Load(e->files.at(0).text);
  EXPECT_EQ(y["distributed_type"].as<std::string>(), "DEEPSPEED");
  EXPECT_EQ(y["num_processes"].as<int>(), 16);
  EXPECT_EQ(y["num_machines"].as<int>(), 2);
  EXPECT_EQ(y["deepspeed_config"]["deepspeed_config_file"].as<std::string>(), "deepspeed_hf.json");
}

TEST(AccelerateConfigTest, RejectsPipelineParallelism) {
  const Plan p = TpPpZero1MultiNode();
  EXPECT_THAT(AccelerateConfig(p, Shape(p)).status().message(), HasSubstr("pipeline"));
}

TEST(TorchtitanConfigTest, DegreesMultiplyToTheWorld) {
  const Plan p = TpPpZero1MultiNode();
  StatusOr<Emitted> e = TorchtitanConfig(p, Shape(p));
  ASSERT_TRUE(e.ok()) << e.status().message();
  const std::string& t = e->files.at(0).text;
  EXPECT_THAT(t, HasSubstr("data_parallel_shard_degree = 2\n"));
  EXPECT_THAT(t, HasSubstr("tensor_parallel_degree = 8\n"));
  EXPECT_THAT(t, HasSubstr("pipeline_parallel_degree = 2\n"));
  EXPECT_THAT(t, HasSubstr("pipeline_parallel_schedule = \"1F1B\"\n"));
  EXPECT_THAT(t, HasSubstr("local_batch_size = 16\n"));  // 16 microbatches of 1 in flight
  EXPECT_THAT(t, HasSubstr("mode = \"selective\"\n"));
}

// Stages the layout states become torchtitan's split points (the first layer of each stage
// but the first); unstated, torchtitan splits as the plan priced and none are written.
TEST(TorchtitanConfigTest, StatedStagesAreSplitPoints) {
  Plan p = TpPpZero1MultiNode();
  StatusOr<Emitted> bare = TorchtitanConfig(p, Shape(p));
  ASSERT_TRUE(bare.ok()) << bare.status().message();
  EXPECT_THAT(bare->files.at(0).text, Not(HasSubstr("pipeline_parallel_split_points")));
  p.layout.stages = {38, 42};  // Llama 3.1 70B's 80 layers
  StatusOr<Emitted> e = TorchtitanConfig(p, Shape(p));
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_THAT(e->files.at(0).text, HasSubstr("pipeline_parallel_split_points = [\"layers.38\"]\n"));
}

TEST(TorchtitanConfigTest, Float8WhenPlanned) {
  Plan p = FsdpOneNode();
  p.workload.precision = Dtype::kFp8;
  StatusOr<Emitted> e = TorchtitanConfig(p, Shape(p));
  ASSERT_TRUE(e.ok());
  EXPECT_THAT(e->files.at(0).text, HasSubstr("converters = [\"quantize.linear.float8\"]"));
  EXPECT_THAT(e->files.at(0).text, HasSubstr("enable_fsdp_float8_all_gather = true"));
  EXPECT_THAT(e->files.at(0).text, Not(HasSubstr("recipe_name")));
  // A workload that gathers bf16 (torchtitan's bare default) gets that.
  Plan bf16_gather = p;
  bf16_gather.workload.fp8_all_gather = Setting::kOff;
  StatusOr<Emitted> off = TorchtitanConfig(bf16_gather, Shape(bf16_gather));
  ASSERT_TRUE(off.ok());
  EXPECT_THAT(off->files.at(0).text, HasSubstr("enable_fsdp_float8_all_gather = false"));
  EXPECT_THAT(off->files.at(0).text, HasSubstr("precompute_float8_dynamic_scale_for_fsdp = false"));
  // Rowwise scaling names its recipe and communicates in bf16: torchtitan refuses a
  // recipe_name beside the float8 FSDP all-gather. Releases from 2026-04-27 run rowwise only.
  for (const bool by_release : {false, true}) {
    Plan r = p;
    if (by_release) r.workload.release = 20260501;
    else r.workload.fp8_recipe = Fp8Recipe::kRowwise;
    StatusOr<Emitted> rowwise = TorchtitanConfig(r, Shape(r));
    ASSERT_TRUE(rowwise.ok());
    EXPECT_THAT(rowwise->files.at(0).text, HasSubstr("recipe_name = \"rowwise\""));
    EXPECT_THAT(rowwise->files.at(0).text, HasSubstr("enable_fsdp_float8_all_gather = false"));
  }
}

TEST(MegatronArgsTest, ParallelismRecomputeAndBatch) {
  const Plan p = TpPpZero1MultiNode();
  StatusOr<std::vector<std::string>> f = MegatronFlags(p, Shape(p));
  ASSERT_TRUE(f.ok()) << f.status().message();
  for (const char* want : {"--tensor-model-parallel-size 8", "--pipeline-model-parallel-size 2",
                           "--sequence-parallel", "--use-distributed-optimizer",
                           "--recompute-granularity selective", "--micro-batch-size 1",
                           "--global-batch-size 32", "--num-query-groups 8", "--bf16"})
    EXPECT_NE(std::find(f->begin(), f->end(), want), f->end()) << want;
}

// A hybrid runs under pretrain_mamba.py with its block pattern and Mamba-2 widths
// (Megatron-LM arguments.py), squared-ReLU MLPs, no RoPE and Nemotron's MoE router.
TEST(MegatronArgsTest, HybridModelFlags) {
  Plan p = TpPpZero1MultiNode();
  StatusOr<ModelSpec> nano = LoadModel("nemotron-3-nano-30b-a3b");
  ASSERT_TRUE(nano.ok()) << nano.status().message();
  p.model = *nano;
  StatusOr<std::vector<std::string>> f = MegatronFlags(p, Shape(p));
  ASSERT_TRUE(f.ok()) << f.status().message();
  for (const char* want : {"--hybrid-override-pattern MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
                           "--mamba-num-heads 64", "--mamba-head-dim 64", "--mamba-state-dim 128",
                           "--mamba-num-groups 8", "--squared-relu", "--position-embedding-type none",
                           "--num-experts 128", "--moe-shared-expert-intermediate-size 3712",
                           "--moe-router-enable-expert-bias", "--moe-router-score-function sigmoid"})
    EXPECT_NE(std::find(f->begin(), f->end(), want), f->end()) << want;
  EXPECT_EQ(std::find(f->begin(), f->end(), "--position-embedding-type rope"), f->end());
  StatusOr<Emitted> args = MegatronArgs(p, Shape(p));
  ASSERT_TRUE(args.ok()) << args.status().message();
  EXPECT_THAT(args->files.at(0).text, HasSubstr("run pretrain_mamba.py"));
}

// Layers kept in BF16 under fp8 or nvfp4 are Megatron's --first-last-layers-bf16 with their
// counts; a run without them writes none of the three.
TEST(MegatronArgsTest, Bf16LayersFlags) {
  Plan p = TpPpZero1MultiNode();
  p.layout.framework = Framework::kMegatron;  // Megatron-core's switch; Megatron-DeepSpeed has none
  p.workload.precision = Dtype::kFp8;
  StatusOr<std::vector<std::string>> none = MegatronFlags(p, Shape(p));
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ(std::find(none->begin(), none->end(), "--first-last-layers-bf16"), none->end());
  p.workload.bf16_layers_start = 1;
  p.workload.bf16_layers_end = 2;
  StatusOr<std::vector<std::string>> f = MegatronFlags(p, Shape(p));
  ASSERT_TRUE(f.ok()) << f.status().message();
  for (const char* want : {"--first-last-layers-bf16", "--num-layers-at-start-in-bf16 1", "--num-layers-at-end-in-bf16 2"})
    EXPECT_NE(std::find(f->begin(), f->end(), want), f->end()) << want;
}

// Megatron-LM's Gated DeltaNet hybrids have no arguments this writer knows; it says so.
TEST(MegatronArgsTest, GatedDeltaNetRefused) {
  Plan p = TpPpZero1MultiNode();
  p.model.linear.delta = true;
  p.model.linear.heads = 32;
  p.model.model_type = "qwen3_next";
  EXPECT_THAT(MegatronFlags(p, Shape(p)).status().message(), HasSubstr("Gated DeltaNet models (qwen3_next) are not emitted"));
  // Granite 4.0's layers pair a Mamba-2 or attention mixer with an FFN, which this writer does not spell.
  p.model.linear.delta = false;
  p.model.model_type = "granitemoehybrid";
  p.model.hybrid = std::string(static_cast<size_t>(p.model.layers), 'G');
  EXPECT_THAT(MegatronFlags(p, Shape(p)).status().message(), HasSubstr("granitemoehybrid hybrids"));
}

// pretrain_gpt.py builds no vision encoder: a VLM's arguments say they cover the text tower.
TEST(MegatronArgsTest, VisionLanguageModelSaysTextTowerOnly) {
  Plan p = TpPpZero1MultiNode();
  p.model.vision.kind = "qwen3_vl";
  StatusOr<Emitted> args = MegatronArgs(p, Shape(p));
  ASSERT_TRUE(args.ok()) << args.status().message();
  ASSERT_EQ(args->notes.size(), 1u);
  EXPECT_THAT(args->notes[0], HasSubstr("text tower only; qwen3_vl's vision encoder"));
}

// Megatron-core has no ALiBi and no parallel attention/MLP block: an ALiBi model is built
// without a position table (a learned one would add parameters the model lacks), and the
// notes say what the arguments build instead.
TEST(MegatronArgsTest, AlibiAndParallelBlocksAreNamed) {
  Plan p = TpPpZero1MultiNode();
  p.model.name = "bloom-7b1";
  p.model.position = PositionKind::kAlibi;
  p.model.parallel_residual = true;
  StatusOr<std::vector<std::string>> f = MegatronFlags(p, Shape(p));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_NE(std::find(f->begin(), f->end(), "--position-embedding-type none"), f->end());
  StatusOr<Emitted> args = MegatronArgs(p, Shape(p));
  ASSERT_TRUE(args.ok()) << args.status().message();
  ASSERT_EQ(args->notes.size(), 2u);
  EXPECT_THAT(args->notes[0], HasSubstr("no ALiBi; these arguments build bloom-7b1 without position embeddings"));
  EXPECT_THAT(args->notes[1], HasSubstr("parallel block (both on one normed input) has no flag"));
}

TEST(MegatronArgsTest, UnevenStagesAndRejectedZero) {
  Plan p = TpPpZero1MultiNode();
  p.model.layers = 79;  // 40 + 39: Megatron needs the first stage's size
  StatusOr<std::vector<std::string>> f = MegatronFlags(p, Shape(p));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_NE(std::find(f->begin(), f->end(), "--decoder-first-pipeline-num-layers 40"), f->end());
  p.layout.zero = 3;
  EXPECT_THAT(MegatronFlags(p, Shape(p)).status().message(), HasSubstr("Megatron-FSDP"));
}

}  // namespace
}  // namespace shardplan::launch::testing
