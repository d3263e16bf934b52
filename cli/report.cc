#include "cli/report.h"

#include "cli/table.h"
#include "planner/memory_terms.h"
#include "planner/recipe.h"
#include "planner/strings.h"
#include "planner/units.h"

namespace shardplan::cli {

std::string CompactLayout(const Layout& l, bool inference) {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : " ") + part; };
  if (inference) {
    add("tp=" + std::to_string(l.tp));
    if (l.pp > 1) add("pp=" + std::to_string(l.pp));
    add("w=" + std::string(DtypeName(l.weights)));
    add("kv=" + std::string(DtypeName(l.kv_cache)));
    add("batch=" + std::to_string(l.batch));
    return s;
  }
  add(std::string(FrameworkName(l)));
  add("dp=" + std::to_string(l.dp));
  if (l.tp > 1) add("tp=" + std::to_string(l.tp) + (l.sp ? "+sp" : ""));
  if (l.pp > 1) add("pp=" + std::to_string(l.pp) + (l.vpp > 1 ? "x" + std::to_string(l.vpp) : ""));
  if (l.cp > 1) add("cp=" + std::to_string(l.cp));
  if (l.ep > 1) add("ep=" + std::to_string(l.ep));
  add("zero=" + std::to_string(l.zero) + (l.shard_group > 0 ? "/" + std::to_string(l.shard_group) : ""));
  if (l.offload_optimizer != Offload::kNone) add("off=" + std::string(OffloadName(l.offload_optimizer)));
  add("ac=" + std::string(RecomputeName(l.ac)));
  add("mbs=" + std::to_string(l.mbs));
  add("ga=" + std::to_string(l.grad_accum));
  return s;
}

// The attention kernel the time model prices: the scores materialized, the Triton
// FlashAttention an MPT config names, Transformer Engine's cuDNN attention, or a
// FlashAttention-class kernel.
const char* AttentionKernelName(const Plan& p, const TrainingRecipe& r) {
  if (!r.flash_attention) return "materialized";
  switch (TrainingAttention(p.model, p.layout, p.cluster.gpu)) {
    case AttentionImpl::kTriton: return "triton";
    case AttentionImpl::kCudnn: return "cudnn";
    default: return "flash";
  }
}

nlohmann::json LayoutJson(const Layout& l) {
  nlohmann::json j = {{"framework", FrameworkName(l)}, {"engine", FrameworkName(l.framework)}, {"dp", l.dp}, {"tp", l.tp}, {"pp", l.pp},
                      {"vpp", l.vpp}, {"cp", l.cp}, {"ep", l.ep}, {"etp", l.etp}, {"sp", l.sp}, {"zero", l.zero},
                      {"shard_group", l.shard_group}, {"ac", RecomputeName(l.ac)}, {"ac_layers", l.ac_layers},
                      {"ac_modules", AcModulesName(l.ac_modules)},
                      {"offload_optimizer", OffloadName(l.offload_optimizer)},
                      {"offload_params", OffloadName(l.offload_params)}, {"mbs", l.mbs}, {"grad_accum", l.grad_accum},
                      {"reshard_after_forward", l.reshard_after_forward}, {"tp_overlap", l.tp_overlap},
                      {"dispatcher", DispatcherName(l.dispatcher)}, {"ep_overlap", l.ep_overlap},
                      {"weights", DtypeName(l.weights)},
                      {"kv_cache", DtypeName(l.kv_cache)}, {"batch", l.batch}, {"string", FormatLayout(l)}};
  j["stages"] = l.stages;
  return j;
}

nlohmann::json MemoryJson(const MemoryEstimate& e) {
  const StageMemory& s = e.fullest();
  nlohmann::json terms = nlohmann::json::object(), live = nlohmann::json::object();
  for (const MemoryTerm& t : s.terms) {
    terms[t.name] = t.bytes;
    live[t.name] = {{"first", PhaseName(t.first)}, {"last", PhaseName(t.last)}, {"pool", PoolName(t.pool)}};
  }
  nlohmann::json per_gpu = {{"peak_bytes", s.device_peak}, {"reserved_peak_bytes", s.reserved_peak},
                            {"required_bytes", s.required_peak},
                            {"allocated_peak_bytes", s.allocated_peak}, {"capacity_bytes", e.capacity_bytes},
                            {"headroom_bytes", e.headroom_bytes}, {"headroom_required_bytes", e.headroom_required_bytes},
                            {"fits", e.fits}, {"stage", s.stage}, {"peak_phase", PhaseName(s.peak_phase)},
                            {"terms", terms}, {"live", live}};
  nlohmann::json stages = nlohmann::json::array();
  for (const StageMemory& st : e.stages) {
    nlohmann::json st_terms = nlohmann::json::object(), phases = nlohmann::json::array();
    for (const MemoryTerm& t : st.terms) st_terms[t.name] = t.bytes;
    for (int ph = 0; ph < kPhaseCount; ++ph) {
      const PhaseUsage u = UsageAt(st, static_cast<Phase>(ph), e.allocator);
      phases.push_back({{"phase", PhaseName(static_cast<Phase>(ph))}, {"allocated_bytes", u.allocated},
                        {"reserved_bytes", u.reserved}, {"device_bytes", u.device}, {"required_bytes", u.required}});
    }
    stages.push_back({{"stage", st.stage}, {"layers", st.layers}, {"peak_bytes", st.device_peak},
                      {"required_bytes", st.required_peak},
                      {"reserved_peak_bytes", st.reserved_peak}, {"allocated_peak_bytes", st.allocated_peak},
                      {"peak_phase", PhaseName(st.peak_phase)}, {"terms", st_terms}, {"phases", phases}});
  }
  return {{"per_gpu", per_gpu}, {"per_stage", stages}, {"per_node_host_bytes", e.per_node_host_bytes},
          {"per_node_nvme_bytes", e.per_node_nvme_bytes}};
}

nlohmann::json PlanJson(const Plan& p) {
  const ParamCounts c = CountParams(p.model);
  nlohmann::json j;
  j["model"] = {{"name", p.model.name}, {"params_total", c.total}, {"params_active", c.active}};
  if (c.vision > 0) j["model"]["params_vision"] = c.vision;
  j["cluster"] = {{"name", p.cluster.name}, {"nodes", p.cluster.nodes}, {"gpus_per_node", p.cluster.gpus_per_node},
                  {"gpu", p.cluster.gpu.name}};
  j["workload"] = {{"task", TaskName(p.workload.task)}, {"seq_len", p.workload.seq_len},
                   {"global_batch", p.workload.global_batch}, {"precision", DtypeName(p.workload.precision)},
                   {"optimizer", OptimizerName(p.workload.optimizer)}};
  j["layout"] = LayoutJson(p.layout);
  std::vector<std::string> assumed = p.cluster.assumed;
  assumed.insert(assumed.end(), p.workload.assumed.begin(), p.workload.assumed.end());
  assumed.insert(assumed.end(), p.assumed.begin(), p.assumed.end());
  if (p.workload.training()) {
    const TrainingRecipe r = ResolveRecipe(p.model, p.workload, p.layout, &assumed);
    j["recipe"] = {{"master_weights", r.master_weights}, {"pure_low_precision", r.pure_low_precision},
                   {"optimizer_in_backward", r.optimizer_in_backward}, {"paged_optimizer", r.paged_optimizer},
                   {"activation_offload", r.activation_offload}, {"loss", LossName(r.loss)}, {"compile", r.compile},
                   {"flash_attention", r.flash_attention}, {"attention_kernel", AttentionKernelName(p, r)},
                   {"main_grad_bytes", r.main_grad_bytes}, {"float8_all_gather", r.float8_all_gather},
                   {"kbit_prepared", r.kbit_prepared},
                   {"assumed", assumed}};
    if (p.workload.precision == Dtype::kFp8)
      j["recipe"]["fp8_recipe"] = Fp8RecipeName(ResolvedFp8Recipe(p.workload, p.layout));
  }
  j["assumed"] = assumed;  // every default the answer took, cluster and layout included
  j["memory"] = MemoryJson(p.memory);
  nlohmann::json time_terms = nlohmann::json::object();
  for (const TimeTerm& t : p.time.terms) time_terms[t.name] = t.seconds;
  j["time"] = {{"step_seconds", p.time.step_seconds}, {"tokens_per_second_per_gpu", p.time.tokens_per_second_per_gpu},
               {"mfu", p.time.mfu}, {"terms", time_terms}, {"known", StepTimeKnown(p.cluster.gpu)}};
  if (p.memory.inference)
    j["inference"] = {{"kv_bytes_per_token", p.memory.kv.kv_bytes_per_token},
                      {"kv_bytes_per_token_model", p.memory.kv.kv_bytes_per_token_model},
                      {"max_kv_tokens", p.memory.kv.max_kv_tokens},
                      {"max_concurrent_sequences", p.memory.kv.max_concurrent_sequences}};
  if (!p.reason.empty()) j["reason"] = p.reason;
  return j;
}

std::string EstimateText(const Plan& p) {
  const MemoryEstimate& e = p.memory;
  const StageMemory& s = e.fullest();
  std::string out = p.model.name + " on " + std::to_string(p.cluster.world_size()) + " x " + p.cluster.gpu.name +
                    ", " + std::string(TaskName(p.workload.task)) + "\nlayout: " + FormatLayout(p.layout) + "\n";
  std::vector<std::string> assumed = p.cluster.assumed;
  assumed.insert(assumed.end(), p.workload.assumed.begin(), p.workload.assumed.end());
  assumed.insert(assumed.end(), p.assumed.begin(), p.assumed.end());
  if (p.workload.training()) ResolveRecipe(p.model, p.workload, p.layout, &assumed);
  for (const std::string& a : assumed) out += "assumed: " + a + "\n";
  out += "\n";
  Table t({"term (stage " + std::to_string(s.stage) + ", " + std::to_string(s.layers) + " layers)", "GiB", "live", "pool"});
  for (const MemoryTerm& term : s.terms) {
    std::string live = std::string(PhaseName(term.first)) +
                       (term.first == term.last ? "" : ".." + std::string(PhaseName(term.last)));
    t.Row({term.name, Fixed(ToGiB(term.bytes), 2), live, std::string(PoolName(term.pool))});
  }
  t.Rule();
  t.Row({"allocated peak (max_memory_allocated)", Fixed(ToGiB(s.allocated_peak), 2), std::string(PhaseName(s.peak_phase)), ""});
  t.Row({"reserved peak (max_memory_reserved)", Fixed(ToGiB(s.reserved_peak), 2), "", ""});
  t.Row({"device peak (nvidia-smi)", Fixed(ToGiB(s.device_peak), 2), "", ""});
  t.Row({"needed to run (least fragmentation)", Fixed(ToGiB(s.required_peak), 2), "", ""});
  t.Row({"capacity", Fixed(ToGiB(e.capacity_bytes), 2), "", ""});
  out += t.Render();
  if (e.stages.size() > 1) {
    Table st({"stage", "layers", "allocated GiB", "reserved GiB", "device GiB", "peak at"});
    for (const StageMemory& x : e.stages)
      st.Row({std::to_string(x.stage), std::to_string(x.layers), Fixed(ToGiB(x.allocated_peak), 2),
              Fixed(ToGiB(x.reserved_peak), 2), Fixed(ToGiB(x.device_peak), 2), std::string(PhaseName(x.peak_phase))});
    out += "\n" + st.Render();
  }
  out += "\nhost RAM per node " + FormatBytes(e.per_node_host_bytes);
  if (e.per_node_nvme_bytes > 0) out += ", NVMe per node " + FormatBytes(e.per_node_nvme_bytes);
  out += "\n";
  if (e.inference)
    out += "KV cache " + Thousands(e.kv.kv_bytes_per_token) + " B/token per GPU; room for " + Thousands(e.kv.max_kv_tokens) +
           " tokens = " + Thousands(e.kv.max_concurrent_sequences) + " sequences of " +
           std::to_string(p.workload.context_len()) +
           (p.workload.inference.engine == ServingEngine::kTransformers
                ? std::string(" tokens (transformers generate: the card less everything else)")
                : (p.workload.inference.engine == ServingEngine::kSglang ? " tokens (SGLang pool at mem_fraction_static "
                   : p.workload.inference.engine == ServingEngine::kTensorrtLlm
                       ? " tokens (TensorRT-LLM pool at free_gpu_memory_fraction "
                       : " tokens (vLLM budget at ") +
                      Fixed(p.workload.inference.gpu_memory_utilization, 2) + ")") +
           "\n";
  if (p.cluster.gpu.bf16_flops <= 0 && p.cluster.gpu.fp16_flops <= 0)
    out += "step time unknown: the GPU '" + p.cluster.gpu.name +
           "' states no compute peak (give bf16_tflops in the cluster's gpu mapping)\n";
  else if (!StepTimeKnown(p.cluster.gpu))
    out += "step time unknown: shardplan's kernel efficiencies are measured on NVIDIA GPUs, not on " +
           p.cluster.gpu.display_name + " (the memory above is priced as on any GPU)\n";
  else if (p.time.step_seconds > 0)
    out += "step " + Fixed(p.time.step_seconds, 3) + " s, " + Fixed(p.time.tokens_per_second_per_gpu, 0) +
           " tokens/s/GPU, MFU " + Fixed(100 * p.time.mfu, 1) + "%\n";
  if (p.workload.training() && p.workload.paged_optimizer && p.layout.offload_optimizer == Offload::kNone &&
      p.layout.offload_params == Offload::kNone)
    for (const TimeTerm& t : p.time.terms)
      if (t.name == "offload" && t.seconds > 0)
        out += "  of which " + Fixed(t.seconds, 3) +
               " s move the paged optimizer states over PCIe, in and out: they do not fit beside the rest\n";
  out += std::string(e.fits ? "FITS" : "DOES NOT FIT") + ": needs " + FormatBytes(s.required_peak) + " of " +
         FormatBytes(e.capacity_bytes) + ", headroom " + FormatBytes(e.headroom_bytes) + " (required " +
         FormatBytes(e.headroom_required_bytes) + ")\n";
  // The GPUs can fit while the offload's host side does not: say which.
  if (e.gpu_fits && !e.host_fits)
    out += "  host RAM: " + FormatBytes(e.per_node_host_bytes) + " per node needed, " +
           FormatBytes(p.cluster.host_memory_bytes) + " stated\n";
  if (e.gpu_fits && !e.nvme_fits)
    out += "  NVMe: " + FormatBytes(e.per_node_nvme_bytes) + " per node needed, " + FormatBytes(p.cluster.nvme_bytes) +
           " stated\n";
  return out;
}

}  // namespace shardplan::cli
