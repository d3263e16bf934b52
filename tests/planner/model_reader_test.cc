// The model reader: YAML with the same keys as config.json, transformers defaults,
// family traits that are not keys.
#include <gtest/gtest.h>

#include "planner/io/model_reader.h"

namespace shardplan {
namespace {

ModelSpec Parse(const std::string& name, const std::string& text) {
  auto doc = Document::Parse(name, text);
  EXPECT_TRUE(doc.ok()) << doc.status().message();
  auto m = ParseModel(*doc, "t");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return *m;
}

TEST(ModelReader, YamlAndJsonAgree) {
  ModelSpec j = Parse("c.json", R"({"model_type":"mistral","hidden_size":4096,"num_key_value_heads":8})");
  ModelSpec y = Parse("c.yaml", "model_type: mistral\nhidden_size: 4096\nnum_key_value_heads: 8\n");
  EXPECT_EQ(CountParams(j).total, CountParams(y).total);
  EXPECT_EQ(CountParams(j).total, 7'241'732'096);  // mistral defaults fill the rest
}

// MPT's attn_config.attn_impl names llm-foundry's attention kernel; an unknown one is an
// error at its line.
TEST(ModelReader, MptAttentionKernel) {
  EXPECT_EQ(Parse("c.json", R"({"model_type":"mpt"})").attention_impl, AttentionImpl::kUnstated);
  EXPECT_EQ(Parse("c.json", R"({"model_type":"mpt","attn_config":{"attn_impl":"triton"}})").attention_impl,
            AttentionImpl::kTriton);
  EXPECT_EQ(Parse("c.json", R"({"model_type":"mpt","attn_config":{"attn_impl":"torch","alibi":true}})").attention_impl,
            AttentionImpl::kEager);
  EXPECT_EQ(Parse("c.json", R"({"model_type":"mpt","attn_config":{"attn_impl":"flash"}})").attention_impl,
            AttentionImpl::kFlash);
  auto doc = Document::Parse("c.json", "{\"model_type\": \"mpt\",\n \"attn_config\": {\"attn_impl\": \"xformers\"}}");
  ASSERT_TRUE(doc.ok());
  auto m = ParseModel(*doc, "t");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("c.json:2:"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("\"triton\""), std::string::npos) << m.status().message();
}

TEST(ModelReader, TabsInJsonAreWhiteSpace) {
  ModelSpec m = Parse("c.json", "{\n\t\"model_type\": \"llama\",\n\t\"num_hidden_layers\": 2\n}");
  EXPECT_EQ(m.layers, 2);
}

TEST(ModelReader, FamilyTraits) {
  ModelSpec q2 = Parse("c.json", R"({"model_type":"qwen2"})");
  EXPECT_TRUE(q2.qkv_bias);
  EXPECT_FALSE(q2.o_bias);
  ModelSpec q3 = Parse("c.json", R"({"model_type":"qwen3"})");
  EXPECT_TRUE(q3.qk_norm);
  EXPECT_EQ(q3.head_dim, 128);
  ModelSpec g2 = Parse("c.json", R"({"model_type":"gemma2"})");
  EXPECT_EQ(g2.norms_per_layer, 4);
  EXPECT_TRUE(g2.tied_embeddings);
  ModelSpec neox = Parse("c.json", R"({"model_type":"gpt_neox"})");
  EXPECT_EQ(neox.norm, NormKind::kLayer);
  EXPECT_TRUE(neox.parallel_residual);
  ModelSpec ds = Parse("c.json", R"({"model_type":"deepseek_v3"})");
  EXPECT_EQ(ds.attention, AttentionKind::kMla);
  EXPECT_EQ(ds.moe_layer_count(), 58);  // 61 layers, first 3 dense
  EXPECT_EQ(ds.decoder_layer_class, "DeepseekV3DecoderLayer");
}

TEST(ModelReader, EosTokenListAndRopeParametersIgnored) {
  ModelSpec m = Parse("c.json", R"({"model_type":"llama","eos_token_id":[128001,128008],
    "rope_parameters":{"rope_type":"llama3","factor":8.0},"transformers_version":"5.0.0","dtype":"bfloat16"})");
  EXPECT_EQ(m.dtype, Dtype::kBf16);
}

TEST(ModelReader, BuiltinNamesKeepTheirName) {
  auto m = LoadModel("llama-3.1-70b");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->name, "llama-3.1-70b");
  EXPECT_EQ(m->decoder_layer_class, "LlamaDecoderLayer");
}

}  // namespace
}  // namespace shardplan
