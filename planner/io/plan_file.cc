#include "planner/io/plan_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "planner/io/atomic_file.h"
#include "planner/io/document.h"
#include "planner/io/model_reader.h"
#include "planner/io/workload_reader.h"
#include "planner/strings.h"
#include "planner/units.h"
#include "topology/cluster_reader.h"

namespace shardplan {
namespace {

// Every number as the shortest decimal that reads back the same, so a plan read and written
// again holds the same cluster.
std::string Num(double v) { return ShortestNumber(v); }

std::string BytesText(int64_t b) { return std::to_string(b) + " B"; }
std::string BandwidthText(double bps) { return Num(bps) + " B/s"; }
std::string LatencyText(double s) { return Num(s * 1e9) + " ns"; }

// The cluster in the --cluster schema, exact units, the GPU inline.
std::string ClusterYaml(const ClusterSpec& c) {
  std::ostringstream o;
  const GpuSpec& g = c.gpu;
  o << "  name: " << YamlQuoted(c.name) << "\n  nodes: " << c.nodes << "\n  gpus_per_node: " << c.gpus_per_node << "\n";
  o << "  gpu: {name: " << YamlQuoted(g.name) << ", display_name: " << YamlQuoted(g.display_name) << ", memory: " << BytesText(g.memory_bytes)
    << ", bf16_tflops: " << Num(g.bf16_flops / 1e12) << ", fp16_tflops: " << Num(g.fp16_flops / 1e12)
    << ", fp8_tflops: " << Num(g.fp8_flops / 1e12) << ", fp4_tflops: " << Num(g.fp4_flops / 1e12)
    << ", fp32_tflops: " << Num(g.fp32_flops / 1e12)
    << ", memory_bandwidth: " << BandwidthText(g.memory_bandwidth) << ", nvlink_bandwidth: " << BandwidthText(g.nvlink_bandwidth);
  if (g.compute_capability > 0) o << ", compute_capability: " << g.compute_capability;
  if (g.vendor != "nvidia") o << ", vendor: " << g.vendor;
  if (g.tdp_watts > 0) o << ", tdp: " << Num(g.tdp_watts) << " W";
  if (g.power_limit_watts > 0) o << ", power_limit: " << Num(g.power_limit_watts) << " W";
  if (g.nvlink_domain > 0) o << ", nvlink_domain: " << g.nvlink_domain;
  if (g.nic_bandwidth > 0) o << ", nic_bandwidth: " << BandwidthText(g.nic_bandwidth);
  if (g.sms > 0) o << ", sms: " << g.sms;
  o << ", driver_reserved: " << BytesText(g.reserved_bytes);
  o << "}\n";
  // A zero latency is one nobody measured (discovery leaves it so): left out, the reader's
  // default stands in, as it does for a cluster file.
  auto known = [](const LinkSpec& l, const char* key, double v, const std::string& text) {
    return v > 0 || l.fabric == "none" ? std::string(", ") + key + ": " + text : std::string();
  };
  auto bandwidth = [&](const LinkSpec& l) { return known(l, "bandwidth", l.bandwidth, BandwidthText(l.bandwidth)); };
  auto latency = [&](const LinkSpec& l) { return known(l, "latency", l.latency_s, LatencyText(l.latency_s)); };
  o << "  intra_node: {fabric: " << YamlQuoted(c.intra_node.fabric) << bandwidth(c.intra_node) << latency(c.intra_node);
  if (c.intra_node.domain > 0) o << ", domain: " << c.intra_node.domain;
  o << "}\n";
  o << "  inter_node: {fabric: " << YamlQuoted(c.inter_node.fabric) << bandwidth(c.inter_node)
    << ", nics_per_node: " << c.inter_node.nics_per_node << latency(c.inter_node) << "}\n";
  o << "  host: {memory: " << BytesText(c.host_memory_bytes) << ", pcie_bandwidth: " << BandwidthText(c.pcie_bandwidth) << "}\n";
  o << "  nvme: {capacity: " << BytesText(c.nvme_bytes) << ", bandwidth: " << BandwidthText(c.nvme_bandwidth) << "}\n";
  return o.str();
}

std::string EstimatesYaml(const Plan& p) {
  if (p.memory.stages.empty()) return "";  // not estimated: LoadPlan recomputes anyway
  const MemoryEstimate& e = p.memory;
  const StageMemory& s = e.fullest();
  std::ostringstream o;
  o << "# What shardplan predicted for this layout (recomputed from the inputs when read).\n";
  o << "estimates:\n  memory:\n";
  o << "    fits: " << (e.fits ? "true" : "false") << "\n";
  o << "    fullest_stage: " << e.fullest_stage << "\n";
  o << "    peak_bytes: " << s.device_peak << "            # nvidia-smi: reserved + context + NCCL\n";
  o << "    reserved_peak_bytes: " << s.reserved_peak << "   # torch.cuda.max_memory_reserved\n";
  o << "    allocated_peak_bytes: " << s.allocated_peak << "  # torch.cuda.max_memory_allocated\n";
  o << "    required_bytes: " << s.required_peak << "         # what the step needs to run; fits is decided on it\n";
  o << "    capacity_bytes: " << e.capacity_bytes << "\n    headroom_bytes: " << e.headroom_bytes << "\n";
  o << "    per_node_host_bytes: " << e.per_node_host_bytes << "\n    per_node_nvme_bytes: " << e.per_node_nvme_bytes << "\n";
  o << "    terms:   # bytes on one GPU of the fullest stage, live from..to phase\n";
  for (const MemoryTerm& t : s.terms)
    o << "      " << t.name << ": {bytes: " << t.bytes << ", live: " << PhaseName(t.first) << ".." << PhaseName(t.last)
      << ", pool: " << PoolName(t.pool) << "}\n";
  o << "  time:\n    step_seconds: " << Num(p.time.step_seconds) << "\n    tokens_per_second_per_gpu: "
    << Num(p.time.tokens_per_second_per_gpu) << "\n    mfu: " << Num(p.time.mfu) << "\n";
  return o.str();
}

std::string RankMapYaml(const Plan& p) {
  std::ostringstream o;
  o << "# Where each global rank runs: [rank, node, local_gpu, tp, cp, dp, pp, ep]. TP is innermost,\n"
       "# so a TP group stays inside one node's NVLink island.\nrank_map:\n";
  for (const RankPlace& r : MakeRankMap(p.cluster, p.layout))
    o << "  - [" << r.rank << ", " << r.node << ", " << r.local_gpu << ", " << r.tp << ", " << r.cp << ", " << r.dp << ", "
      << r.pp << ", " << r.ep << "]\n";
  return o.str();
}

// FNV-1a (64-bit) of the model as the plan writes it: a hand edit of the model section, which
// would silently change every estimate the plan was chosen by, no longer matches.
std::string ModelHash(const ModelSpec& m) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : ModelToYaml(m, 0)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

std::string PlanToYaml(const Plan& p) {
  std::ostringstream o;
  o << "# shardplan plan: the inputs, the chosen layout, its estimates and the rank map.\n"
       "# `shardplan estimate --plan FILE` recomputes the estimates from the inputs;\n"
       "# `shardplan emit FILE` writes framework configs; `shardplan validate FILE` rehearses it.\n"
       "version: 1\n";
  if (!p.reason.empty()) o << "reason: " << YamlQuoted(p.reason) << "\n";
  o << "inputs:\n  model_ref: " << YamlQuoted(p.model_ref) << "\n  cluster_ref: " << YamlQuoted(p.cluster_ref)
    << "\n  workload_ref: " << YamlQuoted(p.workload_ref) << "\n  headroom: " << p.memory_options.headroom_bytes << " B\n"
    << "  model_hash: \"" << ModelHash(p.model) << "\"   # of the model section; edit it and re-run `shardplan plan`\n";
  o << "# The model as Hugging Face config keys (read back by the same reader as config.json).\n";
  o << "model:\n  name: " << YamlQuoted(p.model.name) << "\n" << ModelToYaml(p.model, 2);
  o << "cluster:\n" << ClusterYaml(p.cluster);
  o << "workload:\n" << WorkloadToYaml(p.workload, 2);
  o << "# The layout; every key resolved (the --layout syntax).\nlayout: \"" << FormatLayout(p.layout) << "\"\n";
  o << EstimatesYaml(p) << RankMapYaml(p);
  return o.str();
}

Status SavePlan(const Plan& plan, const std::string& path) {
  Status s = WriteFileAtomically(path, PlanToYaml(plan));
  // A place the user named that cannot take the plan is bad usage (exit 2), as before.
  return s.ok() ? s : Status::BadInput(s.message());
}

StatusOr<Plan> ParsePlanDocument(const Document& doc);

StatusOr<Plan> ParsePlan(const std::string& name, std::string_view text) {
  SP_ASSIGN_OR_RETURN(Document doc, Document::Parse(name, text));
  return Guarded(doc, [&] { return ParsePlanDocument(doc); });
}

StatusOr<Plan> ParsePlanDocument(const Document& doc) {
  const YAML::Node& root = doc.root();
  SP_RETURN_IF_ERROR(doc.CheckKeys(root, {"version", "reason", "inputs", "model", "cluster", "workload", "layout",
                                          "estimates", "rank_map"}));
  for (const char* key : {"inputs", "model", "cluster", "workload"})
    if (!root[key].IsDefined() || !root[key].IsMap()) return doc.ErrorAt(root, std::string(key) + ": missing; expected a mapping");
  Plan p;
  const YAML::Node inputs = root["inputs"];
  SP_RETURN_IF_ERROR(doc.CheckKeys(inputs, {"model_ref", "cluster_ref", "workload_ref", "headroom", "model_hash"}));
  SP_ASSIGN_OR_RETURN(std::optional<std::string> model_hash, doc.String(inputs, "model_hash"));
  SP_ASSIGN_OR_RETURN(std::optional<std::string> mref, doc.String(inputs, "model_ref"));
  SP_ASSIGN_OR_RETURN(std::optional<std::string> cref, doc.String(inputs, "cluster_ref"));
  SP_ASSIGN_OR_RETURN(std::optional<std::string> wref, doc.String(inputs, "workload_ref"));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> headroom, doc.Bytes(inputs, "headroom"));
  p.model_ref = mref.value_or("");
  p.cluster_ref = cref.value_or("");
  p.workload_ref = wref.value_or("");
  if (headroom) p.memory_options.headroom_bytes = *headroom;
  SP_ASSIGN_OR_RETURN(std::optional<std::string> model_name, doc.String(root["model"], "name"));
  SP_ASSIGN_OR_RETURN(p.model, ParseModelNode(doc, root["model"], model_name.value_or(p.model_ref)));
  if (model_hash && *model_hash != ModelHash(p.model))
    return doc.ErrorAt(inputs["model_hash"], "model_hash: the model section no longer matches the plan (" + ModelHash(p.model) +
                                                 " now); it was edited after `shardplan plan` chose this layout. Re-run "
                                                 "`shardplan plan`, or delete model_hash to keep the edit");
  SP_ASSIGN_OR_RETURN(p.cluster, ParseClusterNode(doc, root["cluster"]));
  SP_ASSIGN_OR_RETURN(p.workload, ParseWorkloadNode(doc, root["workload"]));
  p.workload.assumed.clear();  // notes on reading a trainer's file, said when the plan was made
  SP_ASSIGN_OR_RETURN(std::optional<std::string> layout_text, doc.String(root, "layout"));
  if (!layout_text) return doc.ErrorAt(root, "layout: missing; expected \"key=value,...\"");
  auto parsed = ParseLayout(*layout_text);
  if (!parsed.ok()) return doc.ErrorAt(root["layout"], parsed.status().message());
  Layout l = *parsed;
  l.fixed = ~0u;  // every key is given: resolve checks, it does not re-derive
  auto resolved = ResolveLayout(p.model, p.workload, p.cluster, l);
  if (!resolved.ok()) return doc.ErrorAt(root["layout"], resolved.status().message());
  p.layout = *resolved;
  SP_ASSIGN_OR_RETURN(std::optional<std::string> reason, doc.String(root, "reason"));
  p.reason = reason.value_or("");
  p.memory = EstimateMemory(p.model, p.workload, p.layout, p.cluster, p.memory_options);
  p.time = EstimateTime(p.model, p.workload, p.layout, p.cluster);
  return p;
}

StatusOr<Plan> LoadPlan(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Status::BadInput(path + ": is a directory; expected a plan.yaml");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::BadInput(path + ": cannot open the plan (does it exist?)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParsePlan(path, ss.str());
}

}  // namespace shardplan
