// estimate_benchmark: the cost of one EstimateMemory and one EstimateTime call, the unit the
// search repeats thousands of times. Target < 1 ms each.
//   - Llama-3.1-70B on 64 H100 (8 DGX H100 nodes), Megatron 3D layout tp=8, pp=4, dp=2
//   - Llama-3.1-405B on 16,384 H100, Llama 3's production layout tp=8, pp=16, dp=128
// Both at seq 8192; the memory model walks every pipeline stage (no fast path).
//
//   estimate_benchmark [--benchmark_filter=...] [--benchmark_min_time=0.01]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "planner/io/model_reader.h"
#include "planner/io/workload_reader.h"
#include "planner/layout.h"
#include "planner/memory_model.h"
#include "planner/time_model.h"
#include "topology/cluster_reader.h"

namespace shardplan {
namespace {

struct Inputs {
  ModelSpec model;
  ClusterSpec cluster;
  Workload workload;
  Layout layout;
};

template <typename T>
T OrDie(StatusOr<T> v) {
  if (!v.ok()) {
    std::fprintf(stderr, "estimate_benchmark: %s\n", v.status().message().c_str());
    std::exit(2);
  }
  return *std::move(v);
}

Inputs Make(const char* model, int nodes, int64_t global_batch, const char* layout) {
  Inputs in{OrDie(LoadModel(model)), OrDie(LoadCluster("dgx-h100")), OrDie(LoadWorkload("pretrain")), {}};
  in.cluster.nodes = nodes;
  in.workload.seq_len = 8192;
  in.workload.global_batch = global_batch;
  in.layout = OrDie(ResolveLayout(in.model, in.workload, in.cluster, OrDie(ParseLayout(layout))));
  return in;
}

const Inputs& Llama70B3d() {
  static const Inputs in = Make("llama-3.1-70b", 8, 1024, "framework=megatron,tp=8,pp=4,dp=2,sp=on,ac=selective");
  return in;
}

const Inputs& Llama405BPp16() {
  static const Inputs in =
      Make("llama-3.1-405b", 2048, 2048, "framework=megatron,tp=8,pp=16,dp=128,sp=on,ac=selective");
  return in;
}

void BM_EstimateMemory(benchmark::State& state, const Inputs& (*inputs)()) {
  const Inputs& in = inputs();
  for (auto _ : state) benchmark::DoNotOptimize(EstimateMemory(in.model, in.workload, in.layout, in.cluster));
}

void BM_EstimateTime(benchmark::State& state, const Inputs& (*inputs)()) {
  const Inputs& in = inputs();
  for (auto _ : state) benchmark::DoNotOptimize(EstimateTime(in.model, in.workload, in.layout, in.cluster));
}

BENCHMARK_CAPTURE(BM_EstimateMemory, llama70b_tp8_pp4_dp2, Llama70B3d)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_EstimateTime, llama70b_tp8_pp4_dp2, Llama70B3d)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_EstimateMemory, llama405b_tp8_pp16_dp128, Llama405BPp16)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_EstimateTime, llama405b_tp8_pp16_dp128, Llama405BPp16)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace shardplan
