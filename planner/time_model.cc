// The training time model: assembles per-layer compute (compute_cost.cc) and per-collective
// communication (collectives.cc) into pipeline stages, then adds the bubble, pipeline p2p,
// data-parallel traffic, the optimizer step and offload. Inference is inference_time.cc.
#include "planner/time_model.h"

#include <algorithm>
#include <numeric>
#include <iterator>
#include <cmath>
#include <optional>
#include <tuple>
#include <utility>

#include "planner/collectives.h"
#include "planner/compute_cost.h"
#include "planner/deepspeed_buckets.h"
#include "planner/framework_defaults.h"
#include "planner/lora.h"
#include "planner/memory_terms.h"
#include "planner/quantization.h"
#include "planner/recipe.h"

namespace shardplan {
namespace {

// ---- Constants. Each names its source; "fit" means tuned on bench/data/time_cases.yaml. ----

// Overlapped communication still slows the compute it hides under (NCCL kernels take SMs
// and memory bandwidth): Galvatron's overlap coefficient, 1.1-1.3 (peers.md).
constexpr double kOverlapSlowdown = 1.2;
// Share of a collective left on the critical path when it is overlapped: TE userbuffers
// hide most TP traffic; the last gradient bucket can never hide (fits).
constexpr double kTpOverlapExposed = 0.3;
// torchtitan's async TP (SymmetricMemory micro-pipelining: each all-gather-matmul and
// matmul-reduce-scatter runs as tp chunks, so the first transfer and the last stay exposed
// and the matmuls run as smaller GEMMs) hides less. Its own A/B tables, same runs with and
// without it, save 46% (bf16) and 56% (float8) of the TP traffic priced here for Llama 3.1
// 70B at FSDP 32 x TP 8, 50% and 42% for 8B at FSDP 8 x TP 8
// (benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md), 21% and 25% for the float8 70B and
// 405B runs of llama3_h100_202412_torchtitan.md: 0.6 left exposed (fit).
constexpr double kAsyncTpExposed = 0.6;
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
// torch.compile is on (the workload's `compile`); TP overlap is the layout's tp_overlap
// (ResolveLayout turns it on for NeMo / Megatron-Bridge recipes); EP overlap is the layout's
// ep_overlap (Megatron's overlap_moe_expert_parallel_comm), off unless stated.
Knobs ResolveSwitches(const ModelSpec& m, const Workload& w, const Layout& l, const TimeOptions& o) {
  const bool megatron = l.framework == Framework::kMegatron;
  // Stage 0 all-reduces after backward and the pipeline engine after the last micro-batch,
  // whatever overlap_comm says.
  const bool ds_no_overlap =
      l.framework == Framework::kDeepSpeed && (l.zero == 0 || l.pp > 1 || !DeepSpeedOverlapComm(w, l));
  return {Pick(o.dp_overlap, !ds_no_overlap), Pick(o.param_gather_overlap, megatron),
          Pick(o.tp_overlap, l.tp_overlap),    Pick(o.ep_overlap, l.ep_overlap),
          Pick(o.fused_kernels, megatron || w.compile == Setting::kOn), Pick(o.flash_attention, FlashAttention(m, w, l))};
}

// The training step as one GPU runs it: the per-layer shape (compute_cost.h) plus the
// layout's other dimensions and switches.
struct Ctx : LayerShape {
  const Workload& w;
  const Layout& l;
  const ClusterSpec& c;
  Knobs k;
  int pp = 1, dp = 1, vpp = 1;
  int64_t moe_layers = 0;  // layers whose MLP is an MoE block
  double lora_layer_params = 0;  // LoRA adapters per layer (the mean over the layers)
  AdapterWidths adapted{};       // the adapted Linears' widths per layer (AdapterPasses)
  AdapterWidths linears{};       // every Linear's, where QLoRA casts around each (kbit)
  bool adapter_passes = false;   // the adapters run as eager modules beside each Linear
  bool peft_4bit_clone = false;  // peft's LoRA Linear4bit clones its base's output
  bool kbit = false;             // TrainingRecipe::kbit_fp32_stream: an fp32 residual stream
  std::vector<int> stage_layers{};  // layers per stage where not the balanced split (StageLayers)
  double foreach_step_bytes = 0;  // torch's foreach AdamW past a fused step, per local param
  double paged_spill_bytes = 0;   // paged optimizer states moved over PCIe per step (PagedSpillBytes)
};

int AtLeast1(int v) { return v > 0 ? v : 1; }

enum class Rc { kNone, kSelective, kFull };

// Seconds of one layer for one micro-batch: compute, recompute and each parallel dim's
// communication (exposed, and raw before overlap).
struct LayerCost {
  double compute = 0, recompute = 0;
  double wgrad = 0;  // the weight-gradient GEMMs inside `compute` (a zero-bubble schedule's W)
  double tp = 0, tp_raw = 0, cp = 0, cp_raw = 0, ep = 0, ep_raw = 0;
  double total() const { return compute + recompute + tp + cp + ep; }
};

// One layer kind's forward pieces and one collective of each parallel dim, per micro-batch;
// the recompute choices below only recombine them.
struct LayerKind {
  Forward f;
  double tp_one = 0, cp_step = 0, ep_one = 0;
  double tp_gather = 0;       // the all-gather half of tp_one (SP gathers the sub-block's input)
  double tp_collectives = 2;  // per pass: one after each sub-block (ModelSpec::sub_blocks)
  double cp_a2a = 0;          // a linear mixer under CP: all-to-alls there and back, per pass
  double host_fwd = 0, host_bwd = 0;  // Megatron's MoE layer: the GPU waiting on the host, per pass
  double fsdp_copy_out = 0;   // FSDP2: one gather's copy-out of the layer's parameters
  double fsdp_copy_in = 0;    // FSDP2: one reduce-scatter's copy-in of the layer's gradients
};

// FSDP2 (fully_shard) all-gathers a unit's parameters into one flat buffer and then copies
// them out to each parameter's own storage (split_with_sizes_copy in
// foreach_all_gather_copy_out, run on the compute stream after the all-gather's event:
// torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py). Gradients go the other way:
// foreach_reduce_scatter_copy_in concatenates the unsharded gradients, cast to the reduce
// dtype, into the reduce-scatter input on the reduce-scatter stream. FSDP1's flat parameter
// is that buffer itself, with the parameters as views, so it has neither copy.
bool Fsdp2Copies(const Layout& l) {
  if (l.zero < 3 || l.shard_degree() * AtLeast1(l.cp) <= 1) return false;
  if (l.framework == Framework::kTorchtitan) return true;
  return l.framework == Framework::kFsdp &&
         (l.stack == Stack::kNative || l.stack == Stack::kTorchtune || l.stack == Stack::kAutomodel);
}

double GradBytes(const Ctx& x);

// Expected number of `places` (GPUs or NVLink domains, each holding an equal share of the
// routed experts) that one token's top-k experts fall in, the experts drawn at random without
// repeats. Under group-limited routing (DeepSeek-V3: 8 groups, 4 open to a token) the k
// experts lie inside the token's open groups: a place holding whole groups is hit when one of
// its groups is open, a place inside a group only when that group is.
double DistinctPlaces(const ModelSpec& m, double places) {
  const double experts = static_cast<double>(m.experts), k = static_cast<double>(m.experts_per_token);
  if (places <= 1 || experts <= 0) return std::min(1.0, places);
  // Probability that none of `draws` picks among `pool` lands in a place holding `held`.
  auto miss = [](double pool, double held, double draws) {
    double p = 1;
    for (int i = 0; i < static_cast<int>(draws) && p > 0; ++i) p *= std::max(0.0, (pool - held - i) / (pool - i));
    return p;
  };
  const double groups = static_cast<double>(m.expert_groups), open = static_cast<double>(m.groups_per_token);
  if (groups > 1 && open > 0) {
    if (places <= groups) return places * (1 - miss(groups, groups / places, open));
    const double candidates = open * places / groups, pool = open * experts / groups;  // the open groups' places
    return candidates * (1 - miss(pool, experts / places, k));
  }
  return places * (1 - miss(experts, experts / places, k));
}

// The places (ranks or NVLink domains, each holding E / places consecutive experts) one
// token's k consecutive experts fall in, as AutoModel's FakeBalancedGate picks them: token t
// takes experts t*k .. t*k+k-1 (mod E), so over a cycle of E / gcd(E, k) tokens the first
// expert runs through every multiple of gcd(E, k), and the k experts cover the places they
// cross.
double ConsecutivePlaces(const ModelSpec& m, double places) {
  const int64_t experts = m.experts, k = m.experts_per_token;
  if (places <= 1 || experts <= 0 || k <= 0) return std::min(1.0, places);
  const int64_t per_place = std::max<int64_t>(1, experts / static_cast<int64_t>(places));
  const int64_t step = std::gcd(experts, k), cycle = experts / step;
  double total = 0;
  for (int64_t i = 0; i < cycle; ++i) {
    const int64_t offset = (i * step) % per_place;
    total += static_cast<double>(std::min<int64_t>((offset + k - 1) / per_place + 1, static_cast<int64_t>(places)));
  }
  return total / static_cast<double>(cycle);
}

// One dispatch (or combine) of a micro-batch's tokens for the busiest rank: its share over
// the balanced one as the router makes it (defaults::MoeImbalance).
double TokenExchange(const Ctx& x) {
  return MoeTokenExchangeSeconds(x.m, x.l, x.c, MoeImbalance(x) * x.tokens / x.tp, x.act, x.routing == MoeRouting::kDealt);
}

// Layer `layer`'s kind (-1: a transformer's dense layer).
LayerKind MakeKind(const Ctx& x, int64_t layer) {
  const ModelSpec& m = x.m;
  LayerKind k;
  k.f = LayerForward(x, layer);
  k.tp_collectives = m.sub_blocks(layer);
  if (x.tp > 1) {  // AR, or RS + AG under SP: the same ring cost
    const Tier tier = GroupTier(x.c, SpanOf(x.l, GroupKind::kTp));
    const double bytes = x.tokens * m.hidden * x.act;
    k.tp_one = CollectiveSeconds(Collective::kAllReduce, bytes, x.tp, tier);
    k.tp_gather = k.tp_one / 2;
    if (x.fp8 && !x.fp4 && x.l.sp && TorchtitanItself(x.l) && ResolvedFp8Recipe(x.w, x.l) == Fp8Recipe::kTensorwise) {
      // torchao's float8 tensor parallelism (Float8ColwiseParallel, Float8RowwiseParallel,
      // PrepareFloat8ModuleInput), which torchtitan applies with tensorwise float8 linears
      // (its default recipe; rowwise runs plain TP), casts a sub-block's input to float8
      // before the sequence-parallel all-gather, and the gradient arriving at the
      // row-parallel output before the backward's all-gather; the reduce-scatters stay in
      // 16 bits (torchao/float8/float8_tensor_parallel.py).
      k.tp_gather = CollectiveSeconds(Collective::kAllGather, bytes / x.act, x.tp, tier);
      k.tp_one = CollectiveSeconds(Collective::kReduceScatter, bytes, x.tp, tier) + k.tp_gather;
    }
  }
  if (x.cp > 1 && m.has_attention(layer)) {  // ring attention: one KV block per step to the next rank, at the pace of the slowest hop
    const double kv = m.attention == AttentionKind::kMla
                          ? m.heads * (QkDim(m) + VDim(m)) / x.tp
                          : 2 * std::max(m.kv_width() / static_cast<double>(x.tp), static_cast<double>(m.head_dim));
    k.cp_step = CollectiveSeconds(Collective::kSendRecv, x.tokens * kv * x.act, 2, NeighborTier(x.c, SpanOf(x.l, GroupKind::kCp)));
  }
  if (x.cp > 1 && m.has_linear_mixer(layer)) {
    // Megatron-core's Mamba context parallelism (ssm/mamba_context_parallel.py) trades the
    // sequence shard for a head shard around the scan: an all-to-all of in_proj's output to
    // head-sharded full sequences, and one of y back.
    const double width = static_cast<double>(m.linear.cp_exchange()) / x.tp;
    k.cp_a2a = CollectiveSeconds(Collective::kAllToAll, x.tokens * width * x.act, x.cp, GroupTier(x.c, SpanOf(x.l, GroupKind::kCp)));
  }
  if (m.has_ffn(layer) && m.is_moe_layer(layer) && x.ep > 1) k.ep_one = TokenExchange(x);
  if (m.has_ffn(layer) && m.is_moe_layer(layer) && x.l.framework == Framework::kMegatron &&
      !MegatronBridgeSyncFreeMoe(m, x.w, x.l, x.c.gpu)) {
    // Megatron-core's dropless MoE layer hands the per-expert token counts to the host before
    // its all-to-all and grouped GEMM (token_dispatcher.py: d2h_event.synchronize(); TE's
    // GroupedLinear takes m_splits as a host list), so the GPU drains its queue there and then
    // runs the expert segment as fast as the host issues it. The grouped GEMM is one cuBLAS
    // call per local expert (TE's multi_stream_cublas_gemm): fc1 and fc2 forward, their dgrad
    // and wgrad backward, kMoeHostGemmSeconds each; the router, permutation and dispatcher
    // around them take kMoeHostLayerSeconds, half each way.
    const double local = static_cast<double>(m.experts) / x.ep;
    k.host_fwd = defaults::kMoeHostLayerSeconds / 2 + 2 * local * defaults::kMoeHostGemmSeconds;
    k.host_bwd = defaults::kMoeHostLayerSeconds / 2 + 4 * local * defaults::kMoeHostGemmSeconds;
  }
  if (Fsdp2Copies(x.l)) {
    const double experts = layer < 0 ? 0 : static_cast<double>(LayerExpertParams(m, layer));
    const double dense = static_cast<double>(LayerParams(m, layer)) - experts;
    const double local = dense / x.tp + experts / (x.ep * x.etp);
    k.fsdp_copy_out = MemSeconds(x.hw, local * 2 * x.act);  // read the flat output, write each parameter
    if (!x.lora) k.fsdp_copy_in = MemSeconds(x.hw, local * (x.act + GradBytes(x)));
  }
  return k;
}

// QLoRA: bitsandbytes dequantizes every frozen NF4 weight to bf16 before each matmul that
// uses it (forward, the input-gradient GEMM in backward, and a recomputed forward): read
// the 4-bit blocks and scales, write the bf16 copy, per layer (memory-model.md 5.1 bytes).
double DequantSeconds(const Ctx& x) {
  if (x.w.task != Task::kQlora || x.m.layers <= 0) return 0;
  const ModelSpec& m = x.m;
  const double head = static_cast<double>(m.hidden) * static_cast<double>(m.vocab);
  const double per_layer = (MatmulParamsPerToken(m) - head) / static_cast<double>(m.layers) / x.tp;
  return MemSeconds(x.hw, per_layer * (Nf4BaseBytes(x.w) + 2));
}

// LoRA's adapters as peft and torchtune run them, eager modules beside each adapted Linear:
// lora_A reads the Linear's input, lora_B writes an output of the Linear's width, which is
// scaled (read, write) and added to the base's output (two reads, a write): per adapted
// Linear, `in` + 6 `out` elements forward. Backward reads the output's gradient through the
// scale and both small GEMMs (4 `out`), and lora_A's input gradient is written and added to
// the input's (4 `in`), whose activation its weight gradient reads again (1 `in`). Dropout,
// where set, writes the dropped input and its mask and reads them back. peft's LoRA
// Linear4bit clones the base's output first (bnb.py: "defensively clone"), one more read
// and write in the base's output dtype. With peft's kbit preparation on an fp32 residual
// stream (TrainingRecipe::kbit_fp32_stream) that output is fp32: bitsandbytes casts each
// Linear's fp32 input to bf16 and returns its output in the input's dtype, autocast casts
// the input again for lora_A, and the residual stream's own passes move 4 B an element where
// they moved 2; backward casts the same gradients back. Gemma's and OLMo 2's norms on bf16
// embeddings keep the stream bf16: none of these casts. The small GEMMs' FLOPs are left out:
// r is 8-64 against widths of thousands. Without these passes the eager LoRA steps ran 10-43%
// faster than measured on one H100 (bench/data/calibration, the hf and torchtune LoRA and
// QLoRA records).
struct AdapterCost {
  double fwd = 0, bwd = 0;
};
AdapterCost AdapterPasses(const Ctx& x, const Forward& f) {
  AdapterCost a;
  if (!x.adapter_passes) return a;
  const double T = x.tokens, act = x.act, in = x.adapted.inputs / x.tp, out = x.adapted.outputs / x.tp;
  const double result = x.kbit ? 4 : act;  // the base Linear's output bytes
  double fwd = act * in + out * (3 * act + 2 * result + act), bwd = act * (4 * out + 5 * in);
  if (x.w.lora.dropout > 0) fwd += (2 * act + 1) * in, bwd += (act + 1) * in;
  if (x.peft_4bit_clone) fwd += 2 * result * out;
  if (x.kbit) {
    const double cast = 4 + 2;  // an fp32 read and a bf16 write, or the other way
    const double linear_io = (x.linears.inputs + x.linears.outputs) / x.tp;
    fwd += cast * (linear_io + in);
    bwd += cast * (linear_io + in);
  }
  a.fwd = MemSeconds(x.hw, T * fwd) + (x.kbit ? f.elem : 0);
  a.bwd = MemSeconds(x.hw, T * bwd) + (x.kbit ? 2 * f.elem + f.elem_bwd : 0);
  return a;
}

LayerCost LayerTime(const Ctx& x, const LayerKind& k, Rc rc) {
  const Forward& f = k.f;
  const double dequant = DequantSeconds(x);
  const AdapterCost adapters = AdapterPasses(x, f);
  const double fwd = f.gemm + f.attn + f.elem + dequant + adapters.fwd;
  LayerCost c;
  c.compute = fwd + f.gemm * (x.lora ? 1 : 2) + f.attn_bwd + 2 * f.elem + f.elem_bwd + dequant + adapters.bwd;
  c.wgrad = x.lora ? 0 : f.gemm;  // dW costs what the forward GEMMs cost
  if (rc == Rc::kFull) c.recompute = fwd;
  if (rc == Rc::kSelective) {
    c.recompute = x.op_sac ? f.sac_gemm + f.elem : f.attn;
  }
  // FSDP2's copies: out after every gather (forward, and backward when resharded), on the
  // compute stream; in before every reduce-scatter (the last micro-batch's only under PP),
  // on the reduce-scatter stream under the next layer's backward.
  const double gathers = x.l.reshard_after_forward ? 2 : 1;
  const double reduces = x.pp > 1 ? 1.0 / AtLeast1(x.l.grad_accum) : 1;
  c.compute += gathers * k.fsdp_copy_out + reduces * Overlapped(k.fsdp_copy_in, f.gemm + f.attn_bwd);
  const int passes = rc == Rc::kFull ? 3 : 2;  // forward, backward, recomputed forward
  c.tp_raw = k.tp_collectives * passes * k.tp_one;
  // torchtitan's per-op policy saves reduce-scatter outputs but not all-gather ones (its
  // _save_list in parallelize.py): backward gathers each sub-block's sequence-sharded input
  // again for the weight gradients and the recomputed matmuls: one more all-gather, in float8
  // where the forward's was.
  if (rc == Rc::kSelective && x.op_sac && x.l.sp) c.tp_raw += k.tp_collectives * k.tp_gather;
  const double exposed = x.l.framework == Framework::kTorchtitan ? kAsyncTpExposed : kTpOverlapExposed;
  c.tp = c.tp_raw * (x.k.tp_overlap ? exposed : 1);
  if (x.k.tp_overlap && x.rowwise) {
    // Async TP fuses matmul-reduce-scatter with torchao's rowwise scales but not
    // all-gather-matmul (pytorch/pytorch#149990), so every all-gather stays exposed: the
    // forward's, the backward's of the gradient at each row-parallel output and the per-op
    // policy's second one. torchtitan's own A/B tables (benchmarks/
    // asyncTP_llama3_h100_2025-06_torchtitan.md) gain 4% (70B) and 6% (8B) from async TP with
    // rowwise float8, where bf16 gains 9% and 10% and tensorwise 16% and 10%.
    const double sac_gather = rc == Rc::kSelective && x.op_sac && x.l.sp ? k.tp_gather : 0;
    const double gathers = k.tp_collectives * (passes * k.tp_gather + sac_gather);
    c.tp = (c.tp_raw - gathers) * exposed + gathers;
  }
  // Ring attention: cp-1 exchanges per forward, twice that backward (KV and dKV), under the
  // blockwise attention.
  const double fwd_comm = (x.cp - 1) * k.cp_step, bwd_comm = 2 * fwd_comm;
  c.cp_raw = fwd_comm * (passes - 1) + bwd_comm;
  if (x.cp > 1) c.cp = Overlapped(fwd_comm, f.attn) * (passes - 1) + Overlapped(bwd_comm, f.attn_bwd);
  c.cp_raw += passes * k.cp_a2a;  // on the critical path: the scan waits for it
  c.cp += passes * k.cp_a2a;
  c.ep_raw = 2 * passes * k.ep_one;  // dispatch + combine per pass
  c.ep = c.ep_raw * (x.k.ep_overlap ? kEpOverlapExposed : 1);
  // The host work of both passes, and of the forward again where the layer is recomputed.
  c.compute += k.host_fwd + k.host_bwd;
  if (rc == Rc::kFull) c.recompute += k.host_fwd;
  return c;
}

// ---- Stages ----

void Add(LayerCost* sum, const LayerCost& c, double n) {
  sum->compute += n * c.compute;
  sum->recompute += n * c.recompute;
  sum->wgrad += n * c.wgrad;
  sum->tp += n * c.tp;
  sum->tp_raw += n * c.tp_raw;
  sum->cp += n * c.cp;
  sum->cp_raw += n * c.cp_raw;
  sum->ep += n * c.ep;
  sum->ep_raw += n * c.ep_raw;
}

// Per-layer costs are the same for every layer of a kind, so each is computed once: `plain`
// under the layout's recompute choice (none or selective), `full` when fully recomputed.
// A hybrid's layers by kind: the pattern's letter (kHybridBlocks order), and whether its FFN
// is an MoE block (Qwen3-Next's 'A' and 'G' layers may hold either).
constexpr char kHybridBlocks[] = {'M', '*', '-', 'E', 'A', 'G', 'P'};
constexpr int kHybridKinds = 14;
int KindIndex(char letter, bool moe) {
  const auto at = std::find(std::begin(kHybridBlocks), std::end(kHybridBlocks), letter);
  return 2 * static_cast<int>(at - std::begin(kHybridBlocks)) + (moe ? 1 : 0);
}
int HybridIndex(const ModelSpec& m, int64_t layer) { return KindIndex(m.block(layer), m.is_moe_layer(layer)); }

struct LayerTable {
  LayerCost dense_plain, dense_full, moe_plain, moe_full;
  LayerCost hybrid_plain[kHybridKinds], hybrid_full[kHybridKinds];  // per block kind of a hybrid
  double hybrid_params[kHybridKinds] = {};                          // per block, routed experts apart
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
  if (!m.is_hybrid()) {  // a hybrid's layers are priced by kind below
    const LayerKind dense = MakeKind(x, -1);
    t.dense_plain = LayerTime(x, dense, plain);
    if (full) t.dense_full = LayerTime(x, dense, Rc::kFull);
    t.dense_params = static_cast<double>(LayerParams(m, -1));
  } else {
    bool seen[kHybridKinds] = {};
    for (int64_t layer = 0; layer < m.layers; ++layer) {
      const int i = HybridIndex(m, layer);
      if (seen[i]) continue;
      seen[i] = true;
      const LayerKind kind = MakeKind(x, layer);
      t.hybrid_plain[i] = LayerTime(x, kind, plain);
      if (full) t.hybrid_full[i] = LayerTime(x, kind, Rc::kFull);
      t.hybrid_params[i] = static_cast<double>(LayerParams(m, layer) - LayerExpertParams(m, layer));
    }
  }
  if (has_moe) {
    const int first = static_cast<int>(moe_it - m.moe_layer.begin());
    t.moe_expert = static_cast<double>(LayerExpertParams(m, first));
    if (!m.is_hybrid()) {
      const LayerKind moe = MakeKind(x, first);
      t.moe_plain = LayerTime(x, moe, plain);
      if (full) t.moe_full = LayerTime(x, moe, Rc::kFull);
      t.moe_params = static_cast<double>(LayerParams(m, first)) - t.moe_expert;
    }
  }
  const double ew = Width(m), v = static_cast<double>(m.vocab), h = static_cast<double>(m.hidden);
  t.embedding_params = v * ew + (ew != h ? 2 * ew * h : 0) +
                       (m.position == PositionKind::kLearned ? (m.max_positions + m.position_offset) * h : 0);
  t.head_params = v * ew;
  t.final_norm_params = FinalNormParams(m);
  t.head_seconds = HeadSeconds(x);
  t.embed_seconds = EmbedSeconds(x);
  // Nemotron's MTP block is an attention block and an MoE block (mtp_hybrid_override_pattern
  // "*E"); Qwen3-Next's, an attention layer.
  double mtp_layer = (has_moe ? t.moe_plain : t.dense_plain).compute;
  if (m.is_hybrid()) {
    const bool nemotron = m.hybrid.find('E') != std::string::npos || m.hybrid.find('*') != std::string::npos;
    mtp_layer = nemotron ? t.hybrid_plain[KindIndex('*', false)].compute + t.hybrid_plain[KindIndex('E', true)].compute
                         : t.hybrid_plain[KindIndex('A', has_moe)].compute;
  }
  t.mtp_seconds = m.mtp_layers * (t.head_seconds + mtp_layer);
  return t;
}

// What one pipeline stage holds.
struct StageShape {
  int dense = 0, moe = 0;          // layers of each kind
  int dense_full = 0, moe_full = 0;  // of them, fully recomputed
  int hybrid[kHybridKinds] = {}, hybrid_full[kHybridKinds] = {};  // a hybrid's blocks instead
  bool first = false, last = false;
};

// Which of a stage's layers ShapeOf counts: all, or apart those a low-precision run keeps in
// BF16 (recipe.h LowPrecisionBf16Layers) and those alone. The embeddings and the head go
// with the first two.
enum class LayerSet { kAll, kLowPrecision, kBf16 };

// Layers on stage `s`: `stages` when given, torchtitan's own split for torchtitan, else the
// balanced split with the remainder on the earlier stages (layout.h StageLayers). Full
// recomputation takes the stage's first ac_layers layers (Megatron --recompute-num-layers).
StageShape ShapeOf(const Ctx& x, int s, LayerSet set = LayerSet::kAll, Bf16Layers bf16 = {}) {
  const Layout& l = x.l;
  const ModelSpec& m = x.m;
  int first = 0, n = 0;
  if (static_cast<int>(x.stage_layers.size()) == x.pp) {
    for (int i = 0; i < s; ++i) first += x.stage_layers[static_cast<size_t>(i)];
    n = x.stage_layers[static_cast<size_t>(s)];
  } else {
    n = BalancedStageLayers(m.layers, x.pp, s, &first);
  }
  StageShape sh;
  // The embeddings and the head go with the whole stage or its low-precision part.
  sh.first = set != LayerSet::kBf16 && s == 0;
  sh.last = set != LayerSet::kBf16 && s == x.pp - 1;
  const int rc = l.ac != Recompute::kFull ? 0 : l.ac_layers > 0 ? std::min(n, l.ac_layers) : n;  // fully recomputed
  const int layers = static_cast<int>(m.layers), marked = static_cast<int>(m.moe_layer.size());
  auto counted = [&](int i) {
    if (set == LayerSet::kAll) return true;
    const bool kept = i < bf16.start || i >= layers - bf16.end;
    return set == LayerSet::kBf16 ? kept : !kept;
  };
  if (m.is_hybrid()) {  // full recomputation takes the stage's first ac_layers blocks
    for (int i = first; i < first + n && i < static_cast<int>(m.hybrid.size()); ++i) {
      if (!counted(i)) continue;
      const int kind = HybridIndex(m, i);
      ++sh.hybrid[kind];
      if (i - first < rc) ++sh.hybrid_full[kind];
    }
    return sh;
  }
  if (set != LayerSet::kAll) {  // a subset: count layer by layer
    for (int i = first; i < first + n; ++i) {
      if (!counted(i)) continue;
      const bool moe = x.moe_layers == m.layers || (x.moe_layers > 0 && i < marked && m.moe_layer[static_cast<size_t>(i)]);
      (moe ? sh.moe : sh.dense) += 1;
      if (i - first < rc) (moe ? sh.moe_full : sh.dense_full) += 1;
    }
    return sh;
  }
  if (x.moe_layers == m.layers) {
    sh.moe = n;
  } else if (x.moe_layers > 0) {  // mixed (DeepSeek's leading dense layers): count this stage's
    for (int i = first; i < first + n && i < marked; ++i) sh.moe += m.moe_layer[static_cast<size_t>(i)] ? 1 : 0;
  }
  sh.dense = n - sh.moe;
  sh.dense_full = std::min(sh.dense, rc);
  sh.moe_full = rc - sh.dense_full;
  return sh;
}

// One micro-batch on one stage: compute + recompute + exposed comm (the search's hot loop).
double StageSeconds(const LayerTable& t, const StageShape& sh) {
  double hybrid = 0;
  for (int i = 0; i < kHybridKinds; ++i)
    hybrid += (sh.hybrid[i] - sh.hybrid_full[i]) * t.hybrid_plain[i].total() + sh.hybrid_full[i] * t.hybrid_full[i].total();
  return hybrid + (sh.dense - sh.dense_full) * t.dense_plain.total() + sh.dense_full * t.dense_full.total() +
         (sh.moe - sh.moe_full) * t.moe_plain.total() + sh.moe_full * t.moe_full.total() +
         (sh.first ? t.embed_seconds : 0) + (sh.last ? t.head_seconds + t.mtp_seconds : 0);
}

// The embeddings, head and final norm a stage holds.
double StageRootParams(const Ctx& x, const LayerTable& t, const StageShape& sh) {
  double root = sh.first ? t.embedding_params : 0;
  if (sh.last && (!x.m.tied_embeddings || x.pp > 1)) root += t.head_params;
  if (sh.last) root += t.final_norm_params;
  return root;
}

// Parameters on one stage before any sharding: (dense, routed experts).
std::pair<double, double> StageParams(const Ctx& x, const LayerTable& t, const StageShape& sh) {
  double dense = sh.dense * t.dense_params + sh.moe * t.moe_params + StageRootParams(x, t, sh);
  for (int i = 0; i < kHybridKinds; ++i) dense += sh.hybrid[i] * t.hybrid_params[i];
  double moe_layers = sh.moe;
  for (int i = 1; i < kHybridKinds; i += 2) moe_layers += sh.hybrid[i];
  return {dense, moe_layers * t.moe_expert};
}

struct StageCost {
  LayerCost layers;       // summed over the stage's layers and extras
  double fwd_bwd = 0;     // compute + recompute + exposed comm of one micro-batch
  double dense_params = 0, expert_params = 0;  // on this stage, before any sharding
  double root_params = 0;  // of dense_params: embeddings, head and final norm
  double backward = 0, forward = 0;            // one micro-batch, for overlap windows
};

StageCost StageDetail(const Ctx& x, const LayerTable& t, const StageShape& sh) {
  StageCost sc;
  Add(&sc.layers, t.dense_plain, sh.dense - sh.dense_full);
  Add(&sc.layers, t.dense_full, sh.dense_full);
  Add(&sc.layers, t.moe_plain, sh.moe - sh.moe_full);
  Add(&sc.layers, t.moe_full, sh.moe_full);
  for (int i = 0; i < kHybridKinds; ++i) {
    Add(&sc.layers, t.hybrid_plain[i], sh.hybrid[i] - sh.hybrid_full[i]);
    Add(&sc.layers, t.hybrid_full[i], sh.hybrid_full[i]);
  }
  if (sh.first) sc.layers.compute += t.embed_seconds;
  if (sh.last) sc.layers.compute += t.head_seconds + t.mtp_seconds;
  std::tie(sc.dense_params, sc.expert_params) = StageParams(x, t, sh);
  sc.root_params = StageRootParams(x, t, sh);
  sc.forward = sc.layers.compute / 3;  // forward is ~1/3 of fwd + bwd compute
  sc.backward = sc.layers.compute - sc.forward;
  sc.fwd_bwd = sc.layers.total();
  return sc;
}

// ---- Data-parallel traffic, optimizer, offload ----

double GradBytes(const Ctx& x) {
  // Megatron reduces fp32 main grads unless grad_reduce_in_fp32 is off (recipe.h); torchtitan's FSDP2 default reduce_dtype is fp32;
  // DeepSpeed's BF16 optimizer accumulates and reduces fp32; FSDP mixed precision bf16.
  switch (x.l.framework) {
    case Framework::kMegatron: return MegatronGradsFp32(x.w, x.l) ? 4 : 2;
    case Framework::kTorchtitan: return 4;
    case Framework::kDeepSpeed: return x.w.precision == Dtype::kFp16 ? 2 : 4;
    case Framework::kFsdp: return 2;
  }
  return 4;
}

struct DpCost {
  double exposed = 0, raw = 0;
};

DpCost DataParallel(const Ctx& x, const StageCost& sc, int64_t micro_batches, double stage_layers) {
  DpCost d;
  const int tp = x.tp, dpcp = x.dp * x.cp;
  const double param_bytes = 2;
  double dense = sc.dense_params / tp, expert = sc.expert_params / (x.ep * x.etp);
  // torchao's float8 all-gather moves the layers' weights at 1 byte (recipe.h); embeddings,
  // head and norms stay bf16.
  const double gathered = Float8AllGather(x.w, x.l) ? (sc.root_params + (sc.dense_params - sc.root_params) / 2) / tp : dense;
  double grads_dense = dense, grads_expert = expert;
  if (x.lora) {
    grads_dense = x.lora_layer_params * stage_layers / tp;
    grads_expert = 0;
  }
  const double gb = GradBytes(x);
  const int edp = std::max(1, dpcp / x.ep);
  const Tier dense_tier = GroupTier(x.c, SpanOf(x.l, GroupKind::kDataContext)),
             expert_tier = GroupTier(x.c, SpanOf(x.l, GroupKind::kExpertData));
  auto hidden = [](double t, double window) { return std::max(kLastBucketShare * t, Overlapped(t, window)); };
  if (x.l.zero >= 3) {
    const int shard = AtLeast1(x.l.shard_degree()) * x.cp;
    const Tier tier = GroupTier(x.c, SpanOf(x.l, GroupKind::kShardContext));
    const double gather = CollectiveSeconds(Collective::kAllGather, (gathered + expert) * param_bytes, shard, tier);
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
      const Tier rt = GroupTier(x.c, SpanOf(x.l, GroupKind::kReplicate));
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

// bitsandbytes' paged optimizers keep their states in CUDA unified memory and prefetch each
// parameter's states to the GPU before its update (cudaMemPrefetchAsync), then synchronize.
// The GPU holds what the caching allocator and the runtime leave of the card; past that the
// driver evicts the chunks migrated longest ago. The states are walked in the same order
// every step, so an eviction order by migration meets a cyclic walk longer than the room with
// no hits: once the states do not fit, every byte of them crosses PCIe in, and back out dirty,
// each step, on the critical path. torchtune's README (0217d44) bears it out: Llama-2-7B full
// fine-tune, 32-bit PagedAdamW (50 GiB of states) on a 24 GB RTX 4090, 702 tokens/s where
// the same card with states that fit would compute at about 1,800; its later table has
// Llama-3.1-8B with 8-bit paged states run 1.56x faster on a 48 GB A6000, where they fit,
// than on the 4090, where they do not.
double PagedSpillBytes(const ModelSpec& m, const Workload& w, const Layout& l, const ClusterSpec& c) {
  MemoryOptions opt;
  opt.extreme_stages_only = true;
  const MemoryEstimate e = EstimateMemory(m, w, l, c, opt);
  if (e.capacity_bytes <= 0) return 0;
  double spill = 0;
  for (const StageMemory& s : e.stages) {
    int64_t paged = 0;
    for (const MemoryTerm& t : s.terms)
      if (t.pool == Pool::kPaged) paged += t.bytes;
    if (paged > e.capacity_bytes - s.device_peak) spill = std::max(spill, 2.0 * static_cast<double>(paged));
  }
  return spill;
}

StepExtras OptimizerAndOffload(const Ctx& x, const StageCost& sc, int64_t micro_batches, double stage_layers) {
  StepExtras e;
  // The optimizer steps this rank's shard: dense states over the data-parallel group, expert
  // states over the expert-data-parallel one (dp x cp x tp / (ep x etp), model_states.cc).
  const double dense_shard = x.l.zero >= 1 ? (x.l.zero >= 3 ? AtLeast1(x.l.shard_degree()) * x.cp : x.dp * x.cp) : 1;
  const double expert_shard = x.l.zero >= 1 ? std::max(1.0, dense_shard * x.tp / (x.ep * x.etp)) : 1;
  double local = sc.dense_params / x.tp / dense_shard + sc.expert_params / (x.ep * x.etp) / expert_shard;
  if (x.lora) local = x.lora_layer_params * stage_layers / x.tp / dense_shard;
  const double gpn = AtLeast1(x.c.gpus_per_node);
  if (x.l.offload_optimizer == Offload::kNone) {
    e.optimizer = MemSeconds(x.hw, local * (OptimizerBytesPerParam(x.w.optimizer) + x.foreach_step_bytes));
    // Muon orthogonalizes each matrix's update with bf16 GEMMs; the ranks sharing the
    // optimizer split the matrices between them (Megatron's distributed Muon).
    if (x.w.optimizer == Optimizer::kMuon && !x.lora)
      e.optimizer += local * MuonFlopsPerParam(x.m) / (x.hw.peak16 * x.hw.ceiling16);
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
  if (x.w.paged_optimizer && x.paged_spill_bytes > 0) {
    const double pcie = HostLinkBandwidth(x.c);
    e.offload += pcie > 0 ? x.paged_spill_bytes / pcie : 0;
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

}  // namespace

// An all-to-all sends a copy of a token to each routed expert, the share bound outside the
// rank's NVLink domain through its own NIC; DeepEP and HybridEP send one copy per destination
// GPU inside the domain and one per destination domain across the network (forwarded on
// NVLink there). arXiv 2603.07685 (Table 7, H100, DeepSeek-V3's hidden 7168 and routing,
// 4,096 tokens) times these exchanges: the all-to-all dispatch 1265, 5774, 8059 and 9164 us at
// EP 8, 16, 32 and 64, HybridEP's 661, 1485, 3064 and 4626 us (time_model_test checks both
// rows). Megatron's allgather dispatcher gathers every rank's tokens and reduce-scatters the
// outputs back.
double MoeTokenExchangeSeconds(const ModelSpec& m, const Layout& l, const ClusterSpec& c, double tokens,
                               double bytes_per_element, bool consecutive) {
  if (l.ep <= 1 || m.experts <= 0) return 0;
  auto places = [&](double n) { return consecutive ? ConsecutivePlaces(m, n) : DistinctPlaces(m, n); };
  const GroupSpan span = SpanOf(l, GroupKind::kEp);
  const double n = l.ep, d = DomainMembers(c, span), domains = n / d;
  // A latent MoE (Nemotron 3 Super) projects each token to its latent width before the
  // dispatch and back after the combine, so the exchange carries latent-wide rows.
  const double row = static_cast<double>(m.expert_width()) * bytes_per_element;
  switch (l.dispatcher) {
    case EpDispatch::kAllGather:
      return CollectiveSeconds(Collective::kAllGather, tokens * row * n, l.ep, GroupTier(c, span));
    case EpDispatch::kFlex:
      return TokenExchangeSeconds(c, span, tokens * row * places(n) * (d - 1) / n,
                                  tokens * row * places(domains) * (domains - 1) / domains);
    case EpDispatch::kAllToAll: break;
  }
  const double copies = tokens * row * static_cast<double>(m.experts_per_token);
  return TokenExchangeSeconds(c, span, copies * (d - 1) / n, copies * (n - d) / n);
}

void TimeEstimate::AddTerm(const char* name, double seconds, double raw) {
  TimeTerm term;
  term.name = name;
  term.seconds = seconds;
  term.raw_seconds = raw;
  terms.push_back(std::move(term));
}

double PipelineBubbleFraction(int stages, int virtual_stages, int64_t micro_batches) {
  if (stages <= 1 || micro_batches <= 0) return 0;
  const double v = AtLeast1(virtual_stages), m = static_cast<double>(micro_batches);
  return ((stages - 1.0) / v + (1 - 1 / v) * std::max(0.0, stages - m)) / m;
}

TimeEstimate EstimateTime(const ModelSpec& m, const Workload& w, const Layout& l, const ClusterSpec& c) {
  return EstimateTime(m, w, l, c, TimeOptions{});
}

TimeEstimate EstimateTime(const ModelSpec& m, const Workload& w, const Layout& l, const ClusterSpec& c,
                          const TimeOptions& opt) {
  if (!w.training()) return EstimateInferenceTime(m, w, l, c, opt);
  if (TorchtitanMixedPrecisionOff(w, l)) return EstimateTime(m, WorkloadAsRun(w, l), l, c, opt);
  if (HeadUntiedAsRun(m, w, l)) return EstimateTime(ModelAsRun(m, w, l), w, l, c, opt);
  TimeEstimate out;
  if (m.layers <= 0 || m.hidden <= 0 || w.seq_len <= 0) return out;
  const Dtype prec = w.precision;
  const Knobs k = ResolveSwitches(m, w, l, opt);
  const LayerShape shape{m, HardwareFor(c.gpu, prec, TrainingAttention(m, l, c.gpu)), AtLeast1(l.tp), AtLeast1(l.cp), AtLeast1(l.ep), AtLeast1(l.etp),
                         static_cast<double>(w.seq_len),
                         static_cast<double>(AtLeast1(l.mbs)) * w.seq_len / AtLeast1(l.cp),
                         prec == Dtype::kFp32 ? 4.0 : 2.0, w.lora_like(), prec == Dtype::kFp8 || prec == Dtype::kFp4,
                         l.framework == Framework::kTorchtitan && l.ac == Recompute::kSelective,
                         l.sp, k.fused, k.flash, prec == Dtype::kFp4, TorchtitanItself(l),
                         prec == Dtype::kFp8 && ResolvedFp8Recipe(w, l) == Fp8Recipe::kRowwise && TorchtitanItself(l),
                         l.stack == Stack::kAutomodel, w.moe_routing};
  Ctx x{shape, w, l, c, k, AtLeast1(l.pp), AtLeast1(l.dp), AtLeast1(l.vpp)};
  if (!StepTimeKnown(c.gpu)) return out;  // no peak, or no measured kernels: nothing to estimate
  x.moe_layers = m.is_moe() ? m.moe_layer_count() : 0;
  // Stages split as the memory model splits them, where that is not the balanced split.
  if (!l.stages.empty() || (TorchtitanItself(l) && x.pp > 1)) x.stage_layers = StageLayers(m, l);
  x.lora_layer_params = x.lora ? LoraLayerParams(m, w.lora) : 0;
  std::optional<TrainingRecipe> recipe;  // resolved once, where a term below needs it
  auto resolved = [&]() -> const TrainingRecipe& {
    if (!recipe) recipe = ResolveRecipe(m, w, l, nullptr);
    return *recipe;
  };
  // Eager only: compiled, Inductor fuses the scale and the add into the kernels beside them;
  // Unsloth fuses its LoRA into the base matmuls' own kernels (fast_lora.py); Megatron's
  // adapters (fused kernels around them) were not measured.
  if (x.lora && !x.fused && l.stack != Stack::kUnsloth) {
    x.adapter_passes = true;
    x.adapted = AdapterWidthsPerLayerMean(m, w.lora);
    if (w.task == Task::kQlora) {
      x.peft_4bit_clone = l.stack == Stack::kHf;
      if (resolved().kbit_fp32_stream) {
        x.kbit = true;
        x.linears = AdapterWidthsPerLayerMean(m, LoraSpec{w.lora.rank, {"all-linear"}, 0});
      }
    }
  }
  // Where torch steps AdamW itself (FSDP, torchtitan, one GPU), the recipe says whether with
  // its foreach implementation. DeepSpeed and Megatron step fused kernels; DeepSpeed's memory
  // prices the client's foreach AdamW when unstated only because it holds more.
  if ((l.framework == Framework::kFsdp || l.framework == Framework::kTorchtitan) &&
      (w.optimizer == Optimizer::kAdamW || w.optimizer == Optimizer::kAdam) && l.offload_optimizer == Offload::kNone)
    if (resolved().torch_foreach_step)
      x.foreach_step_bytes = ForeachStepExtraBytes(w.optimizer, TrainedBytes(resolved(), w));
  if (w.paged_optimizer) x.paged_spill_bytes = PagedSpillBytes(m, w, l, c);
  const int64_t micro = AtLeast1(l.grad_accum);

  const LayerTable table = BuildTable(x);
  // Layers a low-precision run keeps in BF16 are priced from a second table at BF16 rates.
  const Bf16Layers bf16 = LowPrecisionBf16Layers(m, w, l);
  std::optional<Ctx> xb;
  LayerTable table_bf16;
  if (bf16.count() > 0) {
    xb.emplace(x);
    xb->hw = HardwareFor(c.gpu, Dtype::kBf16, TrainingAttention(m, l, c.gpu));
    xb->fp8 = xb->fp4 = xb->rowwise = false;
    table_bf16 = BuildTable(*xb);
  }
  auto stage_seconds = [&](int s) {
    if (!xb) return StageSeconds(table, ShapeOf(x, s));
    return StageSeconds(table, ShapeOf(x, s, LayerSet::kLowPrecision, bf16)) +
           StageSeconds(table_bf16, ShapeOf(x, s, LayerSet::kBf16, bf16));
  };
  auto stage_detail = [&](int s) {
    if (!xb) return StageDetail(x, table, ShapeOf(x, s));
    StageCost sc = StageDetail(x, table, ShapeOf(x, s, LayerSet::kLowPrecision, bf16));
    const StageCost kept = StageDetail(*xb, table_bf16, ShapeOf(x, s, LayerSet::kBf16, bf16));
    Add(&sc.layers, kept.layers, 1);
    sc.fwd_bwd += kept.fwd_bwd, sc.forward += kept.forward, sc.backward += kept.backward;
    sc.dense_params += kept.dense_params, sc.expert_params += kept.expert_params;
    return sc;
  };
  int slowest_stage = 0, heaviest_stage = 0;
  double sum_stage = 0, slowest_seconds = -1, heaviest_params = -1;
  for (int s = 0; s < x.pp; ++s) {
    const double seconds = stage_seconds(s);
    const auto [dense, expert] = StageParams(x, table, ShapeOf(x, s));
    sum_stage += seconds;
    if (seconds > slowest_seconds) slowest_seconds = seconds, slowest_stage = s;
    if (dense + expert > heaviest_params) heaviest_params = dense + expert, heaviest_stage = s;
  }
  const StageCost slowest = stage_detail(slowest_stage);
  const StageCost heaviest = stage_detail(heaviest_stage);
  const double stage_layers = static_cast<double>(m.layers) / x.pp;
  const double busy = micro * slowest.fwd_bwd;
  // Interleaving divides the fill and drain by v, but a round of v chunks needs p micro-batches
  // in flight: with m < p each round waits (p - m) chunks for its first micro-batch to come
  // around (PyTorch ScheduleInterleaved1F1B: microbatches_per_round = m when m < pp).
  double bubble = (sum_stage - slowest.fwd_bwd) / x.vpp +
                 (1 - 1.0 / x.vpp) * std::max(0.0, sum_stage - micro * slowest.fwd_bwd);
  if (l.pp_schedule != PpSchedule::k1f1b && x.pp > 1) {
    // Zero-bubble schedules fill the fill-and-drain with deferred weight gradients: 1F1B's
    // bubble (p-1)(F+B+W) becomes (p-1)(F+B-W) under ZB-H1 and (p-1)(F+B-2W) under ZB-V
    // (Qi et al. 2023, Table 1; 2024, V-ZB), F, B and W being one chunk's times (a stage's,
    // or half of it for ZB-V's two chunks, as the interleaved bubble above already counts).
    const double t = slowest.fwd_bwd, wg = std::min(slowest.layers.wgrad, t / 3);
    const double left = l.pp_schedule == PpSchedule::kZeroBubble ? t - 2 * wg : t - 3 * wg;
    bubble = t > 0 ? bubble * std::max(0.0, left) / t : 0;
  }

  double p2p = 0, p2p_raw = 0;
  if (x.pp > 1) {
    const double bytes = x.tokens * m.hidden * x.act / (l.sp ? x.tp : 1);
    const Tier tier = NeighborTier(c, SpanOf(l, GroupKind::kPp));
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
    out.AddTerm("compute", micro * lc.compute, micro * lc.compute);
    out.AddTerm("recompute", micro * lc.recompute, micro * lc.recompute);
    out.AddTerm("tp_comm", micro * lc.tp, micro * lc.tp_raw);
    out.AddTerm("cp_comm", micro * lc.cp, micro * lc.cp_raw);
    out.AddTerm("ep_comm", micro * lc.ep, micro * lc.ep_raw);
    out.AddTerm("pp_bubble", bubble, bubble);
    out.AddTerm("pp_p2p", p2p, p2p_raw);
    out.AddTerm("dp_comm", dpc.exposed, dpc.raw);
    out.AddTerm("optimizer", ex.optimizer, ex.optimizer);
    out.AddTerm("offload", ex.offload, ex.offload_raw);
  }
  return out;
}

}  // namespace shardplan
