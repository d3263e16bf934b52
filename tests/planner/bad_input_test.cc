// Every class of bad input is rejected with exit code 2 and a message naming the file,
// line and column, what was expected and what was found (issue: foundation, item 6).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <utility>
#include <vector>

#include "planner/io/model_reader.h"
#include "planner/memory_terms.h"
#include "planner/io/workload_reader.h"
#include "planner/layout.h"
#include "planner/units.h"
#include "topology/cluster_reader.h"
#include "topology/standard_node.h"

namespace shardplan {
namespace {

std::string Message(const Status& s) { return s.message(); }

Status ModelError(const std::string& name, const std::string& text) {
  auto doc = Document::Parse(name, text);
  if (!doc.ok()) return doc.status();
  auto m = ParseModel(*doc, "x");
  return m.ok() ? Status::Ok() : m.status();
}

struct Case {
  const char* what;
  const char* name;
  const char* text;
  const char* expect;  // a substring of the message
};

class ModelRejects : public ::testing::TestWithParam<Case> {};

TEST_P(ModelRejects, WithLocation) {
  const Case& c = GetParam();
  Status s = ModelError(c.name, c.text);
  ASSERT_FALSE(s.ok()) << c.what;
  EXPECT_EQ(s.code(), Code::kBadInput) << c.what;
  EXPECT_NE(Message(s).find(c.expect), std::string::npos) << c.what << ": [" << Message(s) << "]";
}

INSTANTIATE_TEST_SUITE_P(
    BadModels, ModelRejects,
    ::testing::Values(
        Case{"misspelled key", "c.json", "{\n  \"model_type\": \"llama\",\n  \"hidden_sise\": 4096\n}",
             "c.json:3:3: unknown key 'hidden_sise', did you mean 'hidden_size'?"},
        Case{"negative size", "c.json", "{\"model_type\": \"llama\", \"hidden_size\": -4096}",
             "c.json:1:40: hidden_size: expected an integer from 1 to 4194304, got -4096"},
        Case{"zero layers", "c.json", "{\"model_type\": \"llama\", \"num_hidden_layers\": 0}",
             "num_hidden_layers: expected an integer from 1"},
        Case{"absurd size", "c.json", "{\"model_type\": \"llama\", \"hidden_size\": 900000000}",
             "hidden_size: expected an integer from 1 to 4194304, got 900000000"},
        Case{"past int64", "c.json", "{\"model_type\": \"llama\", \"vocab_size\": 99999999999999999999999}",
             "past the 64-bit integer range"},
        Case{"string for a number", "c.yaml", "model_type: llama\nhidden_size: eight\n",
             "c.yaml:2:14: hidden_size: expected an integer from 1 to 4194304, got \"eight\""},
        Case{"heads do not divide hidden", "c.json",
             "{\"model_type\": \"llama\", \"hidden_size\": 1000, \"num_attention_heads\": 7}",
             "num_attention_heads (7) does not divide hidden_size (1000)"},
        Case{"kv heads do not divide heads", "c.json",
             "{\"model_type\": \"llama\", \"num_attention_heads\": 32, \"num_key_value_heads\": 5}",
             "num_key_value_heads (5) must divide num_attention_heads (32)"},
        Case{"unknown model type", "c.json", "{\"model_type\": \"lama\"}", "unsupported \"lama\", did you mean 'llama'?"},
        Case{"no model type", "c.json", "{\"hidden_size\": 8}", "model_type: missing"},
        Case{"empty file", "c.json", "", "c.json:1:1: the file is empty"},
        Case{"blank file", "c.yaml", "  \n\n", "the file is empty"},
        Case{"invalid JSON", "c.json", "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096,\n}", "c.json:4:1: invalid JSON"},
        Case{"invalid YAML", "c.yaml", "model_type: llama\n  hidden_size: [1, 2\n", "c.yaml:2:"},
        Case{"invalid UTF-8", "c.json", "{\"model_type\": \"llama\", \"name\": \"\xff\xfe\"}",
             "c.json:1:34: invalid UTF-8 (byte 0xFF)"},
        Case{"top level not a mapping", "c.yaml", "- 1\n- 2\n", "expected a mapping of keys at the top"},
        Case{"bad dtype", "c.json", "{\"model_type\": \"llama\", \"torch_dtype\": \"bfloat17\"}",
             "torch_dtype: expected a dtype like \"bfloat16\", got \"bfloat17\""},
        Case{"top-k above experts", "c.json", "{\"model_type\": \"mixtral\", \"num_experts_per_tok\": 9}",
             "num_experts_per_tok (9) exceeds the number of experts (8)"}),
    [](const auto& info) {
      std::string n = info.param.what;
      for (char& ch : n)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

TEST(ModelRejects, UnknownHfKeysAreIgnored) {
  EXPECT_TRUE(ModelError("c.json", R"({"model_type":"llama","rope_scaling":{"type":"yarn"},"eos_token_id":[1,2],
    "pretraining_tp":1,"bos_token_id":1,"use_cache":true})").ok());
}

TEST(Files, MissingDirectoryAndEmpty) {
  auto missing = LoadModel("/nonexistent/dir/config.json");
  EXPECT_EQ(missing.status().code(), Code::kBadInput);
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);

  auto dir = std::filesystem::temp_directory_path() / "shardplan_test_dir.json";
  std::filesystem::create_directories(dir);
  auto d = LoadModel(dir.string());
  EXPECT_NE(d.status().message().find("is a directory"), std::string::npos) << d.status().message();

  auto empty = std::filesystem::temp_directory_path() / "shardplan_empty.json";
  std::ofstream(empty).close();
  auto e = LoadModel(empty.string());
  EXPECT_NE(e.status().message().find("the file is empty"), std::string::npos);
}

TEST(Names, UnknownBuiltinSuggests) {
  auto m = LoadModel("llama-3.1-80b");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("did you mean 'llama-3.1-70b'?"), std::string::npos) << m.status().message();
}

StatusOr<ClusterSpec> ReadCluster(const std::string& text) {
  auto doc = Document::Parse("cluster.yaml", text);
  if (!doc.ok()) return doc.status();
  return ParseCluster(*doc);
}

Status ClusterError(const std::string& text) {
  auto c = ReadCluster(text);
  return c.ok() ? Status::Ok() : c.status();
}

TEST(ClusterRejects, OurOwnKeysAreStrict) {
  Status s = ClusterError("name: x\ngpus_per_node: 8\ngpu: h100-sxm-80gb\nheadroom_gb: 4\n");
  EXPECT_NE(s.message().find("cluster.yaml:4:1: unknown key 'headroom_gb'"), std::string::npos) << s.message();
  s = ClusterError("gpus_per_node: eight\ngpu: h100-sxm-80gb\n");
  EXPECT_NE(s.message().find("cluster.yaml:1:16: gpus_per_node: expected an integer from 1 to 1024, got \"eight\""),
            std::string::npos) << s.message();
  s = ClusterError("gpus_per_node: 8\ngpu: h100-sxm-80gb\nintra_node: {fabric: nvlink, bandwidth: 450}\n");
  EXPECT_NE(s.message().find("bandwidth: a bandwidth needs a unit"), std::string::npos) << s.message();
  s = ClusterError("gpus_per_node: 8\ngpu: h100-sxn-80gb\n");  // ("h100-sxm-80g" is the 80 GB part, as sources write it)
  EXPECT_NE(s.message().find("did you mean 'h100-sxm-80gb'?"), std::string::npos) << s.message();
  s = ClusterError("gpus_per_node: 8\ngpu: {name: X, memory: 96}\n");
  EXPECT_NE(s.message().find("memory: a size needs a unit"), std::string::npos) << s.message();
}

TEST(ClusterRejects, InlineGpuAccepted) {
  auto doc = Document::Parse("c.yaml", "gpus_per_node: 4\ngpu: {name: H100 96GB, memory: 96 GB, bf16_tflops: 989, "
                                       "memory_bandwidth: 3.35 TB/s}\n");
  ASSERT_TRUE(doc.ok());
  auto c = ParseCluster(*doc);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->gpu.memory_bytes, 96'000'000'000LL);
  EXPECT_DOUBLE_EQ(c->gpu.bf16_flops, 989e12);
}

TEST(WorkloadRejects, UnknownKeyAndValues) {
  auto doc = Document::Parse("w.yaml", "task: pretrain\nseq_lenght: 4096\n");
  ASSERT_TRUE(doc.ok());
  auto w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("w.yaml:2:1: unknown key 'seq_lenght', did you mean 'seq_len'?"), std::string::npos)
      << w.status().message();
  doc = Document::Parse("w.yaml", "task: pretrian\n");
  w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("w.yaml:1:7: task: expected pretrain"), std::string::npos) << w.status().message();
  // Preference training is named for what it lacks, not as a misspelling.
  doc = Document::Parse("w.yaml", "task: DPO\n");
  w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("w.yaml:1:7: task: \"DPO\" is preference or RL training"), std::string::npos)
      << w.status().message();
  doc = Document::Parse("w.yaml", "task: pretrain\nseq_len: 4kb\n");
  w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("w.yaml:2:10: seq_len: expected an integer"), std::string::npos) << w.status().message();
  doc = Document::Parse("w.yaml", "task: pretrain\nseq_len: 0k\n");
  w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("w.yaml:2:10: seq_len: expected tokens from 1"), std::string::npos) << w.status().message();
}

// An optimizer block (torchtune's _component_, DeepSpeed's type) must name the class; a third
// AdamW state (amsgrad) is refused rather than priced as two; an unknown class is named.
TEST(WorkloadRejects, OptimizerBlock) {
  auto doc = Document::Parse("w.yaml", "task: pretrain\noptimizer:\n  lr: 1e-5\n");
  ASSERT_TRUE(doc.ok());
  auto w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("w.yaml:3:3: optimizer: a block needs the optimizer's class"), std::string::npos)
      << w.status().message();
  doc = Document::Parse("w.yaml", "task: pretrain\noptimizer: {_component_: torch.optim.AdamW, amsgrad: true}\n");
  w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("optimizer: amsgrad keeps a third state"), std::string::npos) << w.status().message();
  doc = Document::Parse("w.yaml", "task: pretrain\noptimizer:\n  _component_: came_pytorch.CAME\n");
  w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("w.yaml:3:16: optimizer: expected adamw"), std::string::npos) << w.status().message();
  EXPECT_NE(w.status().message().find("got \"came_pytorch.CAME\""), std::string::npos) << w.status().message();
  doc = Document::Parse("w.yaml", "task: pretrain\noptimizer: {type: AdamW, weight_decya: 0.1}\n");
  w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("unknown key 'weight_decya', did you mean 'weight_decay'?"), std::string::npos)
      << w.status().message();
}

// NVFP4 is a training precision (Megatron-Bridge's tables write NVFP4) and a weight format to
// serve; no serving engine keeps a KV cache in it.
TEST(WorkloadRejects, Nvfp4WhereItIsNotARecipe) {
  auto doc = Document::Parse("w.yaml", "task: pretrain\nprecision: NVFP4\n");
  ASSERT_TRUE(doc.ok());
  auto w = ParseWorkload(*doc);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->precision, Dtype::kFp4);
  doc = Document::Parse("w.yaml", "task: inference\nprecision: nvfp4\n");
  w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("w.yaml:2:12: precision: nvfp4 is a training recipe"), std::string::npos)
      << w.status().message();
  doc = Document::Parse("w.yaml", "task: inference\ninference: {weights: nvfp4, kv_cache: nvfp4}\n");
  w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("kv_cache: nvfp4 is not a KV-cache format"), std::string::npos) << w.status().message();
  EXPECT_FALSE(ParseLayout("kv_cache=nvfp4").ok());
  EXPECT_EQ(ParseLayout("weights=nvfp4")->weights, Dtype::kFp4);
}

// SGLang's fraction is its own key (or engine: sglang with gpu_memory_utilization); an
// engine shardplan does not model, or both fractions at once, is an error on its line.
TEST(WorkloadRejects, ServingEngine) {
  auto doc = Document::Parse("w.yaml", "task: inference\ninference: {mem_fraction_static: 0.88}\n");
  ASSERT_TRUE(doc.ok());
  auto w = ParseWorkload(*doc);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->inference.engine, ServingEngine::kSglang);
  EXPECT_DOUBLE_EQ(w->inference.gpu_memory_utilization, 0.88);
  doc = Document::Parse("w.yaml", "task: inference\ninference:\n  engine: TGI\n");
  w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("w.yaml:3:11: engine: expected vllm, sglang, tensorrt-llm or transformers (its "
                                      "generate), got \"TGI\""),
            std::string::npos)
      << w.status().message();
  // TensorRT-LLM by name or by its fraction (trtllm-bench's flag name too), and its
  // max_num_tokens; the writer's text reads back to the same.
  for (const char* text : {"task: inference\ninference: {engine: TensorRT-LLM, free_gpu_memory_fraction: 0.95}\n",
                           "task: inference\ninference: {kv_cache_free_gpu_mem_fraction: 0.95, max_num_tokens: 4096}\n"}) {
    doc = Document::Parse("w.yaml", text);
    w = ParseWorkload(*doc);
    ASSERT_TRUE(w.ok()) << w.status().message();
    EXPECT_EQ(w->inference.engine, ServingEngine::kTensorrtLlm) << text;
    EXPECT_DOUBLE_EQ(w->inference.gpu_memory_utilization, 0.95) << text;
    auto again = Document::Parse("again.yaml", WorkloadToYaml(*w, 0));
    ASSERT_TRUE(again.ok());
    auto back = ParseWorkload(*again);
    ASSERT_TRUE(back.ok()) << back.status().message() << WorkloadToYaml(*w, 0);
    EXPECT_EQ(back->inference, w->inference) << text;
  }
  doc = Document::Parse("w.yaml", "task: inference\ninference: {engine: sglang, free_gpu_memory_fraction: 0.9}\n");
  w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("free_gpu_memory_fraction: a TensorRT-LLM setting, but engine is sglang"),
            std::string::npos)
      << w.status().message();
  // transformers' generate has no memory fraction or batched-token budget to set.
  doc = Document::Parse("w.yaml", "task: inference\ninference:\n  engine: transformers\n  gpu_memory_utilization: 0.9\n");
  w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("w.yaml:4:27: gpu_memory_utilization: a serving engine's setting; transformers' "
                                      "generate has none"),
            std::string::npos)
      << w.status().message();
  doc = Document::Parse("w.yaml", "task: inference\ninference: {engine: hf, batch: 8}\n");
  w = ParseWorkload(*doc);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->inference.engine, ServingEngine::kTransformers);
  doc = Document::Parse("w.yaml", "task: inference\ninference:\n  gpu_memory_utilization: 0.9\n  mem_fraction_static: 0.8\n");
  w = ParseWorkload(*doc);
  EXPECT_NE(w.status().message().find("w.yaml:4:24: mem_fraction_static: give it or gpu_memory_utilization, not both"),
            std::string::npos)
      << w.status().message();
}

// Sources write 4k and 128K for 4096 and 131072 tokens, and name the same runs their way.
TEST(Workload, SourceSpellings) {
  for (const auto& [text, seq, task] : {std::tuple{"task: continued-pretraining\nseq_len: 4k\n", 4096, Task::kPretrain},
                                        std::tuple{"task: Instruction-Tuning\nseq_len: 128K\n", 131072, Task::kFinetune},
                                        std::tuple{"task: CPT\nseq_len: 8192\n", 8192, Task::kPretrain}}) {
    auto doc = Document::Parse("w.yaml", text);
    ASSERT_TRUE(doc.ok());
    auto w = ParseWorkload(*doc);
    ASSERT_TRUE(w.ok()) << text << w.status().message();
    EXPECT_EQ(w->seq_len, seq) << text;
    EXPECT_EQ(w->task, task) << text;
  }
}

// Encoder-decoder models are refused by name rather than miscounted as a decoder.
TEST(ModelRejects, EncoderDecoderIsNotSupported) {
  for (const char* text : {"{\"model_type\": \"t5\", \"d_model\": 1024, \"num_layers\": 24}",
                           "{\"model_type\": \"mt5\", \"d_model\": 4096}",
                           "{\"model_type\": \"llama\", \"is_encoder_decoder\": true}"}) {
    Status s = ModelError("config.json", text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.code(), Code::kBadInput);
    EXPECT_NE(Message(s).find("is an encoder-decoder model, which shardplan does not support"), std::string::npos)
        << Message(s);
    EXPECT_NE(Message(s).find("config.json:1:"), std::string::npos) << Message(s);
  }
}

// GPUs as people name them: the catalog key, what nvidia-smi prints, or its parts. One memory
// size among several form factors reads as the SXM part, said as an assumption; one part in
// several sizes reads as the smallest; different parts are an error that names them.
TEST(ClusterRejects, GpuNamesAsPeopleWriteThem) {
  struct Case {
    const char* written;
    const char* key;
  };
  for (const Case& c : {Case{"H100", "h100-sxm-80gb"}, Case{"NVIDIA H100 80GB HBM3", "h100-sxm-80gb"},
                        Case{"NVIDIA H100 PCIe", "h100-pcie-80gb"}, Case{"A100-SXM4-80GB", "a100-sxm-80gb"},
                        Case{"a100 40gb", "a100-sxm-40gb"}, Case{"rtx4090", "rtx-4090-24gb"}, Case{"RTX A6000", "rtx-a6000-48gb"},
                        Case{"Tesla V100-SXM2-32GB", "v100-sxm-32gb"}, Case{"H800", "h800-sxm-80gb"},
                        Case{"A800 80GB", "a800-sxm-80gb"}, Case{"NVIDIA L4", "l4-24gb"}, Case{"T4", "t4-16gb"},
                        Case{"A40", "a40-48gb"}, Case{"RTX 6000 Ada", "rtx-6000-ada-48gb"},
                        Case{"A100 80GB PCIe", "a100-pcie-80gb"}, Case{"H100 NVL", "h100-nvl-94gb"},
                        Case{"H200 NVL", "h200-nvl-141gb"}, Case{"NVIDIA H200", "h200-141gb"},
                        // Megatron-Bridge's System column and rack names.
                        Case{"DGX-GB200", "gb200-186gb"}, Case{"DGX-H100", "h100-sxm-80gb"}, Case{"DGX-B300", "b300-288gb"},
                        Case{"GB300 NVL72", "gb300-288gb"}, Case{"HGX H100", "h100-sxm-80gb"}}) {
    auto doc = Document::Parse("c.yaml", std::string("gpus_per_node: 1\ngpu: ") + c.written + "\n");
    ASSERT_TRUE(doc.ok());
    auto cl = ParseCluster(*doc);
    ASSERT_TRUE(cl.ok()) << c.written << ": " << cl.status().message();
    EXPECT_EQ(cl->gpu.name, c.key) << c.written;
    ASSERT_EQ(cl->assumed.size(), 1u) << c.written;
    EXPECT_NE(cl->assumed[0].find(c.key), std::string::npos) << cl->assumed[0];
  }
  // One part in several sizes reads as the smallest SXM one, and keeps the larger sizes for
  // estimate's hint; different parts under one name stay an error that names them.
  auto a100 = ReadCluster("gpus_per_node: 1\ngpu: A100\n");
  ASSERT_TRUE(a100.ok()) << a100.status().message();
  EXPECT_EQ(a100->gpu.name, "a100-sxm-40gb");
  EXPECT_EQ(a100->larger_gpus, (std::vector<std::string>{"a100-sxm-80gb", "a100-pcie-80gb"}));
  ASSERT_EQ(a100->assumed.size(), 1u);
  EXPECT_NE(a100->assumed[0].find("read as a100-sxm-40gb, the smallest of a100-sxm-40gb, a100-sxm-80gb, a100-pcie-80gb"),
            std::string::npos)
      << a100->assumed[0];
  auto v100 = ReadCluster("gpus_per_node: 1\ngpu: V100\n");
  ASSERT_TRUE(v100.ok()) << v100.status().message();
  EXPECT_EQ(v100->gpu.name, "v100-sxm-16gb");
  auto named = ReadCluster("gpus_per_node: 1\ngpu: A100 80GB\n");
  ASSERT_TRUE(named.ok());
  EXPECT_TRUE(named->larger_gpus.empty());
  Status s = ClusterError("gpus_per_node: 1\ngpu: RTX 6000\n");
  EXPECT_NE(s.message().find("cluster.yaml:2:6: gpu: GPU 'RTX 6000' matches rtx-pro-6000-96gb and rtx-6000-ada-48gb and "
                             "quadro-rtx-6000-24gb; name one (they differ in memory)"),
            std::string::npos)
      << s.message();
}

// The cards fine-tuning reports name (consumer, workstation, older datacenter parts, GH200).
// "Ti", "SUPER" and "D" are other cards: a bare "3090" is the 3090, not the 3090 Ti, and a
// bare "4090" not the 4090 D (China's RTX 4090 D, 114 SMs of the 4090's 128). A GH200's
// printed name carries its host memory, so "GH200 120GB" is the 96 GB HBM3 part, not a
// 120 GiB card; a bare "GH200" names two memory sizes and reads as the smaller.
TEST(ClusterReads, CardsOfFineTuningReports) {
  struct Case {
    const char* written;
    const char* key;
    int64_t memory_mib;
  };
  for (const Case& c : {Case{"NVIDIA GeForce RTX 3060", "rtx-3060-12gb", 12288}, Case{"RTX 3090", "rtx-3090-24gb", 24576},
                        Case{"3090", "rtx-3090-24gb", 24576}, Case{"RTX 3090 Ti", "rtx-3090-ti-24gb", 24564},
                        Case{"4080", "rtx-4080-16gb", 16376}, Case{"RTX 4080 SUPER", "rtx-4080-super-16gb", 16376},
                        Case{"4090", "rtx-4090-24gb", 24564}, Case{"RTX 4090D", "rtx-4090d-24gb", 24564},
                        Case{"NVIDIA GeForce RTX 4090 D", "rtx-4090d-24gb", 24564},
                        Case{"4060 Ti 16GB", "rtx-4060-ti-16gb", 16380}, Case{"RTX 2080 Ti", "rtx-2080-ti-11gb", 11264},
                        Case{"A5000", "rtx-a5000-24gb", 24564}, Case{"RTX 4000 Ada", "rtx-4000-ada-20gb", 20475},
                        Case{"L20", "l20-48gb", 46068}, Case{"A30", "a30-24gb", 24576},
                        Case{"Tesla V100-PCIE-32GB", "v100-pcie-32gb", 32768}, Case{"P100", "p100-pcie-16gb", 16384},
                        Case{"NVIDIA GH200 480GB", "gh200-96gb", 97871}, Case{"NVIDIA GH200 120GB", "gh200-96gb", 97871},
                        Case{"GH200 144GB", "gh200-144gb", 146831},
                        // AWS G5's A10G is not the A10; Turing's professional cards and the P40.
                        Case{"NVIDIA A10G", "a10g-24gb", 23028}, Case{"A10", "a10-24gb", 23028},
                        Case{"TITAN RTX", "titan-rtx-24gb", 24576}, Case{"Quadro RTX 8000", "quadro-rtx-8000-48gb", 49152},
                        Case{"RTX 8000", "quadro-rtx-8000-48gb", 49152}, Case{"Tesla P40", "tesla-p40-24gb", 22919},
                        // Sizes written "80G" or "80GiB", as Qwen's and LLaMA-Factory's tables write them.
                        Case{"A100-SXM4-80G", "a100-sxm-80gb", 81920}, Case{"A800-80G", "a800-sxm-80gb", 81920},
                        Case{"A100-40G", "a100-sxm-40gb", 40960}, Case{"H100 80GiB", "h100-sxm-80gb", 81559}}) {
    auto cl = ReadCluster(std::string("gpus_per_node: 1\ngpu: ") + c.written + "\n");
    ASSERT_TRUE(cl.ok()) << c.written << ": " << cl.status().message();
    EXPECT_EQ(cl->gpu.name, c.key) << c.written;
    EXPECT_EQ(cl->gpu.memory_bytes, c.memory_mib * kMiB) << c.written;
  }
  // Turing and Volta have no BF16 tensor cores; Pascal's FP16 GEMMs that accumulate in FP32
  // run at its FP32 rate.
  auto turing = ReadCluster("gpus_per_node: 1\ngpu: RTX 2080 Ti\n");
  ASSERT_TRUE(turing.ok());
  EXPECT_EQ(turing->gpu.bf16_flops, 0);
  EXPECT_DOUBLE_EQ(turing->gpu.fp16_flops, 53.8e12);
  // The A10G's tensor rate is half the A10's (80 SMs at the GeForce-style FP32-accumulate rate).
  auto a10g = ReadCluster("gpus_per_node: 1\ngpu: A10G\n");
  ASSERT_TRUE(a10g.ok());
  EXPECT_DOUBLE_EQ(a10g->gpu.bf16_flops, 70e12);
  auto titan = ReadCluster("gpus_per_node: 1\ngpu: Titan RTX\n");
  ASSERT_TRUE(titan.ok());
  EXPECT_EQ(titan->gpu.bf16_flops, 0);
  EXPECT_DOUBLE_EQ(titan->gpu.fp16_flops, 130.5e12);
  auto pascal = ReadCluster("gpus_per_node: 1\ngpu: P100\n");
  ASSERT_TRUE(pascal.ok());
  EXPECT_DOUBLE_EQ(pascal->gpu.fp16_flops, pascal->gpu.fp32_flops);
  auto gh200 = ReadCluster("gpus_per_node: 1\ngpu: GH200\n");
  ASSERT_TRUE(gh200.ok()) << gh200.status().message();
  EXPECT_EQ(gh200->gpu.name, "gh200-96gb");
  EXPECT_EQ(gh200->larger_gpus, std::vector<std::string>{"gh200-144gb"});
}

// Unstated, the host link is the rate of the GPU's PCIe generation: 32 GB/s a direction on
// PCIe 4.0 x16 (Ampere, Ada), twice that on PCIe 5.0 (Hopper on), the link rate the built-in
// clusters and the standard node state, so that leaving `host:` out changes nothing; stated,
// as written.
TEST(ClusterReads, HostLinkFollowsThePcieGeneration) {
  for (const auto& [gpu, pcie] : {std::pair{"H100", 64e9}, std::pair{"H200", 64e9}, std::pair{"B200", 64e9},
                                  std::pair{"A100 80GB", 32e9}, std::pair{"RTX 4090", 32e9}, std::pair{"L40S", 32e9}}) {
    auto cl = ReadCluster(std::string("gpus_per_node: 1\ngpu: ") + gpu + "\n");
    ASSERT_TRUE(cl.ok()) << gpu << ": " << cl.status().message();
    EXPECT_DOUBLE_EQ(cl->pcie_bandwidth, pcie) << gpu;
    EXPECT_DOUBLE_EQ(StandardNode(cl->gpu).pcie_bandwidth, pcie) << gpu;
    // GPUs without NVLink talk over the same link, as the standard node's do.
    EXPECT_DOUBLE_EQ(cl->intra_node.bandwidth, StandardNode(cl->gpu).intra_node.bandwidth) << gpu;
    EXPECT_EQ(cl->intra_node.fabric, StandardNode(cl->gpu).intra_node.fabric) << gpu;
  }
  // A Grace Hopper GPU reaches its host over NVLink-C2C (900 GB/s both ways), not PCIe; an
  // MI300X over PCIe Gen5, which its missing CUDA compute capability cannot say.
  for (const auto& [gpu, link] : {std::pair{"GH200", 450e9}, std::pair{"GH200 144GB", 450e9}, std::pair{"MI300X", 64e9}}) {
    auto cl = ReadCluster(std::string("gpus_per_node: 1\ngpu: ") + gpu + "\n");
    ASSERT_TRUE(cl.ok()) << gpu << ": " << cl.status().message();
    EXPECT_DOUBLE_EQ(cl->pcie_bandwidth, link) << gpu;
    EXPECT_DOUBLE_EQ(StandardNode(cl->gpu).pcie_bandwidth, link) << gpu;
  }
  auto own = ReadCluster("gpus_per_node: 1\ngpu: {name: x, memory: 96 GiB, bf16_tflops: 900, host_link_bandwidth: 200 GB/s}\n");
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_DOUBLE_EQ(own->pcie_bandwidth, 200e9);
  for (const char* built_in : {"dgx-a100", "dgx-h100", "rtx4090-pc"}) {
    auto named = LoadCluster(built_in);
    ASSERT_TRUE(named.ok()) << built_in;
    auto bare = ReadCluster("gpus_per_node: 1\ngpu: " + named->gpu.name + "\n");
    ASSERT_TRUE(bare.ok()) << built_in;
    EXPECT_DOUBLE_EQ(bare->pcie_bandwidth, named->pcie_bandwidth) << built_in;
  }
  auto stated = ReadCluster("gpus_per_node: 1\ngpu: H100\nhost: {pcie_bandwidth: 16 GB/s}\n");
  ASSERT_TRUE(stated.ok());
  EXPECT_DOUBLE_EQ(stated->pcie_bandwidth, 16e9);
}

// AMD Instinct parts read by the names ROCm prints and reports write; their memory is priced as
// any GPU's (PyTorch on an MI300X reports 191.98 GiB of total capacity), their step time is not.
TEST(ClusterReads, AmdInstinct) {
  for (const char* written : {"MI300X", "AMD Instinct MI300X", "mi300x 192GB", "AMD MI300X"}) {
    auto cl = ReadCluster(std::string("gpus_per_node: 8\ngpu: ") + written + "\n");
    ASSERT_TRUE(cl.ok()) << written << ": " << cl.status().message();
    EXPECT_EQ(cl->gpu.name, "mi300x-192gb") << written;
    EXPECT_EQ(cl->gpu.vendor, "amd");
    EXPECT_FALSE(StepTimeKnown(cl->gpu));
    EXPECT_NEAR(ToGiB(UsableMemory(cl->gpu)), 191.98, 0.01);
  }
  // The MI250X and MI250 are two GCDs a package, and ROCm makes each GCD a GPU of 64 GiB:
  // the package's 128 GB, written with the name, is read as its GCD.
  for (const char* written : {"MI250X", "AMD Instinct MI250X / MI250", "MI250X 128GB", "MI250", "MI210"}) {
    auto cl = ReadCluster(std::string("gpus_per_node: 8\ngpu: ") + written + "\n");
    ASSERT_TRUE(cl.ok()) << written << ": " << cl.status().message();
    EXPECT_EQ(cl->gpu.vendor, "amd") << written;
    EXPECT_EQ(cl->gpu.memory_bytes, int64_t{64} << 30) << written;
    EXPECT_FALSE(StepTimeKnown(cl->gpu));
  }
  EXPECT_EQ(ReadCluster("gpus_per_node: 8\ngpu: MI250X\n")->gpu.name, "mi250x-64gb");
  EXPECT_EQ(ReadCluster("gpus_per_node: 8\ngpu: MI250\n")->gpu.name, "mi250-64gb");
  for (const char* written : {"MI325X", "MI355X"}) {
    auto cl = ReadCluster(std::string("gpus_per_node: 8\ngpu: ") + written + "\n");
    ASSERT_TRUE(cl.ok()) << written << ": " << cl.status().message();
    EXPECT_EQ(cl->gpu.vendor, "amd");
  }
  auto h100 = ReadCluster("gpus_per_node: 8\ngpu: H100\n");
  ASSERT_TRUE(h100.ok());
  EXPECT_TRUE(StepTimeKnown(h100->gpu));
  Status vendor = ClusterError("gpus_per_node: 1\ngpu: {name: x, memory: 16 GiB, bf16_tflops: 100, vendor: intel}\n");
  EXPECT_NE(vendor.message().find("vendor: expected nvidia or amd, got \"intel\""), std::string::npos) << vendor.message();
}

// The names launchers and job specs give the cluster's settings (torchrun's nnodes and
// nproc_per_node, num_nodes, gpu_type) read as ours; one given under two names is refused.
TEST(ClusterReads, LauncherNames) {
  auto c = ReadCluster("nnodes: 4\nnproc_per_node: 8\ngpu_type: DGX-H100\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->nodes, 4);
  EXPECT_EQ(c->gpus_per_node, 8);
  EXPECT_EQ(c->gpu.name, "h100-sxm-80gb");
  Status twice = ClusterError("nodes: 2\nnum_nodes: 2\ngpus_per_node: 8\ngpu: H100\n");
  EXPECT_NE(twice.message().find("cluster.yaml:2:1: 'num_nodes' repeats nodes"), std::string::npos) << twice.message();
  Status missing = ClusterError("num_nodes: 2\ngpu: H100\n");
  EXPECT_NE(missing.message().find("cluster.yaml:1:1: gpus_per_node: missing"), std::string::npos) << missing.message();
}

// The network under the names cluster descriptions give it (network, interconnect), and an
// InfiniBand generation for its rate: NDR 400 Gb/s a port, NDR200 and HDR 200, HDR100 and EDR
// 100, XDR 800, one NIC per GPU, said as read.
TEST(ClusterReads, NetworkByNameAndInfinibandGeneration) {
  struct Case {
    const char* text;
    double gbps;
  };
  for (const Case& k : {Case{"interconnect: InfiniBand NDR", 400}, Case{"network: NDR200 InfiniBand", 200},
                        Case{"network: HDR", 200}, Case{"interconnect: 8x HDR100", 100}, Case{"network: EDR IB", 100},
                        Case{"interconnect: Quantum-X800 XDR", 800}}) {
    auto c = ReadCluster(std::string("nodes: 2\ngpus_per_node: 8\ngpu: H100\n") + k.text + "\n");
    ASSERT_TRUE(c.ok()) << k.text << ": " << c.status().message();
    EXPECT_DOUBLE_EQ(c->inter_node.bandwidth, k.gbps * 1e9 / 8) << k.text;
    EXPECT_EQ(c->inter_node.nics_per_node, 8) << k.text;
  }
  auto ndr = ReadCluster("nodes: 2\ngpus_per_node: 8\ngpu: H100\ninterconnect: InfiniBand NDR\n");
  auto said = std::find_if(ndr->assumed.begin(), ndr->assumed.end(), [](const std::string& a) { return a.rfind("inter_node:", 0) == 0; });
  ASSERT_NE(said, ndr->assumed.end());
  EXPECT_NE(said->find("\"InfiniBand NDR\" (400 Gb/s a port) read as one NIC per GPU"), std::string::npos) << *said;
  auto mapping = ReadCluster("nodes: 2\ngpus_per_node: 8\ngpu: A100\nnetwork: {bandwidth: 200 Gb/s, nics_per_node: 4}\n");
  ASSERT_TRUE(mapping.ok()) << mapping.status().message();
  EXPECT_EQ(mapping->inter_node.nics_per_node, 4);
  // "Handler" is no generation: only whole words count.
  Status words = ClusterError("nodes: 2\ngpus_per_node: 8\ngpu: H100\ninterconnect: Ethernet handler\n");
  EXPECT_NE(words.message().find("cluster.yaml:4:15: interconnect: expected a number in a bandwidth"), std::string::npos)
      << words.message();
  Status twice = ClusterError("nodes: 2\ngpus_per_node: 8\ngpu: H100\nnetwork: NDR\ninter_node: 200 Gb/s\n");
  EXPECT_NE(twice.message().find("repeats inter_node"), std::string::npos) << twice.message();
}

// Links as people write them: "interconnect" is the link inside a node when it names one
// (NVLink, PCIe) and the network otherwise; intra_node in words; a NIC count before the rate
// ("8x400G IB"), port speeds in bits ("400G", "100GbE"), RoCE and EFA by name; "8x H100" as
// the node's GPUs.
TEST(ClusterReads, LinksAndGpusInWords) {
  auto both = ReadCluster("nodes: 2\ngpus_per_node: 8\ngpu: H100\ninterconnect: NVLink\nnetwork: 400Gbps InfiniBand\n");
  ASSERT_TRUE(both.ok()) << both.status().message();
  EXPECT_EQ(both->intra_node.fabric, "nvlink");
  EXPECT_DOUBLE_EQ(both->intra_node.bandwidth, both->gpu.nvlink_bandwidth);
  EXPECT_DOUBLE_EQ(both->inter_node.bandwidth, 50e9);
  struct Case {
    const char* text;
    double gbps_per_nic;
    int nics;
    const char* fabric;
  };
  for (const Case& k : {Case{"inter_node: 8x400G IB", 400, 8, "infiniband"}, Case{"inter_node: 400G", 400, 8, "infiniband"},
                        Case{"inter_node: RoCE 200G", 200, 8, "ethernet"}, Case{"network: 4 x 200 Gb/s RoCEv2", 200, 4, "ethernet"},
                        Case{"inter_node: 100GbE", 100, 8, "ethernet"}, Case{"network: EFA", 400, 8, "efa"},
                        Case{"interconnect: 4xNDR", 400, 4, "infiniband"}}) {
    auto c = ReadCluster(std::string("nodes: 2\ngpus_per_node: 8\ngpu: H100\n") + k.text + "\n");
    ASSERT_TRUE(c.ok()) << k.text << ": " << c.status().message();
    EXPECT_DOUBLE_EQ(c->inter_node.bandwidth, k.gbps_per_nic * 1e9 / 8) << k.text;
    EXPECT_EQ(c->inter_node.nics_per_node, k.nics) << k.text;
    EXPECT_EQ(c->inter_node.fabric, k.fabric) << k.text;
  }
  auto efa = ReadCluster("nodes: 4\ngpus_per_node: 8\ngpu: A100 40GB\nnetwork: EFA\n");  // p4d: 400 Gb/s a node
  ASSERT_TRUE(efa.ok()) << efa.status().message();
  EXPECT_DOUBLE_EQ(efa->inter_node.bandwidth * efa->inter_node.nics_per_node, 400e9 / 8);
  auto pcie = ReadCluster("nodes: 1\ngpus_per_node: 2\ngpu: RTX 4090\nintra_node: PCIe 4.0\n");
  ASSERT_TRUE(pcie.ok()) << pcie.status().message();
  EXPECT_EQ(pcie->intra_node.fabric, "pcie");
  EXPECT_DOUBLE_EQ(pcie->intra_node.bandwidth, 32e9);
  auto gpus = ReadCluster("nodes: 2\ngpu: 8x H100\n");
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  EXPECT_EQ(gpus->gpus_per_node, 8);
  EXPECT_EQ(gpus->gpu.name, "h100-sxm-80gb");
  auto total = ReadCluster("gpus: 16\ngpu: 8 x A100 80GB\n");
  ASSERT_TRUE(total.ok()) << total.status().message();
  EXPECT_EQ(total->nodes, 2);
  EXPECT_EQ(total->gpu.name, "a100-sxm-80gb");
  EXPECT_NE(ClusterError("gpus_per_node: 4\ngpu: 8x H100\n").message().find(
                "gpu: \"8x H100\" says 8 to a node, but gpus_per_node is 4"),
            std::string::npos);
  EXPECT_NE(ClusterError("gpus_per_node: 2\ngpu: RTX 4090\nintra_node: NVLink\n").message().find("has no NVLink"),
            std::string::npos);
  EXPECT_NE(ClusterError("nodes: 2\ngpus_per_node: 8\ngpu: H100\ninterconnect: NVLink\nintra_node: {fabric: nvlink}\n")
                .message()
                .find("interconnect: the file gives intra_node already"),
            std::string::npos);
}

// A node's host memory and NVMe as specs give them: host: 2 TiB, host_memory / ram / cpu_memory,
// nvme: 4 TB (its capacity), and the host link by its PCIe generation.
TEST(ClusterReads, HostAndNvmeInWords) {
  auto host = ReadCluster("gpus_per_node: 8\ngpu: H100\nhost: 2 TiB\nnvme: 4 TB\n");
  ASSERT_TRUE(host.ok()) << host.status().message();
  EXPECT_EQ(host->host_memory_bytes, int64_t{2} << 40);
  EXPECT_EQ(host->nvme_bytes, 4'000'000'000'000);
  for (const char* key : {"host_memory", "ram", "cpu_memory", "system_memory"}) {
    auto c = ReadCluster(std::string("gpus_per_node: 8\ngpu: H100\n") + key + ": 512 GiB\n");
    ASSERT_TRUE(c.ok()) << key << ": " << c.status().message();
    EXPECT_EQ(c->host_memory_bytes, int64_t{512} << 30) << key;
  }
  auto gen4 = ReadCluster("gpus_per_node: 8\ngpu: A100\nhost: {memory: 1 TiB, pcie_bandwidth: PCIe 4.0}\n");
  ASSERT_TRUE(gen4.ok()) << gen4.status().message();
  EXPECT_DOUBLE_EQ(gen4->pcie_bandwidth, 32e9);
  EXPECT_NE(ClusterError("gpus_per_node: 8\ngpu: H100\nhost: {memory: 2 TiB}\nram: 1 TiB\n").message().find(
                "cluster.yaml:4:6: host_memory: the file gives host memory already"),
            std::string::npos);
}

// Cloud GPU instances by name, on the command line ("2x p5.48xlarge") or as a cluster file's
// instance: key: the GPUs, the network and the host memory the provider's page states. AWS
// states EFA's rate per instance, so "400 Gb/s EFA" is a p4d's total, split over its 8 GPUs.
TEST(ClusterReads, CloudInstances) {
  auto p4d = LoadCluster("p4d.24xlarge");
  ASSERT_TRUE(p4d.ok()) << p4d.status().message();
  EXPECT_EQ(p4d->nodes, 1);
  EXPECT_EQ(p4d->gpus_per_node, 8);
  EXPECT_EQ(p4d->gpu.name, "a100-sxm-40gb");
  EXPECT_DOUBLE_EQ(p4d->inter_node.bandwidth * p4d->inter_node.nics_per_node, 400e9 / 8);
  EXPECT_EQ(p4d->host_memory_bytes, int64_t{1152} << 30);
  auto p5 = LoadCluster("2x p5.48xlarge");
  ASSERT_TRUE(p5.ok()) << p5.status().message();
  EXPECT_EQ(p5->nodes, 2);
  EXPECT_EQ(p5->gpu.name, "h100-sxm-80gb");
  EXPECT_DOUBLE_EQ(p5->inter_node.bandwidth * p5->inter_node.nics_per_node, 3200e9 / 8);
  auto g5 = LoadCluster("g5.12xlarge");
  ASSERT_TRUE(g5.ok()) << g5.status().message();
  EXPECT_EQ(g5->gpus_per_node, 4);
  EXPECT_EQ(g5->gpu.name, "a10g-24gb");
  auto azure = ReadCluster("instance: Standard_ND96amsr_A100_v4\nnodes: 4\n");
  ASSERT_TRUE(azure.ok()) << azure.status().message();
  EXPECT_EQ(azure->nodes, 4);
  EXPECT_EQ(azure->gpu.name, "a100-sxm-80gb");
  EXPECT_EQ(azure->inter_node.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(azure->inter_node.bandwidth, 200e9 / 8);
  // The file's own keys win over the instance's.
  auto own = ReadCluster("instance: p5.48xlarge\nnodes: 2\nnetwork: 8x400G IB\n");
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_EQ(own->inter_node.fabric, "infiniband");
  auto efa = ReadCluster("nodes: 2\ngpus_per_node: 8\ngpu: A100\nnetwork: 400 Gb/s EFA\n");
  ASSERT_TRUE(efa.ok()) << efa.status().message();
  EXPECT_DOUBLE_EQ(efa->inter_node.bandwidth * efa->inter_node.nics_per_node, 400e9 / 8);
  EXPECT_NE(ClusterError("instance: p5.48xl\n").message().find(
                "cluster.yaml:1:11: instance: expected a GPU instance type such as p5.48xlarge"),
            std::string::npos);
}

// A bare inter_node rate, as cluster descriptions give it: up to the fastest NIC that ships
// (800 Gb/s) it is one NIC's, one per GPU; above that it can only be the node's total. Both
// readings are said; a mapping sets rate and count.
TEST(ClusterReads, InterNodeGivenAsARate) {
  auto nic = ReadCluster("nodes: 2\ngpus_per_node: 8\ngpu: H100\ninter_node: 400 Gb/s\n");
  ASSERT_TRUE(nic.ok()) << nic.status().message();
  EXPECT_DOUBLE_EQ(nic->inter_node.bandwidth, 50e9);
  EXPECT_EQ(nic->inter_node.nics_per_node, 8);
  auto said = std::find_if(nic->assumed.begin(), nic->assumed.end(), [](const std::string& a) { return a.rfind("inter_node:", 0) == 0; });
  ASSERT_NE(said, nic->assumed.end());
  EXPECT_NE(said->find("400 Gb/s read as one NIC per GPU: 8 x 400 Gb/s per node"), std::string::npos) << *said;
  auto total = ReadCluster("nodes: 2\ngpus_per_node: 4\ngpu: H100\ninter_node: 3.2 Tb/s\n");
  ASSERT_TRUE(total.ok()) << total.status().message();
  EXPECT_DOUBLE_EQ(total->inter_node.bandwidth, 100e9);  // 4 NICs of 800 Gb/s
  EXPECT_EQ(total->inter_node.nics_per_node, 4);
  EXPECT_NE(ClusterError("nodes: 2\ngpus_per_node: 8\ngpu: H100\ninter_node: fast\n").message().find(
                "cluster.yaml:4:13: inter_node: expected a bandwidth like \"400 Gb/s\", got \"fast\""),
            std::string::npos);
  EXPECT_NE(ClusterError("nodes: 2\ngpus_per_node: 8\ngpu: H100\ninter_node: 0 Gb/s\n").message().find(
                "inter_node: expected a rate above 0"),
            std::string::npos);
}

// A run's source often states the GPUs in all: `gpus:` (or world_size) splits over the nodes
// or the GPUs per node the file gives, eight or fewer alone are one node, and a total that
// does not split, or more than eight with nothing to split them by, is refused at its line.
TEST(ClusterReads, TotalGpuCount) {
  for (const auto& [text, nodes, per_node] :
       {std::tuple<const char*, int, int>{"gpus: 64\nnodes: 8\ngpu: H100\n", 8, 8},
        std::tuple<const char*, int, int>{"gpus: 64\ngpus_per_node: 4\ngpu: GB200\n", 16, 4},
        std::tuple<const char*, int, int>{"world_size: 4\ngpu: H100\n", 1, 4}}) {
    auto c = ReadCluster(text);
    ASSERT_TRUE(c.ok()) << text << c.status().message();
    EXPECT_EQ(c->nodes, nodes) << text;
    EXPECT_EQ(c->gpus_per_node, per_node) << text;
  }
  EXPECT_NE(ClusterError("gpus: 64\ngpu: H100\n").message().find("cluster.yaml:1:7: gpus: 64 in all; give nodes or gpus_per_node"),
            std::string::npos);
  EXPECT_NE(ClusterError("gpus: 60\nnodes: 8\ngpu: H100\n").message().find("cluster.yaml:1:7: gpus: 60 does not divide over 8 nodes"),
            std::string::npos);
  EXPECT_NE(ClusterError("gpus: 64\nnodes: 8\ngpus_per_node: 4\ngpu: H100\n").message().find("gpus: 64 is not nodes x gpus_per_node (8 x 4)"),
            std::string::npos);
}

// A user's own GPU may be given by its memory alone: the memory question has an answer, the
// time is unknown (no peak), and nothing is invented for it.
TEST(ClusterRejects, GpuGivenByMemoryAlone) {
  auto doc = Document::Parse("c.yaml", "gpus_per_node: 1\ngpu: {name: \"24 GB card\", memory: 24 GiB}\n");
  ASSERT_TRUE(doc.ok());
  auto c = ParseCluster(*doc);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->gpu.memory_bytes, 24LL << 30);
  EXPECT_EQ(c->gpu.bf16_flops, 0);
  EXPECT_EQ(c->gpu.memory_bandwidth, 0);
}

// A size the catalog lacks ("H100 96GB", torchtitan's Grand Teton cards) is that family with
// the stated memory; a mapping naming a catalog GPU by its memory takes the GPU's speeds.
TEST(ClusterRejects, GpuOfAnUnlistedSize) {
  auto doc = Document::Parse("c.yaml", "gpus_per_node: 8\ngpu: H100 96GB HBM2e\n");
  ASSERT_TRUE(doc.ok());
  auto c = ParseCluster(*doc);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->gpu.name, "h100-sxm-80gb");
  EXPECT_EQ(c->gpu.memory_bytes, 96LL << 30);
  EXPECT_DOUBLE_EQ(c->gpu.bf16_flops, 989.4e12);
  ASSERT_EQ(c->assumed.size(), 1u);
  EXPECT_NE(c->assumed[0].find("read as h100-sxm-80gb with 96 GiB"), std::string::npos) << c->assumed[0];
  auto mapped = Document::Parse("c.yaml", "gpus_per_node: 1\ngpu: {name: H100 96GB, memory: 96 GB}\n");
  ASSERT_TRUE(mapped.ok());
  auto m = ParseCluster(*mapped);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->gpu.memory_bytes, 96'000'000'000LL);
  EXPECT_GT(m->gpu.bf16_flops, 0);
  // Decimal GB is read as written, and the output says what a card sold by that size holds.
  ASSERT_FALSE(m->assumed.empty());
  EXPECT_NE(m->assumed[0].find("gpu memory: '96 GB' read as 89.41 GiB (decimal GB); a card sold as 96 GB holds 96 GiB"),
            std::string::npos)
      << m->assumed[0];
  // The NVL cards' memory as nvidia-smi prints it.
  EXPECT_EQ(ReadCluster("gpus_per_node: 2\ngpu: H100 NVL\n")->gpu.memory_bytes, 95830LL << 20);
  EXPECT_EQ(ReadCluster("gpus_per_node: 2\ngpu: H200 NVL\n")->gpu.memory_bytes, 143771LL << 20);
  // New catalog entries by the names sources use.
  for (const auto& [written, key] : {std::pair{"GB200", "gb200-186gb"},
                                     std::pair{"RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-96gb"},
                                     std::pair{"GB300", "gb300-288gb"}, std::pair{"B300", "b300-288gb"},
                                     std::pair{"NVIDIA B300 SXM6 AC", "b300-288gb"}, std::pair{"L40", "l40-48gb"},
                                     std::pair{"A10", "a10-24gb"}, std::pair{"H20", "h20-96gb"},
                                     std::pair{"RTX 5090", "rtx-5090-32gb"}}) {
    auto d = Document::Parse("c.yaml", std::string("gpus_per_node: 4\ngpu: ") + written + "\n");
    ASSERT_TRUE(d.ok());
    auto g = ParseCluster(*d);
    ASSERT_TRUE(g.ok()) << written << ": " << g.status().message();
    EXPECT_EQ(g->gpu.name, key);
  }
  // A name alone on a family of sizes reads as its smallest; different parts stay an error.
  EXPECT_EQ(ReadCluster("gpus_per_node: 1\ngpu: A100\n")->gpu.name, "a100-sxm-40gb");
  EXPECT_NE(ClusterError("gpus_per_node: 1\ngpu: RTX 6000\n").message().find("matches rtx-pro-6000-96gb"),
            std::string::npos);
}

// torchtitan's benchmark cards: "96GB HBM2e with 2.4 TB/sec peak memory bandwidth", run at
// "the default 500W power limit". The catalog carries each card's TDP; the stated limit must
// be a power at or under it.
TEST(ClusterRejects, PowerLimit) {
  auto c = ReadCluster("gpus_per_node: 8\ngpu: {name: H100 96GB HBM2e, memory: 96 GiB, "
                       "memory_bandwidth: 2.4 TB/s, power_limit: 500 W}\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_DOUBLE_EQ(c->gpu.tdp_watts, 700);
  EXPECT_DOUBLE_EQ(c->gpu.power_limit_watts, 500);
  EXPECT_DOUBLE_EQ(c->gpu.memory_bandwidth, 2.4e12);
  EXPECT_NE(DescribeCluster(*c).find("500 W limit of a 700 W TDP"), std::string::npos) << DescribeCluster(*c);
  auto a100 = ReadCluster("gpus_per_node: 8\ngpu: a100-sxm-80gb\n");
  ASSERT_TRUE(a100.ok());
  EXPECT_DOUBLE_EQ(a100->gpu.tdp_watts, 400);
  EXPECT_DOUBLE_EQ(a100->gpu.power_limit_watts, 0);  // at its TDP
  const std::string over = ClusterError("gpus_per_node: 1\ngpu: {name: H100, memory: 80 GiB, power_limit: 800 W}\n").message();
  EXPECT_NE(over.find("cluster.yaml:2:"), std::string::npos) << over;
  EXPECT_NE(over.find("above the h100-sxm-80gb TDP (700 W)"), std::string::npos) << over;
  const std::string bare = ClusterError("gpus_per_node: 1\ngpu: {name: H100, memory: 80 GiB, power_limit: 500}\n").message();
  EXPECT_NE(bare.find("cluster.yaml:2:"), std::string::npos) << bare;
  EXPECT_NE(bare.find("power_limit"), std::string::npos) << bare;
}

// What the driver keeps is not allocatable: PyTorch reports an 80 GB A100 (nvidia-smi 81920
// MiB) as "79.15 GiB total capacity", so a card's capacity is its memory less the catalog's
// driver_reserved; a card nobody measured keeps 512 MiB, a file may state its own, and a
// reserve that leaves nothing is an error on its line.
TEST(ClusterRejects, DriverReserved) {
  auto a100 = ReadCluster("gpus_per_node: 8\ngpu: a100-sxm-80gb\n");
  ASSERT_TRUE(a100.ok()) << a100.status().message();
  EXPECT_EQ(a100->gpu.reserved_bytes, 870 * kMiB);
  EXPECT_EQ(UsableMemory(a100->gpu), (81920 - 870) * kMiB);  // 79.15 GiB
  EXPECT_NE(DescribeCluster(*a100).find("(79.15 GiB allocatable)"), std::string::npos) << DescribeCluster(*a100);
  auto unmeasured = ReadCluster("gpus_per_node: 4\ngpu: {name: 24 GB card, memory: 24 GiB}\n");
  ASSERT_TRUE(unmeasured.ok()) << unmeasured.status().message();
  EXPECT_EQ(unmeasured->gpu.reserved_bytes, 512 * kMiB);
  auto tiny = ReadCluster("gpus_per_node: 1\ngpu: {name: small card, memory: 2 GiB}\n");
  ASSERT_TRUE(tiny.ok()) << tiny.status().message();
  EXPECT_EQ(tiny->gpu.reserved_bytes, 128 * kMiB);  // 1/16 of the card
  auto stated = ReadCluster("gpus_per_node: 8\ngpu: {name: H100 96GB HBM2e, memory: 96 GiB, driver_reserved: 0 B}\n");
  ASSERT_TRUE(stated.ok()) << stated.status().message();
  EXPECT_EQ(UsableMemory(stated->gpu), 96 * kGiB);
  auto family = ReadCluster("gpus_per_node: 8\ngpu: {name: H100 96GB HBM2e, memory: 96 GiB}\n");
  ASSERT_TRUE(family.ok()) << family.status().message();
  EXPECT_EQ(family->gpu.reserved_bytes, 468 * kMiB);  // the H100's, whose speeds it takes
  const std::string all = ClusterError("gpus_per_node: 1\ngpu:\n  name: x\n  memory: 8 GiB\n  driver_reserved: 8 GiB\n").message();
  EXPECT_NE(all.find("cluster.yaml:5:"), std::string::npos) << all;
  EXPECT_NE(all.find("driver_reserved: expected a size from 0 to below the GPU's memory"), std::string::npos) << all;
}

// GB200 ships as NVL72: several GB200 trays share one 72-GPU NVLink domain unless the file
// says otherwise, and say so; a domain must be whole nodes.
TEST(ClusterReads, Gb200NvlinkDomain) {
  auto c = ReadCluster("nodes: 64\ngpus_per_node: 4\ngpu: GB200\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->intra_node.domain, 72);
  EXPECT_EQ(c->nvlink_domain_size(), 72);
  bool said = false;
  for (const std::string& a : c->assumed) said = said || a.find("intra_node.domain: 72") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_NE(DescribeCluster(*c).find("NVLink domain 72 GPUs (18 nodes)"), std::string::npos) << DescribeCluster(*c);
  auto alone = ReadCluster("nodes: 64\ngpus_per_node: 4\ngpu: GB200\nintra_node: {domain: 4}\n");
  ASSERT_TRUE(alone.ok()) << alone.status().message();
  EXPECT_EQ(alone->nvlink_domain_size(), 4);
  auto one = ReadCluster("gpus_per_node: 4\ngpu: GB200\n");  // one tray: no domain to speak of
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->intra_node.domain, 0);
  auto h100 = ReadCluster("nodes: 4\ngpus_per_node: 8\ngpu: H100\n");
  ASSERT_TRUE(h100.ok());
  EXPECT_EQ(h100->nvlink_domain_size(), 8);
  auto five = ReadCluster("nodes: 4\ngpus_per_node: 5\ngpu: GB200\n");  // 72 is no whole number of these nodes
  ASSERT_TRUE(five.ok()) << five.status().message();
  EXPECT_EQ(five->nvlink_domain_size(), 5);
  const std::string odd = ClusterError("nodes: 4\ngpus_per_node: 4\ngpu: GB200\nintra_node: {domain: 70}\n").message();
  EXPECT_NE(odd.find("cluster.yaml:4:"), std::string::npos) << odd;
  EXPECT_NE(odd.find("not a whole number of nodes of 4"), std::string::npos) << odd;
}

// A multi-node cluster that names no network gets one NIC per GPU at the rate the GPU's
// systems ship with, and says so: DGX A100 8 x 200 Gb/s HDR, DGX H100 8 x 400 Gb/s NDR, HGX
// B300 8 x 800 Gb/s ConnectX-8, DGX-1/DGX-2 one 100 Gb/s EDR NIC per two V100s.
TEST(ClusterReads, NetworkFollowsTheGpusSystem) {
  for (const auto& [gpu, per_nic] : {std::pair{"A100 80GB", 200e9 / 8}, std::pair{"H100", 400e9 / 8},
                                     std::pair{"B300", 800e9 / 8}, std::pair{"V100 32GB", 50e9 / 8},
                                     std::pair{"L40S", 400e9 / 8}}) {
    auto c = ReadCluster(std::string("nodes: 4\ngpus_per_node: 8\ngpu: ") + gpu + "\n");
    ASSERT_TRUE(c.ok()) << gpu << ": " << c.status().message();
    EXPECT_DOUBLE_EQ(c->inter_node.bandwidth, per_nic) << gpu;
    EXPECT_EQ(c->inter_node.nics_per_node, 8) << gpu;
    bool said = false;
    for (const std::string& a : c->assumed) said = said || a.find("inter_node: 8 x ") != std::string::npos;
    EXPECT_TRUE(said) << gpu;
  }
  // A stated network stands, and a single node says nothing of one.
  auto stated = ReadCluster("nodes: 4\ngpus_per_node: 8\ngpu: A100 80GB\ninter_node: {bandwidth: 400 Gb/s}\n");
  ASSERT_TRUE(stated.ok());
  EXPECT_DOUBLE_EQ(stated->inter_node.bandwidth, 50e9);
  for (const std::string& a : stated->assumed) EXPECT_EQ(a.find("inter_node:"), std::string::npos) << a;
  auto one = ReadCluster("gpus_per_node: 8\ngpu: A100 80GB\n");
  ASSERT_TRUE(one.ok());
  for (const std::string& a : one->assumed) EXPECT_EQ(a.find("inter_node:"), std::string::npos) << a;
  // GB200 as nvidia-smi reports it on NVL72 trays, not the nominal 186 GB.
  auto gb200 = ReadCluster("gpus_per_node: 4\ngpu: GB200\n");
  ASSERT_TRUE(gb200.ok());
  EXPECT_EQ(gb200->gpu.memory_bytes, 189471LL << 20);
}

// Fuzzing finds: a size in a GPU name past int64 threw out of std::stoll (a crash), and a
// network of 0 NICs was read as one NIC and written back as the default eight, and a zero
// latency was dropped by the writer.
TEST(ClusterRejects, FuzzFoundNamesAndNics) {
  const std::string huge = ClusterError("gpus_per_node: 8\ngpu: A100-SXM " + std::string(120, '7') + "GB\n").message();
  EXPECT_NE(huge.find("cluster.yaml:2:"), std::string::npos) << huge;
  EXPECT_NE(huge.find("unknown GPU"), std::string::npos) << huge;
  const std::string nics = ClusterError("gpus_per_node: 8\nnodes: 2\ngpu: A100 40GB\n"
                                        "inter_node: {bandwidth: 1600 Gb/s, nics_per_node: 0}\n").message();
  EXPECT_NE(nics.find("cluster.yaml:4:"), std::string::npos) << nics;
  EXPECT_NE(nics.find("nics_per_node: 0 means no network"), std::string::npos) << nics;
  EXPECT_TRUE(ReadCluster("gpus_per_node: 1\ngpu: rtx-4090-24gb\n"
                          "inter_node: {fabric: none, bandwidth: 0 Gb/s, nics_per_node: 0}\n").ok());
  // A zero latency on a real link: the planner would substitute its own alpha, and the
  // writer dropped the key, so the file read back as 2 us.
  const std::string lat = ClusterError("gpus_per_node: 8\ngpu: A100 40GB\n"
                                       "intra_node: {fabric: nvlink, bandwidth: 300 GB/s, latency: 0 us}\n").message();
  EXPECT_NE(lat.find("cluster.yaml:3:"), std::string::npos) << lat;
  EXPECT_NE(lat.find("intra_node.latency: expected a time above 0"), std::string::npos) << lat;
  const std::string bw = ClusterError("gpus_per_node: 1\ngpu: rtx-4090-24gb\n"
                                      "intra_node: {fabric: pcie, bandwidth: 00 GB/s, latency: 5 us}\n").message();
  EXPECT_NE(bw.find("cluster.yaml:3:"), std::string::npos) << bw;
  EXPECT_NE(bw.find("intra_node.bandwidth: expected a rate above 0"), std::string::npos) << bw;
}

// Sources write precisions and tasks their own way (BF16, bf16-mixed, amp_bf16, FP8-CS, MXFP8,
// float8 rowwise, SFT, Pre-training); each reads as the dtype or task it names, and layout switches take any case.
TEST(Documents, SpellingsSourcesUse) {
  struct Case {
    const char* yaml;
    Task task;
    Dtype precision;
  };
  for (const Case& c : {Case{"task: SFT\nprecision: BF16\n", Task::kFinetune, Dtype::kBf16},
                        Case{"task: Pre-training\nprecision: bf16-mixed\n", Task::kPretrain, Dtype::kBf16},
                        Case{"task: pretrain\nprecision: FP8-CS\n", Task::kPretrain, Dtype::kFp8},
                        Case{"task: full_finetune\nprecision: MXFP8\n", Task::kFinetune, Dtype::kFp8},
                        Case{"task: pretrain\nprecision: float8 rowwise\n", Task::kPretrain, Dtype::kFp8},
                        Case{"task: pretrain\nprecision: Float8 Tensorwise\n", Task::kPretrain, Dtype::kFp8},
                        Case{"task: pretrain\nprecision: fp8_delayed_scaling\n", Task::kPretrain, Dtype::kFp8},
                        Case{"task: pretrain\nprecision: amp_bf16\n", Task::kPretrain, Dtype::kBf16},
                        Case{"task: pretrain\nprecision: amp_fp8\n", Task::kPretrain, Dtype::kFp8},
                        Case{"task: Inference\nprecision: FP16\n", Task::kInference, Dtype::kFp16}}) {
    auto doc = Document::Parse("w.yaml", c.yaml);
    ASSERT_TRUE(doc.ok());
    auto w = ParseWorkload(*doc);
    ASSERT_TRUE(w.ok()) << c.yaml << w.status().message();
    EXPECT_EQ(w->task, c.task) << c.yaml;
    if (c.task != Task::kInference) {
      EXPECT_EQ(w->precision, c.precision) << c.yaml;
    }
  }
  auto l = ParseLayout("offload_optimizer=CPU,sp=ON,ac=Full,tp=2");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->offload_optimizer, Offload::kCpu);
  EXPECT_TRUE(l->sp);
  EXPECT_EQ(l->ac, Recompute::kFull);
  for (const char* wrong : {"precision: bf12\n", "precision: float8-\n", "precision: fp8-sideways\n"}) {
    auto bad = Document::Parse("w.yaml", wrong);
    ASSERT_TRUE(bad.ok());
    EXPECT_FALSE(ParseWorkload(*bad).ok()) << wrong;
  }
}

// YAML's flow style is YAML whatever its first character; a .json file must still be JSON.
TEST(Documents, FlowStyleYamlIsYaml) {
  auto doc = Document::Parse("w.yaml", "{task: lora, seq_len: 4096}\n");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto w = ParseWorkload(*doc);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->task, Task::kLora);
  EXPECT_EQ(w->seq_len, 4096);
  auto json = Document::Parse("w.json", "{task: lora}\n");
  ASSERT_FALSE(json.ok());
  EXPECT_NE(json.status().message().find("w.json:1:3: invalid JSON"), std::string::npos) << json.status().message();
  auto strict = Document::Parse("w.yaml", "{\"task\": \"lora\",\t\"seq_len\": 2048}");
  ASSERT_TRUE(strict.ok()) << strict.status().message();
  EXPECT_EQ(ParseWorkload(*strict)->seq_len, 2048);
}

StatusOr<Workload> ReadWorkload(const std::string& text) {
  auto doc = Document::Parse("w.yaml", text);
  if (!doc.ok()) return doc.status();
  return ParseWorkload(*doc);
}

// A workload as a plan file carries it: written, then read again.
StatusOr<Workload> ReadBack(const Workload& w) {
  auto doc = Document::Parse("again.yaml", WorkloadToYaml(w, 0));
  if (!doc.ok()) return doc.status();
  return ParseWorkload(*doc);
}

// The error a workload text is refused with ("" when it reads).
std::string WorkloadError(const std::string& text) {
  auto w = ReadWorkload(text);
  return w.ok() ? "" : w.status().message();
}

// vLLM's --max-num-batched-tokens reads, bounds its value with the line, and a plan file
// carries it.
TEST(Workload, ServingBatchedTokens) {
  auto w = ReadWorkload("task: inference\ninference:\n  prompt_len: 29000\n  max_num_batched_tokens: 29000\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->inference.max_num_batched_tokens, 29000);
  auto back = ReadBack(*w);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->inference, w->inference);
  const std::string rejected = WorkloadError("task: inference\ninference:\n  max_num_batched_tokens: 0\n");
  EXPECT_NE(rejected.find("w.yaml:3:27: max_num_batched_tokens"), std::string::npos) << rejected;
}

// DeepSpeed's overlap_comm reads as a setting, rejects a non-boolean with its line, and a
// plan file carries it.
TEST(Workload, OverlapComm) {
  auto w = ReadWorkload("task: finetune\noverlap_comm: false\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->overlap_comm, Setting::kOff);
  auto back = ReadBack(*w);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, *w);
  const std::string rejected = WorkloadError("task: finetune\noverlap_comm: maybe\n");
  EXPECT_NE(rejected.find("w.yaml:2:15: overlap_comm"), std::string::npos) << rejected;
}

// The framework release reads as a date, to the month or the day; a month alone sorts
// before every dated release of that month. A malformed one is refused with its line, and a
// plan file carries it.
TEST(Workload, Release) {
  EXPECT_EQ(ParseRelease("2025-06-13"), 20250613);
  EXPECT_EQ(ParseRelease("2025-06"), 20250600);
  EXPECT_LT(ParseRelease("2025-04"), ParseRelease("2025-04-02"));
  for (const char* bad : {"2025-13", "2025-6-1", "2025-06-00", "25-06-13", "2025/06/13", "v0.2.0", ""})
    EXPECT_EQ(ParseRelease(bad), 0) << bad;
  EXPECT_EQ(ReleaseName(20250613), "2025-06-13");
  EXPECT_EQ(ReleaseName(20250600), "2025-06");
  auto w = ReadWorkload("task: pretrain\nrelease: 2025-06-11\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->release, 20250611);
  auto back = ReadBack(*w);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, *w);
  const std::string rejected = WorkloadError("task: pretrain\nrelease: June 2025\n");
  EXPECT_NE(rejected.find("w.yaml:2:10: release: expected the framework release's date as YYYY-MM"), std::string::npos)
      << rejected;
}

// PyTorch's version reads as MAJOR.MINOR whatever follows (a patch, a local tag); unquoted,
// YAML's 2.10 is still "2.10". A malformed one is refused at its line; a plan file carries it.
TEST(Workload, TorchVersion) {
  EXPECT_EQ(ParseTorchVersion("2.8"), 208);
  EXPECT_EQ(ParseTorchVersion("2.11.0+cu130"), 211);
  EXPECT_EQ(ParseTorchVersion("2.10.0"), 210);
  EXPECT_EQ(ParseTorchVersion("2.9.0a0+git1234"), 209);
  for (const char* bad : {"2", "two.eight", "2.", ".8", "2.8x", "2.1000", ""}) EXPECT_EQ(ParseTorchVersion(bad), 0) << bad;
  EXPECT_EQ(TorchVersionName(211), "2.11");
  auto w = ReadWorkload("task: pretrain\ntorch: 2.10\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->torch_version, 210);
  auto back = ReadBack(*w);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, *w);
  const std::string rejected = WorkloadError("task: pretrain\ntorch: latest\n");
  EXPECT_NE(rejected.find("w.yaml:2:8: torch: expected PyTorch's version as MAJOR.MINOR"), std::string::npos) << rejected;
}

// Other names for the same settings (Megatron's seq_length and global_batch_size, LLaMA-
// Factory's cutoff_len, a config's dtype) read as ours; one setting given twice, or a
// parallel degree put in the workload, is refused at its line.
TEST(Workload, SynonymsReadAsOurKeys) {
  auto w = ReadWorkload("task: pretrain\nseq_length: 2048\nglobal_batch_size: 64\ndtype: FP8-CS\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->seq_len, 2048);
  EXPECT_EQ(w->global_batch, 64);
  EXPECT_TRUE(w->global_batch_stated);
  EXPECT_EQ(w->precision, Dtype::kFp8);
  EXPECT_EQ(ReadWorkload("task: lora\ncutoff_len: 1024\n")->seq_len, 1024);
  EXPECT_EQ(ReadWorkload("task: finetune\nmodel_max_length: 512\n")->seq_len, 512);  // Alpaca's train.py
  EXPECT_EQ(ReadWorkload("task: pretrain\nblock_size: 1024\n")->seq_len, 1024);      // run_clm.py
  const std::string twice = WorkloadError("task: pretrain\nseq_len: 1024\nmax_seq_length: 2048\n");
  EXPECT_NE(twice.find("w.yaml:3:1: 'max_seq_length' repeats seq_len"), std::string::npos) << twice;
  const std::string layout = WorkloadError("task: pretrain\ntp: 2\n");
  EXPECT_NE(layout.find("w.yaml:2:5: tp: a layout setting; give it in --layout (tp=...)"), std::string::npos) << layout;
  EXPECT_NE(WorkloadError("task: pretrain\nseq_length: four\n").find("w.yaml:2:13:"), std::string::npos);
}

// Muon by its name and Kimi K2's MuonClip; a plan file keeps it.
TEST(Workload, Muon) {
  Optimizer o = Optimizer::kAdamW;
  EXPECT_TRUE(ParseOptimizer("Muon", &o));
  EXPECT_EQ(o, Optimizer::kMuon);
  o = Optimizer::kAdamW;
  EXPECT_TRUE(ParseOptimizer("MuonClip", &o));
  EXPECT_EQ(o, Optimizer::kMuon);
  EXPECT_FALSE(ParseOptimizer("paged_muon", &o));
  auto w = ReadWorkload("task: pretrain\noptimizer: muon\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  auto back = ReadBack(*w);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->optimizer, Optimizer::kMuon);
}

// The optimizer's name says how it steps (torch foreach or per tensor), and a plan file
// keeps it.
TEST(Workload, OptimizerStepFromTheName) {
  EXPECT_EQ(ParseOptimizerStep("adamw_torch"), OptimizerStep::kForeach);
  EXPECT_EQ(ParseOptimizerStep("adamw_torch_fused"), OptimizerStep::kPerTensor);
  EXPECT_EQ(ParseOptimizerStep("FusedAdam"), OptimizerStep::kPerTensor);
  EXPECT_EQ(ParseOptimizerStep("adamw_apex_fused"), OptimizerStep::kPerTensor);
  EXPECT_EQ(ParseOptimizerStep("adamw"), OptimizerStep::kAuto);
  EXPECT_EQ(ParseOptimizerStep("paged_adamw_8bit"), OptimizerStep::kAuto);
  for (const char* name : {"adamw_torch", "fusedadam", "adamw"}) {
    auto w = ReadWorkload(std::string("task: finetune\noptimizer: ") + name + "\n");
    ASSERT_TRUE(w.ok()) << w.status().message();
    EXPECT_EQ(w->optimizer, Optimizer::kAdamW) << name;
    auto back = ReadBack(*w);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, *w) << name;
  }
}

// How a float8 run scales: stated, or read off the precision as sources write it; a located
// error for anything else; carried by the writer.
TEST(Workload, Fp8Recipe) {
  auto read = [](const std::string& text) {
    auto doc = Document::Parse("w.yaml", text);
    EXPECT_TRUE(doc.ok());
    return ParseWorkload(*doc);
  };
  for (const auto& [text, recipe] : std::vector<std::pair<std::string, Fp8Recipe>>{
           {"precision: fp8\n", Fp8Recipe::kAuto},
           {"precision: float8 rowwise\n", Fp8Recipe::kRowwise},
           {"precision: FP8-CS\n", Fp8Recipe::kTensorwise},
           {"precision: MXFP8\n", Fp8Recipe::kMxfp8},
           {"precision: fp8\nfp8_recipe: delayed\n", Fp8Recipe::kTensorwise},
           {"precision: fp8\nfp8_recipe: rowwise_with_gw_hp\n", Fp8Recipe::kRowwise},
           {"precision: float8 rowwise\nfp8_recipe: tensorwise\n", Fp8Recipe::kTensorwise},
           {"precision: bf16\n", Fp8Recipe::kAuto}}) {
    auto w = read("task: pretrain\n" + text);
    ASSERT_TRUE(w.ok()) << text << w.status().message();
    EXPECT_EQ(w->fp8_recipe, recipe) << text;
    auto again = Document::Parse("again.yaml", WorkloadToYaml(*w, 0));
    ASSERT_TRUE(again.ok());
    auto back = ParseWorkload(*again);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->fp8_recipe, recipe) << text;
  }
  auto bad = read("precision: fp8\nfp8_recipe: e5m2\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("w.yaml:2:13: fp8_recipe: expected tensorwise", 0), 0u) << bad.status().message();
}

// The recipe keys users state, with located errors, and what they read as.
TEST(Workload, RecipeKeys) {
  auto doc = Document::Parse("w.yaml", "task: finetune\noptimizer: paged_adamw_8bit\nmaster_weights: none\n"
                                       "optimizer_in_backward: true\nactivation_offload: yes\nloss: chunked\ncompile: true\n"
                                       "fp8_all_gather: off\nbf16_layers: {start: 1, end: 2}\ncustom_sharded_layers: [output]\n");
  ASSERT_TRUE(doc.ok());
  auto w = ParseWorkload(*doc);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->optimizer, Optimizer::kAdamW8bit);
  EXPECT_TRUE(w->paged_optimizer);
  EXPECT_EQ(w->master_weights, MasterWeights::kNone);
  EXPECT_EQ(w->optimizer_in_backward, Setting::kOn);
  EXPECT_EQ(w->activation_offload, Setting::kOn);
  EXPECT_EQ(w->loss, LossKind::kChunked);
  EXPECT_EQ(w->compile, Setting::kOn);
  EXPECT_EQ(w->fp8_all_gather, Setting::kOff);
  EXPECT_EQ(w->bf16_layers_start, 1);
  EXPECT_EQ(w->bf16_layers_end, 2);
  // The writer's text reads back to the same recipe (plan files carry it).
  auto again = Document::Parse("again.yaml", WorkloadToYaml(*w, 0));
  ASSERT_TRUE(again.ok()) << again.status().message();
  auto back = ParseWorkload(*again);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->paged_optimizer);
  EXPECT_EQ(back->master_weights, MasterWeights::kNone);
  EXPECT_EQ(back->loss, LossKind::kChunked);
  EXPECT_EQ(back->compile, Setting::kOn);
  EXPECT_EQ(back->fp8_all_gather, Setting::kOff);
  EXPECT_EQ(back->bf16_layers_end, 2);
  EXPECT_EQ(back->custom_sharded_layers, kShardedOutput);

  for (const auto& [text, expect] : std::vector<std::pair<std::string, std::string>>{
           {"master_weights: fp16\n", "w.yaml:1:17: master_weights: expected fp32 (mixed precision), none"},
           {"loss: liger\n", "w.yaml:1:7: loss: expected standard, chunked, fused, no_upcast, compiled, kernel, inplace or auto"},
           {"compile: maybe\n", "w.yaml:1:10: compile: expected true, false or auto"},
           {"fp8_all_gather: fp8\n", "w.yaml:1:17: fp8_all_gather: expected true, false or auto"},
           {"bf16_layers: {start: 1, last: 2}\n", "w.yaml:1:25: unknown key 'last'"},
           {"optimizer: paged-sgd\n", "w.yaml:1:12: optimizer: expected adamw"},
           {"custom_sharded_layers: [tok_embeddings, lm_head]\n",
            "w.yaml:1:41: custom_sharded_layers: expected a list of tok_embeddings and output (torchtune's names), such as "
            "[tok_embeddings, output] or [], got \"lm_head\""},
           {"custom_sharded_layers: output\n", "w.yaml:1:24: custom_sharded_layers: expected a list"}}) {
    auto bad = Document::Parse("w.yaml", text);
    ASSERT_TRUE(bad.ok());
    auto r = ParseWorkload(*bad);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(expect), std::string::npos) << r.status().message();
  }
}

// HF Trainer's `optim` names and bitsandbytes' class names mean our optimizers.
TEST(Workload, OptimizerSpellings) {
  struct Case {
    const char* name;
    Optimizer o;
    bool paged;
  };
  for (const Case& c : {Case{"adamw_torch_fused", Optimizer::kAdamW, false}, Case{"adamw_bnb_8bit", Optimizer::kAdamW8bit, false},
                        Case{"PagedAdamW8bit", Optimizer::kAdamW8bit, true}, Case{"paged_adamw_32bit", Optimizer::kAdamW, true},
                        Case{"AdamW", Optimizer::kAdamW, false}, Case{"sgd", Optimizer::kSgd, false},
                        // HF Trainer's bitsandbytes, torchao and torch names beyond AdamW.
                        Case{"paged_lion_8bit", Optimizer::kLion8bit, true}, Case{"paged_lion_32bit", Optimizer::kLion, true},
                        Case{"lion_8bit", Optimizer::kLion8bit, false}, Case{"rmsprop", Optimizer::kRmsprop, false},
                        Case{"adagrad", Optimizer::kAdagrad, false}, Case{"ademamix", Optimizer::kAdemamix, false},
                        Case{"paged_ademamix_8bit", Optimizer::kAdemamix8bit, true},
                        Case{"adamw_torch_4bit", Optimizer::kAdamW4bit, false}, Case{"adamw_torch_8bit", Optimizer::kAdamW8bit, false},
                        Case{"schedule_free_adamw", Optimizer::kAdamW, false},
                        // AdamW's two states under other names; LOMO is SGD, AdaLomo Adafactor's.
                        Case{"adopt", Optimizer::kAdamW, false}, Case{"SophiaG", Optimizer::kAdamW, false},
                        Case{"DeepSpeedCPUAdam", Optimizer::kAdamW, false}, Case{"lomo", Optimizer::kSgd, false},
                        Case{"adalomo", Optimizer::kAdafactor, false},
                        // LAMB keeps Adam's two moments (DeepSpeed's "Lamb", apex's FusedLAMB).
                        Case{"lamb", Optimizer::kAdamW, false}, Case{"FusedLamb", Optimizer::kAdamW, false}}) {
    Optimizer o = Optimizer::kLion;
    bool paged = !c.paged;
    ASSERT_TRUE(ParseOptimizer(c.name, &o, &paged)) << c.name;
    EXPECT_EQ(o, c.o) << c.name;
    EXPECT_EQ(paged, c.paged) << c.name;
  }
  // Only bitsandbytes' paged classes page: there is no paged SGD or RMSprop.
  Optimizer o;
  EXPECT_FALSE(ParseOptimizer("paged_rmsprop", &o, nullptr));
  EXPECT_FALSE(ParseOptimizer("paged_lomo", &o, nullptr));
  EXPECT_FALSE(ParseOptimizer("apollo_adamw", &o, nullptr));
  // HF Trainer's GaLore names: the optimizer under the projection; _layerwise steps in backward.
  ASSERT_TRUE(ParseOptimizer("galore_adamw_8bit_layerwise", &o, nullptr));
  EXPECT_EQ(o, Optimizer::kAdamW8bit);
  EXPECT_TRUE(OptimizerStepsInBackward("galore_adamw_8bit_layerwise"));
  EXPECT_FALSE(OptimizerStepsInBackward("galore_adamw"));
  ASSERT_TRUE(ParseOptimizer("galore_adafactor", &o, nullptr));
  EXPECT_EQ(o, Optimizer::kAdafactor);
  EXPECT_FALSE(ParseOptimizer("galore_lion", &o, nullptr));
  EXPECT_TRUE(OptimizerStepsInBackward("AdaLomo"));
  EXPECT_FALSE(OptimizerStepsInBackward("sgd"));
}

// GaLore's rank: 128 unless optim_args (HF's string) or galore_rank says; the writer's text
// reads back to the same; a rank without a GaLore optimizer is an error on its line.
TEST(Workload, GaloreRank) {
  auto w = ReadWorkload("task: pretrain\noptimizer: galore_adamw_layerwise\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->galore_rank, 128);
  EXPECT_EQ(w->optimizer, Optimizer::kAdamW);
  EXPECT_EQ(w->optimizer_in_backward, Setting::kOn);
  w = ReadWorkload("task: pretrain\noptimizer: galore_adamw_8bit\noptim_args: \"rank=1024, update_proj_gap=500, scale=0.25\"\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->galore_rank, 1024);
  auto back = ReadBack(*w);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, *w);
  auto doc = Document::Parse("w.yaml", "task: pretrain\noptimizer: adamw\noptim_args: \"rank=64\"\n");
  ASSERT_TRUE(doc.ok());
  auto bad = ParseWorkload(*doc);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("w.yaml:3:13: GaLore's rank needs a galore optimizer"), std::string::npos)
      << bad.status().message();
  // optim_args without a rank belongs to whatever optimizer it configures.
  auto other = ReadWorkload("task: pretrain\noptimizer: ademamix\noptim_args: \"beta3=0.9999, alpha=8.0\"\n");
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_EQ(other->galore_rank, 0);
  doc = Document::Parse("w.yaml", "task: pretrain\noptimizer: galore_adamw\noptim_args: \"rank=x\"\n");
  bad = ParseWorkload(*doc);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("optim_args: rank= expects a positive integer"), std::string::npos)
      << bad.status().message();
}

// GaLore's abstract: "reduces memory usage by up to 65.5% in optimizer states" (Zhao et al.
// 2024), for its LLaMA 7B (4096 wide, 11008 MLP, 32 layers, 32000 vocab: llama-2-7b's shape)
// at the rank its 7B runs use, 1024: the attention and MLP states move to the projection and
// the embeddings and head keep AdamW's two.
TEST(Workload, GaloreStatesOfLlama7b) {
  auto loaded = LoadModel("llama-2-7b");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const double full = OptimizerStateBytes(Optimizer::kAdamW, *loaded);
  const GaloreShare galore = GaloreStates(Optimizer::kAdamW, *loaded, 1024);
  EXPECT_NEAR(1 - (galore.states + 4 * galore.projector) / full, 0.655, 0.01);
  // A rank past a matrix's shorter side projects nothing away: the states come back whole,
  // beside the projector.
  const GaloreShare whole = GaloreStates(Optimizer::kAdamW, *loaded, 8192);
  EXPECT_DOUBLE_EQ(whole.states, full);
  EXPECT_GT(whole.projector, 0);
}

// Bytes of optimizer state per trained element: bitsandbytes' 8-bit states are a uint8 and an
// fp32 absmax per 256 elements each (since v0.44); torchao's 4-bit m and v keep an fp32 scale per 128;
// AdEMAMix holds two first moments and a second, RMSprop and Adagrad one fp32 state.
TEST(Workload, OptimizerStateBytes) {
  auto loaded = LoadModel("llama-3.1-8b");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const ModelSpec& m = *loaded;
  EXPECT_DOUBLE_EQ(OptimizerStateBytes(Optimizer::kAdamW8bit, m), 2 + 8.0 / 256);
  EXPECT_DOUBLE_EQ(OptimizerStateBytes(Optimizer::kLion8bit, m), 1 + 4.0 / 256);
  EXPECT_DOUBLE_EQ(OptimizerStateBytes(Optimizer::kAdemamix8bit, m), 3 + 12.0 / 256);
  EXPECT_DOUBLE_EQ(OptimizerStateBytes(Optimizer::kAdamW4bit, m), 1 + 8.0 / 128);
  EXPECT_DOUBLE_EQ(OptimizerStateBytes(Optimizer::kAdemamix, m), 12);
  EXPECT_DOUBLE_EQ(OptimizerStateBytes(Optimizer::kRmsprop, m), 4);
  EXPECT_DOUBLE_EQ(OptimizerStateBytes(Optimizer::kAdagrad, m), 4);
  EXPECT_TRUE(QuantizedStates(Optimizer::kAdamW4bit));
  EXPECT_FALSE(QuantizedStates(Optimizer::kAdemamix));
}

// A trainer's own file pasted as the workload: HF TrainingArguments, LLaMA-Factory, axolotl and
// DeepSpeed name the task, precision, adapters, batch and checkpointing their way, and the
// arguments that change neither memory nor time are read past, and named.
TEST(Workload, TrainerFilesAsTheyAre) {
  // LLaMA-Factory's examples/train_qlora/llama3_lora_sft_otfq.yaml, its training keys.
  auto w = ReadWorkload(
      "model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\nquantization_bit: 4\nquantization_method: bitsandbytes\n"
      "trust_remote_code: true\nstage: sft\ndo_train: true\nfinetuning_type: lora\nlora_rank: 8\nlora_target: all\n"
      "dataset: identity,alpaca_en_demo\ntemplate: llama3\ncutoff_len: 2048\nmax_samples: 1000\n"
      "output_dir: saves/llama3-8b/lora/sft\nlogging_steps: 10\nper_device_train_batch_size: 1\n"
      "gradient_accumulation_steps: 8\nlearning_rate: 1.0e-4\nnum_train_epochs: 3.0\nlr_scheduler_type: cosine\n"
      "warmup_ratio: 0.1\nbf16: true\nddp_timeout: 180000000\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->task, Task::kQlora);
  EXPECT_EQ(w->seq_len, 2048);
  EXPECT_EQ(w->lora.rank, 8);
  EXPECT_EQ(w->lora.targets, std::vector<std::string>{"all-linear"});
  EXPECT_EQ(w->micro_batch, 1);
  EXPECT_EQ(w->grad_accum, 8);
  EXPECT_EQ(w->precision, Dtype::kBf16);
  EXPECT_FALSE(w->global_batch_stated);
  EXPECT_EQ(w->checkpointing, Setting::kOn);  // LLaMA-Factory's default, said
  ASSERT_EQ(w->assumed.size(), 2u);
  EXPECT_NE(w->assumed[1].find("gradient_checkpointing: on (LLaMA-Factory"), std::string::npos) << w->assumed[1];
  EXPECT_EQ(w->assumed[0], "read past model_name_or_path, trust_remote_code, do_train, dataset, template, max_samples, "
                           "output_dir, logging_steps, learning_rate, num_train_epochs, lr_scheduler_type, warmup_ratio, "
                           "ddp_timeout: arguments with no bearing on memory or step time");

  w = ReadWorkload("stage: sft\nfinetuning_type: full\ndisable_gradient_checkpointing: true\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->task, Task::kFinetune);
  EXPECT_EQ(w->checkpointing, Setting::kOff);

  // HF TrainingArguments: optim, fp16, gradient checkpointing, Liger, the attention kernel.
  w = ReadWorkload("max_length: 4096\nper_device_train_batch_size: 4\noptim: paged_adamw_8bit\nfp16: true\n"
                   "gradient_checkpointing: true\nuse_liger_kernel: true\nattn_implementation: eager\ntorch_compile: true\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->task, Task::kPretrain);  // nothing says fine-tuning; the full-model default
  EXPECT_EQ(w->seq_len, 4096);
  EXPECT_EQ(w->precision, Dtype::kFp16);
  EXPECT_EQ(w->optimizer, Optimizer::kAdamW8bit);
  EXPECT_TRUE(w->paged_optimizer);
  EXPECT_EQ(w->checkpointing, Setting::kOn);
  EXPECT_EQ(w->loss, LossKind::kFused);
  EXPECT_EQ(w->flash_attention, Setting::kOff);
  EXPECT_EQ(w->compile, Setting::kOn);
  // Both switches off is HF's fp32 run.
  w = ReadWorkload("task: finetune\nbf16: false\nfp16: false\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->precision, Dtype::kFp32);

  // axolotl: adapter, 4-bit base, all linear layers, its sequence and micro-batch names.
  w = ReadWorkload("base_model: NousResearch/Llama-2-7b-hf\nload_in_4bit: true\nadapter: qlora\nsequence_len: 4096\n"
                   "lora_r: 32\nlora_alpha: 16\nlora_dropout: 0.05\nlora_target_linear: true\nmicro_batch_size: 2\n"
                   "gradient_accumulation_steps: 4\nbf16: auto\nflash_attention: true\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->task, Task::kQlora);
  EXPECT_EQ(w->seq_len, 4096);
  EXPECT_EQ(w->lora.rank, 32);
  EXPECT_DOUBLE_EQ(w->lora.dropout, 0.05);
  EXPECT_EQ(w->lora.targets, std::vector<std::string>{"all-linear"});
  EXPECT_EQ(w->micro_batch, 2);
  EXPECT_EQ(w->precision, Dtype::kBf16);  // auto: the default stands
  EXPECT_EQ(w->flash_attention, Setting::kOn);

  // DeepSpeed's JSON: the global batch is train_batch_size; precision as {enabled: ...}.
  w = ReadWorkload("{\"task\": \"finetune\", \"train_batch_size\": 64, \"train_micro_batch_size_per_gpu\": 2, "
                   "\"fp16\": {\"enabled\": true, \"loss_scale\": 0}}");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->global_batch, 64);
  EXPECT_EQ(w->micro_batch, 2);
  EXPECT_EQ(w->precision, Dtype::kFp16);
  // LLaMA-Factory's comma-separated targets; task: lora on a 4-bit base is QLoRA.
  w = ReadWorkload("task: lora\nload_in_4bit: true\nlora_target: q_proj, v_proj\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->task, Task::kQlora);
  EXPECT_EQ(w->lora.targets, (std::vector<std::string>{"q_proj", "v_proj"}));

  // The batch settings written back read back the same.
  w = ReadWorkload("task: finetune\nper_device_train_batch_size: 3\ngradient_accumulation_steps: 5\n"
                   "gradient_checkpointing: false\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  auto back = ReadWorkload(WorkloadToYaml(*w, 0));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, *w);
}

// A serving engine's own limits: vLLM's max_model_len is a request at its longest (prompt and
// generation), max_num_seqs the sequences it runs at once; SGLang's and TensorRT-LLM's names
// read the same, and transformers' generate has neither.
TEST(Workload, ServingLimits) {
  auto w = ReadWorkload("task: inference\ninference: {max_model_len: 8192, max_num_seqs: 64}\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->inference.prompt_len + w->inference.gen_len, 8192);
  EXPECT_EQ(w->inference.gen_len, 1024);
  EXPECT_EQ(w->inference.max_num_seqs, 64);
  EXPECT_EQ(w->inference.batch, 64);
  ASSERT_EQ(w->assumed.size(), 2u);
  EXPECT_EQ(w->assumed[1], "max_model_len: 8192 tokens a request at its longest, prompt_len 7168 + gen_len 1024 "
                           "(say gen_len: for your split)");
  auto back = ReadWorkload(WorkloadToYaml(*w, 0));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->inference, w->inference);
  w = ReadWorkload("task: inference\ninference: {context_length: 1024, max_running_requests: 8, batch: 2, "
                   "mem_fraction_static: 0.85}\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->inference.prompt_len, 512);  // half of a short context generated
  EXPECT_EQ(w->inference.batch, 2);
  EXPECT_EQ(w->inference.max_num_seqs, 8);
  const std::string both = WorkloadError("task: inference\ninference: {max_model_len: 4096, prompt_len: 4096}\n");
  EXPECT_NE(both.find("max_model_len: give it or prompt_len, not both"), std::string::npos) << both;
  const std::string long_gen = WorkloadError("task: inference\ninference: {max_model_len: 4096, gen_len: 4096}\n");
  EXPECT_NE(long_gen.find("gen_len: 4096 tokens leave no prompt within max_model_len 4096"), std::string::npos) << long_gen;
  const std::string hf = WorkloadError("task: inference\ninference: {engine: transformers, max_num_seqs: 4}\n");
  EXPECT_NE(hf.find("a serving engine's setting; transformers' generate has none"), std::string::npos) << hf;
}

// A serving engine's own config as the workload: `vllm serve --config` keys (dashes or
// underscores) and SGLang's server arguments fill the inference block and make the task
// inference; the endpoint's own keys are read past; a setting the engine leaves to itself
// (auto) stays unstated.
TEST(Workload, ServingEngineConfigAsItIs) {
  auto w = ReadWorkload("model: meta-llama/Llama-3.1-8B-Instruct\nport: 8000\ntensor-parallel-size: 2\n"
                        "max-model-len: 16384\ngpu-memory-utilization: 0.92\nmax-num-seqs: 128\nkv-cache-dtype: fp8_e4m3\n"
                        "dtype: auto\nquantization: fp8\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->task, Task::kInference);
  EXPECT_EQ(w->inference.engine, ServingEngine::kVllm);
  EXPECT_EQ(w->inference.prompt_len + w->inference.gen_len, 16384);
  EXPECT_DOUBLE_EQ(w->inference.gpu_memory_utilization, 0.92);
  EXPECT_EQ(w->inference.max_num_seqs, 128);
  EXPECT_EQ(w->inference.kv_cache, Dtype::kFp8);
  EXPECT_EQ(w->inference.weights, Dtype::kFp8);
  EXPECT_EQ(w->precision, Dtype::kBf16);  // auto: the checkpoint's own
  EXPECT_EQ(w->tensor_parallel, 2);
  ASSERT_FALSE(w->assumed.empty());
  EXPECT_EQ(w->assumed[0], "read past model, port: arguments with no bearing on memory or step time");
  auto back = ReadWorkload(WorkloadToYaml(*w, 0));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->inference, w->inference);
  EXPECT_EQ(back->tensor_parallel, 2);

  w = ReadWorkload("model-path: Qwen/Qwen3-8B\ntp-size: 4\nmem-fraction-static: 0.85\ncontext-length: 32768\n"
                   "max-running-requests: 64\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->inference.engine, ServingEngine::kSglang);
  EXPECT_DOUBLE_EQ(w->inference.gpu_memory_utilization, 0.85);
  EXPECT_EQ(w->inference.max_num_seqs, 64);
  EXPECT_EQ(w->tensor_parallel, 4);

  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"task: finetune\nmax_model_len: 4096\n", "w.yaml:2:16: max_model_len: a serving engine's setting, but task is finetune"},
           {"max_model_len: 4096\ninference: {batch: 2}\n", "max_model_len: give the serving settings in inference: or at the top level"},
           {"kv_cache_dtype: int2\n", "kv_cache_dtype: expected auto, fp8, fp8_e4m3 or fp8_e5m2, got \"int2\""},
           {"quantization: hqq\n", "quantization: expected fp8, awq, gptq, bitsandbytes, or the checkpoint's own"},
       }) {
    const std::string error = WorkloadError(text);
    EXPECT_NE(error.find(message), std::string::npos) << text << " -> " << error;
  }
}

// What a trainer file says that shardplan cannot price, or says twice, is an error at its line.
TEST(WorkloadRejects, TrainerFileKeys) {
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"bf16: true\nfp16: true\n", "w.yaml:2:7: fp16: bf16 is on as well"},
           {"precision: fp16\nbf16: true\n", "w.yaml:2:7: bf16: the precision is given as fp16 already"},
           {"quantization_bit: 8\nfinetuning_type: lora\n", "w.yaml:1:19: quantization_bit: 8-bit base weights are not modelled"},
           {"load_in_8bit: true\n", "load_in_8bit: an 8-bit base (LLM.int8) is not modelled"},
           {"stage: dpo\nfinetuning_type: lora\n", "w.yaml:1:8: stage: \"dpo\" is preference or RL training"},
           {"stage: sft\nfinetuning_type: freeze\n", "finetuning_type: expected full or lora; \"freeze\""},
           {"task: finetune\nlora_r: 16\n", "w.yaml:2:9: lora_rank: says lora, but task is finetune"},
           {"task: finetune\nquantization_bit: 4\n", "quantization_bit: says qlora, but task is finetune"},
           {"finetuning_type: full\nquantization_bit: 4\n", "a 4-bit base trains adapters only"},
           {"lora: {rank: 8}\nlora_r: 16\n", "w.yaml:2:9: lora_rank: the adapters are given in lora: already"},
           {"optim: adamw_torch\noptimizer: adamw\n", "w.yaml:2:1: 'optimizer' repeats optimizer"},
           {"deepspeed: examples/deepspeed/ds_z3_config.json\n", "deepspeed: a layout setting; give it in --layout "
                                                                 "(framework=deepspeed,zero=...)"},
           {"task: finetune\nlearnig_rate: 1.0e-5\n", "unknown key 'learnig_rate', did you mean 'learning_rate'?"},
           {"attn_implementation: flash_attention_9\n", "attn_implementation: expected eager, sdpa"},
       }) {
    auto w = ReadWorkload(text);
    ASSERT_FALSE(w.ok()) << text;
    EXPECT_NE(w.status().message().find(message), std::string::npos) << text << " -> " << w.status().message();
  }
}

// LitGPT's config files as they ship (config_hub/finetune/llama-3.1-8b/lora.yaml, its keys
// and values, comments left out): the Lightning precision, the train: block, the projections'
// switches, the optimizer as class_path and init_args, and what has no bearing read past.
TEST(Workload, LitgptConfigAsItIs) {
  const std::string lora =
      "checkpoint_dir: checkpoints/meta-llama/Meta-Llama-3.1-8B\nout_dir: out/finetune/lora-llama-3.1-8b\n"
      "precision: bf16-true\nquantize:\ndevices: 1\nnum_nodes: 1\nlora_r: 32\nlora_alpha: 16\nlora_dropout: 0.05\n"
      "lora_query: true\nlora_key: false\nlora_value: true\nlora_projection: false\nlora_mlp: false\nlora_head: false\n"
      "data:\n  class_path: litgpt.data.Alpaca2k\n  init_args:\n    mask_prompt: false\n    prompt_style: alpaca\n"
      "train:\n  save_interval: 200\n  log_interval: 1\n  global_batch_size: 8\n  micro_batch_size: 1\n"
      "  lr_warmup_steps: 10\n  epochs: 2\n  max_tokens:\n  max_steps:\n  max_seq_length: 512\n  tie_embeddings:\n"
      "  max_norm:\n  min_lr: 6.0e-05\neval:\n  interval: 100\n  max_new_tokens: 100\n  max_iters: 100\n"
      "  initial_validation: false\n  final_validation: true\nlogger_name: csv\nseed: 1337\noptimizer:\n"
      "  class_path: torch.optim.AdamW\n  init_args:\n    lr: 0.0002\n    weight_decay: 0.0\n    betas:\n"
      "      - 0.9\n      - 0.95\n";
  auto w = ReadWorkload(lora);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->task, Task::kLora);
  EXPECT_EQ(w->precision, Dtype::kBf16);
  EXPECT_EQ(w->master_weights, MasterWeights::kNone);  // bf16-true: pure bf16
  EXPECT_EQ(w->lora.rank, 32);
  EXPECT_DOUBLE_EQ(w->lora.dropout, 0.05);
  EXPECT_EQ(w->lora.targets, (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(w->seq_len, 512);
  EXPECT_EQ(w->global_batch, 8);
  EXPECT_TRUE(w->global_batch_stated);
  EXPECT_EQ(w->micro_batch, 1);
  EXPECT_EQ(w->devices, 1);
  EXPECT_EQ(w->optimizer, Optimizer::kAdamW);
  ASSERT_EQ(w->assumed.size(), 1u);
  EXPECT_EQ(w->assumed[0], "read past checkpoint_dir, out_dir, data, eval, logger_name, seed, train.save_interval, "
                           "train.log_interval, train.lr_warmup_steps, train.epochs, train.max_tokens, train.max_steps, "
                           "train.tie_embeddings, train.max_norm, train.min_lr: arguments with no bearing on memory or "
                           "step time");
  auto back = ReadWorkload(WorkloadToYaml(*w, 0));
  ASSERT_TRUE(back.ok()) << back.status().message();
  w->assumed.clear();
  EXPECT_EQ(*back, *w);

  // qlora.yaml: a 4-bit base; tiny-llama's: every projection and the head.
  w = ReadWorkload("precision: bf16-true\nquantize: bnb.nf4\ndevices: 1\nlora_r: 32\nlora_query: true\nlora_key: true\n"
                   "lora_value: true\nlora_projection: true\nlora_mlp: true\nlora_head: true\n"
                   "train:\n  micro_batch_size: 8\n  max_seq_length: 512\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->task, Task::kQlora);
  EXPECT_EQ(w->lora.targets, (std::vector<std::string>{"q_proj", "k_proj", "v_proj", "o_proj", "mlp", "lm_head"}));
  // Unset switches take LitGPT's defaults: query and value on.
  w = ReadWorkload("lora_r: 8\nlora_mlp: true\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->lora.targets, (std::vector<std::string>{"q_proj", "v_proj", "mlp"}));

  // full.yaml: no adapters is finetune_full's, over 4 devices; bf16-mixed keeps fp32 masters.
  w = ReadWorkload("precision: bf16-mixed\ndevices: 4\nnum_nodes: 2\ntrain:\n  micro_batch_size: 4\n"
                   "  global_batch_size: 64\n  max_seq_length: 512\noptimizer: AdamW\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->task, Task::kFinetune);
  EXPECT_EQ(w->master_weights, MasterWeights::kFp32);
  EXPECT_EQ(w->devices, 8);
  // pretrain/tinyllama.yaml: model_name says pretraining; devices: auto is every GPU.
  w = ReadWorkload("model_name: tiny-llama-1.1b\nprecision: bf16-mixed\ndevices: auto\nnum_nodes: 1\n"
                   "train:\n  global_batch_size: 512\n  micro_batch_size: 4\n  max_seq_length: 2048\n"
                   "optimizer:\n  class_path: torch.optim.AdamW\n  init_args:\n    lr: 4e-4\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->task, Task::kPretrain);
  EXPECT_EQ(w->devices, 0);
  EXPECT_EQ(w->seq_len, 2048);
  // Lightning's precision names elsewhere: 16-true is pure fp16, 32-true fp32.
  w = ReadWorkload("task: finetune\nprecision: 16-true\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->precision, Dtype::kFp16);
  EXPECT_EQ(w->master_weights, MasterWeights::kNone);
  w = ReadWorkload("task: finetune\nprecision: 32-true\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->precision, Dtype::kFp32);
  EXPECT_EQ(w->master_weights, MasterWeights::kAuto);
  // Double quantization of a 4-bit base's scales, as HF and LLaMA-Factory name it.
  w = ReadWorkload("load_in_4bit: true\nadapter: qlora\nbnb_4bit_use_double_quant: false\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->double_quant, Setting::kOff);
  w = ReadWorkload("stage: sft\nfinetuning_type: lora\nquantization_bit: 4\ndouble_quantization: true\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->double_quant, Setting::kOn);
  // torch.optim's own arguments inside init_args still say how the step runs.
  w = ReadWorkload("task: finetune\noptimizer:\n  class_path: torch.optim.AdamW\n  init_args:\n    fused: true\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->optimizer_step, OptimizerStep::kPerTensor);
}

// A workload in a write-up's words: the task in a phrase, the precision's mode before it, the
// optimizer's step beside its name, the global batch in tokens, a fine-tune's quantized base,
// and a serving benchmark's request sizes and concurrency at the top level.
TEST(Workload, WordsOfWriteUps) {
  Task t;
  for (const auto& [words, task] : std::vector<std::pair<std::string, Task>>{
           {"LoRA fine-tuning", Task::kLora}, {"QLoRA SFT", Task::kQlora}, {"full-parameter fine-tuning", Task::kFinetune},
           {"continued pre-training", Task::kPretrain}, {"batch inference", Task::kInference}}) {
    ASSERT_TRUE(ParseTask(words, &t)) << words;
    EXPECT_EQ(t, task) << words;
  }
  EXPECT_FALSE(ParseTask("distillation", &t));
  auto w = ReadWorkload("task: finetune\nprecision: mixed bf16\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->precision, Dtype::kBf16);
  EXPECT_EQ(w->master_weights, MasterWeights::kFp32);
  w = ReadWorkload("task: finetune\nprecision: pure bf16\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->master_weights, MasterWeights::kNone);
  w = ReadWorkload("optimizer: AdamW (fused)\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->optimizer, Optimizer::kAdamW);
  EXPECT_EQ(w->optimizer_step, OptimizerStep::kPerTensor);
  w = ReadWorkload("optimizer: foreach AdamW\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->optimizer_step, OptimizerStep::kForeach);
  // Llama 2's 4M-token batch of 4,096-token sequences: 1,024 of them.
  w = ReadWorkload("seq_len: 4096\nglobal_batch: 4M tokens\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->global_batch, 1024);
  w = ReadWorkload("seq_len: 2048\nglobal_batch_tokens: 4000000\n");  // only the decimal reading... neither divides
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->global_batch, 1953);
  w = ReadWorkload("seq_len: 2000\ntokens_per_batch: 4M\n");  // the decimal reading divides
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->global_batch, 2000);
  w = ReadWorkload("task: lora\nquantization: 4bit\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->task, Task::kQlora);
  w = ReadWorkload("isl: 1024\nosl: 256\nconcurrency: 64\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->task, Task::kInference);
  EXPECT_EQ(w->inference.prompt_len, 1024);
  EXPECT_EQ(w->inference.gen_len, 256);
  EXPECT_EQ(w->inference.batch, 64);
  w = ReadWorkload("task: inference\nbatch_size: 32\ninference: {input_len: 2048, max_new_tokens: 128}\n");
  ASSERT_FALSE(w.ok());  // the sizes at the top level and in inference: both
  w = ReadWorkload("task: inference\ninference: {concurrency: 16, input_len: 2048, max_new_tokens: 128}\n");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->inference.batch, 16);
  EXPECT_EQ(w->inference.prompt_len, 2048);
  EXPECT_EQ(w->inference.gen_len, 128);
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"batch_size: 1024\n", "w.yaml:1:13: batch_size: say global_batch"},
           {"task: DPO fine-tuning\n", "is preference or RL training"},
           {"task: lora\nquantization: 8bit\n", "quantization: an 8-bit base (LLM.int8) is not modelled"},
           {"task: lora\nquantization: gguf\n", "quantization: expected 4bit, nf4 or bitsandbytes"},
           {"seq_len: 4096\nglobal_batch: lots of tokens\n", "global_batch: expected a token count"},
           {"global_batch: 4M tokens\nglobal_batch_tokens: 4194304\n", "global_batch_tokens: the global batch is given"},
       }) {
    auto bad = ReadWorkload(text);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_NE(bad.status().message().find(message), std::string::npos) << text << " -> " << bad.status().message();
  }
}

TEST(WorkloadRejects, LitgptKeys) {
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"quantize: bnb.int8-training\nlora_r: 8\n", "w.yaml:1:11: quantize: an 8-bit base (LLM.int8) is not modelled"},
           {"quantize: gptq\nlora_r: 8\n", "quantize: expected bnb.nf4, bnb.nf4-dq, bnb.fp4 or bnb.fp4-dq"},
           {"quantize: bnb.nf4\ndevices: 4\nlora_r: 8\n", "quantize: LitGPT trains a quantized base on one GPU only"},
           {"train:\n  micro_batch_sise: 2\n", "unknown key 'micro_batch_sise', did you mean 'micro_batch_size'?"},
           {"train:\n  tie_embeddings: true\n", "w.yaml:2:19: tie_embeddings: true ties the head"},
           {"train: 4\n", "train: expected LitGPT's block of training arguments"},
           {"micro_batch_size: 1\ntrain:\n  micro_batch_size: 2\n", "micro_batch_size: given in train: and at the top level"},
           {"lora_r: 8\nlora_query: false\nlora_value: false\n", "every lora_* switch is off"},
           {"lora_target: q_proj\nlora_query: true\n", "lora_query: the targets are named in lora_target already"},
           {"precision: transformer-engine\n", "precision: Lightning's transformer-engine plugin is not modelled"},
           {"precision: bf16-true\nmaster_weights: fp32\n", "master_weights: the precision says none already"},
           {"task: finetune\noptimizer:\n  class_path: torch.optim.AdamW\n  init_args: 3\n", "init_args: expected the optimizer's arguments"},
           {"devices: 0\n", "devices"},
           {"double_quant: true\nquantize: bnb.nf4\nlora_r: 8\n", "quantize: bnb.nf4 says double quantization off"},
           {"precision: bf16-mixed\nquantize: bnb.nf4\nlora_r: 8\n", "quantize: LitGPT refuses a quantized base under mixed"},
       }) {
    auto w = ReadWorkload(text);
    ASSERT_FALSE(w.ok()) << text;
    EXPECT_NE(w.status().message().find(message), std::string::npos) << text << " -> " << w.status().message();
  }
}

// LLaMA-Factory checkpoints every layer unless disable_gradient_checkpointing; its name in a
// layout says so, and a stated ac wins.
TEST(Layout, LlamaFactoryCheckpoints) {
  auto l = ParseLayout("framework=llamafactory,dp=2");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->ac, Recompute::kFull);
  EXPECT_TRUE(l->fixed & kKeyAc);
  l = ParseLayout("framework=LLaMA-Factory,ac=none");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->ac, Recompute::kNone);
  l = ParseLayout("framework=hf");
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_FALSE(l->fixed & kKeyAc);
}

}  // namespace
}  // namespace shardplan
