// Assembles the memory terms per pipeline stage, takes the maximum over phases, and
// rounds as the PyTorch caching allocator does (memory-model.md 7 gives the order).
#include "planner/memory_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "planner/caching_allocator.h"
#include "planner/lora.h"
#include "planner/memory_terms.h"
#include "planner/quantization.h"
#include "planner/units.h"

namespace shardplan {
namespace {

void ComputePeaks(StageMemory& s, const AllocatorShare& a) {
  s.allocated_peak = s.reserved_peak = s.device_peak = s.required_peak = 0;
  for (int p = 0; p < kPhaseCount; ++p) {
    PhaseUsage u = UsageAt(s, static_cast<Phase>(p), a);
    if (u.required > s.required_peak) s.peak_phase = static_cast<Phase>(p);
    s.allocated_peak = std::max(s.allocated_peak, u.allocated);
    s.reserved_peak = std::max(s.reserved_peak, u.reserved);
    s.device_peak = std::max(s.device_peak, u.device);
    s.required_peak = std::max(s.required_peak, u.required);
  }
}


// Host RAM and NVMe per node: pinned offload buffers and checkpoint loading.
void HostAndNvme(const MemoryContext& ctx, const StageShape& s, MemoryEstimate& e) {
  const Layout& l = ctx.l;
  const int ranks = ctx.c.gpus_per_node;
  const double local = static_cast<double>(s.dense_params) / DenseShardDegree(l) +
                       static_cast<double>(s.expert_params) / ExpertShardDegree(l);
  // What an offloaded optimizer keeps in host memory per trained element: the gradient and
  // the states in the recipe's precision (fp32 master + fp32 grads + fp32 moments under
  // mixed precision; pure bf16 keeps everything in bf16, as torchtune's fused CPU step
  // does). A LoRA run trains, and offloads the states of, its adapters only.
  const bool pure = ctx.r.pure_low_precision;
  const double opt_bytes = OptimizerStateBytes(ctx.w.optimizer, ctx.m) *
                           (pure && !QuantizedStates(ctx.w.optimizer) ? 0.5 : 1.0);
  const double trained = ctx.w.lora_like() ? static_cast<double>(s.adapter_params) / DenseShardDegree(l) : local;
  const double states = ((pure ? 2 : 4) + (ctx.r.master_weights && !pure ? 4 : 0) + opt_bytes) * trained;
  // Offloaded parameters: the working weights (a QLoRA base in its 4-bit format). FSDP
  // offloads its sharded fp32 parameters, which are the master copy already counted.
  const bool fsdp_master = (l.framework == Framework::kFsdp || l.framework == Framework::kTorchtitan) &&
                           ctx.r.master_weights && !pure && !ctx.w.lora_like();
  const double param_bytes = ctx.w.task == Task::kQlora ? Nf4BaseBytes(ctx.w)
                             : fsdp_master                 ? 0
                                                           : (ctx.w.precision == Dtype::kFp32 ? 4 : 2);
  double host = 0, nvme = 0;
  if (ctx.w.training()) {
    // Paged optimizer states and offloaded activations are backed by host memory per rank.
    for (const MemoryTerm& t : e.stages[static_cast<size_t>(e.fullest_stage_index)].terms)
      if (t.pool == Pool::kPaged || t.pool == Pool::kHost) host += static_cast<double>(t.bytes) * ranks;
    if (l.offload_optimizer == Offload::kCpu) host += states * ranks;  // pinned, per rank (memory-model.md 7, host side)
    if (l.offload_optimizer == Offload::kNvme) {
      nvme += states * ranks;
      host += 4.0 * std::min(local, 1e8) * 4 * ranks;  // optimizer swap buffers: buffer_count 4 x sub-group tiles
    }
    if (l.offload_params == Offload::kCpu) host += param_bytes * local * ranks + 5 * 1e8 * 2 * ranks;  // + buffer_count 5 x 1e8
    if (l.offload_params == Offload::kNvme) {
      nvme += param_bytes * local * ranks;
      host += 5 * 1e8 * 2 * ranks;
    }
  }
  const double total = static_cast<double>(CountParams(ctx.m).total);
  // Loading: HF from_pretrained materialises the bf16 model once per node (rank 0 with
  // cpu_ram_efficient_loading); Megatron/torchtitan read sharded distributed checkpoints.
  const bool hf = l.framework == Framework::kFsdp || l.framework == Framework::kDeepSpeed;
  const double loading = hf ? 2 * total : 2 * total / ctx.c.nodes;
  double load = loading;
  if (!ctx.w.training()) {  // serving engines read each GPU's own weight shard
    load = ServedWeightBytes(ctx, s) * std::min(ranks, ctx.c.world_size());
    // ZeRO-Inference keeps the weights in pinned host memory (cpu) or on NVMe per rank.
    if (l.offload_params == Offload::kCpu) host += load;
    if (l.offload_params == Offload::kNvme) nvme += load;
  }
  e.per_node_host_bytes = static_cast<int64_t>(std::max(host, load));
  e.per_node_nvme_bytes = static_cast<int64_t>(nvme);
}

}  // namespace

std::string_view PoolName(Pool p) {
  return p == Pool::kTorch ? "torch" : p == Pool::kNonTorch ? "non-torch" : p == Pool::kPaged ? "paged"
         : p == Pool::kCached ? "cached" : p == Pool::kStream ? "stream-cached"
         : p == Pool::kFragment ? "fragment" : "host";
}

std::string_view PhaseName(Phase p) {
  switch (p) {
    case Phase::kSetup: return "setup";
    case Phase::kForward: return "forward";
    case Phase::kLoss: return "loss";
    case Phase::kLossBackward: return "loss_backward";
    case Phase::kBackward: return "backward";
    case Phase::kStep: return "step";
  }
  return "?";
}

int64_t RoundAllocation(int64_t bytes) {
  // CUDACachingAllocator.cpp (caching_allocator.h): 512 B blocks; a request of 10 MiB or more
  // takes a segment of its own, rounded up to 2 MiB.
  if (bytes <= 0) return 0;
  const int64_t block = AllocatorBlockBytes(bytes);
  return block < 10 * kMiB ? block : AllocatorSegmentBytes(block);
}

double DefaultFragmentation(const Layout& l, const Workload& w) {
  if (!w.training()) return 0.02;  // a few large, long-lived blocks
  switch (l.framework) {
    case Framework::kDeepSpeed: return 0.10;  // many bucket and partition sizes
    case Framework::kFsdp: return 0.07;       // FSDP2 avoids recordStream (torchtitan docs/fsdp.md)
    case Framework::kTorchtitan: return 0.05;
    case Framework::kMegatron: return 0.05;   // contiguous param and grad buffers
  }
  return 0.08;
}

// What the caching allocator holds past the least fragmentation when memory allows, in
// training on PyTorch's own engines, as measured on one H100 (bench/data/calibration:
// max_memory_reserved over max_memory_allocated in the runs that stayed clear of the card).
// - Recomputation allocates in backward what the forward did not (a layer run again beside
//   the activation gradients), so the blocks the loss and the logits' gradients free are
//   split for smaller requests, and the next step's loss asks for fresh segments: 1.04-1.49
//   of the allocated peak, median 1.25 (n=34: torchtitan full and selective, HF and
//   torchtune full).
// - Under FSDP much of that was the all-gather and reduce-scatter streams' own blocks, which
//   are priced as terms of their own (model_states.cc AddFsdpStreamPools), and so is the
//   eager loss's hole, the bf16 logits' freed block that none of the loss's fp32 blocks fit
//   (activations.cc UpcastLossHole, 2 B a logit), and the segment FSDP2's root grads map
//   when torchtune's chunked loss freed no block that holds them (RootGradsSegment). Past
//   them, the compute stream of the sharded runs grew by a median 6% with recomputation
//   (n=22, torchtitan; 12.5% before the hole was priced apart, n=32 with torchtune's) and
//   7.5% without (n=3). Runs that also shard by TP or CP keep 25%: torchtitan's published
//   runs at TP 8 (70B at FSDP 32, 405B with PP 8) reserve that much, since real collectives
//   keep their tensors until NCCL's stream is done with them, which our runs' fake process
//   group does not show.
// - Without recomputation each step repeats the last one's requests and reuses its blocks:
//   1.03-1.04 on one GPU (n=3).
// - A LoRA step on one GPU leaves the frozen base out of the churn: 1.08-1.11 of the
//   allocated peak with recomputation (n=3, bf16 bases), 1.08-1.23 under QLoRA (n=5), whose
//   base is a smaller share. Both follow from what the allocator keeps (the forward's layer
//   blocks and the loss's hole, priced as terms: activations.cc LoraLayerCacheKept), so the
//   growth is the least fragmentation there; without recomputation 10% stays, not measured.
// - Compiled with selective recomputation, Inductor decides inside each block's graph what
//   backward recomputes, and serves the graph's intermediates from buffers it plans and
//   reuses, so fewer odd-sized requests reach the cache. No compiled run was measured here;
//   torchtitan's published compiled selective runs hold 1.08-1.14 of the allocated peak this
//   model prices (its H100 and H200 benchmark tables), its eager ones 1.17-1.22, and its
//   compiled runs with full recomputation 1.10-1.31 (median 1.23), as eager. Sharded, the
//   side streams' pools come to about that much, so the compute stream keeps only the least
//   fragmentation.
// DeepSpeed, Megatron and Unsloth runs were not measured and keep their least fragmentation.
double DefaultCacheGrowth(const MemoryContext& ctx, double frag) {
  const Layout& l = ctx.l;
  if (!ctx.w.training() || l.framework == Framework::kDeepSpeed || l.framework == Framework::kMegatron ||
      l.stack == Stack::kUnsloth)
    return frag;
  const bool sharded = DenseStatesSharded(l), recomputes = l.ac != Recompute::kNone;
  // UsageAt never lets the growth fall below the least fragmentation.
  if (LoraLayerCacheKept(ctx)) return 0;  // its forward's cache and the loss's hole are terms of their own
  if (ctx.w.lora_like() && !sharded) return 0.10;
  if (l.ac == Recompute::kSelective && ctx.r.compile) return sharded ? 0 : 0.12;
  if (!sharded) return recomputes ? 0.25 : 0.04;
  if (l.tp * l.cp > 1) return recomputes ? 0.25 : 0.08;
  if (PricesLossHole(ctx)) return recomputes ? 0.06 : 0.05;
  return recomputes ? 0.12 : 0.08;
}

PhaseUsage UsageAt(const StageMemory& s, Phase p, const AllocatorShare& a) {
  PhaseUsage u;
  int64_t rounded = 0, non_torch = 0, freed_kept = 0, held_apart = 0;
  for (const MemoryTerm& t : s.terms) {
    if (p < t.first || p > t.last) continue;
    if (t.pool == Pool::kCached) freed_kept += t.bytes;
    if (t.pool == Pool::kStream || t.pool == Pool::kFragment) held_apart += t.bytes;
    if (!AllocatedOnGpu(t.pool)) continue;
    if (t.pool == Pool::kNonTorch) {
      non_torch += t.bytes;
      continue;
    }
    u.allocated += t.bytes;
    const int64_t each = t.bytes / std::max<int64_t>(1, t.tensors);
    rounded += RoundAllocation(each) * t.tensors;
  }
  const int64_t needed = static_cast<int64_t>(static_cast<double>(rounded) * (1 + a.fragmentation));
  int64_t cached = static_cast<int64_t>(static_cast<double>(rounded) * (1 + std::max(a.fragmentation, a.cache_growth)));
  cached = std::max(cached, rounded + freed_kept) + held_apart;  // grown over, not into
  if (a.capacity_bytes > 0) cached = std::min(cached, a.capacity_bytes - non_torch);
  u.reserved = std::max(needed, cached);
  u.device = u.reserved + non_torch;
  u.required = needed + non_torch;
  return u;
}

StageShape ShapeStage(const MemoryContext& ctx, int stage, const std::vector<int>& stage_layers) {
  const ModelSpec& m = ctx.m;
  const Layout& l = ctx.l;
  StageShape s;
  s.stage = stage;
  s.pp = l.pp;
  s.first = stage == 0;
  s.last = stage == l.pp - 1;
  s.layers = stage_layers[static_cast<size_t>(stage)];
  s.first_layer = std::accumulate(stage_layers.begin(), stage_layers.begin() + stage, 0);
  for (int i = 0; i < s.layers; ++i) {
    const int64_t layer = s.first_layer + i;
    const int64_t adapter = ctx.w.lora_like() ? AdapterParamsPerLayer(m, ctx.w.lora, layer) : 0;
    const int64_t experts = LayerExpertParams(m, layer);
    const int64_t dense = (LayerParams(m, layer) - experts) / l.tp;
    const int64_t exp = experts / (l.ep * l.etp);
    s.dense_params += dense;
    s.expert_params += exp;
    s.layer_params = std::max(s.layer_params, dense + exp);
    s.adapter_params += adapter / l.tp;
    if (!ctx.w.training()) {
      const KeptParams kept = KeptLinearParams(m, l.weights, layer, 1);
      s.kept_params += kept.dense / l.tp + kept.expert / (l.ep * l.etp);
    }
  }
  if (s.first) s.root_params += FirstStageExtraParams(m) / l.tp;
  if (s.last) s.root_params += LastStageExtraParams(m) / l.tp;
  if (s.last && ctx.w.lora_like()) s.adapter_params += HeadAdapterParams(m, ctx.w.lora) / l.tp;
  // Tied embeddings under PP: the last stage keeps its own copy of the word embeddings.
  if (s.last && !s.first && m.tied_embeddings) s.root_params += m.vocab * m.hidden / l.tp;
  s.dense_params += s.root_params;
  if (ctx.w.training()) {
    const int m_count = std::max(1, l.grad_accum);
    s.micro_batches_in_flight = l.pp > 1 ? std::min(l.pp - stage, m_count) : 1;
    // Interleaved 1F1B: rank r runs 2 (pp - r - 1) + (vpp - 1) pp warm-up forwards of one
    // model chunk (1/vpp of its layers) before its first backward, one more in the steady
    // state, never more than the m x vpp chunks there are (Megatron's
    // get_forward_backward_func interleaved schedule; torch.distributed.pipelining's
    // ScheduleInterleaved1F1B._get_warmup_ops, likewise capped). With many micro-batches
    // the first rank holds 1 + (pp - 1) / (pp vpp) times 1F1B's pp; with m = pp, just pp.
    // ZB-V's two chunks keep 1F1B's peak (Qi et al. 2024, "Pipeline Parallelism with
    // Controllable Memory", V-ZB).
    if (l.vpp > 1 && l.pp_schedule != PpSchedule::kZbv) {
      const double chunks = std::min<double>(2.0 * (l.pp - stage - 1) + (l.vpp - 1.0) * l.pp + 1,
                                             static_cast<double>(m_count) * l.vpp);
      s.micro_batches_in_flight = chunks / l.vpp;
    }
  }
  return s;
}

namespace {

// A VLM's vision encoder sits with the embeddings on the first stage, frozen (LLaMA-Factory's
// freeze_vision_tower, its default) and in the checkpoint's dtype: sharded with the other
// weights under ZeRO-3 or FSDP, split over TP when serving (vLLM's Qwen2-VL ViT runs
// tensor-parallel). What images cost to encode depends on how many a batch holds, which the
// workload does not say: not priced.
void AddVisionEncoder(const MemoryContext& ctx, const StageShape& s, std::vector<MemoryTerm>& out) {
  const int64_t params = VisionParams(ctx.m);
  if (params == 0 || !s.first) return;
  const bool training = ctx.w.training();
  const double split = !training ? ctx.l.tp : ctx.l.zero >= 3 ? DenseShardDegree(ctx.l) : 1;
  // Trainers load it as their working weights; serving, as shipped.
  const double bytes = training ? WeightBytes(ctx.w) : DtypeBytes(ctx.m.dtype);
  out.push_back({"vision_encoder", static_cast<int64_t>(bytes * static_cast<double>(params) / split), ctx.m.vision.depth,
                 Phase::kSetup, training ? Phase::kStep : Phase::kForward, Pool::kTorch,
                 "the frozen vision encoder and merger; images' encoding not priced"});
}

}  // namespace

MemoryEstimate EstimateMemory(const ModelSpec& m, const Workload& w, const Layout& l, const ClusterSpec& c,
                              const MemoryOptions& opt) {
  if (TorchtitanMixedPrecisionOff(w, l)) return EstimateMemory(m, WorkloadAsRun(w, l), l, c, opt);
  if (HeadUntiedAsRun(m, w, l)) return EstimateMemory(ModelAsRun(m, w, l), w, l, c, opt);
  MemoryContext ctx{m, w, l, c, ResolveRecipe(m, w, l)};
  MemoryEstimate e;
  e.inference = !w.training();
  e.capacity_bytes = UsableMemory(c.gpu);
  e.headroom_required_bytes = opt.headroom_bytes;
  const double frag = opt.fragmentation >= 0 ? opt.fragmentation : DefaultFragmentation(l, w);
  e.allocator = {frag, opt.fragmentation >= 0 ? frag : DefaultCacheGrowth(ctx, frag), e.capacity_bytes};
  const std::vector<int> layers = StageLayers(m, l);
  std::vector<StageShape> shapes;
  for (int st = 0; st < l.pp; ++st) {
    if (opt.extreme_stages_only && st != 0 && st != l.pp - 1 && l.stages.empty()) continue;
    StageShape shape = ShapeStage(ctx, st, layers);
    StageMemory sm;
    sm.stage = st;
    sm.layers = shape.layers;
    sm.first_layer = shape.first_layer;
    sm.params = shape.dense_params + shape.expert_params;
    sm.unit_params = shape.layer_params;
    AddOverheads(ctx, shape, sm.terms);
    AddVisionEncoder(ctx, shape, sm.terms);
    if (w.training()) {
      AddModelStates(ctx, shape, sm.terms);
      AddActivations(ctx, shape, sm.terms);
      AddBackwardTail(ctx, shape, sm.terms);
    } else {
      AddInference(ctx, shape, sm.terms);
    }
    ComputePeaks(sm, e.allocator);
    if (e.stages.empty() || sm.required_peak > e.fullest().required_peak)
      e.fullest_stage_index = static_cast<int>(e.stages.size());
    e.stages.push_back(std::move(sm));
    shapes.push_back(shape);
  }
  const StageMemory& full = e.fullest();
  const StageShape& full_shape = shapes[static_cast<size_t>(e.fullest_stage_index)];
  e.fullest_stage = full.stage;
  e.headroom_bytes = e.capacity_bytes - full.required_peak;
  e.gpu_fits = full.required_peak <= e.capacity_bytes - e.headroom_required_bytes;
  if (e.inference) e.kv = BudgetInference(ctx, full, full_shape);
  HostAndNvme(ctx, full_shape, e);
  // Host memory or NVMe the cluster does not state is not checked: the answer is about the
  // GPUs, and the bytes offload needs are reported (and said under assumed) for the user to
  // compare. A layout that offloads to NVMe says the nodes have it; the search offers NVMe
  // offload only where the cluster states its capacity.
  e.host_fits = c.host_memory_bytes > 0 ? e.per_node_host_bytes <= c.host_memory_bytes : true;
  e.nvme_fits = c.nvme_bytes > 0 ? e.per_node_nvme_bytes <= c.nvme_bytes : true;
  e.fits = e.gpu_fits && e.host_fits && e.nvme_fits;
  return e;
}

}  // namespace shardplan
