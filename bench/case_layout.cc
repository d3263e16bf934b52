// The --layout text of a public case: framework from its source, parallel degrees, batch,
// recomputation and each stack's defaults, with every assumption recorded on the case.
#include <cctype>
#include <string>

#include "bench/case_fields.h"
#include "planner/layout.h"

namespace shardplan::bench::detail {
namespace {

// ---- Layout: the --layout text, with the framework from the source.

// key=value pairs in the order they are set; later keys win in ParseLayout.
struct LayoutText {
  std::string text;
  void Put(const std::string& key, const std::string& value) { text += (text.empty() ? "" : ",") + key + "=" + value; }
  void Put(const std::string& key, int64_t value) { Put(key, std::to_string(value)); }
};

std::string BalancedStages(int64_t layers, int64_t pp) {
  std::string s;
  for (int64_t i = 0; i < pp; ++i) {
    if (i) s += '/';
    s += std::to_string(layers / pp + (i < layers % pp ? 1 : 0));
  }
  return s;
}

// Recomputation: the field, the ablation knob, or a ladder row's inherited setting.
std::string MapRecompute(const Fields& f, PublicCase& pc) {
  const std::string stated = Str(f.layout, "recompute");
  const std::string text = Lower(stated + " " + Str(f.layout, "knobs"));
  const Override* o = FindOverride(pc.id);
  if (o && o->ac) return o->ac;
  if (text.find("full") != std::string::npos || text.find("activation checkpointing") != std::string::npos)
    return "full";
  if (text.find("selective") != std::string::npos) {
    if (text.find(':') != std::string::npos) {  // Megatron --recompute-modules, priced by name
      std::string modules;
      for (const char* name : {"core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"}) {
        // "moe" alone, not the "moe" inside "moe_act"
        const std::string n = name;
        for (size_t at = text.find(n); at != std::string::npos; at = text.find(n, at + 1)) {
          const size_t end = at + n.size();
          if (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) continue;
          modules += (modules.empty() ? "" : "/") + n;
          break;
        }
      }
      if (!modules.empty()) return "selective,ac_modules=" + modules;
    }
    return "selective";
  }
  if (f.seq_override) {
    pc.assumed.push_back("gradient checkpointing on (the case's inferred note)");
    return "full";
  }
  if (text.find("none") == std::string::npos) {
    pc.assumed.push_back("recompute " + (stated.empty() ? std::string("not stated") : "'" + stated + "'") + ": none");
    pc.recompute_unstated = true;
  }
  return "none";
}

// Micro-batch and global batch (sequences per optimizer step).
void MapBatch(const YAML::Node& l, int64_t dp, PublicCase& pc, LayoutText& out) {
  const int64_t mbs = Int(l, "micro_batch").value_or(1);
  auto global = Int(l, "global_batch");
  if (auto local = Int(l, "local_batch_per_dp_rank")) global = *local * dp;  // torchtitan: micro-batches of 1 under PP
  else if (!Int(l, "micro_batch")) pc.assumed.push_back("micro-batch 1 (not stated)");
  if (!global) {
    global = mbs * dp * Int(l, "grad_accum").value_or(1);
    pc.assumed.push_back("global batch " + std::to_string(*global) + " (not stated)");
  }
  pc.workload.global_batch = *global;
  out.Put("mbs", mbs);
}

// Sequence parallelism, offload, resharding and what the model lacks for this stack.
void MapStackDefaults(const Fields& f, Framework framework, int64_t tp, int64_t pp, PublicCase& pc, LayoutText& out) {
  const YAML::Node& l = f.layout;
  // SP: stated, or on with TP where the stack turns it on by default (NeMo and Megatron-Bridge
  // recipes, torchtitan's TP plan); Megatron-LM's --sequence-parallel is opt-in.
  const std::string sp = Lower(Str(l, "sp"));
  const bool default_on =
      framework == Framework::kTorchtitan || (framework == Framework::kMegatron && f.repo != "NVIDIA/Megatron-LM");
  const bool sp_on = sp == "true" || sp.find("on") != std::string::npos || (sp.empty() && tp > 1 && default_on);
  if (sp.empty() && tp > 1)
    pc.assumed.push_back(std::string("sequence parallel ") + (sp_on ? "on" : "off") + " (the stack's default)");
  out.Put("sp", sp_on ? "on" : "off");
  // Offload: ZeRO-Offload / FSDP CPUOffload as the prose names it.
  const std::string offload = Lower(Str(l, "offload"));
  const bool none = offload.empty() || offload.rfind("none", 0) == 0;
  if (!none && (offload.find("param") != std::string::npos || offload.find("zero-3") != std::string::npos))
    out.Put("offload_params", "cpu");
  if (!none || Str(l, "optimizer_offload") == "true") out.Put("offload_optimizer", "cpu");
  // torchtitan keeps gathered parameters across micro-batches under PP (parallelize.py sets
  // reshard_after_forward = False when pp is enabled).
  if (framework == Framework::kTorchtitan && pp > 1) {
    out.Put("reshard", "off");
    pc.assumed.push_back("reshard_after_forward off (torchtitan's default under PP)");
  }
  if (Mentions(Str(l, "fsdp"), "hsdp")) pc.assumed.push_back("HSDP split not stated: fully sharded over dp");
  if (Mentions(Str(l, "zero_note"), "not sharded"))
    pc.unmodelled.push_back("BF16_Optimizer fp32 gradient-accumulation buffer (4 B/param, unsharded)");
  // torchtune's ladder rows each add a technique to the one before; every row runs compiled.
  if (const Override* o = FindOverride(pc.id)) {
    pc.workload.compile = Setting::kOn;
    pc.workload.loss = o->loss;
    if (o->optimizer_in_backward) pc.workload.optimizer_in_backward = Setting::kOn;
  }
}

}  // namespace

bool MapLayout(const Fields& f, PublicCase& pc) {
  const YAML::Node& l = f.layout;
  const int64_t tp = Int(l, "tp").value_or(1), pp = Int(l, "pp").value_or(1), cp = Int(l, "cp").value_or(1);
  const int64_t vpp = Int(l, "vpp").value_or(1), world = pc.cluster.world_size();
  const int64_t dp = Int(l, "dp").value_or(world / std::max<int64_t>(1, tp * pp * cp));
  if (dp * tp * pp * cp != world)
    return Skip(pc, "layout: dp x tp x pp x cp does not cover " + std::to_string(world) + " GPUs");
  LayoutText out;
  out.Put("tp", tp), out.Put("pp", pp), out.Put("cp", cp), out.Put("dp", dp), out.Put("ep", Int(l, "ep").value_or(1));
  if (vpp > 1) out.Put("vpp", vpp);
  if (vpp > 1 && pc.model.layers % (pp * vpp) != 0) {
    out.Put("stages", BalancedStages(pc.model.layers, pp));
    const std::string stated = Str(l, "pp_layout");
    pc.assumed.push_back("uneven pipeline split, balanced (" + (stated.empty() ? "not stated" : "pp_layout " + stated) +
                         ")");
  }
  if (!pc.workload.training() && Mentions(Str(l, "offload"), "offload")) {
    out.Put("offload_params", "cpu");  // ZeRO-Inference: weights streamed from host memory
    pc.assumed.push_back("weights offloaded to CPU (the CPU column of ZeRO-Inference's table)");
  }
  if (pc.workload.training()) {
    Framework framework = Framework::kTorchtitan;  // a paper without a repository: Meta's FSDP + TP + PP stack
    if (const auto fw = kFrameworks.find(f.repo); fw != kFrameworks.end()) framework = fw->second;
    else if (!f.repo.empty()) return Skip(pc, "no framework known for source " + f.repo);
    else pc.assumed.push_back("framework torchtitan (the paper's FSDP + TP + PP stack)");
    // torchtune's recipes (pure bf16, chunked loss) and NeMo's and Megatron-Bridge's
    // (bf16 main grads, SP and TP overlap) are their own: name the stack, not the engine.
    std::string stack(FrameworkName(framework));
    if (f.repo == "pytorch/torchtune") stack = "torchtune";
    if (f.repo == "NVIDIA/NeMo") stack = "nemo";
    if (f.repo == "NVIDIA-NeMo/Megatron-Bridge") stack = "megatron-bridge";
    if (f.repo == "bigscience-workshop/bigscience") stack = "megatron-deepspeed";
    if (f.repo == "mosaicml/llm-foundry") stack = "llm-foundry";
    if (f.repo == "foundation-model-stack/fms-fsdp") stack = "fms-fsdp";
    out.Put("framework", stack);
    if (auto zero = Int(l, "zero_stage")) out.Put("zero", *zero);
    out.Put("ac", MapRecompute(f, pc));
    MapBatch(l, dp, pc, out);
    MapStackDefaults(f, framework, tp, pp, pc, out);
  }
  pc.layout = out.text;
  return true;
}

}  // namespace shardplan::bench::detail
