#include "topology/gpu_catalog.h"

#include "configs/builtin.h"
#include "planner/strings.h"

namespace shardplan {
namespace {

StatusOr<Document> CatalogDocument() {
  for (const BuiltinFile& b : BuiltinFiles())
    if (b.path == "gpus.yaml") return Document::Parse("builtin:gpus.yaml", b.content);
  return Status::Internal("the built-in GPU catalog (configs/gpus.yaml) is missing from this build");
}

}  // namespace

StatusOr<GpuSpec> ParseGpu(const Document& doc, const YAML::Node& node, const std::string& name, bool inline_spec) {
  SP_RETURN_IF_ERROR(doc.ExpectMap(node, "gpu"));
  std::vector<std::string> keys = {"display_name", "memory", "bf16_tflops", "fp16_tflops", "fp8_tflops",
                                   "fp32_tflops", "memory_bandwidth", "nvlink_bandwidth", "compute_capability",
                                   "source"};
  if (inline_spec) keys.push_back("name");
  SP_RETURN_IF_ERROR(doc.CheckKeys(node, keys));
  GpuSpec g;
  g.name = name;
  SP_ASSIGN_OR_RETURN(std::optional<std::string> display, doc.String(node, "display_name"));
  SP_ASSIGN_OR_RETURN(std::optional<std::string> inline_name, doc.String(node, "name"));
  g.display_name = display ? *display : inline_name.value_or(name);
  if (inline_name) g.name = *inline_name;
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> mem, doc.Bytes(node, "memory"));
  if (!mem || *mem <= 0) return doc.ErrorAt(node, "gpu: needs a positive memory size such as \"80 GiB\"");
  g.memory_bytes = *mem;
  SP_ASSIGN_OR_RETURN(std::optional<double> bf16, doc.Number(node, "bf16_tflops", 0, 1e6));
  SP_ASSIGN_OR_RETURN(std::optional<double> fp16, doc.Number(node, "fp16_tflops", 0, 1e6));
  SP_ASSIGN_OR_RETURN(std::optional<double> fp8, doc.Number(node, "fp8_tflops", 0, 1e6));
  SP_ASSIGN_OR_RETURN(std::optional<double> fp32, doc.Number(node, "fp32_tflops", 0, 1e6));
  // A catalog entry must state its peak; a user's own GPU may give its memory alone, which
  // answers the memory question and leaves the time unknown (no peak, no step time).
  if (!bf16 && !fp16 && !inline_spec) return doc.ErrorAt(node, "gpu: needs bf16_tflops or fp16_tflops (dense TFLOP/s)");
  g.bf16_flops = bf16.value_or(0) * 1e12;
  g.fp16_flops = fp16.value_or(bf16.value_or(0)) * 1e12;
  g.fp8_flops = fp8.value_or(0) * 1e12;
  g.fp32_flops = fp32.value_or(g.fp16_flops / 1e12 / 8) * 1e12;  // rough when not given
  const bool compute_known = bf16 || fp16;
  SP_ASSIGN_OR_RETURN(std::optional<double> mbw, doc.Bandwidth(node, "memory_bandwidth"));
  SP_ASSIGN_OR_RETURN(std::optional<double> nvl, doc.Bandwidth(node, "nvlink_bandwidth"));
  g.memory_bandwidth = mbw.value_or(compute_known ? 1e12 : 0);
  g.nvlink_bandwidth = nvl.value_or(0);
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> cc, doc.Int(node, "compute_capability", 10, 200));
  g.compute_capability = static_cast<int>(cc.value_or(80));
  return g;
}

StatusOr<GpuSpec> CatalogGpu(const std::string& name) {
  SP_ASSIGN_OR_RETURN(Document doc, CatalogDocument());
  YAML::Node gpus = doc.root()["gpus"];
  SP_RETURN_IF_ERROR(doc.ExpectMap(gpus, "gpus"));
  YAML::Node entry = gpus[name];
  if (!entry.IsDefined()) {
    std::vector<std::string> names = CatalogGpuNames();
    std::string hint = Suggest(name, names);
    return Status::BadInput("unknown GPU '" + name + "'" + (hint.empty() ? "" : ", did you mean '" + hint + "'?") +
                            " (catalog: " + Join(names) + ")");
  }
  return ParseGpu(doc, entry, name, false);
}

std::vector<std::string> CatalogGpuNames() {
  std::vector<std::string> names;
  auto doc = CatalogDocument();
  if (!doc.ok()) return names;
  for (const auto& kv : doc->root()["gpus"]) names.push_back(kv.first.Scalar());
  return names;
}

}  // namespace shardplan
