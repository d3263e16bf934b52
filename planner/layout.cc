#include "planner/layout.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <string_view>
#include <tuple>
#include <cstdio>
#include <map>
#include <numeric>

#include "planner/framework_defaults.h"
#include "planner/quantization.h"
#include "planner/strings.h"

namespace shardplan {
namespace {

struct KeyInfo {
  const char* name;
  LayoutKey bit;
};

constexpr KeyInfo kKeys[] = {
    {"framework", kKeyFramework}, {"dp", kKeyDp}, {"tp", kKeyTp}, {"pp", kKeyPp}, {"vpp", kKeyVpp},
    {"cp", kKeyCp}, {"ep", kKeyEp}, {"etp", kKeyEtp}, {"sp", kKeySp}, {"zero", kKeyZero},
    {"shard_group", kKeyShardGroup}, {"ac", kKeyAc}, {"ac_layers", kKeyAcLayers},
    {"offload_optimizer", kKeyOffloadOptimizer}, {"offload_params", kKeyOffloadParams}, {"mbs", kKeyMbs},
    {"grad_accum", kKeyGradAccum}, {"reshard", kKeyReshard}, {"stages", kKeyStages}, {"weights", kKeyWeights},
    {"kv_cache", kKeyKvCache}, {"batch", kKeyBatch}, {"ac_modules", kKeyAcModules}, {"tp_overlap", kKeyTpOverlap},
    {"pp_schedule", kKeyPpSchedule}, {"dispatcher", kKeyDispatcher}, {"ep_overlap", kKeyEpOverlap}};

constexpr std::pair<const char*, AcModule> kAcModules[] = {
    {"core_attn", kAcCoreAttn}, {"moe_act", kAcMoeAct}, {"layernorm", kAcLayernorm}, {"mla_up_proj", kAcMlaUpProj},
    {"mlp", kAcMlp},           {"moe", kAcMoe},         {"shared_experts", kAcSharedExperts}};

// The names frameworks and papers give the same settings (Megatron's flags, DeepSpeed's and
// accelerate's config keys), read as shardplan's keys.
std::string CanonicalKey(const std::string& key) {
  static const std::map<std::string, std::string> aliases = {
      {"tensor_parallel", "tp"}, {"tensor_model_parallel_size", "tp"}, {"tp_size", "tp"},
      {"pipeline_parallel", "pp"}, {"pipeline_model_parallel_size", "pp"}, {"pp_size", "pp"},
      {"data_parallel", "dp"}, {"dp_size", "dp"}, {"context_parallel", "cp"}, {"context_parallel_size", "cp"},
      {"cp_size", "cp"}, {"expert_parallel", "ep"}, {"expert_model_parallel_size", "ep"}, {"ep_size", "ep"},
      {"expert_tensor_parallel_size", "etp"}, {"virtual_pipeline_model_parallel_size", "vpp"}, {"vp", "vpp"},
      {"sequence_parallel", "sp"}, {"zero_stage", "zero"}, {"stage", "zero"}, {"micro_batch", "mbs"},
      {"micro_batch_size", "mbs"}, {"gradient_accumulation_steps", "grad_accum"}, {"recompute", "ac"},
      {"activation_checkpointing", "ac"}, {"gradient_checkpointing", "ac"}, {"recompute_granularity", "ac"},
      {"recompute_modules", "ac_modules"}, {"reshard_after_forward", "reshard"}, {"async_tp", "tp_overlap"},
      {"tp_comm_overlap", "tp_overlap"}, {"enable_async_tensor_parallel", "tp_overlap"},
      // The names DeepSpeed, torchtitan, AutoModel and Megatron configs give the same keys.
      {"vpp_size", "vpp"}, {"virtual_pipeline", "vpp"}, {"virtual_pipeline_parallel", "vpp"},
      {"expert_tensor_parallel", "etp"}, {"etp_size", "etp"}, {"zero_optimization_stage", "zero"},
      {"offload_optimizer_device", "offload_optimizer"}, {"offload_param_device", "offload_params"},
      {"offload_param", "offload_params"}, {"train_micro_batch_size_per_gpu", "mbs"},
      {"micro_batch_size_per_gpu", "mbs"}, {"local_batch_size", "mbs"}, {"gradient_accumulation", "grad_accum"},
      {"activation_checkpoint", "ac"}, {"pipeline_parallel_schedule", "pp_schedule"}, {"schedule", "pp_schedule"},
      {"moe_token_dispatcher_type", "dispatcher"}, {"token_dispatcher", "dispatcher"},
      {"moe_flex_dispatcher_backend", "dispatcher"}, {"moe_a2a_overlap", "ep_overlap"},
      {"overlap_moe_expert_parallel_comm", "ep_overlap"},
      // torchtitan's [parallelism] degrees (dp_shard and dp_replicate are read in ParseLayout).
      {"tensor_parallel_degree", "tp"}, {"pipeline_parallel_degree", "pp"}, {"context_parallel_degree", "cp"},
      {"expert_parallel_degree", "ep"}, {"expert_tensor_parallel_degree", "etp"},
      {"data_parallel_shard_degree", "dp_shard"}, {"data_parallel_replicate_degree", "dp_replicate"},
      // Megatron's --recompute-method and --recompute-num-layers, and NeMo 1.x's names for
      // them (read in ParseLayout).
      {"activations_checkpoint_granularity", "ac"}, {"activations_checkpoint_method", "recompute_method"},
      {"activations_checkpoint_num_layers", "recompute_num_layers"},
      // FSDP1's ShardingStrategy, as accelerate's config names it too (read in ParseLayout).
      {"fsdp_sharding_strategy", "sharding_strategy"}, {"sharding", "sharding_strategy"}};
  auto it = aliases.find(key);
  return it == aliases.end() ? key : it->second;
}

// ac=true / gradient_checkpointing=true means full recomputation, false none.
std::string CanonicalRecompute(const std::string& v) {
  const std::string l = Lower(v);
  if (l == "true" || l == "on" || l == "yes" || l == "1") return "full";
  if (l == "false" || l == "off" || l == "no" || l == "0") return "none";
  if (l == "op") return "selective";  // torchtitan's selective_ac_option = "op"
  return l;
}

std::vector<std::string> KeyNames() {
  std::vector<std::string> v;
  for (const auto& k : kKeys) v.emplace_back(k.name);
  return v;
}

Status Bad(const std::string& key, const std::string& expected, const std::string& got) {
  return Status::BadInput("--layout " + key + ": expected " + expected + ", got \"" + got + "\"");
}

StatusOr<int> ParseCount(const std::string& key, const std::string& v, int min) {
  int out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || out < min || out > (1 << 24))
    return Bad(key, "an integer >= " + std::to_string(min), v);
  return out;
}

StatusOr<bool> ParseSwitch(const std::string& key, const std::string& written) {
  const std::string v = Lower(written);
  if (v == "on" || v == "true" || v == "1" || v == "yes") return true;
  if (v == "off" || v == "false" || v == "0" || v == "no") return false;
  return Bad(key, "on or off", written);
}

Status SetKey(Layout& l, const std::string& key, const std::string& v) {
  if (key == "framework") {
    // The names users give their stack; each maps to the engine that shards and the library
    // whose recipe defaults apply (Megatron-DeepSpeed runs DeepSpeed's engine; NeMo and
    // Megatron-Bridge run Megatron-core; accelerate's FSDP is FSDP).
    struct Named {
      Framework engine;
      Stack stack;
    };
    static const std::map<std::string, Named> f = {
        {"deepspeed", {Framework::kDeepSpeed, Stack::kNative}}, {"megatron-deepspeed", {Framework::kDeepSpeed, Stack::kMegatronDeepSpeed}},
        {"fsdp", {Framework::kFsdp, Stack::kNative}},           {"fsdp2", {Framework::kFsdp, Stack::kNative}},
        {"accelerate", {Framework::kFsdp, Stack::kNative}},     {"megatron", {Framework::kMegatron, Stack::kNative}},
        {"megatron-lm", {Framework::kMegatron, Stack::kNative}}, {"megatron-core", {Framework::kMegatron, Stack::kNative}},
        {"nemo", {Framework::kMegatron, Stack::kNemo}},         {"megatron-bridge", {Framework::kMegatron, Stack::kNemo}},
        {"nemo2", {Framework::kMegatron, Stack::kNemo}},        {"mcore", {Framework::kMegatron, Stack::kNative}},
        {"torchtitan", {Framework::kTorchtitan, Stack::kNative}}, {"torchtune", {Framework::kFsdp, Stack::kTorchtune}},
        {"hf", {Framework::kFsdp, Stack::kHf}},                 {"transformers", {Framework::kFsdp, Stack::kHf}},
        {"trl", {Framework::kFsdp, Stack::kHf}},                {"peft", {Framework::kFsdp, Stack::kHf}},
        // Fine-tuning front ends that drive HF Trainer (their DeepSpeed or FSDP runs name
        // that engine instead).
        {"llamafactory", {Framework::kFsdp, Stack::kHf}},       {"llama-factory", {Framework::kFsdp, Stack::kHf}},
        {"axolotl", {Framework::kFsdp, Stack::kHf}},
        // MosaicML llm-foundry trains through Composer's FSDP (FULL_SHARD by default).
        {"llm-foundry", {Framework::kFsdp, Stack::kLlmFoundry}}, {"llmfoundry", {Framework::kFsdp, Stack::kLlmFoundry}},
        {"composer", {Framework::kFsdp, Stack::kLlmFoundry}},
        {"fms-fsdp", {Framework::kFsdp, Stack::kFmsFsdp}},
        // LitGPT's finetune and pretrain commands: Fabric's FSDP when devices x num_nodes > 1.
        {"litgpt", {Framework::kFsdp, Stack::kLitgpt}},         {"lit-gpt", {Framework::kFsdp, Stack::kLitgpt}},
        {"unsloth", {Framework::kFsdp, Stack::kUnsloth}},
        // NeMo AutoModel: FSDP2 on a device mesh with PP, EP and CP, the composition torchtitan runs.
        {"automodel", {Framework::kTorchtitan, Stack::kAutomodel}}, {"nemo-automodel", {Framework::kTorchtitan, Stack::kAutomodel}}};
    auto it = f.find(Lower(v));
    if (it == f.end()) {
      std::vector<std::string> names;
      for (const auto& [name, named] : f) names.push_back(name);
      const std::string hint = Suggest(Lower(v), names);
      return Bad(key, "deepspeed, fsdp, megatron, torchtitan, torchtune, hf, unsloth, nemo, automodel, llm-foundry, fms-fsdp or litgpt" +
                          (hint.empty() ? std::string() : " (did you mean '" + hint + "'?)"), v);
    }
    l.framework = it->second.engine;
    l.stack = it->second.stack;
  } else if (key == "ac") {
    if (v == "none") l.ac = Recompute::kNone;
    else if (v == "selective") l.ac = Recompute::kSelective;
    else if (v == "full") l.ac = Recompute::kFull;
    else return Bad(key, "none, selective or full", v);
  } else if (key == "offload_optimizer" || key == "offload_params") {
    Offload o;
    const std::string lower = Lower(v);
    if (lower == "none") o = Offload::kNone;
    else if (lower == "cpu") o = Offload::kCpu;
    else if (lower == "nvme") o = Offload::kNvme;
    else return Bad(key, "none, cpu or nvme", v);
    (key == "offload_optimizer" ? l.offload_optimizer : l.offload_params) = o;
  } else if (key == "pp_schedule") {
    // The schedule names torchtitan's pipeline_parallel_schedule and AutoModel's pp_schedule
    // take, case and punctuation aside.
    std::string n = Spelling(v);
    n.erase(std::remove(n.begin(), n.end(), '-'), n.end());
    if (n == "1f1b" || n == "interleaved1f1b" || n == "gpipe1f1b") l.pp_schedule = PpSchedule::k1f1b;
    else if (n == "zb" || n == "zbh1" || n == "zerobubble" || n == "interleavedzerobubble") l.pp_schedule = PpSchedule::kZeroBubble;
    else if (n == "zbv" || n == "zbvzerobubble" || n == "vzb") l.pp_schedule = PpSchedule::kZbv;
    else return Bad(key, "1f1b, zb (ZB-H1, InterleavedZeroBubble) or zbv (ZBVZeroBubble)", v);
  } else if (key == "dispatcher") {
    // Megatron's dispatcher types and its flex backends; a2a as papers and tables write it.
    std::string n = Spelling(v);
    n.erase(std::remove(n.begin(), n.end(), '-'), n.end());
    if (n == "alltoall" || n == "a2a" || n == "all2all") l.dispatcher = EpDispatch::kAllToAll;
    else if (n == "allgather") l.dispatcher = EpDispatch::kAllGather;
    else if (n == "flex" || n == "deepep" || n == "hybridep") l.dispatcher = EpDispatch::kFlex;
    else return Bad(key, "alltoall, allgather or flex (deepep, hybridep)", v);
  } else if (key == "sp" || key == "reshard" || key == "tp_overlap" || key == "ep_overlap") {
    SP_ASSIGN_OR_RETURN(bool b, ParseSwitch(key, v));
    (key == "sp" ? l.sp : key == "reshard" ? l.reshard_after_forward : key == "tp_overlap" ? l.tp_overlap : l.ep_overlap) = b;
  } else if (key == "weights" || key == "kv_cache") {
    std::optional<Dtype> d = ParseDtype(v);
    if (!d || (key == "kv_cache" && *d == Dtype::kFp4)) return Bad(key, key == "weights" ? "bf16, fp16, fp8, nvfp4, int8, int4 or nf4" : "bf16, fp16 or fp8", v);
    (key == "weights" ? l.weights : l.kv_cache) = *d;
  } else if (key == "ac_modules") {
    // Megatron's --recompute-modules, '/'-separated (a comma separates layout keys).
    l.ac_modules = 0;
    for (const std::string& part : Split(v, '/')) {
      const std::string name = Trim(part);
      bool found = false;
      for (const auto& [n, bit] : kAcModules)
        if (name == n) l.ac_modules |= bit, found = true;
      if (!found) {
        std::vector<std::string> names;
        for (const auto& [n, bit] : kAcModules) names.emplace_back(n);
        const std::string hint = Suggest(name, names);
        return Bad(key, "Megatron recompute modules separated by '/' (" + Join(names, "/") + ")" +
                            (hint.empty() ? std::string() : ", did you mean '" + hint + "'?"), v);
      }
    }
  } else if (key == "stages") {
    l.stages.clear();
    for (const std::string& part : Split(v, '/')) {
      if (part.empty()) return Bad(key, "layer counts per stage like 10/10/12 (one per stage, none empty)", v);
      SP_ASSIGN_OR_RETURN(int n, ParseCount(key, part, 1));
      l.stages.push_back(n);
    }
  } else if (key == "shard_group" && Lower(v) == "node") {
    l.shard_group = kShardGroupNode;  // the GPUs of one node, as HYBRID_SHARD shards
  } else {
    const int min = (key == "zero" || key == "shard_group" || key == "ac_layers" || key == "batch") ? 0 : 1;
    SP_ASSIGN_OR_RETURN(int n, ParseCount(key, v, min));
    if (key == "zero" && n > 3) return Bad(key, "0, 1, 2 or 3", v);
    int* fields[] = {&l.dp, &l.tp, &l.pp, &l.vpp, &l.cp, &l.ep, &l.etp, &l.zero, &l.shard_group,
                     &l.ac_layers, &l.mbs, &l.grad_accum, &l.batch};
    const char* names[] = {"dp", "tp", "pp", "vpp", "cp", "ep", "etp", "zero", "shard_group",
                           "ac_layers", "mbs", "grad_accum", "batch"};
    for (size_t i = 0; i < std::size(names); ++i)
      if (key == names[i]) *fields[i] = n;
  }
  return Status::Ok();
}

std::string Num(int64_t v) { return std::to_string(v); }

Status Rule(const std::string& rule) { return Status::BadInput("layout breaks a rule: " + rule); }

int DefaultZero(const Layout& l) {
  // HF Trainer and Unsloth without a DeepSpeed/FSDP config replicate (DDP); torchtune's
  // distributed recipes shard with FSDP2.
  if (l.stack == Stack::kHf || l.stack == Stack::kUnsloth) return 0;
  switch (l.framework) {
    case Framework::kFsdp:
    case Framework::kTorchtitan: return 3;   // FULL_SHARD / fully_shard
    case Framework::kMegatron: return 1;     // --use-distributed-optimizer
    case Framework::kDeepSpeed: return 1;
  }
  return 0;
}

Status CheckFramework(const Layout& l) {
  switch (l.framework) {
    case Framework::kFsdp:
      // accelerate's ParallelismConfig, HF's tp_plan and torchtune's tensor_parallel_dim put
      // TP (and accelerate CP) on an FSDP2 mesh; pipelines and experts need another engine.
      if (l.pp > 1 || l.ep > 1)
        return Rule("framework=" + std::string(FrameworkName(l)) + " has no pipeline or expert parallelism: pp and ep must be 1 "
                    "(use torchtitan or megatron to combine FSDP with PP/EP)");
      if (l.zero == 1) return Rule("FSDP has no ZeRO-1 equivalent: zero=0 (NO_SHARD), 2 (SHARD_GRAD_OP) or 3 (FULL_SHARD)");
      break;
    case Framework::kMegatron:
      // zero=2/3 is Megatron-FSDP (--use-megatron-fsdp, --data-parallel-sharding-strategy
      // optim_grads / optim_grads_params); zero=1 the distributed optimizer.
      if (l.offload_params != Offload::kNone) return Rule("Megatron does not offload parameters");
      break;
    case Framework::kTorchtitan:
      if (l.zero == 1 || l.zero == 2) return Rule("torchtitan uses FSDP2: zero must be 0 (replicate) or 3 (fully_shard)");
      if (l.offload_optimizer == Offload::kNvme || l.offload_params == Offload::kNvme)
        return Rule("torchtitan offloads to CPU only (no NVMe)");
      break;
    case Framework::kDeepSpeed:
      if (l.pp > 1 && l.zero > 1) return Rule("DeepSpeed's pipeline engine supports ZeRO stage 0 or 1 only, not " + Num(l.zero));
      // cp > 1 is DeepSpeed-Ulysses (sequence_parallel_size): the sequence is split as with CP.
      break;
  }
  if (l.framework != Framework::kDeepSpeed &&
      (l.offload_optimizer == Offload::kNvme || l.offload_params == Offload::kNvme))
    return Rule("NVMe offload is DeepSpeed ZeRO-Infinity only");
  if ((l.framework == Framework::kFsdp || l.framework == Framework::kTorchtitan) &&
      (l.offload_optimizer != Offload::kNone) != (l.offload_params != Offload::kNone))
    return Rule("FSDP's CPUOffloadPolicy moves parameters, gradients and optimizer states together: "
                "set offload_optimizer and offload_params both to cpu or both to none");
  return Status::Ok();
}

// Rules on the model's shape alone, checked first: they say more than a GPU count would.
Status CheckHeads(const ModelSpec& m, const Layout& l) {
  // NeMo AutoModel's own MoE models take no tensor parallelism: its MoE parallelize_model
  // asserts a TP mesh of one ("Tensor parallelism not supported for custom MoE models",
  // nemo_automodel/components/moe/parallelizer.py); experts split by EP, the rest by FSDP.
  if (l.stack == Stack::kAutomodel && m.is_moe() && l.tp > 1)
    return Rule("framework=automodel runs its MoE models without tensor parallelism (its MoE parallelizer asserts "
                "tp 1): split the experts with ep and the rest with FSDP");
  if (m.heads % l.tp != 0) return Rule("tp (" + Num(l.tp) + ") must divide the attention heads (" + Num(m.heads) + ")");
  if (m.attention == AttentionKind::kGqa && m.kv_heads % l.tp != 0 && l.tp % m.kv_heads != 0)
    return Rule("tp (" + Num(l.tp) + ") must divide the KV heads (" + Num(m.kv_heads) +
                ") or be a multiple of them (KV heads are then replicated, as Megatron does)");
  // Megatron's MambaMixer splits the heads and the B/C groups over TP (mamba_mixer.py asserts
  // both); a Gated DeltaNet's value and key heads split alike.
  const char* mixer = m.linear.delta ? "Gated DeltaNet value heads" : "Mamba heads";
  if (m.linear.heads > 0 && (m.linear.heads % l.tp != 0 || m.linear.groups % l.tp != 0))
    return Rule("tp (" + Num(l.tp) + ") must divide the " + mixer + " (" + Num(m.linear.heads) + ") and groups (" +
                Num(m.linear.groups) + ")");
  // Its context parallelism shards those heads and groups again over CP (mamba_context_parallel.py).
  if (m.linear.heads > 0 && l.cp > 1 &&
      (m.linear.heads % (l.tp * l.cp) != 0 || m.linear.groups % (l.tp * l.cp) != 0))
    return Rule("tp x cp (" + Num(l.tp * l.cp) + ") must divide the " + mixer + " (" + Num(m.linear.heads) + ") and groups (" +
                Num(m.linear.groups) + ") under context parallelism");
  return Status::Ok();
}

// TP across nodes is legal in every framework (NVL72 racks run it inside one NVLink domain);
// the time model prices it on the tier it spans, and the search keeps TP inside a node.
Status CheckModelFit(const ModelSpec& m, const Workload& w, const Layout& l) {
  if (l.pp > m.layers) return Rule("pp (" + Num(l.pp) + ") exceeds the layers (" + Num(m.layers) + ")");
  if (!l.stages.empty()) {
    int64_t sum = std::accumulate(l.stages.begin(), l.stages.end(), int64_t{0});
    if (static_cast<int>(l.stages.size()) != l.pp || sum != m.layers)
      return Rule("stages must list pp (" + Num(l.pp) + ") counts adding up to the layers (" + Num(m.layers) + ")");
  }
  if (l.pp_schedule != PpSchedule::k1f1b && l.pp < 2) return Rule("pp_schedule=zb or zbv needs pp > 1");
  if (l.pp_schedule == PpSchedule::kZbv && l.vpp != 2)
    return Rule("pp_schedule=zbv runs two chunks per rank in a V: vpp must be 2, not " + Num(l.vpp));
  if (l.vpp > 1) {
    if (l.pp < 2) return Rule("vpp > 1 (interleaved pipeline) needs pp > 1");
    // Megatron splits uneven layer counts across virtual stages too
    // (--decoder-first/last-pipeline-num-layers); --account-for-embedding-in-pipeline-split
    // and --account-for-loss-in-pipeline-split let the first and last virtual stage hold
    // the embedding or the loss in a layer's place: Megatron-MoE-ModelZoo runs Qwen3-235B's
    // 94 layers as pp=32 x vpp=3. Every other virtual stage needs a layer.
    if (m.layers + 2 < static_cast<int64_t>(l.pp) * l.vpp)
      return Rule("interleaving needs at least pp x vpp - 2 (" + Num(l.pp * l.vpp - 2) +
                  ") layers (the embedding and the loss may take a virtual stage each), the model has " + Num(m.layers));
  }
  if (w.training() && l.cp > 1 && w.seq_len % (2 * l.cp) != 0)
    return Rule("cp (" + Num(l.cp) + "): the sequence (" + Num(w.seq_len) + ") must split into 2 x cp chunks (load-balanced ring attention)");
  if (!m.is_moe() && l.ep > 1) return Rule("ep > 1 needs a mixture-of-experts model");
  if (m.is_moe() && m.experts % l.ep != 0)
    return Rule("ep (" + Num(l.ep) + ") must divide the experts (" + Num(m.experts) + ")");
  if (l.ep > 1 && (l.dp * l.cp * l.tp) % (l.ep * l.etp) != 0)
    return Rule("ep x etp (" + Num(l.ep * l.etp) + ") must divide dp x cp x tp (" + Num(l.dp * l.cp * l.tp) + ")");
  if (l.shard_group > 0 && l.dp % l.shard_group != 0)
    return Rule("shard_group (" + Num(l.shard_group) + ") must divide dp (" + Num(l.dp) + ")");
  if (l.offload_params != Offload::kNone && l.zero != 3)
    return Rule("offload_params needs zero=3 (parameters must be partitioned to be offloaded)");
  if (l.offload_optimizer != Offload::kNone && l.zero == 0 && l.framework == Framework::kDeepSpeed)
    return Rule("offload_optimizer needs ZeRO stage 1 or higher");
  if (l.ac_layers > 0 && l.ac != Recompute::kFull) return Rule("ac_layers applies to ac=full only");
  if (l.ac_modules != kAcCoreAttn && l.ac != Recompute::kSelective)
    return Rule("ac_modules applies to ac=selective only (Megatron's --recompute-modules)");
  if (l.ac_modules != kAcCoreAttn && l.framework != Framework::kMegatron)
    return Rule("ac_modules is Megatron's --recompute-modules; framework=" + std::string(FrameworkName(l)) + " has no such setting");
  // Megatron's EP all-to-all overlap and the rules its TransformerConfig asserts for it.
  if (l.ep_overlap) {
    if (l.ep < 2) return Rule("ep_overlap needs expert parallelism (ep > 1)");
    if (l.framework != Framework::kMegatron)
      return Rule("ep_overlap is Megatron's --overlap-moe-expert-parallel-comm; framework=" + std::string(FrameworkName(l)) +
                  " has no such setting");
    if (l.dispatcher == EpDispatch::kAllGather) return Rule("ep_overlap needs dispatcher=alltoall or flex, not allgather");
    if (l.pp > 1 && l.vpp < 2) return Rule("ep_overlap with pp > 1 needs an interleaved pipeline (vpp > 1)");
    if (l.ac == Recompute::kFull && !FullRecomputeAllowed(l))
      return Rule("ep_overlap runs without full recomputation (Megatron disables it): use ac=selective or none");
    if (l.ac == Recompute::kSelective && (l.ac_modules & kAcMoe))
      return Rule("ep_overlap runs without recomputing the MoE layer: drop moe from ac_modules");
  }
  return Status::Ok();
}

}  // namespace

std::string_view FrameworkName(Framework f) {
  switch (f) {
    case Framework::kDeepSpeed: return "deepspeed";
    case Framework::kFsdp: return "fsdp";
    case Framework::kMegatron: return "megatron";
    case Framework::kTorchtitan: return "torchtitan";
  }
  return "?";
}

std::string_view FrameworkName(const Layout& l) {
  switch (l.stack) {
    case Stack::kNative: return FrameworkName(l.framework);
    case Stack::kTorchtune: return "torchtune";
    case Stack::kHf: return "hf";
    case Stack::kUnsloth: return "unsloth";
    case Stack::kNemo: return "nemo";
    case Stack::kAutomodel: return "automodel";
    case Stack::kMegatronDeepSpeed: return "megatron-deepspeed";
    case Stack::kLlmFoundry: return "llm-foundry";
    case Stack::kFmsFsdp: return "fms-fsdp";
    case Stack::kLitgpt: return "litgpt";
  }
  return "?";
}

bool MegatronModelCode(const Layout& l) {
  return l.framework == Framework::kMegatron || l.stack == Stack::kMegatronDeepSpeed;
}

bool TransformersModelCode(const Layout& l) {
  return !MegatronModelCode(l) && (l.framework == Framework::kFsdp || l.framework == Framework::kDeepSpeed);
}

// The model families torchtitan builds in its own modules (torchtitan/models: llama3 for
// Llama 2 and 3, qwen3, qwen3_5, deepseek_v3 with Kimi K2, gpt_oss; llama4 in experiments).
// Any other Hugging Face model_type goes through experiments/transformers_modeling_backend
// (from 2025-11-20, commit 58fa181ed; Mistral-7B, Qwen2.5-7B and OLMo among those tested).
namespace {
bool TorchtitanBuildsModel(const ModelSpec& m) {
  static constexpr std::string_view kNative[] = {"llama",       "qwen3",   "qwen3_moe", "qwen3_5", "qwen3_5_moe",
                                                 "deepseek_v3", "kimi_k2", "gpt_oss",   "llama4",  "llama4_text"};
  return std::find(std::begin(kNative), std::end(kNative), m.model_type) != std::end(kNative);
}
}  // namespace

bool TransformersModules(const ModelSpec& m, const Layout& l) {
  return TransformersModelCode(l) || (TorchtitanItself(l) && !TorchtitanBuildsModel(m));
}

std::string MegatronLmGap(const ModelSpec& m) {
  if (m.linear.delta) return "arguments for Gated DeltaNet models (" + m.model_type + ") are not emitted";
  if (m.is_hybrid() && m.model_type != "nemotron_h" && m.model_type != "mamba2")
    return "arguments for " + m.model_type +
           " hybrids (Megatron's hybrid pattern, as written here, spells Nemotron-H's and Mamba-2's blocks only) are not emitted";
  return "";
}

bool TorchtitanItself(const Layout& l) { return l.framework == Framework::kTorchtitan && l.stack == Stack::kNative; }

std::string_view RecomputeName(Recompute r) {
  return r == Recompute::kNone ? "none" : r == Recompute::kSelective ? "selective" : "full";
}

std::string AcModulesName(uint32_t modules) {
  std::vector<std::string> names;
  for (const auto& [n, bit] : kAcModules)
    if (modules & bit) names.emplace_back(n);
  return Join(names, "/");
}

std::string_view DispatcherName(EpDispatch d) {
  return d == EpDispatch::kAllToAll ? "alltoall" : d == EpDispatch::kAllGather ? "allgather" : "flex";
}

std::string_view OffloadName(Offload o) { return o == Offload::kNone ? "none" : o == Offload::kCpu ? "cpu" : "nvme"; }

// Each degree is at most 2^24, but the planner multiplies them (the world size, ep x etp,
// the layers pp x vpp needs, a step's sequences); products past these bounds are no real
// run, and in int they would wrap. The error quotes the largest item at fault.
static Status CheckProducts(const Layout& l, const std::map<std::string, std::string>& items) {
  constexpr int64_t kMaxGpus = int64_t{1} << 24;
  struct Product {
    std::vector<std::pair<const char*, int>> terms;
    int64_t max;
    const char* what;
  };
  const Product products[] = {
      {{{"dp", l.dp}, {"tp", l.tp}, {"pp", l.pp}, {"cp", l.cp}}, kMaxGpus, "GPUs"},
      {{{"ep", l.ep}, {"etp", l.etp}}, kMaxGpus, "GPUs"},
      {{{"pp", l.pp}, {"vpp", l.vpp}}, kMaxGpus, "virtual stages"},
      {{{"mbs", l.mbs}, {"grad_accum", l.grad_accum}, {"dp", l.dp}}, int64_t{1} << 40, "sequences per step"},
  };
  auto fmt_product = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return std::string(buf);
  };
  for (const Product& p : products) {
    double product = 1;  // four factors of 2^24 pass int64; a double compares them exactly enough
    std::string names, worst;
    int worst_value = 0;
    for (const auto& [name, value] : p.terms) {
      product *= value;
      names += (names.empty() ? "" : " x ") + std::string(name);
      if (value > worst_value && items.count(name)) worst_value = value, worst = items.at(name);
    }
    if (product > static_cast<double>(p.max))
      return Status::BadInput("--layout: " + names + " = " + fmt_product(product) + " is past " + Num(p.max) + " " + p.what +
                              " (\"" + worst + "\")");
  }
  return Status::Ok();
}

namespace {

// FSDP1's ShardingStrategy (torch/distributed/fsdp/api.py), by name or by accelerate's number
// (fsdp_sharding_strategy 1-5): the ZeRO stage it is, and whether it shards inside a node only.
// SHARD_GRAD_OP keeps the gathered parameters from forward to backward, ZeRO-2's memory.
bool ParseShardingStrategy(std::string value, int* zero, bool* hybrid) {
  value = Lower(value);
  if (!value.empty() && value[0] == '_') value = value.substr(1);
  static const std::tuple<const char*, const char*, int, bool> kStrategies[] = {
      {"full_shard", "1", 3, false}, {"shard_grad_op", "2", 2, false}, {"no_shard", "3", 0, false},
      {"hybrid_shard", "4", 3, true}, {"hybrid_shard_zero2", "5", 2, true}};
  for (const auto& [name, number, z, h] : kStrategies)
    if (value == name || value == number) {
      *zero = z;
      *hybrid = h;
      return true;
    }
  return false;
}

// Phrases a write-up gives a layout in, from words[i] on: joining words ("with", "and"),
// a parallelism spelled out ("tensor parallel 8"), recomputation ("activation checkpointing",
// "selective recomputation", "no AC"), offload ("CPU offload", "offload optimizer and params",
// "NVMe offload") and FSDP's sharding strategies ("full shard", FULL_SHARD). Appends the
// key=value items they mean to `out` and returns how many words they took; 0 when words[i]
// starts none of them. Offload with no part named is `offload=`, which ParseLayout gives the
// part the framework offloads.
size_t ExpandPhrase(const std::vector<std::string>& words, size_t i, std::vector<std::string>& out) {
  auto at = [&](size_t j) { return j < words.size() && words[j].find('=') == std::string::npos ? Lower(words[j]) : std::string(); };
  auto one_of = [](const std::string& w, std::initializer_list<std::string_view> options) {
    return std::find(options.begin(), options.end(), w) != options.end();
  };
  auto digits = [](const std::string& v) {
    return !v.empty() && v.size() <= 7 && std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); });
  };
  const std::string w = at(i);
  if (one_of(w, {"with", "and", "&", "plus", "on", "using"})) return 1;
  // "tensor parallel 8", "pipeline-parallel size 4", "expert parallelism 8"
  static const std::pair<std::string_view, std::string_view> kAxes[] = {
      {"tensor", "tp"}, {"pipeline", "pp"}, {"data", "dp"}, {"context", "cp"}, {"expert", "ep"}, {"virtual", "vpp"}};
  for (const auto& [axis, key] : kAxes) {
    size_t j = i;
    if (w == axis && one_of(at(i + 1), {"parallel", "parallelism"})) j = i + 2;
    else if (w == std::string(axis) + "-parallel" || w == std::string(axis) + "_parallel" ||
             w == std::string(axis) + "-parallelism")
      j = i + 1;
    else
      continue;
    if (one_of(at(j), {"size", "degree", "of"})) ++j;
    if (!digits(at(j))) return 0;
    out.push_back(std::string(key) + "=" + at(j));
    return j - i + 1;
  }
  // Recomputation.
  static const std::initializer_list<std::string_view> kRecompute = {
      "checkpointing", "checkpoint", "recomputation", "recompute", "ac", "remat", "rematerialization"};
  if (one_of(w, {"activation", "activations", "gradient", "full"}) && one_of(at(i + 1), kRecompute)) {
    out.push_back("ac=full");
    return 2;
  }
  if (one_of(w, {"selective"}) && one_of(at(i + 1), kRecompute)) {
    out.push_back("ac=selective");
    return 2;
  }
  if (w == "no" && one_of(at(i + 1), kRecompute)) {
    out.push_back("ac=none");
    return 2;
  }
  if (one_of(w, {"recomputation", "checkpointing", "activation-checkpointing", "gradient-checkpointing"})) {
    out.push_back("ac=full");
    return 1;
  }
  if (w == "sac") {
    out.push_back("ac=selective");
    return 1;
  }
  // FSDP's sharding strategies in words.
  if (w == "full" && at(i + 1) == "shard") return out.push_back("sharding_strategy=FULL_SHARD"), 2;
  if (w == "shard" && at(i + 1) == "grad" && at(i + 2) == "op") return out.push_back("sharding_strategy=SHARD_GRAD_OP"), 3;
  if (w == "hybrid" && at(i + 1) == "shard") return out.push_back("sharding_strategy=HYBRID_SHARD"), 2;
  if (w == "no" && at(i + 1) == "shard") return out.push_back("sharding_strategy=NO_SHARD"), 2;
  for (const char* strategy : {"full_shard", "shard_grad_op", "no_shard", "hybrid_shard"})
    if (w == strategy) return out.push_back("sharding_strategy=" + w), 1;
  // Offload: the device before or after ("CPU offload", "offload to NVMe"), the part after or
  // before ("offload optimizer", "parameter offload"), several parts joined by "and".
  static const std::initializer_list<std::string_view> kOptimizer = {"optimizer", "optim", "optimizer-states", "opt"};
  static const std::initializer_list<std::string_view> kParams = {"param", "params", "parameters", "parameter", "weights"};
  size_t j = i;
  std::string device = "cpu";
  bool optimizer = false, params = false;
  if (one_of(at(j), {"cpu", "nvme"})) device = at(j++);
  if (one_of(at(j), kOptimizer) && one_of(at(j + 1), {"offload", "offloading", "offloaded"})) optimizer = true, ++j;
  else if (one_of(at(j), kParams) && one_of(at(j + 1), {"offload", "offloading", "offloaded"})) params = true, ++j;
  if (one_of(at(j), {"cpu-offload", "cpu_offload", "nvme-offload", "zero-offload"})) {
    if (at(j).starts_with("nvme")) device = "nvme";
    ++j;
  } else if (one_of(at(j), {"offload", "offloading", "offloaded", "cpu-offloaded"})) {
    if (at(j) == "cpu-offloaded") device = "cpu";
    ++j;
  } else {
    return 0;
  }
  for (bool more = true; more;) {
    more = false;
    if (one_of(at(j), kOptimizer)) optimizer = true, ++j, more = true;
    if (one_of(at(j), kParams)) params = true, ++j, more = true;
    if (one_of(at(j), {"states"})) ++j, more = true;
    if (more && at(j) == "and" && (one_of(at(j + 1), kOptimizer) || one_of(at(j + 1), kParams))) ++j;
  }
  if (one_of(at(j), {"to", "on", "onto"}) && one_of(at(j + 1), {"cpu", "nvme"})) device = at(j + 1), j += 2;
  else if (one_of(at(j), {"cpu", "nvme"})) device = at(j++);
  if (optimizer) out.push_back("offload_optimizer=" + device);
  if (params) out.push_back("offload_params=" + device);
  if (!optimizer && !params) out.push_back("offload=" + device);
  return j - i;
}

// An item of the layout as ParseLayout reads it, and the words it came from, which errors
// quote ("dp4" for dp=4).
struct ExpandedItem {
  std::string item, written;
};

// Layout words as tables and write-ups give them, with no '=': a framework's name
// ("deepspeed", "FSDP2", "torchtitan"), a ZeRO stage ("ZeRO-3", "zero2": DeepSpeed's words, so
// DeepSpeed unless a framework is named), DDP (no sharding), HSDP, a degree run into its key
// ("TP8", "pp4", "VPP2") or beside it ("TP 8"), several joined by '/' or '+' ("TP8/PP4",
// "FSDP2 + TP8"). Each becomes the key=value it means; a word that means none stays as
// written, for the error.
std::vector<ExpandedItem> ExpandBareItems(const std::vector<std::string>& raw) {
  static const char* const kDegrees[] = {"tp", "pp", "dp", "cp", "ep", "etp", "vpp", "vp", "mbs", "fsdp"};
  auto degree_key = [](const std::string& w) -> std::string {
    for (const char* k : kDegrees)
      if (w == k) return k;
    return "";
  };
  auto digits = [](std::string_view v) {
    return !v.empty() && v.size() <= 7 && std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); });
  };
  std::vector<std::string> words;  // '/' and '+' split items that carry no '='
  for (const std::string& r : raw) {
    const std::string item = Trim(r);
    if (item.find('=') != std::string::npos) {
      words.push_back(item);
      continue;
    }
    size_t b = 0;
    for (size_t i = 0; i <= item.size(); ++i)
      if (i == item.size() || item[i] == '/' || item[i] == '+') {
        if (std::string w = Trim(item.substr(b, i - b)); !w.empty()) words.push_back(w);
        b = i + 1;
      }
  }
  // Parentheses are prose around a layout ("FSDP (full shard)"): the words inside count, and
  // errors quote each word as written.
  std::vector<std::string> written;
  {
    std::vector<std::string> kept;
    for (const std::string& w : words) {
      std::string bare = w;
      if (w.find('=') == std::string::npos)
        bare.erase(std::remove_if(bare.begin(), bare.end(), [](char c) { return c == '(' || c == ')'; }), bare.end());
      if (bare.empty()) continue;
      kept.push_back(bare);
      written.push_back(w);
    }
    words = std::move(kept);
  }
  std::vector<ExpandedItem> out;
  std::string zero_word;  // "ZeRO-3" as a word: DeepSpeed's name for its stages
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    auto emit = [&](std::string item) { out.push_back({std::move(item), written[i]}); };
    if (w.find('=') != std::string::npos) {
      emit(w);
      continue;
    }
    const std::string v = Lower(w);
    std::vector<std::string> phrase;
    if (const size_t used = ExpandPhrase(words, i, phrase); used > 0) {
      std::string as_written;
      for (size_t j = i; j < i + used; ++j) as_written += (j > i ? " " : "") + written[j];
      for (std::string& item : phrase) out.push_back({std::move(item), as_written});
      i += used - 1;
      continue;
    }
    // "TP 8": a degree's key, then its value.
    if (const std::string key = degree_key(v); !key.empty() && i + 1 < words.size() && digits(words[i + 1])) {
      out.push_back({key + "=" + words[i + 1], written[i] + " " + written[i + 1]});
      ++i;
      continue;
    }
    // "TP8", "pp4": the value run into the key.
    size_t d = v.size();
    while (d > 0 && std::isdigit(static_cast<unsigned char>(v[d - 1]))) --d;
    if (d > 0 && d < v.size()) {
      std::string key = v.substr(0, d);
      if (!key.empty() && (key.back() == '-' || key.back() == '_')) key.pop_back();  // "zero-3", "tp_8"
      if (key == "zero" || key == "stage") {
        emit("zero=" + v.substr(d));
        zero_word = written[i];
        continue;
      }
      // "FSDP8" is an FSDP degree; FSDP1 and FSDP2 are its versions, framework names.
      const std::string n = v.substr(d);
      if (!degree_key(key).empty() && (key != "fsdp" || (n != "1" && n != "2"))) {
        emit(key + "=" + v.substr(d));
        continue;
      }
    }
    if (v == "ddp") {
      emit("zero=0");
      continue;
    }
    if (v == "hsdp") {
      emit("sharding_strategy=HYBRID_SHARD");
      continue;
    }
    if (v == "sp" || v == "sequence_parallel" || v == "sequence-parallel") {
      emit("sp=on");
      continue;
    }
    Layout scratch;  // a framework's name
    if (SetKey(scratch, "framework", w).ok()) {
      emit("framework=" + w);
      continue;
    }
    emit(w);
  }
  if (!zero_word.empty() && std::none_of(out.begin(), out.end(), [](const ExpandedItem& o) {
        return Lower(o.item).starts_with("framework=") || Lower(o.item).starts_with("framework =");
      }))
    out.push_back({"framework=deepspeed", zero_word});
  return out;
}

}  // namespace

StatusOr<Layout> ParseLayout(std::string_view text) {
  Layout l;
  bool zero_set = false;
  // FSDP1's sharding strategy: its ZeRO stage, and HYBRID_SHARD's shard group of one node.
  std::string strategy_item;
  int strategy_zero = 3;
  bool hybrid = false;
  std::map<std::string, std::string> items;  // key -> the item as written, for errors
  // torchtitan's data-parallel mesh: dp_shard ranks shard (FSDP) and dp_replicate groups of
  // them replicate (HSDP); dp_shard -1 takes the GPUs left. fsdp=N is an FSDP degree.
  int dp_shard = 0, dp_replicate = 0;
  std::string mesh_items;
  // Megatron's recompute method (uniform or block) and its layer count.
  std::string recompute_method, recompute_items;
  int recompute_layers = 0;
  // Offload with no part named, and what it offloads once the framework is known.
  std::string offload_device, offload_item;
  // Items are separated by commas or by spaces ("tp=8 pp=2", as tables and commands write
  // them); a space beside '=' or ',' belongs to its item, which errors quote as written.
  std::vector<std::string> raw_items;
  size_t begin = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ',') {
      raw_items.emplace_back(text.substr(begin, i - begin));
      begin = i + 1;
      continue;
    }
    if (text[i] != ' ' && text[i] != '\t') continue;
    const size_t next = text.find_first_not_of(" \t", i);
    const size_t prev = text.find_last_not_of(" \t", i);  // before the run, within this item
    const bool inside = prev != std::string_view::npos && prev >= begin && text[prev] != '=' &&
                        next != std::string_view::npos && text[next] != '=' && text[next] != ',';
    if (inside) {
      raw_items.emplace_back(text.substr(begin, i - begin));
      begin = next;
    }
    i = (next == std::string_view::npos ? text.size() : next) - 1;
  }
  for (const auto& [raw, written] : ExpandBareItems(raw_items)) {
    std::string item = Trim(raw);
    if (item.empty()) continue;
    const std::string as_written = Trim(written);
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      return Status::BadInput("--layout: expected key=value (or a framework's name, ZeRO-3, TP8, ...), got \"" + as_written + "\"");
    std::string key = Lower(Trim(item.substr(0, eq))), value = Trim(item.substr(eq + 1));
    if (key.empty()) return Status::BadInput("--layout: expected key=value, got \"" + as_written + "\" (no key before '=')");
    key = CanonicalKey(key);
    // An empty value quotes nothing of the input: name the item as written.
    auto quoted = [&](const Status& s) { return value.empty() ? Status::BadInput(s.message() + " (\"" + as_written + "\")") : s; };
    if (key == "dp_shard" || key == "dp_replicate" || key == "fsdp") {
      if (key == "dp_shard" && value == "-1") {
        dp_shard = -1;
      } else {
        StatusOr<int> n = ParseCount(key, value, 1);
        if (!n.ok()) return quoted(n.status());
        (key == "dp_replicate" ? dp_replicate : dp_shard) = *n;
      }
      mesh_items += (mesh_items.empty() ? "" : "\", \"") + as_written;  // each quoted as written
      continue;
    }
    if (key == "offload") {  // offload with no part named: ExpandPhrase's, or offload=cpu
      const std::string device = Lower(value);
      if (device != "cpu" && device != "nvme" && device != "none")
        return quoted(Bad(key, "cpu, nvme or none (or name the part: offload_optimizer, offload_params)", value));
      offload_device = device;
      offload_item = as_written;
      continue;
    }
    if (key == "sharding_strategy") {
      if (!ParseShardingStrategy(value, &strategy_zero, &hybrid))
        return quoted(Bad(key, "FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD or _HYBRID_SHARD_ZERO2 (FSDP's "
                               "ShardingStrategy, or accelerate's 1-5)", value));
      strategy_item = as_written;
      continue;
    }
    if (key == "recompute_method" || key == "recompute_num_layers") {
      if (key == "recompute_method") {
        recompute_method = Lower(value);
        if (recompute_method != "uniform" && recompute_method != "block")
          return quoted(Bad(key, "uniform or block (Megatron's --recompute-method)", value));
      } else {
        StatusOr<int> n = ParseCount(key, value, 1);
        if (!n.ok()) return quoted(n.status());
        recompute_layers = *n;
      }
      recompute_items += (recompute_items.empty() ? "" : "\", \"") + as_written;  // each quoted as written
      continue;
    }
    if (key == "ac") value = CanonicalRecompute(value);
    const KeyInfo* info = nullptr;
    for (const auto& k : kKeys)
      if (key == k.name) info = &k;
    if (!info) {
      // Performance tables list the global batch beside the degrees; it is the workload's.
      if (key == "gbs" || key == "global_batch" || key == "global_batch_size")
        return Status::BadInput("--layout: unknown key '" + key + "': the global batch is the workload's; give "
                                "global_batch: in the workload file or --global-batch");
      const std::string hint = Suggest(key, KeyNames());
      return Status::BadInput("--layout: unknown key '" + key + "'" + (hint.empty() ? "" : ", did you mean '" + hint + "'?") +
                              " (keys: " + Join(KeyNames()) + ")");
    }
    if (Status set = SetKey(l, key, value); !set.ok()) return quoted(set);
    l.fixed |= info->bit;
    zero_set |= key == "zero";
    items[key] = as_written;
  }
  if (dp_shard != 0 || dp_replicate != 0) {
    const int replicate = std::max(dp_replicate, 1);
    if (dp_shard > 0) {
      const int dp = dp_shard * replicate;
      if ((l.fixed & kKeyDp) && l.dp != dp)
        return Status::BadInput("--layout: dp_shard x dp_replicate make dp " + Num(dp) + ", but dp is " + Num(l.dp) +
                                " (\"" + items["dp"] + "\")");
      l.dp = dp;
      l.fixed |= kKeyDp;
      items["dp"] = mesh_items;
      if (dp_shard > 1 && replicate > 1) {
        l.shard_group = dp_shard;
        l.fixed |= kKeyShardGroup;
      }
    } else if (dp_shard < 0 && replicate > 1) {
      return Status::BadInput("--layout: dp_shard=-1 with dp_replicate: give dp_shard as a number (\"" + mesh_items + "\")");
    }
    // Sharding ranks are FSDP (ZeRO-3); replicas alone (dp_shard=1) are DDP.
    if (!zero_set) {
      l.zero = dp_shard == 1 ? 0 : 3;
      zero_set = true;
      l.fixed |= kKeyZero;
    }
  }
  if (!offload_item.empty() && !(l.fixed & (kKeyOffloadOptimizer | kKeyOffloadParams))) {
    // The part each framework offloads when told to offload: DeepSpeed's ZeRO-3 offloads its
    // parameters and optimizer ("ZeRO-3 offload", ZeRO-Infinity), its stages 1-2 the optimizer
    // (ZeRO-Offload); FSDP's CPUOffload the parameters (and the optimizer step with them);
    // Megatron its optimizer (--optimizer-cpu-offload).
    const bool fsdp = (l.fixed & kKeyFramework) && (l.framework == Framework::kFsdp || l.framework == Framework::kTorchtitan);
    const bool zero3 = (l.fixed & kKeyFramework) && l.framework == Framework::kDeepSpeed && zero_set && l.zero == 3;
    const std::vector<std::string> parts = fsdp    ? std::vector<std::string>{"offload_params"}
                                           : zero3 ? std::vector<std::string>{"offload_optimizer", "offload_params"}
                                                   : std::vector<std::string>{"offload_optimizer"};
    for (const std::string& part : parts) {
      SP_RETURN_IF_ERROR(SetKey(l, part, offload_device));
      l.fixed |= part == "offload_params" ? kKeyOffloadParams : kKeyOffloadOptimizer;
      items[part] = offload_item;
    }
  }
  if (!strategy_item.empty()) {
    // A torch FSDP setting: it names the framework where none is, and no other engine has it.
    if (!(l.fixed & kKeyFramework)) {
      l.framework = Framework::kFsdp;
      l.fixed |= kKeyFramework;
    } else if (l.framework != Framework::kFsdp) {
      return Status::BadInput("--layout: \"" + strategy_item + "\" is torch FSDP's sharding strategy, but the framework is " +
                              std::string(FrameworkName(l)) + " (\"" + items["framework"] + "\")");
    }
    if (zero_set && l.zero != strategy_zero)
      return Status::BadInput("--layout: \"" + strategy_item + "\" is ZeRO-" + Num(strategy_zero) + ", but zero is " +
                              Num(l.zero) + " (\"" + items["zero"] + "\")");
    l.zero = strategy_zero;
    zero_set = true;
    l.fixed |= kKeyZero;
    items["zero"] = strategy_item;
    if (hybrid && !(l.fixed & kKeyShardGroup)) {
      l.shard_group = kShardGroupNode;
      l.fixed |= kKeyShardGroup;
      items["shard_group"] = strategy_item;
    }
  }
  if (!recompute_items.empty()) {
    // Full recomputation in Megatron's words: block recomputes the first N layers of each
    // stage (ac_layers=N); uniform checkpoints every N layers, which for N = 1 is every layer.
    if ((l.fixed & kKeyAc) && l.ac != Recompute::kFull)
      return Status::BadInput("--layout: recompute_method and recompute_num_layers go with full recomputation, but ac is " +
                              std::string(RecomputeName(l.ac)) + " (\"" + recompute_items + "\")");
    if (recompute_method.empty())
      return Status::BadInput("--layout: recompute_num_layers needs recompute_method=block or uniform (\"" + recompute_items + "\")");
    if (recompute_method == "uniform" && recompute_layers > 1)
      return Status::BadInput("--layout: recompute_method=uniform with recompute_num_layers " + Num(recompute_layers) +
                              " checkpoints one input per " + Num(recompute_layers) +
                              " layers, which shardplan does not model; block (ac_layers) and uniform 1 (ac=full) it "
                              "does (\"" + recompute_items + "\")");
    if (recompute_method == "block" && recompute_layers == 0)
      return Status::BadInput("--layout: recompute_method=block needs recompute_num_layers (\"" + recompute_items + "\")");
    if ((l.fixed & kKeyAcLayers) && recompute_method == "block" && l.ac_layers != recompute_layers)
      return Status::BadInput("--layout: recompute_num_layers " + Num(recompute_layers) + " and ac_layers " + Num(l.ac_layers) +
                              " disagree (\"" + recompute_items + "\")");
    l.ac = Recompute::kFull;
    l.ac_layers = recompute_method == "block" ? recompute_layers : 0;
    l.fixed |= kKeyAc | kKeyAcLayers;
    items["ac"] = items["ac_layers"] = recompute_items;
  }
  // LLaMA-Factory checkpoints every layer unless told disable_gradient_checkpointing
  // (model/model_utils/checkpointing.py, prepare_model_for_training): its name says ac=full.
  if (const std::string named = items.count("framework") ? Lower(items.at("framework")) : ""; !(l.fixed & kKeyAc) &&
      (named.find("llamafactory") != std::string::npos || named.find("llama-factory") != std::string::npos)) {
    l.ac = Recompute::kFull;
    l.fixed |= kKeyAc;
  }
  if (!zero_set) l.zero = DefaultZero(l);
  SP_RETURN_IF_ERROR(CheckProducts(l, items));
  return l;
}

std::string FormatLayout(const Layout& l) {
  std::string s = "framework=" + std::string(FrameworkName(l));
  s += ",dp=" + Num(l.dp) + ",tp=" + Num(l.tp) + ",pp=" + Num(l.pp) + ",vpp=" + Num(l.vpp) + ",cp=" + Num(l.cp) +
       ",ep=" + Num(l.ep) + ",etp=" + Num(l.etp) + ",sp=" + (l.sp ? "on" : "off") + ",zero=" + Num(l.zero) +
       ",shard_group=" + (l.shard_group == kShardGroupNode ? std::string("node") : Num(l.shard_group)) + ",ac=" + std::string(RecomputeName(l.ac)) +
       ",ac_layers=" + Num(l.ac_layers) + ",offload_optimizer=" + std::string(OffloadName(l.offload_optimizer)) +
       ",offload_params=" + std::string(OffloadName(l.offload_params)) + ",mbs=" + Num(l.mbs) +
       ",grad_accum=" + Num(l.grad_accum) + ",reshard=" + (l.reshard_after_forward ? "on" : "off") +
       ",weights=" + std::string(DtypeName(l.weights)) + ",kv_cache=" + std::string(DtypeName(l.kv_cache)) +
       ",batch=" + Num(l.batch);
  if (l.ac_modules != kAcCoreAttn) s += ",ac_modules=" + AcModulesName(l.ac_modules);
  if (l.tp_overlap) s += ",tp_overlap=on";
  if (l.pp_schedule != PpSchedule::k1f1b) s += std::string(",pp_schedule=") + (l.pp_schedule == PpSchedule::kZbv ? "zbv" : "zb");
  if (l.ep > 1) s += ",dispatcher=" + std::string(DispatcherName(l.dispatcher));
  if (l.ep_overlap) s += ",ep_overlap=on";
  if (!l.stages.empty()) {
    std::vector<std::string> parts;
    for (int n : l.stages) parts.push_back(Num(n));
    s += ",stages=" + Join(parts, "/");
  }
  return s;
}

namespace {

// torchtitan's automatic split (torchtitan/distributed/pipeline.py generate_split_points from
// 2025-04-15, the same numbers in its later generate_llm_fqn_per_model_part): the embeddings
// and the head count as a layer each, the n + 2 go evenly to the pp x vpp virtual stages with
// the remainder one each to the first ones, and rank r holds virtual stages r, r + pp, ...
// (the V of ZBVZeroBubble: r and 2 pp - 1 - r). Llama 3.1 405B on PP 8: 15, 16 x 6, 15.
// Empty when a virtual stage would hold no layer (the even split stands then). Releases
// before gave the first stage n / S and the middle ones the remainder, the last the rest (at
// 9dec370, 2024-12): the same for 405B on PP 8, not modelled apart.
std::vector<int> TorchtitanStageLayers(int64_t layers, const Layout& l) {
  const int pp = l.pp, vpp = std::max(1, l.vpp), stages = pp * vpp;
  const int64_t effective = layers + 2, per = effective / stages, extra = effective % stages;
  std::vector<int> out(static_cast<size_t>(pp), 0);
  for (int v = 0; v < stages; ++v) {
    const int64_t held = per + (v < extra ? 1 : 0) - (v == 0 ? 1 : 0) - (v == stages - 1 ? 1 : 0);
    if (held <= 0) return {};
    const int chunk = v / pp, pos = v % pp;
    const int rank = l.pp_schedule == PpSchedule::kZbv && chunk % 2 == 1 ? pp - 1 - pos : pos;
    out[static_cast<size_t>(rank)] += static_cast<int>(held);
  }
  return out;
}

}  // namespace

std::vector<int> StageLayers(const ModelSpec& m, const Layout& l) {
  if (!l.stages.empty()) return l.stages;
  if (TorchtitanItself(l) && l.pp > 1)
    if (std::vector<int> titan = TorchtitanStageLayers(m.layers, l); !titan.empty()) return titan;
  std::vector<int> out(static_cast<size_t>(l.pp));
  int first = 0;
  for (int s = 0; s < l.pp; ++s) out[static_cast<size_t>(s)] = BalancedStageLayers(m.layers, l.pp, s, &first);
  return out;
}

Stack DefaultStack(Framework framework, const Workload& w, const ClusterSpec& c) {
  const bool fine_tune = w.task == Task::kFinetune || w.lora_like();
  return framework == Framework::kFsdp && fine_tune && c.world_size() == 1 ? Stack::kHf : Stack::kNative;
}

namespace {
// What LitGPT's scripts recompute: every block under Fabric's FSDP when fine-tuning
// (finetune/full.py, adapter.py: activation_checkpointing_policy={Block}; lora.py's
// parallelize_fn wraps each block in checkpoint_wrapper), nothing on one GPU (strategy
// "auto") or when pretraining (pretrain.py).
Recompute LitgptRecompute(const Layout& l, const Workload& w) {
  return l.world() > 1 && w.task != Task::kPretrain ? Recompute::kFull : Recompute::kNone;
}
}  // namespace

bool StackRunsLayout(const Layout& l, const Workload& w) {
  if (l.stack != Stack::kLitgpt || !w.training()) return true;
  const bool offloads = l.offload_optimizer != Offload::kNone || l.offload_params != Offload::kNone;
  if (offloads || l.ac != LitgptRecompute(l, w)) return false;
  if (l.world() == 1) return l.zero == 0;
  return l.zero == 3 && (w.task == Task::kPretrain || l.shard_group == 0);
}

bool TorchtitanStageSplit(const Layout& l) {
  return l.framework == Framework::kTorchtitan && l.pp > 1 && !(l.fixed & (kKeyMbs | kKeyGradAccum)) && l.mbs > 1 &&
         l.grad_accum == l.pp;
}

StatusOr<Layout> ResolveLayout(const ModelSpec& m, const Workload& w, const ClusterSpec& c, Layout l) {
  // ZB-V is two chunks per rank by construction.
  if (l.pp_schedule == PpSchedule::kZbv && !(l.fixed & kKeyVpp)) l.vpp = 2;
  // No framework named, but degrees FSDP alone cannot run (pipeline, expert or context
  // parallelism): torchtitan, the FSDP stack that adds them, as Llama 3's own training did.
  if (!(l.fixed & kKeyFramework) && l.framework == Framework::kFsdp && w.training() && (l.pp > 1 || l.ep > 1 || l.cp > 1))
    l.framework = Framework::kTorchtitan;
  // FSDP2 named with pipeline or expert parallelism: the composition torchtitan and NeMo
  // AutoModel run (fully_shard on a mesh with PP stages and EP groups), priced as torchtitan.
  if ((l.fixed & kKeyFramework) && l.framework == Framework::kFsdp && l.stack == Stack::kNative && w.training() &&
      (l.pp > 1 || l.ep > 1))
    l.framework = Framework::kTorchtitan;
  // FSDP's CPUOffload(offload_params=True) moves gradients too and steps the optimizer on the
  // CPU: parameter offload alone means the optimizer is offloaded as well.
  if ((l.framework == Framework::kFsdp || l.framework == Framework::kTorchtitan) && l.offload_params == Offload::kCpu &&
      !(l.fixed & kKeyOffloadOptimizer))
    l.offload_optimizer = Offload::kCpu;
  if (!(l.fixed & kKeyFramework)) l.stack = DefaultStack(l.framework, w, c);
  SP_RETURN_IF_ERROR(CheckHeads(m, l));
  // NVFP4 training is Transformer Engine's recipe (fp4=e2m1, fp4_recipe=nvfp4), which the
  // Megatron-core frameworks run, on tensor cores only Blackwell has.
  if (w.training() && w.precision == Dtype::kFp4) {
    if (!MegatronModelCode(l))
      return Rule("precision nvfp4 is Transformer Engine's NVFP4 recipe, which Megatron-core runs (framework=megatron, "
                  "nemo or megatron-bridge), not framework=" + std::string(FrameworkName(l)));
    if (c.gpu.fp4_flops <= 0)
      return Rule("precision nvfp4 needs FP4 tensor cores (Blackwell: B200, B300, GB200, GB300); " + c.gpu.name +
                  " has no fp4_tflops in its spec");
  }
  const int world = c.world_size();
  const int model_parallel = l.tp * l.pp * l.cp;
  if (!(l.fixed & kKeyDp)) {
    if (world % model_parallel != 0)
      return Rule("tp x pp x cp (" + Num(model_parallel) + ") must divide the GPUs (" + Num(world) + ")");
    l.dp = world / model_parallel;
  }
  if (l.world() != world)
    return Rule("dp x tp x pp x cp = " + Num(l.world()) + " must equal the GPUs used (" + Num(world) + ")");
  // LitGPT recomputes as its scripts do (LitgptRecompute); its pretraining shards within a
  // node (FSDPStrategy(sharding_strategy="HYBRID_SHARD"), pretrain.py).
  if (l.stack == Stack::kLitgpt && w.training()) {
    // Its finetune and pretrain scripts take a device count and nothing else to split by.
    if (l.tp > 1 || l.pp > 1 || l.cp > 1 || l.ep > 1)
      return Rule("LitGPT's finetune and pretrain scripts run data parallelism alone (FSDP over devices x num_nodes); "
                  "tp, pp, cp and ep stay 1");
    if (!(l.fixed & kKeyAc)) l.ac = LitgptRecompute(l, w);
    if (!(l.fixed & kKeyShardGroup) && w.task == Task::kPretrain && c.nodes > 1) l.shard_group = kShardGroupNode;
  }
  // HYBRID_SHARD: FSDP shards over the GPUs of a node and replicates across nodes (FSDP1's
  // _init_intra_and_inter_node_groups takes the node's devices as the intra-node group).
  if (l.shard_group == kShardGroupNode) {
    const int model_parallel_in_node = l.tp * l.cp;
    if (c.gpus_per_node % model_parallel_in_node != 0)
      return Rule("HYBRID_SHARD shards over a node's GPUs, but tp x cp (" + Num(model_parallel_in_node) +
                  ") does not divide its " + Num(c.gpus_per_node));
    const int shard = c.gpus_per_node / model_parallel_in_node;
    if (shard < l.dp && l.dp % shard != 0)
      return Rule("HYBRID_SHARD shards over a node's " + Num(shard) + " data-parallel ranks, which must divide dp (" +
                  Num(l.dp) + ")");
    l.shard_group = shard < l.dp ? shard : 0;
  }
  // torchtitan's TP plan always shards the sequence between blocks; Megatron requires SP for
  // MoE with TP, and Megatron-Bridge/NeMo recipes turn it on whenever tp > 1
  // (planner/recipe.cc reports the assumption).
  if (!(l.fixed & kKeySp) && l.tp > 1 &&
      (l.framework == Framework::kTorchtitan || l.framework == Framework::kMegatron))
    l.sp = true;
  if (l.tp == 1) l.sp = false;
  // NeMo / Megatron-Bridge recipes add MegatronCommOverlapCallback(tp_comm_overlap=True),
  // which overlaps TP communication (TE userbuffers) whenever SP runs with TP
  // (nemo/collections/llm/recipes/llama3_70b.py and friends); elsewhere it is opt-in.
  if (!(l.fixed & kKeyTpOverlap)) l.tp_overlap = l.stack == Stack::kNemo && l.tp > 1 && l.sp;
  if (l.tp == 1) l.tp_overlap = false;
  // The MoE token exchange: NeMo's and Megatron-Bridge's MoE performance recipes run the flex
  // dispatcher (DeepEP, HybridEP), as AutoModel's benchmark configs (*_te_deepep.yaml) do;
  // Megatron-LM and torchtitan exchange tokens with one all-to-all (planner/recipe.cc says which).
  if (!(l.fixed & kKeyDispatcher))
    l.dispatcher = l.stack == Stack::kNemo || l.stack == Stack::kAutomodel ? EpDispatch::kFlex : EpDispatch::kAllToAll;
  // torchtitan keeps a pipeline stage's parameters gathered from forward to backward so that
  // each micro-batch does not all-gather them again: fsdp_reshard_after_forward "default" is
  // `not pp_enabled` (torchtitan distributed/fsdp.py; parallelize_llama.py since 2024).
  if (!(l.fixed & kKeyReshard) && l.framework == Framework::kTorchtitan && l.pp > 1) l.reshard_after_forward = false;
  // Unsloth's recommended setting: use_gradient_checkpointing="unsloth" (full recomputation,
  // with the checkpoints offloaded to host memory, planner/recipe.cc); torchtune's configs
  // set enable_activation_checkpointing: True.
  if ((l.stack == Stack::kUnsloth || l.stack == Stack::kTorchtune) && !(l.fixed & kKeyAc) && w.training())
    l.ac = Recompute::kFull;
  // QLoRA through peft: prepare_model_for_kbit_training(use_gradient_checkpointing=True) is
  // the documented first step, so the 4-bit base trains with gradient checkpointing.
  if (l.stack == Stack::kHf && w.task == Task::kQlora && !(l.fixed & kKeyAc)) l.ac = Recompute::kFull;
  if (!w.training()) {
    // ZeRO-Inference: DeepSpeed stage 3 serving with the weights offloaded to CPU or NVMe.
    l.zero = l.offload_params != Offload::kNone ? 3 : 0;
    l.grad_accum = 1;
    if (l.batch == 0) l.batch = static_cast<int>(std::max<int64_t>(1, (w.inference.batch + l.dp - 1) / l.dp));
    if (!(l.fixed & kKeyWeights)) l.weights = w.inference.weights;
    l.weights = ServedFormat(m, l.weights);  // a quantized checkpoint is served as stored
    if (!(l.fixed & kKeyKvCache)) l.kv_cache = w.inference.kv_cache;
    // Serving engines split every expert over the tensor-parallel ranks unless expert
    // parallelism is asked for (vLLM's FusedMoE shards w13/w2 by TP; SGLang and TensorRT-LLM
    // likewise): experts are tensor-parallel as the dense layers are.
    if (m.is_moe() && l.tp > 1 && l.ep == 1 && !(l.fixed & (kKeyEp | kKeyEtp))) l.etp = l.tp;
  }
  if (w.lora_like() && l.pp == 1 && l.tp == 1 && !(l.fixed & kKeyZero) && l.framework != Framework::kMegatron)
    l.zero = l.dp > 1 ? l.zero : 0;
  // Nothing to shard over: Megatron's distributed optimizer and torchtitan's FSDP mesh span
  // dp x cp, so a cp group still shards with dp = 1.
  const bool spans_cp = l.framework == Framework::kMegatron || l.framework == Framework::kTorchtitan;
  const int shard_over = spans_cp ? l.dp * l.cp : l.dp;
  if (shard_over == 1 && !(l.fixed & kKeyZero) && l.offload_optimizer == Offload::kNone &&
      l.offload_params == Offload::kNone)
    l.zero = 0;
  if (w.training()) SP_RETURN_IF_ERROR(CheckFramework(l));  // serving is framework-free
  SP_RETURN_IF_ERROR(CheckModelFit(m, w, l));
  // torchtitan's pipeline schedules with no micro-batch stated: releases before 2025-04 cut
  // each rank's local batch into as many micro-batches as pipeline stages
  // (experimental.pipeline_parallel_microbatches, None = the pp degree); later ones take
  // parallelism.pipeline_parallel_microbatch_size, default 1 (torchtitan 5e2033c). The older
  // split keeps pp times more sequences in flight on the first stage, so it is the default
  // that never calls an OOM a fit, as the eager loss is (planner/recipe.cc); mbs=1 or a
  // release from 2025-04-07 on states the newer one.
  const int64_t stage_cuts = static_cast<int64_t>(l.dp) * l.pp;
  if (w.training() && l.framework == Framework::kTorchtitan && l.pp > 1 && w.global_batch_stated &&
      !ReleaseAtLeast(w, defaults::kTorchtitanPpMicrobatchSize) &&
      !(l.fixed & (kKeyMbs | kKeyGradAccum)) && w.global_batch % stage_cuts == 0 &&
      w.global_batch / stage_cuts <= (1 << 24))  // the most mbs= takes
    l.mbs = static_cast<int>(w.global_batch / stage_cuts);
  if (w.training()) {
    const int64_t per_step = static_cast<int64_t>(l.mbs) * l.dp;
    if (!w.global_batch_stated) {
      if (!(l.fixed & kKeyGradAccum)) l.grad_accum = 1;  // a step is what the layout runs (MakePlan records it)
    } else if (l.fixed & kKeyGradAccum) {
      if (per_step * l.grad_accum != w.global_batch)
        return Rule("global batch (" + Num(w.global_batch) + ") must equal mbs x grad_accum x dp (" + Num(l.mbs) +
                    " x " + Num(l.grad_accum) + " x " + Num(l.dp) + ")");
    } else {
      if (w.global_batch % per_step != 0)
        return Rule("global batch (" + Num(w.global_batch) + ") must be a multiple of mbs x dp (" + Num(per_step) + ")");
      l.grad_accum = static_cast<int>(w.global_batch / per_step);
    }
    // Stepping each parameter in its gradient hook leaves nothing to accumulate into
    // (torchtune raises for gradient_accumulation_steps > 1 with optimizer_in_bwd).
    if (w.optimizer_in_backward == Setting::kOn && l.grad_accum > 1)
      return Rule("optimizer_in_backward steps every micro-batch: grad_accum must be 1 (global batch " + Num(w.global_batch) +
                  " = mbs x dp, got grad_accum " + Num(l.grad_accum) + ")");
  }
  return l;
}

}  // namespace shardplan
