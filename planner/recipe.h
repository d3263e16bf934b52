// TrainingRecipe: the precision and memory recipe a training run follows, resolved from the
// workload's keys and, where the user left one to the framework, from what the framework the
// layout names does by default. Every default taken is listed in `assumed`, so the output
// can say which recipe was priced. Pure: no I/O.
#pragma once

#include <string>
#include <vector>

#include "planner/layout.h"
#include "planner/model_spec.h"
#include "planner/workload.h"
#include "topology/cluster_spec.h"

namespace shardplan {

struct TrainingRecipe {
  bool master_weights = true;        // an fp32 master copy beside low-precision working weights
  bool pure_low_precision = false;   // weights, grads and optimizer states all in `precision`
  bool optimizer_in_backward = false;// each parameter stepped in its grad hook; no grad buffer
  bool paged_optimizer = false;      // optimizer states in CUDA unified memory (bitsandbytes paged)
  bool activation_offload = false;   // saved activations streamed to pinned host memory
  LossKind loss = LossKind::kStandard;
  bool compile = false;              // torch.compile of the blocks
  bool flash_attention = true;       // fused attention; false: the s x s softmax is saved
  double adapter_bytes = 4;          // bytes per LoRA adapter element (peft upcasts to fp32)
  bool quantized_head = false;       // a 4-bit base quantizes the output head too (LitGPT's
                                     // BitsandbytesPrecision replaces every Linear)
  bool frozen_base_fp32 = false;     // a LoRA run's frozen base stays fp32 (LitGPT's bf16-mixed)
  double main_grad_bytes = 4;        // Megatron's main-grad buffer and its reduction, per element
  bool deepspeed_foreach_step = false;  // DeepSpeed steps a torch foreach AdamW on its fp32 partition
  bool torch_foreach_step = false;   // outside DeepSpeed and Megatron: torch's foreach AdamW, whose
                                     // sqrt(exp_avg_sq) spans every local param at the step
  bool root_keeps_embeddings = true; // FSDP's root keeps the gathered embeddings from forward to
                                     // backward beside the head (torchtitan before 2025-07-28)
  bool root_reshards_after_forward = false;  // FSDP2's root frees its gathered params after forward
                                     // and gathers them again when backward reaches it (torch 2.8+
                                     // with an explicit reshard_after_forward=True on the root)
  bool head_own_unit = false;        // the head is an FSDP unit of its own, gathered for its forward
                                     // and again for its backward (torchtune's custom_sharded_layers)
  bool last_unit_kept = false;       // the last block stays gathered from forward to its backward
                                     // (torchtitan before 2025-07-28)
  bool float8_all_gather = false;    // FSDP gathers the float8 linears' weights in float8
                                     // (Float8AllGather below)
  // QLoRA on transformers through peft's prepare_model_for_kbit_training, which casts every
  // 16-bit parameter that is not a 4-bit block to fp32: the norms' weights among them, so each
  // norm's output is fp32 (Llama's, Qwen's, Mistral's RMSNorm multiply by the weight last;
  // Gemma's and OLMo 2's cast back to their input's dtype), every bitsandbytes 4-bit Linear
  // casts its output back to its fp32 input's dtype, and the residual stream runs in fp32 from
  // the first MLP on.
  bool kbit_prepared = false;
  // ... and the embeddings and head stay fp32 too: TRL's SFTTrainer casts them back to bf16
  // for bf16 runs (peft_module_casting_to_bf16), not for fp16 ones.
  bool kbit_fp32_embeddings = false;
  // Whether the preparation leaves the residual stream fp32: on transformers' own modules
  // (not a hybrid's mixers), where the norm applies its fp32 weight last, or where fp32
  // embeddings start the stream in fp32 (a norm that casts back to its input's dtype then
  // casts to fp32). Gemma's and OLMo 2's norms on bf16 embeddings leave it bf16, and with it
  // every Linear's input: bitsandbytes has no cast to make around them.
  bool kbit_fp32_stream = false;
  // transformers' loss before v4.49 copies the shifted fp32 logits (WholeLogitBytes).
  bool shifted_logits_copy = false;
};

// What vLLM's startup profile runs before it sizes the KV pool: a forward over `tokens`
// (--max-num-batched-tokens) and a sampler pass over `sequences` (max_num_seqs). V1 (vLLM
// 0.8.0 on) profiles 8,192 tokens and, on cards of 70 GiB and more other than the A100, 1,024
// sequences; V0 profiled max_model_len tokens (at least 2,048) up to 32k, and 256 sequences.
// With no release stated the larger of the two is taken, and `assumed` (may be null) says so
// where they differ.
struct ServingProfile {
  int64_t tokens = 0;
  int64_t sequences = 0;
};
ServingProfile ResolveServingProfile(const Workload& w, const GpuSpec& gpu, std::vector<std::string>* assumed = nullptr);

// Chunks torchtune's CEWithChunkedOutputLoss splits the logits into (num_output_chunks=8,
// torchtune/modules/loss/ce_chunked_output_loss.py).
constexpr int kLossChunks = 8;

// torchtitan with torch.compile and neither `loss:` nor a release stated: releases since
// 2025-04-02 compile the loss with the model (components/loss.py), earlier ones ran it eager,
// and the recipe prices the eager one. The estimate says when the compiled one would fit.
bool LossCompiledByRelease(const Workload& w, const Layout& l);
// Unsloth with neither `loss:` nor a release stated: releases since 2024-11-21 run Cut
// Cross-Entropy, earlier ones held the whole logits, and the recipe prices those.
bool LossFusedByRelease(const Workload& w, const Layout& l);

// The float8 scaling a run uses: the workload's fp8_recipe, or the framework's default. For
// torchtitan that is tensorwise until its float8 linears went rowwise-only (2026-04-27), and
// tensorwise when the release is not stated. Read by the time model (float8 TP all-gathers)
// and the torchtitan config writer (recipe_name).
Fp8Recipe ResolvedFp8Recipe(const Workload& w, const Layout& l);
// The same for a run on torchtitan, whatever framework the plan's layout names (the config
// writer's question).
Fp8Recipe TorchtitanFp8Recipe(const Workload& w);

// torchao's float8 FSDP all-gather (torchtitan's enable_fsdp_float8_all_gather): under tensorwise
// scaling FSDP2 casts each float8 linear's weight shard to float8 before the all-gather
// (torchao float8/fsdp_utils.py, WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather), so
// gathered weights, and those kept gathered, hold 1 byte per element; embeddings, norms and
// the output projection (filter_fqns) gather in bf16. torchtitan's bare default is off, but
// its float8 docs, its Llama 3.1 405B config (train_configs/llama3_405b.toml) and torchao's
// tensorwise benchmarks turn it on, as the configs shardplan writes do; rowwise scaling
// refuses it. So it is on for a sharded tensorwise run unless the workload says
// fp8_all_gather: off. The first form is the config writer's question, `sharded` being
// whether FSDP shards the weights; the second the memory and time models'.
bool TorchtitanFloat8AllGather(const Workload& w, bool sharded);
bool Float8AllGather(const Workload& w, const Layout& l);

// Layers whose GEMMs stay BF16 in an fp8 or nvfp4 Megatron run (--first-last-layers-bf16 with
// --num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16): the workload's bf16_layers, else
// Megatron-Bridge's Nemotron 3 Super NVFP4 preset, which its performance recipes run, with its
// last 14 layers in BF16 from 2026-03-25 (defaults::kNemotron3SuperNvfp4Bf16Tail), else none.
// Read by the time model (those layers' GEMMs at the BF16 rate) and the Megatron args writer.
struct Bf16Layers {
  int start = 0, end = 0;
  int count() const { return start + end; }
};
Bf16Layers LowPrecisionBf16Layers(const ModelSpec& m, const Workload& w, const Layout& l);

// Megatron's main grads in fp32 (grad_reduce_in_fp32; arguments.py turns
// accumulate_allreduce_grads_in_fp32 on under bf16). NeMo's and Megatron-Bridge's
// performance recipes, which their published tables run, turn it off: bf16 grads. Read by
// the memory model (the grad buffer) and the time model (the bytes data parallelism reduces).
bool MegatronGradsFp32(const Workload& w, const Layout& l);

// Whether attention runs a fused (flash) kernel. Megatron-DeepSpeed's default is its fused
// scale-mask-softmax, which materializes the s x s scores (flash only with --use-flash-attn,
// megatron/arguments.py); every other stack here runs flash or SDPA by default. Read by the
// memory model (the saved softmax) and the time model (the attention kernels).
bool FlashAttention(const ModelSpec& m, const Workload& w, const Layout& l);

// The fused-attention kernel a training step on `gpu` runs: the one the config names, else
// Transformer Engine's cuDNN attention where Megatron-core picks it (Hopper, no context
// parallelism), else FlashAttention-class (kUnstated).
AttentionImpl TrainingAttention(const ModelSpec& m, const Layout& l, const GpuSpec& gpu);

// torchtitan casts to bf16 only through FSDP (fully_shard's MixedPrecisionPolicy) or, for DDP
// and one GPU, torch.autocast. With tensor or pipeline parallelism and no FSDP (no sharded
// data parallelism, no context parallelism) its maybe_enable_amp warns "Mixed precision
// training with TP or PP is only supported when FSDP/HSDP/CP is enabled" and returns no
// autocast: the step runs on the fp32 parameters (torchtitan/distributed/utils.py). True for
// such a layout and a mixed-precision workload.
bool TorchtitanMixedPrecisionOff(const Workload& w, const Layout& l);

// Whether a Megatron-Bridge MoE recipe runs sync-free: its Blackwell FP8/FP4 recipes for
// transformer MoEs capture the whole iteration in one CUDA graph from the 26.06 container
// (defaults::kMegatronBridgeSyncFreeMoe), so no MoE layer waits on the host.
bool MegatronBridgeSyncFreeMoe(const ModelSpec& m, const Workload& w, const Layout& l, const GpuSpec& gpu);
// The workload as the layout's framework runs it: `w`, with fp32 precision where
// TorchtitanMixedPrecisionOff. The memory and time models and the validator's collective
// sizes all price this one; plans and emitted configs keep what the user stated.
Workload WorkloadAsRun(const Workload& w, const Layout& l);

// LitGPT's GPT keeps its output head apart from the token embeddings (litgpt/model.py:
// lm_head and transformer.wte), and its checkpoint converters copy a tied model's embeddings
// into the head: a model whose config ties them trains with both under LitGPT.
bool HeadUntiedAsRun(const ModelSpec& m, const Workload& w, const Layout& l);
ModelSpec ModelAsRun(const ModelSpec& m, const Workload& w, const Layout& l);

// `assumed` (may be null: the search's hot path) gets "key: value (why)" for every default
// taken from the framework rather than the workload.
TrainingRecipe ResolveRecipe(const ModelSpec& m, const Workload& w, const Layout& l,
                             std::vector<std::string>* assumed = nullptr);

}  // namespace shardplan
