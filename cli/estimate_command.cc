// `shardplan estimate`: one layout's memory by term (and time), from flags or a plan.yaml.
#include <iostream>
#include <optional>
#include <tuple>

#include "cli/command.h"
#include "cli/html_report.h"
#include "cli/inputs.h"
#include "cli/report.h"
#include "planner/io/plan_file.h"
#include "planner/recipe.h"
#include "planner/search.h"
#include "planner/units.h"
#include "topology/gpu_catalog.h"

namespace shardplan::cli {
namespace {

struct EstimateFlags {
  InputFlags in;
  std::string plan;
};

int Run(const EstimateFlags& f) {
  Plan p;
  if (!f.plan.empty()) {
    auto loaded = LoadPlan(f.plan);
    if (!loaded.ok()) return Fail(loaded.status());
    p = std::move(*loaded);
  } else {
    InputFlags flags = f.in;
    flags.part_of_cluster = true;
    auto in = LoadInputs(flags);
    if (!in.ok()) return Fail(in.status());
    auto layout = ResolveLayout(in->model, in->workload, in->cluster, in->layout);
    if (!layout.ok()) return Fail(layout.status());
    p = MakePlan(f.in, *in, *layout);
    std::string note;
    std::tie(p.layout, p.memory) =
        LeastRecomputationThatFits(p.model, p.workload, p.layout, p.cluster, p.memory_options, &note);
    if (!note.empty()) p.assumed.push_back(note);
    p.time = EstimateTime(p.model, p.workload, p.layout, p.cluster);
    // Where the default took an older torchtitan release's larger memory, say when the
    // later release's behaviour is the difference between OOM and a fit.
    // The same question on other inputs: the estimate, when it fits there.
    auto fits_on = [&p](const Workload& w, const Layout& l, const ClusterSpec& c) -> std::optional<MemoryEstimate> {
      MemoryEstimate e = EstimateMemory(p.model, w, l, c, p.memory_options);
      if (!e.fits) return std::nullopt;
      return e;
    };
    auto fits_with = [&](const Workload& w, const Layout& l, const std::string& setting, const std::string& why) {
      if (auto e = fits_on(w, l, p.cluster))
        p.assumed.push_back("with " + setting + " this fits (needs " + FormatBytes(e->fullest().required_peak) +
                            "): " + why + "; say " + setting + " if yours does");
    };
    if (!p.memory.fits && LossCompiledByRelease(p.workload, p.layout)) {
      Workload compiled = p.workload;
      compiled.loss = LossKind::kCompiled;
      fits_with(compiled, p.layout, "loss: compiled", "torchtitan 2025-04 and later compile the loss");
    }
    if (!p.memory.fits && LossFusedByRelease(p.workload, p.layout)) {
      Workload fused = p.workload;
      fused.loss = LossKind::kFused;
      fits_with(fused, p.layout, "loss: fused", "Unsloth 2024-11-21 and later run Cut Cross-Entropy");
    }
    if (!p.memory.fits && TorchtitanStageSplit(p.layout)) {
      Layout newer = p.layout;
      newer.grad_accum *= newer.mbs;
      newer.mbs = 1;
      newer.fixed |= kKeyMbs;
      fits_with(p.workload, newer, "mbs=1", "torchtitan 2025-04 and later default to pipeline_parallel_microbatch_size 1");
    }
    // A GPU name that covers several memory sizes was read as the smallest: say which larger
    // one would hold this layout.
    if (!p.memory.fits)
      for (const std::string& key : p.cluster.larger_gpus) {
        auto gpu = CatalogGpu(key);
        if (!gpu.ok()) continue;
        ClusterSpec bigger = p.cluster;
        bigger.gpu = *gpu;
        const auto e = fits_on(p.workload, p.layout, bigger);
        if (!e) continue;
        p.assumed.push_back("on " + key + " this fits (needs " + FormatBytes(e->fullest().required_peak) + " of " +
                            FormatBytes(e->capacity_bytes) + "): name that GPU if yours is it");
        break;
      }
    const bool offloads = p.layout.offload_optimizer == Offload::kCpu || p.layout.offload_params == Offload::kCpu;
    if (offloads && p.cluster.host_memory_bytes <= 0)
      p.assumed.push_back("host memory not stated in the cluster: the " + FormatBytes(p.memory.per_node_host_bytes) +
                          " per node that CPU offload needs is not checked (give host: {memory: ...})");
    const bool to_nvme = p.layout.offload_optimizer == Offload::kNvme || p.layout.offload_params == Offload::kNvme;
    if (to_nvme && p.cluster.nvme_bytes <= 0)
      p.assumed.push_back("NVMe not stated in the cluster: the " + FormatBytes(p.memory.per_node_nvme_bytes) +
                          " per node that NVMe offload needs is not checked (give nvme: {capacity: ...})");
    // The time model prices NVMe traffic at the stated bandwidth (planner/time_model.cc); with
    // none stated it prices none, so the step time is a floor.
    if (to_nvme && p.cluster.nvme_bandwidth <= 0 && StepTimeKnown(p.cluster.gpu))
      p.assumed.push_back("NVMe bandwidth not stated in the cluster: the step time leaves out the NVMe offload's "
                          "transfers, so it is a floor (give nvme: {bandwidth: ...})");
  }
  const nlohmann::json j = PlanJson(p);
  if (!f.in.html.empty()) {
    nlohmann::json inputs = f.plan.empty() ? InputsJson(f.in) : nlohmann::json{{"plan", f.plan}};
    const std::string title = "shardplan estimate: " + p.model.name + " on " + std::to_string(p.cluster.world_size()) +
                              " x " + p.cluster.gpu.name + ", " + std::string(TaskName(p.workload.task));
    if (Status s = WriteHtml(f.in.html, {"estimate", title, inputs, j}); !s.ok()) return Fail(s);
  }
  if (f.in.json) std::cout << j.dump(2) << "\n";
  else std::cout << EstimateText(p) << (f.in.html.empty() ? "" : "wrote the HTML report to " + f.in.html + "\n");
  ExitCode() = p.memory.fits ? 0 : 1;
  return ExitCode();
}

Registrar reg(20, [](CLI::App& app) {
  auto flags = std::make_shared<EstimateFlags>();
  CLI::App* cmd = app.add_subcommand("estimate", "predict one layout's per-GPU memory by term, host/NVMe bytes and speed");
  AddInputFlags(cmd, flags->in, true);
  cmd->add_option("--plan", flags->plan, "a plan.yaml written by `shardplan plan -o` (replaces the other inputs)");
  cmd->callback([flags] { Run(*flags); });
});

}  // namespace
}  // namespace shardplan::cli
