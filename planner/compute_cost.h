// Compute cost of the model on one GPU: the hardware's ceilings, GEMM efficiency, fused
// attention, elementwise memory traffic, and the FLOP counts behind MFU. The training time
// model (time_model.cc) and the inference one (inference_time.cc) build on these; the
// communication they add lives in collectives.h. Pure, allocation-free: the search calls
// these millions of times.
#pragma once

#include <cstdint>

#include "planner/dtype.h"
#include "planner/model_spec.h"
#include "planner/workload.h"
#include "topology/cluster_spec.h"

namespace shardplan {

// What one GPU can do in one precision.
struct Hw {
  double sms = 1;        // streaming multiprocessors
  double attention = 0;  // fused-attention efficiency at long sequences
  double peak = 0;       // FLOP/s of the matmul precision (fp8 or 16-bit)
  double peak16 = 0;     // FLOP/s of what fp8 leaves unquantized (attention, LM head):
                         // 16-bit, or fp32 when the run trains in fp32
  double peak8 = 0;      // FP8 FLOP/s where the GPU has them (else peak16): kernels that are
                         // always FP8 whatever the run's precision (DSA's indexer)
  double bw = 0;         // HBM bytes/s
  double ceiling = 0;    // GEMM efficiency ceiling in the matmul precision
  double ceiling16 = 0;  // same for peak16
  double operand = 2;    // bytes per GEMM operand element
  double operand16 = 2;  // same for peak16
};

Hw HardwareFor(const GpuSpec& g, Dtype p, AttentionImpl attention = AttentionImpl::kUnstated);

// Datasheet FLOP/s of the GPU's matmuls in `p`.
double PeakFor(const GpuSpec& g, Dtype p);

// Seconds for `groups` GEMMs of (m x k) by (k x n): compute at the modelled efficiency or
// moving the operands, whichever is longer. `low_precision` runs in hw.peak (fp8 when the
// workload is fp8), else in 16-bit.
double Gemm(const Hw& hw, bool low_precision, double m, double n, double k, double groups = 1);

// Seconds for one grouped GEMM over `groups` routed experts of `rows` rows each (ragged
// offsets, one kernel, as torch._grouped_mm runs them): Gemm's price, slowed where each group
// has few rows (kGroupRowsHalf in compute_cost.cc).
double ExpertGemm(const Hw& hw, bool low_precision, double rows, double n, double k, double groups);

// Seconds to stream `bytes` through HBM at elementwise-kernel speed.
double MemSeconds(const Hw& hw, double bytes);

// ---- Model geometry and FLOP counts ----

// Width of the embedding (OPT's word_embed_proj_dim, else hidden).
double Width(const ModelSpec& m);
double FinalNormParams(const ModelSpec& m);
// Attention head dims: (query-key, value) per head.
double QkDim(const ModelSpec& m);
double VDim(const ModelSpec& m);
// Keys each query attends to, averaged over layers; causal masking halves it when the
// kernel skips masked blocks (flash), sliding-window layers cap it at the window.
double AttendedKeys(const ModelSpec& m, double s, bool causal_skip);
// FLOPs of one Mamba-2 block's SSD scan per token, forward (its projections are matmul weights).
double LinearMixerFlopsPerToken(const ModelSpec& m);
// Weight elements one token multiplies (MatmulParamsPerToken), with the MoE layer count given.
double MatmulParams(const ModelSpec& m, int64_t moe_layer_count);
// `weight_factor` FLOPs per matmul weight (2 forward, 4 with data gradients, 6 with weight
// gradients too) and `passes` attention passes (forward = 1, training = 3) at `context` keys.
double FlopsPerToken(const ModelSpec& m, int64_t moe_layers, double context, double weight_factor, double passes);
double ModelFlops(const ModelSpec& m, const Workload& w, int64_t moe_layers);

// Trainable parameters of one layer under LoRA, the mean over the layers (planner/lora.h).
double LoraLayerParams(const ModelSpec& m, const LoraSpec& lora);

// HBM bytes one fused optimizer step reads and writes per parameter.
double OptimizerBytesPerParam(Optimizer o);
// What torch's foreach Adam/AdamW reads and writes past one fused step, per parameter of
// `trained` bytes (4 fp32, 2 pure bf16); 0 for other optimizers.
double ForeachStepExtraBytes(Optimizer o, double trained);
// Muon's Newton-Schulz iterations, FLOPs per matrix parameter averaged over the model.
double MuonFlopsPerParam(const ModelSpec& m);

// ---- One layer, one micro-batch, one GPU ----

// The layer as one GPU runs it: its share of heads and experts, the tokens of one
// micro-batch (after CP), and the kernels the framework uses.
struct LayerShape {
  const ModelSpec& m;
  Hw hw;
  int tp = 1, cp = 1, ep = 1, etp = 1;
  double seq = 0;     // s
  double tokens = 0;  // T: tokens of one micro-batch in one GPU's layer (mbs * s / cp)
  double act = 2;     // bytes per activation element
  bool lora = false, fp8 = false;
  bool op_sac = false;  // torchtitan's per-op selective recompute
  bool sp = false;      // sequence parallel: norms and residuals split over TP
  bool fused = false;   // fused elementwise kernels
  bool flash = true;    // fused attention
  bool fp4 = false;     // the low-precision GEMMs (`fp8`) are NVFP4
  bool torch_ring = false;  // context parallelism is PyTorch's ring attention (torchtitan)
  bool rowwise = false;     // the float8 linears are torchao's rowwise recipe (torchtitan)
  bool te_norms = false;    // norms and rotary embeddings run as Transformer Engine's fused
                            // kernels, the rest eager (NeMo AutoModel's model code)
  MoeRouting routing = MoeRouting::kLearned;  // how the router assigns experts (workload.h)
};

// The busiest expert-parallel rank's share of one micro-batch's routed (token, expert) pairs
// over the balanced share, as the layer's router makes them (defaults::MoeImbalance).
double MoeImbalance(const LayerShape& x);

// Forward seconds of one layer, by kind of work, and the attention backward.
struct Forward {
  double gemm = 0, attn = 0, elem = 0;
  double sac_gemm = 0;  // GEMMs torchtitan's per-op SAC recomputes (every second mm)
  double attn_bwd = 0;  // backward of the attention core
  double elem_bwd = 0;  // elementwise passes only backward runs
};

// Layer `layer` of the model: its attention or linear mixer and its MLP or MoE block, as
// ModelSpec says (a transformer's layer -1 is a dense one).
Forward LayerForward(const LayerShape& x, int64_t layer);

// LM head + loss of one micro-batch, forward and backward; the embedding lookup likewise.
double HeadSeconds(const LayerShape& x);
double EmbedSeconds(const LayerShape& x);

}  // namespace shardplan
