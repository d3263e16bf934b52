#include "planner/recipe.h"

#include <algorithm>

#include "planner/framework_defaults.h"
#include "planner/memory_terms.h"
#include "planner/units.h"

namespace shardplan {
namespace {

bool Low(Dtype d) { return d == Dtype::kBf16 || d == Dtype::kFp16; }

// Whether trained weights keep an fp32 master copy when the workload does not say; `why`
// (may be null) gets the reason.
bool DefaultMaster(const ModelSpec& m, const Workload& w, const Layout& l, std::string* why) {
  switch (l.stack) {
    case Stack::kTorchtune:
      // torchtune builds the model in `dtype` (bf16 by default) and steps the optimizer on
      // those parameters: no fp32 copy (torchtune/training/precision.py, recipes' dtype key).
      if (why) *why = "torchtune trains in pure " + std::string(DtypeName(w.precision)) + " (its `dtype` key)";
      return false;
    case Stack::kHf:
    case Stack::kUnsloth:
      // transformers 5 loads weights in the checkpoint's dtype (dtype="auto"), and Trainer's
      // bf16=True only autocasts: a bf16 checkpoint trains in pure bf16.
      if (Low(m.dtype)) {
        if (why) *why = "from_pretrained loads the " + std::string(DtypeName(m.dtype)) + " checkpoint as is; bf16=True only autocasts";
        return false;
      }
      if (why) *why = "the checkpoint is fp32, so weights and optimizer states stay fp32 under autocast";
      return true;
    case Stack::kAutomodel:
      // NeMo AutoModel builds the model in the checkpoint's dtype (torch_dtype "auto", bf16
      // when the config names none; _transformers/auto_model.py) and FSDP2 casts only the
      // gathered copy (MixedPrecisionPolicy param_dtype bf16, reduce_dtype fp32;
      // components/moe/parallelizer.py): a bf16 checkpoint trains with bf16 shards and
      // bf16 Adam states.
      if (m.dtype != Dtype::kFp32) {
        if (why) *why = "AutoModel builds the model in the checkpoint's " + std::string(DtypeName(m.dtype)) + "; FSDP2 keeps bf16 shards";
        return false;
      }
      if (why) *why = "the checkpoint is fp32, so AutoModel's FSDP2 shards and optimizer states stay fp32";
      return true;
    case Stack::kLitgpt:
      // LitGPT trains in bf16-mixed unless told a precision (utils.py
      // get_default_supported_precision(training=True)): Fabric keeps the model in fp32 under
      // autocast. Its config_hub recipes say bf16-true, which the workload's precision:
      // bf16-true reads as pure bf16.
      if (why) *why = "LitGPT's default precision for training is bf16-mixed, fp32 weights under autocast; its config_hub "
                      "recipes set precision: bf16-true (pure bf16)";
      return true;
    case Stack::kNative:
    case Stack::kNemo:
    case Stack::kMegatronDeepSpeed:  // BF16_Optimizer / FP16_Optimizer keep fp32 masters
    case Stack::kLlmFoundry:         // Composer's FSDP shards the fp32 model; mixed_precision sets only the gathered dtype
    case Stack::kFmsFsdp:
      break;
  }
  if (why) *why = std::string(FrameworkName(l.framework)) + " keeps fp32 master weights under mixed precision";
  return true;
}

}  // namespace

Fp8Recipe TorchtitanFp8Recipe(const Workload& w) {
  if (w.fp8_recipe != Fp8Recipe::kAuto || w.precision != Dtype::kFp8) return w.fp8_recipe;
  return ReleaseAtLeast(w, defaults::kTorchtitanRowwiseOnly) ? Fp8Recipe::kRowwise : Fp8Recipe::kTensorwise;
}

Fp8Recipe ResolvedFp8Recipe(const Workload& w, const Layout& l) {
  return TorchtitanItself(l) ? TorchtitanFp8Recipe(w) : w.fp8_recipe;
}

bool TorchtitanFloat8AllGather(const Workload& w, bool sharded) {
  return sharded && w.precision == Dtype::kFp8 && w.fp8_all_gather != Setting::kOff &&
         TorchtitanFp8Recipe(w) == Fp8Recipe::kTensorwise;
}

bool Float8AllGather(const Workload& w, const Layout& l) {
  return w.training() && !w.lora_like() && TorchtitanItself(l) &&
         TorchtitanFloat8AllGather(w, DenseStatesSharded(l));
}

Bf16Layers LowPrecisionBf16Layers(const ModelSpec& m, const Workload& w, const Layout& l) {
  Bf16Layers b;
  const bool low_precision = w.precision == Dtype::kFp8 || w.precision == Dtype::kFp4;
  if (!w.training() || !low_precision || l.framework != Framework::kMegatron) return b;
  if (w.bf16_layers_start >= 0) {
    b.start = std::min<int>(w.bf16_layers_start, static_cast<int>(m.layers));
    b.end = std::min<int>(w.bf16_layers_end, static_cast<int>(m.layers) - b.start);
    return b;
  }
  if (l.stack == Stack::kNemo && w.precision == Dtype::kFp4 && m.model_type == "nemotron_h" && m.moe_latent > 0 &&
      ReleaseAtLeast(w, defaults::kNemotron3SuperNvfp4Bf16Tail))
    b.end = std::min<int>(defaults::kNemotron3SuperBf16TailLayers, static_cast<int>(m.layers));
  return b;
}

bool LossCompiledByRelease(const Workload& w, const Layout& l) {
  return w.training() && TorchtitanItself(l) && w.compile == Setting::kOn && w.loss == LossKind::kAuto && w.release == 0;
}

bool LossFusedByRelease(const Workload& w, const Layout& l) {
  return w.training() && l.stack == Stack::kUnsloth && w.loss == LossKind::kAuto && w.release == 0;
}

bool MegatronGradsFp32(const Workload& w, const Layout& l) {
  if (w.grad_reduce_fp32 != Setting::kAuto) return w.grad_reduce_fp32 == Setting::kOn;
  if (w.precision == Dtype::kFp32) return true;
  // Megatron-Bridge scripts/performance/utils/helpers.py set_basic_perf_overrides and NeMo 2's
  // *_performance recipes set mixed_precision.grad_reduce_in_fp32 = False and
  // ddp.grad_reduce_in_fp32 = False; bare Megatron keeps fp32 main grads.
  return l.stack != Stack::kNemo;
}

bool FlashAttention(const ModelSpec& m, const Workload& w, const Layout& l) {
  if (w.flash_attention != Setting::kAuto) return w.flash_attention == Setting::kOn;
  if (m.attention_impl != AttentionImpl::kUnstated) return m.attention_impl != AttentionImpl::kEager;
  // transformers' SDPA path hands a GQA model's K and V over unrepeated with enable_gqa=True
  // (integrations/sdpa_attention.py, use_gqa_in_sdpa: CUDA, torch 2.5+, no mask). In fp32 no
  // flash kernel exists, the memory-efficient one takes no enable_gqa, and PyTorch falls back
  // to the math path, which saves the s x s probabilities per head. Our H100 runs in fp32
  // (Llama-3.2-1B, 16 layers at 2 x 1,024 tokens; Llama-3.1-8B's recomputed layer at 2 x 4,096)
  // each held that much more than their flash-priced estimate.
  if (w.precision == Dtype::kFp32 && TransformersModelCode(l) && m.kv_heads > 0 && m.kv_heads < m.heads) return false;
  return l.stack != Stack::kMegatronDeepSpeed;
}

AttentionImpl TrainingAttention(const ModelSpec& m, const Layout& l, const GpuSpec& gpu) {
  if (m.attention_impl != AttentionImpl::kUnstated) return m.attention_impl;
  // Megatron-core attends through TE's DotProductAttention, which prefers FusedAttention
  // (cuDNN) over flash-attn on Hopper (transformer_engine/pytorch/attention/
  // dot_product_attention/utils.py: "Disabling FlashAttention to give FusedAttention preference
  // on Hopper+ for performance reasons", since TE 1.2). Inside TE's context-parallel ring the
  // published long-context runs (NeMo's 7B at 4k-1M tokens, Megatron's Qwen3-235B at 64k and
  // 128k) come out at FlashAttention-2's rate, not cuDNN's, so a ring keeps that rate. NeMo
  // AutoModel's own model code builds its attention, linears and RMSNorm from Transformer
  // Engine whenever TE is installed, as in NVIDIA's containers (BackendConfig in
  // nemo_automodel/components/moe/utils.py: attn "te", linear "te", rms_norm "te",
  // rope_fusion), so it attends through the same DotProductAttention.
  const bool te = l.framework == Framework::kMegatron || l.stack == Stack::kAutomodel;
  if (te && l.cp <= 1 && gpu.compute_capability == 90) return AttentionImpl::kCudnn;
  return AttentionImpl::kUnstated;
}

bool TorchtitanMixedPrecisionOff(const Workload& w, const Layout& l) {
  const bool fsdp = (l.zero >= 1 && l.dp > 1) || l.cp > 1;
  return w.training() && TorchtitanItself(l) && !fsdp && (l.tp > 1 || l.pp > 1) &&
         (w.precision == Dtype::kBf16 || w.precision == Dtype::kFp16) && w.master_weights != MasterWeights::kNone;
}

bool MegatronBridgeSyncFreeMoe(const ModelSpec& m, const Workload& w, const Layout& l, const GpuSpec& gpu) {
  const bool low_precision = w.precision == Dtype::kFp8 || w.precision == Dtype::kFp4;
  return l.stack == Stack::kNemo && gpu.compute_capability >= 100 && low_precision && !m.is_hybrid() &&
         ReleaseAtLeast(w, defaults::kMegatronBridgeSyncFreeMoe);
}

bool HeadUntiedAsRun(const ModelSpec& m, const Workload& w, const Layout& l) {
  return w.training() && m.tied_embeddings && l.stack == Stack::kLitgpt;
}

ModelSpec ModelAsRun(const ModelSpec& m, const Workload& w, const Layout& l) {
  ModelSpec run = m;
  if (HeadUntiedAsRun(m, w, l)) run.tied_embeddings = false;
  return run;
}

Workload WorkloadAsRun(const Workload& w, const Layout& l) {
  Workload run = w;
  if (TorchtitanMixedPrecisionOff(w, l)) run.precision = Dtype::kFp32;
  return run;
}

TrainingRecipe ResolveRecipe(const ModelSpec& m, const Workload& w, const Layout& l, std::vector<std::string>* assumed) {
  TrainingRecipe r;
  if (!w.training()) return r;
  auto assume = [&](const char* note) {
    if (assumed) assumed->push_back(note);
  };
  if (TorchtitanMixedPrecisionOff(w, l))
    assume("precision: fp32 (torchtitan runs tensor or pipeline parallelism without FSDP in fp32: its maybe_enable_amp "
           "turns mixed precision off there; shard data parallelism with dp and zero=3 for bf16)");
  const bool low = w.precision != Dtype::kFp32;
  if (!(l.fixed & kKeyFramework) && l.stack == Stack::kHf)
    assume("framework: hf (a fine-tune on one GPU with no framework named: HF Trainer's defaults)");
  if (l.stack == Stack::kHf && w.task == Task::kQlora && !(l.fixed & kKeyAc))
    assume("ac: full (peft's prepare_model_for_kbit_training turns gradient checkpointing on for QLoRA)");
  if (!(l.fixed & kKeyFramework) && l.stack != Stack::kHf && l.framework == Framework::kTorchtitan)
    assume("framework: torchtitan (not named; FSDP with the pipeline, expert or context parallelism asked for)");
  if (w.precision == Dtype::kFp4)
    assume("precision nvfp4: every linear layer's GEMMs run in NVFP4 (Transformer Engine's nvfp4 recipe, fp4=e2m1); "
           "recipes that keep layers in bf16 (Megatron-Bridge's Nemotron 3 Super keeps its last 14) run slower");

  if (!low) {
    r.master_weights = false;  // everything is fp32 already
  } else if (w.master_weights == MasterWeights::kAuto) {
    std::string why;
    r.master_weights = DefaultMaster(m, w, l, assumed ? &why : nullptr);
    if (assumed && !w.lora_like() && l.stack != Stack::kNative)
      assumed->push_back(std::string("master_weights: ") + (r.master_weights ? "fp32" : "none") + " (" + why + ")");
  } else {
    r.master_weights = w.master_weights == MasterWeights::kFp32;
  }
  r.pure_low_precision = low && !r.master_weights;
  // peft upcasts adapters to fp32 (autocast_adapter_dtype=True); torchtune and LitGPT keep
  // them in the model's dtype.
  r.adapter_bytes = r.pure_low_precision && (l.stack == Stack::kTorchtune || l.stack == Stack::kLitgpt) ? 2 : 4;
  if (HeadUntiedAsRun(m, w, l))
    assume("head: untied (LitGPT's GPT keeps lm_head apart from the token embeddings; its converter copies this tied "
           "model's embeddings into it)");
  // Fabric's BitsandbytesPrecision, which LitGPT builds with no ignore_modules, quantizes the
  // head with the layers' Linears.
  r.quantized_head = l.stack == Stack::kLitgpt && w.task == Task::kQlora;
  // LitGPT's bf16-mixed keeps the whole model in fp32, the frozen base of a LoRA run too.
  r.frozen_base_fp32 = l.stack == Stack::kLitgpt && w.lora_like() && r.master_weights;

  if (l.framework == Framework::kMegatron && low && !r.pure_low_precision && !w.lora_like()) {
    r.main_grad_bytes = MegatronGradsFp32(w, l) ? 4 : 2;  // bf16, fp8 runs included
    if (l.stack == Stack::kNemo && w.grad_reduce_fp32 == Setting::kAuto)
      assume("grad_reduce_in_fp32: false (NeMo and Megatron-Bridge performance recipes, which their published tables "
             "run, keep bf16 main grads; their plain recipes keep fp32: say grad_reduce_in_fp32: true)");
  }

  // DeepSpeed steps the optimizer it is handed on its flat fp32 partition (stage_1_and_2.py,
  // stage3.py _optimizer_step). When the config names none, that is the client's: HF
  // Trainer's default adamw_torch before torch 2.8 (training_args.py: adamw_torch_fused from
  // 2.8) or a script's torch.optim.AdamW, whose foreach step allocates sqrt(exp_avg_sq) over
  // the whole partition. A config with an optimizer block builds DeepSpeed's FusedAdam;
  // Megatron-DeepSpeed builds apex's. Unstated, the client's foreach step is priced: the
  // larger of the two, so no OOM is called a fit.
  const bool adam = (w.optimizer == Optimizer::kAdamW || w.optimizer == Optimizer::kAdam) && !w.paged_optimizer;
  if (l.framework == Framework::kDeepSpeed && adam && !w.lora_like() && l.offload_optimizer == Offload::kNone &&
      l.stack != Stack::kMegatronDeepSpeed) {
    r.deepspeed_foreach_step = w.optimizer_step != OptimizerStep::kPerTensor;
    if (w.optimizer_step == OptimizerStep::kAuto)
      assume("optimizer: adamw_torch (DeepSpeed steps the client's torch AdamW, foreach, when its config names no optimizer, "
             "as LLaMA-Factory's do: sqrt(exp_avg_sq) over the fp32 partition at step; an optimizer block in the "
             "config builds DeepSpeed's FusedAdam, which has none: say optimizer: fusedadam, and the emitted config names it)");
  }
  // Elsewhere torch steps AdamW itself. torchtune's configs set fused=True and HF Trainer
  // defaults to adamw_torch_fused (one kernel per parameter group); torchtitan's default was
  // foreach until 2025-02-24, fused since; plain FSDP scripts, fms-fsdp's
  // (main_training_llama.py: optim.AdamW with betas and weight decay, no fused flag) and
  // AutoModel's configs (torch.optim.Adam, no fused flag) and LitGPT's (torch.optim.AdamW by
  // class_path and init_args) take torch's CUDA default, foreach.
  // A name that says the step (adamw_torch, adamw_torch_fused) overrides all of them;
  // bitsandbytes steps in its own kernels.
  if (adam) {
    if (w.optimizer_step != OptimizerStep::kAuto)
      r.torch_foreach_step = w.optimizer_step == OptimizerStep::kForeach;
    else if (TorchtitanItself(l))
      r.torch_foreach_step = !ReleaseAtLeast(w, defaults::kTorchtitanFusedAdamW);
    else
      r.torch_foreach_step = l.stack == Stack::kNative || l.stack == Stack::kAutomodel || l.stack == Stack::kFmsFsdp ||
                             l.stack == Stack::kLitgpt;
  }
  r.paged_optimizer = w.paged_optimizer;
  // LitGPT's LoRA on a quantized base builds bitsandbytes' PagedAdamW (32-bit states in
  // unified memory) whatever AdamW its config names (finetune/lora.py, utils.py
  // instantiate_bnb_optimizer).
  if (l.stack == Stack::kLitgpt && w.task == Task::kQlora && adam && !w.paged_optimizer) {
    r.paged_optimizer = true;
    assume("optimizer: paged AdamW (LitGPT steps a quantized base's adapters with bitsandbytes' PagedAdamW)");
  }
  if (w.galore_rank > 0)
    assume(("galore: rank " + std::to_string(w.galore_rank) +
            " on the attention and MLP weights of every layer (optim_target_modules [\"attn\", \"mlp\"]); "
            "embeddings, head and norms keep full optimizer states")
               .c_str());
  r.optimizer_in_backward = w.optimizer_in_backward == Setting::kOn;
  r.compile = w.compile == Setting::kOn;
  r.flash_attention = FlashAttention(m, w, l);
  if (l.stack == Stack::kMegatronDeepSpeed && w.flash_attention == Setting::kAuto)
    assume("flash_attention: false (Megatron-DeepSpeed materializes the attention softmax unless run with --use-flash-attn: "
           "say flash_attention: true)");

  if (w.activation_offload != Setting::kAuto) {
    r.activation_offload = w.activation_offload == Setting::kOn;
  } else if (l.stack == Stack::kUnsloth && l.ac != Recompute::kNone) {
    r.activation_offload = true;
    assume("activation_offload: true (Unsloth's use_gradient_checkpointing=\"unsloth\" keeps checkpoints in host memory)");
  }

  // torchtitan's FSDP without pipeline parallelism: from 2025-07-28 the embeddings are a unit
  // of their own, resharded after forward, and only norm and head stay gathered for
  // backward. Unstated, the older wrapping holds more, so it is the default.
  //
  // Both torchtitan's earlier wrapping and torchtune's pass reshard_after_forward=True to the
  // root too. PyTorch before 2.8 kept the root gathered regardless; from 2.8 the root's
  // embeddings, norm and head are freed after forward and gathered again once the loss's
  // backward has run, so the loss's backward holds none of them. torchtitan's earlier wrapping
  // also leaves its last block gathered from forward to backward.
  if (TorchtitanItself(l) && TransformersModules(m, l))
    assume(("model code: transformers' " + m.model_type +
            " modules (torchtitan builds no such model of its own and trains it through its transformers modeling "
            "backend, from 2025-11-20)")
               .c_str());
  if (TorchtitanItself(l) && w.precision == Dtype::kFp8 && w.fp8_recipe == Fp8Recipe::kAuto && w.release == 0)
    assume("fp8_recipe: tensorwise (torchtitan's float8 default until 2026-04-27, with float8 all-gathers for TP; "
           "later releases run rowwise only, all communication in bf16: say release: with the date of yours, or "
           "fp8_recipe: rowwise)");
  const Bf16Layers bf16_layers = LowPrecisionBf16Layers(m, w, l);
  if (bf16_layers.count() > 0 && w.bf16_layers_start < 0)
    assume(("bf16_layers: {start: 0, end: " + std::to_string(bf16_layers.end) +
            "} (Megatron-Bridge's Nemotron 3 Super NVFP4 preset keeps its last " + std::to_string(bf16_layers.end) +
            " layers' GEMMs in BF16: say bf16_layers: {start: 0, end: 0} for a run without it)")
               .c_str());
  r.float8_all_gather = Float8AllGather(w, l);
  // QLoRA on transformers: TRL's SFTTrainer (and the QLoRA scripts it grew from) calls peft's
  // prepare_model_for_kbit_training, which casts every 16-bit parameter but the 4-bit blocks
  // to fp32 (peft utils/other.py: "cast all non INT8 parameters to fp32"). Sharded QLoRA
  // (FSDP or ZeRO-3, the blocks stored in bnb_4bit_quant_storage) skips it, as TRL does. An
  // fp32 norm weight times the bf16 normalized tensor is fp32, bitsandbytes' Linear4bit casts
  // its output back to its input's dtype, and the residual add promotes: the layer inputs the
  // checkpoints keep and the MLP's intermediates are fp32.
  const bool low16 = w.precision == Dtype::kBf16 || w.precision == Dtype::kFp16;
  const bool kbit_default = l.stack == Stack::kHf && w.task == Task::kQlora && l.zero < 3 && low16;
  r.kbit_prepared = w.kbit_prepare == Setting::kAuto ? kbit_default : w.kbit_prepare == Setting::kOn && w.task == Task::kQlora;
  r.kbit_fp32_embeddings = r.kbit_prepared && w.precision == Dtype::kFp16;
  r.kbit_fp32_stream = r.kbit_prepared && TransformersModules(m, l) && !m.is_hybrid() &&
                       (!m.norm_weight_fp32 || r.kbit_fp32_embeddings);
  if (kbit_default && w.kbit_prepare == Setting::kAuto)
    assume((std::string("kbit_prepare: true (TRL's SFTTrainer runs peft's prepare_model_for_kbit_training: ") +
            (r.kbit_fp32_embeddings ? "norms, embeddings and head in fp32, so the residual stream and the MLP's "
                                      "intermediates are fp32"
             : r.kbit_fp32_stream   ? "fp32 norms make the residual stream and the MLP's intermediates fp32, and TRL "
                                      "casts embeddings and head back to bf16"
                                    : "norms in fp32, whose outputs this model casts back to bf16, and TRL casts "
                                      "embeddings and head back to bf16") +
            "; say kbit_prepare: false for a script that skips it, as LLaMA-Factory does)")
               .c_str());
  if (r.float8_all_gather && w.fp8_all_gather == Setting::kAuto)
    assume("fp8_all_gather: on (FSDP gathers the float8 linears' weights in float8, as torchtitan's float8 docs and "
           "its 405B config run tensorwise scaling; its bare default gathers bf16: say fp8_all_gather: off)");
  if (w.fp8_all_gather == Setting::kOn && !r.float8_all_gather && TorchtitanItself(l) && w.precision == Dtype::kFp8 &&
      TorchtitanFp8Recipe(w) != Fp8Recipe::kTensorwise)
    assume("fp8_all_gather: off (torchtitan refuses float8 all-gathers beside any scaling but tensorwise)");
  const bool fsdp_root = l.pp == 1 && l.zero >= 3 && l.dp * l.cp > 1;
  const bool torch_reshards_root = w.torch_version >= defaults::kTorchRootReshardVersion;
  if (TorchtitanItself(l) && fsdp_root) {
    r.root_keeps_embeddings = !ReleaseAtLeast(w, defaults::kTorchtitanEmbeddingUnit);
    r.last_unit_kept = r.root_keeps_embeddings;
    r.root_reshards_after_forward =
        r.root_keeps_embeddings && (torch_reshards_root || ReleaseAtLeast(w, defaults::kTorchRootReshardNightly));
    if (w.release == 0 && !r.root_reshards_after_forward)
      assume("FSDP root: embeddings, norm and head gathered from forward to backward (torchtitan before 2025-07-28 "
             "on PyTorch before 2.8; later releases reshard the embeddings after forward as a unit of their own: say "
             "release: with the date of yours, and torch: with PyTorch's version)");
  } else if (l.stack == Stack::kTorchtune && fsdp_root) {
    // torchtune's full fine-tune configs for the Llama 3 family (llama3, llama3_1, llama3_3:
    // 8B_full, 70B_full, untied 128,256-token vocabularies) set custom_sharded_layers:
    // ['tok_embeddings', 'output'], "useful for large vocab size models"; its other configs
    // (Llama 2, the tied Llama 3.2, Qwen, Gemma, every LoRA) leave both in the root.
    const bool llama3_full = !w.lora_like() && m.model_type == "llama" && m.vocab >= 128000 && !m.tied_embeddings;
    const int sharded = w.custom_sharded_layers >= 0 ? w.custom_sharded_layers
                        : llama3_full               ? kShardedEmbeddings | kShardedOutput
                                                    : 0;
    r.root_keeps_embeddings = !(sharded & kShardedEmbeddings);
    r.head_own_unit = (sharded & kShardedOutput) && !m.tied_embeddings;
    if (w.custom_sharded_layers < 0 && sharded)
      assume("custom_sharded_layers: [tok_embeddings, output] (torchtune's Llama 3 full fine-tune configs make them FSDP "
             "units of their own; say custom_sharded_layers: [] for a config without them)");
    r.root_reshards_after_forward = torch_reshards_root;
    if (w.torch_version == 0 && (r.root_keeps_embeddings || !r.head_own_unit))
      assume("FSDP root: embeddings, norm and head gathered from forward to backward (PyTorch before 2.8; from 2.8 "
             "torchtune's root reshards after forward: say torch: with PyTorch's version)");
  }

  if (w.loss != LossKind::kAuto) {
    r.loss = w.loss;
  } else if (l.stack == Stack::kTorchtune) {
    r.loss = LossKind::kChunked;
    assume("loss: chunked (torchtune's configs use CEWithChunkedOutputLoss, 8 chunks)");
  } else if (l.stack == Stack::kAutomodel) {
    r.loss = LossKind::kStandard;
    assume("loss: standard (AutoModel's MaskedCrossEntropy upcasts logits to fp32; its benchmark configs set fp32_upcast: false, which is loss: no_upcast)");
  } else if (TorchtitanItself(l) && w.compile == Setting::kOn) {
    // Releases from 2025-04-02 compile the loss with the model; earlier ones, and the published
    // benchmarks before them, ran it eager. Unstated, the eager one holds more, so it is the
    // default that never calls an OOM a fit.
    const bool compiled = ReleaseAtLeast(w, defaults::kTorchtitanCompiledLoss);
    r.loss = compiled ? LossKind::kCompiled : LossKind::kStandard;
    if (compiled)
      assume("loss: compiled (torchtitan compiles the loss with the model from 2025-04-02; the release stated is that or later)");
    else if (w.release == 0)
      assume("loss: standard (torchtitan releases before 2025-04-02 ran the loss eager; later ones compile it with the "
             "model: say release: with the date of yours, or loss: compiled)");
  } else if (l.stack == Stack::kLitgpt) {
    // LitGPT's chunked_cross_entropy (utils.py) on 128-token chunks of the logits (lora.py runs
    // the head per chunk too). Under bf16-true every chunk's log-softmax stays bf16; under
    // bf16-mixed autocast upcasts each chunk alone, as torchtune's chunked loss does.
    r.loss = r.pure_low_precision ? LossKind::kNoUpcast : LossKind::kChunked;
    assume(r.pure_low_precision ? "loss: no_upcast (LitGPT's chunked cross-entropy on the bf16 logits, bf16-true)"
                                : "loss: chunked (LitGPT's chunked cross-entropy, each chunk upcast under autocast)");
  } else if (l.stack == Stack::kLlmFoundry) {
    r.loss = LossKind::kKernel;
    assume("loss: kernel (llm-foundry's models default to loss_fn: fused_crossentropy, flash-attn's cross-entropy kernel)");
  } else if (l.stack == Stack::kUnsloth) {
    if (ReleaseAtLeast(w, defaults::kUnslothCutCrossEntropy)) {
      r.loss = LossKind::kFused;
      assume("loss: fused (Unsloth from 2024-11-21 runs Apple's Cut Cross-Entropy, which holds no logits)");
    } else {
      r.loss = LossKind::kInplace;
      assume(w.release == 0 ? "loss: inplace (Unsloth before 2024-11-21 holds the 16-bit logits and writes their grad over "
                              "them; later releases run Cut Cross-Entropy, which holds none: say release: with the date of "
                              "yours, or loss: fused)"
                            : "loss: inplace (Unsloth before 2024-11-21 holds the 16-bit logits and writes their grad over "
                              "them)");
    }
  }

  // transformers' own loss (HF Trainer, TRL, LLaMA-Factory; accelerate's FSDP and DeepSpeed
  // under them) by the release stated; unstated, the current one.
  const bool transformers_loss = l.stack == Stack::kHf || (l.stack == Stack::kNative && TransformersModelCode(l));
  if (transformers_loss && r.loss == LossKind::kStandard && w.training()) {
    r.shifted_logits_copy = w.release > 0 && w.release < defaults::kTransformersNoShiftedLogitsCopy;
    if (w.release == 0 && l.stack == Stack::kHf)
      assume("loss: transformers 4.49 or later (earlier releases copy the shifted fp32 logits, 4 B a logit more through "
             "the loss: say release: with your transformers' date)");
  }

  if (l.stack == Stack::kAutomodel && w.training())
    assume("backend: te (AutoModel's BackendConfig builds attention, linears and RMSNorm from Transformer Engine where "
           "it is installed, as in NVIDIA's containers: cuDNN attention on Hopper, fused norms and RoPE)");
  if (!(l.fixed & kKeySp) && l.tp > 1 && l.framework == Framework::kMegatron)
    assume("sp: on (Megatron requires it for MoE with TP; NeMo and Megatron-Bridge recipes set it whenever tp > 1)");
  if (!(l.fixed & kKeySp) && l.tp > 1 && l.framework == Framework::kTorchtitan)
    assume("sp: on (torchtitan's tensor parallelism always shards the sequence)");
  if (!(l.fixed & kKeyDispatcher) && l.ep > 1 && m.is_moe()) {
    if (l.stack == Stack::kNemo)
      assume("dispatcher: flex (NeMo's and Megatron-Bridge's MoE performance recipes run DeepEP or HybridEP; "
             "say dispatcher=alltoall for a recipe that sets moe_token_dispatcher_type alltoall)");
    else if (l.stack == Stack::kAutomodel)
      assume("dispatcher: flex (AutoModel's MoE benchmark configs run DeepEP; say dispatcher=alltoall without it)");
    else if (l.framework == Framework::kMegatron)
      assume("dispatcher: alltoall (what Megatron-LM tells expert-parallel runs to set; its own default is "
             "allgather: say dispatcher=allgather, or dispatcher=flex for DeepEP or HybridEP)");
  }
  if (l.stack == Stack::kUnsloth && !(l.fixed & kKeyAc))
    assume("ac: full (Unsloth's recommended use_gradient_checkpointing=\"unsloth\")");
  if (l.stack == Stack::kTorchtune && !(l.fixed & kKeyAc))
    assume("ac: full (torchtune's configs set enable_activation_checkpointing: True)");
  if (l.stack == Stack::kAutomodel && !(l.fixed & kKeyAc))
    assume("ac: none (AutoModel's distributed.activation_checkpointing defaults to false)");
  if (l.framework == Framework::kDeepSpeed && l.zero == 2 && w.overlap_comm == Setting::kAuto)
    assume("overlap_comm: true (the ZeRO-2 configs of DeepSpeed's tutorial, transformers' guide and LLaMA-Factory set it, "
           "and shardplan's emitted config does: a second reduce bucket; DeepSpeed alone leaves it off below stage 3: "
           "say overlap_comm: false)");
  return r;
}

ServingProfile ResolveServingProfile(const Workload& w, const GpuSpec& gpu, std::vector<std::string>* assumed) {
  const InferenceSpec& inf = w.inference;
  const int64_t len = w.context_len();
  const ServingProfile v1{defaults::kVllmBatchedTokens,
                          UsableMemory(gpu) >= 70 * kGiB && gpu.compute_capability != 80 ? defaults::kVllmMaxSeqsLargeGpu
                                                                                          : defaults::kVllmMaxSeqs};
  const ServingProfile v0{len > defaults::kVllmV0LongContext ? defaults::kVllmV0MinBatchedTokens
                                                             : std::max(len, defaults::kVllmV0MinBatchedTokens),
                          defaults::kVllmMaxSeqs};
  ServingProfile p = ReleaseAtLeast(w, defaults::kVllmV1Default) ? v1
                     : w.release > 0                              ? v0
                                                                  : ServingProfile{std::max(v0.tokens, v1.tokens),
                                                                                   std::max(v0.sequences, v1.sequences)};
  if (inf.engine == ServingEngine::kTensorrtLlm)
    p = ServingProfile{defaults::kTrtllmMaxNumTokens,
                       std::max<int64_t>(1, (defaults::kTrtllmMaxNumTokens + std::max<int64_t>(len, 1) - 1) /
                                                std::max<int64_t>(len, 1))};
  if (inf.max_num_seqs > 0 && inf.engine == ServingEngine::kVllm) p.sequences = inf.max_num_seqs;
  if (inf.max_num_batched_tokens > 0) {
    p.tokens = inf.max_num_batched_tokens;
  } else if (assumed && w.release == 0 && inf.engine == ServingEngine::kVllm && v0.tokens > v1.tokens) {
    assumed->push_back("max_num_batched_tokens: " + std::to_string(p.tokens) +
                       " (vLLM before 0.8.0, the V0 engine, profiled max_model_len tokens without chunked prefill; V1 "
                       "profiles 8192: say release: with your vLLM's date, or max_num_batched_tokens)");
  }
  return p;
}

}  // namespace shardplan
