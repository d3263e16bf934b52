// `shardplan capacity`: per GPU kind, the smallest cluster that meets a training deadline or
// a serving target, each size priced by the layout search `plan` runs.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/capacity_report.h"
#include "cli/command.h"
#include "cli/html_report.h"
#include "cli/inputs.h"
#include "planner/strings.h"
#include "planner/units.h"
#include "topology/gpu_catalog.h"
#include "topology/standard_node.h"

namespace shardplan::cli {
namespace {

struct CapacityFlags {
  InputFlags in;
  std::string tokens, deadline, max_ttft, max_global_batch;
  int gpus = 0, max_gpus = 16384, min_micro_batch = 1, threads = 0;
  int64_t concurrency = 0, context = 0, output_len = 0;
  double min_tokens_per_s = 0;
  std::vector<std::string> gpu_kinds, prices, frameworks;
  bool cluster_given = false;
  const CLI::App* command = nullptr;  // for the flags the report lists
};

Status Flag(const std::string& flag, const Status& s) { return Status::BadInput(flag + ": " + s.message()); }

StatusOr<CapacityTarget> ReadTarget(const CapacityFlags& f) {
  CapacityTarget t;
  const bool train = !f.tokens.empty() || !f.deadline.empty() || f.gpus != 0;
  const bool serve = f.concurrency != 0 || f.context != 0 || f.output_len != 0 || f.min_tokens_per_s != 0 || !f.max_ttft.empty();
  const std::string shapes = "give --tokens T with --deadline D (or --gpus N), or --concurrency C with --context L";
  if (train == serve)
    return Status::BadInput(train ? "training (--tokens, --deadline, --gpus) and serving (--concurrency, --context, ...) "
                                    "flags cannot be mixed; " + shapes
                                  : "capacity needs a target: " + shapes);
  if (!serve) {
    if (f.tokens.empty()) return Status::BadInput("--tokens: missing; say how many tokens to train on, e.g. --tokens 15T");
    auto tokens = ParseTokenCount(f.tokens);
    if (!tokens.ok()) return Flag("--tokens", tokens.status());
    t.tokens = *tokens;
    if (f.deadline.empty() == (f.gpus == 0))
      return Status::BadInput("--deadline and --gpus: give one (--deadline 60d for the GPUs needed, --gpus 16384 for the time)");
    if (f.gpus != 0) {
      if (f.gpus < 0) return Status::BadInput("--gpus: expected a positive GPU count, got " + std::to_string(f.gpus));
      t.kind = CapacityTarget::Kind::kTrainGpus;
      t.gpus = f.gpus;
      return t;
    }
    auto d = ParseDuration(f.deadline);
    if (!d.ok()) return Status::BadInput("--deadline: " + d.status().message() + "; write it as 60d, 1440h or 8w");
    if (*d <= 0) return Status::BadInput("--deadline: expected a positive duration such as 60d, got \"" + f.deadline + "\"");
    t.kind = CapacityTarget::Kind::kTrainDeadline;
    t.deadline_seconds = *d;
    return t;
  }
  t.kind = CapacityTarget::Kind::kServe;
  if (f.concurrency <= 0) return Status::BadInput("--concurrency: expected the sequences served at once, e.g. --concurrency 64");
  if (f.context <= 0) return Status::BadInput("--context: expected each request's prompt tokens, e.g. --context 8192");
  if (f.output_len < 0 || f.min_tokens_per_s < 0)
    return Status::BadInput("--output-len and --min-tokens-per-s: expected positive numbers");
  t.concurrency = f.concurrency;
  t.min_tokens_per_s = f.min_tokens_per_s;
  if (!f.max_ttft.empty()) {
    auto d = ParseDuration(f.max_ttft);
    if (!d.ok()) return Status::BadInput("--max-ttft: " + d.status().message() + "; write it as 500ms or 2s");
    if (*d <= 0) return Status::BadInput("--max-ttft: expected a positive duration such as 500ms, got \"" + f.max_ttft + "\"");
    t.max_ttft_seconds = *d;
  }
  return t;
}

// The GPU kinds to sweep, each with its node shape and price.
Status ReadKinds(const CapacityFlags& f, const Inputs& in, std::vector<GpuKind>& kinds, std::vector<GpuPrice>& prices) {
  SP_ASSIGN_OR_RETURN(PriceTable table, BuiltinPrices());
  for (const std::string& entry : f.prices) {
    const size_t eq = entry.find('=');
    const std::string where = "--price '" + entry + "'";
    if (eq == std::string::npos)
      return Status::BadInput(where + ": expected GPU=PRICE such as h100=2.9/h");
    auto key = ResolveGpuName(Trim(entry.substr(0, eq)), nullptr);
    if (!key.ok()) return Flag(where, key.status());
    auto price = ParsePricePerHour(entry.substr(eq + 1));
    if (!price.ok()) return Flag(where + " at column " + std::to_string(eq + 2), price.status());
    GpuPrice p{*key, *price, "--price " + entry, "given", "--price"};
    table.prices.insert(table.prices.begin(), p);  // found before the built-in entry
  }
  std::vector<std::string> names = f.gpu_kinds;
  if (names.empty()) names = f.cluster_given ? std::vector<std::string>{in.cluster.gpu.name} : table.default_gpus;
  for (const std::string& name : names) {
    GpuSpec gpu;
    if (f.cluster_given && name == in.cluster.gpu.name) {
      gpu = in.cluster.gpu;
    } else {
      auto g = CatalogGpu(Trim(name));
      if (!g.ok()) return Flag("--gpu", g.status());
      gpu = *g;
    }
    GpuKind k;
    k.node = f.cluster_given ? in.cluster : StandardNode(gpu);
    k.node.gpu = gpu;
    k.node.nodes = 1;
    if (f.in.gpus_per_node > 0) k.node.gpus_per_node = f.in.gpus_per_node;
    const GpuPrice* p = table.Find(gpu.name);
    k.price_per_gpu_hour = p ? p->per_gpu_hour : 0;
    prices.push_back(p ? *p : GpuPrice{gpu.name, 0, "", "", ""});
    kinds.push_back(std::move(k));
  }
  return Status::Ok();
}

Status CheckLimits(const CapacityFlags& f, const CapacityTarget& t, const Workload& w, const std::vector<GpuKind>& kinds,
                   CapacityLimits& limits) {
  if (f.max_gpus <= 0) return Status::BadInput("--max-gpus: expected a positive GPU count, got " + std::to_string(f.max_gpus));
  if (f.min_micro_batch <= 0) return Status::BadInput("--min-micro-batch: expected at least 1, got " + std::to_string(f.min_micro_batch));
  limits.max_gpus = f.max_gpus;
  limits.min_micro_batch = f.min_micro_batch;
  if (!f.max_global_batch.empty()) {
    auto b = ParseTokenCount(f.max_global_batch);
    if (!b.ok()) return Flag("--max-global-batch", b.status());
    if (*b < static_cast<double>(w.seq_len))
      return Status::BadInput("--max-global-batch: " + f.max_global_batch + " tokens is less than one sequence of " +
                              std::to_string(w.seq_len) + "; give tokens per step, e.g. 16M");
    limits.max_global_batch_tokens = static_cast<int64_t>(*b);
  }
  for (const GpuKind& k : kinds) {
    const int gpn = k.node.gpus_per_node;
    if (t.kind == CapacityTarget::Kind::kTrainGpus && t.gpus % gpn != 0)
      return Status::BadInput("--gpus: " + std::to_string(t.gpus) + " is not whole nodes of " + std::to_string(gpn) + " " +
                              k.node.gpu.name + "; try " + std::to_string(t.gpus / gpn * gpn > 0 ? t.gpus / gpn * gpn : gpn) +
                              " or " + std::to_string((t.gpus / gpn + 1) * gpn));
    if (t.kind != CapacityTarget::Kind::kTrainGpus && f.max_gpus < gpn)
      return Status::BadInput("--max-gpus: " + std::to_string(f.max_gpus) + " is less than one node of " + std::to_string(gpn));
  }
  return Status::Ok();
}

int Run(CapacityFlags f) {
  if (f.in.nodes != 0)
    return Fail(Status::BadInput("--nodes: capacity sweeps the node count; bound it with --max-gpus, or time one size with --gpus"));
  auto target = ReadTarget(f);
  if (!target.ok()) return Fail(target.status());
  if (!target->training() && f.in.workload.empty() && f.in.task.empty()) f.in.task = "inference";
  auto in = LoadInputs(f.in);
  if (!in.ok()) return Fail(in.status());
  Workload& w = in->workload;
  if (w.training() != target->training())
    return Fail(Status::BadInput(std::string(target->training() ? "--tokens" : "--concurrency") + ": the workload is " +
                                 std::string(TaskName(w.task)) + "; " +
                                 (target->training() ? "give a training workload (pretrain, finetune, lora, qlora)"
                                                     : "serving needs an inference workload (--workload inference)")));
  if (!target->training()) {
    w.inference.prompt_len = f.context;
    if (f.output_len > 0) w.inference.gen_len = f.output_len;
  }
  std::vector<GpuKind> kinds;
  CapacityReport rep;
  if (Status s = ReadKinds(f, *in, kinds, rep.prices); !s.ok()) return Fail(s);
  if (Status s = CheckLimits(f, *target, w, kinds, rep.limits); !s.ok()) return Fail(s);

  SearchOptions opt;
  opt.fixed = in->layout;
  opt.memory = in->memory;
  opt.threads = f.threads;
  // Training sweeps Megatron's layouts unless told otherwise: at cluster scale they are the
  // fastest the search finds (the 405B sweep of bench/capacity_speed picks the same sizes with
  // all four frameworks, at three times the cost).
  // A layout that names its framework sweeps that one; a model the emitted Megatron-LM
  // arguments cannot build sweeps the others.
  opt.frameworks = {Framework::kMegatron};
  if (opt.fixed.fixed & kKeyFramework) {
    opt.frameworks = {opt.fixed.framework};
  } else if (const std::string gap = MegatronLmGap(in->model); !gap.empty() && f.frameworks.empty() && w.training()) {
    opt.frameworks = {Framework::kTorchtitan, Framework::kDeepSpeed, Framework::kFsdp};
    rep.assumed.push_back("swept torchtitan, deepspeed and fsdp: Megatron-LM " + gap + " (--frameworks megatron sweeps it)");
  }
  if (!f.frameworks.empty()) {
    opt.frameworks.clear();
    for (const std::string& name : f.frameworks) {
      if (name == "all") {
        opt.frameworks = SearchOptions().frameworks;
        break;
      }
      auto l = ParseLayout("framework=" + name);
      if (!l.ok()) return Fail(Flag("--frameworks", l.status()));
      opt.frameworks.push_back(l->framework);
    }
  }
  const auto start = std::chrono::steady_clock::now();
  const bool tty = isatty(STDERR_FILENO) != 0;
  bool shown = false;
  auto progress = [&](int64_t searches, const std::string& gpu) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!tty || s < 1.0) return;
    std::fprintf(stderr, "\rsweeping %s: %lld searches (%.1f s)   ", gpu.c_str(), static_cast<long long>(searches), s);
    shown = true;
  };
  const CapacityResult r = PlanCapacity(in->model, w, kinds, *target, rep.limits, opt, progress);
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (shown) std::fprintf(stderr, "\n");
  rep.model = in->model.name;
  rep.params = CountParams(in->model).total;
  rep.workload = w;
  rep.target = *target;
  const nlohmann::json j = CapacityJson(rep, r);
  if (!f.in.html.empty()) {
    nlohmann::json inputs = InputsJson(f.in);
    if (!f.cluster_given) inputs.erase("cluster");
    for (const char* flag : {"--tokens", "--deadline", "--gpus", "--concurrency", "--context", "--gpu"})
      if (const CLI::Option* o = f.command->get_option_no_throw(flag); o && o->count() > 0) inputs[flag] = Join(o->results(), ",");
    const std::string title = "shardplan capacity: " + rep.model + ", " + std::string(TaskName(w.task));
    if (Status s = WriteHtml(f.in.html, {"capacity", title, inputs, j}); !s.ok()) return Fail(s);
  }
  if (f.in.json) std::cout << j.dump(2) << "\n";
  else std::cout << CapacityText(rep, r) << (f.in.html.empty() ? "" : "wrote the HTML report to " + f.in.html + "\n");
  ExitCode() = r.meets() ? 0 : 1;
  return ExitCode();
}

Registrar reg(35, [](CLI::App& app) {
  auto flags = std::make_shared<CapacityFlags>();
  CLI::App* cmd = app.add_subcommand("capacity", "per GPU kind, the smallest cluster that meets a training deadline or a serving target");
  flags->in.cluster.clear();
  AddInputFlags(cmd, flags->in, true);
  cmd->add_option("--tokens", flags->tokens, "training: tokens to train on (15T, 500B, 2.5e12)");
  cmd->add_option("--deadline", flags->deadline, "training: wall-clock limit (60d, 1440h, 8w)");
  cmd->add_option("--gpus", flags->gpus, "training: time the run on this many GPUs instead (whole nodes)");
  cmd->add_option("--concurrency", flags->concurrency, "serving: sequences in flight at once across the cluster");
  cmd->add_option("--context", flags->context, "serving: prompt tokens per request");
  cmd->add_option("--output-len", flags->output_len, "serving: tokens generated per request (default: the workload's)");
  cmd->add_option("--min-tokens-per-s", flags->min_tokens_per_s, "serving: decode speed each sequence needs, tokens/s");
  cmd->add_option("--max-ttft", flags->max_ttft, "serving: longest time to first token (500ms, 2s)");
  cmd->add_option("--gpu", flags->gpu_kinds, "GPU kinds to sweep (default: a100, h100, h200, b200; with --cluster, its GPU)")->delimiter(',');
  cmd->add_option("--price", flags->prices, "price per GPU-hour, e.g. h100=2.9/h (repeat or comma-separate)")->delimiter(',');
  cmd->add_option("--max-gpus", flags->max_gpus, "the largest cluster swept")->capture_default_str();
  cmd->add_option("--max-global-batch", flags->max_global_batch, "training: let the batch grow with the cluster up to these tokens per step (16M)");
  cmd->add_option("--min-micro-batch", flags->min_micro_batch, "training: smallest micro-batch a layout may use")->capture_default_str();
  cmd->add_option("--frameworks", flags->frameworks, "training: frameworks to search, or all (default: megatron)")->delimiter(',');
  cmd->add_option("--threads", flags->threads, "search threads (default: one per core)");
  cmd->callback([flags, cmd] {
    CapacityFlags f = *flags;
    f.cluster_given = cmd->count("--cluster") > 0;
    f.command = cmd;
    Run(f);
  });
});

}  // namespace
}  // namespace shardplan::cli
