#include "planner/compute_cost.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "planner/dtype.h"
#include "planner/framework_defaults.h"
#include "planner/lora.h"
#include "planner/time_model.h"

namespace shardplan {
namespace {

// ---- Constants. Each names its source; "fit" means tuned on bench/data/time_cases.yaml. ----

// GEMM efficiency = ceiling (by architecture) x tile/wave quantization x reduction-depth
// factor. Quantization follows NVIDIA's "Matrix Multiplication Background" guide: the output
// is cut into CTA tiles, and the last wave of tiles over the SMs runs part-empty; cuBLAS picks
// the best of a few tile shapes (smaller tiles run slower per tile). The BLOOM chronicles see
// exactly this (micro-batch 1 -> 4 on TP=8: +16%). Short reductions cannot amortize the tile
// prologue/epilogue: K / (K + kReductionHalf), the half-point a fit.
struct TileShape {
  double rows, cols, speed;  // output tile and its throughput relative to the largest
};
constexpr TileShape kTiles[] = {{256, 128, 1.0}, {128, 128, 0.92}, {128, 64, 0.80}};
constexpr double kReductionHalf = 64;
// A grouped GEMM (one kernel over every expert's rows, as torch._grouped_mm runs routed
// experts; other frameworks' grouped expert GEMMs are priced the same, not measured) loses
// speed when each group has few rows, beyond what its tiles' quantization explains:
// rows / (rows + kGroupRowsHalf). Measured on an H100 in bf16 over 14 expert shapes
// (bench/data/gemm/h100-grouped-mm.json, from bench/calibrate/grouped_mm_probe.py): 128
// experts of 256 rows ran 477 TFLOPS where one dense GEMM of the same FLOPs ran 654, of 64
// rows 143 against 516, of 1,024 rows 687 against 679. The half-point is a fit to their
// forward and backward times together: with it the priced times land within -22%..+7% of the
// measured, without it -61%..+1%.
constexpr double kGroupRowsHalf = 96;
// Elementwise kernels reach ~80% of HBM bandwidth (STREAM-like copy on A100/H100).
constexpr double kMemEfficiency = 0.80;
// Fused attention, forward + backward, as a fraction of the 16-bit peak: FlashAttention-2
// reaches ~50-60% on A100 but only ~35% on H100, where FA2-class kernels (PyTorch SDPA, TE
// 2024) lack Hopper's async pipelines (Shah et al. 2024, FlashAttention-3, sec. 4.1).
constexpr double kAttentionEfficiencyAmpere = 0.50;
constexpr double kAttentionEfficiencyHopper = 0.35;
// llm-foundry's attn_impl "triton" (flash_attn_triton.py, the 2022 Triton FlashAttention on
// the pre-MLIR Triton build llm-foundry pins). FlashAttention-2 runs 1.3-2.5x faster than it on
// A100 (Dao 2023, sec. 4.1), least at the long sequences where attention dominates: 1.4 (fit:
// llm-foundry's A100 8k-64k rows). On Hopper it still issues Ampere's mma.sync, so it gains
// only SMs x boost clock over A100 (132 x 1.98 GHz against 108 x 1.41 GHz: 1.72x), which puts
// it at 0.36 x 312 x 1.72 = 191 TFLOP/s, 0.19 of H100's 989 (the H100 8k-64k rows agree).
constexpr double kTritonAttentionAmpere = kAttentionEfficiencyAmpere / 1.4;
constexpr double kA100Bf16Peak = 312e12, kH100Bf16Peak = 989e12;
constexpr double kHopperSmClockGain = (132 * 1.98) / (108 * 1.41);
constexpr double kTritonAttentionHopper = kTritonAttentionAmpere * kA100Bf16Peak * kHopperSmClockGain / kH100Bf16Peak;
// Transformer Engine's fused attention (cuDNN) on Hopper. TE's attention notebook
// (docs/examples/attention/attention.ipynb, H100 80GB HBM3, cuDNN 9.3 against flash-attn 2.4.2)
// times Llama-3-8B's attention (batch 2, 32 heads, 4 KV groups, head dim 128, 8,192 tokens,
// causal) forward + backward at 7.4875 ms against 11.8879 ms; the FlashAttention-2 time is
// what kAttentionEfficiencyHopper gives for that shape (11.7 ms).
constexpr double kCudnnAttentionHopper = kAttentionEfficiencyHopper * 11.8879 / 7.4875;
// Fused-attention kernels amortize loading a query tile and writing its output over the key
// blocks they stream, so short key ranges run below the long-sequence rate. FlashAttention-3
// (Shah et al. 2024, fig. 5-6: H100, head dim 128, forward) reaches 467 TFLOP/s at 512 tokens
// against 646 at 8k unmasked and 292 against 602 causal; FlashAttention-2 309/370 and 191/333.
// keys / (keys + kAttentionKeysHalf), keys per query in one kernel call, follows both to
// ~20% at 512 tokens and ~10% from 1k up (fit).
constexpr double kAttentionKeysHalf = 200;
// Ring attention (Transformer Engine's cp_comm_type "p2p", Megatron's default) merges each
// step's partial output into the running one (flash_attn_fwd_out_correction: read the step's
// output, read and write the accumulator, 16-bit) and in backward adds each step's dQ and
// dK/dV the same way (dq.add_, dk.add_): 6 bytes per element per step. Steps that compute
// half the queries touch half the output: 3/4 of a full pass on average over the ranks
// (transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py).
constexpr double kRingMergeBytes = 6;
constexpr double kRingMergeShare = 0.75;
// PyTorch's context_parallel (torch/distributed/tensor/experimental/_attention.py, which
// torchtitan runs) merges in fp32 and in eager ops. Forward, per element of the local output:
// the step's output cast to fp32 (read 2, write 4), then out - sigmoid(dlse) * (out - block)
// as three passes (12 + 8 + 12): 38 B. Half the steps (source after the rank, load balanced)
// cover the second half of the queries only, 19 B, and splice the half back with torch.cat
// over the whole output (read 4, write 4): 27 B. Both kinds, averaged: 32.5 B per step past
// the first, and the first step's cast and the result's cast back (6 + 6). Each step also
// concatenates the K and V it forwards (read and write, bf16: 4 B per K/V element).
// Backward: grad_query accumulates in fp32 (read 4 + 2, write 4: 10 B), or, on half the
// steps, into one half spliced back by torch.cat (5 + 8 = 13 B): 11.5 B per query element per
// step; grad K/V the same, plus the fp32 concatenation they travel in (8 B) and the K/V
// concatenation (4 B): 23.5 B per K/V element per step; and both cast back to bf16 (6 B).
constexpr double kTorchRingStepBytes = 32.5, kTorchRingEndBytes = 12, kTorchRingKvCatBytes = 4;
constexpr double kTorchRingQGradBytes = 11.5, kTorchRingKvGradBytes = 23.5, kTorchRingGradCastBytes = 6;
// Tensor cores need 16-byte-aligned matrix dims; a head dim that is not a multiple of 8
// elements falls back to SIMT kernels, ~10x slower (NVIDIA Matrix Multiplication guide;
// BLOOM chronicles: NHIDDEN 14400 with 64 heads, head dim 225, ran ~25% slower end to end).
constexpr double kMisalignedSlowdown = 10;
// FlashAttention backward runs 5 matmuls against the forward's 2, with 2 of them
// recomputing the scores: ~2.5x the forward FLOPs (Dao 2023, sec. 3.1.2).
constexpr double kFlashBackwardRatio = 2.5;
// Memory traffic of the non-matmul ops of one layer, forward, per token, in activation
// elements: `h` per hidden-size vector (norms, residual adds, dropout), `qkv` per
// projection output element (rotary, head transposes), `ffn` per MLP inner element
// (activation and gate product), `loss` bytes per logit (cross-entropy forward + backward).
// Eager counts from the op list of HF's Llama layer (RMSNorm upcasts to fp32: ~12 passes
// over h per norm); fused is what torch.compile / Megatron-TE kernels leave (one read and
// one write per fused region). Backward moves about twice the forward bytes.
struct ElementwiseCoeffs {
  double h, qkv, ffn, loss;
};
constexpr ElementwiseCoeffs kEager{30, 8, 5, 20};
constexpr ElementwiseCoeffs kFused{6, 2, 3, 8};
// Transformer Engine's RMSNorm and fused RoPE in otherwise eager code (NeMo AutoModel): the
// norms and the attention projections' passes as fused, the MLP's activation and the loss
// as eager.
constexpr ElementwiseCoeffs kTeNorms{kFused.h, kFused.qkv, kEager.ffn, kEager.loss};

const ElementwiseCoeffs& Coeffs(const LayerShape& x) { return x.fused ? kFused : x.te_norms ? kTeNorms : kEager; }
// Without fused attention the scores are written, softmaxed (read + write) and read by the
// AV matmul: 4 passes over a * s elements per token (Korthikanti et al. 2022, Table 1 terms).
constexpr double kScorePasses = 4;
// MoE dispatch: permute, unpermute and the combine weighting pass over k * h per token.
constexpr double kPermutePasses = 4;
// FP8 (Transformer Engine): each GEMM input is read in bf16 and written in fp8: 3 bytes.
constexpr double kFp8CastBytes = 3;
// torchao's rowwise float8 (torchtitan's recipe_name "rowwise") scales each GEMM operand per
// row for one GEMM and per column for the other, so every cast also writes a transposed bf16
// copy and casts it again: torchao's roofline (torchao/testing/training/roofline_utils.py,
// get_tensor_memory_traffic_ovhd_s, with the amax read fused into the producer as
// torch.compile does) counts 6 B per activation element where tensorwise needs 4: 1 B of fp8
// written row-major, then 5 B for the column-scaled copy (2 B transposed out, 2 B back in,
// 1 B of fp8). Those 5 B are a reduction down the columns fused with a transposed write, a
// pattern Inductor does not tile well: torchao's hand-written kernel for the same dim0+dim1
// cast (to MX, pytorch/ao#1869, pytorch/pytorch#148682) runs about 2x faster than what
// torch.compile generates. So the column-scaled 5 B move at half the bandwidth: 1 + 2 x 5 =
// 11 B where tensorwise, scaled once per tensor, moves 4. The published pairs bear it out
// beside their bf16 runs: torchao's Llama 3 8B over FSDP 8 (docs/source/workflows/training.md,
// 500 W H100s) gains 10.0% from rowwise and 25.0% from tensorwise (this model: 11.8% and
// 24.8%, where the roofline's 6 B gave 17.5%); torchtitan's rowwise TP 8 runs
// (benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md) read +0.3% and +0.6% for 70B and
// +14% and +16% for 8B (whose bf16 rows read +8% and +9%), where 6 B read +7% and +26-28%.
constexpr double kRowwiseCastRatio = 11.0 / 4.0;
// Its backward GEMMs accumulate slowly (Float8LinearConfig's grad_input and grad_weight
// gemm configs), a mode in which torchao runs cuBLAS's tensorwise kernel at unit scales and
// rescales the bf16 output afterwards (torchao/float8/float8_ops.py, addmm_float8_unwrapped:
// output *= post_inverse_scale): one more read and write of every input and weight gradient.
constexpr double kRowwiseRescaleBytes = 4;
// NVFP4 (Transformer Engine's nvfp4 recipe): an amax pass for the per-tensor scale, then one
// read that writes both the rowwise and the columnwise copies, 0.5 B + an e4m3 scale per 16
// values each: 2 + 2 + 2 x 0.5625 bytes.
constexpr double kFp4CastBytes = 2 + 2 + 2 * (0.5 + 1.0 / 16);
// Mamba-2's chunked SSD forward (mamba_ssm ssd_combined.py: chunk_cumsum, chunk_state,
// state_passing, bmm_chunk, chunk_scan) reads x twice, B twice and C twice and writes y:
// 3 x inner + 4 x groups x state elements per token; the fp32 chunk states, heads x head_dim
// x state per chunk, are written, read and written again by state passing, and read by the
// scan: 4 passes. Its backward (_mamba_chunk_scan_combined_bwd) recomputes four of those
// kernels and runs nine more (dstates, state passing, dx, dB, dC, dCB, two bmm_chunk_bwd,
// ddA), each reading x, B, C, dout or the fp32 states again: about 3x the forward's bytes.
constexpr double kSsdStatePasses = 4;
constexpr double kSsdBackwardRatio = 3;

// ---- Hardware ----

double Peak16(const GpuSpec& g) { return g.bf16_flops > 0 ? g.bf16_flops : g.fp16_flops; }

// Fraction of the dense datasheet peak that large cuBLAS GEMMs sustain, by architecture.
// A100 (sm80) holds ~250 of 312 TFLOP/s; H100 SXM (sm90) is power-bound at ~700 of 989
// (BF16) and ~1100 of 1979 (FP8, with scaling overhead). Values are fits within those ranges.
// NVFP4's block-scaled GEMMs are taken at FP8's share of their own peak: no published figure
// separates them (an assumption, not a fit).
double Ceiling(int cc, Dtype p) {
  const bool fp8 = p == Dtype::kFp8 || p == Dtype::kFp4;
  if (cc >= 90) return fp8 ? 0.55 : 0.70;
  if (cc >= 89) return fp8 ? 0.55 : 0.80;
  return 0.80;
}

// A card capped below its TDP (nvidia-smi -pl) lowers its clock until it fits. Board power is
// a static part (leakage, memory, fans: about the idle draw, ~10% of TDP on an H100 SXM or
// A100) plus the SMs' dynamic power C*V^2*f. Tensor-core work already runs power-bound at the
// TDP (the ceilings above), at clocks where the voltage sits at the bottom of its DVFS range,
// so below the TDP dynamic power goes as f alone: the clock that fits the limit, and with it
// tensor throughput, is (limit - idle) / (tdp - idle); memory-bound kernels keep their rate.
// H100 SXM at 500 W of 700: 0.68. torchtitan's H100s at their 500 W default
// (benchmarks/llama3_h100_202412_torchtitan.md) bear it out: its 1D Llama 3.1 8B rows land
// within -1.5% to -5.5% under it and 16-22% fast under f^3 scaling (0.88), while our own
// 700 W H100 runs (bench/calibrate) time the same eager torchtitan block at +1.7%.
constexpr double kIdlePowerShare = 0.10;

double PowerClockFactor(const GpuSpec& g) {
  if (g.tdp_watts <= 0 || g.power_limit_watts <= 0 || g.power_limit_watts >= g.tdp_watts) return 1;
  const double idle = kIdlePowerShare * g.tdp_watts;
  const double share = (g.power_limit_watts - idle) / (g.tdp_watts - idle);
  return share <= 0.01 ? 0.01 : share;
}

// SMs from the dense 16-bit peak over the architecture's per-SM tensor rate at boost clock
// (datasheets: V100 125 TF / 80 SMs, A100 312 / 108, A6000 154.8 / 84, L40S 362 / 142,
// H100 SXM 989.4 / 132, B200 2250 / 148) when the catalog does not give the count.
double SmCount(const GpuSpec& g) {
  if (g.sms > 0) return g.sms;
  const int cc = g.compute_capability;
  const double per_sm = cc >= 100 ? 15.2e12 : cc >= 90 ? 7.5e12 : cc >= 89 ? 2.55e12 : cc >= 86 ? 1.84e12
                        : cc >= 80 ? 2.89e12 : 1.56e12;
  return std::max(1.0, std::round(Peak16(g) / per_sm));
}

// ceil() of a positive double without a libm call (the search calls this millions of times).
double CeilPositive(double v) {
  const double t = static_cast<double>(static_cast<int64_t>(v));
  return t < v ? t + 1 : t;
}

// Share of the tile-quantized, wave-quantized grid of `groups` GEMMs with an m x n output
// that does useful work, for the best tile shape.
double TileEfficiency(double sms, double m, double n, double groups) {
  double best = 0;
  for (const TileShape& t : kTiles) {
    if (best >= t.speed) break;  // this and smaller tiles cannot do better
    const double tiles = CeilPositive(m / t.rows) * CeilPositive(n / t.cols) * groups;
    const double waves = CeilPositive(tiles / sms);
    best = std::max(best, t.speed * m * n * groups / (waves * sms * t.rows * t.cols));
  }
  return best;
}

double Efficiency(const Hw& hw, double ceiling, double m, double n, double k, double groups) {
  return ceiling * TileEfficiency(hw.sms, m, n, groups) * k / (k + kReductionHalf);
}

double RaggedGroupFactor(double rows, double groups) { return groups > 1 ? rows / (rows + kGroupRowsHalf) : 1; }

// ---- One layer, one micro-batch, one GPU ----

void AttentionGemms(const LayerShape& x, Forward* f) {
  const ModelSpec& m = x.m;
  const double T = x.tokens, h = m.hidden, tp = x.tp, a = m.heads;
  const bool lp = x.fp8;
  if (m.attention == AttentionKind::kMla) {
    const double qk = QkDim(m), rope = m.qk_rope_head_dim, nope = m.qk_nope_head_dim;
    f->gemm += m.q_lora_rank > 0 ? Gemm(x.hw, lp, T, m.q_lora_rank, h) + Gemm(x.hw, lp, T, a * qk / tp, m.q_lora_rank)
                                 : Gemm(x.hw, lp, T, a * qk / tp, h);
    f->gemm += Gemm(x.hw, lp, T, m.kv_lora_rank + rope, h) +
               Gemm(x.hw, lp, T, a * (nope + m.v_head_dim) / tp, m.kv_lora_rank);
    const double o = Gemm(x.hw, lp, T, h, a * m.v_head_dim / tp);
    f->gemm += o;
    if (x.op_sac) f->sac_gemm += o;
    return;
  }
  const double qw = m.q_width(), kvw = m.kv_width();
  const double o = Gemm(x.hw, lp, T, h, qw / tp);
  const double q_out = m.attention_gate ? 2 * qw : qw;  // q_proj also gives the output gate
  f->gemm += Gemm(x.hw, lp, T, (q_out + 2 * kvw) / tp, h) + o;
  if (x.op_sac) f->sac_gemm += Gemm(x.hw, lp, T, kvw / tp, h) + o;  // wk, wo: mm #2 and #4 of q,k,v,o
}

void MlpGemms(const LayerShape& x, bool moe, Forward* f) {
  const ModelSpec& m = x.m;
  const double T = x.tokens, h = m.hidden, tp = x.tp;
  const double up = m.mlp == MlpKind::kGated ? 2 : 1;
  const bool lp = x.fp8;
  if (!moe) {
    const double ffn = m.intermediate / tp;
    const double down = Gemm(x.hw, lp, T, h, ffn);
    f->gemm += Gemm(x.hw, lp, T, up * ffn, h) + down;
    if (x.op_sac) f->sac_gemm += m.mlp == MlpKind::kGated ? Gemm(x.hw, lp, T, ffn, h) : down;  // w3 / fc2
    return;
  }
  // Each GPU runs T*k/tp expert-tokens over its E/ep local experts; the busiest rank, which
  // the others wait for, gets defaults::MoeImbalance times the balanced share (all of them,
  // with ep 1).
  const double local_experts = static_cast<double>(m.experts) / x.ep;
  const double pairs = T * static_cast<double>(m.experts_per_token) / tp;
  const double rows = MoeImbalance(x) * pairs * x.ep * x.etp / static_cast<double>(m.experts);
  const double fe = static_cast<double>(m.expert_intermediate) / x.etp;
  const double ew = static_cast<double>(m.expert_width());  // the latent width, where the experts use one
  f->gemm += ExpertGemm(x.hw, lp, rows, up * fe, ew, local_experts) + ExpertGemm(x.hw, lp, rows, ew, fe, local_experts);
  if (m.moe_latent > 0) f->gemm += Gemm(x.hw, lp, T, ew, h) + Gemm(x.hw, lp, T, h, ew);
  if (m.shared_experts > 0) {
    const double fs = static_cast<double>(m.shared_experts * m.shared_intermediate) / tp;
    f->gemm += Gemm(x.hw, lp, T, up * fs, h) + Gemm(x.hw, lp, T, h, fs);
  }
  f->gemm += Gemm(x.hw, false, T, static_cast<double>(m.experts), h);  // router
}

void AttentionCore(const LayerShape& x, Forward* f) {
  const ModelSpec& m = x.m;
  const double heads = static_cast<double>(m.heads) / x.tp;
  const double keys = AttendedKeys(m, x.seq, x.flash);
  const double flops = 2 * x.tokens * keys * heads * (QkDim(m) + VDim(m));
  const double d = QkDim(m);
  const double aligned = static_cast<int64_t>(d) % 8 == 0 ? 1 : kMisalignedSlowdown;
  if (x.flash) {
    // Each rank's sequence is two chunks (causal balance), so each ring step after the first
    // runs over s/(2 cp) keys for all local queries or s/cp keys for half of them: equal work
    // whose rates average (harmonically) to that of 2 s / (3 cp) keys.
    const double kernel_keys = x.cp > 1 ? std::min(keys, 2 * x.seq / (3.0 * x.cp)) : keys;
    const double length = kernel_keys / (kernel_keys + kAttentionKeysHalf);
    f->attn += aligned * flops / (x.hw.peak16 * x.hw.attention * length);
    // DSA's indexer scores every earlier token with its own heads, q.k only, in FP8 (DeepSeek
    // V3.2 report; DeepGEMM's fp8_mqa_logits), and every TP rank scores them all, since the
    // top-k it picks serves all heads. That is what lets attention itself stay at index_topk keys.
    if (m.index_heads > 0)
      f->attn += 2 * x.tokens * x.seq / 2 * static_cast<double>(m.index_heads * m.index_head_dim) /
                 (x.hw.peak8 * x.hw.attention);
    return;
  }
  // Materialized scores: batched QK^T (k = head dim) and AV GEMMs per head, plus the
  // softmax traffic.
  const double rows = x.seq / x.cp, batches = heads * x.tokens / rows;
  f->attn += aligned * (Gemm(x.hw, false, rows, x.seq, d, batches) + Gemm(x.hw, false, rows, VDim(m), x.seq, batches));
  f->attn += MemSeconds(x.hw, x.tokens * heads * x.seq * x.act * kScorePasses);
}

// A linear mixer (Mamba-2 or Gated DeltaNet): in_proj and out_proj (column- and row-parallel
// over TP, as Megatron's MambaMixer splits heads and groups), the chunked scan at the
// fused-attention kernels' rate or its memory traffic, whichever is slower, and the pointwise
// work: one norm and residual, the conv and SiLU over x, B and C, the gated RMSNorm over y.
void LinearMixerBlock(const LayerShape& x, Forward* f) {
  const ModelSpec& m = x.m;
  const ModelSpec::LinearMixer& mb = m.linear;
  const double T = x.tokens, h = m.hidden, tp = x.tp;
  const double inner = static_cast<double>(mb.inner()), bc = 2.0 * static_cast<double>(mb.groups * mb.state);
  f->gemm += Gemm(x.hw, x.fp8, T, static_cast<double>(mb.in_proj()) / tp, h) + Gemm(x.hw, x.fp8, T, h, inner / tp);
  const double flops = T * LinearMixerFlopsPerToken(m) / tp;
  const double states = T / static_cast<double>(mb.chunk) * inner * static_cast<double>(mb.state) * 4 * kSsdStatePasses;
  const double bytes = T * (3 * inner + 2 * bc) * x.act + states;
  const double scan = std::max(flops / (x.hw.peak16 * x.hw.attention), MemSeconds(x.hw, bytes / tp));
  f->attn += scan;
  f->attn_bwd += kSsdBackwardRatio * scan;
  const ElementwiseCoeffs& e = Coeffs(x);
  const double elems = e.h / 2 * h / (x.sp ? tp : 1) + e.qkv * (inner + bc + inner) / tp;
  f->elem += MemSeconds(x.hw, T * elems * x.act);
}

// Ring attention's per-step merges of partial results, forward and backward.
void RingMerges(const LayerShape& x, Forward* f) {
  if (x.cp <= 1 || !x.flash) return;
  const ModelSpec& m = x.m;
  const double heads = static_cast<double>(m.heads) / x.tp;
  const double kv = m.attention == AttentionKind::kMla
                        ? heads * (QkDim(m) + VDim(m))
                        : 2 * std::max(m.kv_width() / static_cast<double>(x.tp), static_cast<double>(m.head_dim));
  if (x.torch_ring) {
    const double out = x.tokens * heads * VDim(m), q = x.tokens * heads * QkDim(m), kv_elems = x.tokens * kv;
    f->attn += MemSeconds(x.hw, out * ((x.cp - 1) * kTorchRingStepBytes + kTorchRingEndBytes) +
                                    kv_elems * x.cp * kTorchRingKvCatBytes);
    f->attn_bwd += MemSeconds(x.hw, q * (x.cp * kTorchRingQGradBytes + kTorchRingGradCastBytes) +
                                        kv_elems * (x.cp * kTorchRingKvGradBytes + kTorchRingGradCastBytes));
    return;
  }
  const double bytes = x.cp * kRingMergeShare * kRingMergeBytes * x.tokens;  // per head-dim element
  f->attn += MemSeconds(x.hw, bytes * heads * VDim(m));
  f->attn_bwd += MemSeconds(x.hw, bytes * (heads * QkDim(m) + kv));
}

// The non-matmul passes of a block: a transformer's both halves, or a hybrid block's one
// (half the norm and residual traffic, and only its own half's projections).
void Elementwise(const LayerShape& x, bool moe, bool attention, bool mlp, Forward* f) {
  const ModelSpec& m = x.m;
  const ElementwiseCoeffs& e = Coeffs(x);
  const double tp = x.tp, h = m.hidden;
  const double hidden_split = x.sp ? tp : 1;  // SP splits norms/residuals over TP
  const double proj = m.attention == AttentionKind::kMla ? m.heads * (2 * QkDim(m) + VDim(m))
                                                         : (m.attention_gate ? 3.0 : 1.0) * m.q_width() + 2.0 * m.kv_width();
  double inner = m.intermediate;
  if (moe) {
    inner = static_cast<double>(m.experts_per_token * m.expert_intermediate + m.shared_experts * m.shared_intermediate);
  }
  const double norms = attention && mlp ? 1 : 0.5;
  double elems = e.h * norms * h / hidden_split + (attention ? e.qkv * proj / tp : 0) + (mlp ? e.ffn * inner / tp : 0);
  if (moe && mlp) elems += kPermutePasses * m.experts_per_token * static_cast<double>(m.expert_width()) / tp;
  double bytes = x.tokens * elems * x.act;
  if (x.fp8)
    bytes += x.tokens * (x.fp4 ? kFp4CastBytes : kFp8CastBytes) * (x.rowwise ? kRowwiseCastRatio : 1) *
             (2 * norms * h + (attention ? proj / tp : 0) + (mlp ? inner / tp : 0));
  f->elem += MemSeconds(x.hw, bytes);
}

// torchao rowwise float8's rescale of each backward GEMM output (kRowwiseRescaleBytes): the
// input gradient of every linear (torchtitan's wq, wk and wv each take the whole hidden
// state, as w1 and w3 do; under TP those are partial sums over the full sequence) and its
// weight gradient, per micro-batch. Dense blocks only: routed experts run grouped GEMMs, and
// MLA's projections (torchtitan's DeepSeek) are left out.
void RowwiseRescale(const LayerShape& x, bool moe, bool attention, bool mlp, Forward* f) {
  if (!x.rowwise || !x.fp8 || x.fp4) return;
  const ModelSpec& m = x.m;
  const double tp = x.tp, h = m.hidden;
  double inputs = 0, weights = 0;
  if (attention && m.attention != AttentionKind::kMla) {
    const double q_out = m.attention_gate ? 2 * m.q_width() : m.q_width();
    inputs += 3 * h + m.q_width() / tp;
    weights += h * (q_out + 2 * m.kv_width()) / tp + h * m.q_width() / tp;
  }
  if (mlp && !moe) {
    const double up = m.mlp == MlpKind::kGated ? 2 : 1, ffn = m.intermediate / tp;
    inputs += up * h + ffn;
    weights += (up + 1) * h * ffn;
  }
  f->elem_bwd += MemSeconds(x.hw, kRowwiseRescaleBytes * (x.tokens * inputs + weights));
}

}  // namespace

double PeakFor(const GpuSpec& g, Dtype p) {
  switch (p) {
    case Dtype::kFp8: return g.fp8_flops > 0 ? g.fp8_flops : Peak16(g);
    case Dtype::kFp4: return g.fp4_flops > 0 ? g.fp4_flops : PeakFor(g, Dtype::kFp8);
    case Dtype::kFp16: return g.fp16_flops > 0 ? g.fp16_flops : Peak16(g);
    // PyTorch runs fp32 matmuls without TF32 by default; non-tensor FP32 is ~1/16 of BF16.
    case Dtype::kFp32: return g.fp32_flops > 0 ? g.fp32_flops : Peak16(g) / 16;
    default: return Peak16(g);
  }
}

Hw HardwareFor(const GpuSpec& g, Dtype p, AttentionImpl attention) {
  Hw hw;
  hw.sms = SmCount(g);
  hw.peak = PeakFor(g, p);
  hw.peak16 = Peak16(g) > 0 ? Peak16(g) : hw.peak;
  hw.peak8 = g.fp8_flops > 0 ? g.fp8_flops : hw.peak16;
  hw.bw = g.memory_bandwidth;
  const double clock = PowerClockFactor(g);
  hw.ceiling = Ceiling(g.compute_capability, p) * clock;
  hw.ceiling16 = Ceiling(g.compute_capability, Dtype::kBf16) * clock;
  hw.operand = p == Dtype::kFp8 ? 1 : p == Dtype::kFp4 ? QuantizedBytesPerParam(Dtype::kFp4) : DtypeBytes(p);
  if (p == Dtype::kFp32) {
    // An fp32 run has no 16-bit path: attention and the LM head run in fp32 too.
    hw.peak16 = hw.peak;
    hw.ceiling16 = hw.ceiling;
    hw.operand16 = 4;
  }
  const bool hopper = g.compute_capability >= 90;
  if (attention == AttentionImpl::kCudnn && g.compute_capability == 90) {
    hw.attention = kCudnnAttentionHopper * clock;
  } else if (attention == AttentionImpl::kTriton) {
    hw.attention = (hopper ? kTritonAttentionHopper : kTritonAttentionAmpere) * clock;
  } else {
    hw.attention = (hopper ? kAttentionEfficiencyHopper : kAttentionEfficiencyAmpere) * clock;
  }
  return hw;
}

namespace {
double ScaledGemm(const Hw& hw, bool low_precision, double m, double n, double k, double groups, double scale) {
  if (m <= 0 || n <= 0 || k <= 0 || groups <= 0) return 0;
  const double peak = low_precision ? hw.peak : hw.peak16;
  const double e = Efficiency(hw, low_precision ? hw.ceiling : hw.ceiling16, m, n, k, groups) * scale;
  const double compute = 2 * m * n * k * groups / (peak * e);
  const double bytes = (m * k + k * n + m * n) * groups * (low_precision ? hw.operand : hw.operand16);
  return std::max(compute, hw.bw > 0 ? bytes / (hw.bw * kMemEfficiency) : 0);
}
}  // namespace

double Gemm(const Hw& hw, bool low_precision, double m, double n, double k, double groups) {
  return ScaledGemm(hw, low_precision, m, n, k, groups, 1);
}

double ExpertGemm(const Hw& hw, bool low_precision, double rows, double n, double k, double groups) {
  return ScaledGemm(hw, low_precision, rows, n, k, groups, RaggedGroupFactor(rows, groups));
}

double MemSeconds(const Hw& hw, double bytes) { return hw.bw > 0 ? bytes / (hw.bw * kMemEfficiency) : 0; }

double MoeImbalance(const LayerShape& x) {
  return defaults::MoeImbalance(x.ep, x.routing, x.tokens / x.tp * static_cast<double>(x.m.experts_per_token));
}

// ---- Model geometry and FLOP counts ----

double Width(const ModelSpec& m) { return m.word_embed_proj_dim > 0 ? m.word_embed_proj_dim : m.hidden; }

double FinalNormParams(const ModelSpec& m) {
  return m.final_norm ? static_cast<double>(m.hidden) * (m.norm == NormKind::kLayer ? 2 : 1) : 0;
}

double QkDim(const ModelSpec& m) {
  return m.attention == AttentionKind::kMla ? m.qk_nope_head_dim + m.qk_rope_head_dim : m.head_dim;
}
double VDim(const ModelSpec& m) { return m.attention == AttentionKind::kMla ? m.v_head_dim : m.head_dim; }

double AttendedKeys(const ModelSpec& m, double s, bool causal_skip) {
  const double full = causal_skip ? s / 2 : s;
  if (m.index_topk > 0) {
    // DSA: each query attends to the index_topk keys its indexer picks, all of them while
    // fewer exist; over a causal sequence of s > k tokens that averages k - k^2 / (2 s).
    const double k = static_cast<double>(m.index_topk);
    return causal_skip ? (s <= k ? full : k - k * k / (2 * s)) : std::min(s, k);
  }
  if (m.sliding_window <= 0) return full;
  const double window = std::min(full, static_cast<double>(m.sliding_window));
  const double sliding_share =
      m.sliding_window_pattern > 0 ? (m.sliding_window_pattern - 1.0) / m.sliding_window_pattern : 1.0;
  return sliding_share * window + (1 - sliding_share) * full;
}

// Sub-blocks of each kind: attention, dense MLP, MoE, linear mixer. A transformer's every
// layer has attention and an MLP or an MoE block; a hybrid's layer one or two of them.
struct BlockCounts {
  double attention = 0, mlp = 0, moe = 0, linear = 0;
};

BlockCounts CountBlocks(const ModelSpec& m, int64_t moe_layer_count) {
  BlockCounts n;
  if (!m.is_hybrid()) {
    n.attention = static_cast<double>(m.layers);
    n.moe = static_cast<double>(moe_layer_count);
    n.mlp = n.attention - n.moe;
    return n;
  }
  for (int64_t l = 0; l < m.layers; ++l) {
    n.attention += m.has_attention(l);
    n.linear += m.has_linear_mixer(l);
    n.mlp += m.has_mlp(l);
    n.moe += m.has_ffn(l) && m.is_moe_layer(l);
  }
  return n;
}

// Per token of one linear mixer: its in_proj and out_proj weights, and the chunked scan's own
// FLOPs, with chunks of Q tokens, N = state, P = head_dim, H heads and G groups.
//   Mamba-2's SSD (Dao & Gu 2024, sec. 6): the intra-chunk C.B^T scores, 2 Q N G, their product
//   with x, 2 Q P H, the chunk state, 2 N P H, and the state's contribution to the output, 2 N P H.
//   Gated DeltaNet (fla's chunk_gated_delta_rule, WY form; Yang et al. 2024): per head, K K^T,
//   W = A K and Q K^T within the chunk, 3 x 2 Q N, U = A V and the intra-chunk output, 2 x 2 Q P,
//   and against the state W S, Q S and the update K^T V', 3 x 2 N P.
double LinearMixerMatmulParams(const ModelSpec& m) {
  return static_cast<double>(m.hidden) * static_cast<double>(m.linear.in_proj() + m.linear.inner());
}
double LinearMixerFlopsPerToken(const ModelSpec& m) {
  const ModelSpec::LinearMixer& x = m.linear;
  const double q = static_cast<double>(x.chunk), n = static_cast<double>(x.state), inner = static_cast<double>(x.inner());
  if (x.delta) return static_cast<double>(x.heads) * (6 * q * n + 4 * q * static_cast<double>(x.head_dim)) + 6 * n * inner;
  return 2 * q * (n * static_cast<double>(x.groups) + inner) + 4 * n * inner;
}

double MatmulParams(const ModelSpec& m, int64_t moe_layer_count) {
  const double h = m.hidden, a = m.heads;
  double attn = 0;
  if (m.attention == AttentionKind::kMla) {
    const double qk = QkDim(m);
    attn = (m.q_lora_rank > 0 ? h * m.q_lora_rank + m.q_lora_rank * a * qk : h * a * qk) +
           h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * a * (m.qk_nope_head_dim + m.v_head_dim) +
           a * m.v_head_dim * h;
  } else {
    attn = (m.attention_gate ? 3 : 2) * h * m.q_width() + 2 * h * m.kv_width();
  }
  const double mats = m.mlp == MlpKind::kGated ? 3 : 2;
  const double dense_mlp = mats * h * m.intermediate;
  const double latent = m.moe_latent > 0 ? 2 * h * m.moe_latent : 0;  // fc1/fc2_latent_proj
  const double moe_mlp = mats * (m.experts_per_token * m.expert_intermediate * static_cast<double>(m.expert_width()) +
                                 h * m.shared_experts * m.shared_intermediate) +
                         h * m.experts + latent;  // router
  const BlockCounts n = CountBlocks(m, moe_layer_count);
  const double ew = Width(m);
  const double head = m.vocab * ew + (ew != h ? ew * h : 0);  // OPT's project_out feeds the head
  return n.attention * attn + n.mlp * dense_mlp + n.moe * moe_mlp + n.linear * LinearMixerMatmulParams(m) + head;
}

double FlopsPerToken(const ModelSpec& m, int64_t moe_layers, double context, double weight_factor, double passes) {
  const BlockCounts n = CountBlocks(m, moe_layers);
  const double attn = 2.0 * n.attention * AttendedKeys(m, context, false) * m.heads * (QkDim(m) + VDim(m));
  return weight_factor * MatmulParams(m, moe_layers) + passes * (attn + n.linear * LinearMixerFlopsPerToken(m));
}

double ModelFlops(const ModelSpec& m, const Workload& w, int64_t moe_layers) {
  if (!w.training()) return FlopsPerToken(m, moe_layers, w.inference.prompt_len + w.inference.gen_len / 2.0, 2, 1);
  return FlopsPerToken(m, moe_layers, static_cast<double>(w.seq_len), w.lora_like() ? 4 : 6, 3);
}

double OptimizerBytesPerParam(Optimizer o) {
  // Reads and writes of one fused step per parameter: fp32 master (8) + grad read (4) +
  // 16-bit param write (2) + states: Adam m, v (16), 8-bit Adam (4), momentum (8), Lion (8),
  // Adafactor factored (~2).
  switch (o) {
    case Optimizer::kAdamW:
    case Optimizer::kAdam: return 30;
    case Optimizer::kAdamW8bit: return 18;
    case Optimizer::kSgd: return 14;
    case Optimizer::kSgdMomentum:
    case Optimizer::kLion:
    case Optimizer::kMuon: return 22;
    case Optimizer::kAdafactor: return 16;
    case Optimizer::kRmsprop:
    case Optimizer::kAdagrad: return 22;   // one fp32 state, read and written
    case Optimizer::kLion8bit: return 16;  // one 8-bit state
    case Optimizer::kAdemamix: return 38;  // three fp32 states
    case Optimizer::kAdemamix8bit: return 20;
    case Optimizer::kAdamW4bit: return 16;
  }
  return 30;
}

double ForeachStepExtraBytes(Optimizer o, double trained) {
  // torch/optim/adam.py _multi_tensor_adam (capturable off), one pass over every tensor each:
  // AdamW's decoupled decay mul_(params) (2 P), lerp_(exp_avgs, grads) (2 S + G),
  // mul_(exp_avg_sqs) (2 S), addcmul_(exp_avg_sqs, grads, grads) (2 S + G), sqrt(exp_avg_sqs)
  // into a new list (2 S), div_ and add_ on it (4 S), addcdiv_(params, exp_avgs, sqrts)
  // (2 P + 2 S): 20 units for AdamW, 18 for Adam, where the fused kernel reads p, g, m, v and
  // writes p, m, v once (7). On one H100 (bench/data/calibration/l1b-hf-amp-s2k-b4-full,
  // 1.24 B fp32 params) the step took 39 ms; 82 B a param at the bandwidth priced is 38 ms.
  switch (o) {
    case Optimizer::kAdamW: return 13 * trained;
    case Optimizer::kAdam: return 11 * trained;
    default: return 0;
  }
}

double MuonFlopsPerParam(const ModelSpec& m) {
  // Newton-Schulz on an a x b matrix (a <= b, transposed if not), 5 iterations of
  // A = X X^T (2 a^2 b), B = bA + cA^2 (2 a^3), X = aX + BX (2 a^2 b): per element
  // 5 (4a + 2a^2 / b) (zeropower_via_newtonschulz5 in Jordan's muon.py; torch.optim.Muon's
  // ns_steps = 5). Averaged over the layers' matrices by their sizes.
  double flops = 0, params = 0;
  auto add = [&](double rows, double cols, double count) {
    const double a = std::min(rows, cols), b = std::max(rows, cols);
    if (a <= 0 || count <= 0) return;
    flops += count * rows * cols * 5 * (4 * a + 2 * a * a / b);
    params += count * rows * cols;
  };
  const double h = static_cast<double>(m.hidden), layers = static_cast<double>(m.layers);
  const int64_t moe = m.is_moe() ? m.moe_layer_count() : 0;
  const double dense = layers - static_cast<double>(moe), up = m.mlp == MlpKind::kGated ? 2 : 1;
  add(h, static_cast<double>(m.q_width()), 2 * layers);  // q and o (MLA's projections priced alike)
  add(h, static_cast<double>(m.kv_width()), 2 * layers);
  add(h, static_cast<double>(m.intermediate), (up + 1) * dense);
  add(h, static_cast<double>(m.expert_intermediate), (up + 1) * static_cast<double>(moe * m.experts));
  add(h, static_cast<double>(m.shared_experts * m.shared_intermediate), (up + 1) * static_cast<double>(moe));
  return params > 0 ? flops / params : 0;
}

double LoraLayerParams(const ModelSpec& m, const LoraSpec& lora) { return AdapterParamsPerLayerMean(m, lora); }

// ---- One layer, one micro-batch, one GPU ----

Forward LayerForward(const LayerShape& x, int64_t layer) {
  Forward f;
  const ModelSpec& m = x.m;
  const bool attention = m.has_attention(layer), mlp = m.has_ffn(layer), moe = mlp && m.is_moe_layer(layer);
  if (attention) {
    AttentionGemms(x, &f);
    AttentionCore(x, &f);
    f.attn_bwd = f.attn * (x.flash ? kFlashBackwardRatio : 2);
    RingMerges(x, &f);
  }
  if (mlp) MlpGemms(x, moe, &f);
  if (attention || mlp) Elementwise(x, moe, attention, mlp, &f);
  if (attention || mlp) RowwiseRescale(x, moe, attention, mlp, &f);
  if (m.has_linear_mixer(layer)) LinearMixerBlock(x, &f);
  return f;
}

double HeadSeconds(const LayerShape& x) {
  const double T = x.tokens, vt = static_cast<double>(x.m.vocab) / x.tp, ew = Width(x.m);
  const ElementwiseCoeffs& e = Coeffs(x);
  return Gemm(x.hw, false, T, vt, ew) * (x.lora ? 2 : 3) + MemSeconds(x.hw, T * vt * e.loss) +
         MemSeconds(x.hw, 3 * T * x.m.hidden * x.act * e.h);
}

double EmbedSeconds(const LayerShape& x) { return MemSeconds(x.hw, 3 * x.tokens * x.m.hidden * x.act); }

// ---- time_model.h's FLOP and GEMM entry points ----

double MatmulParamsPerToken(const ModelSpec& m) { return MatmulParams(m, m.is_moe() ? m.moe_layer_count() : 0); }

double TrainingFlopsPerToken(const ModelSpec& m, int64_t seq_len) {
  // Megatron-LM num_floating_point_operations (Narayanan et al. 2021, appendix) and PaLM
  // (Chowdhery et al. 2022, app. B): 6 * N_matmul + 6 * L * s * heads * (d_qk + d_v),
  // i.e. 12 * L * s * h_q for standard heads, counting the full (non-causal) score matrix.
  return FlopsPerToken(m, m.is_moe() ? m.moe_layer_count() : 0, static_cast<double>(seq_len), 6, 3);
}

double ModelFlopsPerToken(const ModelSpec& m, const Workload& w) {
  return ModelFlops(m, w, m.is_moe() ? m.moe_layer_count() : 0);
}

double GemmEfficiency(const GpuSpec& gpu, Dtype precision, double m, double n, double k, double experts) {
  if (m <= 0 || n <= 0 || k <= 0 || experts <= 0) return 0;
  const Hw hw = HardwareFor(gpu, precision);
  return Efficiency(hw, hw.ceiling, m, n, k, experts) * RaggedGroupFactor(m, experts);
}

double GemmSeconds(const GpuSpec& gpu, Dtype precision, double m, double n, double k, double experts) {
  return ExpertGemm(HardwareFor(gpu, precision), true, m, n, k, experts);
}

}  // namespace shardplan
