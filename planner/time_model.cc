#include "planner/time_model.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "planner/collectives.h"

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
// Elementwise kernels reach ~80% of HBM bandwidth (STREAM-like copy on A100/H100).
constexpr double kMemEfficiency = 0.80;
// Fused attention, forward + backward, as a fraction of the 16-bit peak: FlashAttention-2
// reaches ~50-60% on A100 but only ~35% on H100, where FA2-class kernels (PyTorch SDPA, TE
// 2024) lack Hopper's async pipelines (Shah et al. 2024, FlashAttention-3, sec. 4.1).
constexpr double kAttentionEfficiencyAmpere = 0.50;
constexpr double kAttentionEfficiencyHopper = 0.35;
// Tensor cores need 16-byte-aligned matrix dims; a head dim that is not a multiple of 8
// elements falls back to SIMT kernels, ~10x slower (NVIDIA Matrix Multiplication guide;
// BLOOM chronicles: NHIDDEN 14400 with 64 heads, head dim 225, ran ~25% slower end to end).
constexpr double kMisalignedSlowdown = 10;
// Overlapped communication still slows the compute it hides under (NCCL kernels take SMs
// and memory bandwidth): Galvatron's overlap coefficient, 1.1-1.3 (peers.md).
constexpr double kOverlapSlowdown = 1.2;
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
// Without fused attention the scores are written, softmaxed (read + write) and read by the
// AV matmul: 4 passes over a * s elements per token (Korthikanti et al. 2022, Table 1 terms).
constexpr double kScorePasses = 4;
// MoE dispatch: permute, unpermute and the combine weighting pass over k * h per token.
constexpr double kPermutePasses = 4;
// FP8 (Transformer Engine): each GEMM input is read in bf16 and written in fp8: 3 bytes.
constexpr double kFp8CastBytes = 3;
// Share of a collective left on the critical path when it is overlapped: TE userbuffers /
// async TP hide most TP traffic; the last gradient bucket can never hide (fits).
constexpr double kTpOverlapExposed = 0.3;
constexpr double kEpOverlapExposed = 0.3;
constexpr double kLastBucketShare = 0.1;
// Interleaved 1F1B overlaps its p2p with compute (Megatron --overlap-p2p-comm).
constexpr double kP2pOverlappedExposed = 0.5;
// Megatron's 1F1B pairs each send with the opposite receive in one batched call; DeepSpeed's
// PipelineEngine runs Send/Recv Activation/Grad as separate blocking instructions, so each
// transfer is paid on both sides (deepspeed/runtime/pipe/engine.py, p2p.py).
constexpr double kDeepSpeedP2pFactor = 2;
// DeepSpeed CPU-Adam: host-memory bound at ~30 B/param (fp32 param, m, v, grad), ~2e9
// params/s on a two-socket node (assumption, ~60 GB/s effective host bandwidth).
constexpr double kCpuAdamParamsPerSecond = 2e9;
// Optimizer-state bytes written to / read from NVMe per param per step (fp32 param, m, v).
constexpr double kNvmeOptimizerBytes = 2 * 12;

// ---- Hardware ----

struct Hw {
  double sms = 1;        // streaming multiprocessors
  double attention = 0;  // fused-attention efficiency
  double peak = 0;       // FLOP/s of the matmul precision (fp8 or 16-bit)
  double peak16 = 0;     // 16-bit FLOP/s: attention, LM head
  double bw = 0;         // HBM bytes/s
  double ceiling = 0;    // GEMM efficiency ceiling in the matmul precision
  double ceiling16 = 0;  // same in 16-bit
  double operand = 2;    // bytes per GEMM operand element
};

double Peak16(const GpuSpec& g) { return g.bf16_flops > 0 ? g.bf16_flops : g.fp16_flops; }

double PeakFor(const GpuSpec& g, Dtype p) {
  switch (p) {
    case Dtype::kFp8: return g.fp8_flops > 0 ? g.fp8_flops : Peak16(g);
    case Dtype::kFp16: return g.fp16_flops > 0 ? g.fp16_flops : Peak16(g);
    // PyTorch runs fp32 matmuls without TF32 by default; non-tensor FP32 is ~1/16 of BF16.
    case Dtype::kFp32: return g.fp32_flops > 0 ? g.fp32_flops : Peak16(g) / 16;
    default: return Peak16(g);
  }
}

// Fraction of the dense datasheet peak that large cuBLAS GEMMs sustain, by architecture.
// A100 (sm80) holds ~250 of 312 TFLOP/s; H100 SXM (sm90) is power-bound at ~700 of 989
// (BF16) and ~1100 of 1979 (FP8, with scaling overhead). Values are fits within those ranges.
double Ceiling(int cc, Dtype p) {
  const bool fp8 = p == Dtype::kFp8;
  if (cc >= 90) return fp8 ? 0.55 : 0.70;
  if (cc >= 89) return fp8 ? 0.55 : 0.80;
  return 0.80;
}

// SMs from the dense 16-bit peak over the architecture's per-SM tensor rate at boost clock
// (datasheets: V100 125 TF / 80 SMs, A100 312 / 108, A6000 154.8 / 84, L40S 362 / 142,
// H100 SXM 989.4 / 132, B200 2250 / 148). GpuSpec carries no SM count.
double SmCount(const GpuSpec& g) {
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

Hw HardwareFor(const GpuSpec& g, Dtype p) {
  Hw hw;
  hw.sms = SmCount(g);
  hw.peak = PeakFor(g, p);
  hw.peak16 = Peak16(g) > 0 ? Peak16(g) : hw.peak;
  hw.bw = g.memory_bandwidth;
  hw.ceiling = Ceiling(g.compute_capability, p);
  hw.ceiling16 = Ceiling(g.compute_capability, Dtype::kBf16);
  hw.operand = p == Dtype::kFp8 ? 1 : DtypeBytes(p);
  hw.attention = g.compute_capability >= 90 ? kAttentionEfficiencyHopper : kAttentionEfficiencyAmpere;
  return hw;
}

double Efficiency(const Hw& hw, double ceiling, double m, double n, double k, double groups) {
  return ceiling * TileEfficiency(hw.sms, m, n, groups) * k / (k + kReductionHalf);
}

// Seconds for `groups` GEMMs of (m x k) by (k x n): compute at the modelled efficiency or
// moving the operands, whichever is longer.
double Gemm(const Hw& hw, bool low_precision, double m, double n, double k, double groups = 1) {
  if (m <= 0 || n <= 0 || k <= 0 || groups <= 0) return 0;
  const double peak = low_precision ? hw.peak : hw.peak16;
  const double e = Efficiency(hw, low_precision ? hw.ceiling : hw.ceiling16, m, n, k, groups);
  const double compute = 2 * m * n * k * groups / (peak * e);
  const double bytes = (m * k + k * n + m * n) * groups * (low_precision ? hw.operand : 2);
  return std::max(compute, hw.bw > 0 ? bytes / (hw.bw * kMemEfficiency) : 0);
}

double MemSeconds(const Hw& hw, double bytes) { return hw.bw > 0 ? bytes / (hw.bw * kMemEfficiency) : 0; }

// Critical-path seconds of `comm` run under `compute` on another stream.
double Overlapped(double comm, double compute) {
  return std::max(0.0, comm - compute) + (kOverlapSlowdown - 1) * std::min(comm, compute);
}

// ---- What the layout runs ----

struct Knobs {
  bool dp_overlap, param_overlap, tp_overlap, ep_overlap, fused, flash;
};

bool Pick(Switch s, bool dflt) { return s == Switch::kAuto ? dflt : s == Switch::kOn; }

// Framework defaults. Megatron-Core recipes (NeMo, Megatron-Bridge) turn on
// overlap_grad_reduce/overlap_param_gather and use fused TE kernels; DeepSpeed overlaps the
// reduction only with overlap_comm, on by default at ZeRO-3 and set in the usual ZeRO-2
// configs, while its pipeline engine reduces after the last micro-batch;
// FSDP prefetches and overlaps always; plain PyTorch (FSDP, torchtitan) runs eager unless
// torch.compile is on; TP/EP overlap are opt-in everywhere.
Knobs ResolveSwitches(const Layout& l, const TimeOptions& o) {
  const bool megatron = l.framework == Framework::kMegatron;
  const bool ds_no_overlap = l.framework == Framework::kDeepSpeed && l.zero < 2;
  return {Pick(o.dp_overlap, !ds_no_overlap), Pick(o.param_gather_overlap, megatron),
          Pick(o.tp_overlap, false),           Pick(o.ep_overlap, false),
          Pick(o.fused_kernels, megatron),     Pick(o.flash_attention, true)};
}

struct Ctx {
  const ModelSpec& m;
  const Workload& w;
  const Layout& l;
  const ClusterSpec& c;
  Hw hw;
  Knobs k;
  int tp, cp, pp, dp, ep, etp, vpp;
  double seq;     // s
  double tokens;  // T: tokens of one micro-batch in one GPU's layer (mbs * s / cp)
  double act;     // bytes per activation element
  bool lora, fp8;
  bool op_sac;    // torchtitan's per-op selective recompute
  int64_t moe_layers = 0;  // layers whose MLP is an MoE block
};

int AtLeast1(int v) { return v > 0 ? v : 1; }

double Width(const ModelSpec& m) { return m.word_embed_proj_dim > 0 ? m.word_embed_proj_dim : m.hidden; }

double FinalNormParams(const ModelSpec& m) {
  return m.final_norm ? static_cast<double>(m.hidden) * (m.norm == NormKind::kLayer ? 2 : 1) : 0;
}

// Attention head dims: (query-key, value) per head.
double QkDim(const ModelSpec& m) {
  return m.attention == AttentionKind::kMla ? m.qk_nope_head_dim + m.qk_rope_head_dim : m.head_dim;
}
double VDim(const ModelSpec& m) { return m.attention == AttentionKind::kMla ? m.v_head_dim : m.head_dim; }

// Keys each query attends to, averaged over layers; causal masking halves it when the
// kernel skips masked blocks (flash), sliding-window layers cap it at the window.
double AttendedKeys(const ModelSpec& m, double s, bool causal_skip) {
  const double full = causal_skip ? s / 2 : s;
  if (m.sliding_window <= 0) return full;
  const double window = std::min(full, static_cast<double>(m.sliding_window));
  const double sliding_share =
      m.sliding_window_pattern > 0 ? (m.sliding_window_pattern - 1.0) / m.sliding_window_pattern : 1.0;
  return sliding_share * window + (1 - sliding_share) * full;
}

// Weight elements one token multiplies (MatmulParamsPerToken), with the MoE layer count given.
double MatmulParams(const ModelSpec& m, int64_t moe_layer_count) {
  const double h = m.hidden, a = m.heads;
  double attn = 0;
  if (m.attention == AttentionKind::kMla) {
    const double qk = QkDim(m);
    attn = (m.q_lora_rank > 0 ? h * m.q_lora_rank + m.q_lora_rank * a * qk : h * a * qk) +
           h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * a * (m.qk_nope_head_dim + m.v_head_dim) +
           a * m.v_head_dim * h;
  } else {
    attn = 2 * h * m.q_width() + 2 * h * m.kv_width();
  }
  const double mats = m.mlp == MlpKind::kGated ? 3 : 2;
  const double dense_mlp = mats * h * m.intermediate;
  const double moe_mlp = mats * h * (m.experts_per_token * m.expert_intermediate + m.shared_experts * m.shared_intermediate) +
                         h * m.experts;  // router
  const double moe_layers = static_cast<double>(moe_layer_count);
  const double ew = Width(m);
  const double head = m.vocab * ew + (ew != h ? ew * h : 0);  // OPT's project_out feeds the head
  return m.layers * attn + (m.layers - moe_layers) * dense_mlp + moe_layers * moe_mlp + head;
}

// `weight_factor` FLOPs per matmul weight (2 forward, 4 with data gradients, 6 with weight
// gradients too) and `passes` attention passes (forward = 1, training = 3) at `context` keys.
double FlopsPerToken(const ModelSpec& m, int64_t moe_layers, double context, double weight_factor, double passes) {
  const double attn = 2.0 * m.layers * AttendedKeys(m, context, false) * m.heads * (QkDim(m) + VDim(m));
  return weight_factor * MatmulParams(m, moe_layers) + passes * attn;
}

double ModelFlops(const ModelSpec& m, const Workload& w, int64_t moe_layers) {
  if (!w.training()) return FlopsPerToken(m, moe_layers, w.inference.prompt_len + w.inference.gen_len / 2.0, 2, 1);
  return FlopsPerToken(m, moe_layers, static_cast<double>(w.seq_len), w.lora_like() ? 4 : 6, 3);
}

// ---- One layer, one micro-batch, one GPU ----

struct Forward {
  double gemm = 0, attn = 0, elem = 0;
  double sac_gemm = 0;  // GEMMs torchtitan's per-op SAC recomputes (every second mm)
};

void AttentionGemms(const Ctx& x, Forward* f) {
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
  f->gemm += Gemm(x.hw, lp, T, (qw + 2 * kvw) / tp, h) + o;
  if (x.op_sac) f->sac_gemm += Gemm(x.hw, lp, T, kvw / tp, h) + o;  // wk, wo: mm #2 and #4 of q,k,v,o
}

void MlpGemms(const Ctx& x, bool moe, Forward* f) {
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
  // Balanced routing: each GPU runs T*k/tp expert-tokens, over its E/ep local experts.
  const double local_experts = static_cast<double>(m.experts) / x.ep;
  const double rows = T * m.experts_per_token * x.ep * x.etp / (tp * m.experts);
  const double fe = static_cast<double>(m.expert_intermediate) / x.etp;
  f->gemm += Gemm(x.hw, lp, rows, up * fe, h, local_experts) + Gemm(x.hw, lp, rows, h, fe, local_experts);
  if (m.shared_experts > 0) {
    const double fs = static_cast<double>(m.shared_experts * m.shared_intermediate) / tp;
    f->gemm += Gemm(x.hw, lp, T, up * fs, h) + Gemm(x.hw, lp, T, h, fs);
  }
  f->gemm += Gemm(x.hw, false, T, static_cast<double>(m.experts), h);  // router
}

void AttentionCore(const Ctx& x, Forward* f) {
  const ModelSpec& m = x.m;
  const double heads = static_cast<double>(m.heads) / x.tp;
  const double keys = AttendedKeys(m, x.seq, x.k.flash);
  const double flops = 2 * x.tokens * keys * heads * (QkDim(m) + VDim(m));
  const double d = QkDim(m);
  const double aligned = static_cast<int64_t>(d) % 8 == 0 ? 1 : kMisalignedSlowdown;
  if (x.k.flash) {
    f->attn += aligned * flops / (x.hw.peak16 * x.hw.attention);
    return;
  }
  // Materialized scores: batched QK^T (k = head dim) and AV GEMMs per head, plus the
  // softmax traffic.
  const double rows = x.seq / x.cp, batches = heads * x.tokens / rows;
  f->attn += aligned * (Gemm(x.hw, false, rows, x.seq, d, batches) + Gemm(x.hw, false, rows, VDim(m), x.seq, batches));
  f->attn += MemSeconds(x.hw, x.tokens * heads * x.seq * x.act * kScorePasses);
}

void Elementwise(const Ctx& x, bool moe, Forward* f) {
  const ModelSpec& m = x.m;
  const ElementwiseCoeffs& e = x.k.fused ? kFused : kEager;
  const double tp = x.tp, h = m.hidden;
  const double hidden_split = x.l.sp ? tp : 1;  // SP splits norms/residuals over TP
  const double proj = m.attention == AttentionKind::kMla ? m.heads * (2 * QkDim(m) + VDim(m))
                                                         : m.q_width() + 2.0 * m.kv_width();
  double inner = m.intermediate;
  if (moe) {
    inner = static_cast<double>(m.experts_per_token * m.expert_intermediate + m.shared_experts * m.shared_intermediate);
  }
  double elems = e.h * h / hidden_split + e.qkv * proj / tp + e.ffn * inner / tp;
  if (moe) elems += kPermutePasses * m.experts_per_token * h / tp;
  double bytes = x.tokens * elems * x.act;
  if (x.fp8) bytes += x.tokens * kFp8CastBytes * (2 * h + proj / tp + inner / tp);
  f->elem += MemSeconds(x.hw, bytes);
}

Forward LayerForward(const Ctx& x, bool moe) {
  Forward f;
  AttentionGemms(x, &f);
  MlpGemms(x, moe, &f);
  AttentionCore(x, &f);
  Elementwise(x, moe, &f);
  return f;
}

enum class Rc { kNone, kSelective, kFull };

// Seconds of one layer for one micro-batch: compute, recompute and each parallel dim's
// communication (exposed, and raw before overlap).
struct LayerCost {
  double compute = 0, recompute = 0;
  double tp = 0, tp_raw = 0, cp = 0, cp_raw = 0, ep = 0, ep_raw = 0;
  double total() const { return compute + recompute + tp + cp + ep; }
};

// One layer kind's forward pieces and one collective of each parallel dim, per micro-batch;
// the recompute choices below only recombine them.
struct LayerKind {
  Forward f;
  double tp_one = 0, cp_step = 0, ep_one = 0;
};

LayerKind MakeKind(const Ctx& x, bool moe) {
  const ModelSpec& m = x.m;
  LayerKind k;
  k.f = LayerForward(x, moe);
  if (x.tp > 1) {  // AR, or RS + AG under SP: the same ring cost
    k.tp_one = CollectiveSeconds(Collective::kAllReduce, x.tokens * m.hidden * x.act, x.tp, GroupTier(x.c, 1, x.tp));
  }
  if (x.cp > 1) {  // ring attention: one KV block exchanged per step
    const double kv = m.attention == AttentionKind::kMla
                          ? m.heads * (QkDim(m) + VDim(m)) / x.tp
                          : 2 * std::max(m.kv_width() / static_cast<double>(x.tp), static_cast<double>(m.head_dim));
    k.cp_step = CollectiveSeconds(Collective::kSendRecv, x.tokens * kv * x.act, 2, GroupTier(x.c, x.tp, x.cp));
  }
  if (moe && x.ep > 1) {  // token dispatch or combine
    const double bytes = x.tokens / x.tp * m.experts_per_token * m.hidden * x.act;
    k.ep_one = CollectiveSeconds(Collective::kAllToAll, bytes, x.ep, GroupTier(x.c, x.tp, x.ep));
  }
  return k;
}

LayerCost LayerTime(const Ctx& x, const LayerKind& k, Rc rc) {
  const Forward& f = k.f;
  const double fwd = f.gemm + f.attn + f.elem;
  const double attn_bwd = f.attn * (x.k.flash ? kFlashBackwardRatio : 2);
  LayerCost c;
  c.compute = fwd + f.gemm * (x.lora ? 1 : 2) + attn_bwd + 2 * f.elem;
  if (rc == Rc::kFull) c.recompute = fwd;
  if (rc == Rc::kSelective) {
    c.recompute = x.op_sac ? f.sac_gemm + f.elem : f.attn;
  }
  const int passes = rc == Rc::kFull ? 3 : 2;  // forward, backward, recomputed forward
  c.tp_raw = 2 * passes * k.tp_one;
  c.tp = c.tp_raw * (x.k.tp_overlap ? kTpOverlapExposed : 1);
  // Ring attention: cp-1 exchanges per forward, twice that backward (KV and dKV), under the
  // blockwise attention.
  const double fwd_comm = (x.cp - 1) * k.cp_step, bwd_comm = 2 * fwd_comm;
  c.cp_raw = fwd_comm * (passes - 1) + bwd_comm;
  if (x.cp > 1) c.cp = Overlapped(fwd_comm, f.attn) * (passes - 1) + Overlapped(bwd_comm, attn_bwd);
  c.ep_raw = 2 * passes * k.ep_one;  // dispatch + combine per pass
  c.ep = c.ep_raw * (x.k.ep_overlap ? kEpOverlapExposed : 1);
  return c;
}

// ---- Stages ----

void Add(LayerCost* sum, const LayerCost& c, double n) {
  sum->compute += n * c.compute;
  sum->recompute += n * c.recompute;
  sum->tp += n * c.tp;
  sum->tp_raw += n * c.tp_raw;
  sum->cp += n * c.cp;
  sum->cp_raw += n * c.cp_raw;
  sum->ep += n * c.ep;
  sum->ep_raw += n * c.ep_raw;
}

// Per-layer costs are the same for every layer of a kind, so each is computed once: `plain`
// under the layout's recompute choice (none or selective), `full` when fully recomputed.
struct LayerTable {
  LayerCost dense_plain, dense_full, moe_plain, moe_full;
  double dense_params = 0, moe_params = 0, moe_expert = 0;  // per layer, moe_params without experts
  double embedding_params = 0, head_params = 0, final_norm_params = 0;
  double head_seconds = 0;   // LM head + loss, one micro-batch, fwd + bwd
  double embed_seconds = 0;
  double mtp_seconds = 0;    // multi-token-prediction modules: one more layer and the head each
};

LayerTable BuildTable(const Ctx& x) {
  const ModelSpec& m = x.m;
  LayerTable t;
  const auto moe_it = std::find(m.moe_layer.begin(), m.moe_layer.end(), true);
  const bool has_moe = moe_it != m.moe_layer.end();
  const Rc plain = x.l.ac == Recompute::kSelective ? Rc::kSelective : Rc::kNone;
  const bool full = x.l.ac == Recompute::kFull;
  const LayerKind dense = MakeKind(x, false);
  t.dense_plain = LayerTime(x, dense, plain);
  if (full) t.dense_full = LayerTime(x, dense, Rc::kFull);
  t.dense_params = static_cast<double>(LayerParams(m, -1));
  if (has_moe) {
    const int first = static_cast<int>(moe_it - m.moe_layer.begin());
    const LayerKind moe = MakeKind(x, true);
    t.moe_plain = LayerTime(x, moe, plain);
    if (full) t.moe_full = LayerTime(x, moe, Rc::kFull);
    t.moe_expert = static_cast<double>(LayerExpertParams(m, first));
    t.moe_params = static_cast<double>(LayerParams(m, first)) - t.moe_expert;
  }
  const double ew = Width(m), v = static_cast<double>(m.vocab), h = static_cast<double>(m.hidden);
  t.embedding_params = v * ew + (ew != h ? 2 * ew * h : 0) +
                       (m.position == PositionKind::kLearned ? (m.max_positions + m.position_offset) * h : 0);
  t.head_params = v * ew;
  t.final_norm_params = FinalNormParams(m);
  const double T = x.tokens, vt = v / x.tp;
  const ElementwiseCoeffs& e = x.k.fused ? kFused : kEager;
  t.head_seconds = Gemm(x.hw, false, T, vt, ew) * (x.lora ? 2 : 3) + MemSeconds(x.hw, T * vt * e.loss) +
                   MemSeconds(x.hw, 3 * T * h * x.act * e.h);
  t.embed_seconds = MemSeconds(x.hw, 3 * T * h * x.act);
  t.mtp_seconds = m.mtp_layers * (t.head_seconds + (has_moe ? t.moe_plain : t.dense_plain).compute);
  return t;
}

// What one pipeline stage holds.
struct StageShape {
  int dense = 0, moe = 0;          // layers of each kind
  int dense_full = 0, moe_full = 0;  // of them, fully recomputed
  bool first = false, last = false;
};

// Layers on stage `s`: `stages` when given, else Megatron's balanced split with the
// remainder on the earlier stages (layout.h StageLayers). Full recomputation takes the
// stage's first ac_layers layers (Megatron --recompute-num-layers).
StageShape ShapeOf(const Ctx& x, int s) {
  const Layout& l = x.l;
  const ModelSpec& m = x.m;
  int first = 0, n = 0;
  if (static_cast<int>(l.stages.size()) == x.pp) {
    for (int i = 0; i < s; ++i) first += l.stages[static_cast<size_t>(i)];
    n = l.stages[static_cast<size_t>(s)];
  } else {
    const int base = static_cast<int>(m.layers / x.pp), rem = static_cast<int>(m.layers % x.pp);
    first = s * base + std::min(s, rem);
    n = base + (s < rem ? 1 : 0);
  }
  StageShape sh;
  if (x.moe_layers == m.layers) {
    sh.moe = n;
  } else if (x.moe_layers > 0) {  // mixed (DeepSeek's leading dense layers): count this stage's
    const int marked = static_cast<int>(m.moe_layer.size());
    for (int i = first; i < first + n && i < marked; ++i) sh.moe += m.moe_layer[static_cast<size_t>(i)] ? 1 : 0;
  }
  sh.dense = n - sh.moe;
  if (l.ac == Recompute::kFull) {
    const int rc = l.ac_layers > 0 ? std::min(n, l.ac_layers) : n;
    sh.dense_full = std::min(sh.dense, rc);
    sh.moe_full = rc - sh.dense_full;
  }
  sh.first = s == 0;
  sh.last = s == x.pp - 1;
  return sh;
}

// One micro-batch on one stage: compute + recompute + exposed comm (the search's hot loop).
double StageSeconds(const LayerTable& t, const StageShape& sh) {
  return (sh.dense - sh.dense_full) * t.dense_plain.total() + sh.dense_full * t.dense_full.total() +
         (sh.moe - sh.moe_full) * t.moe_plain.total() + sh.moe_full * t.moe_full.total() +
         (sh.first ? t.embed_seconds : 0) + (sh.last ? t.head_seconds + t.mtp_seconds : 0);
}

// Parameters on one stage before any sharding: (dense, routed experts).
std::pair<double, double> StageParams(const Ctx& x, const LayerTable& t, const StageShape& sh) {
  double dense = sh.dense * t.dense_params + sh.moe * t.moe_params;
  if (sh.first) dense += t.embedding_params;
  if (sh.last && (!x.m.tied_embeddings || x.pp > 1)) dense += t.head_params;
  if (sh.last) dense += t.final_norm_params;
  return {dense, sh.moe * t.moe_expert};
}

struct StageCost {
  LayerCost layers;       // summed over the stage's layers and extras
  double fwd_bwd = 0;     // compute + recompute + exposed comm of one micro-batch
  double dense_params = 0, expert_params = 0;  // on this stage, before any sharding
  double backward = 0, forward = 0;            // one micro-batch, for overlap windows
};

StageCost StageDetail(const Ctx& x, const LayerTable& t, const StageShape& sh) {
  StageCost sc;
  Add(&sc.layers, t.dense_plain, sh.dense - sh.dense_full);
  Add(&sc.layers, t.dense_full, sh.dense_full);
  Add(&sc.layers, t.moe_plain, sh.moe - sh.moe_full);
  Add(&sc.layers, t.moe_full, sh.moe_full);
  if (sh.first) sc.layers.compute += t.embed_seconds;
  if (sh.last) sc.layers.compute += t.head_seconds + t.mtp_seconds;
  std::tie(sc.dense_params, sc.expert_params) = StageParams(x, t, sh);
  sc.forward = sc.layers.compute / 3;  // forward is ~1/3 of fwd + bwd compute
  sc.backward = sc.layers.compute - sc.forward;
  sc.fwd_bwd = sc.layers.total();
  return sc;
}

// ---- Data-parallel traffic, optimizer, offload ----

double GradBytes(const Ctx& x) {
  // Megatron reduces fp32 main grads; torchtitan's FSDP2 default reduce_dtype is fp32;
  // DeepSpeed's BF16 optimizer accumulates and reduces fp32; FSDP mixed precision bf16.
  switch (x.l.framework) {
    case Framework::kMegatron:
    case Framework::kTorchtitan: return 4;
    case Framework::kDeepSpeed: return x.w.precision == Dtype::kFp16 ? 2 : 4;
    case Framework::kFsdp: return 2;
  }
  return 4;
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
    case Optimizer::kLion: return 22;
    case Optimizer::kAdafactor: return 16;
  }
  return 30;
}

// Trainable parameters of one layer under LoRA: r * (in + out) per targeted matrix.
double LoraLayerParams(const ModelSpec& m, const LoraSpec& lora) {
  const double h = m.hidden, q = m.q_width(), kv = m.kv_width(), f = m.intermediate;
  double p = 0;
  for (const std::string& t : lora.targets) {
    if (t == "q_proj") p += h + q;
    else if (t == "k_proj" || t == "v_proj") p += h + kv;
    else if (t == "o_proj") p += q + h;
    else if (t == "gate_proj" || t == "up_proj" || t == "down_proj") p += h + f;
  }
  return p * lora.rank;
}

struct DpCost {
  double exposed = 0, raw = 0;
};

DpCost DataParallel(const Ctx& x, const StageCost& sc, int64_t micro_batches, double stage_layers) {
  DpCost d;
  const int tp = x.tp, dpcp = x.dp * x.cp;
  const double param_bytes = 2;
  double dense = sc.dense_params / tp, expert = sc.expert_params / (x.ep * x.etp);
  double grads_dense = dense, grads_expert = expert;
  if (x.lora) {
    grads_dense = LoraLayerParams(x.m, x.w.lora) * stage_layers / tp;
    grads_expert = 0;
  }
  const double gb = GradBytes(x);
  const int edp = std::max(1, dpcp / x.ep);
  const Tier dense_tier = GroupTier(x.c, tp, dpcp), expert_tier = GroupTier(x.c, tp * x.ep, edp);
  auto hidden = [](double t, double window) { return std::max(kLastBucketShare * t, Overlapped(t, window)); };
  if (x.l.zero >= 3) {
    const int shard = AtLeast1(x.l.shard_degree()) * x.cp;
    const Tier tier = GroupTier(x.c, tp, shard);
    const double gather = CollectiveSeconds(Collective::kAllGather, (dense + expert) * param_bytes, shard, tier);
    const double reduce = CollectiveSeconds(Collective::kReduceScatter, (grads_dense + grads_expert) * gb, shard, tier);
    // Every micro-batch gathers its parameters for forward and, when resharded after
    // forward, again for backward. Gradients are reduce-scattered every backward, except
    // under PP, where torch.distributed.pipelining syncs only the last micro-batch's.
    // FSDP prefetches, so the traffic hides under compute except the first unit's gather.
    const double mb = static_cast<double>(micro_batches);
    const double per_mb = gather * (x.l.reshard_after_forward ? 2 : 1) + reduce * (x.pp > 1 ? 1 / mb : 1);
    const double first_unit = gather / std::max(1.0, stage_layers);
    d.raw = mb * per_mb;
    d.exposed = mb * (Overlapped(per_mb, sc.fwd_bwd) + first_unit);
    const int replicas = x.dp / AtLeast1(x.l.shard_degree());
    if (replicas > 1) {  // HSDP: all-reduce of the grad shard across replicas, once per step
      const Tier rt = GroupTier(x.c, tp * shard, replicas);
      const double ar = CollectiveSeconds(Collective::kAllReduce, (grads_dense + grads_expert) * gb / shard, replicas, rt);
      d.raw += ar;
      d.exposed += x.k.dp_overlap ? hidden(ar, sc.backward) : ar;
    }
    return d;
  }
  const Collective grad_op = x.l.zero == 0 ? Collective::kAllReduce : Collective::kReduceScatter;
  const double sync = CollectiveSeconds(grad_op, grads_dense * gb, dpcp, dense_tier) +
                      CollectiveSeconds(grad_op, grads_expert * gb, edp, expert_tier);
  d.raw = sync;
  d.exposed = x.k.dp_overlap ? hidden(sync, sc.backward) : sync;
  if (x.l.zero >= 1) {  // updated parameter shards gathered back
    const double ag = x.lora ? 0 : CollectiveSeconds(Collective::kAllGather, dense * param_bytes, dpcp, dense_tier) +
                                       CollectiveSeconds(Collective::kAllGather, expert * param_bytes, edp, expert_tier);
    d.raw += ag;
    d.exposed += x.k.param_overlap ? hidden(ag, sc.forward) : ag;
  }
  return d;
}

struct StepExtras {
  double optimizer = 0, offload = 0, offload_raw = 0;
};

StepExtras OptimizerAndOffload(const Ctx& x, const StageCost& sc, int64_t micro_batches, double stage_layers) {
  StepExtras e;
  double local = sc.dense_params / x.tp + sc.expert_params / (x.ep * x.etp);
  if (x.lora) local = LoraLayerParams(x.m, x.w.lora) * stage_layers / x.tp;
  if (x.l.zero >= 1) local /= (x.l.zero >= 3 ? AtLeast1(x.l.shard_degree()) * x.cp : x.dp * x.cp);
  const double gpn = AtLeast1(x.c.gpus_per_node);
  if (x.l.offload_optimizer == Offload::kNone) {
    e.optimizer = MemSeconds(x.hw, local * OptimizerBytesPerParam(x.w.optimizer));
  } else {
    e.optimizer = local * gpn / kCpuAdamParamsPerSecond;
    const double pcie = HostLinkBandwidth(x.c);
    e.offload = pcie > 0 ? local * (2 + 2) / pcie : 0;  // grads down, updated params up
    if (x.l.offload_optimizer == Offload::kNvme) {
      const double nvme = NvmeBandwidthPerGpu(x.c);
      e.offload += nvme > 0 ? local * kNvmeOptimizerBytes / nvme : 0;
    }
    e.offload_raw = e.offload;
  }
  if (x.l.offload_params != Offload::kNone) {
    // ZeRO-3 param offload: each rank fetches its shard from host/NVMe in forward and backward.
    const double shard = (sc.dense_params / x.tp + sc.expert_params / (x.ep * x.etp)) / AtLeast1(x.l.shard_degree());
    const double link = x.l.offload_params == Offload::kNvme ? NvmeBandwidthPerGpu(x.c) : HostLinkBandwidth(x.c);
    const double per_mb = link > 0 ? 2 * shard * 2 / link : 0;
    e.offload_raw += micro_batches * per_mb;
    e.offload += micro_batches * Overlapped(per_mb, sc.fwd_bwd);
  }
  return e;
}

void AddTerm(TimeEstimate* t, const char* name, double seconds, double raw) {
  TimeTerm term;
  term.name = name;
  term.seconds = seconds;
  term.raw_seconds = raw;
  t->terms.push_back(std::move(term));
}

// ---- Inference: prefill once, then one decode step per generated token ----

struct Replica {
  double weights = 0, experts = 0;  // bytes per GPU (routed experts included in weights)
  double kv_per_token = 0;          // bytes per GPU
  double layers = 0;                // per stage
};

Replica ReplicaBytes(const ModelSpec& m, Dtype weights, Dtype kv, int tp, int pp) {
  Replica r;
  const double n_moe = static_cast<double>(m.is_moe() ? m.moe_layer_count() : 0);
  double expert = 0, moe_rest = 0;
  if (n_moe > 0) {
    const int first = static_cast<int>(std::find(m.moe_layer.begin(), m.moe_layer.end(), true) - m.moe_layer.begin());
    expert = static_cast<double>(LayerExpertParams(m, first));
    moe_rest = static_cast<double>(LayerParams(m, first)) - expert;
  }
  const double layer_params = (m.layers - n_moe) * LayerParams(m, -1) + n_moe * moe_rest + FinalNormParams(m);
  const double outside = static_cast<double>(m.vocab) * Width(m) * (m.tied_embeddings ? 1 : 2);
  const double wb = QuantizedBytesPerParam(weights), split = static_cast<double>(tp) * pp;
  // Quantized checkpoints keep the embedding and LM head in 16-bit (vLLM, TensorRT-LLM).
  r.experts = n_moe * expert * wb / split;
  r.weights = (layer_params * wb + outside * 2) / split + r.experts;
  r.layers = static_cast<double>(m.layers) / pp;
  const double per_layer = m.attention == AttentionKind::kMla
                               ? static_cast<double>(m.kv_lora_rank + m.qk_rope_head_dim)
                               : 2 * std::max(static_cast<double>(m.kv_width()) / tp, static_cast<double>(m.head_dim));
  r.kv_per_token = r.layers * per_layer * DtypeBytes(kv);
  return r;
}

TimeEstimate EstimateInference(const ModelSpec& m, const Workload& w, const Layout& l, const ClusterSpec& c,
                               const TimeOptions& opt) {
  TimeEstimate out;
  const InferenceSpec& in = w.inference;
  const Dtype wt = (l.fixed & kKeyWeights) ? l.weights : in.weights;
  const Dtype kv = (l.fixed & kKeyKvCache) ? l.kv_cache : in.kv_cache;
  const int tp = AtLeast1(l.tp), pp = AtLeast1(l.pp);
  const double batch = static_cast<double>(l.batch > 0 ? l.batch : std::max<int64_t>(1, in.batch));
  const double prompt = static_cast<double>(std::max<int64_t>(1, in.prompt_len));
  const double gen = static_cast<double>(std::max<int64_t>(1, in.gen_len));
  if (m.layers <= 0 || m.hidden <= 0) return out;
  // Weight-only int8/int4 dequantize into 16-bit GEMMs; fp8 weights run fp8 GEMMs.
  const Hw hw = HardwareFor(c.gpu, wt == Dtype::kFp8 ? Dtype::kFp8 : w.precision);
  if (hw.peak <= 0) return out;
  const Replica r = ReplicaBytes(m, wt, kv, tp, pp);
  const double n_active = MatmulParamsPerToken(m) / (static_cast<double>(tp) * pp);
  const double heads = static_cast<double>(m.heads) / tp, dims = QkDim(m) + VDim(m);
  const Tier tier = GroupTier(c, 1, tp);
  const double link = l.offload_params == Offload::kNone ? 0
                      : l.offload_params == Offload::kNvme ? NvmeBandwidthPerGpu(c) : HostLinkBandwidth(c);
  const double stream = link > 0 ? r.weights / link : 0;  // weights fetched every forward
  auto tp_comm = [&](double tokens) {
    return 2 * r.layers * CollectiveSeconds(Collective::kAllReduce, tokens * m.hidden * 2, tp, tier);
  };
  // Decode at the mean context: memory-bound on weights (only the experts the batch routes
  // to) and KV, or compute-bound at large batch.
  const double ctx = prompt + gen / 2;
  const double touched =
      m.is_moe() ? 1 - std::pow(1 - static_cast<double>(m.experts_per_token) / m.experts, batch) : 1;
  const double mem = MemSeconds(hw, r.weights - r.experts * (1 - touched) + batch * ctx * r.kv_per_token);
  const double compute = 2 * n_active * batch / (hw.peak * hw.ceiling) +
                         2 * batch * ctx * heads * dims * r.layers / (hw.peak16 * hw.attention);
  const double stage = std::max(std::max(mem, compute), stream) + tp_comm(batch);
  const double decode = pp * stage;
  // Prefill: compute-bound GEMMs over batch * prompt tokens, causal attention.
  const double tokens = batch * prompt;
  const double prefill_stage = std::max(2 * n_active * tokens / (hw.peak * hw.ceiling) +
                                            tokens * prompt * heads * dims * r.layers / (hw.peak16 * hw.attention),
                                        stream) + tp_comm(tokens);
  const double prefill = pp * prefill_stage;
  const double total = prefill + (gen - 1) * decode;
  out.step_seconds = decode;
  out.tokens_per_second_per_gpu = batch * gen / (total * tp * pp);
  const double replicas = AtLeast1(l.dp);
  out.model_flops_per_step = ModelFlopsPerToken(m, w) * batch * replicas;
  out.mfu = ModelFlopsPerToken(m, w) * out.tokens_per_second_per_gpu / hw.peak;
  if (opt.with_terms) {
    out.terms.reserve(5);
    const double bound = std::max(mem, compute);
    AddTerm(&out, "decode_memory", pp * (mem >= compute && mem >= stream ? mem : 0), pp * mem);
    AddTerm(&out, "decode_compute", pp * (compute > mem && compute >= stream ? compute : 0), pp * compute);
    AddTerm(&out, "offload", pp * std::max(0.0, stream - bound), pp * stream);
    AddTerm(&out, "tp_comm", pp * tp_comm(batch), pp * tp_comm(batch));
    AddTerm(&out, "prefill", 0, prefill);  // once per request batch, not per decode step
  }
  return out;
}

}  // namespace

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

double PipelineBubbleFraction(int stages, int virtual_stages, int64_t micro_batches) {
  if (stages <= 1 || micro_batches <= 0) return 0;
  return (stages - 1.0) / (AtLeast1(virtual_stages) * static_cast<double>(micro_batches));
}

double GemmEfficiency(const GpuSpec& gpu, Dtype precision, double m, double n, double k) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  const Hw hw = HardwareFor(gpu, precision);
  return Efficiency(hw, hw.ceiling, m, n, k, 1);
}

double GemmSeconds(const GpuSpec& gpu, Dtype precision, double m, double n, double k) {
  return Gemm(HardwareFor(gpu, precision), true, m, n, k);
}

TimeEstimate EstimateTime(const ModelSpec& m, const Workload& w, const Layout& l, const ClusterSpec& c) {
  return EstimateTime(m, w, l, c, TimeOptions{});
}

TimeEstimate EstimateTime(const ModelSpec& m, const Workload& w, const Layout& l, const ClusterSpec& c,
                          const TimeOptions& opt) {
  if (!w.training()) return EstimateInference(m, w, l, c, opt);
  TimeEstimate out;
  if (m.layers <= 0 || m.hidden <= 0 || w.seq_len <= 0) return out;
  const Dtype prec = w.precision;
  Ctx x{m, w, l, c, HardwareFor(c.gpu, prec), ResolveSwitches(l, opt),
        AtLeast1(l.tp), AtLeast1(l.cp), AtLeast1(l.pp), AtLeast1(l.dp), AtLeast1(l.ep), AtLeast1(l.etp),
        AtLeast1(l.vpp), static_cast<double>(w.seq_len), 0, prec == Dtype::kFp32 ? 4.0 : 2.0,
        w.lora_like(), prec == Dtype::kFp8,
        l.framework == Framework::kTorchtitan && l.ac == Recompute::kSelective};
  if (x.hw.peak <= 0) return out;  // a GPU without a datasheet peak: nothing to estimate
  x.tokens = static_cast<double>(AtLeast1(l.mbs)) * w.seq_len / x.cp;
  x.moe_layers = m.is_moe() ? m.moe_layer_count() : 0;
  const int64_t micro = AtLeast1(l.grad_accum);

  const LayerTable table = BuildTable(x);
  int slowest_stage = 0, heaviest_stage = 0;
  double sum_stage = 0, slowest_seconds = -1, heaviest_params = -1;
  for (int s = 0; s < x.pp; ++s) {
    const StageShape sh = ShapeOf(x, s);
    const double seconds = StageSeconds(table, sh);
    const auto [dense, expert] = StageParams(x, table, sh);
    sum_stage += seconds;
    if (seconds > slowest_seconds) slowest_seconds = seconds, slowest_stage = s;
    if (dense + expert > heaviest_params) heaviest_params = dense + expert, heaviest_stage = s;
  }
  const StageCost slowest = StageDetail(x, table, ShapeOf(x, slowest_stage));
  const StageCost heaviest = StageDetail(x, table, ShapeOf(x, heaviest_stage));
  const double stage_layers = static_cast<double>(m.layers) / x.pp;
  const double busy = micro * slowest.fwd_bwd;
  const double bubble = (sum_stage - slowest.fwd_bwd) / x.vpp;

  double p2p = 0, p2p_raw = 0;
  if (x.pp > 1) {
    const double bytes = x.tokens * m.hidden * x.act / (l.sp ? x.tp : 1);
    const Tier tier = GroupTier(c, x.tp * x.cp * x.dp, 2);
    const double one = CollectiveSeconds(Collective::kSendRecv, bytes, 2, tier);
    p2p_raw = 2.0 * (micro + x.pp - 1) * x.vpp * one;
    p2p = x.vpp > 1 ? p2p_raw * kP2pOverlappedExposed : p2p_raw;
    if (l.framework == Framework::kDeepSpeed) p2p_raw *= kDeepSpeedP2pFactor, p2p *= kDeepSpeedP2pFactor;
  }
  const DpCost dpc = DataParallel(x, heaviest, micro, stage_layers);
  const StepExtras ex = OptimizerAndOffload(x, heaviest, micro, stage_layers);

  out.step_seconds = busy + bubble + p2p + dpc.exposed + ex.optimizer + ex.offload;
  const double tokens = static_cast<double>(x.dp) * micro * AtLeast1(l.mbs) * w.seq_len;
  const double world = static_cast<double>(x.dp) * x.tp * x.pp * x.cp;
  out.tokens_per_second_per_gpu = tokens / (out.step_seconds * world);
  out.model_flops_per_step = ModelFlops(m, w, x.moe_layers) * tokens;
  out.mfu = out.model_flops_per_step / (out.step_seconds * world * PeakFor(c.gpu, prec));
  if (opt.with_terms) {
    const LayerCost& lc = slowest.layers;
    out.terms.reserve(10);
    AddTerm(&out, "compute", micro * lc.compute, micro * lc.compute);
    AddTerm(&out, "recompute", micro * lc.recompute, micro * lc.recompute);
    AddTerm(&out, "tp_comm", micro * lc.tp, micro * lc.tp_raw);
    AddTerm(&out, "cp_comm", micro * lc.cp, micro * lc.cp_raw);
    AddTerm(&out, "ep_comm", micro * lc.ep, micro * lc.ep_raw);
    AddTerm(&out, "pp_bubble", bubble, bubble);
    AddTerm(&out, "pp_p2p", p2p, p2p_raw);
    AddTerm(&out, "dp_comm", dpc.exposed, dpc.raw);
    AddTerm(&out, "optimizer", ex.optimizer, ex.optimizer);
    AddTerm(&out, "offload", ex.offload, ex.offload_raw);
  }
  return out;
}

}  // namespace shardplan
