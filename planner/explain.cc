// Words for the search's answers: why a plan ranks where it does, and, when nothing fits,
// which constraint bound and what would fix it.
#include <algorithm>
#include <cstdio>

#include "planner/quantization.h"
#include "planner/search_space.h"
#include "planner/units.h"

namespace shardplan {
namespace {

std::string Fmt(const char* f, double a, double b = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

std::string GiB(int64_t b) { return Fmt("%.1f GiB", ToGiB(b)); }

const MemoryTerm* Largest(const StageMemory& s) {
  const MemoryTerm* best = nullptr;
  for (const MemoryTerm& t : s.terms)
    if (!best || t.bytes > best->bytes) best = &t;
  return best;
}

// Runs a smaller search with changed inputs; returns the best plan's tokens/s or -1.
double Probe(const ModelSpec& m, const Workload& w, const ClusterSpec& c, const SearchOptions& opt,
             const CostModels& models, Layout fixed, int* plans_found) {
  SearchOptions o = opt;
  o.fixed = fixed;
  o.top_k = 1;
  o.progress = nullptr;
  o.advise = false;  // a probe asks only whether something fits
  SearchResult r = Search(m, w, c, o, models);
  *plans_found = static_cast<int>(r.feasible);
  return r.plans.empty() ? -1 : r.plans.front().time.tokens_per_second_per_gpu;
}

}  // namespace

std::string ExplainPlan(const ModelSpec& m, const ClusterSpec& c, const Candidate& p, const Candidate* best) {
  const Layout& l = p.layout;
  std::vector<std::string> why;
  if (p.memory.inference) {
    why.push_back(std::string(DtypeName(l.weights)) + " weights" +
                  (ServedAsShipped(m, l.weights) ? " (as the checkpoint ships them, " + m.quant.method + ")" : "") + ", " +
                  std::string(DtypeName(l.kv_cache)) + " KV cache");
    if (l.tp > 1) why.push_back(Fmt("TP=%g splits weights and KV over NVLink", l.tp));
    why.push_back(Fmt("%g sequences per replica", l.batch));
  } else {
    if (l.tp > 1) why.push_back(Fmt(l.tp <= c.gpus_per_node ? "TP=%g keeps its all-reduce on NVLink" : "TP=%g", l.tp));
    if (l.pp > 1) why.push_back(Fmt("PP=%g splits %g layers", l.pp, static_cast<double>(m.layers)) + (l.vpp > 1 ? Fmt(" (interleaved x%g)", l.vpp) : ""));
    if (l.cp > 1) why.push_back(Fmt("CP=%g splits the sequence", l.cp));
    if (l.ep > 1) why.push_back(Fmt("EP=%g spreads the experts", l.ep));
    if (l.zero > 0 && l.dp > 1) why.push_back(Fmt("ZeRO-%g over %g ranks", l.zero, l.shard_group > 0 ? l.shard_group : l.dp * (l.framework == Framework::kMegatron ? l.cp : 1)));
    if (l.offload_optimizer != Offload::kNone) why.push_back("optimizer offloaded to " + std::string(OffloadName(l.offload_optimizer)));
    if (l.ac == Recompute::kFull) why.push_back("full recomputation");
    else if (l.ac == Recompute::kSelective) why.push_back("selective recomputation");
    else why.push_back("no recomputation");
  }
  std::string s;
  for (size_t i = 0; i < why.size() && i < 5; ++i) s += (i ? "; " : "") + why[i];
  s += "; " + GiB(p.memory.headroom_bytes) + " free";
  if (best && best != &p && best->time.tokens_per_second_per_gpu > 0)
    s += Fmt("; %.0f%% of #1's speed", 100 * p.time.tokens_per_second_per_gpu / best->time.tokens_per_second_per_gpu);
  return s;
}

void ExplainMiss(const ModelSpec& m, const Workload& w, const ClusterSpec& c, const SearchOptions& opt,
                 const CostModels& models, SearchResult& r) {
  if (r.has_closest) {
    r.closest.memory = models.memory(m, w, r.closest.layout, c, opt.memory);
    const StageMemory& s = r.closest.memory.fullest();
    const MemoryTerm* big = Largest(s);
    const int64_t over = s.required_peak - (r.closest.memory.capacity_bytes - r.closest.memory.headroom_required_bytes);
    const MemoryEstimate& ce = r.closest.memory;
    if (ce.gpu_fits && !ce.host_fits && c.host_memory_bytes <= 0)
      r.binding = "host memory: the closest layout fits its GPUs only with CPU offload, and the cluster file "
                  "does not state host memory (host: {memory: ...}), so the offload cannot be checked";
    else if (ce.gpu_fits && !ce.host_fits)
      r.binding = "host memory: the closest layout fits its GPUs but needs " + GiB(ce.per_node_host_bytes) +
                  " of RAM per node for offloaded states (nodes have " + GiB(c.host_memory_bytes) + ")";
    else if (ce.gpu_fits && !ce.nvme_fits)
      r.binding = "NVMe: the closest layout needs " + GiB(ce.per_node_nvme_bytes) + " per node (nodes have " +
                  GiB(c.nvme_bytes) + ")";
    else
      r.binding = "GPU memory: the closest layout needs " + GiB(s.required_peak) + " on stage " + std::to_string(s.stage) +
                  " (" + GiB(over) + " over " + GiB(ce.capacity_bytes) + " minus the " +
                  GiB(ce.headroom_required_bytes) + " headroom); its largest term is " +
                  (big ? big->name + " at " + GiB(big->bytes) : std::string("?"));
  } else {
    r.binding = "no layout satisfies the framework rules for this model, batch and GPU count";
  }
  if (!opt.advise) return;
  int found = 0;
  for (int factor : {2, 4, 8, 16}) {
    ClusterSpec more = c;
    more.nodes = c.nodes * factor;
    if (Probe(m, w, more, opt, models, opt.fixed, &found) > 0) {
      r.advice.push_back(Fmt("more GPUs: %g nodes (%g GPUs) fit", more.nodes, more.world_size()) +
                         Fmt(" with %g layouts", found));
      break;
    }
  }
  if (w.training()) {
    for (int64_t div : {2, 4, 8}) {
      Workload shorter = w;
      shorter.seq_len = w.seq_len / div;
      if (shorter.seq_len >= 128 && Probe(m, shorter, c, opt, models, opt.fixed, &found) > 0) {
        r.advice.push_back(Fmt("shorter sequences: %g tokens fit (now %g)", static_cast<double>(shorter.seq_len),
                               static_cast<double>(w.seq_len)));
        break;
      }
    }
    if ((opt.fixed.fixed & (kKeyOffloadOptimizer | kKeyOffloadParams)) != 0) {
      Layout free = opt.fixed;
      free.fixed &= ~(kKeyOffloadOptimizer | kKeyOffloadParams);
      if (Probe(m, w, c, opt, models, free, &found) > 0) r.advice.push_back("offload: letting the search offload to CPU/NVMe fits");
    }
    if (w.task == Task::kPretrain || w.task == Task::kFinetune) {
      Workload q = w;
      q.task = Task::kQlora;
      if (Probe(m, q, c, opt, models, opt.fixed, &found) > 0)
        r.advice.push_back("quantization: QLoRA (NF4 frozen base, LoRA adapters) fits on these GPUs");
    }
  } else {
    for (Dtype d : {Dtype::kInt8, Dtype::kInt4}) {
      if (DtypeBytes(d) >= DtypeBytes(ServedFormat(m, w.inference.weights))) continue;
      Workload q = w;
      q.inference.weights = d;
      Layout free = opt.fixed;
      free.fixed &= ~kKeyWeights;
      if (Probe(m, q, c, opt, models, free, &found) > 0) {
        r.advice.push_back("quantization: " + std::string(DtypeName(d)) + " weights fit");
        break;
      }
    }
    Workload shorter = w;
    shorter.inference.prompt_len = std::max<int64_t>(1, w.inference.prompt_len / 4);
    if (Probe(m, shorter, c, opt, models, opt.fixed, &found) > 0)
      r.advice.push_back(Fmt("shorter context: a %g-token prompt fits", static_cast<double>(shorter.inference.prompt_len)));
  }
  if (r.advice.empty()) r.advice.push_back("nothing tried fits: up to 16x the nodes, shorter sequences and quantization all fall short");
}

}  // namespace shardplan
