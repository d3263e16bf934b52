// Model states under each framework's sharding: what every GPU keeps for its parameters,
// gradients, master weights and optimizer states, plus the working set of gathered
// parameters, communication buckets and the optimizer step's temporaries.
#include <algorithm>
#include <cmath>

#include "planner/deepspeed_buckets.h"
#include "planner/framework_defaults.h"
#include "planner/memory_terms.h"

namespace shardplan {
namespace {


int64_t B(double bytes) { return static_cast<int64_t>(std::llround(bytes)); }

void Add(std::vector<MemoryTerm>& out, const char* name, double bytes, Phase first, Phase last, const char* source,
         int64_t tensors = 1, Pool pool = Pool::kTorch) {
  if (bytes <= 0) return;
  out.push_back({name, B(bytes), std::max<int64_t>(1, tensors), first, last, pool, source});
}

struct States {
  double params;    // elements on this GPU before sharding (dense + experts, each with its group)
  double dense, experts;
  int nd, ne;       // shard degrees
  double Shard(bool sharded) const {  // elements this GPU keeps when states are sharded
    return sharded ? dense / nd + experts / ne : dense + experts;
  }
};

// An fp32 master copy beside the working weights (mixed precision).
bool MixedPrecision(const MemoryContext& ctx) { return ctx.w.precision != Dtype::kFp32 && ctx.r.master_weights; }
double TrainedBytes(const MemoryContext& ctx) { return shardplan::TrainedBytes(ctx.r, ctx.w); }

void AddOptimizer(const MemoryContext& ctx, double elements, bool offloaded, std::vector<MemoryTerm>& out,
                  bool torch_foreach) {
  if (offloaded) return;
  const double state = OptimizerStateBytes(ctx);
  if (ctx.r.paged_optimizer) {
    // Only the states are paged: their absmax blocks are plain torch tensors on the GPU
    // (optimizer.py init_state: torch.zeros(blocks, device=p.device)). Measured on one H100
    // (bench/data/calibration/l8b-hf-pure-paged8bit-s2k-b4-full), 0.27 GiB more stays
    // allocated from the first step on for Llama-3.1-8B.
    const double scales = ctx.w.galore_rank > 0 ? 0 : OptimizerScaleBytes(ctx.w.optimizer);
    Add(out, "optimizer_states", (state - scales) * elements, Phase::kSetup, Phase::kStep,
        "bitsandbytes paged optimizer: states in CUDA unified memory, evicted to host under pressure", 1, Pool::kPaged);
    if (scales > 0)
      Add(out, "optimizer_state_scales", scales * elements, Phase::kSetup, Phase::kStep,
          "the paged 8-bit states' fp32 absmax per 256 elements, in GPU memory");
  } else
    Add(out, "optimizer_states", state * elements, Phase::kSetup, Phase::kStep,
        "Adam m and v in fp32, 8 B/param (memory-model.md 1.2); 8-bit AdamW 2 B; SGD momentum 4 B; pure bf16 halves 32-bit states");
  // torch's foreach AdamW materialises sqrt(exp_avg_sq) for all local params at once, or per
  // parameter when stepped in backward; which stacks step that way is ResolveRecipe's
  // torch_foreach_step (fused kernels and bitsandbytes hold no whole-size temporary).
  if (torch_foreach && ctx.r.torch_foreach_step) {
    if (ctx.r.optimizer_in_backward)
      Add(out, "optimizer_step_temp", TrainedBytes(ctx) * static_cast<double>(LargestParam(ctx.m)) / ctx.l.tp,
          Phase::kBackward, Phase::kBackward, "optimizer in backward: one parameter's AdamW temporaries at a time");
    else
      Add(out, "optimizer_step_temp", TrainedBytes(ctx) * elements, Phase::kStep, Phase::kStep,
          "torch foreach AdamW: _foreach_sqrt(exp_avg_sq) allocates 4 B x local params (memory-model.md 4.6)");
  }
}

// The gradients a rank holds for `elements` local trained params: all of them until the
// step, or, with the optimizer stepped in each gradient hook (torchtune optimizer_in_bwd),
// only the largest parameter's gradient at a time. Returns the bytes of a whole set held to
// the step and the phase it is first allocated in (none in the hook's case).
struct HeldGradients {
  double bytes = 0;
  Phase first = Phase::kForward;
};
HeldGradients AddGradients(const MemoryContext& ctx, double bytes_per_elem, double elements, double shard,
                           const char* source, std::vector<MemoryTerm>& out) {
  if (ctx.r.optimizer_in_backward) {
    const double one = static_cast<double>(LargestParam(ctx.m)) / ctx.l.tp / std::max(1.0, shard);
    // The head's backward runs inside the loss's when the loss is chunked (each chunk's
    // logits come from their own matmul), so the largest gradient, the head's or the tied
    // embedding's, can already be held there.
    Add(out, "gradients", bytes_per_elem * std::min(one, elements), Phase::kLossBackward, Phase::kBackward,
        "optimizer in backward: a parameter's gradient is freed by its hook right after its step");
    return {};
  }
  // Gradients are created layer by layer as backward frees the activations, so with one
  // micro-batch per step the full set first coexists with the optimizer step, not with the
  // start of backward (where the saved activations and the loss's grads peak). Accumulating
  // over micro-batches keeps the earlier ones' gradients through every later backward.
  const bool grows = ctx.l.grad_accum <= 1 && ctx.l.pp == 1;
  const Phase first = grows ? Phase::kStep : Phase::kLossBackward;
  Add(out, "gradients", bytes_per_elem * elements, first, Phase::kStep, source);
  return {bytes_per_elem * elements, first};
}

}  // namespace

// The end of backward on one unsharded GPU with one micro-batch: AddGradients holds the
// gradients from the step and the activation terms price backward at its start (every saved
// tensor, no gradient). Between the two, the first layer's recomputation and activation
// gradients run beside every other layer's gradients; only that layer's and the untied
// embedding's come after. Measured on one H100, a full fine-tune of Llama-3.1-8B in bf16 with
// paged AdamW (bench/data/calibration/l8b-hf-pure-paged*): 30.80 GiB allocated there, where the
// step holds 29.98. What that moment holds past the step's own allocations (torch's foreach
// AdamW temporaries, which come after) is priced at the step.
void AddBackwardTail(const MemoryContext& ctx, const StageShape& s, std::vector<MemoryTerm>& out) {
  const Layout& l = ctx.l;
  if (!ctx.w.training() || DenseStatesSharded(l)) return;
  // A whole set of gradients first held at the step: AddGradients' one micro-batch without
  // PP (LoRA's adapters hold theirs as adapter_gradients).
  const auto grads = std::find_if(out.begin(), out.end(), [](const MemoryTerm& t) { return t.name == "gradients"; });
  if (grads == out.end() || grads->first != Phase::kStep) return;
  double tail = 0, step_only = 0;
  for (const MemoryTerm& t : out) {
    if (t.pool != Pool::kTorch) continue;
    if (t.first == Phase::kBackward && t.last == Phase::kBackward) tail += static_cast<double>(t.bytes);
    else if (t.first == Phase::kStep && t.name != "gradients") step_only += static_cast<double>(t.bytes);
  }
  const double params = static_cast<double>(std::max<int64_t>(1, s.dense_params + s.expert_params));
  const double embedding = ctx.m.tied_embeddings || !s.first ? 0 : static_cast<double>(CountParams(ctx.m).embedding) / l.tp;
  const double after = static_cast<double>(grads->bytes) * (static_cast<double>(s.layer_params) + embedding) / params;
  const double excess = tail - after - step_only;
  if (excess > 0)
    Add(out, "backward_tail", excess, Phase::kStep, Phase::kStep,
        "the end of backward: the first layer's recomputation and activation gradients beside the other gradients, "
        "past what the step allocates");
}

namespace {

void DeepSpeedStates(const MemoryContext& ctx, const StageShape& s, const States& st, std::vector<MemoryTerm>& out) {
  const Layout& l = ctx.l;
  const double wb = WeightBytes(ctx.w);
  const bool mixed = MixedPrecision(ctx);
  const double sharded = st.Shard(true), full = st.params;
  const bool opt_off = l.offload_optimizer != Offload::kNone;
  const bool param_off = l.offload_params != Offload::kNone;
  const ZeroBuckets b = DeepSpeedBuckets(ctx.m, ctx.w, l);  // the sizes the emitted config writes
  const int64_t bucket = std::min<int64_t>(b.reduce_bucket, static_cast<int64_t>(full));
  // DeepSpeed's gradient partitions and buckets are priced from the loss's backward on: no
  // DeepSpeed run was measured to show which of them its first layers' backward allocates
  // (the H100 runs that split backward in two are FSDP2 and one-GPU loops).
  if (l.zero <= 2) {
    Add(out, "parameters", wb * full, Phase::kSetup, Phase::kStep, "bf16 params, full on every rank (bit16_groups_flat)");
    double grads = l.zero == 2 ? wb * sharded : wb * full;
    Add(out, "gradients", grads, Phase::kLossBackward, Phase::kStep,
        l.zero == 2 ? "ZeRO-2 gradient partition (grads_in_partition), 2P/N" : "ZeRO-0/1: full bf16 grads until the reduce");
    // With bf16 at ZeRO 0/1 (and under the pipeline engine) DeepSpeed runs BF16_Optimizer,
    // which accumulates gradients in full fp32 buffers (bf16_optimizer.py
    // fp32_groups_gradients; BLOOM's chronicles: +4 B/param, not sharded).
    const bool bf16_optimizer = ctx.w.precision == Dtype::kBf16 && l.zero <= 1 && mixed;
    if (bf16_optimizer)
      Add(out, "fp32_grad_accumulation", 4 * full, Phase::kSetup, Phase::kStep,
          "BF16_Optimizer fp32 gradient accumulation buffer, 4 B/param, unsharded");
    // ZeRO-1/2 reduce bucket: ipg_buffer of reduce_bucket_size elements, and a second one
    // with overlap_comm so the next bucket fills while one reduces (stage_1_and_2.py
    // setup_buckets: buf_0, and buf_1 "to avoid data access conflict when overlap_comm").
    if (l.zero >= 1)
      Add(out, "reduce_bucket", wb * bucket * (b.overlap_comm ? 2 : 1), Phase::kLossBackward, Phase::kBackward,
          b.overlap_comm ? "DeepSpeed IPG buckets, 2 x reduce_bucket_size x 2 B (overlap_comm)"
                         : "DeepSpeed IPG bucket, reduce_bucket_size x 2 B");
    const double master_elems = l.zero >= 1 ? sharded : full;
    if (mixed && !opt_off)
      Add(out, "master_weights", 4 * master_elems, Phase::kSetup, Phase::kStep, "fp32 master partition, 4P/N (stage_1_and_2.py)");
    AddOptimizer(ctx, master_elems, opt_off, out, false);
    if (!opt_off)
      Add(out, "optimizer_step_temp", 4 * master_elems, Phase::kStep, Phase::kStep,
          "fp32 gradient partition built at step(), 4P/N (single_grad_partition)");
    // ZeRO-1/2 (stage_1_and_2.py step) builds that fp32 partition as
    // flatten(averaged_gradients).to(fp32): the flattened 16-bit copy lives beside it while
    // the grads_in_partition it was copied from still does. BF16_Optimizer steps on its fp32
    // accumulation buffer instead.
    // A torch foreach AdamW's sqrt(exp_avg_sq) over the fp32 partition comes after that copy
    // is freed (del flat_grad_partition) and beside the fp32 grad: the larger of the two.
    if (ctx.r.deepspeed_foreach_step && !opt_off)
      Add(out, "optimizer_foreach_temp", 4 * master_elems, Phase::kStep, Phase::kStep,
          "torch foreach AdamW (DeepSpeed's client optimizer): sqrt(exp_avg_sq) over the fp32 partition, 4P/N");
    else if (!opt_off && l.zero >= 1 && !bf16_optimizer)
      Add(out, "grad_flatten_copy", wb * master_elems, Phase::kStep, Phase::kStep,
          "flatten(averaged_gradients) before .to(fp32) at step(), 2P/N (stage_1_and_2.py)");
    if (opt_off)
      Add(out, "offload_staging", wb * static_cast<double>(LargestParam(ctx.m)) / l.tp, Phase::kLossBackward, Phase::kStep,
          "temp_grad_buffer_for_gpu_offload: the largest param's gradient in 16 bits (stage_1_and_2.py)");
    return;
  }
  // ZeRO-3 (stage3.py, partition_parameters.py)
  if (!param_off)
    Add(out, "parameters", wb * sharded, Phase::kSetup, Phase::kStep, "ZeRO-3 bf16 parameter partition, 2P/N (ds_tensor)");
  Add(out, "gradients", wb * sharded, Phase::kSetup, Phase::kStep, "ZeRO-3 grad partition buffer, 2P/N (grad_partitions_flat_buffer)");
  if (mixed && !opt_off) Add(out, "master_weights", 4 * sharded, Phase::kSetup, Phase::kStep, "fp32 master partition, 4P/N");
  AddOptimizer(ctx, sharded, opt_off, out, false);
  if (!opt_off) {
    const double sub_group = std::min<double>(sharded, static_cast<double>(b.sub_group_size));
    Add(out, "optimizer_step_temp", 4 * sub_group, Phase::kStep, Phase::kStep,
        "fp32 grad of one sub-group at step, 4 x min(P/N, sub_group_size) (stage3.py)");
    // _prepare_fp32_grad_for_sub_group: flatten(averaged_gradients).to(fp32), so the 16-bit
    // flat copy of the sub-group's grads lives beside the fp32 one; a torch foreach AdamW's
    // sqrt(exp_avg_sq) over the sub-group comes after it is freed.
    if (ctx.r.deepspeed_foreach_step)
      Add(out, "optimizer_foreach_temp", 4 * sub_group, Phase::kStep, Phase::kStep,
          "torch foreach AdamW (DeepSpeed's client optimizer): sqrt(exp_avg_sq) over one sub-group, 4 x min(P/N, sub_group_size)");
    else
      Add(out, "grad_flatten_copy", wb * sub_group, Phase::kStep, Phase::kStep,
          "flatten(averaged_gradients) before .to(fp32) at step(), 2 x min(P/N, sub_group_size) (stage3.py)");
  }
  const double unit = static_cast<double>(s.layer_params);
  const double gathered = std::min<double>(2 * unit + static_cast<double>(b.prefetch_bucket), static_cast<double>(b.max_live_parameters));
  Add(out, "gathered_params", wb * gathered, Phase::kForward, Phase::kBackward,
      "live gathered params: current + prefetch bucket, capped by stage3_max_live_parameters");
  Add(out, "reduce_bucket", wb * static_cast<double>(bucket), Phase::kLossBackward, Phase::kBackward,
      "ZeRO-3 IPG bucket, reduce_bucket_size (hidden^2) x 2 B");
  if (l.shard_group > 0 && l.shard_group < l.dp)
    Add(out, "hpz_secondary_params", wb * full / l.shard_group, Phase::kSetup, Phase::kStep,
        "ZeRO++ hpZ secondary partition, 2P/hpz (memory-model.md 1.3)");
}

// Whether FSDP shards this run's parameters over more than one rank, so that its all-gather
// and reduce-scatter streams run.
bool FsdpSideStreams(const MemoryContext& ctx) {
  const Layout& l = ctx.l;
  return (l.framework == Framework::kFsdp || l.framework == Framework::kTorchtitan) && DenseStatesSharded(l);
}

// FSDP runs its all-gathers and reduce-scatters on streams of their own, and the caching
// allocator keeps blocks per stream: a block freed on one is never handed to a request on
// another. So the reserve holds, beside the compute stream's own, the most each side stream
// ever held (torch/distributed/fsdp/_fully_shard: the all-gather output is allocated on
// all_gather_stream and copied out into the unsharded parameters on the compute stream;
// foreach_reduce allocates the reduce-scatter output on reduce_scatter_stream, and the
// sharded gradients are views of it until zero_grad frees them). On one H100 with
// CALIBRATE_TRACE_EVENTS (bench/calibrate), Llama-3.1-8B over FSDP 8 mapped 4.73 GiB on the
// all-gather stream in fp32 (the root's embeddings and head, 3.91 GiB, with the first layer,
// 0.81, prefetched beside them) and 3.74 GiB on the reduce-scatter stream, its whole fp32
// gradient shard; in bf16 2.41 and 3.74; at TP 4 0.73 and 3.74.
// `gathered_unit` is one layer's all-gather output; `first_gather` the largest that comes
// first (the root, or the embeddings where they are a unit of their own); `grads` the sharded
// gradients and the phase they are first allocated in.
void AddFsdpStreamPools(double gathered_unit, double first_gather, double grads, Phase grads_first,
                        std::vector<MemoryTerm>& out) {
  const double pair = (first_gather > 0 ? first_gather : gathered_unit) + gathered_unit;
  // In forward and backward one unit's output is a gathered unit already priced as allocated.
  Add(out, "all_gather_stream_pool", pair - gathered_unit, Phase::kForward, Phase::kStep,
      "all-gather stream's blocks beyond the unit in flight: the first gather and the unit prefetched beside it",
      1, Pool::kStream);
  Add(out, "all_gather_stream_pool_idle", gathered_unit, Phase::kLoss, Phase::kLossBackward,
      "all-gather stream's blocks while no unit is gathered (loss)", 1, Pool::kStream);
  if (grads_first > Phase::kForward)
    Add(out, "reduce_scatter_stream_pool", grads, Phase::kForward, static_cast<Phase>(static_cast<int>(grads_first) - 1),
        "reduce-scatter stream's blocks, the sharded gradients' once zero_grad has freed them", 1, Pool::kStream);
}

}  // namespace

RootUnit FsdpRootUnit(const MemoryContext& ctx, const StageShape& s) {
  RootUnit u;
  const bool tied = ctx.m.tied_embeddings;  // tied embeddings are the head, and stay in the root
  const double tp = ctx.l.tp;
  if (s.first && !ctx.r.root_keeps_embeddings && !tied) u.embeddings = static_cast<double>(FirstStageExtraParams(ctx.m)) / tp;
  if (s.last && ctx.r.head_own_unit && !tied) u.head = static_cast<double>(CountParams(ctx.m).head) / tp;
  u.kept = static_cast<double>(s.root_params) - u.embeddings - u.head;
  return u;
}

namespace {

void FsdpStates(const MemoryContext& ctx, const StageShape& s, const States& st, std::vector<MemoryTerm>& out) {
  const Layout& l = ctx.l;
  const double wb = WeightBytes(ctx.w);
  const bool offload = l.offload_params != Offload::kNone;
  const bool shard = l.zero >= 2;
  const double local = st.Shard(shard);
  const double pb = TrainedBytes(ctx);
  HeldGradients grads;  // the set the reduce-scatter stream's blocks hold (AddFsdpStreamPools)
  if (!offload) {
    // FSDP2: sharded params are fp32 DTensors and are the master copy (_fully_shard docs);
    // pure bf16 recipes (torchtune, HF on a bf16 checkpoint) keep them in bf16.
    Add(out, "parameters", pb * local, Phase::kSetup, Phase::kStep,
        shard ? "FSDP2 sharded params, 4P/N in fp32 (memory-model.md 3.1), 2P/N pure bf16" : "replicated params (NO_SHARD / DDP / one GPU)");
    grads = AddGradients(ctx, pb, st.Shard(l.zero == 3 || l.zero == 2), shard ? DenseShardDegree(l) : 1,
                 "sharded grads in the params' dtype, alive from backward to zero_grad", out);
    AddOptimizer(ctx, local, false, out, true);
  }
  const double unit = wb * static_cast<double>(s.layer_params);
  if (l.zero == 0) {
    if (AutocastFp32Weights(ctx))
      Add(out, "autocast_weight_cache", wb * st.params, Phase::kForward, Phase::kBackward,
          "autocast caches a bf16 copy of every fp32 weight inside the forward region");
    // One data-parallel rank has nothing to reduce: HF Trainer and torch scripts wrap the
    // model in DDP only when the world is larger than one.
    if (l.dp * l.cp > 1)
      Add(out, "reduce_bucket", static_cast<double>(defaults::kDdpBucketBytes), Phase::kLossBackward, Phase::kBackward,
          "DDP bucket_cap_mb=25");
    return;
  }
  // torchao's float8 all-gather (recipe.h Float8AllGather) gathers the layers' linear weights
  // in float8: 1 byte each. The gradients stay in the params' dtype.
  const double gwb = ctx.r.float8_all_gather ? 1 : wb;
  const double gathered_unit = gwb * static_cast<double>(s.layer_params);
  Add(out, "gathered_units_forward", 3 * gathered_unit, Phase::kForward, Phase::kForward,
      ctx.r.float8_all_gather ? "float8 all-gather output + copy-out of the current unit and the prefetched next, 1 B/param"
                              : "all-gather output + copy-out of the current unit and the prefetched next (memory-model.md 3.2)");
  Add(out, "gathered_units_backward", 3 * gathered_unit + 2 * unit, Phase::kBackward, Phase::kBackward,
      "backward: unsharded params, prefetch, unsharded grads and fp32 reduce-scatter input, about 5 units");
  // The root (embeddings, head) is not resharded after forward (reshard_after_forward None -> False).
  const RootUnit ru = FsdpRootUnit(ctx, s);
  const double embeddings = ru.embeddings;
  const double root = wb * ru.kept;
  // A head of its own is gathered for its forward, resharded, and gathered again when its
  // backward begins; the embeddings' unit runs first in forward and last in backward, beside
  // little else, so it is left out.
  if (ru.head > 0)
    Add(out, "head_unit_gathered", wb * ru.head, Phase::kLoss, Phase::kLossBackward,
        "the output layer, an FSDP unit of its own (custom_sharded_layers): gathered for the head's forward and backward");
  if (ctx.r.root_reshards_after_forward) {
    Add(out, "root_unsharded_params", root, Phase::kForward, Phase::kForward,
        "FSDP2 root gathered through forward and resharded after it (reshard_after_forward=True, honoured from torch 2.8)");
    Add(out, "root_regathered_params", root, Phase::kBackward, Phase::kBackward,
        "FSDP2 root gathered again when backward reaches its output, after the loss's backward");
  } else {
    Add(out, "root_unsharded_params", root, Phase::kForward, Phase::kBackward,
        ctx.r.root_keeps_embeddings ? "FSDP2 root module keeps its gathered params from forward to backward"
                                    : "FSDP keeps the gathered norm and head from forward to backward; the embeddings reshard");
  }
  // Forward and backward price it among the gathered units; between them it is extra.
  if (ctx.r.last_unit_kept)
    Add(out, "last_unit_kept", unit, Phase::kLoss, Phase::kLossBackward,
        "torchtitan before 2025-07-28 leaves the last block gathered after forward (its backward runs first)");
  // torchtitan's pipeline schedules turn gradient sync off until the last micro-batch, so
  // FSDP2 accumulates unsharded gradients in reduce_dtype (fp32): 4 B per stage param
  // (memory-model.md 3.2, "gradient accumulation without sync").
  // AutoModel leaves the experts out of FSDP (ignored_params) when expert parallelism leaves
  // nothing to shard them over (ep_shard mesh of size 1, components/moe/parallelizer.py
  // apply_fsdp): they are never gathered, and their grads accumulate as plain .grad in the
  // gradients term.
  const bool experts_outside = l.stack == Stack::kAutomodel && l.ep > 1 && st.ne == 1;
  const double managed = experts_outside ? st.dense : st.params;
  // An interleaved schedule of one round (torch.distributed.pipelining's
  // ScheduleInterleaved1F1B runs max(1, m / pp) rounds: m <= pp) runs every warm-up forward,
  // then each local stage's backwards together, the last stage's first: that stage's last backward
  // reduce-scatters and frees its grads before the next stage's first allocates its own. At
  // the peak (the first backward, every activation held) only the last local stage's grads
  // are unsharded. torchtitan's Llama 3.1 405B on 512 H100s (FSDP 8, TP 8, PP 8, 8
  // micro-batches): 72.7 GiB reserved interleaved (two stages a rank), 82.5 under 1F1B
  // (benchmarks/llama3_h100_202412_torchtitan.md, Table 5).
  if (l.framework == Framework::kTorchtitan && l.pp > 1 && l.grad_accum > 1) {
    const bool one_round = l.vpp > 1 && l.pp_schedule == PpSchedule::k1f1b && l.grad_accum <= l.pp;
    const double root = static_cast<double>(s.root_params);
    const double held = one_round ? (managed - root) / l.vpp + (s.last ? root : 0) : managed;
    Add(out, "unsharded_grads_no_sync", 4 * held, Phase::kLossBackward, Phase::kStep,
        one_round ? "FSDP2 no-sync gradient accumulation, fp32: one round of interleaving holds the last local "
                    "stage's at a time"
                  : "FSDP2 no-sync gradient accumulation across pipeline micro-batches, fp32");
  }
  if (!l.reshard_after_forward || l.zero == 2)
    Add(out, "unsharded_params_kept", gwb * (managed - static_cast<double>(s.root_params)), Phase::kForward,
        Phase::kBackward, ctx.r.float8_all_gather ? "reshard_after_forward=False keeps the gathered float8 weights, 1 B/param"
                                                  : "reshard_after_forward=False / SHARD_GRAD_OP keeps 2P of bf16 params (memory-model.md 7.1)");
  if (l.shard_group > 0 && l.shard_group < l.dp)
    Add(out, "replicate_allreduce_buffer", 4 * local / 8, Phase::kBackward, Phase::kBackward,
        "HSDP: all-reduce of the reduce-scattered shard across replicas (bucketed)");
  if (FsdpSideStreams(ctx) && !offload) {
    AddFsdpStreamPools(gathered_unit, std::max(root, wb * embeddings), grads.bytes, grads.first, out);
  }
}

void MegatronStates(const MemoryContext& ctx, const StageShape& s, const States& st, std::vector<MemoryTerm>& out) {
  (void)s;
  const Layout& l = ctx.l;
  const double wb = WeightBytes(ctx.w);
  const bool dist = l.zero >= 1;
  Add(out, "parameters", wb * st.params, Phase::kSetup, Phase::kStep, "bf16 params, full (theoretical_memory_usage.py)");
  // bf16 turns on accumulate_allreduce_grads_in_fp32 (megatron/training/arguments.py);
  // grad_reduce_in_fp32: false (NeMo's and Megatron-Bridge's performance recipes) halves it.
  const double gb = ctx.r.pure_low_precision ? TrainedBytes(ctx) : ctx.r.main_grad_bytes;
  Add(out, "gradients", gb * st.params, Phase::kSetup, Phase::kStep,
      gb >= 4 ? "main-grad buffer, 4 B/param in fp32, full (dist_optimizer.md)"
              : "main-grad buffer in bf16, 2 B/param, full (grad_reduce_in_fp32=False)");
  const double opt_elems = st.Shard(dist);
  const bool off = l.offload_optimizer != Offload::kNone;
  if (MixedPrecision(ctx) && !off)
    Add(out, "master_weights", 4 * opt_elems, Phase::kSetup, Phase::kStep,
        dist ? "fp32 main params sharded by the distributed optimizer, 4P/d" : "fp32 main params, 4P");
  AddOptimizer(ctx, opt_elems, off, out, false);
}

void LoraStates(const MemoryContext& ctx, const StageShape& s, const States& st, std::vector<MemoryTerm>& out) {
  const Layout& l = ctx.l;
  const bool qlora = ctx.w.task == Task::kQlora;
  const bool shard = ((l.framework == Framework::kFsdp || l.framework == Framework::kTorchtitan) && l.zero >= 2) ||
                     (l.framework == Framework::kDeepSpeed && l.zero == 3);
  const double base = st.Shard(shard);
  const double root = static_cast<double>(s.root_params) / (shard ? DenseShardDegree(l) : 1);
  const bool base_offloaded = shard && l.offload_params != Offload::kNone;
  if (qlora) {
    // A quantized head (LitGPT) is NF4 with the layers; the embeddings stay 16-bit.
    const double vocab_by_hidden = static_cast<double>(ctx.m.vocab) * static_cast<double>(ctx.m.hidden) / l.tp;
    const double head = ctx.r.quantized_head && s.last && !ctx.m.tied_embeddings
                            ? vocab_by_hidden / (shard ? DenseShardDegree(l) : 1)
                            : 0;
    if (!base_offloaded)  // else the 4-bit base lives in host memory (FSDP cpu_offload, PEFT's QLoRA + FSDP recipe)
      Add(out, "frozen_base_weights",
          Nf4BaseBytes(ctx.w) * (base - root + head) + (ctx.r.kbit_fp32_embeddings ? 4 : 2) * (root - head),
          Phase::kSetup, Phase::kStep,
          (std::string("NF4 base, block 64 + double-quant scales (memory-model.md 5.1); ") +
              (head > 0                           ? "head NF4 too, embeddings bf16"
               : ctx.r.kbit_fp32_embeddings      ? "embeddings and head fp32 (prepare_model_for_kbit_training)"
                                                 : "embeddings and head bf16"))
              .c_str());
    // The fp32 head under fp16 autocast: the matmul's fp16 cast of the weight is what its
    // input gradient reads, so it lives from the loss's forward to its backward.
    if (ctx.r.kbit_fp32_embeddings && s.last && !base_offloaded)
      Add(out, "head_autocast_copy", 2.0 * static_cast<double>(ctx.m.vocab) * static_cast<double>(ctx.m.hidden) / l.tp,
          Phase::kLoss, Phase::kLossBackward, "fp16 autocast copy of the fp32 head, saved for the logits' input gradient");
    // The largest weight bitsandbytes dequantizes: an MLP projection, or a quantized head,
    // which LitGPT runs per 128-token chunk, dequantizing it whole each time.
    const double layer_weight = static_cast<double>(ctx.m.hidden) * std::max(ctx.m.intermediate, ctx.m.hidden) / l.tp;
    const double dequantized = 2.0 * std::max(layer_weight, head > 0 ? vocab_by_hidden : 0.0);
    Add(out, "dequantized_weight", dequantized, Phase::kForward, Phase::kBackward,
        head > 0 ? "bitsandbytes dequantizes one weight to bf16 per matmul, the head's the largest"
                 : "bitsandbytes dequantizes one weight to bf16 per matmul");
  } else if (!base_offloaded) {
    Add(out, "frozen_base_weights", (ctx.r.frozen_base_fp32 ? 4 : WeightBytes(ctx.w)) * base, Phase::kSetup, Phase::kStep,
        ctx.r.frozen_base_fp32 ? "frozen fp32 base weights (cast to bf16 per matmul under autocast)" : "frozen bf16 base weights");
  }  // else ZeRO-3 / FSDP parameter offload: the base lives in host memory, gathered per unit
  // A sharded 4-bit base is gathered per unit like any other (PEFT's QLoRA under FSDP or
  // ZeRO-3 stores the NF4 blocks in bnb_4bit_quant_storage so they flatten and gather;
  // torchtune's NF4 tensors are FSDP2 shards).
  const double gathered_unit =
      (qlora ? Nf4BaseBytes(ctx.w) : WeightBytes(ctx.w)) * static_cast<double>(s.layer_params);
  if (shard)
    Add(out, "gathered_units_forward", 3.0 * gathered_unit, Phase::kForward, Phase::kBackward,
        "FSDP unit all-gather and prefetch of the frozen base");
  // The adapters' gradients are too few to matter on the reduce-scatter stream.
  if (FsdpSideStreams(ctx) && !base_offloaded) AddFsdpStreamPools(gathered_unit, 0, 0, Phase::kForward, out);
  // The adapters are sharded like any trained parameter: FSDP (torchtune's
  // lora_finetune_distributed, PEFT under accelerate) shards every parameter of a wrapped
  // layer, the adapters' gradients and, with them, their optimizer states. DeepSpeed
  // partitions the optimizer states from stage 1 and the gradients from stage 2; at stage 3
  // it keeps parameters below stage3_param_persistence_threshold (10 x hidden under HF's
  // "auto") whole on every rank, which most LoRA factors are (r x hidden at the usual ranks),
  // so their parameters are taken unpartitioned.
  const bool fsdp = l.framework == Framework::kFsdp || l.framework == Framework::kTorchtitan;
  const bool deepspeed = l.framework == Framework::kDeepSpeed;
  const double degree = std::max(1, DenseShardDegree(l));
  auto over = [&](bool sharded) { return sharded ? degree : 1.0; };
  const double a = static_cast<double>(s.adapter_params);
  const double ab = ctx.r.adapter_bytes;
  const double a_params = a / over(fsdp && l.zero >= 3);
  const double a_grads = a / over((fsdp || deepspeed) && l.zero >= 2);
  const double a_states = a / over((fsdp && l.zero >= 2) || (deepspeed && l.zero >= 1));
  // FSDP's CPU offload keeps the sharded parameters and their gradients in host memory and
  // steps the optimizer there; DeepSpeed's offload_optimizer moves the states.
  if (fsdp && base_offloaded) return;
  Add(out, "adapter_params", ab * a_params, Phase::kSetup, Phase::kStep,
      "LoRA A/B in fp32 (peft autocast_adapter_dtype); torchtune keeps them in its bf16 dtype; sharded with the layer");
  Add(out, "adapter_gradients", ab * a_grads, l.grad_accum > 1 ? Phase::kLossBackward : Phase::kBackward, Phase::kStep,
      "adapter grads in the adapters' dtype, reduce-scattered where gradients are sharded");
  AddOptimizer(ctx, a_states, deepspeed && l.offload_optimizer != Offload::kNone, out, l.framework != Framework::kDeepSpeed);
}

}  // namespace

bool AutocastFp32Weights(const MemoryContext& ctx) {
  const Framework f = ctx.l.framework;
  return ctx.w.training() && !ctx.w.lora_like() && (f == Framework::kFsdp || f == Framework::kTorchtitan) &&
         ctx.l.zero == 0 && MixedPrecision(ctx);
}

double OptimizerScaleBytes(Optimizer o) {
  // bitsandbytes' blockwise 8-bit optimizers keep one fp32 absmax per 256-element block of
  // each uint8 state (2048 before v0.44, PR #1365: optim/optimizer.py init_state).
  constexpr double kAbsmax = 4.0 / 256;
  switch (o) {
    case Optimizer::kAdamW8bit: return 2 * kAbsmax;
    case Optimizer::kLion8bit: return kAbsmax;
    case Optimizer::kAdemamix8bit: return 3 * kAbsmax;
    default: return 0;
  }
}

double OptimizerStateBytes(Optimizer o, const ModelSpec& m) {
  const int64_t hidden = m.hidden;
  switch (o) {
    case Optimizer::kAdamW:
    case Optimizer::kAdam: return 8;        // m and v, fp32
    case Optimizer::kAdamW8bit: return 2 + OptimizerScaleBytes(o);  // bnb: 2 x uint8 + their absmax
    case Optimizer::kSgd: return 0;
    case Optimizer::kSgdMomentum: return 4;  // momentum buffer, fp32
    case Optimizer::kLion: return 4;         // one momentum, fp32
    case Optimizer::kMuon: {
      // One fp32 momentum per hidden matrix; the embeddings, the head and the norms step
      // under AdamW (m and v) as every Muon implementation sets them apart.
      const ParamCounts c = CountParams(m);
      const double adamw = static_cast<double>(c.embedding + c.position + c.head + c.norms);
      const double total = static_cast<double>(std::max<int64_t>(c.total, 1));
      return (4 * (total - adamw) + 8 * adamw) / total;
    }
    case Optimizer::kAdafactor:              // factored second moment: (rows + cols) x 4 B per matrix
      return 2.0 * 4 / static_cast<double>(std::max<int64_t>(hidden, 1));
    // bitsandbytes 8-bit states: a uint8 per element and its absmax (OptimizerScaleBytes).
    case Optimizer::kLion8bit: return 1 + OptimizerScaleBytes(o);
    case Optimizer::kAdemamix8bit: return 3 + OptimizerScaleBytes(o);
    case Optimizer::kRmsprop:                // square_avg, fp32 (momentum 0, torch's default)
    case Optimizer::kAdagrad: return 4;      // state_sum, fp32
    case Optimizer::kAdemamix: return 12;    // m1 (fast), m2 (slow EMA) and nu, fp32
    // torchao AdamW4bit: m and v in 4 bits with an fp32 scale per 128-element block.
    case Optimizer::kAdamW4bit: return 2 * (0.5 + 4.0 / 128);
  }
  return 8;
}

// GaLore (Zhao et al. 2024, "GaLore: Memory-Efficient LLM Training by Gradient Low-Rank
// Projection"; galore_torch's GaLoreProjector, proj_type "std"): each targeted weight's
// gradient is projected onto rank r along its shorter side, so the optimizer keeps its states
// on the max(rows, cols) x r projection and the projector holds the min(rows, cols) x r
// basis; every other parameter (embeddings, head, norms, routed experts, which transformers
// keeps as grouped tensors rather than nn.Linear) keeps the full states. Targeted: attention
// projections, dense MLPs and shared experts, as optim_target_modules ["attn", "mlp"] and
// "all-linear" select in decoder layers. Per trained element: the states in the optimizer's
// own bytes (fp32, or bitsandbytes' 8-bit), and the projector's elements, which take the
// gradient's dtype.
GaloreShare GaloreStates(Optimizer o, const ModelSpec& m, int64_t rank) {
  const double base = OptimizerStateBytes(o, m);
  double targeted = 0, bytes = 0, projector = 0;
  auto add = [&](double rows, double cols, double count) {
    if (rows <= 0 || cols <= 0 || count <= 0) return;
    const double lo = std::min(rows, cols), hi = std::max(rows, cols), r = std::min(static_cast<double>(rank), lo);
    // Adafactor factors the projection's second moment: a row and a column.
    const double states = o == Optimizer::kAdafactor ? 4 * (hi + r) : base * hi * r;
    bytes += count * states;
    projector += count * lo * r;
    targeted += count * rows * cols;
  };
  const double h = static_cast<double>(m.hidden), up = m.mlp == MlpKind::kGated ? 2 : 1;
  for (int64_t layer = 0; layer < m.layers; ++layer) {
    if (m.has_attention(layer)) {
      add(h, static_cast<double>(m.q_width()), 2);  // q and o
      add(h, static_cast<double>(m.kv_width()), 2);
    }
    if (!m.has_ffn(layer)) continue;
    if (!m.is_moe_layer(layer)) add(h, static_cast<double>(m.intermediate), up + 1);
    else if (m.shared_experts > 0) add(h, static_cast<double>(m.shared_experts * m.shared_intermediate), up + 1);
  }
  const double total = static_cast<double>(std::max<int64_t>(CountParams(m).total, 1));
  return {(bytes + base * std::max(0.0, total - targeted)) / total, projector / total};
}

double OptimizerStateBytes(const MemoryContext& ctx) {
  const GaloreShare galore = ctx.w.galore_rank > 0 ? GaloreStates(ctx.w.optimizer, ctx.m, ctx.w.galore_rank)
                                                   : GaloreShare{OptimizerStateBytes(ctx.w.optimizer, ctx.m), 0};
  const double state = galore.states;
  const double projector = galore.projector * TrainedBytes(ctx);
  const bool quantized = QuantizedStates(ctx.w.optimizer);
  // Pure low precision: states are created like the parameters (torch.optim zeros_like), so
  // 32-bit optimizers keep them in bf16; LoRA adapters follow the adapters' dtype.
  // bitsandbytes does not: its 32-bit classes, which are the only ones that page, allocate
  // state1 and state2 as float32 whatever the parameter's dtype (Optimizer2State.init_state:
  // optim_bits 32 -> dtype torch.float32; bitsandbytes/optim/optimizer.py).
  const bool low = ctx.w.lora_like() ? ctx.r.adapter_bytes < 4 : ctx.r.pure_low_precision;
  const bool like_params = !quantized && !ctx.r.paged_optimizer;
  return (low && like_params ? state / 2 : state) + projector;
}

int DenseShardDegree(const Layout& l) {
  if (l.framework == Framework::kMegatron) return l.dp * l.cp;  // distributed optimizer spans dp x cp
  if (l.framework == Framework::kTorchtitan) return (l.shard_group > 0 ? l.shard_group : l.dp) * l.cp;
  return l.shard_degree();
}

int ExpertShardDegree(const Layout& l) {
  const int dense = DenseShardDegree(l);
  return std::max(1, dense * l.tp / (l.ep * l.etp));  // expert data parallel = dp x cp x tp / (ep x etp)
}

void AddModelStates(const MemoryContext& ctx, const StageShape& s, std::vector<MemoryTerm>& out) {
  States st{static_cast<double>(s.dense_params + s.expert_params), static_cast<double>(s.dense_params),
            static_cast<double>(s.expert_params), DenseShardDegree(ctx.l), ExpertShardDegree(ctx.l)};
  if (ctx.w.lora_like()) return LoraStates(ctx, s, st, out);
  switch (ctx.l.framework) {
    case Framework::kDeepSpeed: return DeepSpeedStates(ctx, s, st, out);
    case Framework::kFsdp:
    case Framework::kTorchtitan: return FsdpStates(ctx, s, st, out);
    // zero=2/3 under Megatron is Megatron-FSDP (--use-megatron-fsdp): FSDP2-style sharding.
    case Framework::kMegatron: return ctx.l.zero >= 2 ? FsdpStates(ctx, s, st, out) : MegatronStates(ctx, s, st, out);
  }
}

}  // namespace shardplan
