// search_speed: wall time of one full layout search (planner/search.h, default SearchOptions
// over every framework) on two problems:
//   (a) Llama-3.1-405B, seq 8192, global batch 2048, 2048 DGX H100 nodes (16,384 GPUs); target < 1 s
//   (b) Llama-3.1-70B,  seq 8192, global batch 1024,    8 DGX H100 nodes (64 GPUs);     target < 100 ms
//
//   search_speed [--small] [--repeats N] [--threads N]
//
// Prints the best (minimum) and median seconds over the repetitions, layouts considered and
// estimated, candidates per second, the feasible count and the best plan. --small runs one
// repetition for CI. It reports; it does not fail on time (exit 0 unless an input is bad).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "planner/io/model_reader.h"
#include "planner/io/workload_reader.h"
#include "planner/layout.h"
#include "planner/search.h"
#include "planner/units.h"
#include "topology/cluster_reader.h"

namespace shardplan {
namespace {

struct Problem {
  const char* name;
  const char* model;
  int nodes;
  int64_t global_batch;
  double target_seconds;
};

constexpr Problem kProblems[] = {
    {"405B on 16,384 H100", "llama-3.1-405b", 2048, 2048, 1.0},
    {"70B on 64 H100", "llama-3.1-70b", 8, 1024, 0.1},
};

int RunProblem(const Problem& p, int repeats, int threads) {
  StatusOr<ModelSpec> m = LoadModel(p.model);
  StatusOr<ClusterSpec> c = LoadCluster("dgx-h100");
  StatusOr<Workload> w = LoadWorkload("pretrain");
  for (const Status& s : {m.status(), c.status(), w.status()})
    if (!s.ok()) return fmt::print(stderr, "search_speed: {}\n", s.message()), s.exit_code();
  c->nodes = p.nodes;
  w->seq_len = 8192;
  w->global_batch = p.global_batch;
  SearchOptions opt;
  opt.threads = threads;
  std::vector<double> seconds;
  SearchResult r;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    r = Search(*m, *w, *c, opt);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double best = seconds.front(), median = seconds[seconds.size() / 2];
  fmt::print("{}: {} GPUs, seq {}, global batch {}\n", p.name, c->world_size(), w->seq_len, w->global_batch);
  fmt::print("  seconds      best {:.4f}  median {:.4f}  ({} runs; target < {:g} s: {})\n", best, median, repeats,
             p.target_seconds, best < p.target_seconds ? "met" : "MISSED");
  fmt::print("  layouts      considered {}  estimated {}  feasible {}\n", r.considered, r.estimated, r.feasible);
  fmt::print("  throughput   {:.0f} candidates/s (considered / best time)\n", static_cast<double>(r.considered) / best);
  if (r.plans.empty()) {
    fmt::print("  best plan    none fits{}\n", r.binding.empty() ? "" : " (" + r.binding + ")");
    return 0;
  }
  const Candidate& top = r.plans.front();
  fmt::print("  best plan    {}\n", FormatLayout(top.layout));
  fmt::print("               {:.0f} tokens/s/GPU, MFU {:.1f}%, peak {:.2f} of {:.2f} GiB\n",
             top.time.tokens_per_second_per_gpu, 100 * top.time.mfu, ToGiB(top.memory.fullest().device_peak),
             ToGiB(top.memory.capacity_bytes));
  return 0;
}

}  // namespace
}  // namespace shardplan

int main(int argc, char** argv) {
  int repeats = 5, threads = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--small") {
      repeats = 1;
    } else if (arg == "--repeats" && i + 1 < argc) {
      repeats = shardplan::bench::ParseCount("search_speed", "--repeats", argv[++i], 1);
    } else if (arg == "--threads" && i + 1 < argc) {
      threads = shardplan::bench::ParseCount("search_speed", "--threads", argv[++i], 0);
    } else {
      const bool help = arg == "--help" || arg == "-h";
      fmt::print(help ? stdout : stderr, "usage: search_speed [--small] [--repeats N] [--threads N]\n");
      return help ? 0 : 2;
    }
  }
  for (const shardplan::Problem& p : shardplan::kProblems)
    if (int rc = shardplan::RunProblem(p, repeats, threads); rc != 0) return rc;
  return 0;
}
