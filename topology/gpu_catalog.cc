#include "topology/gpu_catalog.h"

#include <algorithm>
#include <cctype>

#include "configs/builtin.h"
#include "planner/strings.h"

namespace shardplan {
namespace {

StatusOr<Document> CatalogDocument() {
  // Parsed once: every cluster file and GPU name looks the catalog up, some several times.
  static const StatusOr<Document> catalog = []() -> StatusOr<Document> {
    for (const BuiltinFile& b : BuiltinFiles())
      if (b.path == "gpus.yaml") return Document::Parse("builtin:gpus.yaml", b.content);
    return Status::Internal("the built-in GPU catalog (configs/gpus.yaml) is missing from this build");
  }();
  return catalog;
}

// A name's parts, lowercase: split at anything but letters and digits, "rtx4090" split
// before its number, SXM generations and vendor words dropped ("sxm4" is "sxm"), and the
// system words performance tables put around the GPU (DGX-GB200, HGX H100, GB300 NVL72:
// "dgx", "hgx", "nvl" with a rack size; "H100 NVL", a card, keeps its "nvl").
std::vector<std::string> NameTokens(std::string_view name) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    if (cur.rfind("sxm", 0) == 0) cur = "sxm";
    // A memory size written "80G" (Qwen's and LLaMA-Factory's "A100-SXM4-80G", "A800-80G") or
    // "80GiB" is the "80GB" of the catalog's names.
    const size_t digits = cur.find_first_not_of("0123456789");
    if (digits > 0 && digits != std::string::npos && (cur.substr(digits) == "g" || cur.substr(digits) == "gib"))
      cur = cur.substr(0, digits) + "gb";
    for (const char* prefix : {"rtx", "gtx"})
      if (cur.rfind(prefix, 0) == 0 && cur.size() > 3 && std::isdigit(static_cast<unsigned char>(cur[3]))) {
        out.emplace_back(prefix);
        cur = cur.substr(3);
      }
    const bool rack = cur.size() > 3 && cur.rfind("nvl", 0) == 0 &&
                      std::all_of(cur.begin() + 3, cur.end(), [](unsigned char ch) { return std::isdigit(ch); });
    if (cur != "nvidia" && cur != "tesla" && cur != "geforce" && cur != "dgx" && cur != "hgx" && !rack &&
        cur.rfind("hbm", 0) != 0)
      out.push_back(cur);
    cur.clear();
  };
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else flush();
  }
  flush();
  return out;
}

}  // namespace

StatusOr<std::string> ResolveTokens(const Document& doc, const std::string& name, const std::vector<std::string>& want,
                                    std::string* note, bool largest = false, std::vector<std::string>* larger = nullptr);

StatusOr<std::string> ResolveGpuName(const std::string& name, std::string* note, int64_t* memory_bytes,
                                     std::vector<std::string>* larger) {
  SP_ASSIGN_OR_RETURN(Document doc, CatalogDocument());
  const YAML::Node gpus = doc.root()["gpus"];
  if (gpus[name].IsDefined()) return name;
  StatusOr<std::string> key = ResolveTokens(doc, name, NameTokens(name), note, false, larger);
  if (key.ok() || memory_bytes == nullptr) return key;
  // A size the catalog lacks ("H100 96GB", "H100 94GB NVL"): the family's figures with the
  // memory the name states, read as GiB the way the driver reports an "80GB" A100.
  std::vector<std::string> rest;
  int64_t gb = 0;
  for (const std::string& t : NameTokens(name)) {
    if (t.size() > 2 && t.compare(t.size() - 2, 2, "gb") == 0 &&
        std::all_of(t.begin(), t.end() - 2, [](unsigned char ch) { return std::isdigit(ch); }))
      // More than 7 digits is past any card (fuzzing found a 120-digit size that made
      // std::stoll throw); it stays unresolved like any other unknown name.
      gb = t.size() - 2 > 7 ? -1 : std::stoll(t.substr(0, t.size() - 2));
    else
      rest.push_back(t);
  }
  if (gb <= 0 || gb > (1 << 20) || rest.empty()) return key;
  std::string family_note;
  StatusOr<std::string> family = ResolveTokens(doc, name, rest, &family_note, /*largest=*/true);
  if (!family.ok()) return key;
  *memory_bytes = gb << 30;
  if (note)
    *note = "gpu: '" + name + "' read as " + *family + " with " + std::to_string(gb) +
            " GiB (the catalog has no such size; give a mapping with `memory:` to set it exactly)";
  return family;
}

StatusOr<std::string> ResolveTokens(const Document& doc, const std::string& name, const std::vector<std::string>& want,
                                    std::string* note, bool largest, std::vector<std::string>* larger) {
  const YAML::Node gpus = doc.root()["gpus"];
  if (want.empty()) return Status::BadInput("empty GPU name");
  struct Match {
    std::string key;
    int64_t memory;
  };
  // The name nvidia-smi prints names one entry exactly, as do the other names it prints for
  // the same part (also_named: a GH200 host with 120 GB of LPDDR5X says "GH200 120GB").
  for (const auto& kv : gpus) {
    std::vector<std::string> printed;
    if (const YAML::Node display = kv.second["display_name"]; display.IsDefined() && display.IsScalar())
      printed.push_back(display.Scalar());
    if (const YAML::Node also = kv.second["also_named"]; also.IsDefined() && also.IsSequence())
      for (const YAML::Node& n : also)
        if (n.IsScalar()) printed.push_back(n.Scalar());
    for (const std::string& p : printed)
      if (NameTokens(p) == want) {
        if (note) *note = "gpu: '" + name + "' is the catalog's " + kv.first.Scalar();
        return kv.first.Scalar();
      }
  }
  std::vector<Match> matches;
  for (const auto& kv : gpus) {
    const std::string key = kv.first.Scalar();
    std::vector<std::string> have = NameTokens(key);
    const YAML::Node display = kv.second["display_name"];
    if (display.IsScalar())
      for (std::string& t : NameTokens(display.Scalar())) have.push_back(std::move(t));
    bool all = true;
    for (const std::string& t : want) all = all && std::find(have.begin(), have.end(), t) != have.end();
    // "Ti", "SUPER" and "D" name another card, not a form of the same one: "RTX 3090" is not
    // the 3090 Ti, nor "RTX 4090" the 4090 D, so an entry carrying a variant word the name
    // lacks does not match it.
    for (const char* variant : {"ti", "super", "d"})
      all = all && (std::find(have.begin(), have.end(), variant) == have.end() ||
                    std::find(want.begin(), want.end(), variant) != want.end());
    if (!all) continue;
    auto g = ParseGpu(doc, kv.second, key, false);
    matches.push_back({key, g.ok() ? g->memory_bytes : 0});
  }
  if (matches.size() == 1) {
    if (note) *note = "gpu: '" + name + "' is the catalog's " + matches[0].key;
    return matches[0].key;
  }
  if (matches.size() > 1) {
    std::vector<std::string> keys;
    bool one_size = true;
    for (const Match& m : matches) {
      keys.push_back(m.key);
      one_size = one_size && m.memory == matches[0].memory;
    }
    std::vector<std::string> sxm;
    for (const std::string& k : keys)
      if (k.find("-sxm-") != std::string::npos) sxm.push_back(k);
    // One SXM part among the matches ("H100": SXM, PCIe and the 94 GB NVL) is the training
    // card the name usually means; the note says which was taken and how to name the others.
    if (sxm.size() == 1) {
      if (note) *note = "gpu: '" + name + "' read as " + sxm[0] + " (the SXM part; name " + Join(keys, " or ") + " to choose)";
      return sxm[0];
    }
    if (largest) {  // the memory is set by the caller: any size of the family has its figures
      const Match* best = &matches[0];
      for (const Match& m : matches)
        if (m.memory > best->memory) best = &m;
      return best->key;
    }
    // One part made in several memory sizes ("A100": 40 and 80 GB; "V100": 16 and 32;
    // "GH200": 96 and 144), every match keyed by the same part: the smallest, the SXM form
    // among equals. What fits there fits on the larger sizes, so a fit is never called on a
    // card too small; `larger` lists them, and estimate says when one would fit.
    const std::string part = keys[0].substr(0, keys[0].find('-'));
    bool one_part = true;
    for (const std::string& k : keys) one_part = one_part && k.substr(0, k.find('-')) == part;
    if (one_part && !one_size) {
      const Match* best = nullptr;
      for (const Match& m : matches) {
        const bool sxm_part = m.key.find("-sxm-") != std::string::npos;
        if (!best || m.memory < best->memory || (m.memory == best->memory && sxm_part)) best = &m;
      }
      if (larger)
        for (const Match& m : matches)
          if (m.memory > best->memory) larger->push_back(m.key);
      if (note)
        *note = "gpu: '" + name + "' read as " + best->key + ", the smallest of " + Join(keys, ", ") +
                " (what fits there fits on the others; name yours to check it)";
      return best->key;
    }
    return Status::BadInput("GPU '" + name + "' matches " + Join(keys, " and ") + "; name one (they differ in " +
                            (one_size ? "form factor" : "memory") + ")");
  }
  std::vector<std::string> names = CatalogGpuNames();
  std::string hint = Suggest(name, names);
  return Status::BadInput("unknown GPU '" + name + "'" + (hint.empty() ? "" : ", did you mean '" + hint + "'?") +
                          " (catalog: " + Join(names) + "; or give a mapping with its memory)");
}

int64_t DefaultDriverReserve(int64_t memory_bytes) {
  // The catalog's measured reserves run from 0.25 GiB (T4, V100) to 0.85 GiB (A100 80GB);
  // half a GiB stands in for a card nobody measured, never more than 1/16 of a small one.
  return std::min<int64_t>(int64_t{1} << 29, memory_bytes / 16);
}

StatusOr<GpuSpec> ParseGpu(const Document& doc, const YAML::Node& node, const std::string& name, bool inline_spec) {
  SP_RETURN_IF_ERROR(doc.ExpectMap(node, "gpu"));
  std::vector<std::string> keys = {"display_name", "memory", "bf16_tflops", "fp16_tflops", "fp8_tflops", "fp4_tflops",
                                   "fp32_tflops", "memory_bandwidth", "nvlink_bandwidth", "compute_capability",
                                   "tdp", "power_limit", "nvlink_domain", "nic_bandwidth", "host_link_bandwidth", "sms", "driver_reserved",
                                   "also_named", "source", "vendor"};
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
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> reserved, doc.Bytes(node, "driver_reserved"));
  if (reserved && (*reserved < 0 || *reserved >= g.memory_bytes))
    return doc.ErrorAt(node["driver_reserved"], "driver_reserved: expected a size from 0 to below the GPU's memory");
  g.reserved_bytes = reserved ? *reserved : DefaultDriverReserve(g.memory_bytes);
  SP_ASSIGN_OR_RETURN(std::optional<double> bf16, doc.Number(node, "bf16_tflops", 0, 1e6));
  SP_ASSIGN_OR_RETURN(std::optional<double> fp16, doc.Number(node, "fp16_tflops", 0, 1e6));
  SP_ASSIGN_OR_RETURN(std::optional<double> fp8, doc.Number(node, "fp8_tflops", 0, 1e6));
  SP_ASSIGN_OR_RETURN(std::optional<double> fp4, doc.Number(node, "fp4_tflops", 0, 1e6));
  SP_ASSIGN_OR_RETURN(std::optional<double> fp32, doc.Number(node, "fp32_tflops", 0, 1e6));
  // A catalog entry must state its peak; a user's own GPU may give its memory alone, which
  // answers the memory question and leaves the time unknown (no peak, no step time).
  if (!bf16 && !fp16 && !inline_spec) return doc.ErrorAt(node, "gpu: needs bf16_tflops or fp16_tflops (dense TFLOP/s)");
  g.bf16_flops = bf16.value_or(0) * 1e12;
  g.fp16_flops = fp16.value_or(bf16.value_or(0)) * 1e12;
  g.fp8_flops = fp8.value_or(0) * 1e12;
  g.fp4_flops = fp4.value_or(0) * 1e12;
  g.fp32_flops = fp32.value_or(g.fp16_flops / 1e12 / 8) * 1e12;  // rough when not given
  const bool compute_known = bf16 || fp16;
  SP_ASSIGN_OR_RETURN(std::optional<double> mbw, doc.Bandwidth(node, "memory_bandwidth"));
  SP_ASSIGN_OR_RETURN(std::optional<double> nvl, doc.Bandwidth(node, "nvlink_bandwidth"));
  g.memory_bandwidth = mbw.value_or(compute_known ? 1e12 : 0);
  g.nvlink_bandwidth = nvl.value_or(0);
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> cc, doc.Int(node, "compute_capability", 10, 200));
  g.compute_capability = static_cast<int>(cc.value_or(80));
  // Board power: the TDP the datasheet peaks hold at, and the limit the cards run under
  // when it is lower (torchtitan's H100s run at 500 W of 700). The time model slows the
  // tensor cores by the clock that power allows (compute_cost.cc).
  // The cluster reader checks the limit against the TDP once the GPU is resolved.
  auto watts = [&](const char* key) -> StatusOr<double> {
    SP_ASSIGN_OR_RETURN(std::optional<double> w, doc.Power(node, key));
    if (w && (*w < 1 || *w > 1e5))
      return doc.ErrorAt(node[key], std::string(key) + ": expected a board power from 1 W to 100 kW");
    return w.value_or(0);
  };
  SP_ASSIGN_OR_RETURN(g.tdp_watts, watts("tdp"));
  SP_ASSIGN_OR_RETURN(g.power_limit_watts, watts("power_limit"));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> domain, doc.Int(node, "nvlink_domain", 1, 1 << 20));
  g.nvlink_domain = static_cast<int>(domain.value_or(0));
  SP_ASSIGN_OR_RETURN(std::optional<double> nic, doc.Bandwidth(node, "nic_bandwidth"));
  g.nic_bandwidth = nic.value_or(0);
  SP_ASSIGN_OR_RETURN(std::optional<double> host_link, doc.Bandwidth(node, "host_link_bandwidth"));
  g.host_link_bandwidth = host_link.value_or(0);
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> sms, doc.Int(node, "sms", 1, 1 << 20));
  g.sms = static_cast<int>(sms.value_or(0));
  SP_ASSIGN_OR_RETURN(std::optional<std::string> vendor, doc.String(node, "vendor"));
  g.vendor = vendor.value_or("nvidia");
  if (g.vendor == "amd" && !cc) g.compute_capability = 0;  // no CUDA compute capability
  if (g.vendor != "nvidia" && g.vendor != "amd")
    return doc.ErrorAt(node["vendor"], "vendor: expected nvidia or amd, got \"" + g.vendor + "\"");
  return g;
}

StatusOr<GpuSpec> CatalogGpu(const std::string& name) {
  SP_ASSIGN_OR_RETURN(Document doc, CatalogDocument());
  YAML::Node gpus = doc.root()["gpus"];
  SP_RETURN_IF_ERROR(doc.ExpectMap(gpus, "gpus"));
  SP_ASSIGN_OR_RETURN(std::string key, ResolveGpuName(name, nullptr));
  return ParseGpu(doc, gpus[key], key, false);
}

std::vector<std::string> CatalogGpuNames() {
  std::vector<std::string> names;
  auto doc = CatalogDocument();
  if (!doc.ok()) return names;
  for (const auto& kv : doc->root()["gpus"]) names.push_back(kv.first.Scalar());
  return names;
}

}  // namespace shardplan
