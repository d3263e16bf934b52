// The memory model against the seed examples and the formulas of memory-model.md, with
#include <algorithm>
#include <numeric>
// every expected value derived here from its source.
#include <gtest/gtest.h>

#include "planner/io/document.h"
#include "planner/io/model_reader.h"
#include "planner/caching_allocator.h"
#include "planner/memory_model.h"
#include "planner/memory_terms.h"
#include "planner/recipe.h"
#include "planner/units.h"
#include "topology/cluster_reader.h"
#include "topology/gpu_catalog.h"

namespace shardplan {
namespace {

ModelSpec Model(const std::string& name) {
  auto m = LoadModel(name);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return *m;
}

ClusterSpec Cluster(const std::string& name, int nodes = 1) {
  auto c = LoadCluster(name);
  EXPECT_TRUE(c.ok()) << c.status().message();
  c->nodes = nodes;
  return *c;
}

Layout Resolve(const ModelSpec& m, const Workload& w, const ClusterSpec& c, const std::string& text) {
  auto parsed = ParseLayout(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  auto l = ResolveLayout(m, w, c, *parsed);
  EXPECT_TRUE(l.ok()) << l.status().message();
  return *l;
}

int64_t Term(const MemoryEstimate& e, const std::string& name) {
  for (const MemoryTerm& t : e.fullest().terms)
    if (t.name == name) return t.bytes;
  return 0;
}

// One A100 80GB of a DGX A100: the one-GPU fine-tunes' card.
ClusterSpec OneA100() {
  ClusterSpec c = Cluster("dgx-a100");
  c.gpus_per_node = 1;
  return c;
}

Workload Train(int64_t seq, int64_t batch, Dtype precision = Dtype::kBf16) {
  Workload w;
  w.seq_len = seq;
  w.global_batch = batch;
  w.precision = precision;
  return w;
}

// One prompt of `prompt` tokens served at vLLM's (or SGLang's) memory fraction `util`.
Workload Serve(int64_t prompt, double util) {
  Workload w;
  w.task = Task::kInference;
  w.inference.prompt_len = prompt;
  w.inference.gen_len = 0;
  w.inference.gpu_memory_utilization = util;
  return w;
}

// Seed: full fp32 AdamW training of a 7B model needs at least 16 B/param before activations.
TEST(Seed, Fp32AdamWNeedsSixteenBytesPerParam) {
  ModelSpec m = Model("llama-2-7b");
  const ClusterSpec c = OneA100();
  Workload w = Train(2048, 1, Dtype::kFp32);
  MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, "framework=fsdp"), c);
  const int64_t states = Term(e, "parameters") + Term(e, "gradients") + Term(e, "optimizer_states");
  EXPECT_EQ(states, 16 * CountParams(m).total);
  EXPECT_FALSE(e.fits);  // 108 GB of states on an 80 GB GPU
}

// The CUDA context and the kernels a training step loads, as measured on an H100 (driver
// 580.159.04, CUDA 13.0, torch 2.11): the device's used memory less PyTorch's reserved peak
// after an FSDP2 step, 0.817 GiB in every run of bench/data/calibration. Serving, and GPUs
// before Hopper, keep the 640 MiB of memory-model.md 4.1.
TEST(Memory, CudaContextMeasuredOnHopperTraining) {
  const ModelSpec m = Model("llama-3.1-8b");
  const Workload train = Train(4096, 8);
  const ClusterSpec h100 = Cluster("dgx-h100"), a100 = Cluster("dgx-a100");
  const int64_t mib = 1 << 20;
  EXPECT_EQ(Term(EstimateMemory(m, train, Resolve(m, train, h100, "framework=fsdp,dp=8,zero=3"), h100), "cuda_context"),
            837 * mib);
  EXPECT_EQ(Term(EstimateMemory(m, train, Resolve(m, train, a100, "framework=fsdp,dp=8,zero=3"), a100), "cuda_context"),
            640 * mib);
  const Workload serve = Serve(1024, 0.9);
  EXPECT_EQ(Term(EstimateMemory(m, serve, Resolve(m, serve, h100, "tp=1"), h100), "cuda_context"), 640 * mib);
}

// Seed: Llama-2-70B in int4 serves from one 48 GB RTX A6000 with room for a KV cache; bf16 does not.
TEST(Seed, Llama2_70bInt4OnOneA6000) {
  ModelSpec m = Model("llama-2-70b");
  ClusterSpec c = Cluster("rtxa6000-workstation");
  c.gpus_per_node = 1;
  Workload w;
  w.task = Task::kInference;
  w.inference.batch = 1;
  w.inference.prompt_len = 2048;
  w.inference.gen_len = 512;
  w.inference.weights = Dtype::kInt4;
  MemoryEstimate int4 = EstimateMemory(m, w, Resolve(m, w, c, ""), c);
  EXPECT_TRUE(int4.fits) << FormatBytes(int4.fullest().device_peak);
  EXPECT_GT(int4.kv.max_concurrent_sequences, 1);
  // GPTQ g128: 0.5195 B/param on the linear layers; embeddings and head in bf16.
  const double linear = static_cast<double>(CountParams(m).total - 2 * 32000LL * 8192 - 8192);
  EXPECT_NEAR(static_cast<double>(Term(int4, "weights")), linear * (0.5 + 2.5 / 128) + (2 * 32000.0 * 8192 + 8192) * 2, 1e6);
  w.inference.weights = Dtype::kBf16;
  MemoryEstimate bf16 = EstimateMemory(m, w, Resolve(m, w, c, ""), c);
  EXPECT_FALSE(bf16.fits);
  EXPECT_EQ(bf16.kv.max_concurrent_sequences, 0);
}

// memory-model.md 5.2: Llama-3-70B KV cache 327,680 B/token in bf16; DeepSeek-V3 MLA 70,272.
TEST(Inference, KvBytesPerToken) {
  ClusterSpec c = Cluster("dgx-h100");
  Workload w;
  w.task = Task::kInference;
  ModelSpec llama = Model("llama-3.1-70b");
  MemoryEstimate e = EstimateMemory(llama, w, Resolve(llama, w, c, "tp=8"), c);
  EXPECT_EQ(e.kv.kv_bytes_per_token_model, 327'680);
  EXPECT_EQ(e.kv.kv_bytes_per_token, 327'680 / 8);
  ModelSpec ds = Model("deepseek-v3");
  MemoryEstimate d = EstimateMemory(ds, w, Resolve(ds, w, c, "tp=8"), c);
  EXPECT_EQ(d.kv.kv_bytes_per_token_model, 70'272);
  EXPECT_EQ(d.kv.kv_bytes_per_token, 70'272);  // the latent is replicated across TP ranks
  // DeepSeek-V3.2's DSA indexer caches a 128-wide fp8 key and its fp32 scale per token per
  // layer beside the latent (vLLM DeepseekV32IndexerCache): 61 x (576 x 2 + 132).
  ModelSpec v32 = ds;
  v32.index_heads = 64;
  v32.index_head_dim = 128;
  v32.index_topk = 2048;
  EXPECT_EQ(EstimateMemory(v32, w, Resolve(v32, w, c, "tp=8"), c).kv.kv_bytes_per_token, 61 * (576 * 2 + 132));
}

// A VLM's vision encoder is held frozen on the first stage in the run's dtype: whole on each
// rank under DDP-style runs, sharded with the rest under ZeRO-3, split over TP when served.
TEST(Memory, VisionEncoderWeights) {
  auto doc = Document::Parse("config.json", R"({"model_type":"qwen2_5_vl","hidden_size":3584,"intermediate_size":18944,
    "num_attention_heads":28,"num_hidden_layers":28,"num_key_value_heads":4,"vocab_size":152064,"tie_word_embeddings":false,
    "vision_config":{"depth":32,"hidden_size":1280,"intermediate_size":3420,"out_hidden_size":3584}})");
  ASSERT_TRUE(doc.ok());
  auto parsed = ParseModel(*doc, "qwen2.5-vl-7b");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const ModelSpec& m = *parsed;
  const ClusterSpec c = Cluster("dgx-h100");
  Workload w = Train(2048, 16);
  w.task = Task::kLora;
  const double vision = 676'550'144.0 * 2;
  EXPECT_NEAR(Term(EstimateMemory(m, w, Resolve(m, w, c, "framework=hf,dp=8,zero=0"), c), "vision_encoder"), vision, 1);
  EXPECT_NEAR(Term(EstimateMemory(m, w, Resolve(m, w, c, "framework=deepspeed,dp=8,zero=3"), c), "vision_encoder"), vision / 8, 1);
  const Workload serve = Serve(4096, 0.9);
  EXPECT_NEAR(Term(EstimateMemory(m, serve, Resolve(m, serve, c, "tp=2"), c), "vision_encoder"), vision / 2, 1);
  EXPECT_EQ(Term(EstimateMemory(Model("llama-3.1-8b"), w, Resolve(Model("llama-3.1-8b"), w, c, "framework=hf,dp=8"), c), "vision_encoder"), 0);
}

// Nemotron 3 Nano's blocks hold one mixer each. Serving, only its 6 attention blocks keep KV
// (2 x 2 KV heads x 128 x 2 B per token each); each of the 23 Mamba-2 blocks keeps, per
// sequence, a conv state of 3 x 6,144 bf16 and an fp32 SSM state of 64 heads x 64 x 128.
// Training under Megatron, a Mamba block saves its norm and in_proj inputs (h each), in_proj's
// 10,304-wide output, the scan's y and out_proj's input (4,096 each) and an fp32 rstd per group.
TEST(Memory, HybridBlocks) {
  const ModelSpec m = Model("nemotron-3-nano-30b-a3b");
  const ClusterSpec c = Cluster("dgx-h100");
  const Workload serve = Serve(4096, 0.9);
  const int64_t state = 23 * (3 * 6144 * 2 + 64 * 64 * 128 * 4);
  const MemoryEstimate one = EstimateMemory(m, serve, Resolve(m, serve, c, "tp=1,batch=8"), c);
  EXPECT_EQ(Term(one, "kv_cache"), 6 * 2 * 2 * 128 * 2 * 8 * 4096);
  EXPECT_EQ(Term(one, "ssm_state"), state * 8);
  const MemoryEstimate two = EstimateMemory(m, serve, Resolve(m, serve, c, "tp=2,batch=8"), c);
  EXPECT_EQ(Term(two, "kv_cache"), Term(one, "kv_cache") / 2);
  EXPECT_EQ(Term(two, "ssm_state"), state * 8 / 2);
  // The pool holds whole sequences, each its KV and its state; vLLM reports it as their tokens.
  EXPECT_NEAR(static_cast<double>(one.kv.max_concurrent_sequences), static_cast<double>(one.kv.max_kv_tokens) / 4096, 1);
  const MemoryEstimate plain = EstimateMemory(Model("qwen3-30b-a3b"), serve, Resolve(Model("qwen3-30b-a3b"), serve, c, "tp=1"), c);
  EXPECT_EQ(plain.kv.max_kv_tokens % 16, 0);  // a transformer's pool: whole 16-token blocks
  const Workload w = Train(8192, 64);
  const Layout l = Resolve(m, w, c, "framework=megatron,dp=8,ep=8,mbs=1,ac=none");
  const MemoryContext ctx{m, w, l, c, ResolveRecipe(m, w, l)};
  const double sb = 8192, h = 2688;
  EXPECT_EQ(LayerActivationBytes(ctx, 0, Recompute::kNone),
            static_cast<int64_t>(4 * sb * h + sb * (2 * 10304 + 2 * 4096 + 4 * 8 + 2 * 4096)));
  // An attention block's is a transformer layer's attention half; no block keeps an MLP's.
  ModelSpec llama_like = m;
  llama_like.hybrid.clear();
  llama_like.moe_layer.assign(52, true);
  EXPECT_LT(LayerActivationBytes(ctx, 5, Recompute::kNone), LayerActivationBytes(MemoryContext{llama_like, w, l, c, ctx.r}, 5, Recompute::kNone));
  EXPECT_EQ(LayerActivationBytes(ctx, 5, Recompute::kFull), static_cast<int64_t>(2 * sb * h));
}

// Unsloth's LoRA kernels on Llama-3.1-8B (h 4,096, q 4,096, k and v 1,024, FFN 14,336, 32
// heads), per token of one layer: the two norms' 16-bit inputs and fp32 rstd (2 x 8,196),
// the projections' input (8,192), q, k and v (12,288), the attention output and its fp32
// log-sum-exp (8,192 + 128), and LoRA_MLP's X, e and g (8,192 + 57,344). With no adapter on
// the MLP, transformers' MLP runs and keeps silu's input, its output and up's output (86,016)
// and nothing reads the normed input. In backward the recomputed output (8,192) and down's
// input grad (28,672) come on top of the two residual grads.
TEST(Memory, UnslothKernelsKeepLessThanTransformers) {
  const ModelSpec m = Model("llama-3.1-8b");
  const ClusterSpec c = OneA100();
  Workload w = Train(4096, 1);
  w.task = Task::kQlora;
  const double sb = 4096;
  auto layer = [&](const Workload& x, const std::string& layout) {
    const Layout l = Resolve(m, x, c, layout);
    return LayerActivationBytes(MemoryContext{m, x, l, c, ResolveRecipe(m, x, l)}, 0, Recompute::kNone);
  };
  EXPECT_EQ(layer(w, "framework=unsloth,dp=1,ac=none"), static_cast<int64_t>(sb * 110728));
  EXPECT_EQ(layer(w, "framework=unsloth,dp=1,ac=full"), layer(w, "framework=unsloth,dp=1,ac=none"));
  Workload qv = w;
  qv.lora.targets = {"q_proj", "v_proj"};
  EXPECT_EQ(layer(qv, "framework=unsloth,dp=1,ac=none"), static_cast<int64_t>(sb * (16392 + 8192 + 12288 + 8320 + 86016)));
  // transformers' own modules under peft keep more; so does Unsloth when a dropout hands the
  // adapters back to peft.
  EXPECT_GT(layer(w, "framework=hf,dp=1,ac=none"), layer(w, "framework=unsloth,dp=1,ac=none") * 3 / 2);
  Workload dropped = w;
  dropped.lora.dropout = 0.05;
  EXPECT_GT(layer(dropped, "framework=unsloth,dp=1,ac=none"), layer(w, "framework=unsloth,dp=1,ac=none") * 3 / 2);
  const Layout l = Resolve(m, w, c, "framework=unsloth,dp=1");
  const MemoryEstimate e = EstimateMemory(m, w, l, c);
  EXPECT_EQ(Term(e, "recompute_layer"), static_cast<int64_t>(sb * 110728));
  EXPECT_EQ(Term(e, "activation_gradients"), static_cast<int64_t>(sb * (2 * 8192 + 8192 + 28672)));
}

// torchtitan's pipeline schedules accumulate unsharded fp32 grads (no gradient sync) until a
// stage's last micro-batch. Interleaved over one round (8 micro-batches on PP 8), each local
// stage runs its backwards together, the later stage's first, and frees its grads before the
// earlier one's allocate: half the rank's grads at the peak. torchtitan's Llama 3.1 405B
// (FSDP 8, TP 8, PP 8): 72.7 GiB reserved interleaved, 82.5 under 1F1B (Table 5 of
// benchmarks/llama3_h100_202412_torchtitan.md). Two rounds hold every stage's grads again.
TEST(Memory, TorchtitanInterleavedRoundFreesOneStagesGradsBeforeTheNext) {
  const ModelSpec m = Model("llama-3.1-405b");
  const ClusterSpec c = Cluster("dgx-h100", 64);
  const Workload w = Train(8192, 256);
  auto grads = [&](const std::string& layout) {
    const MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, layout), c);
    for (const MemoryTerm& t : e.stages.front().terms)
      if (t.name == "unsharded_grads_no_sync") return static_cast<double>(t.bytes);
    return 0.0;
  };
  const std::string base = "framework=torchtitan,dp=8,tp=8,pp=8,zero=3,ac=full";
  const double one_f_one_b = grads(base + ",mbs=4");
  const double interleaved = grads(base + ",vpp=2,mbs=4");
  const double root = static_cast<double>(m.vocab * m.hidden) / 8;  // the first stage's embeddings, over TP
  ASSERT_GT(one_f_one_b, 0);
  EXPECT_NEAR(interleaved, 4 * (one_f_one_b / 4 - root) / 2, 16);
  EXPECT_EQ(grads(base + ",vpp=2,mbs=2"), one_f_one_b);  // 16 micro-batches: two rounds
}

// torch.distributed.pipelining allocates a receive buffer per micro-batch for every local
// stage's input (but the first stage's) and output gradient (but the last's), and keeps them:
// the stage-boundary hidden states, sequence-sharded under TP (stage.py). The inputs of the
// micro-batches in flight are already the stages' first saved tensors. Llama 3.1 405B on
// PP 8 x TP 8 with 8 micro-batches of 4 x 8,192 tokens: 128 MiB a buffer.
TEST(Memory, TorchPipeliningKeepsAReceiveBufferPerMicroBatch) {
  const ModelSpec m = Model("llama-3.1-405b");
  const ClusterSpec c = Cluster("dgx-h100", 64);
  const Workload w = Train(8192, 256);
  auto buffers = [&](const std::string& layout, size_t stage) {
    const MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, layout), c);
    for (const MemoryTerm& t : e.stages.at(stage).terms)
      if (t.name == "pipeline_recv_buffers") return t.bytes;
    return int64_t{0};
  };
  const std::string base = "dp=8,tp=8,pp=8,zero=3,ac=full,mbs=4";
  const int64_t one = 2LL * 4 * 8192 * 16384 / 8;
  EXPECT_EQ(buffers("framework=torchtitan," + base, 0), 8 * one);         // gradients only
  EXPECT_EQ(buffers("framework=torchtitan," + base, 3), (8 + 3) * one);   // 5 of 8 inputs in flight
  EXPECT_EQ(buffers("framework=torchtitan," + base, 7), 7 * one);         // inputs only, one in flight
  EXPECT_EQ(buffers("framework=torchtitan,vpp=2," + base, 0), 16 * one);  // every input in flight
  // Megatron's schedule receives into fresh tensors, one exchange at a time.
  EXPECT_EQ(buffers("framework=megatron,dp=8,tp=8,pp=8,zero=1,ac=full,mbs=4", 3), 0);
}

// QLoRA through TRL and peft's prepare_model_for_kbit_training: the norms' weights in fp32
// make the residual stream fp32 (the checkpoint of every layer 4 B per hidden unit where a
// bf16 run keeps 2) and the 4-bit gate and up projections return fp32 (the MLP's three
// intermediates 4 B each, less the bf16 norm inputs the fp32 residual replaces).
// Llama-3.1-8B at 4,096 tokens, all seven projections adapted.
TEST(Memory, PeftKbitPreparationKeepsTheResidualInFp32) {
  const ModelSpec m = Model("llama-3.1-8b");
  const ClusterSpec c = OneA100();
  Workload w = Train(4096, 1);
  w.task = Task::kQlora;
  w.lora.rank = 32;
  w.lora.targets = {"all-linear"};
  const Layout l = Resolve(m, w, c, "framework=hf,dp=1");
  std::vector<std::string> assumed;
  const TrainingRecipe r = ResolveRecipe(m, w, l, &assumed);
  EXPECT_TRUE(r.kbit_prepared);
  EXPECT_FALSE(r.kbit_fp32_embeddings);
  auto says = [&](const char* prefix) {
    return std::any_of(assumed.begin(), assumed.end(), [&](const std::string& a) { return a.rfind(prefix, 0) == 0; });
  };
  EXPECT_TRUE(says("kbit_prepare: true"));
  Workload plain = w;
  plain.kbit_prepare = Setting::kOff;
  const MemoryEstimate kbit = EstimateMemory(m, w, l, c), bare = EstimateMemory(m, plain, l, c);
  EXPECT_EQ(Term(kbit, "activations"), 32LL * 4096 * 4096 * 4);
  EXPECT_EQ(Term(bare, "activations"), 32LL * 4096 * 4096 * 2);
  EXPECT_EQ(Term(kbit, "recompute_layer") - Term(bare, "recompute_layer"), 4096LL * (6 * 14336 - 2 * 2 * 4096));
  // fp16: TRL casts embeddings and head back to bf16 only for bf16 runs, so they stay fp32, and
  // the fp16 autocast copy of the head lives from the loss to its backward.
  Workload half = w;
  half.precision = Dtype::kFp16;
  Workload half_plain = half;
  half_plain.kbit_prepare = Setting::kOff;
  const MemoryEstimate h = EstimateMemory(m, half, l, c), hb = EstimateMemory(m, half_plain, l, c);
  EXPECT_EQ(Term(h, "frozen_base_weights") - Term(hb, "frozen_base_weights"), 2 * (2LL * 128256 * 4096 + 4096));  // + final norm
  EXPECT_EQ(Term(h, "head_autocast_copy"), 2LL * 128256 * 4096);
  // Gemma's norm casts its output back to its input's dtype: its residual stays bf16.
  const ModelSpec gemma = Model("gemma-2-9b");
  const Layout gl = Resolve(gemma, w, c, "framework=hf,dp=1");
  Workload gemma_plain = w;
  gemma_plain.kbit_prepare = Setting::kOff;
  EXPECT_EQ(Term(EstimateMemory(gemma, w, gl, c), "activations"), Term(EstimateMemory(gemma, gemma_plain, gl, c), "activations"));
  EXPECT_TRUE(ResolveRecipe(gemma, w, gl).kbit_prepared);
  EXPECT_FALSE(ResolveRecipe(gemma, w, gl).kbit_fp32_stream);
  EXPECT_TRUE(r.kbit_fp32_stream);
  // In fp16 the embeddings stay fp32 and start the stream in fp32: Gemma's norm casts back to
  // that, so its checkpoints are 4 B per hidden unit too.
  Workload gemma_half = half;
  EXPECT_TRUE(ResolveRecipe(gemma, gemma_half, gl).kbit_fp32_stream);
  EXPECT_EQ(Term(EstimateMemory(gemma, gemma_half, gl, c), "activations"),
            static_cast<int64_t>(gemma.layers) * 4096 * gemma.hidden * 4);
  // Sharded QLoRA (FSDP, the blocks in bnb_4bit_quant_storage) skips the preparation, as TRL does.
  ClusterSpec two = c;
  two.gpus_per_node = 2;
  Workload pair = w;
  pair.global_batch = 2;
  EXPECT_FALSE(ResolveRecipe(m, pair, Resolve(m, pair, two, "framework=fsdp,dp=2,zero=3")).kbit_prepared);
}

// Unsloth's README context-length table (e3162dc5bf, 2025-01-14), its "Hugging Face + FA2"
// column: Llama 3.1 8B Instruct, 4-bit QLoRA on all seven projections at rank 32, batch 1,
// sequences padded to the length: 12,264 tokens on a 40 GB A100 and 28,454 on an 80 GB one.
// transformers of that date (4.48) still copied the shifted fp32 logits. The longest sequence
// whose needed memory fits the card lands within 5% of both.
TEST(Memory, UnslothReadmeHfQloraMaxContext) {
  const ModelSpec m = Model("llama-3.1-8b");
  Workload w = Train(1024, 1);
  w.task = Task::kQlora;
  w.lora.rank = 32;
  w.lora.targets = {"all-linear"};
  w.release = 20250114;
  for (const auto& [gpu, published] : {std::pair<const char*, int64_t>{"a100-sxm-40gb", 12264}, {"a100-sxm-80gb", 28454}}) {
    ClusterSpec c = Cluster("dgx-a100");
    c.gpus_per_node = 1;
    auto g = CatalogGpu(gpu);
    ASSERT_TRUE(g.ok());
    c.gpu = *g;
    int64_t lo = 256, hi = 1 << 17;
    while (hi - lo > 16) {
      const int64_t mid = (lo + hi) / 2;
      w.seq_len = mid;
      const MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, "framework=hf,dp=1"), c);
      (e.fullest().required_peak <= e.capacity_bytes ? lo : hi) = mid;
    }
    EXPECT_NEAR(static_cast<double>(lo), static_cast<double>(published), 0.05 * published) << gpu;
  }
}

// transformers before 4.49 (PR 35646) copied the shifted fp32 logits in ForCausalLMLoss: 4 B a
// logit more in the loss's forward and in its backward.
TEST(Memory, TransformersLossCopiedTheShiftedLogitsBefore449) {
  const ModelSpec m = Model("llama-3.1-8b");
  const ClusterSpec c = OneA100();
  Workload w = Train(4096, 1);
  w.task = Task::kLora;
  const Layout l = Resolve(m, w, c, "framework=hf,dp=1");
  Workload old = w;
  old.release = 20250114;
  const MemoryEstimate now = EstimateMemory(m, w, l, c), before = EstimateMemory(m, old, l, c);
  const int64_t logits = 4096LL * 128256;
  EXPECT_EQ(Term(before, "logits_and_loss") - Term(now, "logits_and_loss"), 4 * logits);
  EXPECT_EQ(Term(before, "logits_grad") - Term(now, "logits_grad"), 4 * logits);
  old.release = 20250217;  // v4.49.0
  EXPECT_EQ(Term(EstimateMemory(m, old, l, c), "logits_and_loss"), Term(now, "logits_and_loss"));
}

// Falcon-H1's parallel layer keeps what its attention and its Mamba-2 mixer each save, but
// the normed input they share only once; serving, every layer holds KV and a Mamba state.
// Mamba-Codestral (transformers Mamba2Config): every layer a Mamba-2 block, no attention. It
// keeps no KV cache, so the serving pool holds whole sequences of state alone: per sequence and
// layer a conv state of 3 x (8,192 + 2 x 8 x 128) bf16 and an fp32 SSM state of 128 heads x 64
// x 128.
TEST(Memory, AttentionFreeMamba2Serves) {
  auto doc = Document::Parse("m.json", R"({"model_type":"mamba2","num_heads":128,"head_dim":64,"hidden_size":4096,
    "state_size":128,"num_hidden_layers":64,"n_groups":8,"vocab_size":32768,"chunk_size":256})");
  ASSERT_TRUE(doc.ok());
  auto parsed = ParseModel(*doc, "mamba-codestral-7b");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(CountParams(*parsed).total, 7'285'403'648);
  const ClusterSpec c = Cluster("dgx-h100");
  const Workload serve = Serve(4096, 0.9);
  const MemoryEstimate e = EstimateMemory(*parsed, serve, Resolve(*parsed, serve, c, "tp=1,batch=8"), c);
  EXPECT_EQ(Term(e, "kv_cache"), 0);
  EXPECT_EQ(Term(e, "ssm_state"), 8LL * 64 * (3 * (8192 + 2 * 8 * 128) * 2 + 128 * 64 * 128 * 4));
  EXPECT_EQ(e.kv.kv_bytes_per_token, 0);
  EXPECT_GT(e.kv.max_concurrent_sequences, 100);
  EXPECT_NEAR(static_cast<double>(e.kv.max_concurrent_sequences), static_cast<double>(e.kv.max_kv_tokens) / 4096, 1);
}

TEST(Memory, ParallelHybridLayer) {
  auto doc = Document::Parse("f.json", R"({"model_type":"falcon_h1","hidden_size":3072,"intermediate_size":12288,
    "num_hidden_layers":4,"num_attention_heads":12,"num_key_value_heads":2,"head_dim":128,"vocab_size":130049,
    "mamba_d_ssm":3072,"mamba_d_state":256,"mamba_d_head":128,"mamba_n_heads":24,"mamba_n_groups":1})");
  ASSERT_TRUE(doc.ok());
  auto parsed = ParseModel(*doc, "falcon-h1");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const ModelSpec& m = *parsed;
  ModelSpec attention = m, mamba = m, mlp = m;
  attention.hybrid = std::string(4, 'A');
  mamba.hybrid = std::string(4, 'G');
  mlp.hybrid = std::string(4, '-');
  const ClusterSpec c = Cluster("dgx-h100");
  const Workload w = Train(4096, 8);
  const Layout l = Resolve(m, w, c, "framework=megatron,dp=8,mbs=1,ac=none");
  auto bytes = [&](const ModelSpec& x) {
    return LayerActivationBytes(MemoryContext{x, w, l, c, ResolveRecipe(x, w, l)}, 0, Recompute::kNone);
  };
  // Megatron: the shared pair is the norm input and the projections' input, 2 + 2 bytes per element.
  const int64_t shared = 4 * 4096 * 3072;
  // A '-' block is one norm and an MLP; a parallel layer's MLP sits behind its second norm, as
  // in 'A' and 'G' layers, so the sum below counts that MLP and its norm once.
  EXPECT_EQ(bytes(m), bytes(attention) + bytes(mamba) - bytes(mlp) - shared);
  const Workload serve = Serve(4096, 0.9);
  const MemoryEstimate e = EstimateMemory(m, serve, Resolve(m, serve, c, "tp=1,batch=4"), c);
  EXPECT_EQ(Term(e, "kv_cache"), 4 * 2 * 2 * 128 * 2 * 4 * 4096);
  EXPECT_EQ(Term(e, "ssm_state"), 4 * 4 * ((3072 + 2 * 256) * 3 * 2 + 24 * 128 * 256 * 4));
}

// Qwen3-Next serving: KV in its 12 gated-attention layers (2 KV heads of 256), and per sequence
// in each of its 36 Gated DeltaNets a conv state of 3 x 8,192 and a 32 x 128 x 128 recurrent
// state, both bf16 (the model's dtype, vLLM's default for them). LoRA on all-linear wraps a
// DeltaNet layer's in_proj_qkvz, in_proj_ba and out_proj and its shared expert's gate/up/down.
TEST(Memory, GatedDeltaNetState) {
  auto doc = Document::Parse("config.json", R"({"architectures":["Qwen3NextForCausalLM"],"attention_bias":false,"attention_dropout":0.0,"bos_token_id":151643,"decoder_sparse_step":1,"eos_token_id":151645,"full_attention_interval":4,"head_dim":256,"hidden_act":"silu","hidden_size":2048,"initializer_range":0.02,"intermediate_size":5120,"linear_conv_kernel_dim":4,"linear_key_head_dim":128,"linear_num_key_heads":16,"linear_num_value_heads":32,"linear_value_head_dim":128,"max_position_embeddings":262144,"mlp_only_layers":[],"model_type":"qwen3_next","moe_intermediate_size":512,"norm_topk_prob":true,"num_attention_heads":16,"num_experts":512,"num_experts_per_tok":10,"num_hidden_layers":48,"num_key_value_heads":2,"output_router_logits":false,"partial_rotary_factor":0.25,"rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":10000000,"router_aux_loss_coef":0.001,"shared_expert_intermediate_size":512,"tie_word_embeddings":false,"torch_dtype":"bfloat16","use_cache":true,"use_sliding_window":false,"vocab_size":151936})");
  ASSERT_TRUE(doc.ok());
  auto parsed = ParseModel(*doc, "qwen3-next-80b-a3b");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const ModelSpec& m = *parsed;
  const ClusterSpec c = Cluster("dgx-h100");
  const Workload serve = Serve(8192, 0.9);
  const MemoryEstimate e = EstimateMemory(m, serve, Resolve(m, serve, c, "tp=4,batch=16"), c);
  EXPECT_EQ(Term(e, "kv_cache"), 12 * 2 * 1 * 256 * 2 * 16 * 8192);  // 2 KV heads over TP 4: one per rank
  EXPECT_EQ(Term(e, "ssm_state"), 36LL * (3 * 8192 * 2 + 32 * 128 * 128 * 2) * 16 / 4);
  Workload lora = Train(4096, 8);
  lora.task = Task::kLora;
  lora.lora.rank = 16;
  lora.lora.targets = {"all-linear"};
  const int64_t h = 2048;
  const int64_t delta = 16 * ((h + 8192 + 4096) + (h + 64) + (4096 + h) + 3 * (h + 512));
  const int64_t attention = 16 * ((h + 8192) + 2 * (h + 512) + (4096 + h) + 3 * (h + 512));
  const MemoryEstimate t = EstimateMemory(m, lora, Resolve(m, lora, c, "framework=fsdp,dp=8,zero=0"), c);
  EXPECT_EQ(Term(t, "adapter_params"), 4 * (36 * delta + 12 * attention));
}

// vLLM sizes its KV pool from what CUDA can allocate (torch.cuda.mem_get_info's total), not
// nvidia-smi's total: llm-d's vLLM 0.19 log for Llama-3.1-8B on one H100 at 0.95 ("physical
// 79.19 GiB") holds 476,016 KV tokens. Sized from 79.65 GiB, the pool would be 0.44 GiB
// (~3,600 tokens) larger.
TEST(Inference, KvPoolSizedByAllocatableMemory) {
  ClusterSpec c = Cluster("dgx-h100");
  c.gpus_per_node = 1;
  Workload w = Serve(8192, 0.95);
  ModelSpec m = Model("llama-3.1-8b");
  const MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, "tp=1"), c);
  EXPECT_EQ(e.capacity_bytes, (81559 - 468) * kMiB);
  EXPECT_NEAR(static_cast<double>(e.kv.max_kv_tokens), 476'016, 0.01 * 476'016);
  ClusterSpec whole = c;
  whole.gpu.reserved_bytes = 0;
  const MemoryEstimate w0 = EstimateMemory(m, w, Resolve(m, w, whole, "tp=1"), whole);
  EXPECT_NEAR(static_cast<double>(w0.kv.max_kv_tokens - e.kv.max_kv_tokens), 0.95 * 468 * kMiB / 131'072, 16);
}

// vLLM V1's budget, term by term, against llm-d's vLLM 0.19 logs on H100 at 0.95 (weights,
// torch peak and non-torch figures are the logs'): the activation peak is the dummy sampler's
// 1024 x vocab logits when that beats the forward (Gemma-2's 256k vocabulary: 3.65 GiB), and
// TP adds vLLM's communicators (non-torch 2.07-2.21 GiB at TP 2-4 against 0.25 at TP 1).
TEST(Inference, VllmProfileMatchesLoggedKvTokens) {
  struct Row {
    const char* model;
    int tp;
    int64_t logged_tokens;
  };
  for (const Row& r : {Row{"llama-3.1-8b", 4, 2'209'792}, Row{"gemma-2-9b", 1, 168'880}, Row{"gemma-2-27b", 1, 58'672},
                       Row{"qwen2.5-7b", 2, 2'390'592}, Row{"qwen2.5-72b", 4, 481'296}, Row{"qwen3-8b", 1, 418'688}}) {
    ClusterSpec c = Cluster("dgx-h100");
    c.gpus_per_node = r.tp;
    Workload w = Serve(8192, 0.95);
    ModelSpec m = Model(r.model);
    const MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, "tp=" + std::to_string(r.tp)), c);
    EXPECT_NEAR(static_cast<double>(e.kv.max_kv_tokens), r.logged_tokens, 0.03 * r.logged_tokens) << r.model << " tp" << r.tp;
  }
}

// vLLM V0 without chunked prefill profiled max_model_len tokens: Llama-3.1-8B on an RTX 3090
// at 0.90 logs peak_torch_memory 17.06 GiB over 14.99 GiB of weights for 20,000 tokens and
// 17.98 GiB for 29,000, and 1952 and 1478 KV blocks of 16 (vllm#10517, 2024-12-02, a V0
// release). The profile's layer (gate_up's 2f and SiluAndMul's f beside 3h) reproduces both,
// and at 29,000 one sequence no longer fits its own KV cache, as the engine said. With no
// release stated the larger V0 profile is priced; from 0.8.0 (2025-03-18) V1 profiles 8,192.
TEST(Inference, ProfiledBatchedTokensSizeTheActivationPeak) {
  auto doc = Document::Parse("c.yaml", "gpus_per_node: 1\ngpu: RTX 3090\n");
  ASSERT_TRUE(doc.ok());
  auto parsed = ParseCluster(*doc);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const ClusterSpec c = *parsed;
  const ModelSpec m = Model("llama-3.1-8b");
  struct Row {
    int64_t tokens;
    double peak_minus_weights_gib;
    int64_t logged_kv_tokens;
  };
  for (int32_t release : {20241202, 0}) {
    for (const Row& r : {Row{20'000, 17.06 - 14.99, 1952 * 16}, Row{29'000, 17.98 - 14.99, 1478 * 16}}) {
      Workload w = Serve(r.tokens, 0.90);
      w.release = release;
      const MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, "tp=1"), c);
      EXPECT_NEAR(static_cast<double>(Term(e, "activation_workspace")) / kGiB, r.peak_minus_weights_gib, 0.02) << r.tokens;
      EXPECT_NEAR(static_cast<double>(e.kv.max_kv_tokens), r.logged_kv_tokens, 0.03 * r.logged_kv_tokens) << r.tokens;
      EXPECT_EQ(e.kv.max_kv_tokens >= r.tokens, r.tokens == 20'000);
    }
  }
  const double per_token = (3 * 14336 + 3 * 4096) * 2;
  auto workspace = [&](int32_t release, int64_t batched) {
    Workload w = Serve(29'000, 0.90);
    w.release = release;
    w.inference.max_num_batched_tokens = batched;
    return static_cast<double>(Term(EstimateMemory(m, w, Resolve(m, w, c, "tp=1"), c), "activation_workspace"));
  };
  EXPECT_NEAR(workspace(20250318, 0), 8192 * per_token, 1);   // V1 from 0.8.0
  EXPECT_NEAR(workspace(20250301, 0), 29000 * per_token, 1);  // March 2025 before it: V0
  EXPECT_NEAR(workspace(20241202, 8192), 8192 * per_token, 1);  // the flag wins
}

// V0 turned chunked prefill on by itself above 32k tokens and then profiled 2,048 (the same
// report's 35k and 45k runs start); V1 profiles its sampler over 1,024 sequences on an H100,
// V0 over 256. Only where V0's profile is the larger does the estimate say what it assumed.
TEST(Inference, ServingProfileByRelease) {
  const GpuSpec h100 = Cluster("dgx-h100").gpu;
  auto profile = [&](int64_t len, int32_t release, std::vector<std::string>* assumed = nullptr) {
    Workload w = Serve(len, 0.90);
    w.release = release;
    return ResolveServingProfile(w, h100, assumed);
  };
  EXPECT_EQ(profile(40'000, 20241202).tokens, 2048);
  EXPECT_EQ(profile(1'000, 20241202).tokens, 2048);
  EXPECT_EQ(profile(20'000, 20241202).sequences, 256);
  EXPECT_EQ(profile(20'000, 20250601).tokens, 8192);
  EXPECT_EQ(profile(20'000, 20250601).sequences, 1024);
  std::vector<std::string> assumed;
  const ServingProfile unstated = profile(20'000, 0, &assumed);
  EXPECT_EQ(unstated.tokens, 20'000);
  EXPECT_EQ(unstated.sequences, 1024);
  ASSERT_EQ(assumed.size(), 1u);
  EXPECT_NE(assumed[0].find("max_num_batched_tokens: 20000 (vLLM before 0.8.0"), std::string::npos) << assumed[0];
  assumed.clear();
  EXPECT_EQ(profile(4'096, 0, &assumed).tokens, 8192);
  EXPECT_TRUE(assumed.empty());
}

// A stated max_num_seqs is the row count of vLLM's dummy sampler pass (its profile runs
// max_num_seqs requests), so fewer sequences leave the KV pool one vocabulary-wide fp32 logit
// row each, and more: Llama 3.1 8B's 128,256-entry vocabulary on one H100.
TEST(Inference, StatedMaxNumSeqsSizesTheSamplerProfile) {
  const GpuSpec h100 = Cluster("dgx-h100").gpu;
  Workload w = Serve(8192, 0.95);
  w.release = 20250601;
  EXPECT_EQ(ResolveServingProfile(w, h100).sequences, 1024);
  w.inference.max_num_seqs = 64;
  EXPECT_EQ(ResolveServingProfile(w, h100).sequences, 64);
  w.inference.engine = ServingEngine::kTensorrtLlm;  // its profile is its own
  EXPECT_EQ(ResolveServingProfile(w, h100).sequences, 1);
  ClusterSpec c = Cluster("dgx-h100");
  c.gpus_per_node = 1;
  const ModelSpec m = Model("llama-3.1-8b");
  auto tokens = [&](int64_t seqs) {
    Workload v = Serve(8192, 0.95);
    v.release = 20250601;
    v.inference.max_num_seqs = seqs;
    return EstimateMemory(m, v, Resolve(m, v, c, "tp=1"), c).kv.max_kv_tokens;
  };
  const int64_t fewer = tokens(64), defaulted = tokens(0);
  EXPECT_GT(fewer, defaulted);
  EXPECT_EQ(tokens(1024), defaulted);
}

// SGLang's mem_fraction_static covers weights and KV alone: Qwen3-235B-A22B FP8 on 4 x H100
// at 0.93 logs "KV Cache is allocated. #tokens: 367404" (vLLM issue 21348); read as vLLM's
// fraction, the activation peak and sampler would come out of the pool too.
TEST(Inference, SglangFractionCoversWeightsAndKv) {
  ClusterSpec c = Cluster("dgx-h100");
  c.gpus_per_node = 4;
  Workload w = Serve(40960, 0.93);
  w.inference.weights = Dtype::kFp8;
  w.inference.engine = ServingEngine::kSglang;
  ModelSpec m = Model("qwen3-235b-a22b");
  const MemoryEstimate sglang = EstimateMemory(m, w, Resolve(m, w, c, "tp=4"), c);
  EXPECT_NEAR(static_cast<double>(sglang.kv.max_kv_tokens), 367'404, 0.04 * 367'404);
  w.inference.engine = ServingEngine::kVllm;
  const MemoryEstimate vllm = EstimateMemory(m, w, Resolve(m, w, c, "tp=4"), c);
  EXPECT_LT(vllm.kv.max_kv_tokens, sglang.kv.max_kv_tokens);
}

// TensorRT-LLM's PyTorch backend takes free_gpu_memory_fraction of what its profiling forward
// leaves free: the device total less its torch and non-torch peak, CUDA context included
// (KvCacheCreator._cal_max_memory); the fraction does not scale the weights, as vLLM's does.
TEST(Inference, TensorrtLlmFractionOfTheFreeMemory) {
  ClusterSpec c = Cluster("dgx-h100");
  c.gpus_per_node = 1;
  const ModelSpec m = Model("llama-3.1-8b");
  Workload w = Serve(4096, 0.9);
  w.inference.engine = ServingEngine::kTensorrtLlm;
  const MemoryEstimate trt = EstimateMemory(m, w, Resolve(m, w, c, "tp=1"), c);
  int64_t non_kv = 0;
  for (const MemoryTerm& t : trt.fullest().terms)
    if (t.name != "kv_cache" && (t.pool == Pool::kTorch || t.pool == Pool::kNonTorch)) non_kv += t.bytes;
  const int64_t page = trt.kv.kv_bytes_per_token * 16;
  const double available = 0.9 * static_cast<double>(UsableMemory(c.gpu) - non_kv);
  EXPECT_EQ(trt.kv.max_kv_tokens, static_cast<int64_t>(available / static_cast<double>(page)) * 16);
  // Its profile forward is max_num_tokens = 8192, two 4,096-token dummy requests at the
  // sampler, not vLLM's max_num_seqs rows of logits.
  EXPECT_EQ(Term(trt, "activation_workspace"), 8192LL * (3 * 14336 + 3 * 4096) * 2);
  // The same fraction read as vLLM's leaves less: it caps the weights as well.
  w.inference.engine = ServingEngine::kVllm;
  EXPECT_LT(EstimateMemory(m, w, Resolve(m, w, c, "tp=1"), c).kv.max_kv_tokens, trt.kv.max_kv_tokens);
}

// transformers' generate (engine: transformers) runs the whole prompt batch in one prefill
// forward, with no vLLM profile or sampler run: Llama-3.1-8B, 8 prompts of 2,048 tokens, holds
// one layer's 3f + 3h intermediates for all 16,384 tokens. With one short prompt and a long
// generation the decode's cache concatenation, one layer's keys for 4,112 tokens, is larger
// than the prefill or the 128,256 last-token logits (bf16 and an fp32 copy). Its KV room is
// the whole card less everything else, where vLLM's is 0.90 of it.
// transformers' generate on one GPU of a DGX H100: `batch` prompts of `prompt` tokens, `gen`
// generated.
Workload Generate(int batch, int64_t prompt, int64_t gen) {
  Workload w;
  w.task = Task::kInference;
  w.inference.engine = ServingEngine::kTransformers;
  w.inference.batch = batch;
  w.inference.prompt_len = prompt;
  w.inference.gen_len = gen;
  return w;
}

ClusterSpec OneH100() {
  ClusterSpec c = Cluster("dgx-h100");
  c.gpus_per_node = 1;
  return c;
}

// transformers' generate, its allocation sequence replayed through the allocator model
// (inference_memory.cc ReplayGenerate), against our runs on one H100
// (bench/data/calibration, transformers 5.17). Llama-3.1-8B at 8 x 2,048 prompt tokens + 256
// (l8b-gen-b8-p2k-g256): max_memory_allocated 20,196,633,088 B, in the prefill.
TEST(Inference, TransformersGenerateSizesThePrefill) {
  const ClusterSpec c = OneH100();
  const ModelSpec m = Model("llama-3.1-8b");
  Workload w = Generate(8, 2048, 256);
  const MemoryEstimate gen = EstimateMemory(m, w, Resolve(m, w, c, "tp=1"), c);
  EXPECT_NEAR(static_cast<double>(gen.fullest().allocated_peak) / 20196633088.0, 1.0, 0.01);
  EXPECT_EQ(Term(gen, "kv_cache"), 131072LL * 8 * (2048 + 256));
  w.inference.engine = ServingEngine::kVllm;
  const MemoryEstimate vllm = EstimateMemory(m, w, Resolve(m, w, c, "tp=1"), c);
  EXPECT_GT(gen.kv.max_kv_tokens, vllm.kv.max_kv_tokens);

  w.inference.engine = ServingEngine::kTransformers;
  w.inference.batch = 1;
  w.inference.prompt_len = 16;
  w.inference.gen_len = 4096;
  const MemoryEstimate decode = EstimateMemory(m, w, Resolve(m, w, c, "tp=1"), c);
  EXPECT_EQ(Term(decode, "activation_workspace"), 131072 / 32 / 2 * (16 + 4096));
}

// What generate leaves the caching allocator holding: each layer's cached keys and values
// split the blocks the prefill's intermediates freed, and the first decode step's copies
// find no freed block that holds them. Mistral-7B at 8 x 16,384 + 64 (m7b-gen-b8-p16k-g64)
// reserved 55,696,162,816 B and allocated 49,484,950,016; Llama-2-13B in fp16 at 8 x 4,096
// + 256 reserved 78,437,679,104 B. The kept blocks count in the reserve, never in what the
// step needs.
TEST(Inference, TransformersGenerateReserveReplayed) {
  const ClusterSpec c = OneH100();
  const ModelSpec mistral = Model("mistral-7b");
  Workload w = Generate(8, 16384, 64);
  const MemoryEstimate e = EstimateMemory(mistral, w, Resolve(mistral, w, c, "tp=1"), c);
  EXPECT_NEAR(static_cast<double>(e.fullest().reserved_peak) / 55696162816.0, 1.0, 0.03);
  EXPECT_NEAR(static_cast<double>(e.fullest().allocated_peak) / 49484950016.0, 1.0, 0.05);
  EXPECT_GT(Term(e, "allocator_cached"), 0);
  EXPECT_LT(e.fullest().required_peak, e.fullest().reserved_peak);

  const ModelSpec m = Model("llama-2-13b");
  w = Generate(8, 4096, 256);
  w.inference.weights = Dtype::kFp16;
  w.inference.kv_cache = Dtype::kFp16;
  const MemoryEstimate fp16 = EstimateMemory(m, w, Resolve(m, w, c, "tp=1"), c);
  EXPECT_NEAR(static_cast<double>(fp16.fullest().reserved_peak) / 78437679104.0, 1.0, 0.03);
  // Without a decode step no prompt cache is copied, and less stays reserved.
  w.inference.gen_len = 1;
  const MemoryEstimate once = EstimateMemory(m, w, Resolve(m, w, c, "tp=1"), c);
  EXPECT_LT(once.fullest().reserved_peak, fp16.fullest().reserved_peak - 4 * kGiB);
}

// QLoRA on one H100 as TRL runs it (bench/data/calibration, transformers 5.17, bitsandbytes
// 0.50): Llama-3.1-8B, NF4 base, r16 on every linear, full recomputation, 4 x 2,048 tokens
// (l8b-hf-qlora-s2k-b4-full) allocated 23,248,702,464 B and reserved 28,603,056,128; without
// peft's preparation at 2 x 4,096 (l8b-hf-qlora-noprep-s4k-b2-full) 21,167,811,584, reserved
// 25,163,726,848. The reserve holds the forward's freed layer blocks and the loss's hole
// beside the live bytes; a compiled run has no such term.
TEST(Memory, LoraOnOneGpuKeepsTheForwardsLayerBlocksThroughTheLoss) {
  const ClusterSpec c = OneH100();
  const ModelSpec m = Model("llama-3.1-8b");
  Workload w = Train(2048, 4);
  w.task = Task::kQlora;
  w.lora.rank = 16;
  w.lora.targets = {"all-linear"};
  const Layout l = Resolve(m, w, c, "framework=hf,dp=1,mbs=4,ac=full");
  const MemoryEstimate e = EstimateMemory(m, w, l, c);
  EXPECT_NEAR(static_cast<double>(e.fullest().allocated_peak) / 23248702464.0, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(e.fullest().reserved_peak) / 28603056128.0, 1.0, 0.05);
  EXPECT_EQ(Term(e, "forward_layer_cache"), Term(e, "recompute_layer"));
  EXPECT_EQ(Term(e, "logits_freed_hole"), 2LL * 8192 * 128256);
  EXPECT_EQ(e.fullest().peak_phase, Phase::kLossBackward);

  Workload plain = w;
  plain.kbit_prepare = Setting::kOff;
  plain.seq_len = 4096;
  plain.global_batch = 2;
  const MemoryEstimate p = EstimateMemory(m, plain, Resolve(m, plain, c, "framework=hf,dp=1,mbs=2,ac=full"), c);
  EXPECT_NEAR(static_cast<double>(p.fullest().allocated_peak) / 21167811584.0, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(p.fullest().reserved_peak) / 25163726848.0, 1.0, 0.05);

  Workload compiled = w;
  compiled.compile = Setting::kOn;
  EXPECT_EQ(Term(EstimateMemory(m, compiled, l, c), "forward_layer_cache"), 0);
}

// bitsandbytes pages an 8-bit optimizer's uint8 states, not their fp32 absmax blocks (one per
// 256 elements a state), which stay in GPU memory. A full fine-tune of Llama-3.1-8B in bf16
// with PagedAdamW8bit on one H100, 4 x 2,048 tokens, full recomputation
// (l8b-hf-pure-paged8bit-s2k-b4-full): max_memory_allocated 33,324,496,896 B, reached at the
// end of backward, where the first layer's recomputation runs beside the other gradients.
// With torch's foreach AdamW the step's own temporaries hold more than that moment.
TEST(Memory, PagedEightBitStatesKeepTheirScalesOnTheGpu) {
  const ClusterSpec c = OneH100();
  const ModelSpec m = Model("llama-3.1-8b");
  Workload w = Train(2048, 4);
  w.task = Task::kFinetune;
  w.master_weights = MasterWeights::kNone;
  w.optimizer = Optimizer::kAdamW8bit;
  w.paged_optimizer = true;
  const MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, "framework=hf,dp=1,mbs=4,ac=full"), c);
  const double params = static_cast<double>(CountParams(m).total);
  EXPECT_NEAR(static_cast<double>(Term(e, "optimizer_state_scales")), params * 8 / 256, 1);
  EXPECT_NEAR(static_cast<double>(Term(e, "optimizer_states")), params * 2, 1);
  EXPECT_NEAR(static_cast<double>(e.fullest().allocated_peak) / 33324496896.0, 1.0, 0.01);
  EXPECT_EQ(e.fullest().peak_phase, Phase::kStep);
  const double grads = static_cast<double>(Term(e, "gradients"));
  const double after = grads * static_cast<double>(LayerParams(m, 0) + CountParams(m).embedding) / params;
  EXPECT_NEAR(static_cast<double>(Term(e, "backward_tail")),
              static_cast<double>(Term(e, "recompute_layer") + Term(e, "activation_gradients")) - after, 2);
  Workload foreach = w;
  foreach.optimizer = Optimizer::kAdamW;
  foreach.optimizer_step = OptimizerStep::kForeach;  // adamw_torch
  foreach.paged_optimizer = false;
  EXPECT_EQ(Term(EstimateMemory(m, foreach, Resolve(m, foreach, c, "framework=hf,dp=1,mbs=4,ac=full"), c), "backward_tail"), 0);
}

// Serving with tp=N splits every expert over the N ranks, as vLLM's FusedMoE does by
// default: Mixtral 8x7B at TP2 holds half of each expert per GPU (llm-d's vLLM 0.19 log
// on 2 x H100: 465,936 KV tokens, which the whole-expert layout could not hold at all).
// Expert parallelism named keeps whole experts.
TEST(Inference, TensorParallelServingSplitsExperts) {
  ClusterSpec c = Cluster("dgx-h100");
  c.gpus_per_node = 2;
  Workload w;
  w.task = Task::kInference;
  ModelSpec m = Model("mixtral-8x7b");
  const Layout tp = Resolve(m, w, c, "tp=2");
  EXPECT_EQ(tp.etp, 2);
  EXPECT_EQ(Resolve(m, w, c, "tp=2,ep=2").etp, 1);
  const MemoryEstimate e = EstimateMemory(m, w, tp, c);
  EXPECT_TRUE(e.fits);
  EXPECT_NEAR(ToGiB(Term(e, "weights")), ToGiB(CountParams(m).total * 2) / 2, 0.5);
  EXPECT_GT(e.kv.max_kv_tokens, 400'000);
}

// memory-model.md 2.4 worked example: Llama-3-8B shape, s=8192, b=1, no TP, fused SwiGLU
// (Megatron): about 1.06 GiB per layer; s*b*(12h + 4h_kv + 6f) + 4sba exactly.
TEST(Activations, Llama3_8bLayerAtEightK) {
  ModelSpec m = Model("llama-3.1-8b");
  ClusterSpec c = Cluster("dgx-h100");
  Workload w = Train(8192, 8);
  Layout l = Resolve(m, w, c, "framework=megatron,tp=1");
  MemoryContext ctx{m, w, l, c};
  const int64_t sb = 8192;
  const int64_t expected = sb * (12 * 4096 + 4 * 1024 + 6 * 14336) + 4 * sb * 32;
  EXPECT_EQ(LayerActivationBytes(ctx, 0, Recompute::kNone), expected);
  EXPECT_NEAR(ToGiB(expected), 1.06, 0.01);
  // Full recomputation keeps the layer input only: 2sbh.
  EXPECT_EQ(LayerActivationBytes(ctx, 0, Recompute::kFull), 2 * sb * 4096);
  // TP=8 with SP divides every term by t.
  Layout tp = Resolve(m, w, c, "framework=megatron,tp=8,sp=on");
  MemoryContext tctx{m, w, tp, c};
  EXPECT_EQ(LayerActivationBytes(tctx, 0, Recompute::kNone), expected / 8);
  // torchtitan's SP plan redistributes the normed input to Replicate before the column-
  // parallel projections (PrepareModuleInput), so the QKV and w1/w3 matmuls save the
  // all-gathered full-sequence input; its unfused SwiGLU keeps 8f instead of 6f.
  Layout titan = Resolve(m, w, c, "framework=torchtitan,tp=8,sp=on");
  MemoryContext titan_ctx{m, w, titan, c};
  const int64_t h = 4096, t = 8;
  const int64_t attention = 2 * sb * h / t + 2 * sb * h + sb * (2 * (4096 + 2 * 1024) + 2 * 4096) / t + 4 * sb * 32 / t;
  const int64_t mlp = 2 * sb * h / t + 2 * sb * h + sb * 8 * 14336 / t;
  EXPECT_EQ(LayerActivationBytes(titan_ctx, 0, Recompute::kNone), attention + mlp);
}

// Megatron-core weights the experts' outputs inside the activation (weighted SwiGLU), so a
// MoE layer saves no fc2 output per routed token; torchtitan's combine multiplies after the
// experts and keeps it: 2h bytes x k x tokens x the imbalance allowance more.
// torchtitan's per-op selective recomputation under TP keeps the row-parallel w2's matmul
// output, partial sums over the whole sequence, and the reduce-scatters of wo and w2. Measured
// on one H100 as rank 0 (bench/data/calibration): Llama-2-13B at FSDP 8 x TP 2, 4 x 4096
// tokens, peaked at 50,725,107,712 B allocated; Llama-3.1-70B at FSDP 16 x TP 4, 4 x 4096, ran
// out of memory in its second step (called a fit while w2's output was priced sharded).
TEST(Activations, TorchtitanSelectiveKeepsTheRowParallelPartialSums) {
  const ClusterSpec two = Cluster("dgx-h100", 2), eight = Cluster("dgx-h100", 8);
  const ModelSpec l13 = Model("llama-2-13b"), l70 = Model("llama-3.1-70b");
  const Workload w13 = Train(4096, 32), w70 = Train(4096, 64);
  const MemoryEstimate a =
      EstimateMemory(l13, w13, Resolve(l13, w13, two, "framework=torchtitan,dp=8,tp=2,zero=3,mbs=4,ac=selective"), two);
  EXPECT_NEAR(static_cast<double>(a.fullest().allocated_peak) / 50725107712.0, 1.0, 0.03);
  const MemoryEstimate b =
      EstimateMemory(l70, w70, Resolve(l70, w70, eight, "framework=torchtitan,dp=16,tp=4,zero=3,mbs=4,ac=selective"), eight);
  EXPECT_FALSE(b.fits);
}

// torchtitan's per-op selective recomputation leaves the routed experts' grouped GEMMs off
// its save list: an MoE layer keeps its attention's share and the router's logits. Measured on
// one H100 as rank 0 (bench/data/calibration): Qwen3-30B-A3B at FSDP 32, 8192 tokens, peaked
// at 36,444,369,408 B allocated (half of no recomputation priced it 62% over).
TEST(Activations, TorchtitanSelectiveRecomputesGroupedExperts) {
  const ClusterSpec c = Cluster("dgx-h100", 4);
  const ModelSpec m = Model("qwen3-30b-a3b");
  Workload w = Train(8192, 32);
  w.torch_version = 211;  // as measured
  const MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, "framework=torchtitan,dp=32,zero=3,mbs=1,ac=selective"), c);
  EXPECT_NEAR(static_cast<double>(e.fullest().allocated_peak) / 36444369408.0, 1.0, 0.03);
}

TEST(Activations, MoeCombineSavesTheExpertOutputOutsideMegatron) {
  ModelSpec m = Model("qwen3-30b-a3b");
  ClusterSpec c = Cluster("dgx-h100");
  Workload w = Train(4096, 8);
  Layout meg = Resolve(m, w, c, "framework=megatron,ep=8");
  Layout titan = Resolve(m, w, c, "framework=torchtitan,ep=8");
  MemoryContext mc{m, w, meg, c}, tc{m, w, titan, c};
  const double routed = 4096.0 * 8 * 1.1;  // s x k x kMoeImbalance
  // The frameworks also differ in attention and SwiGLU fusion (about 55 MB here); the
  // combine's saved output is the rest of the gap.
  const double gap = static_cast<double>(LayerActivationBytes(tc, 0, Recompute::kNone) -
                                         LayerActivationBytes(mc, 0, Recompute::kNone));
  EXPECT_GT(gap, routed * 2 * 2048);
  EXPECT_LT(gap, routed * 2 * 2048 + 64e6);
}

// memory-model.md 1.3 and 3.1: the model-state formulas, framework by framework.
TEST(ModelStates, ByFramework) {
  ModelSpec m = Model("llama-3.1-8b");
  ClusterSpec c = Cluster("dgx-h100");
  Workload w = Train(4096, 64);
  const double P = static_cast<double>(CountParams(m).total);
  auto near = [&](int64_t bytes, double per_param) { EXPECT_NEAR(static_cast<double>(bytes), per_param * P, P * 1e-6); };

  MemoryEstimate fsdp = EstimateMemory(m, w, Resolve(m, w, c, "framework=fsdp"), c);
  near(Term(fsdp, "parameters"), 4.0 / 8);  // fp32 sharded params are the master copy
  near(Term(fsdp, "gradients"), 4.0 / 8);
  near(Term(fsdp, "optimizer_states"), 8.0 / 8);

  MemoryEstimate z2 = EstimateMemory(m, w, Resolve(m, w, c, "framework=deepspeed,zero=2"), c);
  near(Term(z2, "parameters"), 2);          // ZeRO-2: 2P + 18P/N at the step
  near(Term(z2, "gradients"), 2.0 / 8);
  near(Term(z2, "master_weights"), 4.0 / 8);
  near(Term(z2, "optimizer_states"), 8.0 / 8);
  near(Term(z2, "optimizer_step_temp"), 4.0 / 8);

  MemoryEstimate z3 = EstimateMemory(m, w, Resolve(m, w, c, "framework=deepspeed,zero=3"), c);
  near(Term(z3, "parameters"), 2.0 / 8);
  // 4 x min(P/N, sub_group_size=1e9): P/8 = 1.004e9 here, so the sub-group bounds it.
  EXPECT_EQ(Term(z3, "optimizer_step_temp"), static_cast<int64_t>(4 * std::min(P / 8, 1e9)));

  MemoryEstimate meg = EstimateMemory(m, w, Resolve(m, w, c, "framework=megatron,zero=1"), c);
  near(Term(meg, "parameters") + Term(meg, "gradients"), 6);  // 6 + 12/d (dist_optimizer.md)
  near(Term(meg, "master_weights") + Term(meg, "optimizer_states"), 12.0 / 8);
}

// Offloading moves states to the host: the GPU loses them, the node gains 16 B/param/N per rank.
TEST(Offload, DeepSpeedCpuOptimizer) {
  ModelSpec m = Model("llama-3.1-8b");
  ClusterSpec c = Cluster("dgx-h100");
  Workload w = Train(4096, 64);
  MemoryEstimate on = EstimateMemory(m, w, Resolve(m, w, c, "framework=deepspeed,zero=2"), c);
  MemoryEstimate off = EstimateMemory(m, w, Resolve(m, w, c, "framework=deepspeed,zero=2,offload_optimizer=cpu"), c);
  EXPECT_EQ(Term(off, "optimizer_states"), 0);
  EXPECT_EQ(Term(off, "master_weights"), 0);
  EXPECT_LT(off.fullest().device_peak, on.fullest().device_peak);
  const double P = static_cast<double>(CountParams(m).total);
  EXPECT_NEAR(static_cast<double>(off.per_node_host_bytes), 16 * P / 8 * 8, P * 0.01);
}

// LoRA under ZeRO-3 with parameter offload (peft's accelerate + DeepSpeed examples): the
// frozen base lives in host memory and only the gathered units reach the GPU.
TEST(Offload, LoraBaseOffloadedUnderZero3) {
  ModelSpec m = Model("llama-3.1-8b");
  ClusterSpec c = Cluster("dgx-h100");
  c.gpus_per_node = 1;
  Workload w = Train(512, 8);
  w.task = Task::kLora;
  MemoryEstimate on = EstimateMemory(m, w, Resolve(m, w, c, "framework=deepspeed,zero=3,mbs=8"), c);
  MemoryEstimate off = EstimateMemory(m, w, Resolve(m, w, c, "framework=deepspeed,zero=3,mbs=8,offload_params=cpu"), c);
  const double P = static_cast<double>(CountParams(m).total);
  EXPECT_NEAR(static_cast<double>(Term(on, "frozen_base_weights")), 2 * P, P * 0.01);
  EXPECT_EQ(Term(off, "frozen_base_weights"), 0);
  EXPECT_GT(Term(off, "gathered_units_forward"), 0);
  EXPECT_GE(static_cast<double>(off.per_node_host_bytes), 2 * P);
}

// CPU offload needs host memory the cluster states; unknown host memory cannot vouch for it.
TEST(Offload, HostMemoryIsCheckedWhenStated) {
  ModelSpec m = Model("llama-3.1-8b");
  ClusterSpec c = Cluster("dgx-h100");
  Workload w = Train(4096, 64);
  const Layout off = Resolve(m, w, c, "framework=deepspeed,zero=2,offload_optimizer=cpu");
  c.host_memory_bytes = 0;  // not stated: reported, not checked
  MemoryEstimate unknown = EstimateMemory(m, w, off, c);
  EXPECT_TRUE(unknown.host_fits);
  EXPECT_GT(unknown.per_node_host_bytes, 0);
  c.host_memory_bytes = unknown.per_node_host_bytes - 1;
  EXPECT_FALSE(EstimateMemory(m, w, off, c).host_fits);
}

// NVMe offload likewise: a layout that names it says the nodes have NVMe; a stated capacity
// is checked (DeepSpeed's swap files for the fp32 optimizer partition).
TEST(Offload, NvmeIsCheckedWhenStated) {
  ModelSpec m = Model("llama-3.1-8b");
  ClusterSpec c = Cluster("dgx-h100");
  Workload w = Train(4096, 64);
  const Layout off = Resolve(m, w, c, "framework=deepspeed,zero=3,offload_optimizer=nvme");
  c.nvme_bytes = 0;  // not stated: reported, not checked
  MemoryEstimate unknown = EstimateMemory(m, w, off, c);
  EXPECT_TRUE(unknown.nvme_fits);
  EXPECT_TRUE(unknown.fits);
  // Adam's fp32 master, m and v for 8 GPUs' partitions: the whole model's 12 B/param per node.
  const double P = static_cast<double>(CountParams(m).total);
  EXPECT_GE(static_cast<double>(unknown.per_node_nvme_bytes), 12 * P);
  c.nvme_bytes = unknown.per_node_nvme_bytes - 1;
  MemoryEstimate small = EstimateMemory(m, w, off, c);
  EXPECT_FALSE(small.nvme_fits);
  EXPECT_FALSE(small.fits);
  EXPECT_TRUE(small.gpu_fits);
}

// LoRA offloads its adapters' states only; pure bf16 (torchtune) keeps them in bf16.
TEST(Offload, HostBytesFollowTheRecipe) {
  ModelSpec m = Model("llama-3.1-70b");
  ClusterSpec c = Cluster("dgx-h100");
  Workload w = Train(2048, 16);
  const double P = static_cast<double>(CountParams(m).total);
  const std::string offload = ",dp=8,zero=3,mbs=2,offload_params=cpu,offload_optimizer=cpu";
  MemoryEstimate mixed = EstimateMemory(m, w, Resolve(m, w, c, "framework=fsdp" + offload), c);
  MemoryEstimate pure = EstimateMemory(m, w, Resolve(m, w, c, "framework=torchtune" + offload), c);
  // Per node: mixed 4 grad + 4 master (FSDP's sharded fp32 params) + 8 Adam = 16 B/param;
  // pure bf16 2 grad + 4 Adam + 2 params = 8.
  EXPECT_NEAR(static_cast<double>(mixed.per_node_host_bytes), 16 * P + 8 * 1e9, 0.02 * P);
  EXPECT_NEAR(static_cast<double>(pure.per_node_host_bytes), 8 * P + 8 * 1e9, 0.02 * P);
  w.task = Task::kLora;
  MemoryEstimate lora = EstimateMemory(m, w, Resolve(m, w, c, "framework=fsdp" + offload), c);
  EXPECT_LT(static_cast<double>(lora.per_node_host_bytes), 2.2 * P + 8 * 1e9);
}

// Pipelines: the first stage keeps pp micro-batches in flight (1F1B), the last holds the logits.
TEST(Pipeline, FirstStageHoldsMostActivations) {
  ModelSpec m = Model("llama-3.1-70b");
  ClusterSpec c = Cluster("dgx-h100", 4);
  Workload w = Train(4096, 128);
  MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, "framework=megatron,tp=8,pp=4,sp=on"), c);
  ASSERT_EQ(e.stages.size(), 4u);
  auto term = [](const StageMemory& s, const char* n) {
    for (const MemoryTerm& t : s.terms)
      if (t.name == n) return t.bytes;
    return int64_t{0};
  };
  EXPECT_NEAR(static_cast<double>(term(e.stages[0], "activations")), 4.0 * term(e.stages[3], "activations"), 1e6);
  EXPECT_EQ(term(e.stages[0], "logits_and_loss"), 0);
  EXPECT_GT(term(e.stages[3], "logits_and_loss"), 0);
}

// Llama 3 405B: 126 layers on 16 stages split as Megatron does (uneven, earlier stages first).
TEST(Pipeline, UnevenStages) {
  ModelSpec m = Model("llama-3.1-405b");
  Layout l;
  l.pp = 16;
  std::vector<int> s = StageLayers(m, l);
  EXPECT_EQ(s.front(), 8);
  EXPECT_EQ(s.back(), 7);
  EXPECT_EQ(std::accumulate(s.begin(), s.end(), 0), 126);
}

// torchtitan splits its own way: the embeddings and the head weigh a layer each, the rest goes
// evenly over the virtual stages, the first ones taking the remainder (pipeline.py).
TEST(Pipeline, TorchtitanSplitsAsTorchtitan) {
  const ModelSpec m = Model("llama-3.1-405b");
  Layout l;
  l.framework = Framework::kTorchtitan;
  l.pp = 8;
  EXPECT_EQ(StageLayers(m, l), (std::vector<int>{15, 16, 16, 16, 16, 16, 16, 15}));
  l.vpp = 2;  // virtual stages of 7, 8 x 14, 7: rank 0 holds the first and the ninth
  EXPECT_EQ(StageLayers(m, l), (std::vector<int>{15, 16, 16, 16, 16, 16, 16, 15}));
  l.pp = 4;
  l.pp_schedule = PpSchedule::kZbv;  // a V: rank 0 holds the first and the last of 15, 16 x 6, 15
  EXPECT_EQ(StageLayers(m, l), (std::vector<int>{30, 32, 32, 32}));
  Layout small;
  small.framework = Framework::kTorchtitan;
  small.pp = 4;  // Llama 3.1 8B: 34 effective layers, 9, 9, 8, 8
  EXPECT_EQ(StageLayers(Model("llama-3.1-8b"), small), (std::vector<int>{8, 9, 8, 7}));
}

TEST(Allocator, Rounding) {
  EXPECT_EQ(RoundAllocation(1), 512);
  EXPECT_EQ(RoundAllocation(1000), 1024);
  EXPECT_EQ(RoundAllocation(11 * kMiB + 1), 12 * kMiB);
  EXPECT_EQ(RoundAllocation(0), 0);
}

// The allocator model (caching_allocator.h) on hand-made sequences, as allocator_replay.py's
// self-test runs them; among equal free blocks the newer segment's, lower in memory, wins.
TEST(Allocator, ModelSegmentsSplitsAndMerges) {
  CachingAllocatorModel a;
  a.Malloc(kMiB);                      // a 2 MiB small segment
  a.Free(a.Malloc(30 * kMiB));         // its own 30 MiB segment, then free
  a.Free(a.Malloc(30 * kMiB));         // served by the freed block
  a.Malloc(31 * kMiB);                 // too big for it: a 32 MiB segment
  EXPECT_EQ(a.reserved_peak(), 64 * kMiB);
  CachingAllocatorModel b;
  const int x = b.Malloc(3 * kMiB), y = b.Malloc(3 * kMiB);  // one 20 MiB segment, split
  b.Free(x);
  b.Free(y);
  b.Malloc(8 * kMiB);  // the merged block serves it
  EXPECT_EQ(b.reserved_peak(), 20 * kMiB);
}

// A cache grown by concatenation, layer by layer: the prompt's exact 320 MiB blocks never hold
// a row more, so the first step opens a 322 MiB segment per layer and the second one more;
// after that each freed segment holds the next: 8 x 320 + 9 x 322 MiB.
TEST(Allocator, ModelConcatenatedCache) {
  CachingAllocatorModel a;
  const int64_t row = 80 * 1024, prompt = 4096;
  std::vector<int> live;
  for (int l = 0; l < 8; ++l) live.push_back(a.Malloc(prompt * row));
  for (int step = 1; step < 4; ++step)
    for (int& h : live) {
      const int next = a.Malloc((prompt + step) * row);
      a.Free(h);
      h = next;
    }
  EXPECT_EQ(a.reserved_peak(), (8 * 320 + 9 * 322) * kMiB);
}

TEST(Peaks, AllocatedReservedDeviceAreOrdered) {
  ModelSpec m = Model("llama-3.1-8b");
  ClusterSpec c = Cluster("dgx-h100");
  Workload w = Train(8192, 64);
  MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, "framework=fsdp,ac=full"), c);
  const StageMemory& s = e.fullest();
  EXPECT_LT(s.allocated_peak, s.reserved_peak);
  EXPECT_LT(s.reserved_peak, s.device_peak);
  // The step needs its rounded allocations and the least fragmentation; when memory allows
  // the cache grows past them, and FSDP's side streams keep blocks of their own.
  EXPECT_LT(s.required_peak, s.device_peak);
  EXPECT_EQ(e.headroom_bytes, e.capacity_bytes - s.required_peak);
}

// bench/data/calibration/l8b-tt-fsdp8-s8k-b2-full, measured on one H100 as rank 0 of FSDP 8
// (Llama-3.1-8B, torchtitan's recipe, 2 x 8192 tokens, full recomputation): the step peaked at
// 42,605,371,392 B allocated inside the loss's backward, 24.02 GiB held before it plus two fp32
// logit-sized buffers (15.66 GiB), before any layer's backward gathered a unit or re-ran a layer.
TEST(Peaks, TheLossBackwardPeaksApartFromTheLayers) {
  const ModelSpec m = Model("llama-3.1-8b");
  const ClusterSpec c = Cluster("dgx-h100");
  Workload w = Train(8192, 16);
  w.torch_version = 211;  // as measured: the FSDP root reshards after forward
  const MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, "framework=torchtitan,dp=8,zero=3,mbs=2,ac=full"), c);
  const StageMemory& s = e.fullest();
  EXPECT_EQ(UsageAt(s, Phase::kLossBackward, e.allocator).allocated, s.allocated_peak);
  EXPECT_NEAR(static_cast<double>(s.allocated_peak) / 42605371392.0, 1.0, 0.03);
  for (const MemoryTerm& t : s.terms) {
    if (t.name == "logits_grad") {
      EXPECT_EQ(t.last, Phase::kLossBackward);
    }
    if (t.name == "recompute_layer" || t.name == "gathered_units_backward" || t.name == "activation_gradients") {
      EXPECT_EQ(t.first, Phase::kBackward) << t.name;
    }
  }
}

// The `count` terms of `pool` add their bytes to the reserve in each phase they live, and
// change neither what the step allocates nor what it needs.
void ExpectPoolAddsToTheReserveAlone(const MemoryEstimate& e, Pool pool, size_t count) {
  StageMemory without = e.fullest();
  std::erase_if(without.terms, [pool](const MemoryTerm& t) { return t.pool == pool; });
  ASSERT_EQ(without.terms.size() + count, e.fullest().terms.size());
  for (int p = 0; p < kPhaseCount; ++p) {
    const Phase phase = static_cast<Phase>(p);
    int64_t held = 0;
    for (const MemoryTerm& t : e.fullest().terms)
      if (t.pool == pool && t.first <= phase && phase <= t.last) held += t.bytes;
    const PhaseUsage with = UsageAt(e.fullest(), phase, e.allocator), bare = UsageAt(without, phase, e.allocator);
    EXPECT_EQ(with.allocated, bare.allocated) << PhaseName(phase);
    EXPECT_EQ(with.required, bare.required) << PhaseName(phase);
    EXPECT_EQ(with.reserved, bare.reserved + held) << PhaseName(phase);
  }
}

// One fragment term, live at `phase` alone, that grows the reserve there and nothing else.
void ExpectOneFragmentAt(const MemoryEstimate& e, Phase phase) {
  for (const MemoryTerm& t : e.fullest().terms)
    if (t.pool == Pool::kFragment) {
      EXPECT_TRUE(t.first == phase && t.last == phase) << t.name;
    }
  ExpectPoolAddsToTheReserveAlone(e, Pool::kFragment, 1);
}

// FSDP's all-gather and reduce-scatter streams keep blocks of their own, which the compute
// stream never reuses. Traced on one H100 (bench/calibrate, CALIBRATE_TRACE_EVENTS=1),
// Llama-3.1-8B over FSDP 8 in fp32 (bench/data/calibration/l8b-tt-fsdp8-fp32-s4k-b2-full)
// mapped 3.74 GiB on the reduce-scatter stream, its whole fp32 gradient shard, and 4.73 GiB
// on the all-gather stream: the root's embeddings, head and norm (3.91 GiB) with the first
// layer (0.81 GiB) prefetched beside them. max_memory_reserved: 40.59 GiB. The side streams'
// blocks count in the reserve, never in what the step needs.
TEST(Peaks, FsdpSideStreamsKeepBlocksOfTheirOwn) {
  const ModelSpec m = Model("llama-3.1-8b");
  const ClusterSpec c = Cluster("dgx-h100");
  Workload w = Train(4096, 16, Dtype::kFp32);
  w.master_weights = MasterWeights::kNone;
  w.torch_version = 211;
  const MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, "framework=torchtitan,dp=8,zero=3,mbs=2,ac=full"), c);
  const int64_t layer = 4096LL * (4096 + 1024 + 1024 + 4096) + 3LL * 4096 * 14336 + 2 * 4096;  // 218,112,000
  const int64_t root = 2LL * 128256 * 4096 + 4096;
  EXPECT_EQ(Term(e, "reduce_scatter_stream_pool"), Term(e, "gradients"));
  EXPECT_EQ(Term(e, "all_gather_stream_pool"), 4 * root);
  EXPECT_EQ(Term(e, "all_gather_stream_pool_idle"), 4 * layer);
  EXPECT_NEAR(ToGiB(Term(e, "all_gather_stream_pool") + Term(e, "all_gather_stream_pool_idle")), 4.73, 0.03 * 4.73);
  EXPECT_NEAR(ToGiB(Term(e, "reduce_scatter_stream_pool")), 3.74, 0.01 * 3.74);
  EXPECT_NEAR(ToGiB(e.fullest().reserved_peak), 40.59, 0.03 * 40.59);

  ExpectPoolAddsToTheReserveAlone(e, Pool::kStream, 3);
}

// The eager loss frees its bf16 logits before backward asks for two fp32 blocks of the loss's
// size, and neither fits in the logits' freed block: the reserve holds it beside the 12 B a
// logit that live. Traced on one H100 (bench/calibrate, CALIBRATE_TRACE_EVENTS=1), Llama-3.1-8B
// over FSDP 8 at 2 x 8192 tokens (bench/data/calibration/l8b-tt-fsdp8-s8k-b2-full) mapped the
// loss's blocks over 3.91 + 3 x 7.83 GiB, 3.91 GiB past the 23.48 live, and reserved 51.68 GiB.
TEST(Peaks, EagerLossLeavesTheLogitsBlockFree) {
  const ModelSpec m = Model("llama-3.1-8b");
  const ClusterSpec c = Cluster("dgx-h100");
  Workload w = Train(8192, 16);
  w.torch_version = 211;
  const MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, "framework=torchtitan,dp=8,zero=3,mbs=2,ac=full"), c);
  const int64_t logits = 2LL * 8192 * 128256;
  EXPECT_EQ(Term(e, "logits_grad"), 12 * logits);
  EXPECT_EQ(Term(e, "logits_freed_hole"), 2 * logits);  // 4,202,692,608 B, whole 2 MiB pages
  EXPECT_NEAR(ToGiB(e.fullest().reserved_peak), 51.68, 0.03 * 51.68);

  // A term of its own: it grows the reserve at the loss's backward and nowhere else, and never
  // what the step allocates or needs.
  ExpectOneFragmentAt(e, Phase::kLossBackward);

  // torchtune's chunked loss and TP's loss_parallel free their blocks in other orders: no
  // such term, and their cache growth holds what they leave.
  w.loss = LossKind::kChunked;
  const MemoryEstimate chunked = EstimateMemory(m, w, Resolve(m, w, c, "framework=fsdp,dp=8,zero=3,mbs=2,ac=full"), c);
  EXPECT_EQ(Term(chunked, "logits_freed_hole"), 0);
  w.loss = LossKind::kAuto;
  const MemoryEstimate tp = EstimateMemory(m, w, Resolve(m, w, c, "framework=torchtitan,dp=4,tp=2,zero=3,mbs=2,ac=full"), c);
  EXPECT_EQ(Term(tp, "logits_freed_hole"), 0);
}

// When backward reaches FSDP2's root unit, its grads are copied into one flat reduce-scatter
// input. Traced on one H100 (bench/data/allocator_traces/l8b-tune-fsdp8-s4k-b2-full),
// torchtune's full fine-tune of Llama-3.1-8B over FSDP 8 at 2 x 4,096 (native segments,
// chunked loss) asked for 1.96 GiB there, where no freed block held more than the head's
// 0.98 GiB weight grad: a segment of its own, and a reserve of 21.87 GiB.
TEST(Peaks, ChunkedLossLeavesNoBlockForTheRootsGrads) {
  const ModelSpec m = Model("llama-3.1-8b");
  const ClusterSpec c = Cluster("dgx-h100");
  Workload w = Train(4096, 16);
  w.task = Task::kFinetune;
  w.master_weights = MasterWeights::kNone;
  w.loss = LossKind::kChunked;
  w.torch_version = 211;
  w.custom_sharded_layers = 0;  // the traced run kept the embeddings and the head in the root
  const std::string layout = "framework=torchtune,dp=8,zero=3,mbs=2,ac=full";
  const MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, layout), c);
  EXPECT_EQ(Term(e, "root_grads_segment"), 2 * (2LL * 128256 * 4096 + 4096));  // embeddings, head, norm, bf16
  EXPECT_NEAR(ToGiB(e.fullest().reserved_peak), 21.87, 0.03 * 21.87);
  ExpectOneFragmentAt(e, Phase::kBackward);

  // The eager loss frees whole-logit fp32 blocks that hold it; LoRA leaves the root frozen.
  w.loss = LossKind::kStandard;
  EXPECT_EQ(Term(EstimateMemory(m, w, Resolve(m, w, c, layout), c), "root_grads_segment"), 0);
  w.loss = LossKind::kChunked;
  w.task = Task::kLora;
  EXPECT_EQ(Term(EstimateMemory(m, w, Resolve(m, w, c, layout), c), "root_grads_segment"), 0);
  // A smaller vocabulary changes nothing: Llama-2-7B's root grads (0.49 GiB) are still twice
  // its head's weight grad, the largest block the chunked loss frees at 2 x 4,096 tokens.
  w.task = Task::kFinetune;
  const ModelSpec l2 = Model("llama-2-7b");
  EXPECT_EQ(Term(EstimateMemory(l2, w, Resolve(l2, w, c, layout), c), "root_grads_segment"),
            2 * (2LL * 32000 * 4096 + 4096));
  // Where the head is a unit of its own (torchtune's Llama 3 configs) the root keeps the norm alone.
  w.custom_sharded_layers = -1;
  EXPECT_EQ(Term(EstimateMemory(m, w, Resolve(m, w, c, layout), c), "root_grads_segment"), 0);
}

// bench/data/calibration/l8b-tt-fsdp2-s4k-b2-full: FSDP 2 of Llama-3.1-8B at 2 x 4096 tokens
// allocated 74.85 GiB of an 80 GB H100 and reserved 78.30 GiB, not the quarter more its cache
// grows to elsewhere: an allocation that fails frees the cached blocks and retries.
TEST(Peaks, TheCacheHoldsNoMoreThanTheCard) {
  const ModelSpec m = Model("llama-3.1-8b");
  ClusterSpec c = Cluster("dgx-h100");
  c.gpus_per_node = 2;
  const Workload w = Train(4096, 4);
  const MemoryEstimate e = EstimateMemory(m, w, Resolve(m, w, c, "framework=torchtitan,dp=2,zero=3,mbs=2,ac=full"), c);
  const StageMemory& s = e.fullest();
  int64_t non_torch = 0;
  for (const MemoryTerm& t : s.terms)
    if (t.pool == Pool::kNonTorch) non_torch += t.bytes;
  // What the step needs (the allocations and the least fragmentation) or the card, whichever is more.
  EXPECT_EQ(s.reserved_peak, std::max(e.capacity_bytes - non_torch, s.required_peak - non_torch));
  EXPECT_LT(s.reserved_peak, static_cast<int64_t>(1.25 * static_cast<double>(s.allocated_peak)));
  EXPECT_NEAR(ToGiB(s.reserved_peak) / 78.30, 1.0, 0.03);
}

}  // namespace
}  // namespace shardplan
