// Exact parameter counts. Published totals: ecosystem.md 4.3 (model cards / safetensors
// metadata); odd dimensions are computed here from first principles, module by module.
#include <gtest/gtest.h>

#include "planner/io/model_reader.h"
#include "planner/quantization.h"

namespace shardplan {
namespace {

struct Published {
  const char* name;
  int64_t total;
  int64_t active;  // 0: dense (active == total); Mixtral-8x22B "39B active", Qwen3 "A3B"/"A22B"
                   // (model cards: 3.3B and 22B activated)
};

class BuiltinTotals : public ::testing::TestWithParam<Published> {};

TEST_P(BuiltinTotals, MatchesPublishedTotal) {
  const Published& p = GetParam();
  auto m = LoadModel(p.name);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ParamCounts c = CountParams(*m);
  EXPECT_EQ(c.total, p.total) << p.name;
  EXPECT_EQ(c.active, p.active ? p.active : p.total) << p.name;
}

INSTANTIATE_TEST_SUITE_P(
    Ecosystem43, BuiltinTotals,
    ::testing::Values(Published{"llama-2-7b", 6'738'415'616, 0}, Published{"llama-2-13b", 13'015'864'320, 0},
                      Published{"llama-2-70b", 68'976'648'192, 0}, Published{"llama-3.1-8b", 8'030'261'248, 0},
                      Published{"llama-3.1-70b", 70'553'706'496, 0}, Published{"llama-3.1-405b", 405'853'388'800, 0},
                      Published{"mistral-7b", 7'241'732'096, 0},
                      Published{"mixtral-8x7b", 46'702'792'704, 12'879'925'248},
                      Published{"mixtral-8x22b", 140'620'634'112, 39'152'031'744},
                      Published{"qwen2.5-7b", 7'615'616'512, 0}, Published{"qwen2.5-72b", 72'706'203'648, 0},
                      Published{"qwen3-8b", 8'190'735'360, 0}, Published{"qwen3-30b-a3b", 30'532'122'624, 3'353'032'704},
                      Published{"qwen3-235b-a22b", 235'093'634'560, 22'190'763'520}, Published{"gemma-2-9b", 9'241'705'984, 0},
                      Published{"gemma-2-27b", 27'227'128'320, 0},
                      Published{"deepseek-v3", 671'026'419'200, 37'552'297'472},
                      Published{"gpt2", 124'439'808, 0},
                      // transformers on the meta device: 31,577,937,344 and 120,668,687,360, plus the
                      // routers' correction biases it keeps as buffers (23 x 128, 40 x 512); NVIDIA's
                      // model cards: "3.6B active including embeddings", "12.7B active".
                      Published{"nemotron-3-nano-30b-a3b", 31'577'940'288, 3'580'076'352},
                      Published{"nemotron-3-super-120b-a12b", 120'668'707'840, 12'770'237'440}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (char& ch : n)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

// MoE models whose active count the table leaves out: check it from its definition.
TEST(ActiveParams, MixtralTopKReplacesAllExperts) {
  auto m = LoadModel("mixtral-8x22b");
  ASSERT_TRUE(m.ok());
  ParamCounts c = CountParams(*m);
  const int64_t per_expert = 3 * 6144LL * 16384;
  EXPECT_EQ(c.experts, 56 * 8 * per_expert);
  EXPECT_EQ(c.active, c.total - 56 * 6 * per_expert);  // 8 experts -> top-2
}

StatusOr<ModelSpec> FromJson(const std::string& json) {
  auto doc = Document::Parse("test.json", json);
  if (!doc.ok()) return doc.status();
  return ParseModel(*doc, "test");
}

// The plan file's model section (ModelToYaml) parses back to the same spec.
void ExpectReadsBack(const ModelSpec& m) {
  auto doc = Document::Parse("model.yaml", ModelToYaml(m, 0));
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto back = ParseModel(*doc, m.name);
  ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << ModelToYaml(m, 0);
  EXPECT_EQ(*back, m) << ModelToYaml(m, 0);
}

// Every family the reader knows, from its config class's defaults alone ({"model_type": t}):
// it reads, and the written model reads back to the same spec. Three are refused: GLM-4.5's (96
// heads do not divide 4,096 and Glm4MoeConfig has no head_dim; the published configs state 128)
// Nemotron-H's (every published config lists its blocks in hybrid_override_pattern) and
// dots.llm1's (Dots1Config leaves the expert counts None).
// bench/calibrate/param_counts.py checks the same defaults' counts against transformers' models.
TEST(Families, EveryTypeReadsFromItsDefaultsAndBack) {
  for (const std::string& type : SupportedModelTypes()) {
    SCOPED_TRACE(type);
    auto m = FromJson("{\"model_type\":\"" + type + "\"}");
    if (type == "glm4_moe" || type == "nemotron_h" || type == "dots1") {
      EXPECT_FALSE(m.ok());
      continue;
    }
    EXPECT_TRUE(m.ok()) << m.status().message();
    if (!m.ok()) continue;
    EXPECT_GT(CountParams(*m).total, 0);
    ExpectReadsBack(*m);
  }
}

// InternVL: the text tower its config names behind InternViT. InternVL2.5/3-78B's InternViT-6B
// (45 blocks of 3,200, RMSNorms, q/k norms, no qkv bias) and projector to an 8,192-wide Qwen2.5
// count 5,708,504,448 on the meta device (transformers InternVLModel with those widths); the
// remote code's internvl_chat config (llm_config, qk_normalization, norm_type) reads the same.
TEST(Families, InternVlBothFormats) {
  auto chat = FromJson(R"({"architectures":["InternVLChatModel"],"model_type":"internvl_chat","downsample_ratio":0.5,
    "template":"internvl2_5","llm_config":{"model_type":"qwen2","hidden_size":8192,"intermediate_size":29568,
    "num_hidden_layers":2,"num_attention_heads":64,"num_key_value_heads":8,"vocab_size":152064,"tie_word_embeddings":false},
    "vision_config":{"model_type":"intern_vit_6b","hidden_size":3200,"intermediate_size":12800,"num_hidden_layers":45,
    "num_attention_heads":25,"qkv_bias":false,"qk_normalization":true,"norm_type":"rms_norm","image_size":448,"patch_size":14}})");
  ASSERT_TRUE(chat.ok()) << chat.status().message();
  EXPECT_EQ(chat->model_type, "qwen2");
  EXPECT_EQ(CountParams(*chat).vision, 5'708'504'448);
  auto hf = FromJson(R"({"model_type":"internvl","text_config":{"model_type":"qwen2","hidden_size":8192,
    "intermediate_size":29568,"num_hidden_layers":2,"num_attention_heads":64,"num_key_value_heads":8,"vocab_size":152064},
    "vision_config":{"hidden_size":3200,"intermediate_size":12800,"num_hidden_layers":45,"use_qk_norm":true,
    "norm_type":"rms_norm","image_size":[448,448],"patch_size":[14,14]}})");
  ASSERT_TRUE(hf.ok()) << hf.status().message();
  EXPECT_EQ(CountParams(*hf).vision, 5'708'504'448);
  EXPECT_EQ(CountParams(*hf).total, CountParams(*chat).total);
  auto bad = FromJson(R"({"model_type":"internvl","vision_config":{"patch_size":["x",14]}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("patch_size: expected a size or [height, width]"), std::string::npos) << bad.status().message();
  for (const ModelSpec& m : {*chat, *hf}) ExpectReadsBack(m);
}

// The 2026 MoE families, each counted by transformers on the meta device (parameters plus the
// routers' persistent e_score_correction_bias buffers). ERNIE-4.5-300B-A47B's widths (MoE from
// layer 3, no shared experts): 299,484,163,264. A small ERNIE with use_bias, MoE in layers 1, 3
// and 5 (interval 2 up to layer 6) and one biased shared MLP: 24,284,160. GLM-4.7-Flash (MLA,
// 64 experts, the first layer dense): 29,943,393,920. A small K-EXAONE, two dense layers first:
// 20,063,792.
TEST(Families, ErnieGlmLiteExaoneMoe) {
  auto ernie = FromJson(R"({"model_type":"ernie4_5_moe","hidden_size":8192,"intermediate_size":28672,
    "moe_intermediate_size":3584,"moe_k":8,"moe_num_experts":64,"moe_num_shared_experts":0,"moe_layer_start_index":3,
    "moe_layer_end_index":53,"moe_layer_interval":1,"num_hidden_layers":54,"num_attention_heads":64,
    "num_key_value_heads":8,"vocab_size":103424,"tie_word_embeddings":false,"use_bias":false})");
  ASSERT_TRUE(ernie.ok()) << ernie.status().message();
  EXPECT_EQ(CountParams(*ernie).total, 299'484'163'264);
  EXPECT_FALSE(ernie->is_moe_layer(2));
  EXPECT_TRUE(ernie->is_moe_layer(3) && ernie->is_moe_layer(53));
  auto every2 = FromJson(R"({"model_type":"ernie4_5_moe","hidden_size":512,"intermediate_size":1024,
    "moe_intermediate_size":256,"moe_k":2,"moe_num_experts":8,"moe_num_shared_experts":1,"moe_layer_start_index":1,
    "moe_layer_end_index":6,"moe_layer_interval":2,"num_hidden_layers":8,"num_attention_heads":8,
    "num_key_value_heads":2,"vocab_size":1000,"tie_word_embeddings":true,"use_bias":true})");
  ASSERT_TRUE(every2.ok()) << every2.status().message();
  EXPECT_EQ(CountParams(*every2).total, 24'284'160);
  for (int64_t l = 0; l < 8; ++l) EXPECT_EQ(every2->is_moe_layer(l), l == 1 || l == 3 || l == 5) << l;
  auto flash = FromJson(R"({"model_type":"glm4_moe_lite","hidden_size":2048,"intermediate_size":10240,
    "moe_intermediate_size":1536,"num_hidden_layers":47,"num_attention_heads":20,"num_key_value_heads":20,
    "n_shared_experts":1,"n_routed_experts":64,"num_experts_per_tok":4,"kv_lora_rank":512,"q_lora_rank":768,
    "qk_nope_head_dim":192,"qk_rope_head_dim":64,"v_head_dim":256,"vocab_size":154880,"first_k_dense_replace":1,
    "tie_word_embeddings":false})");
  ASSERT_TRUE(flash.ok()) << flash.status().message();
  EXPECT_EQ(CountParams(*flash).total, 29'943'393'920);
  EXPECT_EQ(flash->attention, AttentionKind::kMla);
  auto exaone = FromJson(R"({"model_type":"exaone_moe","hidden_size":512,"intermediate_size":1024,"num_hidden_layers":8,
    "num_attention_heads":8,"num_key_value_heads":2,"head_dim":64,"vocab_size":1000,"num_experts":8,
    "num_shared_experts":1,"num_experts_per_tok":2,"moe_intermediate_size":128,"first_k_dense_replace":2,
    "sliding_window":128,"sliding_window_pattern":4})");
  ASSERT_TRUE(exaone.ok()) << exaone.status().message();
  EXPECT_EQ(CountParams(*exaone).total, 20'063'792);
  EXPECT_EQ(exaone->sliding_window_pattern, 4);
  for (const ModelSpec& m : {*ernie, *every2, *flash, *exaone}) ExpectReadsBack(m);
}

// A llama with dimensions no real model has: h=1000, 10 heads of 100, 2 KV heads,
// FFN 3001, 3 layers, vocab 777, untied, attention and MLP biases.
TEST(OddDimensions, LlamaFromFirstPrinciples) {
  auto m = FromJson(R"({"model_type":"llama","hidden_size":1000,"intermediate_size":3001,"num_hidden_layers":3,
    "num_attention_heads":10,"num_key_value_heads":2,"vocab_size":777,"attention_bias":true,"mlp_bias":true})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const int64_t h = 1000, d = 100, q = 10 * d, kv = 2 * d, f = 3001, V = 777;
  const int64_t attn = (h * q + q) + 2 * (h * kv + kv) + (q * h + h);  // q, k, v, o with biases
  const int64_t mlp = 2 * (h * f + f) + (f * h + h);                   // gate, up, down with biases
  const int64_t layer = attn + mlp + 2 * h;                             // + two RMSNorms
  const int64_t expected = 3 * layer + h + 2 * V * h;                   // + final norm, embed, head
  ParamCounts c = CountParams(*m);
  EXPECT_EQ(c.total, expected);
  EXPECT_EQ(c.attention, 3 * attn);
  EXPECT_EQ(c.mlp, 3 * mlp);
  EXPECT_EQ(c.head, V * h);
}

// Qwen2-MoE style with a shared expert and gate, one dense layer via mlp_only_layers and
// decoder_sparse_step 2: layers 1 and 3 are MoE, layers 0 and 2 dense.
TEST(OddDimensions, Qwen2MoeSparseStepAndSharedExpert) {
  auto m = FromJson(R"({"model_type":"qwen2_moe","hidden_size":96,"intermediate_size":200,"num_hidden_layers":4,
    "num_attention_heads":6,"num_key_value_heads":3,"vocab_size":50,"num_experts":5,"num_experts_per_tok":2,
    "moe_intermediate_size":40,"shared_expert_intermediate_size":70,"decoder_sparse_step":2,"mlp_only_layers":[]})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const int64_t h = 96, d = 16, q = 6 * d, kv = 3 * d;
  const int64_t attn = h * q + 2 * h * kv + q * h + q + 2 * kv;  // qkv bias, no o bias
  const int64_t dense = 3 * h * 200;
  const int64_t moe = 5 * 3 * h * 40 + 5 * h + 3 * h * 70 + h;   // experts, router, shared, shared gate
  const int64_t expected = 4 * (attn + 2 * h) + 2 * dense + 2 * moe + h + 2 * 50 * h;
  ParamCounts c = CountParams(*m);
  EXPECT_EQ(c.total, expected);
  EXPECT_EQ(m->moe_layer_count(), 2);
  EXPECT_EQ(c.active, expected - 2 * (3 * 3 * h * 40));  // 5 experts -> top-2 in two layers
}

// DeepSeek-V3 MLA with a small shape and no q LoRA.
TEST(OddDimensions, DeepseekMlaWithoutQLora) {
  auto m = FromJson(R"({"model_type":"deepseek_v3","hidden_size":64,"intermediate_size":128,"num_hidden_layers":3,
    "num_attention_heads":4,"vocab_size":100,"q_lora_rank":null,"kv_lora_rank":16,"qk_nope_head_dim":8,
    "qk_rope_head_dim":4,"v_head_dim":8,"n_routed_experts":6,"n_shared_experts":2,"num_experts_per_tok":2,
    "moe_intermediate_size":12,"first_k_dense_replace":1,"topk_method":"noaux_tc"})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const int64_t h = 64, a = 4;
  const int64_t attn = h * a * 12 + h * (16 + 4) + 16 + 16 * a * (8 + 8) + a * 8 * h;
  const int64_t dense = attn + 3 * h * 128 + 2 * h;
  const int64_t moe = attn + (6 + 2) * 3 * h * 12 + 6 * h + 6 + 2 * h;
  EXPECT_EQ(CountParams(*m).total, dense + 2 * moe + h + 2 * 100 * h);
}

// GPT-2 with n_inner given: V*h + n_pos*h + L*(4h^2+4h + 2hi+i+h + 4h) + 2h, tied.
TEST(OddDimensions, Gpt2WithInner) {
  auto m = FromJson(R"({"model_type":"gpt2","n_embd":120,"n_layer":2,"n_head":3,"n_positions":64,"n_inner":500,"vocab_size":99})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const int64_t h = 120, i = 500;
  const int64_t layer = (3 * h * h + 3 * h) + (h * h + h) + 4 * h + (h * i + i) + (i * h + h);
  EXPECT_EQ(CountParams(*m).total, 99 * h + 64 * h + 2 * layer + 2 * h);
}

// OPT-350m: word_embed_proj_dim 512 != hidden 1024, post-norm (no final norm), 2 position
// offset rows. 331,196,416 on its model card / safetensors.
TEST(Families, Opt350m) {
  auto m = FromJson(R"({"model_type":"opt","hidden_size":1024,"ffn_dim":4096,"num_hidden_layers":24,
    "num_attention_heads":16,"vocab_size":50272,"max_position_embeddings":2048,"word_embed_proj_dim":512,
    "do_layer_norm_before":false})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(CountParams(*m).total, 331'196'416);
}

// BLOOM-560m: 559,214,592 (model card).
TEST(Families, Bloom560m) {
  auto m = FromJson(R"({"model_type":"bloom","hidden_size":1024,"n_layer":24,"n_head":16,"vocab_size":250880})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(CountParams(*m).total, 559'214'592);
}

// MPT-7B (mosaicml/mpt-7b config.json): d_model 4096, 32 layers, expansion_ratio 4, vocab
// 50432, no_bias. Per layer Wqkv 3d^2 + out_proj d^2 + up/down 8d^2 and two bias-free
// LayerNorms (2d); wte tied to the head; norm_f (d): 6,649,286,656, the checkpoint's count
// ("6.7B" on the model card).
TEST(Families, Mpt7b) {
  auto m = FromJson(R"({"model_type":"mpt","d_model":4096,"n_heads":32,"n_layers":32,"expansion_ratio":4,
    "max_seq_len":2048,"vocab_size":50432,"no_bias":true,"attn_config":{"alibi":true}})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(CountParams(*m).total, 6'649'286'656);
  EXPECT_TRUE(m->tied_embeddings);
  auto doc = Document::Parse("mpt.yaml", ModelToYaml(*m, 0));  // the plan file's model section
  ASSERT_TRUE(doc.ok());
  auto back = ParseModel(*doc, "mpt");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(CountParams(*back).total, 6'649'286'656);
  auto defaults = FromJson("{\"model_type\":\"mpt\"}");  // class defaults: MptConfig()
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->hidden, 2048);
  EXPECT_EQ(defaults->intermediate, 8192);
}

// gpt-oss (openai/gpt-oss-120b and -20b config.json): attention with biases and a sink per
// head, 128 (32) experts with biased gate_up/down, a biased router, untied head. Totals from
// modeling_gpt_oss.py's parameter shapes: 116,829,156,672 and 20,914,757,184 ("117B" and
// "21B" on the model cards, 5.1B and 3.6B active). The checkpoint's MXFP4 experts read as
// 4-bit floats with an 8-bit scale per 32; attention, router, embeddings and head stay bf16.
TEST(Families, GptOss) {
  const std::string config = R"({"architectures":["GptOssForCausalLM"],"attention_bias":true,"attention_dropout":0.0,
    "eos_token_id":200002,"experts_per_token":4,"head_dim":64,"hidden_act":"silu","hidden_size":2880,
    "initial_context_length":4096,"initializer_range":0.02,"intermediate_size":2880,
    "layer_types":["sliding_attention","full_attention"],"max_position_embeddings":131072,"model_type":"gpt_oss",
    "num_attention_heads":64,"num_experts_per_tok":4,"num_hidden_layers":36,"num_key_value_heads":8,
    "num_local_experts":128,"output_router_logits":false,"pad_token_id":199999,
    "quantization_config":{"modules_to_not_convert":["model.layers.*.self_attn","model.layers.*.mlp.router",
      "model.embed_tokens","lm_head"],"quant_method":"mxfp4"},"rms_norm_eps":1e-05,
    "rope_scaling":{"beta_fast":32.0,"beta_slow":1.0,"factor":32.0,"original_max_position_embeddings":4096,
      "rope_type":"yarn","truncate":false},"rope_theta":150000,"router_aux_loss_coef":0.9,"sliding_window":128,
    "swiglu_limit":7.0,"tie_word_embeddings":false,"torch_dtype":"bfloat16","use_cache":true,"vocab_size":201088})";
  auto big = FromJson(config);
  ASSERT_TRUE(big.ok()) << big.status().message();
  EXPECT_EQ(CountParams(*big).total, 116'829'156'672);
  // The cards' active figures leave the input embedding out (a lookup, not a matmul).
  EXPECT_NEAR(static_cast<double>(CountParams(*big).active - CountParams(*big).embedding), 5.1e9, 0.05e9);
  EXPECT_EQ(big->quant.format, Dtype::kInt4);
  EXPECT_DOUBLE_EQ(CheckpointBytesPerParam(*big), 0.5 + 1.0 / 32);
  EXPECT_EQ(big->quant.kept_dense[0], 2 * 2880 * 4096 + 2 * 2880 * 512 + 2880 * 128)
      << "attention projections and the router stay bf16";
  std::string small = config;
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"\"num_hidden_layers\":36", "\"num_hidden_layers\":24"},
                                 std::pair<std::string, std::string>{"\"num_local_experts\":128", "\"num_local_experts\":32"}})
    small.replace(small.find(from), from.size(), to);
  auto s = FromJson(small);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(CountParams(*s).total, 20'914'757'184);
  EXPECT_NEAR(static_cast<double>(CountParams(*s).active - CountParams(*s).embedding), 3.6e9, 0.05e9);
}

// GPT-NeoX-20B and Pythia-6.9B (ecosystem.md 4.3).
TEST(Families, GptNeox) {
  auto neox = FromJson(R"({"model_type":"gpt_neox","hidden_size":6144,"num_hidden_layers":44,"num_attention_heads":64,
    "intermediate_size":24576,"vocab_size":50432})");
  ASSERT_TRUE(neox.ok()) << neox.status().message();
  EXPECT_EQ(CountParams(*neox).total, 20'554'567'680);
  auto pythia = FromJson(R"({"model_type":"gpt_neox","hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,
    "intermediate_size":16384,"vocab_size":50432})");
  ASSERT_TRUE(pythia.ok());
  EXPECT_EQ(CountParams(*pythia).total, 6'857'302'016);
}

// Gemma 3 nests its text tower; HF writes it sparsely, so class defaults fill it.
// Gemma-3-12B text tower: 11,766,034,176 (ecosystem.md 4.3).
TEST(Families, Gemma3NestedTextConfig) {
  auto m = FromJson(R"({"model_type":"gemma3","torch_dtype":"bfloat16","text_config":{"model_type":"gemma3_text",
    "hidden_size":3840,"intermediate_size":15360,"num_hidden_layers":48,"num_attention_heads":16,
    "num_key_value_heads":8,"sliding_window":1024},"vision_config":{"hidden_size":1152}})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(CountParams(*m).total, 11'766'034'176);
  EXPECT_EQ(m->head_dim, 256);
  EXPECT_EQ(m->dtype, Dtype::kBf16);
  // The wrapper's own keys stay readable once the text tower is read: its dtype when
  // text_config names none, and its quantization_config.
  auto f16 = FromJson(R"({"model_type":"gemma3","torch_dtype":"float16","text_config":{"model_type":"gemma3_text",
    "hidden_size":3840,"intermediate_size":15360,"num_hidden_layers":48,"num_attention_heads":16,
    "num_key_value_heads":8},"quantization_config":{"quant_method":"bitsandbytes","load_in_4bit":true,
    "bnb_4bit_quant_type":"nf4"}})");
  ASSERT_TRUE(f16.ok()) << f16.status().message();
  EXPECT_EQ(f16->dtype, Dtype::kFp16);
  EXPECT_EQ(f16->quant.method, "bitsandbytes");
  EXPECT_EQ(f16->quant.format, Dtype::kNf4);
}

// Llama 4 (modeling_llama4.py, text tower of Llama4ForConditionalGeneration; the vision
// encoder is not counted). Scout: 48 layers, all MoE with 16 experts of 8192 (fused gate_up
// 5120 x 16384 and down 8192 x 5120 each), a bias-free router 5120 x 16 and a shared expert
// of 8192; attention q/o 5120 x 5120, k/v 5120 x 1024; two RMSNorms; untied 202048 x 5120
// embedding and head. Total 107,769,861,120 and 17,172,894,720 active, the "17B active" of
// the model card; Maverick (128 experts on every second layer, dense MLP of 16384 between)
// 400,711,848,960 and 17,184,691,200: "400B total, 17B active".
TEST(Families, Llama4ScoutAndMaverick) {
  const std::string text = R"("model_type":"llama4_text","hidden_size":5120,"intermediate_size":8192,
    "intermediate_size_mlp":16384,"num_hidden_layers":48,"num_attention_heads":40,"num_key_value_heads":8,
    "head_dim":128,"vocab_size":202048,"num_experts_per_tok":1,"attention_chunk_size":8192,
    "tie_word_embeddings":false,"use_qk_norm":true)";
  auto scout = FromJson(R"({"model_type":"llama4","torch_dtype":"bfloat16","text_config":{)" + text +
                        R"(,"num_local_experts":16,"interleave_moe_layer_step":1},"vision_config":{"hidden_size":1408}})");
  ASSERT_TRUE(scout.ok()) << scout.status().message();
  const ParamCounts s = CountParams(*scout);
  const int64_t attention = 2 * 5120LL * 5120 + 2 * 5120LL * 1024;
  const int64_t expert = 3 * 5120LL * 8192;
  EXPECT_EQ(s.attention, 48 * attention);
  EXPECT_EQ(s.experts, 48 * 16 * expert);
  EXPECT_EQ(s.shared_experts, 48 * expert);
  EXPECT_EQ(s.router, 48 * 5120LL * 16);
  EXPECT_EQ(s.total, 107'769'861'120);
  EXPECT_EQ(s.active, 17'172'894'720);
  EXPECT_EQ(scout->dtype, Dtype::kBf16);
  EXPECT_EQ(scout->sliding_window, 8192);
  auto maverick = FromJson(R"({"model_type":"llama4","text_config":{)" + text +
                           R"(,"num_local_experts":128,"interleave_moe_layer_step":2}})");
  ASSERT_TRUE(maverick.ok()) << maverick.status().message();
  const ParamCounts mv = CountParams(*maverick);
  EXPECT_EQ(maverick->moe_layer_count(), 24);
  EXPECT_FALSE(maverick->is_moe_layer(0));
  EXPECT_TRUE(maverick->is_moe_layer(1));
  EXPECT_EQ(mv.mlp, 24 * 3 * 5120LL * 16384);
  EXPECT_EQ(mv.total, 400'711'848'960);
  EXPECT_EQ(mv.active, 17'184'691'200);
  // An explicit moe_layers list wins over the step, and an index past the model is refused.
  auto listed = FromJson(R"({"model_type":"llama4_text",)" + text.substr(text.find(',') + 1) +
                         R"(,"num_local_experts":16,"moe_layers":[1,3,5]})");
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  EXPECT_EQ(listed->moe_layer_count(), 3);
  auto bad = FromJson(R"({"model_type":"llama4_text",)" + text.substr(text.find(',') + 1) + R"(,"moe_layers":[48]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("moe_layers: expected a layer index from 0 to 47"), std::string::npos)
      << bad.status().message();
}

// Nemotron-4 340B (NemotronConfig, modeling_nemotron.py): 96 layers of q/o 18432 x 18432,
// k/v 18432 x 1536, an up/down squared-ReLU MLP of 73728 without a gate, two LayerNorm1P
// with weight and bias; untied 256000 x 18432 embedding and head: 341,029,195,776, the
// "340B" of its report.
TEST(Families, Nemotron4) {
  auto m = FromJson(R"({"model_type":"nemotron","hidden_size":18432,"intermediate_size":73728,
    "num_hidden_layers":96,"num_attention_heads":96,"num_key_value_heads":8,"head_dim":192,"vocab_size":256000,
    "hidden_act":"relu2","partial_rotary_factor":0.5,"tie_word_embeddings":false})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ParamCounts c = CountParams(*m);
  EXPECT_EQ(c.mlp, 96 * 2 * 18432LL * 73728);
  EXPECT_EQ(c.norms, (96 * 2 + 1) * 2 * 18432LL);
  EXPECT_EQ(c.total, 341'029'195'776);
  EXPECT_EQ(m->decoder_layer_class, "NemotronDecoderLayer");
}

// ChatGLM / GLM-4 (THUDM remote code, modeling_chatglm.py), module by module for GLM-4-9B:
// query_key_value 4096 x (32 + 2 x 2) x 128 with bias, dense 4096 x 4096, SwiGLU
// dense_h_to_4h 4096 x 2 x 13696 and dense_4h_to_h, two RMSNorms; the 151,552-row embedding
// and an untied output_layer: 9,399,951,360.
TEST(Families, Chatglm) {
  auto g = FromJson(R"({"model_type":"chatglm","padded_vocab_size":151552,"hidden_size":4096,"ffn_hidden_size":13696,
    "num_layers":40,"num_hidden_layers":40,"num_attention_heads":32,"kv_channels":128,"multi_query_attention":true,
    "multi_query_group_num":2,"seq_length":131072,"add_bias_linear":false,"add_qkv_bias":true,"rmsnorm":true,
    "post_layer_norm":true,"torch_dtype":"bfloat16","tie_word_embeddings":false})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const int64_t layer = 4096LL * (32 + 4) * 128 + (32 + 4) * 128 + 4096LL * 4096 + 3 * 4096LL * 13696 + 2 * 4096;
  EXPECT_EQ(CountParams(*g).total, 40 * layer + 2 * 151552LL * 4096 + 4096);
  EXPECT_EQ(CountParams(*g).total, 9'399'951'360);
  EXPECT_EQ(g->kv_heads, 2);
  ExpectReadsBack(*g);
}

// Falcon (modeling_falcon.py), module by module. 7B: one KV head (multi_query), query_key_value
// 4544 x (71 + 2) x 64, dense 4544 x 4544, a 4h GELU MLP, one LayerNorm per parallel block,
// no biases, the head tied to the 65024-row embedding: 6,921,720,704. 40B (new architecture,
// older key names): 128 heads and 8 KV heads of 64, ln_attn and ln_mlp: 41,303,293,952.
TEST(Families, Falcon) {
  auto f7 = FromJson(R"({"model_type":"falcon","hidden_size":4544,"num_attention_heads":71,"num_hidden_layers":32,
    "vocab_size":65024,"multi_query":true,"parallel_attn":true,"bias":false,"new_decoder_architecture":false,
    "torch_dtype":"bfloat16"})");
  ASSERT_TRUE(f7.ok()) << f7.status().message();
  const int64_t layer7 = 4544LL * 73 * 64 + 4544LL * 4544 + 2 * 4544LL * 18176 + 2 * 4544;
  EXPECT_EQ(CountParams(*f7).total, 32 * layer7 + 65024LL * 4544 + 2 * 4544);
  EXPECT_EQ(CountParams(*f7).total, 6'921'720'704);
  EXPECT_EQ(f7->kv_heads, 1);
  EXPECT_TRUE(f7->parallel_residual);
  auto f40 = FromJson(R"({"model_type":"falcon","hidden_size":8192,"n_head":128,"n_head_kv":8,"n_layer":60,
    "vocab_size":65024,"new_decoder_architecture":true,"parallel_attn":true,"bias":false})");
  ASSERT_TRUE(f40.ok()) << f40.status().message();
  EXPECT_EQ(f40->kv_heads, 8);
  EXPECT_EQ(f40->norms_per_layer, 2);
  EXPECT_EQ(CountParams(*f40).total, 41'303'293'952);
  // The writer's keys read back to the same spec, old and new layouts alike, and a sequential
  // block with biases and ALiBi (falcon-rw).
  auto rw = FromJson(R"({"model_type":"falcon","hidden_size":2048,"num_attention_heads":32,"num_hidden_layers":24,
    "vocab_size":50304,"multi_query":false,"parallel_attn":false,"bias":true,"alibi":true})");
  ASSERT_TRUE(rw.ok()) << rw.status().message();
  EXPECT_EQ(rw->norms_per_layer, 2);
  for (const ModelSpec& m : {*f7, *f40, *rw}) ExpectReadsBack(m);
}

// GLM-4.5-Air (zai-org/GLM-4.5-Air config.json, transformers modeling_glm4_moe.py): 46 layers
// of 96 query and 8 KV heads of 128 with q/k/v biases, the first a dense 10,944-wide MLP and
// the other 45 an MoE of 128 experts of 1,408 (top-8) beside one shared expert. transformers
// 5.23 counts 106,852,245,504 parameters on the meta device and keeps the routers'
// e_score_correction_bias (45 x 128) as buffers, which the checkpoint stores beside them.
// GLM-4.5 (92 layers, hidden 5,120, 160 experts of 1,536, three dense layers, per-head q/k
// norms) counts 352,797,814,784 + 89 x 160. The writer's keys read back to the same spec.
TEST(Families, Glm4Moe) {
  const std::string air = R"({"architectures":["Glm4MoeForCausalLM"],"attention_bias":true,"head_dim":128,
    "hidden_size":4096,"partial_rotary_factor":0.5,"intermediate_size":10944,"max_position_embeddings":131072,
    "model_type":"glm4_moe","moe_intermediate_size":1408,"norm_topk_prob":true,"num_attention_heads":96,"n_group":1,
    "topk_group":1,"n_routed_experts":128,"n_shared_experts":1,"routed_scaling_factor":1.0,"num_experts_per_tok":8,
    "first_k_dense_replace":1,"num_hidden_layers":46,"num_key_value_heads":8,"rms_norm_eps":1e-05,
    "num_nextn_predict_layers":1,"tie_word_embeddings":false,"torch_dtype":"bfloat16","use_qk_norm":false,
    "vocab_size":151552})";
  auto a = FromJson(air);
  ASSERT_TRUE(a.ok()) << a.status().message();
  const ParamCounts c = CountParams(*a);
  EXPECT_EQ(c.total, 106'852'245'504 + 45 * 128);
  EXPECT_EQ(c.attention, 46 * (4096LL * (96 + 16) * 128 + (96 + 16) * 128 + 96 * 128LL * 4096));
  EXPECT_EQ(c.experts, 45 * 128 * 3 * 4096LL * 1408);
  EXPECT_TRUE(a->qkv_bias);
  EXPECT_FALSE(a->o_bias);
  EXPECT_EQ(a->mtp_layers, 1);
  auto g = FromJson(R"({"model_type":"glm4_moe","attention_bias":true,"head_dim":128,"hidden_size":5120,
    "intermediate_size":12288,"moe_intermediate_size":1536,"num_attention_heads":96,"n_routed_experts":160,
    "n_shared_experts":1,"num_experts_per_tok":8,"first_k_dense_replace":3,"num_hidden_layers":92,
    "num_key_value_heads":8,"num_nextn_predict_layers":1,"tie_word_embeddings":false,"use_qk_norm":true,
    "vocab_size":151552})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountParams(*g).total, 352'797'814'784 + 89 * 160);
  EXPECT_TRUE(g->qk_norm);
  for (const ModelSpec& m : {*a, *g}) ExpectReadsBack(m);
}

// DeepSeek Sparse Attention adds a lightning indexer to every MLA layer: wq_b from the q
// latent (index_n_heads x index_head_dim rows), wk from h, a LayerNorm on the key (weight and
// bias) and weights_proj (one weight per index head). DeepSeek-V3.2 (DeepseekV32Config's
// defaults, its published dimensions) counts 671,877,929,216 parameters in transformers 5.23
// on the meta device, and GLM-5 (GlmMoeDsaConfig: 78 layers, hidden 6,144, q latent 2,048,
// 32 index heads) 743,911,199,232, each with its routers' e_score_correction_bias kept as
// buffers beside them: 58 x 256 and 75 x 256. MiniMax-M2 (its published config, FP8
// checkpoint): 62 layers of GQA with q/k norms over the whole projections and 256 experts of
// 1,536, top-8, a biased router: 228,689,748,992 + 62 x 256.
TEST(Families, SparseAttentionAndMiniMax) {
  auto v32 = FromJson(R"({"architectures":["DeepseekV32ForCausalLM"],"model_type":"deepseek_v32","hidden_size":7168,
    "index_head_dim":128,"index_n_heads":64,"index_topk":2048,"intermediate_size":18432,"kv_lora_rank":512,
    "first_k_dense_replace":3,"moe_intermediate_size":2048,"moe_layer_freq":1,"n_group":8,"n_routed_experts":256,
    "n_shared_experts":1,"num_attention_heads":128,"num_experts_per_tok":8,"num_hidden_layers":61,
    "num_key_value_heads":128,"num_nextn_predict_layers":1,"q_lora_rank":1536,"qk_nope_head_dim":128,
    "qk_rope_head_dim":64,"v_head_dim":128,"vocab_size":129280,"topk_method":"noaux_tc","scoring_func":"sigmoid",
    "tie_word_embeddings":false,"max_position_embeddings":163840})");
  ASSERT_TRUE(v32.ok()) << v32.status().message();
  EXPECT_EQ(CountParams(*v32).total, 671'877'929'216 + 58 * 256);
  // The indexer is the whole difference from DeepSeek-V3 of the same widths.
  ModelSpec v3 = *v32;
  v3.index_heads = v3.index_head_dim = v3.index_topk = 0;
  EXPECT_EQ(CountParams(*v32).total - CountParams(v3).total, 61 * (1536LL * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64));
  EXPECT_EQ(v32->index_topk, 2048);
  auto glm5 = FromJson(R"({"model_type":"glm_moe_dsa","hidden_size":6144,"intermediate_size":12288,
    "moe_intermediate_size":2048,"num_hidden_layers":78,"num_attention_heads":64,"num_key_value_heads":64,
    "n_routed_experts":256,"n_shared_experts":1,"num_experts_per_tok":8,"first_k_dense_replace":3,"vocab_size":154880,
    "index_n_heads":32,"index_head_dim":128,"index_topk":2048,"num_nextn_predict_layers":1})");
  ASSERT_TRUE(glm5.ok()) << glm5.status().message();
  EXPECT_EQ(glm5->q_lora_rank, 2048);  // GlmMoeDsaConfig's MLA widths where the file leaves them out
  EXPECT_EQ(glm5->v_head_dim, 256);
  EXPECT_TRUE(glm5->router_bias);
  EXPECT_EQ(CountParams(*glm5).total, 743'911'199'232 + 75 * 256);
  auto mm2 = FromJson(R"({"architectures":["MiniMaxM2ForCausalLM"],"attn_type_list":[1,1],"head_dim":128,
    "hidden_act":"silu","hidden_size":3072,"intermediate_size":1536,"max_position_embeddings":196608,
    "model_type":"minimax_m2","mtp_transformer_layers":1,"num_attention_heads":48,"num_experts_per_tok":8,
    "num_hidden_layers":62,"num_key_value_heads":8,"num_local_experts":256,"num_mtp_modules":3,
    "qk_norm_type":"per_layer","rotary_dim":64,"scoring_func":"sigmoid","shared_intermediate_size":0,
    "tie_word_embeddings":false,"torch_dtype":"bfloat16","use_mtp":true,"use_qk_norm":true,"use_routing_bias":true,
    "vocab_size":200064,"quantization_config":{"activation_scheme":"dynamic","fmt":"float8_e4m3fn","quant_method":"fp8",
    "weight_block_size":[128,128],"modules_to_not_convert":["gate","e_score_correction_bias","lm_head"]}})");
  ASSERT_TRUE(mm2.ok()) << mm2.status().message();
  EXPECT_EQ(CountParams(*mm2).total, 228'689'748'992 + 62 * 256);
  EXPECT_EQ(CountParams(*mm2).active, CountParams(*mm2).total - 62 * 248 * 3 * 3072LL * 1536);
  EXPECT_TRUE(mm2->quant.quantized());
  for (const ModelSpec& m : {*v32, *glm5, *mm2}) ExpectReadsBack(m);
}

// Nemotron-H (transformers modeling_nemotron_h.py): one norm and one mixer per block. Each part
// of Nemotron 3 Nano as transformers' named_parameters() sums it on the meta device.
TEST(Families, NemotronHybrid) {
  auto nano = LoadModel("nemotron-3-nano-30b-a3b");
  ASSERT_TRUE(nano.ok()) << nano.status().message();
  EXPECT_EQ(nano->layers, 52);
  EXPECT_EQ(nano->hybrid, "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME");
  EXPECT_EQ(nano->attention_layer_count(), 6);
  EXPECT_EQ(nano->moe_layer_count(), 23);
  const ParamCounts c = CountParams(*nano);
  // 23 mixers: in_proj 637,034,496, out_proj 253,231,104, conv1d 565,248 + 141,312, the gated
  // norm 94,208, A_log, D and dt_bias 1,472 each.
  EXPECT_EQ(c.linear_mixers, 891'070'784);
  EXPECT_EQ(c.attention, 4'128'768 * 2 + 66'060'288 * 2);
  EXPECT_EQ(c.experts, 2 * 14'687'404'032LL);
  EXPECT_EQ(c.shared_experts, 2 * 229'490'688);
  EXPECT_EQ(c.router, 7'913'472 + 23 * 128);
  EXPECT_EQ(c.norms, 16'128 + 61'824 + 61'824 + 2'688);  // one per block, and norm_f
  EXPECT_EQ(c.mlp, 0);
  // Super's routed experts work in the 1,024-wide latent; the latent projections are dense.
  auto super = LoadModel("nemotron-3-super-120b-a12b");
  ASSERT_TRUE(super.ok()) << super.status().message();
  EXPECT_EQ(super->moe_latent, 1024);
  EXPECT_EQ(super->mtp_layers, 1);
  EXPECT_EQ(CountParams(*super).experts, 2 * 56'371'445'760LL);
  EXPECT_EQ(CountParams(*super).shared_experts, 2 * 880'803'840LL + 2 * 167'772'160LL);
  // The remote code's layers_block_type spelling reads as the pattern does; a dense hybrid
  // (Nemotron-H 8B's shape: MLP blocks, no experts) counts its relu2 MLPs.
  auto listed = FromJson(R"({"model_type":"nemotron_h","hidden_size":2688,"num_attention_heads":32,"num_key_value_heads":2,
    "head_dim":128,"mamba_num_heads":64,"mamba_head_dim":64,"ssm_state_size":128,"n_groups":8,"vocab_size":131072,
    "n_routed_experts":128,"num_experts_per_tok":6,"moe_intermediate_size":1856,"moe_shared_expert_intermediate_size":3712,
    "layers_block_type":["mamba","moe","mamba","moe","mamba","attention"]})");
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  EXPECT_EQ(listed->hybrid, "MEMEM*");
  auto dense = FromJson(R"({"model_type":"nemotron_h","hidden_size":4096,"intermediate_size":21504,
    "num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"mamba_num_heads":128,"mamba_head_dim":64,
    "ssm_state_size":128,"n_groups":8,"vocab_size":131072,"hybrid_override_pattern":"M-M*-"})");
  ASSERT_TRUE(dense.ok()) << dense.status().message();
  EXPECT_FALSE(dense->is_moe());
  EXPECT_EQ(CountParams(*dense).mlp, 2 * 2 * 4096LL * 21504);
  EXPECT_EQ(CountParams(*dense).total, 2 * 131072LL * 4096 + 2 * LinearMixerParams(*dense) + (2 * 4096LL * 4096 + 2 * 4096LL * 1024) +
                                           2 * 2 * 4096LL * 21504 + 6 * 4096);
  for (const ModelSpec& m : {*nano, *super, *listed, *dense}) ExpectReadsBack(m);
  // Without a pattern there is no model to count; a wrong letter is named.
  auto none = FromJson(R"({"model_type":"nemotron_h","hidden_size":4096})");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("hybrid_override_pattern"), std::string::npos) << none.status().message();
  auto bad = FromJson(R"({"model_type":"nemotron_h","hybrid_override_pattern":"M*X"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("got \"X\""), std::string::npos) << bad.status().message();
}

// OLMoE-1B-7B-0924 (allenai config.json): transformers counts 6,919,161,856 on the meta device,
// 1,282,017,280 of them active (top-8 of 64 experts; "1B active, 7B total").
TEST(Families, Olmoe) {
  auto m = FromJson(R"({"architectures":["OlmoeForCausalLM"],"attention_bias":false,"attention_dropout":0.0,"clip_qkv":null,"eos_token_id":50279,"hidden_act":"silu","hidden_size":2048,"initializer_range":0.02,"intermediate_size":1024,"max_position_embeddings":4096,"model_type":"olmoe","norm_topk_prob":false,"num_attention_heads":16,"num_experts":64,"num_experts_per_tok":8,"num_hidden_layers":16,"num_key_value_heads":16,"output_router_logits":false,"pad_token_id":1,"rms_norm_eps":1e-05,"rope_scaling":null,"rope_theta":10000.0,"router_aux_loss_coef":0.01,"tie_word_embeddings":false,"torch_dtype":"bfloat16","use_cache":true,"vocab_size":50304})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(CountParams(*m).total, 6'919'161'856);
  EXPECT_EQ(CountParams(*m).active, 1'282'017'280);
  EXPECT_EQ(CountParams(*m).attention, 16 * (4 * 2048LL * 2048 + 2048 + 2048));  // q/k norms over the whole projections
  ExpectReadsBack(*m);
}

// Qwen3-Next and Qwen3.5 (transformers modeling_qwen3_next.py, modeling_qwen3_5_moe.py): Gated
// DeltaNet and gated-attention layers, each with an MoE (or an MLP) behind two norms.
// transformers on the meta device: Qwen3-Next-80B-A3B 79,674,391,296; Qwen3.5-35B-A3B's text
// tower 34,660,610,688 and its ViT 446,571,248 (Qwen3_5MoeForConditionalGeneration).
TEST(Families, GatedDeltaNetHybrids) {
  auto next = FromJson(R"({"architectures":["Qwen3NextForCausalLM"],"attention_bias":false,"attention_dropout":0.0,"bos_token_id":151643,"decoder_sparse_step":1,"eos_token_id":151645,"full_attention_interval":4,"head_dim":256,"hidden_act":"silu","hidden_size":2048,"initializer_range":0.02,"intermediate_size":5120,"linear_conv_kernel_dim":4,"linear_key_head_dim":128,"linear_num_key_heads":16,"linear_num_value_heads":32,"linear_value_head_dim":128,"max_position_embeddings":262144,"mlp_only_layers":[],"model_type":"qwen3_next","moe_intermediate_size":512,"norm_topk_prob":true,"num_attention_heads":16,"num_experts":512,"num_experts_per_tok":10,"num_hidden_layers":48,"num_key_value_heads":2,"output_router_logits":false,"partial_rotary_factor":0.25,"rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":10000000,"router_aux_loss_coef":0.001,"shared_expert_intermediate_size":512,"tie_word_embeddings":false,"torch_dtype":"bfloat16","use_cache":true,"use_sliding_window":false,"vocab_size":151936})");
  ASSERT_TRUE(next.ok()) << next.status().message();
  EXPECT_EQ(next->hybrid, "GGGAGGGAGGGAGGGAGGGAGGGAGGGAGGGAGGGAGGGAGGGAGGGA");
  EXPECT_EQ(next->attention_layer_count(), 12);
  const ParamCounts c = CountParams(*next);
  EXPECT_EQ(c.total, 79'674'391'296);
  // 36 DeltaNets: in_proj_qkvz 905,969,664, in_proj_ba 4,718,592, conv1d 1,179,648, out_proj
  // 301,989,888, dt_bias and A_log 1,152 each, the shared gated norm 4,608.
  EXPECT_EQ(c.linear_mixers, 1'213'864'704);
  // 12 attentions: q_proj with its gate 201,326,592, k and v 12,582,912 each, o 100,663,296,
  // q_norm and k_norm 3,072 each.
  EXPECT_EQ(c.attention, 201'326'592 + 2 * 12'582'912 + 100'663'296 + 2 * 3'072);
  EXPECT_EQ(c.shared_experts, 3 * 50'331'648 + 98'304);  // gate/up/down and the shared expert's gate
  EXPECT_EQ(c.norms, 98'304 + 98'304 + 2'048);
  EXPECT_EQ(c.active, c.total - c.experts + 48 * 10 * 3 * 2048LL * 512);
  auto q35 = FromJson(R"({"architectures":["Qwen3_5MoeForConditionalGeneration"],"model_type":"qwen3_5_moe","tie_word_embeddings":false,"image_token_id":248056,"video_token_id":248057,"vision_start_token_id":248053,"vision_end_token_id":248054,"text_config":{"model_type":"qwen3_5_moe_text","attention_bias":false,"attn_output_gate":true,"dtype":"bfloat16","full_attention_interval":4,"head_dim":256,"hidden_act":"silu","hidden_size":2048,"linear_conv_kernel_dim":4,"linear_key_head_dim":128,"linear_num_key_heads":16,"linear_num_value_heads":32,"linear_value_head_dim":128,"max_position_embeddings":262144,"moe_intermediate_size":512,"mtp_num_hidden_layers":1,"num_attention_heads":16,"num_experts":256,"num_experts_per_tok":8,"num_hidden_layers":40,"num_key_value_heads":2,"partial_rotary_factor":0.25,"rms_norm_eps":1e-06,"shared_expert_intermediate_size":512,"tie_word_embeddings":false,"vocab_size":248320,"rope_parameters":{"mrope_interleaved":true,"mrope_section":[11,11,10],"rope_type":"default","rope_theta":10000000,"partial_rotary_factor":0.25}},"vision_config":{"model_type":"qwen3_5_moe","deepstack_visual_indexes":[],"depth":27,"hidden_act":"gelu_pytorch_tanh","hidden_size":1152,"in_channels":3,"initializer_range":0.02,"intermediate_size":4304,"num_heads":16,"num_position_embeddings":2304,"out_hidden_size":2048,"patch_size":16,"spatial_merge_size":2,"temporal_patch_size":2}})");
  ASSERT_TRUE(q35.ok()) << q35.status().message();
  EXPECT_EQ(q35->model_type, "qwen3_5_moe_text");
  EXPECT_EQ(q35->hybrid.size(), 40u);
  EXPECT_EQ(q35->hybrid.substr(0, 8), "GGGAGGGA");
  EXPECT_EQ(CountParams(*q35).total, 34'660'610'688);
  EXPECT_EQ(CountParams(*q35).vision, 446'571'248);
  // An explicit layer_types must name a mixer per layer.
  auto bad = FromJson(R"({"model_type":"qwen3_next","num_hidden_layers":2,"layer_types":["linear_attention","sliding_attention"]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("got \"sliding_attention\""), std::string::npos) << bad.status().message();
  for (const ModelSpec& m : {*next, *q35}) ExpectReadsBack(m);
}

// IBM Granite 4.0 hybrids (transformers modeling_granitemoehybrid.py): a Mamba-2 or attention
// mixer and an MoE beside a shared MLP in every layer. On the meta device transformers counts a
// Granite-4.0-H-Small config (36 Mamba and 4 attention layers, 72 experts of 768, top 10, a shared
// MLP of 1,536) at 32,207,337,984: Mamba mixers 3,682,331,136, experts 27,179,089,920, shared
// MLPs 754,974,720, routers 11,796,480, attention 167,772,160, norms 331,776, a tied 100,352 x
// 4,096 embedding. An H-Micro-shaped dense hybrid (no experts: the shared MLP of 8,192 alone)
// counts 3,191,396,096; a small one with biased projections, two groups and an untied head
// 170,525,376. Granite 3.0's MoE (granite-3.0-1b-a400m's shape) 1,334,628,352 and Granite 3.1's
// with a shared MLP of 1,024, biased attention and an untied head 1,460,534,272.
TEST(Families, GraniteHybridBambaAndMoe) {
  auto small = FromJson(R"({"architectures":["GraniteMoeHybridForCausalLM"],"model_type":"granitemoehybrid","hidden_size":4096,
    "num_hidden_layers":40,"num_attention_heads":32,"num_key_value_heads":8,"num_local_experts":72,
    "num_experts_per_tok":10,"shared_intermediate_size":1536,"intermediate_size":768,"mamba_d_state":128,"mamba_d_conv":4,
    "mamba_expand":2,"mamba_n_heads":128,"mamba_d_head":64,"mamba_n_groups":1,"mamba_conv_bias":true,
    "mamba_proj_bias":false,"mamba_chunk_size":256,"tie_word_embeddings":true,"vocab_size":100352,"torch_dtype":"bfloat16",
    "position_embedding_type":"nope","layer_types":["mamba","mamba","mamba","mamba","mamba","attention","mamba","mamba",
    "mamba","mamba","mamba","mamba","mamba","mamba","mamba","attention","mamba","mamba","mamba","mamba","mamba","mamba",
    "mamba","mamba","mamba","attention","mamba","mamba","mamba","mamba","mamba","mamba","mamba","mamba","mamba",
    "attention","mamba","mamba","mamba","mamba"],"max_position_embeddings":131072,"attention_bias":false})");
  ASSERT_TRUE(small.ok()) << small.status().message();
  EXPECT_EQ(small->hybrid.substr(0, 7), "GGGGGAG");
  EXPECT_FALSE(small->linear.delta);
  EXPECT_EQ(small->linear.inner(), 8192);
  EXPECT_EQ(small->attention_layer_count(), 4);
  const ParamCounts c = CountParams(*small);
  EXPECT_EQ(c.total, 32'207'337'984);
  EXPECT_EQ(c.linear_mixers, 3'682'331'136);
  EXPECT_EQ(c.experts, 27'179'089'920);
  EXPECT_EQ(c.shared_experts, 754'974'720);
  EXPECT_EQ(c.router, 11'796'480);
  EXPECT_EQ(c.attention, 167'772'160);
  EXPECT_EQ(c.norms, 331'776);
  EXPECT_EQ(c.active, c.total - c.experts + 40 * 10 * 3 * 4096LL * 768);
  auto micro = FromJson(R"({"architectures":["GraniteMoeHybridForCausalLM"],"model_type":"granitemoehybrid","hidden_size":2048,
    "num_hidden_layers":40,"num_attention_heads":32,"num_key_value_heads":8,"num_local_experts":0,"num_experts_per_tok":0,
    "shared_intermediate_size":8192,"intermediate_size":768,"mamba_d_state":128,"mamba_d_conv":4,"mamba_expand":2,
    "mamba_n_heads":64,"mamba_d_head":64,"mamba_n_groups":1,"mamba_conv_bias":true,"mamba_proj_bias":false,
    "mamba_chunk_size":256,"tie_word_embeddings":true,"vocab_size":100352,"torch_dtype":"bfloat16",
    "position_embedding_type":"nope","layer_types":["mamba","mamba","mamba","mamba","mamba","attention","mamba","mamba",
    "mamba","mamba","mamba","mamba","mamba","mamba","mamba","attention","mamba","mamba","mamba","mamba","mamba","mamba",
    "mamba","mamba","mamba","attention","mamba","mamba","mamba","mamba","mamba","mamba","mamba","mamba","mamba",
    "attention","mamba","mamba","mamba","mamba"],"max_position_embeddings":131072,"attention_bias":false})");
  ASSERT_TRUE(micro.ok()) << micro.status().message();
  EXPECT_FALSE(micro->is_moe());
  EXPECT_EQ(micro->intermediate, 8192);
  EXPECT_EQ(CountParams(*micro).total, 3'191'396'096);
  auto toy = FromJson(R"({"architectures":["GraniteMoeHybridForCausalLM"],"attention_bias":true,"hidden_act":"silu","hidden_size":512,
    "intermediate_size":1024,"layer_types":["mamba","mamba","mamba","attention","mamba","mamba","mamba","attention"],
    "mamba_chunk_size":256,"mamba_conv_bias":false,"mamba_d_conv":4,"mamba_d_head":128,"mamba_d_state":128,
    "mamba_expand":2,"mamba_n_groups":2,"mamba_n_heads":8,"mamba_proj_bias":true,"max_position_embeddings":4096,
    "model_type":"granitemoehybrid","num_attention_heads":8,"num_experts_per_tok":2,"num_hidden_layers":8,
    "num_key_value_heads":8,"num_local_experts":8,"position_embedding_type":"nope","shared_intermediate_size":512,
    "tie_word_embeddings":false,"torch_dtype":"bfloat16","vocab_size":49152})");
  ASSERT_TRUE(toy.ok()) << toy.status().message();
  EXPECT_EQ(CountParams(*toy).total, 170'525'376);
  auto g1 = FromJson(R"({"architectures":["GraniteMoeForCausalLM"],"model_type":"granitemoe","hidden_size":1024,"num_hidden_layers":24,
    "num_attention_heads":16,"num_key_value_heads":8,"intermediate_size":512,"num_local_experts":32,
    "num_experts_per_tok":8,"vocab_size":49155,"tie_word_embeddings":true,"attention_bias":false,
    "max_position_embeddings":4096,"embedding_multiplier":12.0,"logits_scaling":6.0,"residual_multiplier":0.22,
    "attention_multiplier":0.015625})");
  ASSERT_TRUE(g1.ok()) << g1.status().message();
  EXPECT_EQ(CountParams(*g1).total, 1'334'628'352);
  auto gs = FromJson(R"({"architectures":["GraniteMoeSharedForCausalLM"],"model_type":"granitemoeshared","hidden_size":1024,
    "num_hidden_layers":24,"num_attention_heads":16,"num_key_value_heads":8,"intermediate_size":512,"num_local_experts":32,
    "num_experts_per_tok":8,"vocab_size":49155,"tie_word_embeddings":false,"attention_bias":true,
    "max_position_embeddings":4096,"embedding_multiplier":12.0,"logits_scaling":6.0,"residual_multiplier":0.22,
    "attention_multiplier":0.015625,"shared_intermediate_size":1024})");
  ASSERT_TRUE(gs.ok()) << gs.status().message();
  EXPECT_EQ(CountParams(*gs).total, 1'460'534'272);
  // transformers' own checks: the Mamba width is mamba_expand x hidden_size; a layer is Mamba or attention.
  auto wide = FromJson(R"({"model_type":"granitemoehybrid","hidden_size":512,"num_hidden_layers":2,"num_attention_heads":8,
    "mamba_n_heads":8,"mamba_d_head":100})");
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("must equal mamba_expand x hidden_size (1024)"), std::string::npos) << wide.status().message();
  auto odd = FromJson(R"({"model_type":"granitemoehybrid","hidden_size":512,"num_hidden_layers":2,"num_attention_heads":8,
    "mamba_n_heads":8,"layer_types":["mamba","mlp"]})");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("got \"mlp\""), std::string::npos) << odd.status().message();
  // Bamba-9B (its config.json's widths): the same layers with a dense SwiGLU MLP of 14,336 and
  // attention in layers 9, 18 and 27; transformers counts 9,780,235,392.
  auto bamba = FromJson(R"({"architectures":["BambaForCausalLM"],"model_type":"bamba","vocab_size":128256,"hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"attn_layer_indices":[9,18,27],"mamba_n_heads":128,"mamba_d_head":64,"mamba_d_state":128,"mamba_n_groups":1,"mamba_d_conv":4,"mamba_expand":2,"mamba_chunk_size":256,"mamba_conv_bias":true,"mamba_proj_bias":false,"tie_word_embeddings":false,"torch_dtype":"bfloat16","max_position_embeddings":4096})");
  ASSERT_TRUE(bamba.ok()) << bamba.status().message();
  EXPECT_EQ(bamba->hybrid.substr(8, 3), "GAG");
  EXPECT_EQ(CountParams(*bamba).total, 9'780'235'392);
  EXPECT_EQ(CountParams(*bamba).linear_mixers, 2'966'322'304);
  for (const ModelSpec& m : {*small, *micro, *toy, *g1, *gs, *bamba}) ExpectReadsBack(m);
}

// LLaVA and LLaVA-NeXT (transformers modeling_llava.py, modeling_llava_next.py): whichever text
// tower text_config names behind a CLIP encoder and a two-Linear projector. On the meta device
// transformers counts llava-hf/llava-1.5-7b-hf's config at 7,063,427,072: CLIP ViT-L/14-336
// 303,507,456, the projector 20,979,712, the Vicuna text tower 6,738,939,904. A LLaVA-NeXT
// config over Mistral 7B, two feature layers and a bias-free projector: 7,570,933,760, with
// 25,165,824 in the projector and 4,096 in image_newline. LlavaConfig ties the head when either
// level says so (6,932,092,928 with text_config's true alone); LLaVA-NeXT follows the top level.
TEST(Families, Llava) {
  auto l15 = FromJson(R"({"architectures":["LlavaForConditionalGeneration"],"ignore_index":-100,"image_token_index":32000,"model_type":"llava",
    "pad_token_id":32001,"projector_hidden_act":"gelu","text_config":{"_name_or_path":"lmsys/vicuna-7b-v1.5",
    "architectures":["LlamaForCausalLM"],"max_position_embeddings":4096,"model_type":"llama","rms_norm_eps":1e-05,
    "torch_dtype":"float16","vocab_size":32064},"tie_word_embeddings":false,"torch_dtype":"float16",
    "vision_config":{"hidden_size":1024,"image_size":336,"intermediate_size":4096,"model_type":"clip_vision_model",
    "num_attention_heads":16,"num_hidden_layers":24,"patch_size":14,"projection_dim":768,"vocab_size":32000},
    "vision_feature_layer":-2,"vision_feature_select_strategy":"default","vocab_size":32064})");
  ASSERT_TRUE(l15.ok()) << l15.status().message();
  EXPECT_EQ(l15->model_type, "llama");
  EXPECT_EQ(l15->decoder_layer_class, "LlamaDecoderLayer");
  EXPECT_EQ(l15->dtype, Dtype::kFp16);
  EXPECT_EQ(CountParams(*l15).total, 6'738'939'904);
  EXPECT_EQ(CountParams(*l15).vision, 303'507'456 + 20'979'712);
  auto next = FromJson(R"({"architectures":["LlavaNextForConditionalGeneration"],"model_type":"llava_next","image_token_index":32000,
    "text_config":{"architectures":["MistralForCausalLM"],"intermediate_size":14336,"max_position_embeddings":32768,
    "model_type":"mistral","num_key_value_heads":8,"rms_norm_eps":1e-05,"rope_theta":1000000.0,"sliding_window":null,
    "torch_dtype":"bfloat16","vocab_size":32064},"torch_dtype":"float16","vision_config":{"hidden_size":1024,
    "image_size":336,"intermediate_size":4096,"model_type":"clip_vision_model","num_attention_heads":16,
    "num_hidden_layers":24,"patch_size":14,"projection_dim":768,"vocab_size":32000},"vision_feature_layer":[-2,-5],
    "multimodal_projector_bias":false,"tie_word_embeddings":false})");
  ASSERT_TRUE(next.ok()) << next.status().message();
  EXPECT_EQ(next->model_type, "mistral");
  EXPECT_EQ(next->vision.feature_layers, 2);
  EXPECT_EQ(CountParams(*next).total + CountParams(*next).vision, 7'570'933'760);
  EXPECT_EQ(CountParams(*next).vision, 303'507'456 + 25'165'824 + 4'096);
  auto tied = FromJson(R"({"model_type":"llava","text_config":{"model_type":"llama","vocab_size":32064,"tie_word_embeddings":true}})");
  ASSERT_TRUE(tied.ok()) << tied.status().message();
  EXPECT_EQ(CountParams(*tied).total + CountParams(*tied).vision, 6'932'092'928);
  auto next_top = FromJson(R"({"model_type":"llava_next","tie_word_embeddings":false,"text_config":{"model_type":"llama",
    "tie_word_embeddings":true}})");
  ASSERT_TRUE(next_top.ok()) << next_top.status().message();
  EXPECT_FALSE(next_top->tied_embeddings);
  auto siglip = FromJson(R"({"model_type":"llava","vision_config":{"model_type":"siglip_vision_model"}})");
  ASSERT_FALSE(siglip.ok());
  EXPECT_NE(siglip.status().message().find("\"siglip_vision_model\" is not modelled under llava"), std::string::npos)
      << siglip.status().message();
  auto nested = FromJson(R"({"model_type":"llava","text_config":{"model_type":"gemma3"}})");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("got \"gemma3\""), std::string::npos) << nested.status().message();
  for (const ModelSpec& m : {*l15, *next, *tied}) ExpectReadsBack(m);
}

// Falcon-H1 (transformers modeling_falcon_h1.py): attention and a Mamba-2 mixer side by side in
// every layer, then a SwiGLU MLP. On the meta device transformers counts a config of Falcon-H1-7B's
// widths (44 layers of 3,072, 12 heads / 2 KV heads of 128, a 3,072-wide mixer of 24 heads and
// state 256 without its gated norm, an untied 130,049-row vocabulary) at 7,585,519,712, its mixers
// 1,318,949,984. A small one with the norm, biased in_proj, attention and MLP, two groups and a tied
// head: 29,458,304 (mixers 5,323,136); without mamba_d_ssm (mamba_expand x hidden, "auto" heads)
// and with a biased out_proj instead: 31,015,616 (mixers 6,880,448).
TEST(Families, FalconH1ParallelHybrid) {
  auto f7 = FromJson(R"({"architectures":["FalconH1ForCausalLM"],"model_type":"falcon_h1","hidden_size":3072,"intermediate_size":12288,
    "num_hidden_layers":44,"num_attention_heads":12,"num_key_value_heads":2,"head_dim":128,"vocab_size":130049,
    "mamba_d_ssm":3072,"mamba_d_state":256,"mamba_d_head":128,"mamba_n_heads":24,"mamba_n_groups":1,"mamba_d_conv":4,
    "mamba_expand":2,"mamba_chunk_size":128,"mamba_conv_bias":true,"mamba_proj_bias":false,"mamba_rms_norm":false,
    "mamba_norm_before_gate":false,"projectors_bias":false,"attention_bias":false,"mlp_bias":false,
    "tie_word_embeddings":false,"torch_dtype":"bfloat16","max_position_embeddings":262144})");
  ASSERT_TRUE(f7.ok()) << f7.status().message();
  EXPECT_EQ(f7->hybrid, std::string(44, 'P'));
  EXPECT_TRUE(f7->has_attention(3) && f7->has_linear_mixer(3) && f7->has_mlp(3));
  EXPECT_EQ(f7->attention_layer_count(), 44);
  EXPECT_FALSE(f7->linear.norm);
  EXPECT_EQ(CountParams(*f7).total, 7'585'519'712);
  EXPECT_EQ(CountParams(*f7).linear_mixers, 1'318'949'984);
  auto tiny = FromJson(R"({"architectures":["FalconH1ForCausalLM"],"model_type":"falcon_h1","hidden_size":512,"intermediate_size":768,
    "num_hidden_layers":4,"num_attention_heads":8,"num_key_value_heads":2,"head_dim":64,"vocab_size":32768,
    "mamba_d_ssm":768,"mamba_d_state":64,"mamba_d_head":32,"mamba_n_heads":24,"mamba_n_groups":2,"mamba_d_conv":4,
    "mamba_expand":2,"mamba_chunk_size":128,"mamba_conv_bias":true,"mamba_proj_bias":true,"mamba_rms_norm":true,
    "mamba_norm_before_gate":false,"projectors_bias":false,"attention_bias":true,"mlp_bias":true,
    "tie_word_embeddings":true,"torch_dtype":"bfloat16","max_position_embeddings":262144})");
  ASSERT_TRUE(tiny.ok()) << tiny.status().message();
  EXPECT_EQ(CountParams(*tiny).total, 29'458'304);
  EXPECT_EQ(CountParams(*tiny).linear_mixers, 5'323'136);
  auto automatic = FromJson(R"({"architectures":["FalconH1ForCausalLM"],"model_type":"falcon_h1","hidden_size":512,"intermediate_size":768,
    "num_hidden_layers":4,"num_attention_heads":8,"num_key_value_heads":2,"head_dim":64,"vocab_size":32768,
    "mamba_d_state":64,"mamba_d_head":"auto","mamba_n_heads":16,"mamba_n_groups":2,"mamba_d_conv":4,"mamba_expand":2,
    "mamba_chunk_size":128,"mamba_conv_bias":true,"mamba_proj_bias":false,"mamba_rms_norm":true,
    "mamba_norm_before_gate":false,"projectors_bias":true,"attention_bias":true,"mlp_bias":true,"tie_word_embeddings":true,
    "torch_dtype":"bfloat16","max_position_embeddings":262144})");
  ASSERT_TRUE(automatic.ok()) << automatic.status().message();
  EXPECT_EQ(automatic->linear.head_dim, 64);
  EXPECT_EQ(CountParams(*automatic).total, 31'015'616);
  EXPECT_EQ(CountParams(*automatic).linear_mixers, 6'880'448);
  for (const ModelSpec& m : {*f7, *tiny, *automatic}) ExpectReadsBack(m);
}

// Qwen3-VL (transformers modeling_qwen3_vl.py, modeling_qwen3_vl_moe.py): Qwen3 and Qwen3-MoE
// text towers and Qwen3.5's ViT with one more merger per deepstack_visual_indexes entry. On the
// meta device transformers counts Qwen3-VL-8B-Instruct at 8,767,123,696, 576,388,336 of them in
// model.visual, and Qwen3-VL-30B-A3B-Instruct at 31,070,754,032 with 538,631,408. The head is tied
// as the top-level config says, whatever text_config holds (a 2B-shaped config: 2,127,532,032
// tied; with the top level false and text_config true, 2,438,696,960).
TEST(Families, Qwen3VisionLanguage) {
  auto dense = FromJson(R"({"architectures":["Qwen3VLForConditionalGeneration"],"image_token_id":151655,"model_type":"qwen3_vl",
    "text_config":{"attention_bias":false,"attention_dropout":0.0,"bos_token_id":151643,"dtype":"bfloat16",
    "eos_token_id":151645,"head_dim":128,"hidden_act":"silu","hidden_size":4096,"initializer_range":0.02,
    "intermediate_size":12288,"max_position_embeddings":262144,"model_type":"qwen3_vl_text","num_attention_heads":32,
    "num_hidden_layers":36,"num_key_value_heads":8,"rms_norm_eps":1e-06,"rope_scaling":{"mrope_interleaved":true,
    "mrope_section":[24,20,20],"rope_type":"default"},"rope_theta":5000000,"use_cache":true,"vocab_size":151936},
    "tie_word_embeddings":false,"video_token_id":151656,"vision_config":{"deepstack_visual_indexes":[8,16,24],"depth":27,
    "hidden_act":"gelu_pytorch_tanh","hidden_size":1152,"in_channels":3,"initializer_range":0.02,"intermediate_size":4304,
    "model_type":"qwen3_vl","num_heads":16,"num_position_embeddings":2304,"out_hidden_size":4096,"patch_size":16,
    "spatial_merge_size":2,"temporal_patch_size":2},"vision_end_token_id":151653,"vision_start_token_id":151652})");
  ASSERT_TRUE(dense.ok()) << dense.status().message();
  EXPECT_EQ(dense->model_type, "qwen3_vl_text");
  EXPECT_EQ(dense->decoder_layer_class, "Qwen3VLTextDecoderLayer");
  EXPECT_TRUE(dense->qk_norm);
  EXPECT_EQ(dense->vision.deepstack, 3);
  EXPECT_EQ(CountParams(*dense).total, 8'767'123'696 - 576'388'336);
  EXPECT_EQ(CountParams(*dense).vision, 576'388'336);
  auto moe = FromJson(R"({"architectures":["Qwen3VLMoeForConditionalGeneration"],"image_token_id":151655,"model_type":"qwen3_vl_moe",
    "text_config":{"attention_bias":false,"decoder_sparse_step":1,"head_dim":128,"hidden_size":2048,
    "intermediate_size":6144,"max_position_embeddings":262144,"mlp_only_layers":[],"model_type":"qwen3_vl_moe_text",
    "moe_intermediate_size":768,"norm_topk_prob":true,"num_attention_heads":32,"num_experts":128,"num_experts_per_tok":8,
    "num_hidden_layers":48,"num_key_value_heads":4,"rms_norm_eps":1e-06,"rope_scaling":{"mrope_interleaved":true,
    "mrope_section":[24,20,20],"rope_type":"default"},"rope_theta":5000000,"vocab_size":151936,"dtype":"bfloat16"},
    "tie_word_embeddings":false,"video_token_id":151656,"vision_config":{"deepstack_visual_indexes":[8,16,24],"depth":27,
    "hidden_act":"gelu_pytorch_tanh","hidden_size":1152,"in_channels":3,"intermediate_size":4304,
    "model_type":"qwen3_vl_moe","num_heads":16,"num_position_embeddings":2304,"out_hidden_size":2048,"patch_size":16,
    "spatial_merge_size":2,"temporal_patch_size":2},"vision_end_token_id":151653,"vision_start_token_id":151652})");
  ASSERT_TRUE(moe.ok()) << moe.status().message();
  EXPECT_EQ(moe->decoder_layer_class, "Qwen3VLMoeTextDecoderLayer");
  EXPECT_EQ(moe->moe_layer_count(), 48);
  EXPECT_EQ(CountParams(*moe).total, 31'070'754'032 - 538'631'408);
  EXPECT_EQ(CountParams(*moe).vision, 538'631'408);
  EXPECT_EQ(CountParams(*moe).active, CountParams(*moe).total - CountParams(*moe).experts + 48 * 8 * 3 * 2048LL * 768);
  const std::string small = R"({"model_type":"qwen3_vl","tie_word_embeddings":TOP,"text_config":{"model_type":"qwen3_vl_text",
    "hidden_size":2048,"intermediate_size":6144,"num_hidden_layers":28,"num_attention_heads":16,"num_key_value_heads":8,
    "head_dim":128,"vocab_size":151936,"tie_word_embeddings":TEXT},"vision_config":{"depth":24,"hidden_size":1024,
    "intermediate_size":4096,"out_hidden_size":2048,"deepstack_visual_indexes":[5,11,17]}})";
  auto with = [&](const char* top, const char* text) {
    std::string j = small;
    j.replace(j.find("TOP"), 3, top);
    j.replace(j.find("TEXT"), 4, text);
    return FromJson(j);
  };
  auto tied = with("true", "true"), untied = with("false", "true"), top_tied = with("true", "false");
  ASSERT_TRUE(tied.ok() && untied.ok() && top_tied.ok());
  EXPECT_EQ(CountParams(*tied).total + CountParams(*tied).vision, 2'127'532'032);
  EXPECT_EQ(CountParams(*untied).total + CountParams(*untied).vision, 2'438'696'960);
  EXPECT_TRUE(top_tied->tied_embeddings);
  auto bad = FromJson(R"({"model_type":"qwen3_vl","vision_config":{"deepstack_visual_indexes":[8,"x"]}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("got \"x\""), std::string::npos) << bad.status().message();
  for (const ModelSpec& m : {*dense, *moe, *tied, *untied}) ExpectReadsBack(m);
}

// Qwen2-VL, Qwen2.5-VL, Gemma 3 and Mistral 3 (transformers modeling_qwen2_vl.py,
// modeling_qwen2_5_vl.py, modeling_gemma3.py, modeling_mistral3.py): a
// qwen2 text tower and a ViT whose parameters are counted apart. On the meta device
// transformers counts Qwen2.5-VL-7B at 8,292,166,656, 676,550,144 of them in model.visual
// (32 SwiGLU blocks of 1,280 with RMSNorms, a Conv3d patch embedding, a 5,120-wide merger to
// 3,584), and Qwen2-VL-7B at 8,291,375,616 with 675,759,104 (GELU fc1/fc2 of 4 x 1,280,
// LayerNorms). The text keys may sit at the top level, as published, or in text_config.
TEST(Families, QwenVisionLanguage) {
  const std::string v25 = R"({"architectures":["Qwen2_5_VLForConditionalGeneration"],"hidden_act":"silu","hidden_size":3584,"intermediate_size":18944,
    "max_position_embeddings":128000,"max_window_layers":28,"model_type":"qwen2_5_vl","num_attention_heads":28,"num_hidden_layers":28,
    "num_key_value_heads":4,"rms_norm_eps":1e-06,"rope_theta":1000000.0,"sliding_window":32768,"tie_word_embeddings":false,
    "torch_dtype":"bfloat16","use_sliding_window":false,"vision_start_token_id":151652,"image_token_id":151655,
    "video_token_id":151656,"rope_scaling":{"type":"mrope","mrope_section":[16,24,24]},"vocab_size":152064,
    "vision_config":{"depth":32,"hidden_act":"silu","hidden_size":1280,"intermediate_size":3420,"num_heads":16,"in_chans":3,
    "out_hidden_size":3584,"patch_size":14,"spatial_merge_size":2,"spatial_patch_size":14,"window_size":112,
    "fullatt_block_indexes":[7,15,23,31],"tokens_per_second":2,"temporal_patch_size":2}})";
  auto a = FromJson(v25);
  ASSERT_TRUE(a.ok()) << a.status().message();
  const ParamCounts c = CountParams(*a);
  EXPECT_EQ(c.total, 8'292'166'656 - 676'550'144);
  EXPECT_EQ(c.vision, 676'550'144);
  EXPECT_EQ(a->model_type, "qwen2");
  EXPECT_EQ(a->decoder_layer_class, "Qwen2_5_VLDecoderLayer");  // what FSDP's auto-wrap must name
  EXPECT_TRUE(a->qkv_bias);
  auto q2 = FromJson(R"({"model_type":"qwen2_vl","hidden_size":3584,"intermediate_size":18944,"num_attention_heads":28,
    "num_hidden_layers":28,"num_key_value_heads":4,"vocab_size":152064,"tie_word_embeddings":false,
    "vision_config":{"depth":32,"embed_dim":1280,"mlp_ratio":4,"num_heads":16,"in_chans":3,"hidden_size":3584,
    "patch_size":14,"spatial_merge_size":2,"temporal_patch_size":2}})");
  ASSERT_TRUE(q2.ok()) << q2.status().message();
  EXPECT_EQ(q2->decoder_layer_class, "Qwen2VLDecoderLayer");
  EXPECT_EQ(CountParams(*q2).vision, 675'759'104);
  EXPECT_EQ(CountParams(*q2).total + CountParams(*q2).vision, 8'291'375'616);
  // As newer transformers save it: the text tower in text_config.
  auto nested = FromJson(R"({"model_type":"qwen2_5_vl","torch_dtype":"bfloat16","text_config":{"model_type":"qwen2_5_vl_text",
    "hidden_size":3584,"intermediate_size":18944,"num_attention_heads":28,"num_hidden_layers":28,"num_key_value_heads":4,
    "vocab_size":152064,"tie_word_embeddings":false},"vision_config":{"depth":32,"hidden_size":1280,"intermediate_size":3420,
    "out_hidden_size":3584,"in_channels":3,"patch_size":14,"spatial_merge_size":2,"temporal_patch_size":2}})");
  ASSERT_TRUE(nested.ok()) << nested.status().message();
  EXPECT_EQ(CountParams(*nested).total, c.total);
  EXPECT_EQ(CountParams(*nested).vision, c.vision);
  for (const ModelSpec& m : {*a, *q2, *nested}) ExpectReadsBack(m);
  // Gemma 3 4B (google/gemma-3-4b-it config.json): transformers counts 4,300,079,472 on the
  // meta device, 419,816,304 of them in the SigLIP tower and the projector.
  auto g3 = FromJson(R"({"architectures":["Gemma3ForConditionalGeneration"],"model_type":"gemma3","mm_tokens_per_image":256,
    "text_config":{"hidden_size":2560,"intermediate_size":10240,"model_type":"gemma3_text","num_hidden_layers":34,
    "num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"sliding_window":1024,"vocab_size":262208,
    "rope_scaling":{"factor":8.0,"rope_type":"linear"}},"torch_dtype":"bfloat16",
    "vision_config":{"hidden_size":1152,"image_size":896,"intermediate_size":4304,"model_type":"siglip_vision_model",
    "num_attention_heads":16,"num_hidden_layers":27,"patch_size":14,"vision_use_head":false}})");
  ASSERT_TRUE(g3.ok()) << g3.status().message();
  EXPECT_EQ(CountParams(*g3).vision, 419'816'304);
  EXPECT_EQ(CountParams(*g3).total + CountParams(*g3).vision, 4'300'079'472);
  ExpectReadsBack(*g3);
  // SiglipVisionConfig's default vision_use_head builds the attention-pooling head, which the
  // published configs turn off: the same tower with it counts 435,054,656 on the meta device.
  std::string with_head = R"({"model_type":"gemma3","vision_config":{"hidden_size":1152,"image_size":896,
    "intermediate_size":4304,"model_type":"siglip_vision_model","num_hidden_layers":27,"patch_size":14},
    "text_config":{"hidden_size":2560,"model_type":"gemma3_text"}})";
  auto g3_head = FromJson(with_head);
  ASSERT_TRUE(g3_head.ok()) << g3_head.status().message();
  EXPECT_EQ(CountParams(*g3_head).vision, 435'054'656);
  ExpectReadsBack(*g3_head);
  // Mistral Small 3.1 (Mistral3ForConditionalGeneration): the Pixtral encoder (24 blocks of
  // 1,024, SwiGLU 4,096, no biases) and the projector's patch merger and two Linears to 5,120:
  // 438,958,080 in transformers' meta-device count.
  auto m3 = FromJson(R"({"model_type":"mistral3","spatial_merge_size":2,"multimodal_projector_bias":false,
    "projector_hidden_act":"gelu","vision_feature_layer":-1,"text_config":{"head_dim":128,"hidden_size":5120,
    "intermediate_size":32768,"model_type":"mistral","num_attention_heads":32,"num_hidden_layers":40,
    "num_key_value_heads":8,"vocab_size":131072,"sliding_window":null},"vision_config":{"head_dim":64,
    "hidden_size":1024,"image_size":1540,"intermediate_size":4096,"model_type":"pixtral","num_attention_heads":16,
    "num_channels":3,"num_hidden_layers":24,"patch_size":14}})");
  ASSERT_TRUE(m3.ok()) << m3.status().message();
  EXPECT_EQ(CountParams(*m3).vision, 438'958'080);
  ExpectReadsBack(*m3);
}

// Configs that carry another family under their own name: Kimi K2 (model_type kimi_k2) is
// DeepSeek-V3's architecture with 384 experts and 64 heads, which transformers reads as
// deepseek_v3: 1,026,408,209,408 parameters there, plus 60 x 384 router biases (buffers);
// Kimi K2.5 nests it in text_config. Mistral Small 3.1 (mistral3) nests a mistral text tower:
// 40 layers of 32 heads and 8 KV heads of 128, a 32,768-wide MLP, 131,072 untied rows.
TEST(Families, NamedForAnotherArchitecture) {
  const std::string kimi = R"("hidden_size":7168,"intermediate_size":18432,"moe_intermediate_size":2048,
    "num_hidden_layers":61,"num_attention_heads":64,"num_key_value_heads":64,"n_shared_experts":1,
    "n_routed_experts":384,"num_experts_per_tok":8,"first_k_dense_replace":1,"q_lora_rank":1536,"kv_lora_rank":512,
    "qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,"topk_method":"noaux_tc","vocab_size":163840,
    "num_nextn_predict_layers":0,"tie_word_embeddings":false)";
  auto k2 = FromJson(R"({"model_type":"kimi_k2",)" + kimi + "}");
  ASSERT_TRUE(k2.ok()) << k2.status().message();
  EXPECT_EQ(k2->model_type, "deepseek_v3");
  EXPECT_EQ(CountParams(*k2).total, 1'026'408'209'408 + 60 * 384);
  auto k25 = FromJson(R"({"model_type":"kimi_k25","vision_config":{"vt_num_hidden_layers":27},
    "text_config":{"model_type":"kimi_k2",)" + kimi + "}}");
  ASSERT_TRUE(k25.ok()) << k25.status().message();
  EXPECT_EQ(CountParams(*k25).total, CountParams(*k2).total);
  auto m3 = FromJson(R"({"model_type":"mistral3","vision_config":{"hidden_size":1024,"model_type":"pixtral"},
    "text_config":{"head_dim":128,"hidden_size":5120,"intermediate_size":32768,"model_type":"mistral",
    "num_attention_heads":32,"num_hidden_layers":40,"num_key_value_heads":8,"sliding_window":null,"vocab_size":131072}})");
  ASSERT_TRUE(m3.ok()) << m3.status().message();
  const int64_t layer = 5120LL * (32 + 16) * 128 + 32 * 128LL * 5120 + 3 * 5120LL * 32768 + 2 * 5120;
  EXPECT_EQ(CountParams(*m3).total, 40 * layer + 2 * 131072LL * 5120 + 5120);
  EXPECT_EQ(m3->model_type, "mistral");
}

// GPT-2 and Falcon derive a missing feed-forward width as 4h, which for the widest hidden
// size a config may state is wider than a config may state it; the writer leaves the
// derived width out, so it reads back (the model fuzzer's n_embd 2,031,072 case).
TEST(Families, DerivedFeedForwardWidthReadsBack) {
  for (const char* json : {R"({"model_type":"gpt2","n_embd":2031072,"n_layer":1,"n_head":1,"vocab_size":8})",
                           R"({"model_type":"falcon","hidden_size":2031072,"num_hidden_layers":1,
                               "num_attention_heads":1,"vocab_size":8})",
                           R"({"model_type":"gpt2","n_embd":64,"n_layer":1,"n_head":1,"n_inner":100,"vocab_size":8})"}) {
    auto m = FromJson(json);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ExpectReadsBack(*m);
  }
}

// plan.yaml writes a model as config keys: the two families read back to the same spec
// (Llama 4's intermediate_size is the expert's, its dense MLP intermediate_size_mlp).
TEST(Families, Llama4AndNemotronWriteBack) {
  for (const std::string& json :
       {std::string(R"({"model_type":"llama4","text_config":{"hidden_size":512,"intermediate_size":256,
          "intermediate_size_mlp":1024,"num_hidden_layers":4,"num_attention_heads":8,"num_key_value_heads":2,
          "head_dim":64,"vocab_size":1000,"num_local_experts":4,"interleave_moe_layer_step":2,"attention_chunk_size":128}})"),
        std::string(R"({"model_type":"nemotron","hidden_size":512,"intermediate_size":2048,"num_hidden_layers":3,
          "num_attention_heads":8,"num_key_value_heads":2,"vocab_size":1000})")}) {
    auto m = FromJson(json);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ExpectReadsBack(*m);
  }
}

// Gemma-3-1B is text-only (gemma3_text, vocab 262144): 999,885,952.
TEST(Families, Gemma3Text1b) {
  auto m = FromJson(R"({"model_type":"gemma3_text","hidden_size":1152,"intermediate_size":6912,"num_hidden_layers":26,
    "num_attention_heads":4,"num_key_value_heads":1,"head_dim":256,"vocab_size":262144,"dtype":"bfloat16"})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(CountParams(*m).total, 999'885'952);
  // The same config as transformers 5 saves it: its private _sliding_window_pattern beside
  // layer_types (five sliding layers, then a global one) is no misspelling.
  std::string types;
  for (int i = 0; i < 26; ++i) types += std::string(i ? "," : "") + ((i + 1) % 6 ? "\"sliding_attention\"" : "\"full_attention\"");
  auto saved = FromJson(R"({"model_type":"gemma3_text","hidden_size":1152,"intermediate_size":6912,"num_hidden_layers":26,
    "num_attention_heads":4,"num_key_value_heads":1,"head_dim":256,"vocab_size":262144,"dtype":"bfloat16",
    "sliding_window":512,"_sliding_window_pattern":6,"_name_or_path":"google/gemma-3-1b-pt","layer_types":[)" + types + "]}");
  ASSERT_TRUE(saved.ok()) << saved.status().message();
  EXPECT_EQ(CountParams(*saved).total, 999'885'952);
  EXPECT_EQ(saved->sliding_window_pattern, 6);
}

// Llama-3.2-1B (tied, head_dim 64): 1,235,814,400.
TEST(Families, TiedLlama) {
  auto m = FromJson(R"({"model_type":"llama","hidden_size":2048,"intermediate_size":8192,"num_hidden_layers":16,
    "num_attention_heads":32,"num_key_value_heads":8,"head_dim":64,"vocab_size":128256,"tie_word_embeddings":true})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(CountParams(*m).total, 1'235'814'400);
}

// Qwen1.5-MoE-A2.7B from qwen2_moe defaults alone: 14,315,784,192.
TEST(Families, Qwen2MoeDefaults) {
  auto m = FromJson(R"({"model_type":"qwen2_moe"})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(CountParams(*m).total, 14'315'784'192);
}

// Three more llama-shaped families, each from its published config.json and its model card's
// safetensors total: Gemma-7B (GeGLU, head_dim 256 > hidden/heads, tied) 8,537,680,896;
// Phi-3-mini-4k (fused qkv/gate_up, same counts as separate projections) 3,821,079,552;
// StarCoder2-3B (GELU MLP with biases, LayerNorm, GQA 24/2, tied) 3,030,371,328.
TEST(Families, GemmaPhi3Starcoder2) {
  auto gemma = FromJson(R"({"model_type":"gemma","head_dim":256,"hidden_size":3072,"intermediate_size":24576,
    "num_attention_heads":16,"num_hidden_layers":28,"num_key_value_heads":16,"vocab_size":256000,"torch_dtype":"bfloat16"})");
  ASSERT_TRUE(gemma.ok()) << gemma.status().message();
  EXPECT_EQ(CountParams(*gemma).total, 8'537'680'896);
  auto phi3 = FromJson(R"({"model_type":"phi3","hidden_size":3072,"intermediate_size":8192,"num_attention_heads":32,
    "num_hidden_layers":32,"num_key_value_heads":32,"vocab_size":32064,"tie_word_embeddings":false})");
  ASSERT_TRUE(phi3.ok()) << phi3.status().message();
  EXPECT_EQ(CountParams(*phi3).total, 3'821'079'552);
  auto sc2 = FromJson(R"({"model_type":"starcoder2","hidden_size":3072,"intermediate_size":12288,"num_attention_heads":24,
    "num_hidden_layers":30,"num_key_value_heads":2,"vocab_size":49152,"use_bias":true,"norm_epsilon":1e-05})");
  ASSERT_TRUE(sc2.ok()) << sc2.status().message();
  EXPECT_EQ(CountParams(*sc2).total, 3'030'371'328);
}

// DeepSeek-V2-Lite (MLA without q compression, 64 routed + 2 shared experts of 1408, top-6,
// the first layer dense): 15,706,484,224 on its model card.
TEST(Families, DeepseekV2Lite) {
  auto m = FromJson(R"({"model_type":"deepseek_v2","first_k_dense_replace":1,"hidden_size":2048,"intermediate_size":10944,
    "kv_lora_rank":512,"moe_intermediate_size":1408,"moe_layer_freq":1,"n_routed_experts":64,"n_shared_experts":2,
    "num_attention_heads":16,"num_experts_per_tok":6,"num_hidden_layers":27,"num_key_value_heads":16,"q_lora_rank":null,
    "qk_nope_head_dim":128,"qk_rope_head_dim":64,"topk_method":"greedy","v_head_dim":128,"vocab_size":102400,
    "tie_word_embeddings":false})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(CountParams(*m).total, 15'706'484'224);
  EXPECT_EQ(m->attention, AttentionKind::kMla);
}

// InternLM2.5 (internlm/internlm2_5-7b config.json, remote code modeling_internlm2.py): h 4096,
// 32 heads and 8 KV heads of 128, 32 layers, FFN 14336, vocab 92544, bias false, untied.
// Per layer: fused wqkv 4096 x (32 + 2 x 8) x 128, wo 4096 x 4096, SwiGLU w1/w3/w2 3 x 4096 x
// 14336, attention_norm and ffn_norm 2 x 4096; tok_embeddings and output 2 x 92544 x 4096;
// the final norm 4096: 7,737,708,544.
TEST(Families, Internlm2) {
  auto m = FromJson(R"({"architectures":["InternLM2ForCausalLM"],"attn_implementation":"eager",
    "auto_map":{"AutoConfig":"configuration_internlm2.InternLM2Config",
      "AutoModelForCausalLM":"modeling_internlm2.InternLM2ForCausalLM"},"bias":false,"bos_token_id":1,
    "eos_token_id":2,"hidden_act":"silu","hidden_size":4096,"initializer_range":0.02,"intermediate_size":14336,
    "max_position_embeddings":32768,"model_type":"internlm2","num_attention_heads":32,"num_hidden_layers":32,
    "num_key_value_heads":8,"pad_token_id":2,"pretraining_tp":1,"rms_norm_eps":1e-05,
    "rope_scaling":{"type":"dynamic","factor":2.0},"rope_theta":1000000,"tie_word_embeddings":false,
    "torch_dtype":"bfloat16","transformers_version":"4.41.0","use_cache":true,"vocab_size":92544})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const int64_t layer = 4096LL * (32 + 2 * 8) * 128 + 4096LL * 4096 + 3 * 4096LL * 14336 + 2 * 4096;
  EXPECT_EQ(CountParams(*m).total, 32 * layer + 2 * 92544LL * 4096 + 4096);
  EXPECT_EQ(CountParams(*m).total, 7'737'708'544);
  EXPECT_EQ(m->kv_heads, 8);
  EXPECT_FALSE(m->qkv_bias);
  EXPECT_EQ(m->decoder_layer_class, "InternLM2DecoderLayer");
  ExpectReadsBack(*m);
  // InternLM2Config's `bias` defaults to true: wqkv and wo then carry biases.
  auto biased = FromJson(R"({"model_type":"internlm2","hidden_size":256,"intermediate_size":512,"num_hidden_layers":2,
    "num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100})");
  ASSERT_TRUE(biased.ok()) << biased.status().message();
  const int64_t h = 256, kv = 2 * 64;
  const int64_t attn = h * (h + 2 * kv) + (h + 2 * kv) + h * h + h;
  EXPECT_EQ(CountParams(*biased).total, 2 * (attn + 3 * h * 512 + 2 * h) + h + 2 * 100 * h);
  ExpectReadsBack(*biased);
}

// Baichuan2 (baichuan-inc remote code, modeling_baichuan.py of each size): W_pack 3 x h x h and
// o_proj h x h without biases, SwiGLU gate/up/down, two RMSNorms, an untied NormHead, vocab
// 125696. 7B (h 4096, 32 heads, FFN 11008, 32 layers, RoPE): 7,505,973,248. 13B (h 5120, 40
// heads, FFN 13696, 40 layers, ALiBi): 13,896,668,160.
TEST(Families, Baichuan2) {
  auto b7 = FromJson(R"({"architectures":["BaichuanForCausalLM"],"auto_map":{"AutoConfig":
    "configuration_baichuan.BaichuanConfig","AutoModelForCausalLM":"modeling_baichuan.BaichuanForCausalLM"},
    "bos_token_id":1,"eos_token_id":2,"hidden_act":"silu","hidden_size":4096,"initializer_range":0.02,
    "intermediate_size":11008,"max_position_embeddings":4096,"model_max_length":4096,"model_type":"baichuan",
    "num_attention_heads":32,"num_hidden_layers":32,"pad_token_id":0,"rms_norm_eps":1e-06,"_from_model_config":true,
    "tie_word_embeddings":false,"torch_dtype":"bfloat16","transformers_version":"4.29.2","use_cache":true,
    "vocab_size":125696,"z_loss_weight":0})");
  ASSERT_TRUE(b7.ok()) << b7.status().message();
  const int64_t layer7 = 4 * 4096LL * 4096 + 3 * 4096LL * 11008 + 2 * 4096;
  EXPECT_EQ(CountParams(*b7).total, 32 * layer7 + 2 * 125696LL * 4096 + 4096);
  EXPECT_EQ(CountParams(*b7).total, 7'505'973'248);
  EXPECT_EQ(b7->position, PositionKind::kRotary);
  EXPECT_EQ(b7->decoder_layer_class, "DecoderLayer");
  auto b13 = FromJson(R"({"_from_model_config":true,"architectures":["BaichuanForCausalLM"],"bos_token_id":1,
    "eos_token_id":2,"gradient_checkpointing":false,"hidden_act":"silu","hidden_size":5120,"initializer_range":0.02,
    "intermediate_size":13696,"model_max_length":4096,"model_type":"baichuan","num_attention_heads":40,
    "num_hidden_layers":40,"pad_token_id":0,"rms_norm_eps":1e-06,"tie_word_embeddings":false,
    "torch_dtype":"bfloat16","transformers_version":"4.29.2","use_cache":true,"vocab_size":125696,"z_loss_weight":0})");
  ASSERT_TRUE(b13.ok()) << b13.status().message();
  const int64_t layer13 = 4 * 5120LL * 5120 + 3 * 5120LL * 13696 + 2 * 5120;
  EXPECT_EQ(CountParams(*b13).total, 40 * layer13 + 2 * 125696LL * 5120 + 5120);
  EXPECT_EQ(CountParams(*b13).total, 13'896'668'160);
  EXPECT_EQ(b13->position, PositionKind::kAlibi);
  EXPECT_EQ(b13->max_positions, 4096);
  EXPECT_EQ(b13->decoder_layer_class, "BaichuanLayer");
  ExpectReadsBack(*b7);
  ExpectReadsBack(*b13);
}

// OLMo-2 (allenai/OLMo-2-1124-7B config.json, modeling_olmo2.py): h 4096, 32 heads of 128 (MHA),
// FFN 11008, 32 layers, vocab 100352, untied. Per layer: q/k/v/o 4 x 4096 x 4096, q_norm and
// k_norm RMSNorms over the whole projections (2 x 4096), SwiGLU 3 x 4096 x 11008,
// post_attention and post_feedforward norms 2 x 4096; embed and lm_head 2 x 100352 x 4096; the
// final norm: 7,298,617,344. OLMo-1 (allenai/OLMo-7B-hf, modeling_olmo.py): the same shape
// with vocab 50304 and LayerNorms without weight or bias, so no norm parameters:
// 32 x (4 x 4096^2 + 3 x 4096 x 11008) + 2 x 50304 x 4096 = 6,888,095,744.
TEST(Families, Olmo) {
  auto o2 = FromJson(R"({"architectures":["Olmo2ForCausalLM"],"attention_bias":false,"attention_dropout":0.0,
    "eos_token_id":100257,"hidden_act":"silu","hidden_size":4096,"initializer_range":0.02,"intermediate_size":11008,
    "max_position_embeddings":4096,"model_type":"olmo2","num_attention_heads":32,"num_hidden_layers":32,
    "num_key_value_heads":32,"pad_token_id":100277,"rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":500000,
    "tie_word_embeddings":false,"torch_dtype":"float32","transformers_version":"4.47.0.dev0","use_cache":true,
    "vocab_size":100352})");
  ASSERT_TRUE(o2.ok()) << o2.status().message();
  const int64_t layer2 = 4 * 4096LL * 4096 + 2 * 4096 + 3 * 4096LL * 11008 + 2 * 4096;
  EXPECT_EQ(CountParams(*o2).total, 32 * layer2 + 2 * 100352LL * 4096 + 4096);
  EXPECT_EQ(CountParams(*o2).total, 7'298'617'344);
  EXPECT_EQ(CountParams(*o2).attention, 32 * (4 * 4096LL * 4096 + 2 * 4096));
  ExpectReadsBack(*o2);
  // GQA: k_norm spans the KV heads only.
  auto gqa = FromJson(R"({"model_type":"olmo2","hidden_size":512,"intermediate_size":1024,"num_hidden_layers":2,
    "num_attention_heads":8,"num_key_value_heads":2,"vocab_size":100})");
  ASSERT_TRUE(gqa.ok()) << gqa.status().message();
  EXPECT_EQ(AttentionParams(*gqa), 2 * 512 * 512 + 2 * 512 * 128 + 512 + 128);
  ExpectReadsBack(*gqa);

  auto o1 = FromJson(R"({"architectures":["OlmoForCausalLM"],"attention_bias":false,"attention_dropout":0.0,
    "bos_token_id":null,"clip_qkv":null,"eos_token_id":50279,"hidden_act":"silu","hidden_size":4096,
    "initializer_range":0.02,"intermediate_size":11008,"max_position_embeddings":2048,"model_type":"olmo",
    "num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":32,"pad_token_id":1,"rope_scaling":null,
    "rope_theta":10000.0,"tie_word_embeddings":false,"torch_dtype":"float32","use_cache":true,"vocab_size":50304})");
  ASSERT_TRUE(o1.ok()) << o1.status().message();
  EXPECT_EQ(CountParams(*o1).norms, 0);
  EXPECT_EQ(CountParams(*o1).total, 32 * (4 * 4096LL * 4096 + 3 * 4096LL * 11008) + 2 * 50304LL * 4096);
  EXPECT_EQ(CountParams(*o1).total, 6'888'095'744);
  ExpectReadsBack(*o1);
}

// Phi-2 (microsoft/phi-2 config.json, modeling_phi.py): h 2560, 32 heads of 80, FFN 10240, 32
// layers, vocab 51200, partial_rotary_factor 0.4. Per layer: q/k/v/dense with biases
// 4 x (2560^2 + 2560), fc1/fc2 with biases 2 x 2560 x 10240 + 10240 + 2560, one input_layernorm
// (weight, bias) 2 x 2560; embed_tokens 51200 x 2560, lm_head 51200 x 2560 plus its 51200-long
// bias, final_layernorm 2 x 2560: 2,779,683,840. Phi-1.5 (PhiConfig's defaults: h 2048, 24
// layers, FFN 8192): 1,418,270,720.
TEST(Families, Phi) {
  auto phi2 = FromJson(R"({"_name_or_path":"microsoft/phi-2","architectures":["PhiForCausalLM"],
    "attention_dropout":0.0,"bos_token_id":50256,"embd_pdrop":0.0,"eos_token_id":50256,"hidden_act":"gelu_new",
    "hidden_size":2560,"initializer_range":0.02,"intermediate_size":10240,"layer_norm_eps":1e-05,
    "max_position_embeddings":2048,"model_type":"phi","num_attention_heads":32,"num_hidden_layers":32,
    "num_key_value_heads":32,"partial_rotary_factor":0.4,"qk_layernorm":false,"resid_pdrop":0.1,"rope_scaling":null,
    "rope_theta":10000.0,"tie_word_embeddings":false,"torch_dtype":"float16","transformers_version":"4.37.0",
    "use_cache":true,"vocab_size":51200})");
  ASSERT_TRUE(phi2.ok()) << phi2.status().message();
  const int64_t h = 2560, f = 10240, V = 51200;
  const int64_t layer = 4 * (h * h + h) + (2 * h * f + f + h) + 2 * h;
  const ParamCounts c = CountParams(*phi2);
  EXPECT_EQ(c.head, V * h + V);
  EXPECT_EQ(c.total, 32 * layer + 2 * V * h + V + 2 * h);
  EXPECT_EQ(c.total, 2'779'683'840);
  EXPECT_TRUE(phi2->parallel_residual);
  EXPECT_EQ(phi2->dtype, Dtype::kFp16);
  ExpectReadsBack(*phi2);
  auto phi15 = FromJson(R"({"model_type":"phi"})");
  ASSERT_TRUE(phi15.ok()) << phi15.status().message();
  EXPECT_EQ(CountParams(*phi15).total, 1'418'270'720);
  // Per-head q/k LayerNorms have no ModelSpec term: refused rather than miscounted.
  auto qk = FromJson(R"({"model_type":"phi","qk_layernorm":true})");
  ASSERT_FALSE(qk.ok());
  EXPECT_NE(qk.status().message().find("qk_layernorm: true"), std::string::npos) << qk.status().message();
}

// Command-R (CohereForAI/c4ai-command-r-v01 config.json, modeling_cohere.py): h 8192, 64 heads
// of 128 (MHA), FFN 22528, 40 layers, vocab 256000, the head tied to the embedding. Per layer:
// q/k/v/o 4 x 8192^2, SwiGLU 3 x 8192 x 22528, one bias-free LayerNorm 8192 feeding attention
// and MLP in parallel; embed 256000 x 8192; the final norm: 34,980,831,232. Command R+
// (c4ai-command-r-plus: h 12288, 96 heads and 8 KV heads of 128, FFN 33792, 64 layers,
// use_qk_norm) adds q_norm and k_norm weights of 96 x 128 and 8 x 128 per layer:
// 103,810,674,688 (the model card's "104B").
TEST(Families, Cohere) {
  auto r = FromJson(R"({"architectures":["CohereForCausalLM"],"attention_bias":false,"attention_dropout":0.0,
    "bos_token_id":5,"eos_token_id":255001,"hidden_act":"silu","hidden_size":8192,"initializer_range":0.02,
    "intermediate_size":22528,"layer_norm_eps":1e-05,"logit_scale":0.0625,"max_position_embeddings":8192,
    "model_type":"cohere","num_attention_heads":64,"num_hidden_layers":40,"num_key_value_heads":64,
    "pad_token_id":0,"rope_theta":8000000.0,"torch_dtype":"float16","transformers_version":"4.38.2",
    "use_cache":true,"use_qk_norm":false,"vocab_size":256000})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const int64_t layer = 4 * 8192LL * 8192 + 3 * 8192LL * 22528 + 8192;
  EXPECT_EQ(CountParams(*r).total, 40 * layer + 256000LL * 8192 + 8192);
  EXPECT_EQ(CountParams(*r).total, 34'980'831'232);
  EXPECT_TRUE(r->tied_embeddings);
  EXPECT_TRUE(r->parallel_residual);
  ExpectReadsBack(*r);
  auto plus = FromJson(R"({"model_type":"cohere","hidden_size":12288,"intermediate_size":33792,"num_hidden_layers":64,
    "num_attention_heads":96,"num_key_value_heads":8,"vocab_size":256000,"logit_scale":0.8333333333333334,
    "use_qk_norm":true,"max_position_embeddings":131072})");
  ASSERT_TRUE(plus.ok()) << plus.status().message();
  const int64_t attn = 2 * 12288LL * 12288 + 2 * 12288LL * 1024 + 96 * 128 + 8 * 128;
  EXPECT_EQ(CountParams(*plus).total, 64 * (attn + 3 * 12288LL * 33792 + 12288) + 256000LL * 12288 + 12288);
  EXPECT_EQ(CountParams(*plus).total, 103'810'674'688);
  ExpectReadsBack(*plus);
}

TEST(Dtype, AcceptsDtypeAndTorchDtype) {
  auto a = FromJson(R"({"model_type":"llama","dtype":"float16"})");
  auto b = FromJson(R"({"model_type":"llama","torch_dtype":"float32"})");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->dtype, Dtype::kFp16);
  EXPECT_EQ(b->dtype, Dtype::kFp32);
}

// GPT-J-6B (EleutherAI/gpt-j-6b config.json, transformers modeling_gptj.py): 28 layers of h
// 4096 and 16 heads; q/k/v/out without biases, fc_in/fc_out 4h with biases, one LayerNorm per
// layer feeding attention and MLP in parallel; untied lm_head with a bias; vocab 50400.
// Per layer 4h^2 + 8h^2 + 4h + h + 2h; wte, ln_f and the head: 6,050,882,784, the count
// transformers builds. CodeGen-6B (Salesforce/codegen-6B-mono: 33 layers, vocab 51200, fused
// qkv_proj of the same size): 7,064,213,504. Neither modeling file attends through SDPA.
TEST(Families, GptjAndCodegen) {
  auto m = FromJson(R"({"activation_function":"gelu_new","architectures":["GPTJForCausalLM"],"attn_pdrop":0.0,
    "bos_token_id":50256,"embd_pdrop":0.0,"eos_token_id":50256,"gradient_checkpointing":false,
    "initializer_range":0.02,"layer_norm_epsilon":1e-05,"model_type":"gptj","n_embd":4096,"n_head":16,
    "n_inner":null,"n_layer":28,"n_positions":2048,"resid_pdrop":0.0,"rotary":true,"rotary_dim":64,
    "scale_attn_weights":true,"summary_activation":null,"summary_first_dropout":0.1,
    "summary_proj_to_labels":true,"summary_type":"cls_index","summary_use_proj":true,
    "tie_word_embeddings":false,"tokenizer_class":"GPT2Tokenizer","transformers_version":"4.18.0.dev0",
    "use_cache":true,"vocab_size":50400})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const int64_t h = 4096;
  const int64_t layer = 4 * h * h + 2 * h * 4 * h + 4 * h + h + 2 * h;
  EXPECT_EQ(CountParams(*m).total, 28 * layer + 50400 * h + 2 * h + 50400 * h + 50400);
  EXPECT_EQ(CountParams(*m).total, 6'050'882'784);
  EXPECT_TRUE(m->parallel_residual);
  EXPECT_EQ(m->norms_per_layer, 1);
  EXPECT_EQ(m->attention_impl, AttentionImpl::kEager);
  EXPECT_EQ(m->decoder_layer_class, "GPTJBlock");
  ExpectReadsBack(*m);
  auto c = FromJson(R"({"activation_function":"gelu_new","architectures":["CodeGenForCausalLM"],"attn_pdrop":0.0,"bos_token_id":1,
    "embd_pdrop":0.0,"eos_token_id":50256,"gradient_checkpointing":false,"initializer_range":0.02,
    "layer_norm_epsilon":1e-05,"model_type":"codegen","n_ctx":2048,"n_embd":4096,"n_head":16,"n_inner":null,
    "n_layer":33,"n_positions":2048,"resid_pdrop":0.0,"rotary_dim":64,"scale_attn_weights":true,
    "tie_word_embeddings":false,"tokenizer_class":"GPT2Tokenizer","torch_dtype":"float16",
    "transformers_version":"4.21.0.dev0","use_cache":true,"vocab_size":51200})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(CountParams(*c).total, 7'064'213'504);
  EXPECT_EQ(c->decoder_layer_class, "CodeGenBlock");
  ExpectReadsBack(*c);
}

// GPT-Neo 2.7B (EleutherAI/gpt-neo-2.7B config.json, modeling_gpt_neo.py): 32 layers of h 2560,
// 20 heads, q/k/v without biases and out_proj with one, a 4h GELU MLP with biases, two
// LayerNorms, 2,048 learned positions, the head tied: 2,651,307,520. Its local layers
// (attention_types) mask to window_size keys but compute all scores, eagerly.
TEST(Families, GptNeo) {
  auto m = FromJson(R"({"activation_function":"gelu_new","architectures":["GPTNeoForCausalLM"],"attention_dropout":0,
    "attention_layers":["global","local","global","local","global","local","global","local","global","local",
    "global","local","global","local","global","local","global","local","global","local","global","local",
    "global","local","global","local","global","local","global","local","global","local"],
    "attention_types":[[["global","local"],16]],"bos_token_id":50256,"embed_dropout":0,"eos_token_id":50256,
    "gradient_checkpointing":false,"hidden_size":2560,"initializer_range":0.02,"intermediate_size":null,
    "layer_norm_epsilon":1e-05,"max_position_embeddings":2048,"model_type":"gpt_neo","num_heads":20,
    "num_layers":32,"resid_dropout":0,"summary_activation":null,"summary_first_dropout":0.1,
    "summary_proj_to_labels":true,"summary_type":"cls_index","summary_use_proj":true,
    "tokenizer_class":"GPT2Tokenizer","transformers_version":"4.5.0.dev0","use_cache":true,"vocab_size":50257,
    "window_size":256})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const int64_t h = 2560;
  const int64_t layer = 4 * h * h + h + 8 * h * h + 4 * h + h + 4 * h;
  EXPECT_EQ(CountParams(*m).total, 32 * layer + 50257 * h + 2048 * h + 2 * h);
  EXPECT_EQ(CountParams(*m).total, 2'651'307'520);
  EXPECT_EQ(m->sliding_window, 0);
  EXPECT_EQ(m->attention_impl, AttentionImpl::kEager);
  ExpectReadsBack(*m);
}

// StarCoder (bigcode/starcoder config.json, modeling_gpt_bigcode.py): 40 layers of h 6144, 48
// heads sharing one KV head (multi_query), c_attn h x (h + 2 x 128) and every Linear biased,
// a 24,576-wide MLP, 8,192 learned positions, vocab 49152, tied: 15,517,456,384.
TEST(Families, GptBigCode) {
  auto m = FromJson(R"({"activation_function":"gelu_pytorch_tanh","architectures":["GPTBigCodeForCausalLM"],
    "attention_softmax_in_fp32":true,"attn_pdrop":0.1,"bos_token_id":0,"embd_pdrop":0.1,"eos_token_id":0,
    "inference_runner":0,"initializer_range":0.02,"layer_norm_epsilon":1e-05,"max_batch_size":null,
    "max_sequence_length":null,"model_type":"gpt_bigcode","multi_query":true,"n_embd":6144,"n_head":48,
    "n_inner":24576,"n_layer":40,"n_positions":8192,"pad_key_length":true,"pre_allocate_kv_cache":false,
    "resid_pdrop":0.1,"scale_attention_softmax_in_fp32":true,"scale_attn_weights":true,
    "summary_activation":null,"summary_first_dropout":0.1,"summary_proj_to_labels":true,
    "summary_type":"cls_index","summary_use_proj":true,"torch_dtype":"float32","transformers_version":"4.28.1",
    "use_cache":true,"validate_runner_input":true,"vocab_size":49152})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const int64_t h = 6144, kv = 128;
  const int64_t layer = h * (h + 2 * kv) + (h + 2 * kv) + h * h + h + 2 * h * 24576 + 24576 + h + 4 * h;
  EXPECT_EQ(CountParams(*m).total, 40 * layer + 49152 * h + 8192 * h + 2 * h);
  EXPECT_EQ(CountParams(*m).total, 15'517'456'384);
  EXPECT_EQ(m->kv_heads, 1);
  EXPECT_EQ(m->dtype, Dtype::kFp32);
  EXPECT_EQ(m->attention_impl, AttentionImpl::kUnstated);
  ExpectReadsBack(*m);
  // multi_query false: c_attn is 3h wide, every head its own KV.
  auto mha = FromJson(R"({"model_type":"gpt_bigcode","n_embd":256,"n_head":4,"n_layer":2,"multi_query":false,"vocab_size":100})");
  ASSERT_TRUE(mha.ok()) << mha.status().message();
  EXPECT_EQ(mha->kv_heads, 4);
  EXPECT_EQ(CountParams(*mha).total, 2 * (4 * 256 * 256 + 4 * 256 + 8 * 256 * 256 + 5 * 256 + 4 * 256) + 100 * 256 + 1024 * 256 + 2 * 256);
  ExpectReadsBack(*mha);
}

// Llama-shaped families, each with a published config.json and the count transformers 5.23
// builds from it on the meta device.
// GLM-4-9B in transformers' format (THUDM/glm-4-9b-chat-hf): q/k/v biased, o_proj not, the same
// 9,399,951,360 as the remote-code chatglm config. GLM-4-32B-0414 (glm4) adds two post-norms
// per layer: 32,566,487,552.
TEST(Families, GlmAndGlm4) {
  auto g = FromJson(R"({"model_type":"glm","architectures":["GlmForCausalLM"],"attention_bias":true,"attention_dropout":0.0,
    "eos_token_id":[151329,151336,151338],"head_dim":128,"hidden_act":"silu","hidden_size":4096,
    "initializer_range":0.02,"intermediate_size":13696,"max_position_embeddings":131072,
    "num_attention_heads":32,"num_hidden_layers":40,"num_key_value_heads":2,"pad_token_id":151329,
    "partial_rotary_factor":0.5,"rms_norm_eps":1.5625e-07,"rope_theta":10000.0,"tie_word_embeddings":false,
    "torch_dtype":"bfloat16","transformers_version":"4.46.0.dev0","use_cache":true,"vocab_size":151552})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(CountParams(*g).total, 9'399'951'360);
  EXPECT_TRUE(g->qkv_bias);
  EXPECT_FALSE(g->o_bias);
  ExpectReadsBack(*g);
  auto g4 = FromJson(R"({"model_type":"glm4","architectures":["Glm4ForCausalLM"],"attention_bias":true,"attention_dropout":0.0,
    "eos_token_id":[151329,151336,151338],"head_dim":128,"hidden_act":"silu","hidden_size":6144,
    "initializer_range":0.02,"intermediate_size":23040,"max_position_embeddings":32768,
    "num_attention_heads":48,"num_hidden_layers":61,"num_key_value_heads":2,"pad_token_id":151329,
    "partial_rotary_factor":0.5,"rms_norm_eps":1e-05,"rope_theta":10000.0,"tie_word_embeddings":false,
    "torch_dtype":"bfloat16","transformers_version":"4.51.3","use_cache":true,"vocab_size":151552})");
  ASSERT_TRUE(g4.ok()) << g4.status().message();
  const int64_t h = 6144, q = 48 * 128, kv = 2 * 128;
  const int64_t layer = h * (q + 2 * kv) + q + 2 * kv + q * h + 3 * h * 23040 + 4 * h;
  EXPECT_EQ(CountParams(*g4).total, 61 * layer + 2 * 151552 * h + h);
  EXPECT_EQ(CountParams(*g4).total, 32'566'487'552);
  EXPECT_EQ(g4->decoder_layer_class, "Glm4DecoderLayer");
  ExpectReadsBack(*g4);
}

// StableLM 2: the 1.6B biases q/k/v and runs attention then MLP behind two LayerNorms
// (1,644,515,328); the 12B runs them in parallel behind one, with per-head q/k LayerNorms and 8
// KV heads (12,143,185,920).
TEST(Families, StableLm) {
  auto s = FromJson(R"({"model_type":"stablelm","architectures":["StableLmForCausalLM"],"bos_token_id":100257,
    "eos_token_id":100257,"hidden_act":"silu","hidden_dropout":0.0,"hidden_size":2048,"initializer_range":0.02,
    "intermediate_size":5632,"layer_norm_eps":1e-05,"max_position_embeddings":4096,"num_attention_heads":32,
    "num_hidden_layers":24,"num_key_value_heads":32,"partial_rotary_factor":0.25,"qk_layernorm":false,
    "rope_pct":0.25,"rope_theta":10000,"tie_word_embeddings":false,"torch_dtype":"float16","use_cache":true,
    "use_parallel_residual":false,"use_qkv_bias":true,"vocab_size":100352,"attention_dropout":0.0})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  const int64_t h = 2048;
  const int64_t layer = 4 * h * h + 3 * h + 3 * h * 5632 + 4 * h;
  EXPECT_EQ(CountParams(*s).total, 24 * layer + 2 * 100352 * h + 2 * h);
  EXPECT_EQ(CountParams(*s).total, 1'644'515'328);
  EXPECT_EQ(s->dtype, Dtype::kFp16);
  ExpectReadsBack(*s);
  auto b = FromJson(R"({"model_type":"stablelm","architectures":["StableLmForCausalLM"],"bos_token_id":100257,
    "eos_token_id":100257,"hidden_act":"silu","hidden_dropout":0.0,"hidden_size":5120,"initializer_range":0.01,
    "intermediate_size":13824,"layer_norm_eps":1e-05,"max_position_embeddings":4096,"num_attention_heads":32,
    "num_hidden_layers":40,"num_key_value_heads":8,"partial_rotary_factor":0.25,"qk_layernorm":true,
    "rope_theta":10000,"tie_word_embeddings":false,"torch_dtype":"bfloat16","use_cache":true,
    "use_parallel_residual":true,"use_qkv_bias":false,"vocab_size":100352,"attention_dropout":0.0})");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(CountParams(*b).total, 12'143'185'920);
  EXPECT_TRUE(b->parallel_residual);
  EXPECT_EQ(b->norms_per_layer, 1);
  EXPECT_TRUE(b->qk_norm_whole);
  ExpectReadsBack(*b);
}

// Command R7B (cohere2): Cohere's parallel block, sliding windows of 4,096 in three of every four
// layers (sliding_window_pattern 4): 8,028,033,024. EXAONE 4.0 32B: per-head q/k norms, post-norms,
// "LLLG" beside layer_types: 32,003,216,384. OLMo 3 7B: OLMo-2's layer with layer_types' windows:
// 7,298,011,136. SmolLM3-3B: full attention everywhere (use_sliding_window false): 3,075,098,624.
TEST(Families, SlidingWindowFamilies) {
  auto c = FromJson(R"({"model_type":"cohere2","architectures":["Cohere2ForCausalLM"],"attention_bias":false,
    "attention_dropout":0.0,"bos_token_id":5,"eos_token_id":255001,"head_dim":128,"hidden_act":"silu",
    "hidden_size":4096,"initializer_range":0.02,"intermediate_size":14336,"layer_norm_eps":1e-05,
    "logit_scale":0.25,"max_position_embeddings":132096,"num_attention_heads":32,"num_hidden_layers":32,
    "num_key_value_heads":8,"order_of_interleaved_layers":"local_attn_first","pad_token_id":0,
    "position_embedding_type":"rope_gptj","rope_scaling":null,"rope_theta":50000,"rotary_pct":1.0,
    "sliding_window":4096,"sliding_window_pattern":4,"torch_dtype":"bfloat16",
    "transformers_version":"4.48.0.dev0","use_cache":true,"use_embedding_sharing":true,
    "use_gated_activation":true,"vocab_size":256000})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(CountParams(*c).total, 8'028'033'024);
  EXPECT_EQ(c->sliding_window, 4096);
  EXPECT_EQ(c->sliding_window_pattern, 4);
  EXPECT_TRUE(c->parallel_residual);
  ExpectReadsBack(*c);
  auto e = FromJson(R"({"model_type":"exaone4","architectures":["Exaone4ForCausalLM"],"attention_dropout":0.0,"bos_token_id":1,
    "eos_token_id":361,"head_dim":128,"hidden_act":"silu","hidden_size":5120,"initializer_range":0.02,
    "intermediate_size":27392,"max_position_embeddings":131072,"num_attention_heads":40,"num_hidden_layers":64,
    "num_key_value_heads":8,"pad_token_id":0,"rms_norm_eps":1e-05,"rope_theta":1000000,"sliding_window":4096,
    "sliding_window_pattern":"LLLG","tie_word_embeddings":false,"torch_dtype":"bfloat16",
    "transformers_version":"4.54.0","use_cache":true,"vocab_size":102400,"layer_types":["sliding_attention",
    "sliding_attention","sliding_attention","full_attention","sliding_attention","sliding_attention",
    "sliding_attention","full_attention","sliding_attention","sliding_attention","sliding_attention",
    "full_attention","sliding_attention","sliding_attention","sliding_attention","full_attention",
    "sliding_attention","sliding_attention","sliding_attention","full_attention","sliding_attention",
    "sliding_attention","sliding_attention","full_attention","sliding_attention","sliding_attention",
    "sliding_attention","full_attention","sliding_attention","sliding_attention","sliding_attention",
    "full_attention","sliding_attention","sliding_attention","sliding_attention","full_attention",
    "sliding_attention","sliding_attention","sliding_attention","full_attention","sliding_attention",
    "sliding_attention","sliding_attention","full_attention","sliding_attention","sliding_attention",
    "sliding_attention","full_attention","sliding_attention","sliding_attention","sliding_attention",
    "full_attention","sliding_attention","sliding_attention","sliding_attention","full_attention",
    "sliding_attention","sliding_attention","sliding_attention","full_attention","sliding_attention",
    "sliding_attention","sliding_attention","full_attention"]})");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(CountParams(*e).total, 32'003'216'384);
  EXPECT_TRUE(e->qk_norm);
  EXPECT_EQ(e->sliding_window_pattern, 4);
  ExpectReadsBack(*e);
  auto o = FromJson(R"({"model_type":"olmo3","architectures":["Olmo3ForCausalLM"],"attention_bias":false,"attention_dropout":0.0,
    "eos_token_id":100257,"hidden_act":"silu","hidden_size":4096,"initializer_range":0.02,
    "intermediate_size":11008,"layer_types":["sliding_attention","sliding_attention","sliding_attention",
    "full_attention","sliding_attention","sliding_attention","sliding_attention","full_attention",
    "sliding_attention","sliding_attention","sliding_attention","full_attention","sliding_attention",
    "sliding_attention","sliding_attention","full_attention","sliding_attention","sliding_attention",
    "sliding_attention","full_attention","sliding_attention","sliding_attention","sliding_attention",
    "full_attention","sliding_attention","sliding_attention","sliding_attention","full_attention",
    "sliding_attention","sliding_attention","sliding_attention","full_attention"],
    "max_position_embeddings":65536,"num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":32,
    "pad_token_id":100277,"rms_norm_eps":1e-06,"rope_theta":500000,"sliding_window":4096,
    "tie_word_embeddings":false,"torch_dtype":"bfloat16","transformers_version":"4.57.0","use_cache":true,
    "vocab_size":100278})");
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(CountParams(*o).total, 7'298'011'136);
  EXPECT_EQ(o->sliding_window_pattern, 4);
  ExpectReadsBack(*o);
  auto sm = FromJson(R"({"model_type":"smollm3","architectures":["SmolLM3ForCausalLM"],"attention_bias":false,
    "attention_dropout":0.0,"bos_token_id":null,"eos_token_id":128012,"hidden_act":"silu","hidden_size":2048,
    "initializer_range":0.02,"intermediate_size":11008,"max_position_embeddings":65536,"max_window_layers":28,
    "mlp_bias":false,"no_rope_layer_interval":4,"no_rope_layers":[1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,1,0,1,1,
    1,0,1,1,1,0,1,1,1,0,1,1,1,0],"num_attention_heads":16,"num_hidden_layers":36,"num_key_value_heads":4,
    "pad_token_id":128004,"pretraining_tp":2,"rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":5000000.0,
    "sliding_window":null,"torch_dtype":"bfloat16","transformers_version":"4.54.0.dev0","use_cache":false,
    "use_sliding_window":false,"vocab_size":128256})");
  ASSERT_TRUE(sm.ok()) << sm.status().message();
  EXPECT_EQ(CountParams(*sm).total, 3'075'098'624);
  EXPECT_EQ(sm->sliding_window, 0);
  ExpectReadsBack(*sm);
  // The window defaults to 4,096 when the key is absent, and is off when null; "LLG" means
  // every third layer global; layer_types that do not interleave so are refused, by line.
  auto absent = FromJson(R"({"model_type":"olmo3","hidden_size":256,"intermediate_size":512,"num_hidden_layers":6,
    "num_attention_heads":4,"vocab_size":100})");
  ASSERT_TRUE(absent.ok()) << absent.status().message();
  EXPECT_EQ(absent->sliding_window, 4096);
  auto null = FromJson(R"({"model_type":"cohere2","hidden_size":256,"intermediate_size":512,"num_hidden_layers":6,
    "num_attention_heads":4,"vocab_size":100,"sliding_window":null})");
  ASSERT_TRUE(null.ok()) << null.status().message();
  EXPECT_EQ(null->sliding_window, 0);
  auto llg = FromJson(R"({"model_type":"exaone4","hidden_size":256,"intermediate_size":512,"num_hidden_layers":6,
    "num_attention_heads":4,"vocab_size":100,"sliding_window_pattern":"LLG"})");
  ASSERT_TRUE(llg.ok()) << llg.status().message();
  EXPECT_EQ(llg->sliding_window_pattern, 3);
  ExpectReadsBack(*llg);
  auto odd = FromJson(R"({"model_type":"olmo3","hidden_size":256,"intermediate_size":512,"num_hidden_layers":4,
    "num_attention_heads":4,"vocab_size":100,
    "layer_types":["sliding_attention","full_attention","full_attention","sliding_attention"]})");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("test.json:3:"), std::string::npos) << odd.status().message();
  EXPECT_NE(odd.status().message().find("every 2th layer"), std::string::npos) << odd.status().message();
}

// Seed-OSS-36B: q/k/v biased, o_proj not (attention_out_bias false): 36,151,104,512. ERNIE 4.5
// 0.3B, tied, no biases: 360,748,032.
TEST(Families, SeedOssAndErnie) {
  auto s = FromJson(R"({"model_type":"seed_oss","architectures":["SeedOssForCausalLM"],"attention_bias":true,
    "attention_dropout":0.1,"attention_out_bias":false,"bos_token_id":0,"pad_token_id":1,"eos_token_id":2,
    "head_dim":128,"hidden_act":"silu","hidden_size":5120,"initializer_range":0.02,"intermediate_size":27648,
    "max_position_embeddings":524288,"mlp_bias":false,"num_attention_heads":80,"num_hidden_layers":64,
    "num_key_value_heads":8,"residual_dropout":0.1,"rms_norm_eps":1e-06,"rope_scaling":{"rope_type":"default"},
    "rope_theta":10000000.0,"tie_word_embeddings":false,"torch_dtype":"bfloat16",
    "transformers_version":"4.55.0","use_cache":true,"vocab_size":155136})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(CountParams(*s).total, 36'151'104'512);
  EXPECT_TRUE(s->qkv_bias);
  EXPECT_FALSE(s->o_bias);
  ExpectReadsBack(*s);
  auto e = FromJson(R"({"model_type":"ernie4_5","architectures":["Ernie4_5ForCausalLM"],"bos_token_id":1,"eos_token_id":2,
    "head_dim":128,"hidden_act":"silu","hidden_size":1024,"intermediate_size":3072,
    "max_position_embeddings":131072,"num_attention_heads":16,"num_hidden_layers":18,"num_key_value_heads":2,
    "pad_token_id":0,"rms_norm_eps":1e-05,"rope_theta":500000,"tie_word_embeddings":true,
    "torch_dtype":"bfloat16","use_bias":false,"use_cache":false,"vocab_size":103424})");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(CountParams(*e).total, 360'748'032);
  ExpectReadsBack(*e);
}

// Phi-3.5-MoE: 16 experts of 6,400, top-2, every projection and the head biased, LayerNorms
// with bias: 41,873,153,344 (6.6B active on its card). DBRX: 16 experts of 10,752, top-4, 8 KV
// heads in attn_config, bias-free LayerNorms: 131,596,523,520.
TEST(Families, PhimoeAndDbrx) {
  auto p = FromJson(R"({"model_type":"phimoe","architectures":["PhiMoEForCausalLM"],"attention_bias":true,"attention_dropout":0.0,
    "bos_token_id":1,"eos_token_id":32000,"hidden_act":"silu","hidden_dropout":0.0,"hidden_size":4096,
    "initializer_range":0.02,"input_jitter_noise":0.01,"intermediate_size":6400,"lm_head_bias":true,
    "max_position_embeddings":131072,"num_attention_heads":32,"num_experts_per_tok":2,"num_hidden_layers":32,
    "num_key_value_heads":8,"num_local_experts":16,"original_max_position_embeddings":4096,
    "output_router_logits":false,"rms_norm_eps":1e-05,"rope_theta":10000.0,"router_aux_loss_coef":0.0,
    "router_jitter_noise":0.01,"sliding_window":131072,"tie_word_embeddings":false,"torch_dtype":"bfloat16",
    "transformers_version":"4.43.3","use_cache":true,"vocab_size":32064})");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(CountParams(*p).total, 41'873'153'344);
  EXPECT_EQ(p->experts, 16);
  EXPECT_TRUE(p->head_bias);
  ExpectReadsBack(*p);
  auto d = FromJson(R"({"model_type":"dbrx","architectures":["DbrxForCausalLM"],"attn_config":{"clip_qkv":8,"kv_n_heads":8,
    "model_type":"","rope_theta":500000},"d_model":6144,"emb_pdrop":0.0,"ffn_config":{"ffn_hidden_size":10752,
    "model_type":"","moe_jitter_eps":0,"moe_loss_weight":0.05,"moe_num_experts":16,"moe_top_k":4},
    "initializer_range":0.02,"max_seq_len":32768,"n_heads":48,"n_layers":40,"output_router_logits":false,
    "resid_pdrop":0.0,"router_aux_loss_coef":0.05,"tie_word_embeddings":false,"torch_dtype":"bfloat16",
    "transformers_version":"4.38.2","use_cache":true,"vocab_size":100352})");
  ASSERT_TRUE(d.ok()) << d.status().message();
  const int64_t h = 6144;
  const int64_t layer = h * (h + 2 * 8 * 128) + h * h + 16 * 3 * h * 10752 + 16 * h + 2 * h;
  EXPECT_EQ(CountParams(*d).total, 40 * layer + 2 * 100352 * h + h);
  EXPECT_EQ(CountParams(*d).total, 131'596'523'520);
  EXPECT_EQ(d->kv_heads, 8);
  EXPECT_EQ(d->experts_per_token, 4);
  ExpectReadsBack(*d);
}

// Remote-code families of 2023-24, counted from their modeling files (transformers cannot
// build them without the checkpoint's code).
// Qwen-7B (Qwen/Qwen-7B modeling_qwen.py): c_attn 3h x h with bias, c_proj h x h, a SwiGLU MLP
// of intermediate_size / 2 = 11,008 (w1, w2, c_proj), two RMSNorms; wte and the untied lm_head
// of 151,936 rows: 7,721,324,544 (the "7.7B" of Qwen's report).
TEST(Families, Qwen1) {
  auto m = FromJson(R"({"architectures":["QWenLMHeadModel"],"auto_map":{"AutoConfig":"configuration_qwen.QWenConfig",
    "AutoModelForCausalLM":"modeling_qwen.QWenLMHeadModel"},"attn_dropout_prob":0.0,"bf16":false,
    "emb_dropout_prob":0.0,"fp16":false,"fp32":false,"hidden_size":4096,"initializer_range":0.02,
    "intermediate_size":22016,"kv_channels":128,"layer_norm_epsilon":1e-06,"max_position_embeddings":32768,
    "model_type":"qwen","no_bias":true,"num_attention_heads":32,"num_hidden_layers":32,"onnx_safe":null,
    "rotary_emb_base":10000,"rotary_pct":1.0,"scale_attn_weights":true,"seq_length":8192,
    "softmax_in_fp32":false,"tie_word_embeddings":false,"tokenizer_class":"QWenTokenizer",
    "transformers_version":"4.32.0","use_cache":true,"use_dynamic_ntk":true,"use_flash_attn":"auto",
    "use_logn_attn":true,"vocab_size":151936})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const int64_t h = 4096;
  const int64_t layer = 3 * h * h + 3 * h + h * h + 3 * h * 11008 + 2 * h;
  EXPECT_EQ(CountParams(*m).total, 32 * layer + 2 * 151936 * h + h);
  EXPECT_EQ(CountParams(*m).total, 7'721'324'544);
  EXPECT_EQ(m->intermediate, 11008);
  EXPECT_EQ(m->decoder_layer_class, "QWenBlock");
  ExpectReadsBack(*m);
  auto odd = FromJson(R"({"model_type":"qwen","intermediate_size":22015})");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("expected an even number"), std::string::npos) << odd.status().message();
}

// InternLM-7B (modeling_internlm.py): llama's layer with q/k/v/o biased (bias true), 32 heads of
// 128, FFN 11,008, vocab 103,168, untied: 7,321,948,160.
TEST(Families, Internlm1) {
  auto m = FromJson(R"({"architectures":["InternLMForCausalLM"],"auto_map":{"AutoConfig":"configuration_internlm.InternLMConfig",
    "AutoModel":"modeling_internlm.InternLMForCausalLM",
    "AutoModelForCausalLM":"modeling_internlm.InternLMForCausalLM"},"bias":true,"bos_token_id":1,
    "eos_token_id":2,"hidden_act":"silu","hidden_size":4096,"initializer_range":0.02,"intermediate_size":11008,
    "max_position_embeddings":2048,"model_type":"internlm","num_attention_heads":32,"num_hidden_layers":32,
    "pad_token_id":0,"rms_norm_eps":1e-06,"tie_word_embeddings":false,"torch_dtype":"float16",
    "transformers_version":"4.33.1","use_cache":true,"vocab_size":103168})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const int64_t h = 4096;
  EXPECT_EQ(CountParams(*m).total, 32 * (4 * h * h + 4 * h + 3 * h * 11008 + 2 * h) + 2 * 103168 * h + h);
  EXPECT_EQ(CountParams(*m).total, 7'321'948'160);
  EXPECT_EQ(m->dtype, Dtype::kFp16);
  ExpectReadsBack(*m);
}

// MiniCPM-2B (openbmb/MiniCPM-2B-sft-bf16): llama's layer, 36 heads of 64 over h 2,304, FFN
// 5,760, vocab 122,753, the head tied (MiniCPMConfig's default; the config does not say):
// 2,724,880,896 ("2.4B non-embedding" on its card, plus 282,822,912 of embedding).
TEST(Families, MiniCpm) {
  auto m = FromJson(R"({"_name_or_path":"openbmb/CPM-2B","architectures":["MiniCPMForCausalLM"],
    "auto_map":{"AutoConfig":"configuration_minicpm.MiniCPMConfig","AutoModel":"modeling_minicpm.MiniCPMModel",
    "AutoModelForCausalLM":"modeling_minicpm.MiniCPMForCausalLM"},"bos_token_id":1,"eos_token_id":2,
    "hidden_act":"silu","hidden_size":2304,"initializer_range":0.1,"intermediate_size":5760,
    "max_position_embeddings":4096,"num_attention_heads":36,"num_hidden_layers":40,"num_key_value_heads":36,
    "rms_norm_eps":1e-05,"rope_scaling":null,"torch_dtype":"bfloat16","transformers_version":"4.36.0",
    "use_cache":true,"vocab_size":122753,"scale_emb":12,"dim_model_base":256,"scale_depth":1.4,
    "model_type":"minicpm"})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(CountParams(*m).total, 2'724'880'896);
  EXPECT_TRUE(m->tied_embeddings);
  ExpectReadsBack(*m);
}

// DeepSeek-MoE 16B (deepseek-ai/deepseek-moe-16b-base modeling_deepseek.py): the first layer
// dense (FFN 10,944), then 64 routed experts of 1,408 (top-6) and a shared MLP of 2 x 1,408
// behind a bias-free gate in 27 layers; MHA of 16 heads over h 2,048: 16,375,728,128 total,
// 2,828,650,496 active ("16.4B", "2.8B" on its card). With no n_routed_experts it is dense.
TEST(Families, DeepseekMoe) {
  auto m = FromJson(R"({"architectures":["DeepseekForCausalLM"],"attention_bias":false,"attention_dropout":0.0,
    "auto_map":{"AutoConfig":"configuration_deepseek.DeepseekConfig",
    "AutoModel":"modeling_deepseek.DeepseekModel",
    "AutoModelForCausalLM":"modeling_deepseek.DeepseekForCausalLM"},"aux_loss_alpha":0.001,
    "bos_token_id":100000,"eos_token_id":100001,"first_k_dense_replace":1,"hidden_act":"silu",
    "hidden_size":2048,"initializer_range":0.02,"intermediate_size":10944,"max_position_embeddings":4096,
    "model_type":"deepseek","moe_intermediate_size":1408,"moe_layer_freq":1,"n_routed_experts":64,
    "n_shared_experts":2,"norm_topk_prob":false,"num_attention_heads":16,"num_experts_per_tok":6,
    "num_hidden_layers":28,"num_key_value_heads":16,"pretraining_tp":1,"rms_norm_eps":1e-06,
    "rope_scaling":null,"rope_theta":10000,"scoring_func":"softmax","seq_aux":true,"tie_word_embeddings":false,
    "torch_dtype":"bfloat16","transformers_version":"4.36.2","use_cache":true,"vocab_size":102400})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const int64_t h = 2048, attn = 4 * h * h, e = 3 * h * 1408;
  const int64_t dense = attn + 3 * h * 10944 + 2 * h, moe = attn + 64 * e + 2 * e + 64 * h + 2 * h;
  EXPECT_EQ(CountParams(*m).total, dense + 27 * moe + 2 * 102400 * h + h);
  EXPECT_EQ(CountParams(*m).total, 16'375'728'128);
  EXPECT_EQ(CountParams(*m).active, 2'828'650'496);
  EXPECT_FALSE(m->is_moe_layer(0));
  EXPECT_TRUE(m->is_moe_layer(1));
  ExpectReadsBack(*m);
  auto dense_only = FromJson(R"({"model_type":"deepseek","hidden_size":256,"intermediate_size":512,"num_hidden_layers":2,
    "num_attention_heads":4,"vocab_size":100})");
  ASSERT_TRUE(dense_only.ok()) << dense_only.status().message();
  EXPECT_FALSE(dense_only->is_moe());
  ExpectReadsBack(*dense_only);
}

// Hunyuan dense (per-head q/k norms, tied), Helium (q/k/v biased, o_proj not) and Arcee's AFM (an
// up/down squared-ReLU MLP), on configs shaped like Hunyuan-1.8B, Helium-1-2B and AFM-4.5B: the
// counts transformers 5.23 builds from the same configs.
TEST(Families, HunyuanHeliumArcee) {
  auto hy = FromJson(R"({"model_type":"hunyuan_v1_dense","vocab_size":120818,"hidden_size":2048,"intermediate_size":6144,"num_hidden_layers":32,"num_attention_heads":16,"num_key_value_heads":4,"head_dim":128,"attention_bias":false,"mlp_bias":false,"tie_word_embeddings":true,"max_position_embeddings":32768,"use_qk_norm":true,"torch_dtype":"bfloat16"})");
  ASSERT_TRUE(hy.ok()) << hy.status().message();
  EXPECT_EQ(CountParams(*hy).total, 1'791'080'448);
  EXPECT_TRUE(hy->qk_norm);
  ExpectReadsBack(*hy);
  auto he = FromJson(R"({"model_type":"helium","vocab_size":64000,"hidden_size":2560,"intermediate_size":7040,"num_hidden_layers":24,"num_attention_heads":20,"num_key_value_heads":20,"head_dim":128,"attention_bias":true,"mlp_bias":false,"tie_word_embeddings":false,"max_position_embeddings":4096,"torch_dtype":"bfloat16"})");
  ASSERT_TRUE(he.ok()) << he.status().message();
  EXPECT_EQ(CountParams(*he).total, 2'254'748'160);
  EXPECT_TRUE(he->qkv_bias);
  EXPECT_FALSE(he->o_bias);
  ExpectReadsBack(*he);
  auto af = FromJson(R"({"model_type":"arcee","vocab_size":128004,"hidden_size":2560,"intermediate_size":18432,"num_hidden_layers":36,"num_attention_heads":20,"num_key_value_heads":4,"head_dim":128,"attention_bias":false,"mlp_bias":false,"tie_word_embeddings":false,"max_position_embeddings":65536,"hidden_act":"relu2","torch_dtype":"bfloat16"})");
  ASSERT_TRUE(af.ok()) << af.status().message();
  const int64_t h = 2560, q = 20 * 128, kv = 4 * 128;
  EXPECT_EQ(CountParams(*af).total, 36 * (h * (q + 2 * kv) + q * h + 2 * h * 18432 + 2 * h) + 2 * 128004 * h + h);
  EXPECT_EQ(CountParams(*af).total, 4'619'184'640);
  EXPECT_EQ(af->mlp, MlpKind::kPlain);
  ExpectReadsBack(*af);
}

// ChatGLM-6B's first generation shares model_type "chatglm" with GLM-2 to 4 but not their keys:
// read with their defaults it counted 7,833,096,192 (GLM-4's vocab and SwiGLU). With THUDM/chatglm-6b's
// keys: vocab 130,528, 28 layers of h 4096, query_key_value 3h and dense h, a 4h GELU MLP, every
// Linear and LayerNorm biased, the head tied to the word embeddings: 6,173,286,400 (its "6.2B").
TEST(Families, ChatglmFirstGeneration) {
  auto m = FromJson(R"({"_name_or_path":"THUDM/chatglm-6b","architectures":["ChatGLMModel"],
    "auto_map":{"AutoConfig":"configuration_chatglm.ChatGLMConfig",
    "AutoModel":"modeling_chatglm.ChatGLMForConditionalGeneration",
    "AutoModelForSeq2SeqLM":"modeling_chatglm.ChatGLMForConditionalGeneration"},"bos_token_id":130004,
    "eos_token_id":130005,"mask_token_id":130000,"gmask_token_id":130001,"pad_token_id":3,"hidden_size":4096,
    "inner_hidden_size":16384,"layernorm_epsilon":1e-05,"max_sequence_length":2048,"model_type":"chatglm",
    "num_attention_heads":32,"num_layers":28,"position_encoding_2d":true,"torch_dtype":"float16",
    "transformers_version":"4.23.1","use_cache":true,"vocab_size":130528})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  const int64_t h = 4096;
  const int64_t layer = 3 * h * h + 3 * h + h * h + h + 4 * h * h + 4 * h + 4 * h * h + h + 4 * h;
  EXPECT_EQ(CountParams(*m).total, 28 * layer + 130528 * h + 2 * h);
  EXPECT_EQ(CountParams(*m).total, 6'173'286'400);
  EXPECT_EQ(m->mlp, MlpKind::kPlain);
  EXPECT_TRUE(m->tied_embeddings);
  EXPECT_EQ(m->decoder_layer_class, "GLMBlock");
  ExpectReadsBack(*m);
}

// Falcon's configs from before transformers took the family in name it RefinedWebModel (7B) and
// RefinedWeb (40B: the new decoder architecture, with n_head_kv KV heads and two norms). They count
// as transformers builds the same widths under model_type falcon: 6,921,720,704 and 41,303,293,952.
TEST(Families, FalconRemoteCodeNames) {
  auto f7 = FromJson(R"({"alibi":false,"apply_residual_connection_post_layernorm":false,"architectures":["RWForCausalLM"],
    "attention_dropout":0.0,"auto_map":{"AutoConfig":"configuration_RW.RWConfig",
    "AutoModelForCausalLM":"modelling_RW.RWForCausalLM"},"bias":false,"bos_token_id":11,"eos_token_id":11,
    "hidden_dropout":0.0,"hidden_size":4544,"initializer_range":0.02,"layer_norm_epsilon":1e-05,
    "model_type":"RefinedWebModel","multi_query":true,"n_head":71,"n_layer":32,"parallel_attn":true,
    "torch_dtype":"bfloat16","transformers_version":"4.27.4","use_cache":true,"vocab_size":65024})");
  ASSERT_TRUE(f7.ok()) << f7.status().message();
  EXPECT_EQ(CountParams(*f7).total, 6'921'720'704);
  EXPECT_EQ(f7->kv_heads, 1);
  EXPECT_EQ(f7->model_type, "falcon");
  ExpectReadsBack(*f7);
  auto f40 = FromJson(R"({"alibi":false,"apply_residual_connection_post_layernorm":false,"architectures":["RWForCausalLM"],
    "attention_dropout":0.0,"auto_map":{"AutoConfig":"configuration_RW.RWConfig",
    "AutoModelForCausalLM":"modelling_RW.RWForCausalLM"},"bias":false,"bos_token_id":11,"eos_token_id":11,
    "hidden_dropout":0.0,"hidden_size":8192,"initializer_range":0.02,"layer_norm_epsilon":1e-05,
    "model_type":"RefinedWeb","n_head":128,"n_head_kv":8,"n_layer":60,"parallel_attn":true,
    "torch_dtype":"bfloat16","transformers_version":"4.27.4","use_cache":true,"vocab_size":65024})");
  ASSERT_TRUE(f40.ok()) << f40.status().message();
  EXPECT_EQ(CountParams(*f40).total, 41'303'293'952);
  EXPECT_EQ(f40->kv_heads, 8);
  EXPECT_EQ(f40->norms_per_layer, 2);
  ExpectReadsBack(*f40);
}

// EXAONE 3.5 (LGAI-EXAONE remote code): llama's shape with the layer count as num_layers. The
// model cards give the parameters without embeddings: 2.14B, 6.98B and 30.95B; the 2.4B ties
// its embeddings, the others do not.
TEST(Families, ExaoneNumLayers) {
  struct Case {
    const char* dims;
    int64_t total, without_embeddings;
  };
  for (const Case& k : {Case{R"("hidden_size":2560,"intermediate_size":7168,"num_attention_heads":32,"num_key_value_heads":8,
                              "head_dim":80,"num_layers":30,"tie_word_embeddings":true)", 2'405'327'360, 2'143'180'800},
                        Case{R"("head_dim":128,"hidden_size":4096,"intermediate_size":14336,"num_attention_heads":32,"num_key_value_heads":8,
                              "num_layers":32,"tie_word_embeddings":false)", 7'818'448'896, 6'979'584'000},
                        Case{R"("head_dim":128,"hidden_size":5120,"intermediate_size":27392,"num_attention_heads":40,"num_key_value_heads":8,
                              "num_layers":64,"tie_word_embeddings":false)", 32'003'200'000, 30'954'618'880}}) {
    auto m = FromJson(std::string(R"({"model_type":"exaone","architectures":["ExaoneForCausalLM"],"activation_function":"silu",
      "layer_norm_epsilon":1e-05,"max_position_embeddings":32768,"rope_theta":1000000.0,
      "torch_dtype":"bfloat16","vocab_size":102400,)") + k.dims + "}");
    ASSERT_TRUE(m.ok()) << m.status().message();
    const ParamCounts c = CountParams(*m);
    EXPECT_EQ(c.total, k.total) << k.dims;
    EXPECT_EQ(c.total - c.embedding - (m->tied_embeddings ? 0 : c.head) - m->hidden, k.without_embeddings) << k.dims;
    EXPECT_EQ(m->decoder_layer_class, "ExaoneBlock");
    ExpectReadsBack(*m);
  }
}

// GPT-2, OPT, BLOOM and MPT read the checkpoint's dtype like every other family: their readers
// skipped it, so an fp32 or fp16 checkpoint read as bf16 and its plan file did not read back.
TEST(Families, GptStyleReadTheirDtype) {
  const char* configs[] = {
      R"({"model_type":"gpt2","torch_dtype":"float32"})",
      R"({"model_type":"opt","hidden_size":768,"num_hidden_layers":2,"num_attention_heads":12,"ffn_dim":3072,"torch_dtype":"float16"})",
      R"({"model_type":"bloom","hidden_size":1024,"n_head":16,"n_layer":2,"torch_dtype":"float16"})",
      R"({"model_type":"mpt","d_model":1024,"n_heads":16,"n_layers":2,"torch_dtype":"float32"})"};
  const Dtype expected[] = {Dtype::kFp32, Dtype::kFp16, Dtype::kFp16, Dtype::kFp32};
  for (size_t i = 0; i < 4; ++i) {
    auto m = FromJson(configs[i]);
    ASSERT_TRUE(m.ok()) << configs[i] << ": " << m.status().message();
    EXPECT_EQ(m->dtype, expected[i]) << configs[i];
    ExpectReadsBack(*m);
  }
}

}  // namespace
}  // namespace shardplan
