// Defaults of the frameworks shardplan models, in one place: the memory model budgets them,
// the emitter writes them, and the validator sizes its collectives with them.
#pragma once

#include <cmath>
#include <cstdint>

#include "planner/workload.h"

namespace shardplan::defaults {

// DeepSpeed ZeRO (deepspeed/runtime/zero/config.py; memory-model.md 1.4), in elements.
constexpr int64_t kDeepSpeedReduceBucket = 500'000'000;     // reduce_bucket_size
constexpr int64_t kDeepSpeedAllgatherBucket = 500'000'000;  // allgather_bucket_size
constexpr int64_t kDeepSpeedPrefetchBucket = 50'000'000;    // stage3_prefetch_bucket_size
constexpr int64_t kDeepSpeedMaxLive = 1'000'000'000;        // stage3_max_live_parameters
constexpr int64_t kDeepSpeedMaxReuse = 1'000'000'000;       // stage3_max_reuse_distance
constexpr int64_t kDeepSpeedSubGroup = 1'000'000'000;       // sub_group_size
constexpr int64_t kDeepSpeedParamBuffer = 100'000'000;      // offload_param buffer_size

// Release dates (Workload::release, yyyymmdd) at which a framework's default changed; the
// workload's `release` picks the side (planner/recipe.cc, planner/layout.cc).
// torchtitan 6e4988550: optimizer.implementation defaults to "fused" (before: foreach).
constexpr int32_t kTorchtitanFusedAdamW = 20250224;
// torchtitan bbb1b616e: with training.compile the loss is compiled too (before: eager).
constexpr int32_t kTorchtitanCompiledLoss = 20250402;
// torchtitan 5e2033c: pipeline_parallel_microbatch_size, default 1, replaces
// pipeline_parallel_microbatches (None = the pp degree).
constexpr int32_t kTorchtitanPpMicrobatchSize = 20250407;
// torchtitan 83e694105 (models/llama3/infra/parallelize.py apply_fsdp): the token embeddings
// are an FSDP unit of their own, resharded after forward, and [norm, output] one kept gathered;
// before, the root held embeddings, norm and head from forward to backward.
constexpr int32_t kTorchtitanEmbeddingUnit = 20250728;
// torchtitan 6348d93d1: its float8 linears take only the rowwise recipes, "rowwise" by
// default; before, an unset recipe_name meant tensorwise scaling, whose float8 all-gathers
// for TP (and, optionally, FSDP) rowwise does not have ("for float8 with rowwise scaling,
// all distributed communication is done in high precision", docs/float8.md before it).
constexpr int32_t kTorchtitanRowwiseOnly = 20260427;
// Unsloth ddf118a8f (2024-11-21, "Vision support"): the causal-LM forward hands the head and
// the loss to Apple's Cut Cross-Entropy (unsloth_zoo loss_utils fused_linear_cross_entropy)
// wherever cut_cross_entropy is installed; before, the 16-bit logits were whole and
// fast_cross_entropy_loss wrote their grad over them.
constexpr int32_t kUnslothCutCrossEntropy = 20241121;
// transformers v4.49.0 (2025-02-17), the first release with PR 35646: ForCausalLMLoss pads
// and shifts the labels instead of copying the shifted fp32 logits (logits[..., :-1, :]
// .contiguous()), which held 4 B a logit more through the loss and its backward.
constexpr int32_t kTransformersNoShiftedLogitsCopy = 20250217;
// PyTorch PR 154704 (in nightlies from 2025-06-06, released in 2.8): fully_shard's root honours
// an explicit reshard_after_forward=True, where it had always kept its params gathered for
// backward (_fsdp_state.py _lazy_init; PR 155319 keeps that only when the flag is left unset).
// torchtitan runs on nightlies, so its release date implies it; elsewhere `torch:` says.
constexpr int32_t kTorchRootReshardNightly = 20250606;
constexpr int32_t kTorchRootReshardVersion = 208;

// PyTorch DDP bucket_cap_mb default: 25 MiB (torch/nn/parallel/distributed.py).
constexpr int64_t kDdpBucketBytes = 25LL * 1024 * 1024;

// vLLM V1 scheduler: max_num_batched_tokens for its profile run (chunked prefill), the
// max_num_seqs rows of sampler logits (1024 on cards of 70 GiB and more other than the A100,
// 256 on the rest: EngineArgs._set_default_args, "Defaulting max_num_seqs to 1024 for
// OPENAI_API_SERVER usage context" in llm-d's vLLM 0.19 H100 logs), and the KV page size.
constexpr int64_t kVllmBatchedTokens = 8192;
constexpr int64_t kVllmMaxSeqs = 256;
constexpr int64_t kVllmMaxSeqsLargeGpu = 1024;
constexpr int64_t kVllmBlockTokens = 16;
// vLLM v0.8.0 (2025-03-18) made the V1 engine the default (PR #13726). V0's scheduler
// (vllm/config.py SchedulerConfig) profiles max(max_model_len, 2048) tokens without chunked
// prefill and 2048 with it, and V0 turns chunked prefill on by itself only above 32,768 tokens
// of max_model_len (vllm#10517 on one RTX 3090: 29k refuses to start, 35k and 45k start).
// Its sampler profile takes max_num_seqs = 256 on every card.
constexpr int32_t kVllmV1Default = 20250318;
// TensorRT-LLM's LLM API: max_num_tokens 8192 (llmapi BuildConfig / runtime config) for the
// profiling forward, whose dummy context requests each take up to max_seq_len tokens, so a
// few sequences reach the sampler rather than vLLM's max_num_seqs rows.
constexpr int64_t kTrtllmMaxNumTokens = 8192;
constexpr int64_t kVllmV0MinBatchedTokens = 2048;
constexpr int64_t kVllmV0LongContext = 32768;

// Dropless MoE routing with a load-balancing loss is never perfectly balanced: the busiest
// expert-parallel rank, which paces the step and sets the peak, receives about this share
// over a balanced one (memory and time use the same figure).
constexpr double kMoeImbalance = 1.1;
// With one expert-parallel rank every expert is local and every routed token lands on this
// GPU whatever the routing: k x T rows exactly (a 2-layer Mixtral of width 512 in
// transformers saves 37,516 B per token per layer, the balanced figure, counted on the CPU).
// Under random logits each of the ep ranks receives Binomial(ep x T x k, 1/ep) of the (token,
// expert) pairs, T x k on average with a standard deviation of sqrt(T k (1 - 1/ep)); the
// busiest of ep such ranks sits about sqrt(2 ln ep) deviations above the mean (the normal
// maximum). A dealing gate balances them exactly. `pairs` is T x k of one rank.
inline double MoeImbalance(int ep, MoeRouting routing, double pairs) {
  if (ep <= 1 || routing == MoeRouting::kDealt) return 1.0;
  if (routing == MoeRouting::kLearned || pairs <= 0) return kMoeImbalance;
  const double n = ep;
  return 1 + std::sqrt(2 * std::log(n) * (1 - 1 / n) / pairs);
}
// Host time of Megatron-core's dropless MoE layer that the GPU waits on (time_model.cc
// MakeKind). Per cuBLAS call of TE's per-expert grouped GEMM: 20 us, the average
// nvte_cublas_gemm call in an nsys profile of Qwen3-30B-A3B on 8 B200 under Megatron
// (yanring/Megatron-MoE-ModelZoo issue #7, 2025-08). Router, permutation and dispatch per
// layer and micro-batch, forward and backward: 2 ms (fit: the Megatron-Bridge and ModelZoo MoE
// rows of bench/user_inputs, whose recipes run no sync-free full-iteration CUDA graph).
constexpr double kMoeHostGemmSeconds = 20e-6;
constexpr double kMoeHostLayerSeconds = 2e-3;
// Megatron-Bridge's Blackwell FP8 and FP4 recipes for transformer MoEs (Qwen3, DeepSeek-V3,
// GPT-OSS, Kimi-K2) from the 26.06 container on capture the whole iteration in one CUDA
// graph, with expert buffers sized ahead (moe_expert_rank_capacity_factor, moe_paged_stash):
// no host sync, nothing issued per layer (Megatron-LM docs/user-guide/features/paged_stash.md;
// Megatron-Bridge PRs 4211, 4249). Its Nemotron-H hybrid recipes graph only attention, Mamba
// and the router (cuda_graph_scope), so their expert segments still wait on the host.
constexpr int32_t kMegatronBridgeSyncFreeMoe = 20260600;
// Megatron-Bridge's Nemotron 3 Super NVFP4 preset (training/mixed_precision.py,
// nemotron_3_super_bf16_with_nvfp4_mixed, from 53d40d1bc of 2026-03-25, which its performance
// recipes run) keeps the last 14 layers in BF16 (first_last_layers_bf16,
// num_layers_at_end_in_bf16 = 14).
constexpr int32_t kNemotron3SuperNvfp4Bf16Tail = 20260325;
constexpr int kNemotron3SuperBf16TailLayers = 14;

}  // namespace shardplan::defaults
