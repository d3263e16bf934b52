// `shardplan plan`: every layout that fits, ranked by predicted speed; -o writes plan.yaml.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>

#include "cli/command.h"
#include "cli/html_report.h"
#include "cli/inputs.h"
#include "cli/report.h"
#include "cli/table.h"
#include "planner/io/plan_file.h"
#include "planner/search.h"
#include "planner/strings.h"
#include "planner/units.h"

namespace shardplan::cli {
namespace {

struct PlanFlags {
  InputFlags in;
  int top = 5;
  std::string output;
  std::vector<std::string> frameworks;
  int threads = 0;
};

// Fitting layouts kept for the --json `seen` points (and the --html scatter), besides the
// Pareto frontier and the closest misses: enough to show the cloud's shape, small in JSON.
constexpr int kChartSample = 200;

nlohmann::json SeenJson(const SearchResult& r, bool inference) {
  nlohmann::json points = nlohmann::json::array();
  for (const SeenLayout& s : r.seen)
    points.push_back({{"layout", FormatLayout(s.layout)}, {"compact", CompactLayout(s.layout, inference)},
                      {"peak_bytes", s.peak_bytes}, {"step_seconds", s.step_seconds},
                      {"tokens_per_second_per_gpu", s.tokens_per_second_per_gpu}, {"fits", s.fits}, {"pareto", s.pareto}});
  return {{"sample", kChartSample}, {"points", points}};
}

Plan ToPlan(const PlanFlags& f, const Inputs& in, const Candidate& cand) {
  Plan p = MakePlan(f.in, in, cand.layout);
  p.memory = cand.memory;
  p.time = cand.time;
  p.reason = cand.reason;
  return p;
}

int Run(const PlanFlags& f) {
  auto in = LoadInputs(f.in);
  if (!in.ok()) return Fail(in.status());
  SearchOptions opt;
  opt.top_k = f.top;
  opt.fixed = in->layout;
  opt.memory = in->memory;
  opt.threads = f.threads;
  opt.sample = kChartSample;
  if (!f.frameworks.empty()) {
    opt.frameworks.clear();
    for (const std::string& name : f.frameworks) {
      auto l = ParseLayout("framework=" + name);
      if (!l.ok()) return Fail(Status::BadInput("--frameworks: " + l.status().message()));
      opt.frameworks.push_back(l->framework);
    }
  }
  // Adapters train on PEFT stacks. Megatron-LM's pretrain_gpt.py and torchtitan have no LoRA,
  // and emit writes those frameworks' configs only, so a plan naming them could not be
  // emitted: unless asked, a LoRA search covers DeepSpeed and FSDP, and says so.
  // Likewise a model whose layers the emitted Megatron-LM arguments cannot build.
  // How the cluster file was read ("A100" as the 40 GB card, "H100" as the SXM part) heads the
  // list: every plan below is priced on that GPU.
  std::vector<std::string> narrowed = in->cluster.assumed;
  narrowed.insert(narrowed.end(), in->workload.assumed.begin(), in->workload.assumed.end());
  const bool searched_all = f.frameworks.empty() && !(opt.fixed.fixed & kKeyFramework);
  if (searched_all && in->workload.lora_like()) {
    opt.frameworks = {Framework::kDeepSpeed, Framework::kFsdp};
    narrowed.push_back("searched deepspeed and fsdp only: LoRA runs on PEFT stacks, and emit writes no adapter config "
                       "for Megatron-LM or torchtitan (--frameworks megatron,deepspeed,fsdp adds Megatron-core, as NeMo "
                       "and Megatron-Bridge train LoRA)");
  } else if (const std::string gap = MegatronLmGap(in->model); searched_all && !gap.empty()) {
    std::erase(opt.frameworks, Framework::kMegatron);
    narrowed.push_back("searched without megatron: Megatron-LM " + gap + " (--frameworks megatron searches it)");
  }
  const auto start = std::chrono::steady_clock::now();
  std::mutex mu;
  bool shown = false;
  opt.progress = [&](int64_t done, int64_t total) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s < 1.0) return;
    std::lock_guard<std::mutex> lock(mu);
    std::fprintf(stderr, "\rsearching: %lld of %lld layout groups (%.1f s)", static_cast<long long>(done),
                 static_cast<long long>(total), s);
    shown = true;
  };
  SearchResult r = Search(in->model, in->workload, in->cluster, opt);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (shown) std::fprintf(stderr, "\n");

  if (!f.output.empty() && !r.plans.empty()) {
    Status s = SavePlan(ToPlan(f, *in, r.plans.front()), f.output);
    if (!s.ok()) return Fail(s);
  }
  if (f.in.json || !f.in.html.empty()) {
    nlohmann::json j;
    j["plans"] = nlohmann::json::array();
    for (const Candidate& c : r.plans) j["plans"].push_back(PlanJson(ToPlan(f, *in, c)));
    j["considered"] = r.considered;
    j["estimated"] = r.estimated;
    j["feasible"] = r.feasible;
    j["search_seconds"] = seconds;
    j["frameworks"] = nlohmann::json::array();
    for (Framework fw : opt.frameworks) j["frameworks"].push_back(FrameworkName(fw));
    if (!narrowed.empty()) j["assumed"] = narrowed;
    j["candidates_per_second"] = seconds > 0 ? static_cast<double>(r.considered) / seconds : 0.0;
    if (r.plans.empty()) {
      if (r.has_closest) j["closest"] = PlanJson(ToPlan(f, *in, r.closest));
      j["binding"] = r.binding;
      j["advice"] = r.advice;
    }
    j["seen"] = SeenJson(r, !in->workload.training());
    if (!f.in.html.empty()) {
      const std::string title = "shardplan plan: " + in->model.name + " on " + std::to_string(in->cluster.world_size()) +
                                " x " + in->cluster.gpu.name + ", " + std::string(TaskName(in->workload.task));
      if (Status s = WriteHtml(f.in.html, {"plan", title, InputsJson(f.in), j}); !s.ok()) return Fail(s);
    }
    if (f.in.json) std::cout << j.dump(2) << "\n";
  }
  if (!f.in.json) {
    const bool inference = !in->workload.training();
    std::cout << in->model.name << " (" << Thousands(CountParams(in->model).total) << " params) on "
              << in->cluster.world_size() << " x " << in->cluster.gpu.name << ", " << TaskName(in->workload.task);
    if (in->workload.training())
      std::cout << ", seq " << in->workload.seq_len << ", global batch "
                << (StepFollowsLayout(in->workload, opt.fixed) ? std::string("mbs x dp x grad_accum")
                                                               : std::to_string(in->workload.global_batch));
    std::cout << "\n";
    std::printf("searched %s layouts (%s priced, %s fit) in %.3f s, %s layouts/s\n\n", Thousands(r.considered).c_str(),
                Thousands(r.estimated).c_str(), Thousands(r.feasible).c_str(), seconds,
                Thousands(static_cast<long long>(r.considered / std::max(seconds, 1e-9))).c_str());
    for (const std::string& a : narrowed) std::cout << "assumed: " << a << "\n";
    const GpuSpec& gpu = in->cluster.gpu;
    const bool proxy = RanksByKernelProxy(gpu);
    if (proxy)
      std::cout << "ranked: by the step time NVIDIA-measured kernels would take at the " << gpu.display_name
                << "'s datasheet peaks; its own step time is not modelled, so none is printed\n";
    if (!narrowed.empty() || proxy) std::cout << "\n";
    std::cout.flush();
    if (r.plans.empty()) {
      std::cout << "NOTHING FITS.\n" << r.binding << "\n";
      if (r.has_closest) std::cout << "closest: " << FormatLayout(r.closest.layout) << "\n";
      for (const std::string& a : r.advice) std::cout << "  - " << a << "\n";
    } else {
      Table t({"#", "layout", "needs GiB", "free GiB", "step s", "tok/s/GPU", "MFU"});
      const bool timed = StepTimeKnown(gpu);  // else "-": no step time is modelled
      for (size_t i = 0; i < r.plans.size(); ++i) {
        const Candidate& c = r.plans[i];
        t.Row({std::to_string(i + 1), CompactLayout(c.layout, inference), Fixed(ToGiB(c.memory.fullest().required_peak), 1),
               Fixed(ToGiB(c.memory.headroom_bytes), 1), timed ? Fixed(c.time.step_seconds, 3) : "-",
               timed ? Fixed(c.time.tokens_per_second_per_gpu, 0) : "-", timed ? Fixed(100 * c.time.mfu, 1) + "%" : "-"});
      }
      std::cout << t.Render() << "\n";
      for (size_t i = 0; i < r.plans.size(); ++i) std::cout << i + 1 << ". " << r.plans[i].reason << "\n";
      if (!f.output.empty()) std::cout << "\nwrote plan #1 to " << f.output << "\n";
    }
    if (!f.in.html.empty()) std::cout << "wrote the HTML report to " << f.in.html << "\n";
  }
  ExitCode() = r.plans.empty() ? 1 : 0;
  return ExitCode();
}

Registrar reg(30, [](CLI::App& app) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* cmd = app.add_subcommand("plan", "search every layout that fits and rank them by predicted speed");
  AddInputFlags(cmd, flags->in, true);
  cmd->add_option("--top,-k", flags->top, "how many plans to show")->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_option("-o,--output", flags->output, "write the best plan to this plan.yaml");
  cmd->add_option("--frameworks", flags->frameworks, "frameworks to search (default: all four)")->delimiter(',');
  cmd->add_option("--threads", flags->threads, "search threads (default: one per core)");
  cmd->callback([flags] { Run(*flags); });
});

}  // namespace
}  // namespace shardplan::cli
