// The parts of the memory model, one file each; memory_model.cc assembles them per stage.
// Every function appends named terms (MemoryTerm) with their lifetimes.
#pragma once

#include <vector>

#include "planner/memory_model.h"
#include "planner/recipe.h"

namespace shardplan {

// What one GPU of one pipeline stage holds of the model, before ZeRO/FSDP sharding.
struct StageShape {
  int stage = 0;
  int pp = 1;
  int first_layer = 0;        // global index of the first layer on this stage
  int layers = 0;             // layers on this stage (per rank, all virtual chunks together)
  int64_t dense_params = 0;   // params on this GPU that every expert-less rank holds (after TP)
  int64_t expert_params = 0;  // routed-expert params on this GPU (after EP x ETP)
  int64_t layer_params = 0;   // largest layer's params on this GPU (an FSDP unit / gathered unit)
  int64_t root_params = 0;    // embeddings + head on this GPU (FSDP root unit)
  int64_t adapter_params = 0; // LoRA adapter params on this GPU
  int64_t kept_params = 0;    // serving as shipped: linear params the checkpoint keeps 16-bit
  bool first = false, last = false;
  // Micro-batches' activations held at the peak: 1F1B's min(pp - stage, m), or interleaving's
  // warm-up chunks over vpp.
  double micro_batches_in_flight = 1;
};

struct MemoryContext {
  const ModelSpec& m;
  const Workload& w;
  const Layout& l;
  const ClusterSpec& c;
  TrainingRecipe r{};  // ResolveRecipe(m, w, l); the default is mixed precision, no extras
};

StageShape ShapeStage(const MemoryContext& ctx, int stage, const std::vector<int>& stage_layers);

// Parameters, gradients, master weights, optimizer states and their step temporaries,
// gathered units and communication buckets (model_states.cc).
void AddModelStates(const MemoryContext& ctx, const StageShape& s, std::vector<MemoryTerm>& out);
// Saved activations, recomputation, logits and loss (activations.cc).
void AddActivations(const MemoryContext& ctx, const StageShape& s, std::vector<MemoryTerm>& out);
// The end of backward where it holds more than the step (model_states.cc), after both above.
void AddBackwardTail(const MemoryContext& ctx, const StageShape& s, std::vector<MemoryTerm>& out);
// Whether the eager loss's freed bf16 logits are priced as a term of their own
// (logits_freed_hole, pool fragment) rather than left in the cache's growth.
bool PricesLossHole(const MemoryContext& ctx);
// Whether a LoRA run on one GPU with recomputation holds its forward's freed layer blocks
// through the loss (forward_layer_cache, pool fragment) in place of a growth of the cache.
bool LoraLayerCacheKept(const MemoryContext& ctx);
// Working-weight bytes per element in training (what the forward reads): fp32 runs 4, every
// lower precision keeps 16-bit weights (fp8 quantizes on the fly).
inline double WeightBytes(const Workload& w) { return w.precision == Dtype::kFp32 ? 4 : 2; }
// Bytes of a QLoRA base weight: NF4 with double-quantized block scales unless the workload
// turns that off, which keeps an fp32 absmax per block of 64.
inline double Nf4BaseBytes(const Workload& w) {
  return w.double_quant == Setting::kOff ? 0.5 + 4.0 / 64 : QuantizedBytesPerParam(Dtype::kNf4);
}
// Bytes of a trained parameter or its gradient as the optimizer sees it: fp32 under mixed
// precision, the working dtype when training is pure low precision.
inline double TrainedBytes(const TrainingRecipe& r, const Workload& w) {
  return r.pure_low_precision ? WeightBytes(w) : 4;
}

// The forward runs on fp32 weights under bf16/fp16 autocast: one GPU or DDP (no FSDP
// parameter cast) with fp32 master weights, a full fine-tune or pretraining. autocast then
// caches a low-precision copy of each weight, and the residual stream stays fp32.
bool AutocastFp32Weights(const MemoryContext& ctx);
// Serving: the bytes of this GPU's weights in the layout's format (inference_memory.cc).
double ServedWeightBytes(const MemoryContext& ctx, const StageShape& s);
// CUDA context, NCCL communicators, cuBLAS workspaces (overheads.cc).
void AddOverheads(const MemoryContext& ctx, const StageShape& s, std::vector<MemoryTerm>& out);
// Inference: weights by format, KV cache, workspace (inference_memory.cc).
void AddInference(const MemoryContext& ctx, const StageShape& s, std::vector<MemoryTerm>& out);
InferenceMemory BudgetInference(const MemoryContext& ctx, const StageMemory& stage, const StageShape& s);

// Activation bytes of one layer for one micro-batch on this GPU, by recomputation mode.
int64_t LayerActivationBytes(const MemoryContext& ctx, int64_t layer, Recompute ac);
// KV cache bytes per token on this GPU for the stage's layers.
int64_t KvBytesPerToken(const MemoryContext& ctx, const StageShape& s);
// A hybrid's Mamba-2 conv and SSM state per sequence on this stage, per TP rank (0 without Mamba blocks).
int64_t RecurrentStateBytesPerSequence(const ModelSpec& m, const StageShape& s, int tp);

// Bytes per element of optimizer state for the optimizer (fp32 states unless 8-bit), averaged
// over the model's parameters where the optimizer treats them differently (Adafactor's
// factored matrices, Muon's AdamW-stepped embeddings and norms).
double OptimizerStateBytes(Optimizer o, const ModelSpec& m);
// Of those, the fp32 block scales of bitsandbytes' 8-bit states (0 for other optimizers).
double OptimizerScaleBytes(Optimizer o);
// The same under the run's recipe: pure low-precision training keeps 32-bit optimizers'
// states in the parameters' dtype (torch.optim creates them like the parameter).
double OptimizerStateBytes(const MemoryContext& ctx);
// GaLore per trained element for `o` at projection rank `rank`: state bytes in the optimizer's
// own units, and projector elements (stored in the gradient's dtype).
struct GaloreShare {
  double states = 0, projector = 0;
};
GaloreShare GaloreStates(Optimizer o, const ModelSpec& m, int64_t rank);
// Framework's fragmentation of reserved over allocated (memory-model.md 4.4: 5-15%).
double DefaultFragmentation(const Layout& l, const Workload& w);
// What the cache grows to past it when memory allows (memory_model.cc gives the measurements).
double DefaultCacheGrowth(const MemoryContext& ctx, double frag);

// FSDP's root unit on this stage, in params on this GPU: what it keeps gathered, and the
// embeddings and the head where they are units of their own instead (torchtitan from
// 2025-07-28: the embeddings; torchtune's custom_sharded_layers: either or both).
struct RootUnit {
  double kept = 0, embeddings = 0, head = 0;
};
RootUnit FsdpRootUnit(const MemoryContext& ctx, const StageShape& s);

// The group that shards dense model states (ZeRO/FSDP/distributed optimizer).
int DenseShardDegree(const Layout& l);
// Whether ZeRO-2/3 or FSDP shards the dense states over more than one rank.
inline bool DenseStatesSharded(const Layout& l) { return l.zero >= 2 && DenseShardDegree(l) > 1; }
// The group that shards expert model states (expert data parallel).
int ExpertShardDegree(const Layout& l);

}  // namespace shardplan
