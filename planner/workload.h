// Workload: what the user runs -- training task, sequence, batch, precision, optimizer,
// LoRA, or inference serving. Plain struct; read by planner/io/workload_reader.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "planner/dtype.h"

namespace shardplan {

enum class Task { kPretrain, kFinetune, kLora, kQlora, kInference };
// kMuon: Newton-Schulz-orthogonalized momentum on the hidden matrices, AdamW on embeddings,
// head and 1-D parameters (Jordan et al. 2024; Moonlight and Kimi K2's MuonClip; torch.optim.Muon
// from PyTorch 2.9, Megatron-core's and DeepSpeed's Muon).
enum class Optimizer {
  kAdamW, kAdam, kAdamW8bit, kSgd, kSgdMomentum, kAdafactor, kLion, kMuon,
  kLion8bit,      // bitsandbytes Lion8bit: one uint8 state
  kRmsprop,       // torch RMSprop (no momentum): square_avg
  kAdagrad,       // torch Adagrad: the running sum of squares
  kAdemamix,      // bitsandbytes AdEMAMix: two first moments and the second
  kAdemamix8bit,  // its 8-bit states
  kAdamW4bit,     // torchao AdamW4bit: 4-bit m and v
};
// Optimizers whose states are stored quantized (their size does not follow the recipe's dtype).
bool QuantizedStates(Optimizer o);
// How the step runs over the parameters: torch's foreach path (its default on CUDA), whose
// ops return whole-group temporaries (sqrt of exp_avg_sq), or one kernel or loop per tensor
// (torch fused=True, apex / DeepSpeed FusedAdam, HF's own AdamW), with none.
enum class OptimizerStep { kAuto, kForeach, kPerTensor };

// A recipe setting the user may leave to the framework: kAuto takes what the layout's
// framework does by default (planner/recipe.h resolves it and says which it assumed).
enum class Setting { kAuto, kOff, kOn };
// Workload::custom_sharded_layers, a mask of these.
inline constexpr int kShardedEmbeddings = 1;  // torchtune's "tok_embeddings"
inline constexpr int kShardedOutput = 2;      // torchtune's "output"
inline constexpr std::pair<std::string_view, int> kShardedLayerNames[] = {{"tok_embeddings", kShardedEmbeddings},
                                                                          {"output", kShardedOutput}};

// Whether trained parameters keep an fp32 master copy beside the low-precision working copy.
enum class MasterWeights {
  kAuto,
  kFp32,  // mixed precision: fp32 master weights and optimizer states (AMP, DeepSpeed, Megatron)
  kNone,  // pure low precision: weights, gradients and optimizer states all in `precision`
};
// How the loss is computed over the vocabulary.
enum class LossKind {
  kAuto,
  kStandard,  // full logits, upcast to fp32, cross-entropy (HF, accelerate)
  kChunked,   // logits in chunks, each upcast alone (torchtune CEWithChunkedOutputLoss)
  kFused,     // fused linear + cross-entropy, logits never whole (Liger, Unsloth, Cut CE)
  kNoUpcast,  // full logits, cross-entropy on them in bf16 (AutoModel MaskedCrossEntropy fp32_upcast: false)
  kCompiled,  // full bf16 logits, upcast and cross-entropy fused by torch.compile (torchtitan)
  kKernel,    // full bf16 logits into one cross-entropy kernel (flash-attn's, llm-foundry's fused_crossentropy)
  kInplace,   // the same kernel writing the grad over the logits (Unsloth before Cut CE; inplace_backward)
};

// How a float8 run scales its tensors. What the planner prices from it so far is torchao's
// tensor parallelism in torchtitan: under tensorwise scaling (torchtitan's default recipe) a
// sub-block's input is all-gathered already in float8; under rowwise it is gathered in 16 bits.
enum class Fp8Recipe {
  kAuto,        // the framework's default
  kTensorwise,  // one scale per tensor, current or delayed (torchao tensorwise, TE delayed/current)
  kRowwise,     // a scale per row (torchao rowwise, rowwise_with_gw_hp)
  kBlockwise,   // 128 x 128 and 1 x 128 blocks (DeepSeek-V3's, TE blockwise)
  kMxfp8,       // a power-of-two scale per 32 values (MX, Blackwell)
};

struct LoraSpec {
  int64_t rank = 16;                         // r
  std::vector<std::string> targets = {"q_proj", "k_proj", "v_proj", "o_proj",
                                      "gate_proj", "up_proj", "down_proj"};
  double dropout = 0;                        // lora_dropout: peft's dropout before each lora_A
  bool operator==(const LoraSpec&) const = default;
};

// The serving engine, which sets what its memory fraction covers: vLLM's
// gpu_memory_utilization caps everything it profiles (weights, activation peak, KV cache);
// SGLang's mem_fraction_static covers the weights and the KV pool only, and everything else
// lives in the rest of the card. transformers' generate has no pool and no fraction: the
// whole prompt batch runs in one prefill forward and the KV cache grows with the sequences.
// TensorRT-LLM's free_gpu_memory_fraction takes its share of what is free after a profiling
// forward of max_num_tokens: the card less weights, context, communicators and activations.
enum class ServingEngine { kVllm, kSglang, kTransformers, kTensorrtLlm };

struct InferenceSpec {
  int64_t batch = 1;                         // concurrent sequences the user wants
  int64_t prompt_len = 1024;                 // tokens
  int64_t gen_len = 1024;                    // tokens
  Dtype weights = Dtype::kBf16;
  Dtype kv_cache = Dtype::kBf16;
  double gpu_memory_utilization = 0.9;       // vLLM's default budget fraction (SGLang: mem_fraction_static,
                                             // TensorRT-LLM: free_gpu_memory_fraction, also 0.9)
  ServingEngine engine = ServingEngine::kVllm;
  // Tokens in vLLM's profile forward (--max-num-batched-tokens); 0 = the engine's default,
  // by release (ServingProfile in recipe.h).
  int64_t max_num_batched_tokens = 0;
  // vLLM's --max-num-seqs: the sequences its scheduler runs at once, and the rows of its
  // profile's dummy sampler pass; 0 = the engine's default (ServingProfile in recipe.h).
  int64_t max_num_seqs = 0;
  bool operator==(const InferenceSpec&) const = default;
};

// How an MoE router assigns experts. kLearned: a trained router under a load-balancing loss.
// kRandom: random logits in its place (Megatron's --moe-router-force-load-balancing, for
// benchmarks; NVIDIA's tables say "we force-balance the token distribution"), so each
// token's experts are drawn at random. kDealt: NeMo AutoModel's FakeBalancedGate, which
// deals token t of each rank experts t*k .. t*k+k-1 (mod E): perfectly balanced, and each
// token's experts consecutive, on as few ranks as they fill.
enum class MoeRouting { kLearned, kRandom, kDealt };

struct Workload {
  std::string name = "pretrain";
  Task task = Task::kPretrain;
  int64_t seq_len = 4096;                    // tokens per sequence (training)
  int64_t global_batch = 256;                // sequences per optimizer step
  bool global_batch_stated = true;           // false: the file left it out; one step is mbs x dp x grad_accum
  Dtype precision = Dtype::kBf16;            // compute / working-weight dtype
  Optimizer optimizer = Optimizer::kAdamW;
  bool paged_optimizer = false;              // bitsandbytes paged states (unified memory, evicted to host)
  OptimizerStep optimizer_step = OptimizerStep::kAuto;  // from the optimizer's name (adamw_torch, fusedadam, ...)
  // GaLore's projection rank (HF Trainer's galore_* optimizers, optim_args "rank=...", 128 by
  // default): the optimizer's states live on each targeted matrix's rank-r gradient. 0 = off.
  int64_t galore_rank = 0;
  MasterWeights master_weights = MasterWeights::kAuto;
  Setting optimizer_in_backward = Setting::kAuto;  // step each parameter in its grad hook, no grad buffer
  Setting activation_offload = Setting::kAuto;     // saved activations streamed to pinned host memory
  LossKind loss = LossKind::kAuto;
  Fp8Recipe fp8_recipe = Fp8Recipe::kAuto;         // precision fp8: how tensors are scaled
  Setting fp8_all_gather = Setting::kAuto;         // FSDP gathers float8 weights (torchao, tensorwise)
  // Megatron's --first-last-layers-bf16: under fp8 or nvfp4, this many layers at the start and
  // at the end of the model keep BF16 GEMMs; -1 = not stated.
  int bf16_layers_start = -1, bf16_layers_end = -1;
  Setting compile = Setting::kAuto;                // torch.compile of the blocks
  Setting grad_reduce_fp32 = Setting::kAuto;       // Megatron's main grads, kept and reduced in fp32
  Setting overlap_comm = Setting::kAuto;           // DeepSpeed ZeRO: reduce under backward, double IPG buffer
  Setting flash_attention = Setting::kAuto;        // fused (flash) attention; off: the softmax is materialized
  // QLoRA through peft's prepare_model_for_kbit_training (TRL's SFTTrainer calls it): every
  // 16-bit parameter cast to fp32 (TrainingRecipe::kbit_prepared).
  Setting kbit_prepare = Setting::kAuto;
  // How the MoE router assigns experts (MoeRouting): the MoE benchmarks' stand-in routers,
  // fake_balanced_gate: true (NeMo AutoModel) or force_load_balancing: true (Megatron).
  MoeRouting moe_routing = MoeRouting::kLearned;
  // The framework release the run used, by its date: yyyymmdd, with dd = 00 when only the month
  // was given (it then sorts before every dated release of that month); 0 = not stated. Picks
  // the defaults that changed between releases (ReleaseAtLeast below).
  int32_t release = 0;
  // The PyTorch the run used, as major x 100 + minor (2.8 -> 208); 0 = not stated. FSDP2's
  // root module changed under it (TrainingRecipe::root_reshards_after_forward, recipe.h).
  int32_t torch_version = 0;
  // torchtune's custom_sharded_layers: which of the token embeddings and the output layer are
  // FSDP units of their own rather than part of the root. -1 = not stated (its configs' choice).
  int custom_sharded_layers = -1;
  // A trainer's own batch and checkpointing arguments, as HF TrainingArguments, DeepSpeed's
  // JSON, axolotl and LLaMA-Factory name them (per_device_train_batch_size,
  // gradient_accumulation_steps, gradient_checkpointing): layout settings a pasted trainer file
  // carries, applied where --layout leaves them (0 and kAuto: not stated).
  int64_t micro_batch = 0;
  int64_t grad_accum = 0;
  Setting checkpointing = Setting::kAuto;
  // A config's tensor_parallel_size and pipeline_parallel_size (vLLM, SGLang's tp_size,
  // Megatron-style trainer files), for the layout likewise; 0 = not stated.
  int64_t tensor_parallel = 0;
  int64_t pipeline_parallel = 0;
  // LitGPT's devices x num_nodes: the GPUs its data parallelism runs on, which may be fewer
  // than the cluster has; 0 = not stated (all of them).
  int64_t devices = 0;
  // bitsandbytes' double quantization of a 4-bit base's block scales (bnb_4bit_use_double_quant,
  // LLaMA-Factory's double_quantization, LitGPT's bnb.nf4-dq): off keeps one fp32 absmax per
  // 64 weights (0.5625 B a weight), on quantizes those too (0.516). kAuto: on, as the QLoRA
  // recipes set it.
  Setting double_quant = Setting::kAuto;
  // What reading a trainer's file assumed, and the arguments it read past (learning rate,
  // logging, paths) as having no bearing on memory or step time; said with the answer, not
  // written back to a plan.
  std::vector<std::string> assumed;
  LoraSpec lora;                             // used for kLora / kQlora
  InferenceSpec inference;                   // used for kInference

  bool operator==(const Workload&) const = default;
  bool training() const { return task != Task::kInference; }
  bool lora_like() const { return task == Task::kLora || task == Task::kQlora; }
  int64_t context_len() const {              // tokens a sequence holds at its longest
    return training() ? seq_len : inference.prompt_len + inference.gen_len;
  }
};

std::string_view TaskName(Task t);
std::string_view OptimizerName(Optimizer o);
bool ParseTask(std::string_view s, Task* out);
// Accepts shardplan's names and the usual spellings of HF Trainer's `optim` and bitsandbytes
// (adamw_torch_fused, adamw_bnb_8bit, paged_adamw_8bit, PagedAdamW8bit, ...); `paged` (may be
// null) says whether the name is a paged variant, `step` (may be null) what the name says
// about the step: adamw_torch is torch's foreach AdamW; adamw_torch_fused, adamw_apex_fused,
// fusedadam and adamw_hf step per tensor; the rest (adamw, adam, ...) leave it to the framework.
bool ParseOptimizer(std::string_view s, Optimizer* out, bool* paged = nullptr, OptimizerStep* step = nullptr);
// ParseOptimizer's `step` alone.
OptimizerStep ParseOptimizerStep(std::string_view s);
// Whether the optimizer's name says it steps each parameter inside backward, with no
// gradient buffer (LOMO, AdaLomo); the workload's optimizer_in_backward, when set, wins.
bool OptimizerStepsInBackward(std::string_view s);
// Whether the name is one of HF Trainer's GaLore optimizers (galore_adamw, galore_adamw_8bit,
// galore_adafactor and their _layerwise forms); ParseOptimizer reads the optimizer under it.
bool GaloreOptimizer(std::string_view s);
constexpr int64_t kGaloreDefaultRank = 128;  // HF Trainer's optim_args rank default (trainer.py)
std::string_view MasterWeightsName(MasterWeights m);
std::string_view LossName(LossKind k);
std::string_view Fp8RecipeName(Fp8Recipe r);
// "tensorwise", "rowwise", "blockwise", "mxfp8", with the spellings frameworks use for them
// (torchao's recipe names, TE's "delayed"/"current"); false for anything else.
bool ParseFp8Recipe(std::string_view s, Fp8Recipe* out);
// The recipe a precision names among its words ("float8 rowwise", "FP8-CS", "MXFP8"), kAuto
// when none does.
Fp8Recipe Fp8RecipeInPrecision(std::string_view precision);
std::string_view SettingName(Setting s);
// Tokens as sources write a sequence length in thousands: "4k" / "128K" (x 1024), up to five
// digits; nullopt for anything else (plain numbers included).
std::optional<int64_t> ParseKiloTokens(std::string_view s);
// "2025-06" or "2025-06-13" as Workload::release (0 when malformed); ReleaseName inverts it.
int32_t ParseRelease(std::string_view s);
std::string ReleaseName(int32_t release);
// Whether the workload states a release and it is that date or later; an unstated one
// answers false, so callers keep the older behaviour, which they document.
inline bool ReleaseAtLeast(const Workload& w, int32_t date) { return w.release > 0 && w.release >= date; }
// "2.8", "2.8.0" or "2.11.0+cu130" as Workload::torch_version (0 when malformed);
// TorchVersionName inverts it ("2.11").
int32_t ParseTorchVersion(std::string_view s);
std::string TorchVersionName(int32_t version);

}  // namespace shardplan
