// Quantized checkpoints: the reader of quantization_config, the modules a skip list keeps in
// 16-bit, the bytes per weight with scales, and serving a checkpoint in its own format.
#include <gtest/gtest.h>

#include <numeric>

#include "planner/io/model_reader.h"
#include "planner/memory_model.h"
#include "planner/quantization.h"
#include "planner/units.h"
#include "topology/cluster_reader.h"

namespace shardplan {
namespace {

ModelSpec Parse(const std::string& text) {
  auto doc = Document::Parse("c.json", text);
  EXPECT_TRUE(doc.ok()) << doc.status().message();
  auto m = ParseModel(*doc, "t");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : ModelSpec{};
}

Status ParseError(const std::string& text) {
  auto doc = Document::Parse("c.json", text);
  if (!doc.ok()) return doc.status();
  auto m = ParseModel(*doc, "t");
  return m.ok() ? Status::Ok() : m.status();
}

int64_t Sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

// The Llama 3.1 405B config.json with a quantization_config spliced in.
std::string Llama405b(const std::string& quantization_config) {
  return R"({"model_type": "llama", "hidden_size": 16384, "intermediate_size": 53248, "num_hidden_layers": 126,
             "num_attention_heads": 128, "num_key_value_heads": 8, "vocab_size": 128256,
             "tie_word_embeddings": false, "quantization_config": )" + quantization_config + "}";
}

// meta-llama/Llama-3.1-405B-Instruct-FP8: fbgemm_fp8 with modules_to_not_convert listing
// lm_head, q/k/v/o_proj of every layer and the MLP projections of layers 0 and 125.
std::string MetaFp8SkipList() {
  std::string list = R"(["lm_head")";
  for (int i = 0; i < 126; ++i)
    for (const char* p : {"k_proj", "o_proj", "q_proj", "v_proj"})
      list += ", \"model.layers." + std::to_string(i) + ".self_attn." + p + "\"";
  for (const char* p : {"down_proj", "gate_proj", "up_proj"})
    for (int i : {0, 125}) list += ", \"model.layers." + std::to_string(i) + ".mlp." + p + "\"";
  return list + "]";
}

constexpr int64_t kAttention405 = 16384LL * 16384 * 2 + 16384LL * 1024 * 2;  // q, o + k, v
constexpr int64_t kMlp405 = 3 * 16384LL * 53248;

TEST(SkipList, MatchesOnDotBoundaries) {
  EXPECT_TRUE(SkipEntryMatches("self_attn", "model.layers.3.self_attn.q_proj"));
  EXPECT_TRUE(SkipEntryMatches("model.layers.1.mlp", "model.layers.1.mlp.up_proj"));
  EXPECT_FALSE(SkipEntryMatches("model.layers.1.mlp", "model.layers.10.mlp.up_proj"));
  EXPECT_FALSE(SkipEntryMatches("model.layers.1", "model.layers.12.self_attn.o_proj"));
  EXPECT_FALSE(SkipEntryMatches("lm_head", "model.layers.0.mlp.down_proj"));
  EXPECT_FALSE(SkipEntryMatches("proj", "model.layers.0.mlp.down_proj"));
  EXPECT_TRUE(SkipEntryMatches("model.layers.0.mlp.down_proj", "model.layers.0.mlp.down_proj"));
  EXPECT_FALSE(SkipEntryMatches("", "model.layers.0.mlp.down_proj"));
}

TEST(Fbgemm, MetaFp8CheckpointKeepsAttentionAndOuterLayers) {
  ModelSpec full = Parse(Llama405b(R"({"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
                                        "modules_to_not_convert": )" + MetaFp8SkipList() + "}"));
  ASSERT_TRUE(full.quant.quantized());
  EXPECT_EQ(full.quant.format, Dtype::kFp8);
  EXPECT_EQ(full.quant.skip.size(), 1u + 126 * 4 + 6);
  EXPECT_EQ(full.quant.kept_dense[0], kAttention405 + kMlp405);
  EXPECT_EQ(full.quant.kept_dense[1], kAttention405);
  EXPECT_EQ(full.quant.kept_dense[125], kAttention405 + kMlp405);
  EXPECT_EQ(Sum(full.quant.kept_dense), 126 * kAttention405 + 2 * kMlp405);
  EXPECT_EQ(QuantizedParams(full), 124 * kMlp405);  // 324,538,466,304: the FFN of layers 1-124
  // The same modules named by prefixes give the same split.
  ModelSpec prefixes = Parse(Llama405b(R"({"quant_method": "fbgemm_fp8",
      "modules_to_not_convert": ["lm_head", "self_attn", "model.layers.0.mlp", "model.layers.125.mlp"]})"));
  EXPECT_EQ(prefixes.quant.kept_dense, full.quant.kept_dense);
  // fp8 weights with an fp32 scale per output row.
  EXPECT_DOUBLE_EQ(CheckpointBytesPerParam(full), 1.0 + 4.0 / 16384);
}

// vLLM issue 6746: "Loading model weights took 57.7520 GB" (GiB) per GPU for this checkpoint
// at TP=8. Quantizing every linear layer instead would predict 17% too little.
TEST(Fbgemm, WeightsPerGpuMatchVllm) {
  ModelSpec m = Parse(Llama405b(R"({"quant_method": "fbgemm_fp8", "modules_to_not_convert": )" + MetaFp8SkipList() + "}"));
  auto c = LoadCluster("dgx-h100");
  ASSERT_TRUE(c.ok());
  Workload w;
  w.task = Task::kInference;  // asks for bf16 weights; the checkpoint is served as stored
  auto l = ResolveLayout(m, w, *c, *ParseLayout("tp=8"));
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->weights, Dtype::kFp8);
  MemoryEstimate e = EstimateMemory(m, w, *l, *c);
  int64_t weights = 0;
  for (const MemoryTerm& t : e.fullest().terms)
    if (t.name == "weights") weights = t.bytes;
  const double reported = 57.752 * kGiB;
  EXPECT_NEAR(static_cast<double>(weights) / reported, 1.0, 0.03) << ToGiB(weights);
  // Requantizing to int4 applies to every linear layer: the skip list is the fp8 checkpoint's.
  auto int4 = ResolveLayout(m, w, *c, *ParseLayout("tp=8,weights=int4"));
  ASSERT_TRUE(int4.ok());
  MemoryEstimate q = EstimateMemory(m, w, *int4, *c);
  int64_t int4_weights = 0;
  for (const MemoryTerm& t : q.fullest().terms)
    if (t.name == "weights") int4_weights = t.bytes;
  EXPECT_LT(static_cast<double>(int4_weights), 0.5 * static_cast<double>(weights));
}

TEST(Fp8, DeepSeekV3ShipsBlockScaledFp8) {
  auto m = LoadModel("deepseek-v3");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->quant.method, "fp8");
  EXPECT_EQ(m->quant.block_rows * m->quant.block_cols, 128 * 128);
  EXPECT_DOUBLE_EQ(CheckpointBytesPerParam(*m), 1.0 + 4.0 / 16384);
  EXPECT_EQ(ServedFormat(*m, Dtype::kBf16), Dtype::kFp8);
  EXPECT_EQ(ServedFormat(*m, Dtype::kInt4), Dtype::kInt4);
  // Routers stay 16-bit: 58 MoE layers x 256 experts x 7168.
  EXPECT_EQ(Sum(m->quant.kept_dense), 58LL * 256 * 7168);
}

TEST(IntegerSchemes, GptqAwqBitsandbytesCompressedTensors) {
  ModelSpec gptq = Parse(R"({"model_type": "llama", "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}})");
  EXPECT_EQ(gptq.quant.format, Dtype::kInt4);
  EXPECT_DOUBLE_EQ(CheckpointBytesPerParam(gptq), QuantizedBytesPerParam(Dtype::kInt4));  // 0.5 + 2.5/128
  ModelSpec awq = Parse(R"({"model_type": "llama", "quantization_config": {"quant_method": "awq", "w_bit": 4, "q_group_size": 64}})");
  EXPECT_DOUBLE_EQ(CheckpointBytesPerParam(awq), 0.5 + 2.5 / 64);
  ModelSpec row = Parse(R"({"model_type": "llama", "quantization_config": {"quant_method": "gptq", "bits": 8, "group_size": -1}})");
  EXPECT_EQ(row.quant.format, Dtype::kInt8);
  EXPECT_DOUBLE_EQ(CheckpointBytesPerParam(row), 1.0 + 3.0 / 4096);  // one scale per output row of width h
  ModelSpec nf4 = Parse(R"({"model_type": "llama", "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true,
                            "bnb_4bit_use_double_quant": true, "llm_int8_skip_modules": ["lm_head"]}})");
  EXPECT_EQ(nf4.quant.format, Dtype::kNf4);
  EXPECT_DOUBLE_EQ(CheckpointBytesPerParam(nf4), QuantizedBytesPerParam(Dtype::kNf4));
  ModelSpec old_bnb = Parse(R"({"model_type": "llama", "quantization_config": {"load_in_8bit": true}})");
  EXPECT_EQ(old_bnb.quant.method, "bitsandbytes");
  EXPECT_EQ(old_bnb.quant.format, Dtype::kInt8);
  ModelSpec dyn = Parse(R"({"model_type": "llama", "quantization_config": {"quant_method": "compressed-tensors",
      "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}},
      "ignore": ["lm_head"]}})");
  EXPECT_EQ(dyn.quant.format, Dtype::kFp8);
  ModelSpec w4 = Parse(R"({"model_type": "llama", "quantization_config": {"quant_method": "compressed-tensors",
      "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int", "group_size": 128}}},
      "ignore": ["re:.*lm_head", "re:.*mlp.down_proj"]}})");
  EXPECT_EQ(w4.quant.format, Dtype::kInt4);
  EXPECT_EQ(w4.quant.skip, (std::vector<std::string>{"lm_head", "mlp.down_proj"}));
  EXPECT_EQ(w4.quant.kept_dense[0], 4096LL * 11008);  // Llama defaults: one down_proj per layer
  ModelSpec fp4 = Parse(R"({"model_type": "llama", "quantization_config": {"quant_method": "modelopt",
      "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}}})");
  EXPECT_EQ(fp4.quant.format, Dtype::kInt4);
  EXPECT_DOUBLE_EQ(CheckpointBytesPerParam(fp4), 0.5 + 1.0 / 16);  // an fp8 scale per 16 weights
  // AutoRound stores GPTQ's packing; EETQ int8 with an fp16 scale per output channel.
  ModelSpec ar = Parse(R"({"model_type": "llama", "quantization_config": {"quant_method": "intel/auto-round", "bits": 4, "group_size": 128}})");
  EXPECT_EQ(ar.quant.method, "auto-round");
  EXPECT_DOUBLE_EQ(CheckpointBytesPerParam(ar), 0.5 + 2.5 / 128);
  ModelSpec eetq = Parse(R"({"model_type": "llama", "quantization_config": {"quant_method": "eetq", "weights": "int8"}})");
  EXPECT_EQ(eetq.quant.format, Dtype::kInt8);
  EXPECT_DOUBLE_EQ(CheckpointBytesPerParam(eetq), 1.0 + 2.0 / 4096);  // symmetric: no zero point
  ModelSpec mo8 = Parse(R"({"model_type": "llama", "quantization_config": {"quant_method": "modelopt", "quant_algo": "FP8"}})");
  EXPECT_EQ(mo8.quant.format, Dtype::kFp8);
  EXPECT_DOUBLE_EQ(CheckpointBytesPerParam(mo8), 1.0);
}

TEST(IntegerSchemes, RoundTripThroughThePlanFile) {
  for (const char* q : {R"({"quant_method": "fbgemm_fp8", "modules_to_not_convert": ["lm_head", "self_attn"]})",
                        R"({"quant_method": "fp8", "weight_block_size": [128, 64]})",
                        R"({"quant_method": "gptq", "bits": 4, "group_size": 32})",
                        R"({"quant_method": "auto-round", "bits": 4, "group_size": 64, "sym": true})",
                        R"({"quant_method": "eetq", "weights": "int8", "modules_to_not_convert": ["lm_head"]})",
                        R"({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]})",
                        R"({"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_use_double_quant": true})",
                        R"({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]})",
                        R"({"quant_method": "compressed-tensors", "ignore": ["lm_head"],
                            "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": "tensor"}}}})"}) {
    ModelSpec m = Parse(std::string(R"({"model_type": "qwen3_moe", "num_hidden_layers": 4, "quantization_config": )") + q + "}");
    auto doc = Document::Parse("m.yaml", ModelToYaml(m, 0));
    ASSERT_TRUE(doc.ok()) << q;
    auto back = ParseModel(*doc, "t");
    ASSERT_TRUE(back.ok()) << q << ": " << back.status().message();
    EXPECT_EQ(back->quant.method, m.quant.method) << q;
    EXPECT_EQ(back->quant.format, m.quant.format) << q;
    EXPECT_DOUBLE_EQ(CheckpointBytesPerParam(*back), CheckpointBytesPerParam(m)) << q;
    EXPECT_EQ(back->quant.kept_dense, m.quant.kept_dense) << q;
    EXPECT_EQ(back->quant.kept_expert, m.quant.kept_expert) << q;
  }
}

TEST(BadInput, QuantizationConfigErrorsAreLocated) {
  Status s = ParseError("{\"model_type\": \"llama\",\n \"quantization_config\": {\"quant_method\": \"fbgemm_fp9\"}}");
  EXPECT_NE(s.message().find("c.json:2:42: quantization_config.quant_method: \"fbgemm_fp9\" is not modelled, did you mean 'fbgemm_fp8'?"),
            std::string::npos) << s.message();
  s = ParseError(R"({"model_type": "llama", "quantization_config": {"quant_method": "bitsandbytes"}})");
  EXPECT_NE(s.message().find("needs load_in_4bit or load_in_8bit"), std::string::npos) << s.message();
  s = ParseError(R"({"model_type": "llama", "quantization_config": {"quant_method": "fp8", "weight_block_size": [128]}})");
  EXPECT_NE(s.message().find("weight_block_size: expected [rows, columns]"), std::string::npos) << s.message();
  s = ParseError(R"({"model_type": "llama", "quantization_config": {"quant_method": "fbgemm_fp8", "modules_to_not_convert": "lm_head"}})");
  EXPECT_NE(s.message().find("modules_to_not_convert: expected a list of module names"), std::string::npos) << s.message();
  s = ParseError(R"({"model_type": "llama", "quantization_config": {"quant_method": "gptq", "bits": 1}})");
  EXPECT_NE(s.message().find("bits: expected an integer from 2 to 16"), std::string::npos) << s.message();
  s = ParseError(R"({"model_type": "llama", "quantization_config": {"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}})");
  EXPECT_NE(s.message().find("quant_algo: expected \"FP8\" or \"NVFP4\" for modelopt, got \"W4A8_AWQ\""), std::string::npos)
      << s.message();
  s = ParseError(R"({"model_type": "llama", "quantization_config": "fp8"})");
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace shardplan
