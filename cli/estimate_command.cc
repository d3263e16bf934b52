// `shardplan estimate`: one layout's memory by term (and time), from flags or a plan.yaml.
#include <iostream>

#include "cli/command.h"
#include "cli/inputs.h"
#include "cli/report.h"
#include "planner/io/plan_file.h"

namespace shardplan::cli {
namespace {

struct EstimateFlags {
  InputFlags in;
  std::string plan;
};

// With `ac` left open on a framework without a default of its own, a run recomputes as
// little as it must: the first of none, selective
// and full that fits, as a user turns recomputation on until the step fits (and as NeMo and
// Megatron-Bridge recipes do per model). The choice is stated with the answer.
void ChooseRecomputation(Plan& p) {
  // torchtune and Unsloth state their own default (planner/recipe.cc); native frameworks don't.
  if (!p.workload.training() || (p.layout.fixed & kKeyAc) || p.layout.stack != Stack::kNative) return;
  for (Recompute ac : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    Layout l = p.layout;
    l.ac = ac;
    MemoryEstimate e = EstimateMemory(p.model, p.workload, l, p.cluster, p.memory_options);
    if (e.fits || ac == Recompute::kFull) {
      const bool changed = ac != p.layout.ac;
      p.layout = l;
      p.memory = std::move(e);
      if (changed || ac != Recompute::kNone)
        p.assumed.push_back("ac: " + std::string(RecomputeName(ac)) +
                            (p.memory.fits ? " (not stated; the least recomputation that fits)"
                                           : " (not stated; even full recomputation does not fit)"));
      return;
    }
  }
}

int Run(const EstimateFlags& f) {
  Plan p;
  if (!f.plan.empty()) {
    auto loaded = LoadPlan(f.plan);
    if (!loaded.ok()) return Fail(loaded.status());
    p = std::move(*loaded);
  } else {
    auto in = LoadInputs(f.in);
    if (!in.ok()) return Fail(in.status());
    auto layout = ResolveLayout(in->model, in->workload, in->cluster, in->layout);
    if (!layout.ok()) return Fail(layout.status());
    p = MakePlan(f.in, *in, *layout);
    p.memory = EstimateMemory(p.model, p.workload, p.layout, p.cluster, p.memory_options);
    ChooseRecomputation(p);
    p.time = EstimateTime(p.model, p.workload, p.layout, p.cluster);
  }
  if (f.in.json) std::cout << PlanJson(p).dump(2) << "\n";
  else std::cout << EstimateText(p);
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
