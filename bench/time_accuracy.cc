// time_accuracy: scores the time model against published throughput runs.
//
//   time_accuracy [--cases FILE] [--max-median-error 0.20] [--verbose]
//
// Reads bench/data/time_cases.yaml (cases taken from shared/cases/public.yaml, each with its
// source), predicts tokens/s per GPU with EstimateTime, and prints predicted against measured
// per case and the median absolute relative error over the scored cases. Exit codes follow
// DESIGN.md: 0 when the median is within --max-median-error (or none is given), 1 when it is
// not, 2 on bad input.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "planner/model_spec.h"
#include "planner/status.h"
#include "planner/time_model.h"
#include "planner/units.h"

namespace shardplan {
namespace {

#ifdef SP_TIME_CASES
constexpr const char* kDefaultCases = SP_TIME_CASES;
#else
constexpr const char* kDefaultCases = "bench/data/time_cases.yaml";
#endif

struct Case {
  std::string id, source;
  ModelSpec model;
  ClusterSpec cluster;
  Workload workload;
  Layout layout;
  TimeOptions options;
  double measured = 0;     // tokens/s per GPU (converted from TFLOP/s where needed)
  std::string metric;      // what the source reported
  bool scored = true;
  bool holdout = false;    // from holdout_cases: reported apart, never in the threshold
};

std::string Where(const YAML::Node& n) {
  return "line " + std::to_string(n.Mark().line + 1) + ", column " + std::to_string(n.Mark().column + 1);
}

Status CheckKeys(const YAML::Node& n, std::initializer_list<const char*> allowed, const std::string& what) {
  if (!n.IsMap()) return Status::BadInput(what + " (" + Where(n) + "): expected a mapping");
  for (const auto& kv : n) {
    const std::string key = kv.first.as<std::string>();
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; })) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      return Status::BadInput(what + " (" + Where(kv.first) + "): unknown key '" + key + "'; expected one of " + list);
    }
  }
  return Status::Ok();
}

template <typename T>
T Get(const YAML::Node& n, const char* key, T dflt) {
  return n[key] ? n[key].as<T>() : dflt;
}

StatusOr<double> Bandwidth(const YAML::Node& n, const char* key, const std::string& what) {
  if (!n[key]) return 0.0;
  StatusOr<double> v = ParseBandwidth(n[key].as<std::string>());
  if (!v.ok()) return v.status().WithContext(what + "." + key + " (" + Where(n[key]) + ")");
  return v;
}

StatusOr<GpuSpec> ReadGpu(const std::string& name, const YAML::Node& n) {
  const std::string what = "gpus." + name;
  SP_RETURN_IF_ERROR(CheckKeys(n, {"bf16_tflops", "fp16_tflops", "fp8_tflops", "fp32_tflops", "memory_bandwidth",
                                   "nvlink", "compute_capability", "tdp_watts", "power_limit_watts"}, what));
  GpuSpec g;
  g.name = name;
  g.bf16_flops = Get(n, "bf16_tflops", 0.0) * 1e12;
  g.fp16_flops = Get(n, "fp16_tflops", 0.0) * 1e12;
  g.fp8_flops = Get(n, "fp8_tflops", 0.0) * 1e12;
  g.fp32_flops = Get(n, "fp32_tflops", 0.0) * 1e12;
  SP_ASSIGN_OR_RETURN(g.memory_bandwidth, Bandwidth(n, "memory_bandwidth", what));
  SP_ASSIGN_OR_RETURN(g.nvlink_bandwidth, Bandwidth(n, "nvlink", what));
  g.compute_capability = Get(n, "compute_capability", 0);
  g.tdp_watts = Get(n, "tdp_watts", 0.0);
  g.power_limit_watts = Get(n, "power_limit_watts", 0.0);
  return g;
}

// A cluster from the `clusters:` table, with the case's overrides (nodes, gpus_per_node).
StatusOr<ClusterSpec> ReadCluster(const YAML::Node& root, const std::map<std::string, GpuSpec>& gpus,
                                  const YAML::Node& ref, const std::string& what) {
  SP_RETURN_IF_ERROR(CheckKeys(ref, {"name", "nodes", "gpus_per_node"}, what));
  const std::string name = Get<std::string>(ref, "name", "");
  const YAML::Node n = root["clusters"][name];
  if (!n) return Status::BadInput(what + " (" + Where(ref) + "): unknown cluster '" + name + "'");
  const std::string cw = "clusters." + name;
  SP_RETURN_IF_ERROR(CheckKeys(n, {"gpu", "gpus_per_node", "intra_node", "inter_node", "pcie", "nvme"}, cw));
  ClusterSpec c;
  c.name = name;
  const auto gpu = gpus.find(Get<std::string>(n, "gpu", ""));
  if (gpu == gpus.end()) return Status::BadInput(cw + " (" + Where(n) + "): unknown gpu");
  c.gpu = gpu->second;
  c.gpus_per_node = Get(ref, "gpus_per_node", Get(n, "gpus_per_node", 1));
  c.nodes = Get(ref, "nodes", 1);
  c.intra_node.fabric = c.gpu.nvlink_bandwidth > 0 ? "nvlink" : "pcie";
  c.intra_node.bandwidth = c.gpu.nvlink_bandwidth;
  if (n["inter_node"]) {
    SP_RETURN_IF_ERROR(CheckKeys(n["inter_node"], {"bandwidth", "nics_per_node", "latency"}, cw + ".inter_node"));
    SP_ASSIGN_OR_RETURN(c.inter_node.bandwidth, Bandwidth(n["inter_node"], "bandwidth", cw + ".inter_node"));
    c.inter_node.nics_per_node = Get(n["inter_node"], "nics_per_node", 1);
    if (n["inter_node"]["latency"]) {
      SP_ASSIGN_OR_RETURN(c.inter_node.latency_s, ParseDuration(n["inter_node"]["latency"].as<std::string>()));
    }
  }
  SP_ASSIGN_OR_RETURN(c.pcie_bandwidth, Bandwidth(n, "pcie", cw));
  SP_ASSIGN_OR_RETURN(c.nvme_bandwidth, Bandwidth(n, "nvme", cw));
  return c;
}

// Family defaults follow the Hugging Face / Megatron implementations of each family.
StatusOr<ModelSpec> ReadModel(const YAML::Node& n, const std::string& what) {
  SP_RETURN_IF_ERROR(CheckKeys(n, {"family", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
                                   "tied", "max_positions", "experts", "experts_per_token", "expert_ffn",
                                   "shared_experts", "shared_ffn", "first_dense_layers", "q_lora_rank",
                                   "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                                   "mtp_layers"}, what));
  ModelSpec m;
  m.model_type = Get<std::string>(n, "family", "llama");
  m.layers = Get<int64_t>(n, "layers", 0);
  m.hidden = Get<int64_t>(n, "hidden", 0);
  m.heads = Get<int64_t>(n, "heads", 1);
  m.kv_heads = Get<int64_t>(n, "kv_heads", m.heads);
  m.head_dim = Get<int64_t>(n, "head_dim", m.hidden / std::max<int64_t>(1, m.heads));
  m.intermediate = Get<int64_t>(n, "ffn", 4 * m.hidden);
  m.vocab = Get<int64_t>(n, "vocab", 0);
  m.max_positions = Get<int64_t>(n, "max_positions", 0);
  const std::string& f = m.model_type;
  const bool plain = f == "gpt" || f == "bloom" || f == "mpt" || f == "opt";
  if (!plain && f != "llama" && f != "qwen3_moe" && f != "deepseek_v3" && f != "mixtral")
    return Status::BadInput(what + ".family (" + Where(n["family"]) + "): unknown family '" + f + "'");
  m.mlp = plain ? MlpKind::kPlain : MlpKind::kGated;
  m.norm = plain ? NormKind::kLayer : NormKind::kRms;
  m.gelu = plain && f != "opt";
  m.position = (f == "gpt" || f == "opt") ? PositionKind::kLearned : (f == "bloom" || f == "mpt") ? PositionKind::kAlibi
                                                                                               : PositionKind::kRotary;
  m.position_offset = f == "opt" ? 2 : 0;
  m.qkv_bias = m.o_bias = m.mlp_bias = f == "gpt" || f == "bloom" || f == "opt";
  m.embedding_norm = f == "bloom";
  m.qk_norm = f == "qwen3_moe";
  m.tied_embeddings = Get(n, "tied", plain);
  m.experts = Get<int64_t>(n, "experts", 0);
  m.experts_per_token = Get<int64_t>(n, "experts_per_token", 0);
  m.expert_intermediate = Get<int64_t>(n, "expert_ffn", 0);
  m.shared_experts = Get<int64_t>(n, "shared_experts", 0);
  m.shared_intermediate = Get<int64_t>(n, "shared_ffn", 0);
  const int64_t dense = Get<int64_t>(n, "first_dense_layers", 0);
  if (m.experts > 0)
    for (int64_t i = 0; i < m.layers; ++i) m.moe_layer.push_back(i >= dense);
  if (f == "deepseek_v3") {
    m.attention = AttentionKind::kMla;
    m.router_bias = true;
    m.q_lora_rank = Get<int64_t>(n, "q_lora_rank", 0);
    m.kv_lora_rank = Get<int64_t>(n, "kv_lora_rank", 0);
    m.qk_nope_head_dim = Get<int64_t>(n, "qk_nope_head_dim", 0);
    m.qk_rope_head_dim = Get<int64_t>(n, "qk_rope_head_dim", 0);
    m.v_head_dim = Get<int64_t>(n, "v_head_dim", 0);
  }
  m.mtp_layers = Get<int64_t>(n, "mtp_layers", 0);
  return m;
}

StatusOr<Workload> ReadWorkload(const YAML::Node& n, const std::string& what) {
  SP_RETURN_IF_ERROR(CheckKeys(n, {"task", "seq_len", "global_batch", "precision", "optimizer", "lora_rank",
                                   "lora_targets", "batch", "prompt_len", "gen_len", "weights", "kv_cache", "fp8_recipe"},
                                what));
  Workload w;
  if (!ParseTask(Get<std::string>(n, "task", "pretrain"), &w.task))
    return Status::BadInput(what + ".task (" + Where(n) + "): unknown task");
  if (!ParseOptimizer(Get<std::string>(n, "optimizer", "adamw"), &w.optimizer, &w.paged_optimizer, &w.optimizer_step))
    return Status::BadInput(what + ".optimizer (" + Where(n) + "): unknown optimizer");
  auto dtype = [&](const char* key, Dtype dflt) -> StatusOr<Dtype> {
    if (!n[key]) return dflt;
    std::optional<Dtype> d = ParseDtype(n[key].as<std::string>());
    if (!d) return Status::BadInput(what + "." + key + " (" + Where(n[key]) + "): unknown dtype");
    return *d;
  };
  SP_ASSIGN_OR_RETURN(w.precision, dtype("precision", Dtype::kBf16));
  if (n["fp8_recipe"] && !ParseFp8Recipe(n["fp8_recipe"].as<std::string>(), &w.fp8_recipe))
    return Status::BadInput(what + ".fp8_recipe (" + Where(n["fp8_recipe"]) + "): unknown recipe");
  SP_ASSIGN_OR_RETURN(w.inference.weights, dtype("weights", Dtype::kBf16));
  SP_ASSIGN_OR_RETURN(w.inference.kv_cache, dtype("kv_cache", Dtype::kBf16));
  w.seq_len = Get<int64_t>(n, "seq_len", 4096);
  w.global_batch = Get<int64_t>(n, "global_batch", 1);
  w.lora.rank = Get<int64_t>(n, "lora_rank", w.lora.rank);
  if (n["lora_targets"]) w.lora.targets = n["lora_targets"].as<std::vector<std::string>>();
  w.inference.batch = Get<int64_t>(n, "batch", 1);
  w.inference.prompt_len = Get<int64_t>(n, "prompt_len", 1024);
  w.inference.gen_len = Get<int64_t>(n, "gen_len", 1024);
  return w;
}

template <typename E>
StatusOr<E> Enum(const YAML::Node& n, const char* key, std::initializer_list<std::pair<const char*, E>> table, E dflt,
                 const std::string& what) {
  if (!n[key]) return dflt;
  const std::string v = n[key].as<std::string>();
  for (const auto& [name, e] : table)
    if (v == name) return e;
  return Status::BadInput(what + "." + key + " (" + Where(n[key]) + "): unknown value '" + v + "'");
}

StatusOr<Layout> ReadLayout(const YAML::Node& n, const std::string& what) {
  SP_RETURN_IF_ERROR(CheckKeys(n, {"framework", "dp", "tp", "pp", "vpp", "cp", "ep", "etp", "sp", "zero",
                                   "shard_group", "ac", "ac_layers", "offload_optimizer", "offload_params", "mbs",
                                   "grad_accum", "reshard_after_forward", "stages", "batch", "dispatcher"}, what));
  Layout l;
  SP_ASSIGN_OR_RETURN(l.framework, Enum<Framework>(n, "framework", {{"deepspeed", Framework::kDeepSpeed},
      {"fsdp", Framework::kFsdp}, {"megatron", Framework::kMegatron}, {"torchtitan", Framework::kTorchtitan}},
      Framework::kFsdp, what));
  SP_ASSIGN_OR_RETURN(l.dispatcher, Enum<EpDispatch>(n, "dispatcher", {{"alltoall", EpDispatch::kAllToAll},
      {"allgather", EpDispatch::kAllGather}, {"flex", EpDispatch::kFlex}}, EpDispatch::kAllToAll, what));
  SP_ASSIGN_OR_RETURN(l.ac, Enum<Recompute>(n, "ac", {{"none", Recompute::kNone}, {"selective", Recompute::kSelective},
      {"full", Recompute::kFull}}, Recompute::kNone, what));
  const std::initializer_list<std::pair<const char*, Offload>> offloads = {
      {"none", Offload::kNone}, {"cpu", Offload::kCpu}, {"nvme", Offload::kNvme}};
  SP_ASSIGN_OR_RETURN(l.offload_optimizer, Enum<Offload>(n, "offload_optimizer", offloads, Offload::kNone, what));
  SP_ASSIGN_OR_RETURN(l.offload_params, Enum<Offload>(n, "offload_params", offloads, Offload::kNone, what));
  l.dp = Get(n, "dp", 1);
  l.tp = Get(n, "tp", 1);
  l.pp = Get(n, "pp", 1);
  l.vpp = Get(n, "vpp", 1);
  l.cp = Get(n, "cp", 1);
  l.ep = Get(n, "ep", 1);
  l.etp = Get(n, "etp", 1);
  l.sp = Get(n, "sp", false);
  l.zero = Get(n, "zero", 0);
  l.shard_group = Get(n, "shard_group", 0);
  l.ac_layers = Get(n, "ac_layers", 0);
  l.mbs = Get(n, "mbs", 1);
  l.grad_accum = Get(n, "grad_accum", 1);
  l.reshard_after_forward = Get(n, "reshard_after_forward", true);
  l.batch = Get(n, "batch", 0);
  if (n["stages"]) l.stages = n["stages"].as<std::vector<int>>();
  return l;
}

StatusOr<TimeOptions> ReadOptions(const YAML::Node& n, const std::string& what) {
  TimeOptions o;
  if (!n) return o;
  SP_RETURN_IF_ERROR(CheckKeys(n, {"dp_overlap", "param_gather_overlap", "tp_overlap", "ep_overlap",
                                   "fused_kernels", "flash_attention"}, what));
  auto sw = [&](const char* key) { return !n[key] ? Switch::kAuto : n[key].as<bool>() ? Switch::kOn : Switch::kOff; };
  o.dp_overlap = sw("dp_overlap");
  o.param_gather_overlap = sw("param_gather_overlap");
  o.tp_overlap = sw("tp_overlap");
  o.ep_overlap = sw("ep_overlap");
  o.fused_kernels = sw("fused_kernels");
  o.flash_attention = sw("flash_attention");
  return o;
}

// The source's FLOPs per token, to turn its TFLOP/s into tokens/s (header of time_cases.yaml).
StatusOr<double> SourceFlopsPerToken(const Case& c, const std::string& formula, const std::string& what) {
  const ModelSpec& m = c.model;
  if (formula == "model") return TrainingFlopsPerToken(m, c.workload.seq_len);
  if (formula == "megatron_hfu") {
    const double L = m.layers, h = m.hidden, s = c.workload.seq_len, V = m.vocab;
    const double passes = c.layout.ac == Recompute::kFull ? 4 : 3;
    return 24 * passes * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
  }
  return Status::BadInput(what + ".flops: unknown formula '" + formula + "'; expected model or megatron_hfu");
}

StatusOr<Case> ReadCase(const YAML::Node& root, const std::map<std::string, GpuSpec>& gpus, const YAML::Node& n,
                        const std::string& what) {
  SP_RETURN_IF_ERROR(CheckKeys(n, {"id", "public_case", "scored", "source", "model", "cluster", "workload", "layout",
                                   "options", "measured", "inferred"}, what));
  Case c;
  c.id = Get<std::string>(n, "id", what);
  c.scored = Get(n, "scored", true);
  const YAML::Node src = n["source"];
  c.source = src && src["repo"] ? src["repo"].as<std::string>() : src && src["paper"] ? "paper" : "?";
  YAML::Node model = n["model"];
  if (model && model.IsScalar()) {
    const std::string name = model.as<std::string>();
    model = root["models"][name];
    if (!model) return Status::BadInput(what + ".model (" + Where(n["model"]) + "): unknown model '" + name + "'");
  }
  SP_ASSIGN_OR_RETURN(c.model, ReadModel(model, what + ".model"));
  c.model.name = c.id;
  SP_ASSIGN_OR_RETURN(c.cluster, ReadCluster(root, gpus, n["cluster"], what + ".cluster"));
  SP_ASSIGN_OR_RETURN(c.workload, ReadWorkload(n["workload"], what + ".workload"));
  SP_ASSIGN_OR_RETURN(c.layout, ReadLayout(n["layout"], what + ".layout"));
  SP_ASSIGN_OR_RETURN(c.options, ReadOptions(n["options"], what + ".options"));
  const YAML::Node meas = n["measured"];
  SP_RETURN_IF_ERROR(CheckKeys(meas, {"tokens_per_s_per_gpu", "tflops_per_gpu", "flops"}, what + ".measured"));
  if (meas["tokens_per_s_per_gpu"]) {
    c.measured = meas["tokens_per_s_per_gpu"].as<double>();
    c.metric = "tok/s";
  } else if (meas["tflops_per_gpu"]) {
    SP_ASSIGN_OR_RETURN(double fpt, SourceFlopsPerToken(c, Get<std::string>(meas, "flops", ""), what + ".measured"));
    c.measured = meas["tflops_per_gpu"].as<double>() * 1e12 / fpt;
    c.metric = "TFLOP/s (" + Get<std::string>(meas, "flops", "") + ")";
  } else {
    return Status::BadInput(what + ".measured (" + Where(meas) + "): needs tokens_per_s_per_gpu or tflops_per_gpu");
  }
  return c;
}

StatusOr<std::vector<Case>> LoadCases(const std::string& path) {
  try {
    const YAML::Node root = YAML::LoadFile(path);
    std::map<std::string, GpuSpec> gpus;
    for (const auto& kv : root["gpus"]) {
      SP_ASSIGN_OR_RETURN(GpuSpec g, ReadGpu(kv.first.as<std::string>(), kv.second));
      gpus[g.name] = g;
    }
    std::vector<Case> cases;
    for (const char* list : {"cases", "holdout_cases"}) {
      size_t i = 0;
      for (const YAML::Node& n : root[list]) {
        SP_ASSIGN_OR_RETURN(Case c, ReadCase(root, gpus, n, std::string(list) + "[" + std::to_string(i++) + "]"));
        c.holdout = std::string(list) == "holdout_cases";
        cases.push_back(std::move(c));
      }
    }
    if (cases.empty()) return Status::BadInput(path + ": no cases");
    return cases;
  } catch (const YAML::BadFile&) {
    return Status::BadInput(path + ": cannot read the file (pass --cases FILE)");
  } catch (const YAML::Exception& e) {
    return Status::BadInput(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                            ": " + e.msg);
  }
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void PrintTerms(const TimeEstimate& t) {
  for (const TimeTerm& term : t.terms)
    if (term.raw_seconds > 0)
      std::printf("      %-14s %10.4f s  (%5.1f%%)  raw %10.4f s\n", term.name.c_str(), term.seconds,
                  100 * term.seconds / t.step_seconds, term.raw_seconds);
}

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Prints one block of cases and returns the |relative errors| of its scored ones.
std::vector<double> Score(const std::vector<Case>& cases, bool holdout, bool verbose) {
  std::printf("%-60s %10s %10s %8s %6s  %s\n", holdout ? "holdout case" : "case", "measured", "predicted", "error",
              "MFU", "metric");
  std::vector<double> errors;
  std::map<std::string, std::vector<double>> by_source;
  for (const Case& c : cases) {
    if (c.holdout != holdout) continue;
    const TimeEstimate t = EstimateTime(c.model, c.workload, c.layout, c.cluster, c.options);
    const double err = t.tokens_per_second_per_gpu / c.measured - 1;
    std::printf("%-60s %10.1f %10.1f %+7.1f%% %5.1f%%  %s%s\n", c.id.c_str(), c.measured, t.tokens_per_second_per_gpu,
                100 * err, 100 * t.mfu, c.metric.c_str(), c.scored ? "" : "  [not scored]");
    if (verbose) PrintTerms(t);
    if (!c.scored) continue;
    errors.push_back(std::fabs(err));
    by_source[c.source].push_back(std::fabs(err));
  }
  std::printf("\n  by source (median |error|, cases):\n");
  for (const auto& [source, errs] : by_source)
    std::printf("    %-40s %6.1f%%  %zu\n", source.c_str(), 100 * Median(errs), errs.size());
  std::printf("  %s: %zu scored, median |error| %.1f%%, mean |error| %.1f%%\n\n", holdout ? "holdout" : "cases",
              errors.size(), 100 * Median(errors), 100 * Mean(errors));
  return errors;
}

int Run(const std::string& path, double max_median, bool verbose) {
  StatusOr<std::vector<Case>> cases = LoadCases(path);
  if (!cases.ok()) {
    std::fprintf(stderr, "time_accuracy: %s\n", cases.status().message().c_str());
    return 2;
  }
  const double median = Median(Score(*cases, false, verbose));
  Score(*cases, true, verbose);
  if (max_median >= 0 && median > max_median) {
    std::printf("FAIL: median |error| %.1f%% > %.1f%%\n", 100 * median, 100 * max_median);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace shardplan

int main(int argc, char** argv) {
  std::string path = shardplan::kDefaultCases;
  double max_median = -1;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--cases" && i + 1 < argc) {
      path = argv[++i];
    } else if (arg == "--max-median-error" && i + 1 < argc) {
      char* end = nullptr;
      max_median = std::strtod(argv[++i], &end);
      if (*end != '\0' || max_median < 0) {
        std::fprintf(stderr, "time_accuracy: --max-median-error: expected a fraction like 0.20, got \"%s\"\n", argv[i]);
        return 2;
      }
    } else if (arg == "--verbose" || arg == "-v") {
      verbose = true;
    } else {
      std::fprintf(stderr, "usage: time_accuracy [--cases FILE] [--max-median-error FRACTION] [--verbose]\n");
      return arg == "--help" || arg == "-h" ? 0 : 2;
    }
  }
  return shardplan::Run(path, max_median, verbose);
}
