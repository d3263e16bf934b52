// --layout parsing, derived keys, and the framework rules ResolveLayout enforces.
#include <gtest/gtest.h>

#include <array>

#include "planner/io/model_reader.h"
#include "planner/layout.h"
#include "planner/plan.h"
#include "topology/cluster_reader.h"

namespace shardplan {
namespace {

struct Fixture {
  ModelSpec m;
  ClusterSpec c;
  Workload w;
  Fixture(const std::string& model, const std::string& cluster, int nodes) {
    m = *LoadModel(model);
    c = *LoadCluster(cluster);
    c.nodes = nodes;
    w.seq_len = 4096;
    w.global_batch = 512;
  }
  StatusOr<Layout> Resolve(const std::string& text) const {
    auto l = ParseLayout(text);
    if (!l.ok()) return l.status();
    return ResolveLayout(m, w, c, *l);
  }
};

TEST(Layout, ParseAndRoundTrip) {
  auto l = ParseLayout("framework=megatron,tp=8,pp=4,vpp=2,sp=on,ac=selective,mbs=2,stages=10/10/10/10");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->framework, Framework::kMegatron);
  EXPECT_EQ(l->tp, 8);
  EXPECT_TRUE(l->sp);
  EXPECT_EQ(l->stages, (std::vector<int>{10, 10, 10, 10}));
  EXPECT_EQ(l->zero, 1);  // Megatron's default: the distributed optimizer
  auto back = ParseLayout(FormatLayout(*l));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(FormatLayout(*back), FormatLayout(*l));
}

TEST(Layout, ParseErrors) {
  EXPECT_NE(ParseLayout("tpp=8").status().message().find("unknown key 'tpp', did you mean 'tp'?"), std::string::npos);
  EXPECT_NE(ParseLayout("tp=eight").status().message().find("--layout tp: expected an integer >= 1, got \"eight\""),
            std::string::npos);
  EXPECT_NE(ParseLayout("zero=4").status().message().find("0, 1, 2 or 3"), std::string::npos);
  EXPECT_NE(ParseLayout("framework=jax").status().message().find("deepspeed, fsdp, megatron, torchtitan, torchtune, hf, unsloth, nemo, automodel, llm-foundry, fms-fsdp or litgpt"),
            std::string::npos);
  EXPECT_NE(ParseLayout("framework=torchtun").status().message().find("did you mean 'torchtune'?"), std::string::npos);
  EXPECT_NE(ParseLayout("tp").status().message().find("expected key=value"), std::string::npos);
}

// Layouts as tables and write-ups word them: framework names, ZeRO stages (DeepSpeed's words),
// DDP, HSDP, degrees run into their keys or beside them, joined by '/' or '+'. Each reads as
// the key=value it means; a word that means none is still an error.
TEST(Layout, WordsAsSourcesWriteThem) {
  auto same = [](const char* words, const char* keys) {
    auto a = ParseLayout(words);
    auto b = ParseLayout(keys);
    ASSERT_TRUE(a.ok()) << words << ": " << a.status().message();
    ASSERT_TRUE(b.ok()) << keys << ": " << b.status().message();
    EXPECT_EQ(*a, *b) << words << " vs " << keys;
  };
  same("TP8/PP4", "tp=8,pp=4");
  same("tp8 pp4 vpp2", "tp=8,pp=4,vpp=2");
  same("Megatron TP 4 PP 8", "framework=megatron,tp=4,pp=8");
  same("ZeRO-3", "framework=deepspeed,zero=3");
  same("DeepSpeed zero2 mbs4", "framework=deepspeed,zero=2,mbs=4");
  same("FSDP ZeRO-2", "framework=fsdp,zero=2");  // a named framework keeps its name
  same("FSDP2 + TP8", "framework=fsdp2,tp=8");
  same("torchtitan FSDP 4 TP 8", "framework=torchtitan,fsdp=4,tp=8");
  same("DDP", "zero=0");
  same("HSDP", "sharding_strategy=HYBRID_SHARD");
  same("tp=8, SP", "tp=8,sp=on");
  // Phrases: parallelism spelled out, recomputation, offload by framework, FSDP's strategies.
  same("tensor parallel 8, pipeline-parallel size 4", "tp=8,pp=4");
  same("FSDP (full shard)", "framework=fsdp,sharding_strategy=FULL_SHARD");
  same("SHARD_GRAD_OP", "sharding_strategy=SHARD_GRAD_OP");
  same("FSDP + activation checkpointing", "framework=fsdp,ac=full");
  same("Megatron TP 2, selective recomputation", "framework=megatron,tp=2,ac=selective");
  same("FSDP2 no AC", "framework=fsdp2,ac=none");
  same("torchtitan FSDP8 TP2", "framework=torchtitan,fsdp=8,tp=2");
  same("ZeRO-3 offload", "framework=deepspeed,zero=3,offload_optimizer=cpu,offload_params=cpu");  // ZeRO-Infinity
  same("DeepSpeed ZeRO-2 with CPU offload", "framework=deepspeed,zero=2,offload_optimizer=cpu");  // ZeRO-Offload
  same("FSDP with CPU offload", "framework=fsdp,offload_params=cpu");                           // CPUOffload
  same("ZeRO-3, offload optimizer to NVMe", "framework=deepspeed,zero=3,offload_optimizer=nvme");
  same("ZeRO-3 + offload param and optimizer", "framework=deepspeed,zero=3,offload_params=cpu,offload_optimizer=cpu");
  same("framework=deepspeed,zero=2,offload=cpu", "framework=deepspeed,zero=2,offload_optimizer=cpu");
  same("ZeRO-3, optimizer offloaded on NVMe", "framework=deepspeed,zero=3,offload_optimizer=nvme");
  same("FSDP, CPU-offloaded", "framework=fsdp,offload_params=cpu");
  EXPECT_FALSE(ParseLayout("offload=gpu").ok());
  // Errors quote the words as written, not the key=value they were read as.
  auto clash = ParseLayout("tp=4,dp4,dp_shard=3");
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.status().message().find("but dp is 4 (\"dp4\")"), std::string::npos) << clash.status().message();
  auto bad = ParseLayout("3D: TP8");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected key=value (or a framework's name, ZeRO-3, TP8, ...), got \"3D:\""),
            std::string::npos)
      << bad.status().message();
}

TEST(Layout, DerivesDpAndGradAccum) {
  Fixture f("llama-3.1-70b", "dgx-h100", 4);  // 32 GPUs
  auto l = f.Resolve("framework=megatron,tp=8,pp=2,mbs=2");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->dp, 2);
  EXPECT_EQ(l->grad_accum, 512 / (2 * 2));  // global = mbs x grad_accum x dp
}

struct RuleCase {
  const char* model;
  const char* layout;
  const char* rule;  // substring of the message
};

class Rules : public ::testing::TestWithParam<RuleCase> {};

TEST_P(Rules, AreNamed) {
  Fixture f(GetParam().model, "dgx-h100", 2);  // 16 GPUs
  auto l = f.Resolve(GetParam().layout);
  ASSERT_FALSE(l.ok()) << GetParam().layout;
  EXPECT_EQ(l.status().code(), Code::kBadInput);
  EXPECT_NE(l.status().message().find(GetParam().rule), std::string::npos) << l.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    FrameworkRules, Rules,
    ::testing::Values(
        RuleCase{"qwen2.5-7b", "framework=megatron,tp=8,pp=2", "tp (8) must divide the attention heads (28)"},
        RuleCase{"llama-3.1-8b", "framework=megatron,tp=2,pp=64", "must divide the GPUs"},
        RuleCase{"llama-3.1-8b", "framework=megatron,pp=8,vpp=8", "at least pp x vpp - 2 (62) layers"},
        RuleCase{"llama-3.1-8b", "framework=megatron,ep=2", "ep > 1 needs a mixture-of-experts model"},
        RuleCase{"mixtral-8x7b", "framework=megatron,ep=16", "ep (16) must divide the experts (8)"},
        RuleCase{"llama-3.1-8b", "framework=deepspeed,zero=2,offload_params=cpu", "offload_params needs zero=3"},
        RuleCase{"llama-3.1-8b", "framework=deepspeed,pp=2,zero=3", "pipeline engine supports ZeRO stage 0 or 1"},
        RuleCase{"llama-3.1-8b", "framework=torchtune,pp=2", "has no pipeline or expert parallelism"},
        RuleCase{"llama-3.1-8b", "framework=torchtune,pp=2", "framework=torchtune has no pipeline"},
        RuleCase{"llama-3.1-8b", "framework=fsdp,offload_optimizer=nvme,offload_params=nvme", "NVMe offload is DeepSpeed"},
        RuleCase{"llama-3.1-8b", "framework=megatron,dp=4,tp=2", "must equal the GPUs used (16)"},
        RuleCase{"llama-3.1-8b", "framework=megatron,mbs=3", "global batch (512) must be a multiple of mbs x dp (48)"},
        RuleCase{"llama-3.1-8b", "framework=megatron,mbs=1,grad_accum=3", "global batch (512) must equal mbs x grad_accum x dp"},
        RuleCase{"llama-3.1-8b", "framework=megatron,pp=2,stages=10/20", "adding up to the layers (32)"},
        // Megatron's MambaMixer splits its heads and B/C groups over TP, and again over CP.
        RuleCase{"nemotron-3-nano-30b-a3b", "framework=megatron,tp=16", "must divide the Mamba heads (64) and groups (8)"},
        RuleCase{"nemotron-3-nano-30b-a3b", "framework=megatron,tp=2,cp=8", "tp x cp (16) must divide the Mamba heads"},
        // NeMo AutoModel's MoE parallelizer asserts a TP mesh of one.
        RuleCase{"qwen3-30b-a3b", "framework=automodel,tp=2,ep=8", "framework=automodel runs its MoE models without tensor parallelism"}));

// Layouts real frameworks run that an earlier rule set refused: TP across nodes (one NVLink
// domain on NVL72; legal anywhere), FSDP2 with TP (accelerate ParallelismConfig, HF tp_plan),
// Megatron-FSDP (--use-megatron-fsdp) and DeepSpeed-Ulysses sequence parallelism.
TEST(Layout, AcceptsWhatTheFrameworksAccept) {
  Fixture f("llama-3.1-8b", "dgx-h100", 2);  // 16 GPUs
  for (const char* text : {"framework=megatron,tp=16", "framework=fsdp,tp=2", "framework=megatron,zero=3",
                           "framework=megatron,zero=2,tp=2", "framework=deepspeed,cp=2,zero=3"}) {
    auto l = f.Resolve(text);
    EXPECT_TRUE(l.ok()) << text << ": " << l.status().message();
  }
}

// Pipeline schedules by torchtitan's and AutoModel's names; ZB-V is two chunks per rank, so
// it sets vpp=2 when left out and refuses any other; a schedule needs a pipeline.
TEST(Layout, PipelineSchedules) {
  auto zb = ParseLayout("pp=4,pipeline_parallel_schedule=InterleavedZeroBubble,vpp=2");
  ASSERT_TRUE(zb.ok()) << zb.status().message();
  EXPECT_EQ(zb->pp_schedule, PpSchedule::kZeroBubble);
  EXPECT_NE(FormatLayout(*zb).find(",pp_schedule=zb"), std::string::npos) << FormatLayout(*zb);
  EXPECT_EQ(ParseLayout(FormatLayout(*zb))->pp_schedule, PpSchedule::kZeroBubble);
  EXPECT_EQ(ParseLayout("pp_schedule=ZBVZeroBubble")->pp_schedule, PpSchedule::kZbv);
  EXPECT_EQ(ParseLayout("pp_schedule=Interleaved1F1B")->pp_schedule, PpSchedule::k1f1b);
  EXPECT_EQ(FormatLayout(*ParseLayout("pp=2")).find("pp_schedule"), std::string::npos);
  EXPECT_NE(ParseLayout("pp_schedule=dualpipe").status().message().find("1f1b, zb"), std::string::npos);

  auto m = LoadModel("llama-3.1-8b");
  ASSERT_TRUE(m.ok());
  auto c = LoadCluster("dgx-h100");
  ASSERT_TRUE(c.ok());
  Workload w;
  w.seq_len = 4096;
  w.global_batch = 64;
  auto v = ResolveLayout(*m, w, *c, *ParseLayout("framework=torchtitan,pp=4,pp_schedule=zbv"));
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->vpp, 2);
  EXPECT_FALSE(ResolveLayout(*m, w, *c, *ParseLayout("framework=torchtitan,pp=4,vpp=4,pp_schedule=zbv")).ok());
  EXPECT_FALSE(ResolveLayout(*m, w, *c, *ParseLayout("framework=torchtitan,pp_schedule=zb")).ok());
}

// The framework names users give their stack map onto the engine that shards, and a layout
// prints back the name the user gave.
// Config-file spellings of the same keys read as the layout key they name.
TEST(Layout, ConfigFileKeyNames) {
  auto l = ParseLayout("framework=deepspeed,zero_optimization_stage=3,offload_optimizer_device=cpu,"
                       "offload_param_device=nvme,train_micro_batch_size_per_gpu=4,gradient_accumulation=8");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->zero, 3);
  EXPECT_EQ(l->offload_optimizer, Offload::kCpu);
  EXPECT_EQ(l->offload_params, Offload::kNvme);
  EXPECT_EQ(l->mbs, 4);
  EXPECT_EQ(l->grad_accum, 8);
  auto m = ParseLayout("framework=megatron,tp=2,pp=4,vpp_size=3,ep=8,etp_size=1,local_batch_size=2");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->vpp, 3);
  EXPECT_EQ(m->etp, 1);
  EXPECT_EQ(m->mbs, 2);
}

TEST(Layout, StacksMapOntoTheirEngine) {
  struct Case {
    const char* text;
    Framework engine;
    Stack stack;
    int zero;
  };
  for (const Case& c : {Case{"framework=torchtune", Framework::kFsdp, Stack::kTorchtune, 3},
                        Case{"framework=hf", Framework::kFsdp, Stack::kHf, 0},
                        Case{"framework=unsloth", Framework::kFsdp, Stack::kUnsloth, 0},
                        Case{"framework=NeMo", Framework::kMegatron, Stack::kNemo, 1},
                        Case{"framework=automodel", Framework::kTorchtitan, Stack::kAutomodel, 3},
                        Case{"framework=axolotl", Framework::kFsdp, Stack::kHf, 0},
                        Case{"framework=LLaMA-Factory", Framework::kFsdp, Stack::kHf, 0},
                        Case{"framework=megatron-deepspeed", Framework::kDeepSpeed, Stack::kMegatronDeepSpeed, 1},
                        Case{"framework=llm-foundry", Framework::kFsdp, Stack::kLlmFoundry, 3},
                        Case{"framework=composer", Framework::kFsdp, Stack::kLlmFoundry, 3},
                        Case{"framework=fms-fsdp", Framework::kFsdp, Stack::kFmsFsdp, 3}}) {
    auto l = ParseLayout(c.text);
    ASSERT_TRUE(l.ok()) << c.text;
    EXPECT_EQ(l->framework, c.engine) << c.text;
    EXPECT_EQ(l->stack, c.stack) << c.text;
    EXPECT_EQ(l->zero, c.zero) << c.text;
    auto back = ParseLayout(FormatLayout(*l));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->stack, c.stack) << FormatLayout(*l);
  }
}

// torchtitan's TP always shards the sequence; Megatron recipes turn SP on with TP; a user's
// sp=off still holds.
TEST(Layout, SequenceParallelFollowsTheFramework) {
  Fixture f("llama-3.1-8b", "dgx-h100", 1);
  EXPECT_TRUE(f.Resolve("framework=torchtitan,tp=2")->sp);
  EXPECT_TRUE(f.Resolve("framework=megatron,tp=2")->sp);
  EXPECT_FALSE(f.Resolve("framework=megatron,tp=2,sp=off")->sp);
  EXPECT_FALSE(f.Resolve("framework=fsdp,tp=2")->sp);
}

// With no framework named, degrees plain FSDP cannot run go to torchtitan (FSDP + TP/PP/CP/EP).
TEST(Layout, UnnamedFrameworkWithPipelineIsTorchtitan) {
  Fixture f("llama-3.1-70b", "dgx-h100", 4);
  auto l = f.Resolve("tp=8,pp=2");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->framework, Framework::kTorchtitan);
  EXPECT_EQ(f.Resolve("tp=8")->framework, Framework::kFsdp);
  EXPECT_FALSE(f.Resolve("framework=hf,tp=8,pp=2").ok());  // HF Trainer has no pipeline
}

// What frameworks run that a narrower rule refused: FSDP2 composed with EP/PP (torchtitan,
// NeMo AutoModel), FSDP's parameter offload (it takes the optimizer along), and Megatron
// interleaving with fewer layers than virtual stages (Qwen3-235B, 94 layers, pp=32 x vpp=3).
TEST(Layout, PublishedLayoutsFrameworksAccept) {
  Fixture moe("qwen3-30b-a3b", "dgx-h100", 1);
  auto ep = moe.Resolve("framework=fsdp,ep=8");
  ASSERT_TRUE(ep.ok()) << ep.status().message();
  EXPECT_EQ(ep->framework, Framework::kTorchtitan);
  Fixture f("llama-3.1-8b", "dgx-h100", 1);
  auto off = f.Resolve("framework=fsdp,offload_params=cpu");
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_EQ(off->offload_optimizer, Offload::kCpu);
  EXPECT_FALSE(f.Resolve("framework=fsdp,offload_params=cpu,offload_optimizer=none").ok());
  Fixture big("qwen3-235b-a22b", "dgx-h100", 32);
  auto v = big.Resolve("framework=megatron,tp=2,pp=32,vpp=3,ep=8");
  ASSERT_TRUE(v.ok()) << v.status().message();
}

// A workload that leaves the global batch out runs what the layout runs in one step.
TEST(Layout, UnstatedGlobalBatchIsOneStepOfTheLayout) {
  Fixture f("llama-3.1-8b", "dgx-h100", 12);
  f.w.global_batch_stated = false;  // the default 256 is not a multiple of 2 x 96
  auto l = f.Resolve("framework=fsdp,mbs=2");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->grad_accum, 1);
  EXPECT_EQ(f.Resolve("framework=fsdp,mbs=2,grad_accum=4")->grad_accum, 4);
  f.w.global_batch_stated = true;
  EXPECT_FALSE(f.Resolve("framework=fsdp,mbs=2").ok());
}

// QLoRA through peft turns gradient checkpointing on (prepare_model_for_kbit_training).
TEST(Layout, PeftQloraCheckpoints) {
  Fixture f("llama-3.1-8b", "rtx4090-pc", 1);
  f.w.task = Task::kQlora;
  f.w.global_batch = 1;
  EXPECT_EQ(f.Resolve("framework=hf,mbs=1")->ac, Recompute::kFull);
  EXPECT_EQ(f.Resolve("framework=hf,mbs=1,ac=none")->ac, Recompute::kNone);
  f.w.task = Task::kLora;
  EXPECT_EQ(f.Resolve("framework=hf,mbs=1")->ac, Recompute::kNone);  // HF Trainer's default
}

// NeMo and Megatron-Bridge recipes overlap TP communication whenever SP runs with TP;
// bare Megatron-LM and torchtitan leave it to the user (tp_overlap=on, async_tp=true).
TEST(Layout, TpOverlapFollowsTheRecipe) {
  Fixture f("llama-3.1-70b", "dgx-h100", 1);
  EXPECT_TRUE(f.Resolve("framework=nemo,tp=4")->tp_overlap);
  EXPECT_TRUE(f.Resolve("framework=megatron-bridge,tp=4")->tp_overlap);
  EXPECT_FALSE(f.Resolve("framework=nemo,tp=4,sp=off")->tp_overlap);
  EXPECT_FALSE(f.Resolve("framework=nemo,tp=4,tp_overlap=off")->tp_overlap);
  EXPECT_FALSE(f.Resolve("framework=megatron,tp=4")->tp_overlap);
  EXPECT_TRUE(f.Resolve("framework=torchtitan,tp=8,async_tp=true")->tp_overlap);
  EXPECT_EQ(FrameworkName(*f.Resolve("framework=nemo,tp=4")), "nemo");
}

// torchtitan's pipelines, micro-batch unstated: each rank's batch is cut into as many
// micro-batches as stages (releases before 2025-04), and the stage keeps its parameters
// gathered between forward and backward (fsdp_reshard_after_forward "default").
// Table 5 of torchtitan's 2024-12 benchmark: 405B, global batch 256, FSDP 8 x TP 8 x PP 8.
TEST(Layout, TorchtitanPipelineDefaults) {
  Fixture f("llama-3.1-405b", "dgx-h100", 64);
  f.w.global_batch = 256;
  auto l = f.Resolve("framework=torchtitan,dp=8,tp=8,pp=8");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->mbs, 4);  // 32 sequences per rank over 8 stages
  EXPECT_EQ(l->grad_accum, 8);
  EXPECT_FALSE(l->reshard_after_forward);
  EXPECT_TRUE(TorchtitanStageSplit(*l));
  auto newer = f.Resolve("framework=torchtitan,dp=8,tp=8,pp=8,mbs=1");
  ASSERT_TRUE(newer.ok());
  EXPECT_EQ(newer->grad_accum, 32);
  EXPECT_FALSE(TorchtitanStageSplit(*newer));
  // A stated release from 2025-04-07 on takes pipeline_parallel_microbatch_size 1; an older
  // stated one splits as before.
  f.w.release = 20250407;
  auto dated = f.Resolve("framework=torchtitan,dp=8,tp=8,pp=8");
  ASSERT_TRUE(dated.ok());
  EXPECT_EQ(dated->mbs, 1);
  EXPECT_EQ(dated->grad_accum, 32);
  f.w.release = 20241226;
  EXPECT_EQ(f.Resolve("framework=torchtitan,dp=8,tp=8,pp=8")->mbs, 4);
  f.w.release = 0;
  EXPECT_TRUE(f.Resolve("framework=torchtitan,dp=8,tp=8,pp=8,reshard=on")->reshard_after_forward);
  EXPECT_EQ(f.Resolve("framework=megatron,dp=8,tp=8,pp=8")->mbs, 1);  // Megatron's --micro-batch-size 1
  f.c.nodes = 8;
  auto flat = f.Resolve("framework=torchtitan,dp=8,tp=8");
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->mbs, 1);
  EXPECT_TRUE(flat->reshard_after_forward);
}

// The optimizer stepped in backward has no gradient buffer to accumulate micro-batches into.
TEST(Layout, OptimizerInBackwardNeedsOneMicroBatchPerStep) {
  Fixture f("llama-3.1-8b", "dgx-h100", 1);
  f.w.global_batch = 16;
  f.w.optimizer_in_backward = Setting::kOn;
  EXPECT_TRUE(f.Resolve("framework=torchtune,mbs=2").ok());
  auto l = f.Resolve("framework=torchtune,mbs=1");
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("optimizer_in_backward steps every micro-batch: grad_accum must be 1"),
            std::string::npos)
      << l.status().message();
}

// Settings by the names frameworks give them read as the layout's own keys.
TEST(Layout, KeyAliases) {
  auto l = ParseLayout("framework=megatron,tensor_model_parallel_size=4,pipeline_model_parallel_size=2,"
                       "micro_batch_size=2,gradient_checkpointing=true,Zero_Stage=1");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->tp, 4);
  EXPECT_EQ(l->pp, 2);
  EXPECT_EQ(l->mbs, 2);
  EXPECT_EQ(l->ac, Recompute::kFull);
  EXPECT_EQ(l->zero, 1);
  EXPECT_EQ(ParseLayout("ac=off")->ac, Recompute::kNone);
  // NeMo 2 and Megatron-core by their short names.
  EXPECT_EQ(FrameworkName(*ParseLayout("framework=nemo2,tp=2")), "nemo");
  EXPECT_EQ(ParseLayout("framework=mcore,tp=2")->framework, Framework::kMegatron);
  // The global batch a performance table lists beside the degrees belongs to the workload.
  EXPECT_NE(ParseLayout("framework=megatron,tp=8,gbs=1024").status().message().find(
                "unknown key 'gbs': the global batch is the workload's; give global_batch: in the workload file or --global-batch"),
            std::string::npos);
}

// Megatron's --recompute-method/--recompute-num-layers (NeMo 1.x: activations_checkpoint_*),
// the flags the Megatron writer emits for ac_layers and ac=full, read back: block N is
// ac_layers=N, uniform 1 is full recomputation of every layer. Uniform N > 1 checkpoints one
// input per N layers, which the memory model does not have: refused, saying so.
TEST(Layout, MegatronRecomputeFlags) {
  auto block = ParseLayout("framework=megatron,recompute_granularity=full,recompute_method=block,recompute_num_layers=4");
  ASSERT_TRUE(block.ok()) << block.status().message();
  EXPECT_EQ(block->ac, Recompute::kFull);
  EXPECT_EQ(block->ac_layers, 4);
  auto uniform = ParseLayout("framework=megatron,recompute_method=uniform,recompute_num_layers=1");
  ASSERT_TRUE(uniform.ok()) << uniform.status().message();
  EXPECT_EQ(uniform->ac, Recompute::kFull);
  EXPECT_EQ(uniform->ac_layers, 0);
  auto nemo = ParseLayout("framework=nemo,activations_checkpoint_method=block,activations_checkpoint_num_layers=3");
  ASSERT_TRUE(nemo.ok()) << nemo.status().message();
  EXPECT_EQ(nemo->ac_layers, 3);
  auto message = [](const char* text) { return ParseLayout(text).status().message(); };
  EXPECT_NE(message("recompute_method=uniform,recompute_num_layers=2").find("which shardplan does not model"), std::string::npos);
  EXPECT_NE(message("ac=selective,recompute_method=block,recompute_num_layers=2").find("go with full recomputation, but ac is selective"),
            std::string::npos);
  EXPECT_NE(message("recompute_num_layers=2").find("needs recompute_method=block or uniform"), std::string::npos);
  EXPECT_NE(message("recompute_method=blocks").find("got \"blocks\""), std::string::npos);
}

// torchtitan's [parallelism] section as its users write it: data_parallel_shard_degree ranks
// shard (FSDP) and data_parallel_replicate_degree groups of them replicate (HSDP).
TEST(Layout, TorchtitanMeshDegrees) {
  auto hsdp = ParseLayout("framework=torchtitan,dp_shard=8,dp_replicate=4,tensor_parallel_degree=2,ac=op");
  ASSERT_TRUE(hsdp.ok()) << hsdp.status().message();
  EXPECT_EQ(hsdp->dp, 32);
  EXPECT_EQ(hsdp->shard_group, 8);
  EXPECT_EQ(hsdp->zero, 3);
  EXPECT_EQ(hsdp->tp, 2);
  EXPECT_EQ(hsdp->ac, Recompute::kSelective);
  auto ddp = ParseLayout("framework=torchtitan,data_parallel_shard_degree=1,data_parallel_replicate_degree=8");
  ASSERT_TRUE(ddp.ok()) << ddp.status().message();
  EXPECT_EQ(ddp->dp, 8);
  EXPECT_EQ(ddp->zero, 0);
  EXPECT_EQ(ddp->shard_group, 0);
  auto fsdp = ParseLayout("framework=megatron,fsdp=16,tp=2");
  ASSERT_TRUE(fsdp.ok()) << fsdp.status().message();
  EXPECT_EQ(fsdp->dp, 16);
  EXPECT_EQ(fsdp->zero, 3);
  auto rest = ParseLayout("framework=torchtitan,dp_shard=-1,tp=8");  // the GPUs left: dp from the cluster
  ASSERT_TRUE(rest.ok()) << rest.status().message();
  EXPECT_EQ(rest->zero, 3);
  EXPECT_FALSE(rest->fixed & kKeyDp);
  const std::string clash = ParseLayout("dp=16,dp_shard=4,dp_replicate=2").status().message();
  EXPECT_NE(clash.find("dp_shard x dp_replicate make dp 8, but dp is 16 (\"dp=16\")"), std::string::npos) << clash;
}

// FSDP1's ShardingStrategy, as accelerate's fsdp_sharding_strategy writes it (by name or 1-5):
// FULL_SHARD is ZeRO-3, SHARD_GRAD_OP ZeRO-2, NO_SHARD DDP; HYBRID_SHARD shards over a node's
// GPUs and replicates across nodes, which ResolveLayout reads off the cluster (8 per DGX).
TEST(Layout, FsdpShardingStrategy) {
  Fixture f("llama-3.1-8b", "dgx-h100", 4);
  auto hybrid = f.Resolve("sharding_strategy=HYBRID_SHARD");
  ASSERT_TRUE(hybrid.ok()) << hybrid.status().message();
  EXPECT_EQ(hybrid->framework, Framework::kFsdp);
  EXPECT_EQ(hybrid->dp, 32);
  EXPECT_EQ(hybrid->zero, 3);
  EXPECT_EQ(hybrid->shard_group, 8);
  auto with_tp = f.Resolve("fsdp_sharding_strategy=4,tp=2");
  ASSERT_TRUE(with_tp.ok()) << with_tp.status().message();
  EXPECT_EQ(with_tp->shard_group, 4);  // the node's 8 GPUs hold 4 data-parallel ranks of TP 2
  auto zero2 = f.Resolve("sharding_strategy=_HYBRID_SHARD_ZERO2");
  ASSERT_TRUE(zero2.ok()) << zero2.status().message();
  EXPECT_EQ(zero2->zero, 2);
  EXPECT_EQ(zero2->shard_group, 8);
  EXPECT_EQ(ParseLayout("sharding_strategy=SHARD_GRAD_OP")->zero, 2);
  EXPECT_EQ(ParseLayout("sharding_strategy=no_shard")->zero, 0);
  EXPECT_EQ(ParseLayout("fsdp_sharding_strategy=1")->zero, 3);
  // Before the cluster is read the group is "node", and writes back as such.
  auto parsed = ParseLayout("sharding_strategy=HYBRID_SHARD");
  ASSERT_TRUE(parsed.ok());
  EXPECT_NE(FormatLayout(*parsed).find("shard_group=node"), std::string::npos) << FormatLayout(*parsed);
  EXPECT_EQ(ParseLayout(FormatLayout(*parsed))->shard_group, kShardGroupNode);
  EXPECT_EQ(f.Resolve("framework=fsdp,shard_group=node")->shard_group, 8);
  Fixture one("llama-3.1-8b", "dgx-h100", 1);  // one node: hybrid is full sharding
  EXPECT_EQ(one.Resolve("sharding_strategy=HYBRID_SHARD")->shard_group, 0);
  auto message = [](const char* text) { return ParseLayout(text).status().message(); };
  EXPECT_NE(message("sharding_strategy=FULL_SHARD,zero=2").find("is ZeRO-3, but zero is 2 (\"zero=2\")"), std::string::npos);
  EXPECT_NE(message("framework=deepspeed,sharding=FULL_SHARD").find("is torch FSDP's sharding strategy, but the framework is deepspeed"),
            std::string::npos);
  EXPECT_NE(message("sharding_strategy=HYBRID").find("got \"HYBRID\""), std::string::npos);
}

// Items separated by spaces, as tables and commands write them; a space around '=' or ','
// stays inside its item.
TEST(Layout, SpaceSeparatedItems) {
  auto l = ParseLayout("framework=megatron tp=8  pp = 2, mbs=1");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->framework, Framework::kMegatron);
  EXPECT_EQ(l->tp, 8);
  EXPECT_EQ(l->pp, 2);
  EXPECT_EQ(l->mbs, 1);
  EXPECT_NE(ParseLayout("tp=8 pp").status().message().find("got \"pp\""), std::string::npos);
}

// Megatron's --recompute-modules, '/'-separated inside the comma-separated layout.
TEST(Layout, RecomputeModules) {
  auto l = ParseLayout("framework=megatron,ac=selective,ac_modules=moe_act/layernorm");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->ac_modules, kAcMoeAct | kAcLayernorm);
  EXPECT_NE(FormatLayout(*l).find("ac_modules=moe_act/layernorm"), std::string::npos) << FormatLayout(*l);
  EXPECT_EQ(ParseLayout(FormatLayout(*l))->ac_modules, l->ac_modules);
  EXPECT_NE(ParseLayout("ac_modules=moe_actt").status().message().find("did you mean 'moe_act'?"), std::string::npos);
  Fixture f("qwen3-30b-a3b", "dgx-h100", 1);
  EXPECT_NE(f.Resolve("framework=megatron,ac=full,ac_modules=moe").status().message().find("applies to ac=selective only"),
            std::string::npos);
  EXPECT_NE(f.Resolve("framework=torchtitan,ac=selective,ac_modules=moe").status().message().find("framework=torchtitan has no such setting"),
            std::string::npos);
}

TEST(Layout, KvHeadsReplicatedWhenTpExceedsThem) {
  Fixture f("qwen2.5-7b", "dgx-h100", 1);  // 28 heads, 4 KV heads
  EXPECT_TRUE(f.Resolve("framework=megatron,tp=4").ok());
  Fixture g("llama-3.1-8b", "dgx-h100", 1);  // 8 KV heads: tp=8 divides them
  EXPECT_TRUE(g.Resolve("framework=megatron,tp=8").ok());
}

TEST(RankMap, TpInnermostStaysInsideANode) {
  Fixture f("llama-3.1-70b", "dgx-h100", 4);
  auto l = f.Resolve("framework=megatron,tp=8,pp=2");
  ASSERT_TRUE(l.ok());
  std::vector<RankPlace> map = MakeRankMap(f.c, *l);
  ASSERT_EQ(map.size(), 32u);
  for (const RankPlace& r : map) {
    std::vector<int> tp = GroupOf(f.c, *l, r.rank, "tp");
    ASSERT_EQ(tp.size(), 8u);
    for (int peer : tp) EXPECT_EQ(map[static_cast<size_t>(peer)].node, r.node);
  }
  EXPECT_EQ(map[17].pp, 1);  // ranks 16..31 are the second stage
  EXPECT_EQ(map[17].dp, 0);
  EXPECT_EQ(GroupOf(f.c, *l, 3, "pp"), (std::vector<int>{3, 19}));
  EXPECT_EQ(GroupOf(f.c, *l, 3, "dp"), (std::vector<int>{3, 11}));
}

// The MoE token exchange: Megatron's --moe-token-dispatcher-type and its flex backends by the
// names recipes and tables give them. NeMo and Megatron-Bridge recipes run flex; Megatron-LM and
// torchtitan an all-to-all. The resolved choice is printed whenever experts are parallel.
TEST(Layout, DispatcherNamesAndDefaults) {
  Fixture f("qwen3-30b-a3b", "dgx-h100", 2);
  for (const auto& [text, want] : std::vector<std::pair<std::string, EpDispatch>>{
           {"deepep", EpDispatch::kFlex}, {"HybridEP", EpDispatch::kFlex}, {"flex", EpDispatch::kFlex},
           {"a2a", EpDispatch::kAllToAll}, {"all_to_all", EpDispatch::kAllToAll}, {"allgather", EpDispatch::kAllGather}}) {
    auto l = f.Resolve("framework=megatron,ep=8,moe_token_dispatcher_type=" + text);
    ASSERT_TRUE(l.ok()) << text << ": " << l.status().message();
    EXPECT_EQ(l->dispatcher, want) << text;
  }
  EXPECT_EQ(f.Resolve("framework=megatron,ep=8")->dispatcher, EpDispatch::kAllToAll);
  EXPECT_EQ(f.Resolve("framework=megatron-bridge,ep=8")->dispatcher, EpDispatch::kFlex);
  EXPECT_EQ(f.Resolve("framework=torchtitan,ep=8")->dispatcher, EpDispatch::kAllToAll);
  EXPECT_NE(FormatLayout(*f.Resolve("framework=nemo,ep=16")).find(",dispatcher=flex"), std::string::npos);
  EXPECT_EQ(FormatLayout(*f.Resolve("framework=megatron,tp=2")).find("dispatcher"), std::string::npos);
  auto overlapped = f.Resolve("framework=megatron,ep=8,moe_a2a_overlap=true");
  ASSERT_TRUE(overlapped.ok()) << overlapped.status().message();
  EXPECT_TRUE(overlapped->ep_overlap);
  EXPECT_NE(FormatLayout(*overlapped).find(",dispatcher=alltoall,ep_overlap=on"), std::string::npos) << FormatLayout(*overlapped);
  // Megatron's TransformerConfig refuses the overlap without EP, with the allgather
  // dispatcher, with full recomputation, and with pp > 1 unless interleaved.
  for (const char* bad_layout : {"framework=megatron,tp=2,ep_overlap=on", "framework=megatron,ep=8,dispatcher=allgather,ep_overlap=on",
                                 "framework=megatron,ep=8,ac=full,ep_overlap=on", "framework=megatron,ep=8,pp=2,ep_overlap=on",
                                 "framework=torchtitan,ep=8,ep_overlap=on"}) {
    auto refused = f.Resolve(bad_layout);
    ASSERT_FALSE(refused.ok()) << bad_layout;
    EXPECT_NE(refused.status().message().find("ep_overlap"), std::string::npos) << refused.status().message();
  }
  EXPECT_TRUE(f.Resolve("framework=megatron,ep=8,pp=2,vpp=2,ac=selective,ep_overlap=on").ok());
  auto bad = ParseLayout("dispatcher=nccl");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("alltoall, allgather or flex"), std::string::npos) << bad.status().message();
}

// The expert layers refold a stage's ranks ETP innermost, then EP (Megatron-core's expert
// rank generator): with etp=1 an EP group is consecutive ranks, the TP ranks among them, so
// EP 8 under TP 2 stays in one 8-GPU node; with etp=2 it takes every other rank.
TEST(RankMap, ExpertGroupsFoldTensorParallelRanks) {
  ClusterSpec c;
  c.gpus_per_node = 8;
  c.nodes = 2;
  Layout l;
  l.tp = 2, l.dp = 8, l.ep = 8, l.etp = 1;
  EXPECT_EQ(GroupOf(c, l, 3, "ep"), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(SpanOf(l, GroupKind::kEp).stride, 1);
  EXPECT_EQ(MakeRankMap(c, l)[11].ep, 3);
  l.etp = 2;
  EXPECT_EQ(GroupOf(c, l, 3, "ep"), (std::vector<int>{1, 3, 5, 7, 9, 11, 13, 15}));
  EXPECT_EQ(SpanOf(l, GroupKind::kEp).stride, 2);
  EXPECT_EQ(SpanOf(l, GroupKind::kExpertData).size, 1);
}

// The time model prices each group by its span (planner/layout.h SpanOf); the validator and
// the launch scripts place ranks by MakeRankMap / GroupOf. Both must describe the same groups.
TEST(RankMap, SpansDescribeTheGroupsOfTheRankMap) {
  ClusterSpec c;
  c.gpus_per_node = 8;
  c.nodes = 16;
  const std::pair<const char*, GroupKind> kinds[] = {{"tp", GroupKind::kTp}, {"cp", GroupKind::kCp},
                                                     {"dp", GroupKind::kDp}, {"pp", GroupKind::kPp},
                                                     {"ep", GroupKind::kEp}, {"shard", GroupKind::kShard},
                                                     {"replicate", GroupKind::kReplicate},
                                                     {"dp_cp", GroupKind::kDataContext},
                                                     {"shard_cp", GroupKind::kShardContext}};
  for (const auto& [tp, cp, dp, pp, ep, shard] : std::vector<std::array<int, 6>>{
           {2, 2, 4, 2, 4, 2}, {4, 1, 8, 2, 2, 4}, {1, 4, 2, 4, 8, 0}, {8, 2, 2, 2, 1, 1}}) {
    Layout l;
    l.tp = tp, l.cp = cp, l.dp = dp, l.pp = pp, l.ep = ep, l.shard_group = shard;
    for (const auto& [name, kind] : kinds) {
      const GroupSpan span = SpanOf(l, kind);
      for (int rank : {0, 5, l.world() - 1}) {
        const std::vector<int> group = GroupOf(c, l, rank, name);
        ASSERT_EQ(static_cast<int>(group.size()), span.size) << name << " rank " << rank;
        for (size_t i = 1; i < group.size(); ++i) EXPECT_EQ(group[i] - group[i - 1], span.stride) << name;
      }
    }
  }
}

}  // namespace
}  // namespace shardplan
