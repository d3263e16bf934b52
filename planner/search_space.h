// The search space: which values each layout key takes for a model, workload and cluster,
// honouring the keys the user fixed. Internal to planner/search.cc and planner/explain.cc.
#pragma once

#include <vector>

#include "planner/search.h"

namespace shardplan {

class SearchSpace {
 public:
  SearchSpace(const ModelSpec& m, const Workload& w, const ClusterSpec& c, const SearchOptions& opt);

  // Every structural layout (framework, tp, cp, pp, vpp, ep, zero, shard group, offload),
  // with dp derived; recomputation and micro-batch are varied inside each group.
  std::vector<Layout> Groups() const;
  // Micro-batch sizes that divide the per-replica batch, ascending, none below opt.min_mbs.
  std::vector<int> MicroBatches(const Layout& g) const;
  // Inference: concurrent sequences per replica, descending from the workload's.
  std::vector<int> Batches(const Layout& g) const;

 private:
  std::vector<int> Values(LayoutKey key, int fixed_value, std::vector<int> candidates) const;
  void AddTraining(Framework f, std::vector<Layout>& out) const;
  void AddInference(std::vector<Layout>& out) const;

  const ModelSpec& m_;
  const Workload& w_;
  const ClusterSpec& c_;
  const SearchOptions& opt_;
};

// Fills `closest`, `binding` and `advice` when nothing fits: which term bound the nearest
// layout, and what would fix it (more nodes, shorter sequences, offload, quantization),
// each checked by a smaller search (skipped unless opt.advise).
void ExplainMiss(const ModelSpec& m, const Workload& w, const ClusterSpec& c, const SearchOptions& opt,
                 const CostModels& models, SearchResult& r);

}  // namespace shardplan
