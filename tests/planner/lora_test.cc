// LoRA targets: module names as each family's modeling file spells them, llama's names as
// roles, all-linear, and a clear error for a name the model does not have.
#include <gtest/gtest.h>

#include "planner/compute_cost.h"
#include "planner/io/document.h"
#include "planner/io/model_reader.h"
#include "planner/lora.h"

namespace shardplan {
namespace {

ModelSpec FromJson(const std::string& json) {
  auto doc = Document::Parse("m.json", json);
  EXPECT_TRUE(doc.ok()) << doc.status().message();
  auto m = ParseModel(*doc, "m");
  EXPECT_TRUE(m.ok()) << m.status().message();
  return *m;
}

LoraSpec Targets(std::vector<std::string> t, int64_t rank = 8) {
  LoraSpec l;
  l.rank = rank;
  l.targets = std::move(t);
  return l;
}

// GPT-2 (modeling_gpt2.py): c_attn h -> 3h, attention's c_proj h -> h, c_fc h -> 4h and the MLP's
// c_proj 4h -> h; peft's "c_proj" matches both, as its suffix match does.
TEST(LoraTargets, Gpt2NamesTheirOwnModules) {
  const ModelSpec m = FromJson(R"({"model_type":"gpt2","n_embd":768,"n_head":12,"n_layer":12})");
  const int64_t h = 768, f = 3072;
  EXPECT_EQ(AdapterParamsPerLayer(m, Targets({"c_attn"}), 0), 8 * (h + 3 * h));
  EXPECT_EQ(AdapterParamsPerLayer(m, Targets({"c_proj"}), 0), 8 * ((h + h) + (f + h)));
  EXPECT_EQ(AdapterParamsPerLayer(m, Targets({"all-linear"}), 0), 8 * ((h + 3 * h) + 2 * h + (h + f) + (f + h)));
  EXPECT_TRUE(CheckLoraTargets(m, Targets({"c_attn", "c_fc"})).ok());
}

// BLOOM, GPT-NeoX and Falcon fuse q, k and v into query_key_value (peft's default target for
// them); ChatGLM's dense_h_to_4h gives SwiGLU's gate and up, 2f wide.
TEST(LoraTargets, FusedProjections) {
  const ModelSpec bloom = FromJson(R"({"model_type":"bloom","hidden_size":4096,"n_head":32,"n_layer":30})");
  EXPECT_EQ(AdapterParamsPerLayer(bloom, Targets({"query_key_value"}, 16), 0), 16 * (4096 + 3 * 4096));
  const ModelSpec glm = FromJson(R"({"model_type":"chatglm","hidden_size":4096,"ffn_hidden_size":13696,"num_layers":40,
    "num_attention_heads":32,"kv_channels":128,"multi_query_attention":true,"multi_query_group_num":2,"padded_vocab_size":151552})");
  EXPECT_EQ(AdapterParamsPerLayer(glm, Targets({"query_key_value"}), 0), 8 * (4096 + 4096 + 2 * 256));
  EXPECT_EQ(AdapterParamsPerLayer(glm, Targets({"dense_h_to_4h"}), 0), 8 * (4096 + 2 * 13696));
}

// Qwen-1: w1 and w2 each give half of the SwiGLU input (11,008 for Qwen-7B), c_proj closes both
// attention and the MLP.
TEST(LoraTargets, Qwen1) {
  const ModelSpec m = FromJson(R"({"model_type":"qwen","hidden_size":4096,"intermediate_size":22016,"num_hidden_layers":32,
    "num_attention_heads":32,"kv_channels":128,"vocab_size":151936})");
  const int64_t h = 4096, f = 11008;
  EXPECT_EQ(AdapterParamsPerLayer(m, Targets({"c_attn", "c_proj", "w1", "w2"}, 64), 0),
            64 * ((h + 3 * h) + (h + h) + (f + h) + 2 * (h + f)));
}

// EXAONE 3.x names attention's output out_proj and its gated MLP c_fc_0 (gate), c_fc_1 (up) and
// c_proj (down); all-linear takes all seven, llama's names stay roles.
TEST(LoraTargets, ExaoneNames) {
  const ModelSpec m = FromJson(R"({"model_type":"exaone","hidden_size":4096,"intermediate_size":14336,"num_layers":32,
    "num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"vocab_size":102400})");
  const int64_t h = 4096, kv = 1024, f = 14336;
  EXPECT_EQ(AdapterParamsPerLayer(m, Targets({"q_proj", "out_proj", "c_fc_0", "c_fc_1", "c_proj"}, 16), 0),
            16 * (2 * (h + h) + 3 * (h + f)));
  EXPECT_EQ(AdapterParamsPerLayer(m, Targets({"all-linear"}, 16), 0), 16 * (2 * (h + h) + 2 * (h + kv) + 3 * (h + f)));
  EXPECT_TRUE(CheckLoraTargets(m, Targets({"c_fc_0", "o_proj"})).ok());
}

// llama's names stand for the roles in any family, as the default targets always have; a
// llama keeps its counts, and the time model prices the same adapters as the memory model.
TEST(LoraTargets, LlamaNamesAreRoles) {
  const ModelSpec m = FromJson(R"({"model_type":"llama","hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,
    "num_attention_heads":32,"num_key_value_heads":8,"vocab_size":128256})");
  const int64_t h = 4096, kv = 1024, f = 14336;
  const LoraSpec every = Targets({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}, 16);
  const int64_t expected = 16 * (2 * (h + h) + 2 * (h + kv) + 3 * (h + f));
  EXPECT_EQ(AdapterParamsPerLayer(m, every, 0), expected);
  EXPECT_EQ(AdapterParamsPerLayer(m, Targets({"all-linear"}, 16), 0), expected);
  EXPECT_DOUBLE_EQ(LoraLayerParams(m, Targets({"all-linear"}, 16)), static_cast<double>(expected));
  const ModelSpec bloom = FromJson(R"({"model_type":"bloom","hidden_size":1024,"n_head":16,"n_layer":24})");
  EXPECT_TRUE(CheckLoraTargets(bloom, every).ok());
  EXPECT_GT(AdapterParamsPerLayer(bloom, every, 0), 0);
}

// LitGPT's lora_mlp adapts every Linear of the MLP (LLaMAMLP's fc_1, fc_2 and proj; GptNeoxMLP's
// fc and proj), and lora_head the output head, r x (hidden + vocab) outside the layers. Its
// Llama 3.1 8B config at r 32 on query and value trains 13,631,488 adapter parameters: 32
// layers of 32 x (4096 + 4096) + 32 x (4096 + 1024).
TEST(LoraTargets, LitgptSwitches) {
  const ModelSpec m = FromJson(R"({"model_type":"llama","hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,
    "num_attention_heads":32,"num_key_value_heads":8,"vocab_size":128256})");
  const int64_t h = 4096, f = 14336, v = 128256;
  EXPECT_EQ(32 * AdapterParamsPerLayer(m, Targets({"q_proj", "v_proj"}, 32), 0), 13631488);
  EXPECT_EQ(AdapterParamsPerLayer(m, Targets({"mlp"}, 8), 0), 8 * 3 * (h + f));
  EXPECT_EQ(HeadAdapterParams(m, Targets({"q_proj", "lm_head"}, 8)), 8 * (h + v));
  EXPECT_EQ(HeadAdapterParams(m, Targets({"all-linear"}, 8)), 0);  // peft's all-linear leaves the head out
  EXPECT_TRUE(CheckLoraTargets(m, Targets({"mlp", "lm_head"})).ok());
  const ModelSpec phi2 = FromJson(R"({"model_type":"phi","hidden_size":2560,"intermediate_size":10240,"num_hidden_layers":32,
    "num_attention_heads":32,"vocab_size":51200})");
  EXPECT_EQ(AdapterParamsPerLayer(phi2, Targets({"mlp"}, 8), 0), 8 * 2 * (2560 + 10240));
}

// A target the model does not have used to add nothing, silently; it is refused with the names
// the model has.
TEST(LoraTargets, UnknownNameIsRefused) {
  const ModelSpec bloom = FromJson(R"({"model_type":"bloom","hidden_size":1024,"n_head":16,"n_layer":24})");
  const Status s = CheckLoraTargets(bloom, Targets({"q_proj", "c_attn"}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kBadInput);
  EXPECT_NE(s.message().find("\"c_attn\" names no Linear module of a bloom layer"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("query_key_value"), std::string::npos) << s.message();
}

// DeepSeek's MLA projections under their own names: q_a_proj h -> q_lora_rank, q_b_proj to the
// heads' query widths, kv_a_proj_with_mqa to the latent and the rope key, kv_b_proj back out.
TEST(LoraTargets, MlaNames) {
  const ModelSpec m = FromJson(R"({"model_type":"deepseek_v3","hidden_size":7168,"num_hidden_layers":61,"num_attention_heads":128,
    "q_lora_rank":1536,"kv_lora_rank":512,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128})");
  EXPECT_EQ(AdapterParamsPerLayer(m, Targets({"q_a_proj", "kv_a_proj_with_mqa"}, 1), 0), (7168 + 1536) + (7168 + 512 + 64));
  EXPECT_EQ(AdapterParamsPerLayer(m, Targets({"kv_b_proj"}, 1), 0), 512 + 128 * (128 + 128));
}

// The mean the time model prices counts each layer kind by its layers: DeepSeek-V2-Lite's dense
// first layer (FFN 10,944), then 26 MoE layers whose only Linear MLP is the shared experts' (2 x 1,408).
TEST(LoraTargets, MeanOverMixedLayers) {
  const ModelSpec m = FromJson(R"({"model_type":"deepseek_v2","hidden_size":2048,"intermediate_size":10944,"num_hidden_layers":27,
    "num_attention_heads":16,"n_routed_experts":64,"n_shared_experts":2,"num_experts_per_tok":6,"moe_intermediate_size":1408,
    "first_k_dense_replace":1,"q_lora_rank":null,"kv_lora_rank":512,"qk_nope_head_dim":128,"qk_rope_head_dim":64,
    "v_head_dim":128,"vocab_size":102400})");
  const LoraSpec all = Targets({"all-linear"}, 1);
  const int64_t h = 2048, attn = (h + 16 * 192) + (h + 512 + 64) + (512 + 16 * 256) + (16 * 128 + h);
  const int64_t dense = AdapterParamsPerLayer(m, all, 0), moe = AdapterParamsPerLayer(m, all, 1);
  EXPECT_EQ(dense, attn + 3 * (h + 10944));
  EXPECT_EQ(moe, attn + 3 * (h + 2816));
  EXPECT_DOUBLE_EQ(AdapterParamsPerLayerMean(m, all), (dense + 26.0 * moe) / 27);
}

}  // namespace
}  // namespace shardplan
