#include "launch/megatron_args.h"

#include <algorithm>

#include <fmt/format.h>

#include "planner/recipe.h"

namespace shardplan::launch {
namespace {

using Flags = std::vector<std::string>;

void Add(Flags& f, std::string_view flag) { f.emplace_back(flag); }
void Add(Flags& f, std::string_view flag, int64_t v) { f.push_back(fmt::format("{} {}", flag, v)); }

void ModelFlags(const ModelSpec& m, Flags& f) {
  Add(f, "--num-layers", m.layers);
  Add(f, "--hidden-size", m.hidden);
  Add(f, "--ffn-hidden-size", m.intermediate);
  Add(f, "--num-attention-heads", m.heads);
  if (m.kv_heads > 0 && m.kv_heads < m.heads) {
    Add(f, "--group-query-attention");
    Add(f, "--num-query-groups", m.kv_heads);
  }
  if (m.heads > 0 && m.head_dim > 0 && m.head_dim * m.heads != m.hidden) Add(f, "--kv-channels", m.head_dim);
  if (m.max_positions > 0) Add(f, "--max-position-embeddings", m.max_positions);
  if (m.mlp == MlpKind::kGated) Add(f, "--swiglu");
  if (m.norm == NormKind::kRms) f.emplace_back("--normalization RMSNorm");
  // Nemotron-H's attention has no RoPE; Megatron-core has no ALiBi (its choices are
  // learned_absolute, rope, mrope, relative and none), so an ALiBi model is built without a
  // position table rather than with a learned one it does not have (MegatronArgs notes it).
  if (m.is_hybrid() || m.position == PositionKind::kAlibi) f.emplace_back("--position-embedding-type none");
  else if (m.position == PositionKind::kRotary) f.emplace_back("--position-embedding-type rope");
  if (!m.tied_embeddings) Add(f, "--untie-embeddings-and-output-weights");
  if (!m.qkv_bias && !m.mlp_bias && !m.o_bias) Add(f, "--disable-bias-linear");
  if (m.qkv_bias && !m.mlp_bias) Add(f, "--add-qkv-bias");
  if (m.is_moe()) {
    Add(f, "--num-experts", m.experts);
    Add(f, "--moe-router-topk", m.experts_per_token);
    Add(f, "--moe-ffn-hidden-size", m.expert_intermediate);
    Add(f, "--moe-grouped-gemm");
    if (m.is_hybrid()) {  // Nemotron-H: a shared expert, a sigmoid router with its expert bias
      Add(f, "--moe-shared-expert-intermediate-size", m.shared_intermediate);
      Add(f, "--moe-router-enable-expert-bias");
      f.emplace_back("--moe-router-score-function sigmoid");
      if (m.moe_latent > 0) Add(f, "--moe-latent-size", m.moe_latent);
    }
  }
  if (m.is_hybrid()) {
    // pretrain_mamba.py's hybrid stack (Megatron-LM arguments.py): one block per pattern
    // letter, Mamba-2 mixers of the given heads and groups, squared-ReLU MLPs, no RoPE.
    f.emplace_back("--hybrid-override-pattern " + m.hybrid);
    Add(f, "--mamba-num-heads", m.linear.heads);
    Add(f, "--mamba-head-dim", m.linear.head_dim);
    Add(f, "--mamba-state-dim", m.linear.state);
    Add(f, "--mamba-num-groups", m.linear.groups);
    Add(f, "--squared-relu");
  }
}

// Megatron needs layers % pp == 0 unless the first/last stage sizes are given; stages
// in between share the remaining layers evenly (arguments.py).
Status StageFlags(const Plan& plan, Flags& f) {
  const Layout& l = plan.layout;
  if (l.pp == 1) return Status::Ok();
  const std::vector<int> st = StageLayers(plan.model, l);
  const size_t n = st.size();
  bool all_equal = true;
  for (int v : st) all_equal &= v == st[0];
  if (l.vpp > 1) {
    if (!all_equal || st[0] % l.vpp != 0)
      return Status::BadInput(fmt::format(
          "Megatron: vpp={} needs equal pipeline stages whose layers divide by vpp", l.vpp));
    Add(f, "--num-layers-per-virtual-pipeline-stage", st[0] / l.vpp);
  }
  if (all_equal) return Status::Ok();
  for (size_t i = 2; i + 1 < n; ++i)
    if (st[i] != st[1])
      return Status::BadInput("Megatron: only the first and last pipeline stages may differ in size");
  if (n == 2 || st[0] != st[1]) Add(f, "--decoder-first-pipeline-num-layers", st[0]);
  if (n > 2 && st[n - 1] != st[1]) Add(f, "--decoder-last-pipeline-num-layers", st[n - 1]);
  return Status::Ok();
}

void RecomputeFlags(const Layout& l, Flags& f) {
  if (l.ac == Recompute::kSelective) {
    f.emplace_back("--recompute-granularity selective");  // core_attn by default
    if (l.ac_modules != kAcCoreAttn) {
      std::string mods = AcModulesName(l.ac_modules);
      std::replace(mods.begin(), mods.end(), '/', ' ');
      f.emplace_back("--recompute-modules " + mods);
    }
  } else if (l.ac == Recompute::kFull) {
    f.emplace_back("--recompute-granularity full");
    if (l.ac_layers > 0) {  // the first ac_layers layers of each stage, the rest keep activations
      f.emplace_back("--recompute-method block");
      Add(f, "--recompute-num-layers", l.ac_layers);
    } else {                // every layer, one checkpoint each
      f.emplace_back("--recompute-method uniform");
      Add(f, "--recompute-num-layers", 1);
    }
  }
}

void PrecisionFlags(const Plan& plan, Flags& f) {
  switch (plan.workload.precision) {
    case Dtype::kBf16: Add(f, "--bf16"); break;
    case Dtype::kFp16: Add(f, "--fp16"); break;
    case Dtype::kFp8:
      Add(f, "--bf16");
      f.emplace_back("--fp8-format hybrid");  // e4m3 forward, e5m2 gradients (Transformer Engine)
      break;
    case Dtype::kFp4:  // Megatron-Bridge's bf16_with_nvfp4_mixed: TE's NVFP4 recipe inside bf16 training
      Add(f, "--bf16");
      f.emplace_back("--fp4-format e2m1");
      f.emplace_back("--fp4-recipe nvfp4");
      break;
    default: break;
  }
  // Layers kept in BF16 (megatron/core/fp8_utils.py and fp4_utils.py get_*_context).
  const Bf16Layers kept = LowPrecisionBf16Layers(plan.model, plan.workload, plan.layout);
  if (kept.count() > 0) {
    Add(f, "--first-last-layers-bf16");
    f.emplace_back("--num-layers-at-start-in-bf16 " + std::to_string(kept.start));
    f.emplace_back("--num-layers-at-end-in-bf16 " + std::to_string(kept.end));
  }
}

Status Check(const Plan& plan) {
  const Layout& l = plan.layout;
  if (const std::string gap = MegatronLmGap(plan.model); !gap.empty())
    return Status::BadInput("Megatron-LM: " + gap + "; use --format torchtitan, accelerate or deepspeed");
  if (plan.workload.lora_like())
    return Status::BadInput("Megatron-LM: pretrain_gpt.py has no LoRA; use --format accelerate or deepspeed");
  if (l.zero >= 2)
    return Status::BadInput(fmt::format(
        "Megatron-LM: zero={} is Megatron-FSDP, which is not emitted; use zero=1 "
        "(--use-distributed-optimizer) or --format torchtitan/deepspeed", l.zero));
  if (l.offload_params != Offload::kNone || l.offload_optimizer == Offload::kNvme)
    return Status::BadInput("Megatron-LM: only CPU offload of the optimizer is supported");
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<std::string>> MegatronFlags(const Plan& plan, const JobShape& s) {
  const Layout& l = plan.layout;
  SP_RETURN_IF_ERROR(Check(plan));
  Flags f;
  Add(f, "--tensor-model-parallel-size", l.tp);
  Add(f, "--pipeline-model-parallel-size", l.pp);
  SP_RETURN_IF_ERROR(StageFlags(plan, f));
  Add(f, "--context-parallel-size", l.cp);
  if (plan.model.is_moe()) {
    Add(f, "--expert-model-parallel-size", l.ep);
    Add(f, "--expert-tensor-parallel-size", l.etp);
    // The layout's token exchange; flex runs DeepEP, or HybridEP where an NVLink domain spans
    // nodes (GB200 NVL72), as Megatron-Bridge's flex_dispatcher_backend.py allows them.
    f.emplace_back("--moe-token-dispatcher-type " + std::string(DispatcherName(l.dispatcher)));
    if (l.dispatcher == EpDispatch::kFlex)
      f.emplace_back(std::string("--moe-flex-dispatcher-backend ") +
                     (plan.cluster.nvlink_domain_size() > plan.cluster.gpus_per_node ? "hybridep" : "deepep"));
    // Megatron-Bridge's moe_a2a_overlap sets both (utils/overrides.py).
    if (l.ep_overlap) {
      Add(f, "--overlap-moe-expert-parallel-comm");
      Add(f, "--delay-wgrad-compute");
    }
  }
  if (l.sp && l.tp > 1) Add(f, "--sequence-parallel");  // Megatron turns it off at tp=1
  if (l.tp_overlap && l.sp && l.tp > 1) Add(f, "--tp-comm-overlap");  // TE userbuffers; needs SP
  if (l.zero == 1) {
    Add(f, "--use-distributed-optimizer");  // shards optimizer states over DP: ZeRO-1
    Add(f, "--overlap-grad-reduce");
    Add(f, "--overlap-param-gather");
  }
  if (l.offload_optimizer == Offload::kCpu) Add(f, "--optimizer-cpu-offload");
  RecomputeFlags(l, f);
  Add(f, "--micro-batch-size", s.micro_batch);
  Add(f, "--global-batch-size", s.global_batch);  // Megatron derives accumulation from it
  Add(f, "--seq-length", plan.workload.seq_len);
  PrecisionFlags(plan, f);
  Add(f, "--clip-grad", 1);
  ModelFlags(plan.model, f);
  return f;
}

StatusOr<Emitted> MegatronArgs(const Plan& plan, const JobShape& s) {
  SP_ASSIGN_OR_RETURN(std::vector<std::string> flags, MegatronFlags(plan, s));
  Emitted out;
  std::string t = "# shellcheck shell=bash\n";
  t += "# Megatron-LM arguments for " + plan.model.name + ", written by shardplan emit.\n";
  t += std::string("# Usage: source megatron_args.sh, then run ") + (plan.model.is_hybrid() ? "pretrain_mamba.py" : "pretrain_gpt.py") +
       " \"${MEGATRON_ARGS[@]}\"\n";
  t += "# followed by your data and tokenizer arguments (--data-path, --tokenizer-type, ...).\n";
  t += "# shellcheck disable=SC2034  # used by the script that sources this file\n";
  t += "MEGATRON_ARGS=(\n";
  for (const std::string& flag : flags) t += "  " + flag + "\n";
  t += ")\n";
  if (plan.model.attention == AttentionKind::kMla)
    out.Note("Megatron: add the multi-latent-attention flags (--multi-latent-attention, "
             "--q-lora-rank, --kv-lora-rank, ...) for this MLA model");
  if (plan.model.position == PositionKind::kAlibi && !plan.model.is_hybrid())
    out.Note("Megatron: Megatron-core has no ALiBi; these arguments build " + plan.model.name +
             " without position embeddings (Megatron-DeepSpeed's --position-embedding-type alibi has it)");
  if (plan.model.parallel_residual)
    out.Note("Megatron: Megatron-core's layer runs attention, then the MLP; " + plan.model.name +
             "'s parallel block (both on one normed input) has no flag, so these arguments build the sequential "
             "layer with the same parameters");
  if (!plan.model.vision.kind.empty())
    out.Note("Megatron: these arguments build the text tower only; " + plan.model.vision.kind +
             "'s vision encoder needs a multimodal entry point (Megatron-Bridge's VLM recipes)");
  out.Add("megatron_args.sh", t);
  return out;
}

}  // namespace shardplan::launch
