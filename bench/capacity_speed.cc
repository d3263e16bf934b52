// capacity_speed: wall time of one whole `shardplan capacity` sweep (planner/capacity.h):
// Llama-3.1-405B pre-training, 15T tokens within 90 days, seq 8192, global batch 2048, over
// the four default GPU kinds on standard 8-GPU nodes, clusters from 8 to 16,384 GPUs. Target:
// under 2 s on a 2-core machine.
//
//   capacity_speed [--small] [--repeats N] [--threads N]
//
// Prints the best and median seconds, the searches and layouts behind them, and each kind's
// answer. --small sweeps Llama-3.1-8B on H100 up to 64 GPUs once, for CI. It reports; it
// does not fail on time (exit 0 unless an input is bad).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "planner/capacity.h"
#include "planner/io/model_reader.h"
#include "planner/io/workload_reader.h"
#include "topology/gpu_catalog.h"
#include "topology/gpu_prices.h"
#include "topology/standard_node.h"

namespace shardplan {
namespace {

struct Problem {
  const char* model;
  std::vector<std::string> gpus;  // empty: the price table's defaults
  int max_gpus;
  double target_seconds;
};

int Run(const Problem& p, int repeats, int threads) {
  StatusOr<ModelSpec> m = LoadModel(p.model);
  StatusOr<Workload> w = LoadWorkload("pretrain");
  StatusOr<PriceTable> prices = BuiltinPrices();
  for (const Status& s : {m.status(), w.status(), prices.status()})
    if (!s.ok()) return fmt::print(stderr, "capacity_speed: {}\n", s.message()), s.exit_code();
  w->seq_len = 8192;
  w->global_batch = 2048;
  std::vector<GpuKind> kinds;
  for (const std::string& name : p.gpus.empty() ? prices->default_gpus : p.gpus) {
    StatusOr<GpuSpec> g = CatalogGpu(name);
    if (!g.ok()) return fmt::print(stderr, "capacity_speed: {}\n", g.status().message()), 2;
    const GpuPrice* price = prices->Find(g->name);
    kinds.push_back({StandardNode(*g), price ? price->per_gpu_hour : 0});
  }
  CapacityTarget t;
  t.tokens = 15e12;
  t.deadline_seconds = 90 * 86400.0;
  CapacityLimits limits;
  limits.max_gpus = p.max_gpus;
  SearchOptions opt;
  opt.threads = threads;
  opt.frameworks = {Framework::kMegatron};  // capacity's default for training (cli/capacity_command.cc)
  std::vector<double> seconds;
  CapacityResult r;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    r = PlanCapacity(*m, *w, kinds, t, limits, opt);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double best = seconds.front(), median = seconds[seconds.size() / 2];
  fmt::print("{}: 15T tokens within 90 days, {} GPU kinds, {} to {} GPUs\n", p.model, kinds.size(),
             kinds.front().node.gpus_per_node, p.max_gpus);
  fmt::print("  seconds   best {:.3f}  median {:.3f}  ({} runs; target < {:g} s: {})\n", best, median, repeats,
             p.target_seconds, best < p.target_seconds ? "met" : "MISSED");
  fmt::print("  searches  {}  layouts considered {}\n", r.searches, r.layouts);
  for (const KindResult& k : r.kinds) {
    if (k.answer < 0) {
      fmt::print("  {:<15} meets nothing\n", k.kind.node.gpu.name);
      continue;
    }
    const CapacityPoint& a = k.points[static_cast<size_t>(k.answer)];
    fmt::print("  {:<15} {:>6} GPUs  {:5.1f} days  MFU {:4.1f}%  {} sizes searched\n", k.kind.node.gpu.name, a.gpus,
               a.train_seconds / 86400, 100 * a.plan.time.mfu, k.points.size());
  }
  return 0;
}

}  // namespace
}  // namespace shardplan

int main(int argc, char** argv) {
  int repeats = 5, threads = 0;
  bool small = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--small") {
      small = true;
    } else if (arg == "--repeats" && i + 1 < argc) {
      repeats = shardplan::bench::ParseCount("capacity_speed", "--repeats", argv[++i], 1);
    } else if (arg == "--threads" && i + 1 < argc) {
      threads = shardplan::bench::ParseCount("capacity_speed", "--threads", argv[++i], 0);
    } else {
      const bool help = arg == "--help" || arg == "-h";
      fmt::print(help ? stdout : stderr, "usage: capacity_speed [--small] [--repeats N] [--threads N]\n");
      return help ? 0 : 2;
    }
  }
  if (small) return shardplan::Run({"llama-3.1-8b", {"h100-sxm-80gb"}, 64, 2.0}, 1, threads);
  return shardplan::Run({"llama-3.1-405b", {}, 16384, 2.0}, repeats, threads);
}
