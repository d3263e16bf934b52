// plan.yaml stands alone and reproduces its estimates exactly when read back.
#include <gtest/gtest.h>

#include <filesystem>

#include "planner/io/document.h"
#include "planner/io/model_reader.h"
#include "planner/io/plan_file.h"
#include "topology/cluster_reader.h"

namespace shardplan {
namespace {

Plan MakeTestPlan(const std::string& model, const std::string& layout, int nodes, Task task = Task::kPretrain) {
  Plan p;
  p.model_ref = model;
  p.cluster_ref = "dgx-h100";
  p.workload_ref = "pretrain";
  p.model = *LoadModel(model);
  p.cluster = *LoadCluster("dgx-h100");
  p.cluster.nodes = nodes;
  p.workload.task = task;
  p.workload.seq_len = 4096;
  p.workload.global_batch = 256;
  auto l = ResolveLayout(p.model, p.workload, p.cluster, *ParseLayout(layout));
  EXPECT_TRUE(l.ok()) << l.status().message();
  p.layout = *l;
  p.memory = EstimateMemory(p.model, p.workload, p.layout, p.cluster, p.memory_options);
  p.time = EstimateTime(p.model, p.workload, p.layout, p.cluster);
  p.reason = "test";
  return p;
}

void ExpectSameEstimate(const Plan& a, const Plan& b) {
  EXPECT_EQ(FormatLayout(a.layout), FormatLayout(b.layout));
  EXPECT_EQ(CountParams(a.model).total, CountParams(b.model).total);
  ASSERT_EQ(a.memory.stages.size(), b.memory.stages.size());
  for (size_t i = 0; i < a.memory.stages.size(); ++i) {
    EXPECT_EQ(a.memory.stages[i].device_peak, b.memory.stages[i].device_peak) << "stage " << i;
    EXPECT_EQ(a.memory.stages[i].allocated_peak, b.memory.stages[i].allocated_peak) << "stage " << i;
  }
  EXPECT_EQ(a.memory.per_node_host_bytes, b.memory.per_node_host_bytes);
  EXPECT_DOUBLE_EQ(a.time.step_seconds, b.time.step_seconds);
}

TEST(PlanFile, RoundTripsEveryFamily) {
  const char* cases[][2] = {{"llama-3.1-70b", "framework=megatron,tp=8,pp=4,vpp=2,sp=on,ac=selective,mbs=1"},
                            {"mixtral-8x7b", "framework=megatron,tp=2,ep=8,pp=2,sp=on,ac=full"},
                            {"deepseek-v3", "framework=megatron,tp=8,ep=8,pp=8,sp=on,ac=full"},
                            {"qwen3-30b-a3b", "framework=torchtitan,ep=8,ac=full"},
                            {"gemma-2-27b", "framework=fsdp,zero=3,ac=full,mbs=1"},
                            {"gpt2", "framework=deepspeed,zero=2"},
                            {"qwen2.5-72b", "framework=deepspeed,zero=3,offload_optimizer=cpu,offload_params=cpu,ac=full"}};
  for (const auto& c : cases) {
    Plan p = MakeTestPlan(c[0], c[1], 8);
    auto back = ParsePlan("plan.yaml", PlanToYaml(p));
    ASSERT_TRUE(back.ok()) << c[0] << ": " << back.status().message();
    ExpectSameEstimate(p, *back);
    EXPECT_EQ(back->reason, "test");
  }
}

// A GB200 NVL72 plan keeps its 72-GPU NVLink domain and the GPU's catalog network when read
// back (tensor parallelism of 8 spans two 4-GPU trays on NVLink, not on the NICs), and a
// link whose latency nobody measured reads back as unmeasured.
TEST(PlanFile, RackScaleDomainRoundTrips) {
  Plan p = MakeTestPlan("llama-3.1-70b", "framework=megatron,tp=8,pp=2,sp=on,ac=full,mbs=1", 2);
  auto doc = Document::Parse("rack.yaml", "nodes: 18\ngpus_per_node: 4\ngpu: GB200\n");
  ASSERT_TRUE(doc.ok());
  auto rack = ParseCluster(*doc);
  ASSERT_TRUE(rack.ok()) << rack.status().message();
  rack->intra_node.latency_s = 0;
  p.workload.global_batch = 288;
  p.cluster = *rack;
  auto l = ResolveLayout(p.model, p.workload, p.cluster, *ParseLayout("framework=megatron,tp=8,pp=3,sp=on,ac=full,mbs=1"));
  ASSERT_TRUE(l.ok()) << l.status().message();
  p.layout = *l;
  p.memory = EstimateMemory(p.model, p.workload, p.layout, p.cluster, p.memory_options);
  p.time = EstimateTime(p.model, p.workload, p.layout, p.cluster);
  auto back = ParsePlan("plan.yaml", PlanToYaml(p));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->cluster.gpu.nvlink_domain, 72);
  EXPECT_EQ(back->cluster.nvlink_domain_size(), 72);
  EXPECT_DOUBLE_EQ(back->cluster.gpu.nic_bandwidth, 400e9 / 8);
  EXPECT_EQ(back->cluster.inter_node, p.cluster.inter_node);
  EXPECT_DOUBLE_EQ(back->cluster.intra_node.latency_s, 2e-6);  // the reader's default
  EXPECT_EQ(FormatLayout(p.layout), FormatLayout(back->layout));
  EXPECT_EQ(p.memory.fullest().device_peak, back->memory.fullest().device_peak);
}

TEST(PlanFile, ModelKeysRoundTripForEveryBuiltin) {
  for (const char* name : {"llama-2-7b", "llama-3.1-405b", "mistral-7b", "mixtral-8x22b", "qwen2.5-7b", "qwen3-8b",
                           "qwen3-235b-a22b", "gemma-2-9b", "deepseek-v3", "gpt2"}) {
    ModelSpec m = *LoadModel(name);
    auto doc = Document::Parse("m.yaml", ModelToYaml(m, 0));
    ASSERT_TRUE(doc.ok()) << name;
    auto back = ParseModel(*doc, name);
    ASSERT_TRUE(back.ok()) << name << ": " << back.status().message();
    ParamCounts a = CountParams(m), b = CountParams(*back);
    EXPECT_EQ(a.total, b.total) << name;
    EXPECT_EQ(a.active, b.active) << name;
    EXPECT_EQ(m.moe_layer, back->moe_layer) << name;
  }
}

// MPT's attention kernel is a model key (attn_config.attn_impl), and a plan keeps it.
TEST(PlanFile, MptAttentionKernelRoundTrips) {
  for (AttentionImpl impl : {AttentionImpl::kUnstated, AttentionImpl::kEager, AttentionImpl::kTriton, AttentionImpl::kFlash}) {
    auto src = Document::Parse("c.json", R"({"model_type":"mpt","n_layers":4,"d_model":1024,"n_heads":8})");
    ASSERT_TRUE(src.ok());
    ModelSpec m = *ParseModel(*src, "mpt");
    m.attention_impl = impl;
    auto doc = Document::Parse("m.yaml", ModelToYaml(m, 2));
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    auto back = ParseModel(*doc, "mpt");
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->attention_impl, impl);
    EXPECT_EQ(CountParams(*back).total, CountParams(m).total);
  }
}

TEST(PlanFile, SavesAtomicallyAndLoads) {
  Plan p = MakeTestPlan("llama-3.1-8b", "framework=fsdp", 1);
  auto path = std::filesystem::temp_directory_path() / "shardplan_plan_test.yaml";
  ASSERT_TRUE(SavePlan(p, path.string()).ok());
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".tmp"));
  auto back = LoadPlan(path.string());
  ASSERT_TRUE(back.ok()) << back.status().message();
  ExpectSameEstimate(p, *back);
  std::filesystem::remove(path);
}

TEST(PlanFile, RejectsABrokenPlan) {
  Plan p = MakeTestPlan("llama-3.1-8b", "framework=fsdp", 1);
  std::string text = PlanToYaml(p);
  text.replace(text.find("tp=1"), 4, "tp=3");
  auto back = ParsePlan("plan.yaml", text);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("plan.yaml:"), std::string::npos) << back.status().message();
  EXPECT_FALSE(ParsePlan("plan.yaml", "version: 1\n").ok());
}

TEST(PlanFile, InferencePlan) {
  Plan p = MakeTestPlan("llama-2-70b", "tp=4", 1, Task::kInference);
  auto back = ParsePlan("plan.yaml", PlanToYaml(p));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->memory.kv.max_kv_tokens, p.memory.kv.max_kv_tokens);
  // Each engine's setting is written in its own keys and read back as that engine.
  for (ServingEngine engine : {ServingEngine::kVllm, ServingEngine::kSglang, ServingEngine::kTransformers}) {
    Plan q = p;
    q.workload.inference.engine = engine;
    auto again = ParsePlan("plan.yaml", PlanToYaml(q));
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(again->workload.inference, q.workload.inference);
  }
}

}  // namespace
}  // namespace shardplan
