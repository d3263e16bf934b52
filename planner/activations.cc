// Saved activations per layer for modern blocks (GQA/MLA, SwiGLU/GeLU, flash attention,
// MoE top-k), recomputation, the micro-batches a pipeline stage keeps in flight, and the
// logits and loss on the last stage. Constants: memory-model.md 2.3-2.4 and 4.5.
#include <algorithm>
#include <cmath>

#include "planner/caching_allocator.h"
#include "planner/dtype.h"
#include "planner/framework_defaults.h"
#include "planner/lora.h"
#include "planner/memory_terms.h"
#include "planner/recipe.h"

namespace shardplan {
namespace {

struct Dims {
  double s, b, h, t, sp_div;  // tokens per GPU (after CP), micro-batch, hidden, TP, divisor of replicated terms
  // Divisor of the inputs of the QKV and first MLP projections. Megatron's SP linears save
  // their sequence shard and all-gather it again in backward (divided by TP); torchtitan's
  // DTensor plan redistributes to Replicate before the column-parallel matmuls, which then
  // save the gathered full-sequence tensor (parallelize.py PrepareModuleInput).
  double gathered_div;
  // Bytes a linear layer saves of its input for the weight gradient: bf16, or under FP8
  // training with Transformer Engine (Megatron) the FP8 copy cast for the GEMM (TE's
  // module/linear.py saves the quantized input), 1 B. torchao's Float8Linear (torchtitan)
  // saves the high-precision input and casts again in backward.
  double gi = 2;
};

// What attention saves per micro-batch beyond its projections, before TP division: flash
// keeps an fp32 log-sum-exp per head and token; the unfused softmax (Megatron's fused
// scale-mask-softmax, no dropout) saves its bf16 output, 2 a s^2 b (memory-model.md 2.3). Each
// rank's queries attend to the whole sequence under context parallelism.
double ScoreBytes(const MemoryContext& ctx, const Dims& d) {
  const double a = static_cast<double>(ctx.m.heads);
  if (ctx.r.flash_attention) return 4 * d.s * d.b * a;
  return 2 * a * d.b * d.s * static_cast<double>(ctx.w.seq_len);
}

// Attention block: memory-model.md 2.4.
double AttentionBytes(const MemoryContext& ctx, const Dims& d, double norm_pair) {
  const ModelSpec& m = ctx.m;
  const double sb = d.s * d.b;
  double replicated = norm_pair * sb * d.h;  // norm input, QKV input
  double split;
  if (m.attention == AttentionKind::kMla) {
    const double a = static_cast<double>(m.heads);
    const double dqk = static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim);
    split = 2 * sb * a * (2 * dqk + static_cast<double>(m.v_head_dim)) + d.gi * sb * a * static_cast<double>(m.v_head_dim);
    replicated += 2 * sb * static_cast<double>(m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim);
  } else {
    split = 2 * sb * static_cast<double>(m.q_width() + 2 * m.kv_width()) + d.gi * sb * static_cast<double>(m.q_width());
    // An output gate (Qwen3-Next) keeps the gate and the attention output its sigmoid scales.
    if (m.attention_gate) split += 4 * sb * static_cast<double>(m.q_width());
  }
  split += ScoreBytes(ctx, d);
  return replicated / d.sp_div + split / d.t;
}

// MLP intermediate bytes per token for an FFN of size f (before TP division); fc2's input
// is a GEMM input (gi bytes).
double MlpInner(const MemoryContext& ctx, double f, double gi) {
  // torch.compile fuses the pointwise ops and recomputes the cheap ones in backward: a plain
  // MLP saves the activation's input alone; SwiGLU saves what Megatron's fused kernel saves.
  if (ctx.m.mlp == MlpKind::kPlain && !ctx.r.compile && TransformersModules(ctx.m, ctx.l)) {
    // transformers' own activations: OPT's ReLU saves its output, which is fc2's input too;
    // gelu_new (NewGELUActivation, 0.5 x (1 + tanh(...)) in Python ops: GPT-2, GPT-J,
    // GPT-Neo, CodeGen, Phi-1/1.5/2) saves four tensors of the MLP width (x, the tanh,
    // 0.5 x and 1 + tanh) beside fc2's input.
    const std::string& t = ctx.m.model_type;
    if (t == "opt") return gi * f;
    if (t == "gpt2" || t == "gptj" || t == "gpt_neo" || t == "codegen" || t == "phi") return 8 * f + gi * f;
    // Apertus' xIELU, in transformers' Python form unless the experimental CUDA package is
    // installed: where(x > 0, alpha_p x x + beta x, (expm1(min(x, eps)) - x) alpha_n + beta x)
    // saves x, alpha_p x, the expm1, the difference and the x > 0 mask (measured: 30,160 B per
    // token per layer at width 512 and FFN 1,408, 9,864 of them these).
    if (ctx.m.mlp_act_params > 0) return 9 * f + gi * f;
  }
  if (ctx.m.mlp == MlpKind::kPlain) return ctx.r.compile ? 2 * f : 2 * f + gi * f;  // activation input, fc2 input
  // Fused SwiGLU saves gate||up (4f) and fc2's input; unfused HF/torchtitan code keeps
  // act(gate), up and their product as well (about 8f in bf16).
  return (ctx.l.framework == Framework::kMegatron || ctx.r.compile ? 4 * f : 6 * f) + gi * f;
}

// Bytes of the "norm input, projection input" pair each block saves per token and hidden unit.
double NormPair(const Dims& d) { return 2 + d.gi * d.sp_div / d.gathered_div; }

// Tokens one GPU routes through its experts per micro-batch, before top-k. Under sequence
// parallelism each TP rank dispatches its own sequence shard; expert tensor parallelism
// all-gathers them back over ETP (Megatron token_dispatcher.py; the time model's rows).
double RoutedTokens(const MemoryContext& ctx, const Dims& d) {
  return d.s * d.b * std::min<double>(ctx.l.etp, d.sp_div) / d.sp_div;
}

// The busiest expert-parallel rank's share of routed tokens over the balanced one, as the
// workload's router makes it, for the micro-batch's tokens on this rank.
double MoeImbalance(const MemoryContext& ctx, const Dims& d) {
  return defaults::MoeImbalance(ctx.l.ep, ctx.w.moe_routing,
                                RoutedTokens(ctx, d) * static_cast<double>(ctx.m.experts_per_token));
}

double MlpBytes(const MemoryContext& ctx, int64_t layer, const Dims& d) {
  const ModelSpec& m = ctx.m;
  const double sb = d.s * d.b;
  double replicated = NormPair(d) * sb * d.h;  // norm input, fc1 input
  if (!m.is_moe_layer(layer)) return replicated / d.sp_div + sb * MlpInner(ctx, static_cast<double>(m.intermediate), d.gi) / d.t;
  // MoE per EP rank with balanced routing: router logits/probs in fp32, the permuted tokens
  // through k experts, and the shared experts (memory-model.md 2.4 "MoE layer").
  const double k = static_cast<double>(m.experts_per_token) * MoeImbalance(ctx, d);
  double bytes = replicated / d.sp_div + 4 * sb * static_cast<double>(m.experts) / d.sp_div;
  // transformers' DeepSeek-style routers keep the fp32 copy of the hidden states their gate
  // runs on (ModelSpec::router_input_fp32): 4 bytes per hidden unit. (Measured: a 2-layer
  // K-EXAONE of width 512 saves 2,048 B per token per layer for it.)
  if (TransformersModules(ctx.m, ctx.l) && !ctx.r.compile && m.router_input_fp32) bytes += 4 * sb * d.h / d.sp_div;
  const double fe = static_cast<double>(m.expert_intermediate) / ctx.l.etp;
  // The permuted tokens (the experts' fc1 input), their intermediates, and -- where the
  // combine weights the experts' outputs by the router probabilities -- their fc2 output,
  // which that product's gradient reads. Megatron-core multiplies the probabilities inside
  // the activation instead (experts.py activation_func_with_probs, weighted SwiGLU), so
  // its unpermute saves nothing more.
  // Nemotron 3 Super's experts work in the latent width between fc1_latent_proj and
  // fc2_latent_proj, whose input (the combined latent) is saved too.
  const double ew = static_cast<double>(m.expert_width());
  const double combine = ctx.l.framework == Framework::kMegatron ? 0 : 2 * ew;
  bytes += k * RoutedTokens(ctx, d) * (d.gi * ew + MlpInner(ctx, fe, d.gi) + combine);  // fe is already split by ETP
  if (m.moe_latent > 0) bytes += d.gi * sb * ew;
  if (m.shared_experts > 0)
    bytes += sb * MlpInner(ctx, static_cast<double>(m.shared_experts * m.shared_intermediate), d.gi) / d.t;
  return bytes;
}

// A linear mixer. Mamba-2 (Megatron mamba_mixer.py and transformers NemotronHMamba2Mixer, both on
// mamba_ssm's mamba_split_conv1d_scan_combined): the block's norm input and in_proj's input,
// in_proj's output (z, x, B, C, dt) and the scan's output y, which the fused function saves
// (it recomputes the conv and the chunk states in backward), and an fp32 rstd per group.
// Megatron runs out_proj as its own linear, which saves the gated, normed y as well;
// transformers passes out_proj's weight into the fused function instead.
// A Gated DeltaNet (transformers Qwen3NextGatedDeltaNet on fla's kernels) keeps in_proj's
// outputs, the conv's output q, k, v (fla's chunk_gated_delta_rule saves them with the decays
// and betas and an fp32 chunk x chunk WY matrix per head) and the output y, which the gated
// norm reads, and out_proj, a Linear of its own, its input.
double LinearMixerBytes(const MemoryContext& ctx, const Dims& d) {
  const ModelSpec::LinearMixer& x = ctx.m.linear;
  const double sb = d.s * d.b, inner = static_cast<double>(x.inner());
  double split = 2 * sb * static_cast<double>(x.in_proj()) + 2 * sb * inner;
  if (x.delta) {
    split += 2 * sb * static_cast<double>(x.conv_dim()) + 4 * sb * static_cast<double>(x.heads * x.chunk) + d.gi * sb * inner;
  } else {
    split += 4 * sb * static_cast<double>(x.groups);
    if (MegatronModelCode(ctx.l)) split += d.gi * sb * inner;
  }
  return NormPair(d) * sb * d.h / d.sp_div + split / d.t;
}

// torchtitan's per-op SAC (activation_checkpoint.py, _save_list) saves every other matmul
// output in forward order -- wq, wv, w1, w2 of wq wk wv wo w1 w3 w2 -- plus the attention
// output and its log-sum-exp; the block input is kept by the checkpoint. MLA and hybrid
// layers keep about half of what no recomputation would.
double TorchtitanSelectiveBytes(const MemoryContext& ctx, int64_t layer, const Dims& d, double none_bytes) {
  const ModelSpec& m = ctx.m;
  if (m.attention == AttentionKind::kMla || m.is_hybrid()) return none_bytes / 2;
  const double sb = d.s * d.b;
  if (m.is_moe_layer(layer)) {
    // The routed experts run as grouped GEMMs (aten._grouped_mm), which the save list leaves
    // out, so backward recomputes them with the routing: the layer keeps its input, wq's and
    // wv's outputs, attention's, and the router's logits (the fifth matmul). A shared expert
    // goes on counting: its up projection, the seventh, is kept. Measured on one H100,
    // Qwen3-30B-A3B at FSDP 32, 8192 tokens (bench/data/calibration): 8.1 GiB over 48
    // layers, 22.2 KB per token and layer, where half of no recomputation was 29.2 GiB.
    double split = 2 * sb * static_cast<double>(2 * m.q_width() + m.kv_width()) + 4 * sb * static_cast<double>(m.heads);
    if (m.shared_experts > 0) split += 2 * sb * static_cast<double>(m.shared_experts * m.shared_intermediate);
    return 2 * sb * d.h / d.sp_div + 2 * sb * static_cast<double>(m.experts) + split / d.t;
  }
  const double split = 2 * sb * static_cast<double>(2 * m.q_width() + m.kv_width() + m.intermediate) +
                       4 * sb * static_cast<double>(m.heads);
  // The block input, and w2's output (the residual branch). Under tensor parallelism w2 is
  // row-parallel: its matmul, the one the policy keeps, returns partial sums over the whole
  // sequence (b s h, not sharded), and the reduce-scatters that shard wo's and w2's outputs
  // over the sequence are on the save list too (two b s/t h). Measured on one H100,
  // Llama-2-13B at FSDP 8 x TP 2 (bench/data/calibration): 34.7 GiB saved over 40 layers
  // where the sharded w2 output alone gave 24.1.
  const double reduce_scatters = d.t > 1 ? 2 * 2 * sb * d.h / d.sp_div : 0;
  return 2 * sb * d.h / d.sp_div + 2 * sb * d.h + reduce_scatters + split / d.t;
}

// `layer` >= 0: that layer's, which keeps 16-bit GEMM inputs when the run holds it in BF16
// (recipe.h LowPrecisionBf16Layers).
Dims DimsFor(const MemoryContext& ctx, int64_t layer = -1) {
  const Layout& l = ctx.l;
  Dims d;
  d.s = static_cast<double>(ctx.w.seq_len) / l.cp;
  d.b = l.mbs;
  d.h = static_cast<double>(ctx.m.hidden);
  d.t = l.tp;
  d.sp_div = l.sp ? l.tp : 1;
  d.gathered_div = l.framework == Framework::kTorchtitan ? 1 : d.sp_div;
  if (layer >= 0) {
    const Bf16Layers kept = LowPrecisionBf16Layers(ctx.m, ctx.w, l);
    if (layer < kept.start || layer >= ctx.m.layers - kept.end) return d;
  }
  // NVFP4 saves the columnwise NVFP4 copy wgrad reads: 0.5 B and an e4m3 scale per 16.
  if (l.framework == Framework::kMegatron && ctx.w.precision == Dtype::kFp8) d.gi = 1;
  if (l.framework == Framework::kMegatron && ctx.w.precision == Dtype::kFp4) d.gi = QuantizedBytesPerParam(Dtype::kFp4);
  return d;
}

// Bytes Megatron's selective recomputation drops from one layer for its --recompute-modules
// (transformer_config.py): each module named gives back the tensors it would have saved.
double MegatronSelectiveDrop(const MemoryContext& ctx, int64_t layer, const Dims& d) {
  const ModelSpec& m = ctx.m;
  const uint32_t mods = ctx.l.ac_modules;
  const double sb = d.s * d.b;
  const bool moe = m.is_moe_layer(layer);
  // A hybrid's block holds one mixer and one norm; Mamba-2 blocks have no module to recompute.
  const bool attention = m.has_attention(layer);
  if (m.has_linear_mixer(layer) && !m.has_ffn(layer)) return (mods & kAcLayernorm) ? 2 * sb * d.h / d.sp_div : 0;
  double drop = 0;
  if ((mods & kAcCoreAttn) && attention) drop += ScoreBytes(ctx, d) / d.t;  // the LSE under flash, else the softmax
  if (mods & kAcLayernorm) drop += m.sub_blocks(layer) * 2 * sb * d.h / d.sp_div;  // the norms' outputs
  if (!m.has_ffn(layer)) return drop;
  if ((mods & kAcMlaUpProj) && m.attention == AttentionKind::kMla)
    drop += 2 * sb * static_cast<double>(m.heads) *
            static_cast<double>(2 * (m.qk_nope_head_dim + m.qk_rope_head_dim) + m.v_head_dim) / d.t;
  if (moe) {
    const double k = static_cast<double>(m.experts_per_token) * MoeImbalance(ctx, d);
    const double fe = static_cast<double>(m.expert_intermediate) / ctx.l.etp;
    const double shared = static_cast<double>(m.shared_experts * m.shared_intermediate);
    const double norm_pair = NormPair(d) * sb * d.h / d.sp_div;
    if (mods & kAcMoe) {
      drop += MlpBytes(ctx, layer, d) - norm_pair;  // the layer keeps its input only
    } else {
      if (mods & kAcMoeAct) drop += k * RoutedTokens(ctx, d) * d.gi * fe;  // the experts' activation output (fc2 input)
      if ((mods & kAcSharedExperts) && shared > 0) drop += sb * MlpInner(ctx, shared, d.gi) / d.t;
    }
  } else if (mods & kAcMlp) {
    drop += sb * MlpInner(ctx, static_cast<double>(m.intermediate), d.gi) / d.t;
  }
  return drop;
}

// LoRA whose adapters save their own copy of each input while the frozen base saves none:
// peft on transformers' model code (HF Trainer, TRL, LLaMA-Factory), adapters in fp32, under
// the bf16 autocast the Trainer's bf16=True turns on; and LitGPT's LoRALinear (litgpt/lora.py),
// adapters in the model's dtype, on a bf16 base or a 4-bit one.
bool PeftCopiesAdapterInputs(const MemoryContext& ctx) {
  if (ctx.r.compile) return false;
  if (ctx.l.stack == Stack::kLitgpt) return ctx.w.lora_like();
  return ctx.w.task == Task::kLora && ctx.l.stack == Stack::kHf && ctx.r.adapter_bytes == 4 && TransformersModules(ctx.m, ctx.l);
}

// Unsloth's LoRA path through a Llama-style block (unsloth models/llama.py
// LlamaDecoderLayer_fast_forward and LlamaAttention_fast_forward; kernels/fast_lora.py,
// rms_layernorm.py, rope_embedding.py), whose autograd functions stand in for transformers'
// modules. Per token:
// - fast_rms_layernorm saves its 16-bit input and an fp32 rstd: no fp32 upcast;
// - q, k and v are what the attention kernel keeps (RoPE turns q and k in place, LoRA_QKV
//   saves only its input); k and v keep their own width under flash-attn, while the xformers
//   fallback (no flash-attn installed) attends over copies expanded to every query head;
// - o_proj's adapter saves the attention output, the tensor the kernel keeps anyway;
// - LoRA_MLP, taken when gate, up and down are all adapted, saves X, e = X Wg and g = X Wu and
//   recomputes swiglu in backward (4f); otherwise transformers' MLP keeps silu's input, its
//   output and up's output (6f), and down_proj's adapter, where there is one, their product.
// bitsandbytes' frozen 4-bit Linears (MatMul4Bit) and frozen 16-bit ones save no input.
// With lora_dropout > 0 Unsloth leaves the adapters to peft, priced by the general path.
bool UnslothKernels(const MemoryContext& ctx, int64_t layer) {
  const ModelSpec& m = ctx.m;
  return ctx.l.stack == Stack::kUnsloth && ctx.w.lora_like() && ctx.w.lora.dropout == 0 && ctx.l.tp == 1 &&
         ctx.w.precision != Dtype::kFp32 && m.attention == AttentionKind::kGqa && m.mlp == MlpKind::kGated &&
         m.norm == NormKind::kRms && !m.is_hybrid() && !m.is_moe_layer(layer) && m.has_attention(layer) && m.has_ffn(layer);
}

// What a layer's adapters make of Unsloth's path, per token: whether the projections'
// shared input is saved (an adapter on q, k or v reads it), whether LoRA_MLP runs, and the
// bytes its MLP keeps -- X, e and g under LoRA_MLP (2h + 4f); else silu's input, its output
// and up's output (6f), the normed input where gate or up has an adapter and their product
// where down_proj has one.
struct UnslothLayer {
  bool qkv_input = false, fused_mlp = false;
  double mlp_saved = 0;
};
UnslothLayer UnslothShape(const MemoryContext& ctx, int64_t layer, double h, double f) {
  auto adapted = [&](std::string_view name) { return AdaptsModule(ctx.m, ctx.w.lora, layer, name); };
  const bool gate = adapted("gate_proj"), up = adapted("up_proj"), down = adapted("down_proj");
  UnslothLayer u;
  u.qkv_input = adapted("q_proj") || adapted("k_proj") || adapted("v_proj");
  u.fused_mlp = gate && up && down;
  u.mlp_saved = u.fused_mlp ? 2 * h + 4 * f : (gate || up ? 2 * h : 0) + 6 * f + (down ? 2 * f : 0);
  return u;
}

// Attention widths Unsloth's kernels hold: q, and k and v (expanded without flash-attn).
struct UnslothWidths {
  double q, kv;
};
UnslothWidths UnslothAttention(const MemoryContext& ctx) {
  const double q = static_cast<double>(ctx.m.q_width());
  return {q, ctx.r.flash_attention ? static_cast<double>(ctx.m.kv_width()) : q};
}

double UnslothLayerBytes(const MemoryContext& ctx, int64_t layer, const Dims& d) {
  const double h = d.h, f = static_cast<double>(ctx.m.intermediate);
  const UnslothWidths a = UnslothAttention(ctx);
  const UnslothLayer u = UnslothShape(ctx, layer, h, f);
  double bytes = 2 * (2 * h + 4);      // the two norms' inputs and rstd
  if (u.qkv_input) bytes += 2 * h;     // the projections' shared input
  bytes += 2 * (a.q + 2 * a.kv) + 2 * a.q + 4 * static_cast<double>(ctx.m.heads);  // q, k, v, output, log-sum-exp
  return (bytes + u.mlp_saved) * d.s * d.b;
}

// What one layer's backward holds beyond its saved tensors under Unsloth's kernels, per
// token: the offloaded checkpoint keeps the recomputed layer's output until backward through
// it returns (unsloth_zoo gradient_checkpointing.py), 2h. LoRA_MLP's backward writes
// down_proj's input grad (2f) and turns e and g into their grads in place, and its dX into X;
// transformers' MLP holds two 2f grads at once. The attention's backward comes after the
// MLP's tensors and the second norm's input are freed: flash-attn 2 allocates an fp32 dq
// accumulator, dq, dk and dv, and under GQA dk and dv at the query width before it sums them
// over each group (csrc/flash_attn/flash_api.cpp mha_bwd).
double UnslothBackwardBytes(const MemoryContext& ctx, int64_t layer, const Dims& d) {
  const double h = d.h, f = static_cast<double>(ctx.m.intermediate);
  const UnslothWidths a = UnslothAttention(ctx);
  const UnslothLayer u = UnslothShape(ctx, layer, h, f);
  const double mlp = u.fused_mlp ? 2 * f : 4 * f;
  const double freed = 2 * h + 4 + u.mlp_saved;
  const double attention = 4 * a.q + 2 * (a.q + 2 * a.kv) + (a.kv < a.q ? 4 * a.q : 0) - freed;
  return (2 * h + std::max(mlp, attention)) * d.s * d.b;
}

// Linears that read one norm's output: q, k and v (or MLA's q and kv down-projections), or
// one fused qkv; gate and up, or one fused gate_up, or a plain MLP's fc1; an MoE layer's router.
int NormReaders(const ModelSpec& m, int64_t layer, bool attention) {
  const std::string& t = m.model_type;
  if (attention) {
    if (m.attention == AttentionKind::kMla) return 2;
    for (const char* fused : {"gpt2", "gpt_bigcode", "codegen", "gpt_neox", "bloom", "falcon", "chatglm", "mpt", "dbrx",
                              "phi3", "qwen", "internlm2", "baichuan"})
      if (t == fused) return 1;
    return 3;
  }
  if (m.is_moe_layer(layer) || m.mlp == MlpKind::kPlain) return 1;
  return t == "phi3" || t == "glm" || t == "glm4" || t == "chatglm" ? 1 : 2;
}

// Per-head q and k norms (Qwen3, Gemma 3) or whole-width ones (OLMo 2): each keeps its input,
// the q or k projection's output, and an fp32 rstd per head (per token for whole-width
// norms). HF's RMSNorm keeps the fp32 upcast of that input instead, and beside it the
// normalized tensor its weight's grad reads, bf16, or fp32 where the weight applies in fp32
// (none when the weight is `frozen`).
// (Measured: a 2-layer Qwen3 of width 512 saves 3,880 B per token per layer more than the
// same Llama, autograd's saved tensors counted on the CPU.)
struct QkNormShape {
  double width = 0, rows = 0;  // per token on this rank: the normed q and k, their rstd rows
};
QkNormShape QkNorms(const ModelSpec& m, int64_t layer, const Dims& d) {
  if ((!m.qk_norm && !m.qk_norm_whole) || !m.has_attention(layer) || m.attention != AttentionKind::kGqa) return {};
  return {static_cast<double>(m.q_width() + m.kv_width()) / d.t,
          m.qk_norm_whole ? 2 : static_cast<double>(m.heads + m.kv_heads) / d.t};
}

double QkNormBytes(const MemoryContext& ctx, int64_t layer, const Dims& d, bool hf_norms, bool frozen) {
  const QkNormShape q = QkNorms(ctx.m, layer, d);
  const double per = hf_norms ? 4 + (frozen ? 0 : ctx.m.norm_weight_fp32 ? 4 : 2) : 2;
  return d.s * d.b * (per * q.width + 4 * q.rows);
}

}  // namespace

int64_t LayerActivationBytes(const MemoryContext& ctx, int64_t layer, Recompute ac) {
  const Dims d = DimsFor(ctx, layer);
  const ModelSpec& m = ctx.m;
  // transformers' model code on fp32 weights under autocast: the residual stream stays fp32.
  const bool autocast = AutocastFp32Weights(ctx) && TransformersModules(ctx.m, ctx.l) && !ctx.r.compile && !m.is_hybrid();
  // fp32 training (no autocast) saves every tensor a bf16 run saves in bf16 at 4 B.
  const bool fp32 = ctx.w.precision == Dtype::kFp32 && !autocast;
  // peft's prepare_model_for_kbit_training leaves the residual stream fp32 (recipe.h), except
  // where the norm casts its output back to its bf16 input's dtype (Gemma's, OLMo 2's).
  const bool kbit = ctx.r.kbit_fp32_stream;
  const double input = (autocast || fp32 || kbit ? 4 : 2) * d.s * d.b * d.h / d.sp_div;  // the layer input, kept by every mode
  if (ac == Recompute::kFull) return static_cast<int64_t>(input);
  if (UnslothKernels(ctx, layer)) return static_cast<int64_t>(std::max(UnslothLayerBytes(ctx, layer, d), input));
  // A hybrid's block runs one mixer: Mamba-2, attention, or an MLP / MoE. Falcon-H1 runs
  // attention and Mamba-2 on one normed input, saved once (with the mixer's).
  const bool mixer = m.has_linear_mixer(layer);
  double attn = mixer ? LinearMixerBytes(ctx, d) : 0;
  if (m.has_attention(layer)) attn += AttentionBytes(ctx, d, mixer ? 0 : NormPair(d));
  double mlp = m.has_ffn(layer) ? MlpBytes(ctx, layer, d) : 0;
  // HF RMSNorm upcasts to fp32 and saves its fp32 input: about 4sbh more per norm (2.4);
  // compiled, the upcast is fused into the norm and recomputed.
  const int block_norms = m.is_hybrid() ? m.sub_blocks(layer) : m.norms_per_layer;
  const bool hf_norms = TransformersModules(ctx.m, ctx.l) && m.norm == NormKind::kRms && !ctx.r.compile;
  const double sbh = d.s * d.b * d.h / d.sp_div;
  double norms = hf_norms ? block_norms * 4 * sbh : 0;
  // Under peft's LoRA the norm weights are frozen, and what only their grads would read, the
  // normalized tensors, is not saved (the LoRA branch below takes out the bf16 ones).
  const bool peft = PeftCopiesAdapterInputs(ctx);
  if (hf_norms && !peft) {
    // What each norm's weight grad reads, the normalized tensor, is priced above as the bf16
    // input of the projection after it. Gemma's and OLMo 2's norms apply the weight in fp32
    // and cast after (modeling_gemma.py GemmaRMSNorm: (1 + w) * x in fp32; Olmo2RMSNorm), so
    // theirs is fp32: 2sbh more. Gemma 2/3's norms after the attention and MLP outputs feed
    // the residual add, which saves nothing: their normalized tensor comes on top, 2 or 4 B.
    const bool fp32_weight = m.norm_weight_fp32;
    const int post = std::max(0, block_norms - m.sub_blocks(layer));
    norms += ((block_norms - post) * (fp32_weight ? 2 : 0) + post * (fp32_weight ? 4 : 2)) * sbh;
  }
  norms += QkNormBytes(ctx, layer, d, hf_norms, peft);
  if (autocast) {
    // Each norm's output is fp32, and every linear that reads it saves its own bf16 cast
    // (autocast caches casts of weights only): 4 + 4 + 2k B per hidden unit where k linears
    // read it, in place of the bf16 run's 8 (10 for fp32-weight norms). Llama: +10h per token
    // per layer, Gemma +6h, Phi-3 (fused qkv and gate_up) +4h, as autograd saves them on the
    // CPU; the experts of an MoE layer read per-token copies either way, the router casts.
    const double fp32_weight = hf_norms && m.norm_weight_fp32 ? 2 : 0;
    if (m.has_attention(layer)) norms += (2 * NormReaders(m, layer, true) - fp32_weight) * sbh;
    if (m.has_ffn(layer)) norms += (2 * NormReaders(m, layer, false) - fp32_weight) * sbh;
  }
  double total = attn + mlp + norms;
  if (kbit && m.has_ffn(layer) && !m.is_moe_layer(layer)) {
    // The fp32 residual is the norm's input and its own upcast, saved once at 4 B where the
    // bf16 run keeps a bf16 input and an fp32 upcast; the 4-bit gate and up projections
    // return fp32, so the MLP's activation input, its output and up's output are 4 B each
    // (a plain MLP's fc1 output and activation output). The attention projections' outputs
    // are cast back to bf16 for flash attention, which saves those.
    const double f = static_cast<double>(m.intermediate) / d.t;
    const double inner = m.mlp == MlpKind::kGated ? 3 : 2;
    total += 2 * inner * d.s * d.b * f - (hf_norms ? 2 * block_norms * sbh : 0);
  }
  if (fp32) {
    // What the bf16 formulas price at 2 B is 4 B here; what they already price in fp32 stays:
    // HF RMSNorm's upcast of its input (now the input itself) and the normalized tensor of a
    // norm that applies its weight in fp32 (Gemma, OLMo 2), q/k norms' upcasts and their
    // per-row rsqrt, attention's per-head log-sum-exp. Counted on the CPU (saved_activations.py,
    // fp32 regime): a 2-layer Llama of width 512 saves 39,976 B per token per layer, and so
    // does the same Gemma.
    const double sb = d.s * d.b;
    double already = ctx.r.flash_attention && m.has_attention(layer) ? 4 * sb * static_cast<double>(m.heads) / d.t : 0;
    if (hf_norms) {
      // An fp32-weight norm's normalized tensor is 4 B here; bf16 priced it 2 B above the
      // projection's bf16 input (4 B after a post norm), which doubling makes 4 B too many.
      // The same holds for the q/k norms, over their width.
      const double upcast = m.norm_weight_fp32 ? 8 : 4;
      const QkNormShape q = QkNorms(m, layer, d);
      already += upcast * block_norms * sbh + sb * (upcast * q.width + 4 * q.rows);
    }
    total = 2 * total - already;
  }
  if (peft && m.attention == AttentionKind::kGqa && !m.is_moe_layer(layer) && !m.is_hybrid() &&
      m.has_attention(layer) && m.has_ffn(layer)) {
    // peft keeps LoRA A and B in fp32 (autocast_adapter_dtype) and casts each adapted
    // Linear's input to them; under the Trainer's bf16 autocast lora_A then saves its own
    // bf16 copy of that input, and lora_B its r-wide input. The frozen base Linears and norm
    // weights save nothing: not the normed input the projections share, not the normalized
    // tensor, not down_proj's input. Counted on the CPU: a 2-layer Llama of width 512 with
    // all seven projections adapted at r 8 saves 24,216 B per token per layer, where the same
    // model fully trained saves 22,056.
    // With lora_dropout > 0 each adapted input also passes a dropout, whose CUDA kernel
    // (native_dropout) saves a 1-byte bool mask per element for backward; lora_A then saves
    // its bf16 cast of the dropped input in place of the undropped one.
    // In fp32 (no autocast) lora_A saves the input itself: one 4 B copy per input tensor,
    // however many adapters read it, unless a dropout makes one per module.
    // LitGPT adapts q, k and v as one module behind one dropout (LoRAQKVLinear), and with no
    // dropout lora_A reads the bf16 input the base keeps or shares, as the fp32 case does.
    // Under a 4-bit base, bitsandbytes' MatMul4Bit keeps each base projection's input for its
    // backward (ctx.tensors = (A, B)), so the base saves what full training does.
    const bool litgpt = ctx.l.stack == Stack::kLitgpt;
    AdapterInputs a = AdapterInputsPerLayer(m, ctx.w.lora, layer);
    if (litgpt) {
      int qkv = 0;
      for (std::string_view name : {"q_proj", "k_proj", "v_proj"}) qkv += AdaptsModule(m, ctx.w.lora, layer, name);
      a.inputs -= std::max(0, qkv - 1) * m.hidden;
    }
    const double sb = d.s * d.b;
    const bool dropout = ctx.w.lora.dropout > 0;
    const double e = fp32 ? 2 : 1;  // element bytes over bf16's
    const bool shares_input = !dropout && (fp32 || (litgpt && ctx.r.pure_low_precision));
    const double inputs = shares_input ? 2 * e * static_cast<double>(a.distinct)
                                       : (2 * e + (dropout ? 1 : 0)) * static_cast<double>(a.inputs);
    total += sb * (inputs + 2 * e * static_cast<double>(ctx.w.lora.rank * a.modules)) / d.t;
    if (!(litgpt && ctx.w.task == Task::kQlora))
      total -= e * (2 * NormPair(d) * sbh + d.gi * sb * static_cast<double>(m.intermediate) / d.t);
  }
  if (ac == Recompute::kSelective) {
    // Selective recomputation drops what is cheap to recompute: the activation function's
    // output and the norm outputs (torchtitan op-level SAC; Megatron core attention, which
    // with flash attention holds only the LSE).
    const double sb = d.s * d.b;
    const double f = static_cast<double>(ctx.m.has_mlp(layer) ? ctx.m.intermediate : 0);
    // Plain FSDP2 users get the same from torch's selective checkpoint policy (per-op SAC).
    if (ctx.l.framework == Framework::kTorchtitan || (ctx.l.framework == Framework::kFsdp && ctx.l.stack == Stack::kNative)) {
      total = TorchtitanSelectiveBytes(ctx, layer, d, total);
    } else {
      total -= MegatronModelCode(ctx.l) ? MegatronSelectiveDrop(ctx, layer, d) : 2 * sb * f / d.t + norms;
    }
  }
  return static_cast<int64_t>(std::max(total, input));
}

namespace {

// Bytes per logit (and per token) that the loss holds in forward and at the start of its
// backward, for every loss whose logits exist whole (all but the fused one).
struct LogitBytes {
  double forward, per_token, backward;
  const char* forward_note;
  const char* backward_note;
  // The eager upcast's block order, where it applies: bf16 logits, fp32 upcast, fp32
  // log-softmax; the upcast and the logits freed; nll_loss's fp32 grad, log_softmax's.
  bool upcast_sequence = false;
};

// When backward reaches the root unit (embeddings and head, the last to reduce), FSDP2
// copies its unsharded grads into one flat reduce-scatter input on the compute stream
// (foreach_reduce), in the reduce dtype. The caching allocator serves it from a freed block
// that holds it, or maps a new segment. The eager loss leaves whole-logit fp32 blocks, but
// torchtune's chunked loss leaves only one chunk's fp32 block and the head's weight grad,
// and natively (torchtune sets no expandable segments) no segment grows. Llama-3.1-8B over
// torchtune's FSDP 8 at 2 x 4,096: a 1.96 GiB request where the largest freed block held
// 0.98, and the reserve rose 19.47 -> 21.43 GiB at the end of backward (allocator trace
// l8b-tune-fsdp8-s4k-b2-full in bench/data/allocator_traces).
int64_t RootGradsSegment(const MemoryContext& ctx, const StageShape& s, double logits) {
  const Layout& l = ctx.l;
  if (!ctx.w.training() || ctx.w.lora_like() || l.zero != 3 || !DenseStatesSharded(l) ||
      l.framework == Framework::kTorchtitan || ctx.r.loss != LossKind::kChunked || ctx.r.compile ||
      s.root_params <= 0)
    return 0;
  // Where the head is a unit of its own its reduce-scatter follows the chunked loss's
  // backward, whose freed partial head grads hold it; the root keeps only what is left.
  const double flat = TrainedBytes(ctx.r, ctx.w) * FsdpRootUnit(ctx, s).kept;
  const double head_grad =
      WeightBytes(ctx.w) * static_cast<double>(ctx.m.vocab) * static_cast<double>(ctx.m.hidden) / l.tp;
  const double largest_freed = std::max(4 * logits / kLossChunks, head_grad);
  return flat > largest_freed ? static_cast<int64_t>(flat) : 0;
}

// The eager loss's blocks in their order (every H100 trace of ours, torchtitan's loss and
// transformers' alike): the bf16 logits (2 B a logit), their fp32 upcast and fp32
// log-softmax (4 B each); the upcast and the logits freed, 6 B (one block in an expandable
// segment, two natively); in backward nll_loss's fp32 grad takes 4 B of it and leaves the
// logits' 2 B free, and log_softmax's fp32 grad finds no free block its size and opens
// another. The reserve runs 2 B a logit past the 12 live: the allocator's model, replayed
// (natively; an expandable segment comes to the same), says how much.
int64_t UpcastLossHole(int64_t logits) {
  CachingAllocatorModel a;
  const int bf16 = a.Malloc(2 * logits), upcast = a.Malloc(4 * logits);
  a.Malloc(4 * logits);  // the saved log-softmax, live through backward
  a.Free(upcast);
  a.Free(bf16);
  a.Malloc(4 * logits);  // nll_loss's grad
  a.Malloc(4 * logits);  // log_softmax's grad
  return a.reserved_peak() - a.allocated_peak();
}

LogitBytes WholeLogitBytes(const MemoryContext& ctx) {
  switch (ctx.r.loss) {
    case LossKind::kChunked: {
      // torchtune CEWithChunkedOutputLoss: the head runs per chunk and all bf16 chunks exist
      // at once (2 B). Eager, each chunk is upcast alone (fp32 input and output of one
      // log-softmax at a time) and cross-entropy saves its fp32 log-softmax (4 B); backward
      // holds those, and one chunk's fp32 and bf16 grads. Compiled (torchtune compiles
      // compute_cross_entropy alone, training/_compile.py compile_loss), the kernel reads the
      // bf16 chunk, fuses the upcast and saves that same chunk and a per-token logsumexp, so
      // nothing beyond the chunks stays; its backward writes one chunk's bf16 grad as it frees
      // that chunk.
      if (ctx.r.compile)
        return {2, 8, 2 + 2.0 / kLossChunks, "chunked loss, compiled: bf16 logit chunks + per-token max and logsumexp",
                "chunked loss backward, compiled: the saved bf16 chunks + one chunk's bf16 grad"};
      return {2 + 4 + 8.0 / kLossChunks, 0, 4 + 10.0 / kLossChunks,
              "chunked loss: bf16 logits + saved fp32 log-softmax + one chunk's fp32 upcast and log-softmax",
              "chunked loss backward: the saved fp32 log-softmax + one chunk's fp32 and bf16 grads"};
    }
    case LossKind::kCompiled:
    case LossKind::kKernel:
      // One kernel reads the bf16 logits, fuses the upcast and keeps a per-token logsumexp;
      // backward writes a new bf16 grad from the saved logits, so no fp32 copy is ever whole:
      // torch.compile of cross_entropy(logits.float()) (torchtitan components/loss.py), and
      // flash-attn's CrossEntropyLoss, llm-foundry's default fused_crossentropy
      // (inplace_backward defaults to False, flash_attn/losses/cross_entropy.py).
      return {2, 4, 4, "bf16 logits + per-token logsumexp; one kernel fuses the upcast and the loss",
              "saved bf16 logits + their bf16 grad from the fused backward"};
    case LossKind::kInplace:
      // Unsloth before Cut Cross-Entropy (models/llama.py CausalLM_fast_forward, kernels/
      // cross_entropy_loss.py): the head's 16-bit logits go whole into a Triton kernel that
      // keeps an fp32 loss and log-sum-exp per token, and its backward writes the grad over
      // the logits themselves; flash-attn's kernel does the same with inplace_backward=True.
      return {2, 8, 2, "16-bit logits + fp32 loss and log-sum-exp per token, one kernel",
              "the same logits, overwritten by their grad (in-place backward)"};
    case LossKind::kNoUpcast:
      // Cross-entropy straight on the bf16 logits (AutoModel's MaskedCrossEntropy with
      // fp32_upcast: false): log_softmax returns bf16 and saves it, 2 + 2 B per logit; its
      // backward holds the saved output, nll_loss's bf16 grad and its own bf16 output.
      return {4, 0, 6, "bf16 logits + saved bf16 log-softmax, no fp32 upcast",
              "saved bf16 log-softmax + bf16 grads of the loss at the start of backward"};
    case LossKind::kAuto:
    case LossKind::kStandard:
    case LossKind::kFused:  // holds no whole logits; AddActivations prices it apart
      break;
  }
  // torchtitan shards the logits over TP and runs the eager loss as DTensor ops (loss_parallel,
  // on whenever tp > 1; torch/distributed/tensor/parallel/loss.py). Its _log_softmax keeps
  // the fp32 input, x - max and exp(x - max) at once beside the bf16 logits (14 B), and its
  // fused nll/log-softmax backward holds the saved output, a zeroed grad, exp(output) and
  // their sum (16 B); torchtitan frees the bf16 logits (del pred) before backward.
  if (TorchtitanItself(ctx.l) && ctx.l.tp > 1)
    return {14, 0, 16, "loss_parallel (DTensor) forward: bf16 logits + fp32 copy + shifted + exp, per token per vocab shard",
            "loss_parallel backward: saved log-softmax + zeroed grad + exp + their sum, fp32"};
  // Forward: bf16 logits + fp32 upcast + fp32 softmax (10 B); Megatron's fused
  // vocab-parallel cross-entropy keeps bf16 + fp32 (6 B). Backward: the saved fp32
  // log-softmax, nll_loss's fp32 grad and log_softmax_backward's fp32 output live together
  // (12 B); Megatron's computes its grad in place (about 6 B).
  const bool megatron = MegatronModelCode(ctx.l);
  // transformers before 4.49 (recipe.h shifted_logits_copy): ForCausalLMLoss copies the
  // shifted fp32 logits, live beside the upcast through the cross-entropy's forward; in
  // backward the copy's grad is scattered into a zeroed fp32 tensor of the upcast's shape.
  // 4 B a logit more each way.
  if (ctx.r.shifted_logits_copy)
    return ctx.w.precision == Dtype::kFp32
               ? LogitBytes{12, 0, 16, "fp32 logits + shifted fp32 copy + saved fp32 log-softmax (transformers < 4.49)",
                            "saved log-softmax + fp32 grads of the loss and of the shift (transformers < 4.49)"}
               : LogitBytes{14, 0, 16,
                            "bf16 logits + fp32 upcast + shifted fp32 copy + fp32 softmax (transformers < 4.49)",
                            "saved log-softmax + fp32 grads of the loss and of the shift (transformers < 4.49)"};
  // fp32 training: the logits are fp32 already and the upcast returns them as they are.
  if (ctx.w.precision == Dtype::kFp32 && !megatron)
    return {8, 0, 12, "fp32 logits + saved fp32 log-softmax (no upcast in fp32 training)",
            "saved log-softmax + fp32 grads of the loss at the start of backward (memory-model.md 4.5)"};
  return {megatron ? 6.0 : 10.0, 0, megatron ? 6.0 : 12.0,
          "bf16 logits + fp32 upcast + fp32 softmax, per token per logit (memory-model.md 4.5)",
          "saved log-softmax + fp32 grads of the loss at the start of backward (memory-model.md 4.5)",
          !megatron && ctx.r.loss != LossKind::kFused};
}

}  // namespace

bool PricesLossHole(const MemoryContext& ctx) {
  // Where the traces show it: FSDP-sharded runs of the eager upcast loss, and LoRA on one GPU
  // with recomputation (LoraLayerCacheKept). Other unsharded runs keep every activation until
  // the loss, or free whole gradients at each step's end, so their reserve peaks later, once
  // backward has reused the block. Runs whose cache growth was fitted to published runs
  // (compiled with selective recomputation; TP or CP: DefaultCacheGrowth) already hold it in
  // that growth.
  const Layout& l = ctx.l;
  return ctx.w.training() && WholeLogitBytes(ctx).upcast_sequence && l.tp * l.cp == 1 &&
         !(ctx.r.compile && l.ac == Recompute::kSelective) && (DenseStatesSharded(l) || LoraLayerCacheKept(ctx));
}

bool LoraLayerCacheKept(const MemoryContext& ctx) {
  // PyTorch's own training loops as measured (HF's and torchtune's); DeepSpeed, Megatron and
  // Unsloth keep their least fragmentation (memory_model.cc DefaultCacheGrowth).
  const Layout& l = ctx.l;
  const bool measured = l.framework != Framework::kDeepSpeed && l.framework != Framework::kMegatron &&
                        l.stack != Stack::kUnsloth;
  return ctx.w.training() && ctx.w.lora_like() && measured && !DenseStatesSharded(l) && l.ac != Recompute::kNone &&
         l.tp * l.cp * l.pp == 1 && !ctx.r.compile;
}

void AddActivations(const MemoryContext& ctx, const StageShape& s, std::vector<MemoryTerm>& out) {
  const Layout& l = ctx.l;
  const ModelSpec& m = ctx.m;
  double per_mb = 0, largest_full = 0, largest_transient = 0;
  const int recomputed = l.ac == Recompute::kFull && l.ac_layers > 0 ? std::min(l.ac_layers, s.layers) : s.layers;
  for (int i = 0; i < s.layers; ++i) {
    const int64_t layer = s.first_layer + i;
    Recompute mode = l.ac;
    if (l.ac == Recompute::kFull && i >= recomputed) mode = Recompute::kNone;
    per_mb += static_cast<double>(LayerActivationBytes(ctx, layer, mode));
    const double full = static_cast<double>(LayerActivationBytes(ctx, layer, Recompute::kNone));
    largest_full = std::max(largest_full, full);
    // One layer's intermediate grads: half its full activations, or what Unsloth's kernels hold.
    const double transient = UnslothKernels(ctx, layer) ? UnslothBackwardBytes(ctx, layer, DimsFor(ctx, layer)) : full / 2;
    largest_transient = std::max(largest_transient, transient);
  }
  const double inflight = s.micro_batches_in_flight;
  const double saved = per_mb * inflight;
  if (ctx.r.activation_offload && s.layers > 1) {
    // Offloading (torchtune OffloadActivations, Unsloth's offloaded checkpoints) streams each
    // layer's saved tensors to pinned host memory as the next layer runs and brings them back
    // one layer ahead in backward: about two layers' worth stay on the GPU.
    const double on_gpu = std::min(saved, 2 * per_mb / s.layers * inflight);
    out.push_back({"activations", static_cast<int64_t>(on_gpu), 2 * static_cast<int64_t>(std::ceil(inflight)),
                   Phase::kForward, Phase::kBackward, Pool::kTorch,
                   "activation offloading: the layer being saved and the one being copied, per micro-batch in flight"});
    out.push_back({"activations_offloaded", static_cast<int64_t>(saved - on_gpu), 1, Phase::kForward, Phase::kBackward,
                   Pool::kHost, "saved activations in pinned host memory (activation offloading)"});
  } else {
    out.push_back({"activations", static_cast<int64_t>(saved), s.layers * static_cast<int64_t>(std::ceil(inflight)),
                   Phase::kForward, Phase::kBackward, Pool::kTorch,
                   "per-layer saved tensors (memory-model.md 2.4) x layers x micro-batches in flight (1F1B)"});
  }
  if (l.ac != Recompute::kNone)
    out.push_back({"recompute_layer", static_cast<int64_t>(largest_full), 1, Phase::kBackward, Phase::kBackward, Pool::kTorch,
                   "backward re-runs one layer's forward and holds its full activations"});
  // LoRA on one GPU with recomputation: each checkpointed layer frees its intermediates as the
  // forward leaves it, and the caching allocator keeps those blocks. Nothing but the frozen
  // base, the adapters and the saved layer inputs stays between steps, so the loss's
  // whole-logit requests, each larger than any of a layer's tensors, find none of them and map
  // segments of their own: the reserve at the loss holds one layer's forward beside it (H100
  // traces of QLoRA on Llama-3.1-8B and 70B, bench/data/allocator_traces). Full fine-tunes
  // free their gradients after each step, whose blocks the next forward splits; their growth
  // stays a fraction of the allocated peak (memory_model.cc DefaultCacheGrowth).
  const Dims d = DimsFor(ctx);
  if (LoraLayerCacheKept(ctx)) {
    const double layer_tensor = 4.0 * d.s * d.b * static_cast<double>(std::max(m.intermediate, m.hidden)) / d.t;
    const double chunks = ctx.r.loss == LossKind::kChunked ? kLossChunks : 1;
    const double loss_block = 2.0 * d.s * d.b * static_cast<double>(m.vocab) / d.t / chunks;
    if (layer_tensor < loss_block)
      out.push_back({"forward_layer_cache", static_cast<int64_t>(largest_full), 1, Phase::kLoss, Phase::kLossBackward,
                     Pool::kFragment, "one layer's forward intermediates, freed and cached in blocks smaller than the "
                     "loss's"});
  }
  // The gradient flowing back through the layers: one layer's input-sized buffer, twice.
  // The residual stream at a layer's (or a stage's) boundary, one micro-batch.
  const double boundary = (ctx.w.precision == Dtype::kFp32 ? 4 : 2) * d.s * d.b * d.h / d.sp_div;
  out.push_back({"activation_gradients", static_cast<int64_t>(2 * boundary + largest_transient), 3,
                 Phase::kBackward, Phase::kBackward, Pool::kTorch,
                 "grad of the residual stream plus one layer's intermediate grads during backward"});
  out.push_back({"inputs", static_cast<int64_t>(3 * 8 * d.s * d.b), 3, Phase::kForward, Phase::kBackward, Pool::kTorch,
                 "input_ids, labels, position_ids in int64"});
  // torch.distributed.pipelining (torchtitan's and AutoModel's pipelines) allocates, at the
  // first step, a receive buffer per micro-batch for every local stage's input but the first
  // stage's, and one for every local stage's output gradient but the last stage's, and keeps
  // them (stage.py PipelineStage._prepare_forward_infra, _create_grad_recv_info): the
  // stage-boundary hidden states, sequence-sharded under TP. A received input is the stage's
  // first saved tensor while its micro-batch is in flight, counted among the activations then.
  if (l.framework == Framework::kTorchtitan && l.pp > 1) {
    const int local = std::max(1, l.vpp);
    const double m_count = static_cast<double>(std::max<int64_t>(1, l.grad_accum));
    const double inputs = (local - (s.first ? 1 : 0)) * std::max(0.0, m_count - std::min(m_count, inflight));
    const double grads = (local - (s.last ? 1 : 0)) * m_count;
    if (inputs + grads > 0)
      out.push_back({"pipeline_recv_buffers", static_cast<int64_t>(boundary * (inputs + grads)),
                     static_cast<int64_t>(std::ceil(inputs + grads)), Phase::kSetup, Phase::kStep, Pool::kTorch,
                     "torch pipelining's receive buffers, one per micro-batch: each local stage's output gradient "
                     "(but the last's), and its input (but the first's) beyond the micro-batches in flight"});
  }
  // BLOOM's LayerNorm after the embedding sits outside every checkpointed layer (HF
  // word_embeddings_layernorm; Megatron-DeepSpeed checkpoints only the transformer layers,
  // pipe/module.py), so it saves its input for each micro-batch in flight whatever `ac` is.
  if (s.first && m.embedding_norm)
    out.push_back({"embedding_norm_input", static_cast<int64_t>(2 * d.s * d.b * d.h / d.sp_div * inflight),
                   static_cast<int64_t>(std::ceil(inflight)), Phase::kForward, Phase::kBackward, Pool::kTorch,
                   "the embedding LayerNorm's saved input, 2 B x tokens x hidden per micro-batch in flight"});
  if (!s.last) return;
  // Logits and loss (memory-model.md 4.5). Vocab-parallel heads (Megatron, torchtitan loss
  // parallel) split V by TP. HF upcasts logits to fp32 before cross-entropy.
  const double tokens = d.s * d.b;
  const double vocab = static_cast<double>(m.vocab) / ((MegatronModelCode(l) || l.framework == Framework::kTorchtitan) ? l.tp : 1);
  if (ctx.r.loss == LossKind::kFused && l.stack == Stack::kUnsloth) {
    // Cut Cross-Entropy (Unsloth from 2024-11-21): the logits exist only tile by tile on chip.
    // It keeps an fp32 log-sum-exp per token, and its backward writes the hidden states'
    // 16-bit grad (cut_cross_entropy cce_lse_forward.py, cce_backward.py; the head is frozen).
    out.push_back({"logits_and_loss", static_cast<int64_t>(tokens * (4 + 2 * static_cast<double>(m.hidden))), 2, Phase::kLoss,
                   Phase::kLossBackward, Pool::kTorch,
                   "Cut Cross-Entropy: an fp32 log-sum-exp per token and the hidden states' grad, no logits"});
    return;
  }
  if (ctx.r.loss == LossKind::kFused) {
    // Fused linear cross-entropy (Liger; Cut CE outside Unsloth) runs the head and the loss
    // over token chunks of about b*s*h/V tokens (Liger's chunk_size), computing the
    // hidden-state grad in forward: a chunk's bf16 + fp32 logits, and an fp32 grad of the last
    // hidden state.
    const double chunk = tokens * static_cast<double>(m.hidden) / std::max(vocab, 1.0);
    out.push_back({"logits_and_loss", static_cast<int64_t>(chunk * vocab * 10 + tokens * static_cast<double>(m.hidden) * 4), 3,
                   Phase::kLoss, Phase::kBackward, Pool::kTorch,
                   "fused linear cross-entropy: one chunk of logits + the fp32 grad of the hidden states"});
    return;
  }
  // DeepSpeed's pipeline engine returns from the last stage's backward before it clears
  // pipe_buffers['outputs'] (pipe/engine.py _exec_backward_pass), so the previous
  // micro-batch's output -- the logits, fp32 after Megatron-DeepSpeed's float16_to_fp32 --
  // stays alive beside the current one's, through the step.
  if (l.framework == Framework::kDeepSpeed && l.pp > 1)
    out.push_back({"pipe_output_kept", static_cast<int64_t>(tokens * vocab * (MegatronModelCode(l) ? 4 : 2)), 1, Phase::kForward,
                   Phase::kStep, Pool::kTorch, "the last stage's previous micro-batch output, never freed by the pipeline engine"});
  const LogitBytes b = WholeLogitBytes(ctx);
  out.push_back({"logits_and_loss", static_cast<int64_t>(tokens * vocab * b.forward + tokens * b.per_token), 3,
                 Phase::kLoss, Phase::kLoss, Pool::kTorch, b.forward_note});
  out.push_back({"logits_grad", static_cast<int64_t>(tokens * vocab * b.backward), 3, Phase::kLossBackward, Phase::kLossBackward,
                 Pool::kTorch, b.backward_note});
  if (PricesLossHole(ctx)) {
    const int64_t hole = UpcastLossHole(static_cast<int64_t>(tokens * vocab));
    out.push_back({"logits_freed_hole", hole, 1, Phase::kLossBackward, Phase::kLossBackward, Pool::kFragment,
                   "the bf16 logits' freed block, too small for the fp32 grads of the loss placed beside it"});
  }
  const int64_t root_segment = RootGradsSegment(ctx, s, tokens * vocab);
  if (root_segment > 0)
    out.push_back({"root_grads_segment", root_segment, 1, Phase::kBackward, Phase::kBackward, Pool::kFragment,
                   "FSDP2's flat reduce-scatter input of the root's grads, larger than any block the chunked loss freed: "
                   "a segment of its own"});
}

}  // namespace shardplan
