// Serving: weights by format, KV cache per token (GQA, MLA), the activation workspace of a
// profile forward, and the KV budget as vLLM computes it (memory-model.md 5).
#include <algorithm>
#include <cmath>

#include "planner/caching_allocator.h"
#include "planner/deepspeed_buckets.h"
#include "planner/framework_defaults.h"
#include "planner/memory_terms.h"
#include "planner/quantization.h"
#include "planner/recipe.h"
#include "planner/units.h"

namespace shardplan {
namespace {

constexpr int64_t kBlock = defaults::kVllmBlockTokens;
// vLLM V1's profile ends with a dummy sampler run over max_num_seqs requests: whole-vocabulary
// logits (gathered on every TP rank), their fp32 copy, the softmax and the top-k/top-p sort's
// values and int64 indices. Its peak per logit element in llm-d's vLLM 0.19 H100 logs
// (torch peak / (1024 x vocab)): Llama-3.1-8B 15.4 B, Qwen2.5-7B 15.2, Qwen3-8B 15.3,
// Gemma-2-9B 15.0, Gemma-3-12B 15.8, phi-4 15.9, Mistral-Small-24B 16.2. It is the whole
// activation peak whenever it exceeds the forward's (freed before the sampler runs).
constexpr double kSamplerBytesPerLogit = 15.5;
// The non-torch memory vLLM's profile sees grow after the CUDA context exists (the context
// itself is outside its budget): 0.24-0.27 GiB on one GPU in the same logs (cuBLASLt and
// attention-backend workspaces, compiled-graph state).
constexpr int64_t kVllmNonTorchBase = 256 * kMiB;

// Layers of a stage that hold a KV cache: all of a transformer's, a hybrid's attention blocks.
double KvLayers(const ModelSpec& m, const StageShape& s) {
  if (!m.is_hybrid()) return s.layers;
  double n = 0;
  for (int64_t l = s.first_layer; l < s.first_layer + s.layers; ++l) n += m.has_attention(l) ? 1 : 0;
  return n;
}

// What transformers' generate leaves the caching allocator holding past the bytes it ever
// has live at once, from the allocation sequence of its Llama-style decoder, replayed through
// a model of the allocator (caching_allocator.h). The sequence was read from the allocator's
// event trace of our H100 runs (transformers 5.17; bench/data/allocator_traces): each weight
// its own block; the prompt's embeddings and the rotary tables; then, layer by layer over
// batch x prompt tokens, the RMSNorm's fp32 upcasts, the projections, rotary embedding's
// halves and products, the cache's copies of the keys and values, attention, the MLP and the
// residual adds (and Qwen3's per-head q and k norms), each freed when the code lets go of
// it; then each decode step's torch.cat of every layer's keys and values one token longer.
// Each layer's keys and values land in blocks the prefill's larger intermediates freed and
// split them, so the next layer's intermediates ask for fresh segments; the first decode
// steps' copies find no freed block that holds them. Over our eight generate runs the
// reserve stops growing after the first two decode steps, so four are replayed. Replayed, the
// sequence lands within 0.2% of the reserve six runs measured and -1.8% on Mistral-7B at
// 8 x 16,384; Llama-3.2-1B at 64 x 4,096, measured again once the harness stopped
// allocating a second copy of its tied head, scores +0.3% (bench/data/calibration).
struct GenerateReplay {
  int64_t reserved = 0, allocated = 0;
};

// A dense decoder whose every layer keeps the whole context (Mistral's sliding_window is the
// attention mask's: its DynamicCache keeps every token, as the measured run shows). Mixed
// local and global layers (Gemma's) keep sliding caches the sequence does not follow.
bool GenerateReplayable(const ModelSpec& m) {
  return !m.is_moe() && !m.is_hybrid() && m.kv_lora_rank == 0 && m.sliding_window_pattern == 0 &&
         m.intermediate > 0 && m.head_dim > 0;
}

GenerateReplay ReplayGenerate(const ModelSpec& m, const StageShape& s, int tp, int64_t batch, int64_t prompt,
                              int64_t gen, double weight_bytes, int64_t e) {
  CachingAllocatorModel a;
  if (s.layers <= 0) return {};
  const int64_t h = m.hidden, q = m.q_width() / tp, kv = std::max<int64_t>(1, m.kv_heads / tp) * m.head_dim;
  const int64_t f = m.intermediate / tp, hd = m.head_dim, t = batch * prompt;
  auto weight = [&](int64_t params) { a.Malloc(static_cast<int64_t>(weight_bytes * static_cast<double>(params))); };
  if (s.first) weight(m.vocab * h);
  for (int l = 0; l < s.layers; ++l) {
    weight(q * h), weight(kv * h), weight(kv * h), weight(h * q);
    weight(f * h), weight(f * h), weight(h * f);
  }
  if (s.last && !m.tied_embeddings) weight(m.vocab * h);
  // The stage's input (on the first, the prompt's embeddings) stays referenced through the
  // whole forward.
  const int embeddings = a.Malloc(t * h * e);
  // Rotary tables: fp32 frequencies and their cos and sin, cast to the model's dtype.
  const int t0 = a.Malloc(t * 4), t1 = a.Malloc(t * hd * 2), t2 = a.Malloc(t * hd * 2), t3 = a.Malloc(t * hd * 4);
  const int t4 = a.Malloc(t * hd * 4), t5 = a.Malloc(t * hd * 4);
  a.Free(t4);
  const int t6 = a.Malloc(t * hd * 4), t7 = a.Malloc(t * hd * 4);
  a.Free(t6);
  const int cos = a.Malloc(t * hd * e), sin = a.Malloc(t * hd * e);
  for (int id : {t0, t1, t3, t5, t7}) a.Free(id);
  // RMSNorm over `rows` vectors of `width`: x.float(), its square, the mean, + eps, rsqrt,
  // x * rsqrt, back to the dtype, * weight.
  auto norm_of = [&](int64_t rows, int64_t width) {
    const int up = a.Malloc(rows * width * 4), sq = a.Malloc(rows * width * 4), mean = a.Malloc(rows * 4);
    a.Free(sq);
    const int eps = a.Malloc(rows * 4), rs = a.Malloc(rows * 4);
    a.Free(eps);
    const int scaled = a.Malloc(rows * width * 4);
    a.Free(rs), a.Free(up);
    const int cast = a.Malloc(rows * width * e), out = a.Malloc(rows * width * e);
    a.Free(cast), a.Free(scaled), a.Free(mean);
    return out;
  };
  auto norm = [&] { return norm_of(t, h); };
  // Per-head q and k norms (Qwen3) normalize the projection into a new tensor.
  auto projected = [&](int64_t width) {
    const int p = a.Malloc(t * width * e);
    if (!m.qk_norm) return p;
    const int n = norm_of(t * width / hd, hd);
    a.Free(p);
    return n;
  };
  // q * cos + rotate_half(q) * sin: the product, the negated half, the concatenation, the
  // second product, the sum.
  auto rotary = [&](int64_t width) {
    const int c = a.Malloc(t * width * e), neg = a.Malloc(t * width * e / 2), cat = a.Malloc(t * width * e);
    a.Free(neg);
    const int s2 = a.Malloc(t * width * e);
    a.Free(cat);
    const int sum = a.Malloc(t * width * e);
    a.Free(c), a.Free(s2);
    return sum;
  };
  std::vector<std::pair<int, int>> cache;
  int x = embeddings;
  for (int l = 0; l < s.layers; ++l) {
    const int n = norm();
    const int qp = projected(q), kp = projected(kv), vp = a.Malloc(t * kv * e);
    const int qr = rotary(q), kr = rotary(kv);
    a.Free(qp), a.Free(kp);
    cache.push_back({a.Malloc(t * kv * e), a.Malloc(t * kv * e)});  // the cache's copies
    a.Free(kr), a.Free(vp);
    const int att = a.Malloc(t * q * e), o = a.Malloc(t * h * e);
    a.Free(att), a.Free(qr), a.Free(n);
    const int r1 = a.Malloc(t * h * e);
    a.Free(o);
    const int n2 = norm();
    const int gate = a.Malloc(t * f * e), act = a.Malloc(t * f * e);
    a.Free(gate);
    const int up = a.Malloc(t * f * e), mul = a.Malloc(t * f * e);
    a.Free(act), a.Free(up);
    const int down = a.Malloc(t * h * e);
    a.Free(mul), a.Free(n2);
    const int r2 = a.Malloc(t * h * e);
    a.Free(down), a.Free(r1);
    if (x != embeddings) a.Free(x);  // the layer's input, held by the caller until it returns
    x = r2;
  }
  int logits = -1;
  if (s.last) {
    const int n = norm();
    a.Free(x);
    const int bf = a.Malloc(batch * m.vocab * e);
    logits = a.Malloc(batch * m.vocab * 4);  // the last position's, copied to fp32
    a.Free(bf), a.Free(n);
  } else {
    a.Free(x);
  }
  a.Free(embeddings), a.Free(cos), a.Free(sin), a.Free(t2);
  for (int64_t step = 1; step < std::min<int64_t>(gen, 5); ++step) {
    for (auto& [k, v] : cache) {
      const int k2 = a.Malloc(batch * (prompt + step) * kv * e);
      a.Free(k);
      k = k2;
      const int v2 = a.Malloc(batch * (prompt + step) * kv * e);
      a.Free(v);
      v = v2;
    }
    if (logits >= 0) {
      a.Free(logits);
      logits = a.Malloc(batch * m.vocab * 4);
    }
  }
  return {a.reserved_peak(), a.allocated_peak()};
}

}  // namespace

int64_t RecurrentStateBytesPerSequence(const ModelSpec& m, const StageShape& s, int tp) {
  // Per linear-mixer block and sequence: the conv's last conv_kernel - 1 inputs of x, B and C
  // in the model's dtype and the recurrent state, heads x head_dim x state, in the cache dtype
  // (Mamba-2: mamba_ssm_cache_dtype, fp32 in Nemotron-H's configs; Gated DeltaNet: the model's;
  // vLLM mamba_utils.py MambaStateShapeCalculator), both split by TP.
  const ModelSpec::LinearMixer& x = m.linear;
  if (!m.is_hybrid() || x.heads == 0) return 0;
  int64_t blocks = 0;
  for (int64_t l = s.first_layer; l < s.first_layer + s.layers; ++l) blocks += m.has_linear_mixer(l) ? 1 : 0;
  const double conv = static_cast<double>(x.conv_dim()) * static_cast<double>(x.conv_kernel - 1) * DtypeBytes(m.dtype);
  const double ssm = static_cast<double>(x.inner()) * static_cast<double>(x.state) * DtypeBytes(x.ssm_cache);
  return static_cast<int64_t>(static_cast<double>(blocks) * (conv + ssm) / std::max(1, tp));
}

int64_t KvBytesPerToken(const MemoryContext& ctx, const StageShape& s) {
  const ModelSpec& m = ctx.m;
  const double bytes = DtypeBytes(ctx.l.kv_cache);
  const double layers = KvLayers(m, s);
  if (m.attention == AttentionKind::kMla) {  // one latent + rope key per layer, replicated over TP
    // DSA's indexer keeps its own key per token: fp8, with an fp32 scale per 128 elements
    // (vLLM DeepseekV32IndexerCache: head_dim + head_dim / quant_block_size * 4 bytes).
    const double indexer = m.index_heads > 0 ? m.index_head_dim + m.index_head_dim / 128 * 4.0 : 0;
    return static_cast<int64_t>(layers * (static_cast<double>(m.kv_lora_rank + m.qk_rope_head_dim) * bytes + indexer));
  }
  const int64_t kv_per_rank = std::max<int64_t>(1, m.kv_heads / ctx.l.tp);  // replicated when kv < tp
  return static_cast<int64_t>(2.0 * layers * kv_per_rank * m.head_dim * bytes);
}

double ServedWeightBytes(const MemoryContext& ctx, const StageShape& s) {
  // Linear layers take the weight format; embeddings, head and norms stay 16-bit, and so do
  // the modules a quantized checkpoint leaves out (its modules_to_not_convert / ignore list).
  const double root = static_cast<double>(s.root_params);
  return ServedWeightBytes(ctx.m, ctx.l.weights, static_cast<double>(s.dense_params + s.expert_params) - root,
                           static_cast<double>(s.kept_params), root);
}

void AddInference(const MemoryContext& ctx, const StageShape& s, std::vector<MemoryTerm>& out) {
  const ModelSpec& m = ctx.m;
  const Layout& l = ctx.l;
  const double weights = ServedWeightBytes(ctx, s);
  if (l.offload_params != Offload::kNone) {
    // ZeRO-Inference (DeepSpeed's 2022 post): weights stay in host memory or on NVMe and
    // stream in layer by layer; the GPU holds the layer running and the prefetched ones, up
    // to stage3_max_live_parameters.
    const ZeroBuckets b = DeepSpeedBuckets(m, ctx.w, l);
    const double per_param = weights / std::max(1.0, static_cast<double>(s.dense_params + s.expert_params));
    const double live = std::min<double>(2.0 * static_cast<double>(s.layer_params) + static_cast<double>(b.prefetch_bucket),
                                         static_cast<double>(b.max_live_parameters));
    out.push_back({"weights", static_cast<int64_t>(std::min(weights, per_param * live)), 3, Phase::kSetup, Phase::kForward,
                   Pool::kTorch, "ZeRO-Inference: the running layer + the prefetch bucket, capped by max_live_parameters"});
    if (l.offload_params == Offload::kCpu)
      out.push_back({"weights_offloaded", static_cast<int64_t>(weights), 1, Phase::kSetup, Phase::kForward, Pool::kHost,
                     "ZeRO-Inference: every weight in pinned host memory"});
  } else {
    out.push_back({"weights", static_cast<int64_t>(weights), std::max(1, s.layers * 7), Phase::kSetup, Phase::kForward,
                   Pool::kTorch,
                   "weights per TP rank by format, scales and the checkpoint's 16-bit modules included (memory-model.md 5.1)"});
  }
  const int64_t context = ctx.w.context_len();
  const int64_t kv_tokens = static_cast<int64_t>(std::max(1, l.batch)) * context;
  const int64_t kv_per_token = KvBytesPerToken(ctx, s);
  out.push_back({"kv_cache", kv_per_token * kv_tokens, std::max(1, s.layers), Phase::kSetup, Phase::kForward,
                 Pool::kTorch, "2 x layers x kv heads/TP x head_dim x dtype per token (vLLM kv_cache_interface.py)"});
  if (const int64_t state = RecurrentStateBytesPerSequence(m, s, l.tp); state > 0)
    out.push_back({"ssm_state", state * std::max(1, l.batch), std::max(1, s.layers), Phase::kSetup, Phase::kForward,
                   Pool::kTorch, "linear mixers' conv and recurrent state per sequence, x their blocks / TP"});
  // Profile forward of max_num_batched_tokens: the widest intermediates of one layer; on the
  // last stage the dummy sampler run that follows, whichever is larger. transformers'
  // generate has no profile: its peak is the prefill, every prompt of the batch at once.
  const double t = l.tp;
  const bool generate = ctx.w.inference.engine == ServingEngine::kTransformers;
  const ServingProfile profile = ResolveServingProfile(ctx.w, ctx.c.gpu);
  const int64_t batched = profile.tokens;
  // TensorRT-LLM's dummy context requests fill max_num_tokens whatever the sequence length
  // (create_dummy_context_requests: requests of up to max_seq_len until the tokens are spent).
  const bool trtllm = ctx.w.inference.engine == ServingEngine::kTensorrtLlm;
  const double tokens = generate ? static_cast<double>(std::max<int64_t>(1, l.batch) * ctx.w.inference.prompt_len)
                        : trtllm ? static_cast<double>(batched)
                                 : static_cast<double>(std::min<int64_t>(batched, std::max<int64_t>(context * l.batch, 1)));
  // A dense MLP peaks with gate_up's 2f outputs and SiluAndMul's f beside the residual stream,
  // the hidden state and its norm: 3f + 3h per token. vLLM V0's logs for Llama-3.1-8B on an
  // RTX 3090 profile max_model_len tokens and measure peak_torch_memory less the weights at
  // 2.07 GiB for 20,000 and 2.99 GiB for 29,000 (vllm#10517): 110.6 KB a token both, and 3f +
  // 3h = 55,296 bf16 elements. The MoE width keeps the fused kernel's caches and the
  // attention projections (no published profile to check it against).
  const double h = static_cast<double>(m.hidden);
  const double width = m.is_moe()
      ? 4 * static_cast<double>(m.expert_intermediate * m.experts_per_token) / t + 3 * h +
            static_cast<double>(m.q_width() + 2 * m.kv_width()) / t
      : 3 * static_cast<double>(m.intermediate) / t + 3 * h;
  const double forward = tokens * width * 2;
  if (generate) {
    // generate asks the model for the last position's logits only (logits_to_keep = 1) and
    // copies them to fp32 (generation/utils.py _sample); each decode step's DynamicCache
    // update concatenates a layer's keys, then its values, into a new tensor beside the old
    // one (cache_utils.py: torch.cat([self.keys, key_states], dim=-2)).
    const double batch = static_cast<double>(std::max(1, l.batch));
    const double logits = s.last ? batch * static_cast<double>(m.vocab) * (2 + 4) : 0;
    const double kv_layers = std::max(1.0, KvLayers(m, s));
    const double cat = static_cast<double>(kv_per_token) / kv_layers / 2 * static_cast<double>(kv_tokens);
    // A decoder the replay below follows gets its prefill's peak from the replay: the most it
    // held live, past the weights and the cache.
    const bool replayable = GenerateReplayable(m);
    GenerateReplay replay;
    if (replayable) {
      const double params = static_cast<double>(std::max<int64_t>(1, s.dense_params + s.expert_params));
      replay = ReplayGenerate(m, s, l.tp, std::max(1, l.batch), std::max<int64_t>(1, ctx.w.inference.prompt_len),
                              ctx.w.inference.gen_len, weights / params, l.weights == Dtype::kFp32 ? 4 : 2);
    }
    const double prefill = replayable ? std::max(0.0, static_cast<double>(replay.allocated) - weights -
                                                          static_cast<double>(kv_per_token * kv_tokens))
                                      : forward;
    const double workspace = std::max({prefill, logits, cat});
    out.push_back({"activation_workspace", static_cast<int64_t>(workspace), 4, Phase::kForward,
                   Phase::kForward, Pool::kTorch,
                   prefill >= std::max(logits, cat)
                       ? (replayable ? "transformers generate's prefill over batch x prompt tokens, its allocations replayed"
                                     : "transformers generate's prefill: one layer's intermediates for batch x prompt tokens at once")
                       : logits >= cat ? "generate's last-token logits, bf16 and their fp32 copy"
                                       : "generate's decode: one layer's keys (or values) concatenated anew"});
    // The first decode step copies every layer's prompt keys and values into tensors one token
    // longer and frees the old ones. A freed block is exactly the prompt's size, too small for
    // that step's requests, so the caching allocator keeps it while the copies take the space
    // the prefill's workspace freed and then new segments; later steps grow into the freed
    // blocks as neighbours coalesce. The reserve holds the prompt's cache twice beside the
    // weights: past the whole context's cache and the workspace priced above, this term. On one
    // H100 (bench/data/calibration, transformers 5.17) Llama-2-13B in fp16 at 8 x 4,096 tokens
    // opened 35 segments of 4,097 tokens' keys or values at that step, 11.0 GiB, and reserved
    // 73.05 GiB with 24.4 GiB of weights and 25.0 GiB of prompt cache, flat for 255 more tokens.
    if (replayable) {
      // The reserve the replay reached, past what this estimate prices as live.
      int64_t live = 0;
      for (const MemoryTerm& t : out)
        if (t.pool == Pool::kTorch && t.first <= Phase::kForward && Phase::kForward <= t.last) live += t.bytes;
      if (replay.reserved > live)
        out.push_back({"allocator_cached", replay.reserved - live, 1, Phase::kForward, Phase::kForward, Pool::kCached,
                       "blocks the caching allocator keeps past generate's live bytes: its prefill and first decode "
                       "steps replayed through a model of the allocator"});
      return;
    }
    // Models whose decoder the replay does not follow keep the rule it replaced:
    const double prompt_kv = static_cast<double>(kv_per_token) * static_cast<double>(std::max(1, l.batch)) *
                             static_cast<double>(ctx.w.inference.prompt_len);
    const double kept = 2 * prompt_kv - static_cast<double>(kv_per_token * kv_tokens) - workspace;
    if (ctx.w.inference.gen_len > 1 && kept > 0)
      out.push_back({"kv_cache_prompt_freed", static_cast<int64_t>(kept), std::max(1, s.layers), Phase::kForward,
                     Phase::kForward, Pool::kCached,
                     "the prompt's keys and values, freed at the first decode step (DynamicCache's torch.cat) and "
                     "kept by the caching allocator: the reserve holds the prompt's cache twice"});
    return;
  }
  const double sampler = s.last ? kSamplerBytesPerLogit * static_cast<double>(profile.sequences) *
                                      static_cast<double>(m.vocab)
                                : 0;
  out.push_back({"activation_workspace", static_cast<int64_t>(std::max(forward, sampler)), 4, Phase::kForward,
                 Phase::kForward, Pool::kTorch,
                 sampler > forward ? "vLLM profile's dummy sampler run: max_num_seqs x vocab logits, fp32 copies and sort"
                                   : "one layer's intermediates for max_num_batched_tokens (vLLM profile_run)"});
}

InferenceMemory BudgetInference(const MemoryContext& ctx, const StageMemory& stage, const StageShape& s) {
  InferenceMemory kv;
  kv.kv_bytes_per_token = KvBytesPerToken(ctx, s);
  StageShape whole = s;
  whole.first_layer = 0;
  whole.layers = static_cast<int>(ctx.m.layers);
  Layout single = ctx.l;
  single.tp = 1;
  MemoryContext one{ctx.m, ctx.w, single, ctx.c, ctx.r};
  kv.kv_bytes_per_token_model = KvBytesPerToken(one, whole);
  // vLLM V1: available = allocatable x utilization - (weights + activation peak + the
  // non-torch growth it profiles), the CUDA context left out (gpu_worker.py
  // determine_available_memory; llm-d's 0.19 logs: 0.95 x 79.19 - 17.12 = 58.11 GiB).
  // SGLang: the pool is what is free once the weights are loaded (context and communicators
  // included) less (1 - mem_fraction_static) of the card, so the fraction covers weights and
  // KV alone (model_runner.py profile_max_num_token).
  // transformers' generate: whatever the card holds beside everything else, context included.
  // TensorRT-LLM (PyTorch backend): free_gpu_memory_fraction x (the device's total less the
  // torch and non-torch peak of its profiling forward, context included), the profile's own
  // temporary KV added back (tensorrt_llm/_torch/pyexecutor/_util.py, KvCacheCreator
  // _cal_max_memory; default fraction 0.9, docs/source/examples/kvcacheconfig.md).
  const bool sglang = ctx.w.inference.engine == ServingEngine::kSglang;
  const bool generate = ctx.w.inference.engine == ServingEngine::kTransformers;
  const bool trtllm = ctx.w.inference.engine == ServingEngine::kTensorrtLlm;
  int64_t non_kv = sglang || generate || trtllm ? 0 : kVllmNonTorchBase;
  for (const MemoryTerm& t : stage.terms) {
    if (t.name == "kv_cache" || t.name == "ssm_state" || (t.pool != Pool::kTorch && t.pool != Pool::kNonTorch)) continue;
    if (sglang ? t.name == "activation_workspace" : !generate && !trtllm && t.name == "cuda_context") continue;
    non_kv += t.bytes;
  }
  const double usable = static_cast<double>(UsableMemory(ctx.c.gpu));
  const double fraction = ctx.w.inference.gpu_memory_utilization;
  const double available = trtllm ? (usable - static_cast<double>(non_kv)) * fraction
                                   : usable * (generate ? 1.0 : fraction) - static_cast<double>(non_kv);
  const int64_t state = RecurrentStateBytesPerSequence(ctx.m, s, ctx.l.tp);
  if (available > 0 && (kv.kv_bytes_per_token > 0 || state > 0)) {
    if (kv.kv_bytes_per_token > 0) {
      const int64_t page = kv.kv_bytes_per_token * kBlock;
      kv.max_kv_tokens = static_cast<int64_t>(available / static_cast<double>(page)) * kBlock;
      kv.max_concurrent_sequences = kv.max_kv_tokens / std::max<int64_t>(1, ctx.w.context_len());
    }
    // A hybrid's sequences each hold their linear mixers' state beside their attention KV, in
    // the same pool (an attention-free Mamba-2 model's hold the state alone); vLLM reports the
    // pool as the tokens of the sequences it can hold at full length ("GPU KV cache size" =
    // max concurrency x max_model_len, kv_cache_utils.py).
    if (state > 0) {
      const double context = static_cast<double>(std::max<int64_t>(1, ctx.w.context_len()));
      const double sequences = available / (static_cast<double>(kv.kv_bytes_per_token) * context + static_cast<double>(state));
      kv.max_concurrent_sequences = static_cast<int64_t>(sequences);
      kv.max_kv_tokens = static_cast<int64_t>(sequences * context);
    }
  }
  return kv;
}

}  // namespace shardplan
