#include "tests/fuzz/contracts.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>

#include "planner/io/document.h"
#include "planner/io/model_reader.h"
#include "planner/io/plan_file.h"
#include "planner/io/workload_reader.h"
#include "planner/layout.h"
#include "planner/oom_message.h"
#include "planner/strings.h"
#include "planner/units.h"
#include "topology/cluster_reader.h"
#include "topology/cluster_writer.h"
#include "topology/nvidia_smi.h"

namespace shardplan::fuzz {
namespace {

// Reads a decimal number at `s[*i]`, advancing past it; -1 when there is none.
long long NumberAt(const std::string& s, size_t* i) {
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data() + *i, s.data() + s.size(), v);
  if (ec != std::errc() || v < 0) return -1;
  *i = static_cast<size_t>(p - s.data());
  return v;
}

// Whether `message` is "name:LINE:COL: ..." (or "name:LINE: ..." when `need_col` is false)
// with LINE and COL inside `text` (one past its last line or column allowed: an error at
// the end of the input).
std::string Located(const std::string& message, const std::string& name, std::string_view text,
                    bool need_col = true) {
  const std::string why = "error not located inside the input: \"" + message + "\"";
  if (message.rfind(name + ":", 0) != 0) return why;
  size_t i = name.size() + 1;
  const long long line = NumberAt(message, &i);
  if (line < 1 || i >= message.size() || message[i] != ':') return why;
  const long long lines = std::count(text.begin(), text.end(), '\n') + 1;
  if (line > lines + 1) return why + " (line past the " + std::to_string(lines) + " lines)";
  if (!need_col) return "";
  ++i;
  const long long col = NumberAt(message, &i);
  if (col < 1 || i >= message.size() || message[i] != ':') return why;
  size_t longest = 0;
  for (const std::string& l : Split(text, '\n')) longest = std::max(longest, l.size());
  if (col > static_cast<long long>(longest) + 2) return why + " (column past the longest line)";
  return "";
}

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

// Equal within the rounding a quantity picks up on its way through a unit ("989.4 TFLOP/s").
bool Close(double a, double b) { return a == b || std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b)); }

bool SameGpu(const GpuSpec& a, const GpuSpec& b) {
  return a.name == b.name && a.display_name == b.display_name && a.memory_bytes == b.memory_bytes &&
         Close(a.bf16_flops, b.bf16_flops) && Close(a.fp16_flops, b.fp16_flops) && Close(a.fp8_flops, b.fp8_flops) &&
         Close(a.fp32_flops, b.fp32_flops) && Close(a.memory_bandwidth, b.memory_bandwidth) &&
         Close(a.tdp_watts, b.tdp_watts) && Close(a.power_limit_watts, b.power_limit_watts) &&
         Close(a.nvlink_bandwidth, b.nvlink_bandwidth) && a.compute_capability == b.compute_capability &&
         a.nvlink_domain == b.nvlink_domain && Close(a.nic_bandwidth, b.nic_bandwidth) && a.sms == b.sms &&
         Close(a.host_link_bandwidth, b.host_link_bandwidth) && a.reserved_bytes == b.reserved_bytes;
}

bool SameLink(const LinkSpec& a, const LinkSpec& b) {
  return a.fabric == b.fabric && Close(a.bandwidth, b.bandwidth) && Close(a.latency_s, b.latency_s) &&
         a.nics_per_node == b.nics_per_node;
}

// Every field a plan depends on; `assumed` only records how loose text was read.
bool SameCluster(const ClusterSpec& a, const ClusterSpec& b) {
  return a.name == b.name && a.nodes == b.nodes && a.gpus_per_node == b.gpus_per_node && SameGpu(a.gpu, b.gpu) &&
         SameLink(a.intra_node, b.intra_node) && SameLink(a.inter_node, b.inter_node) &&
         a.host_memory_bytes == b.host_memory_bytes && Close(a.pcie_bandwidth, b.pcie_bandwidth) &&
         a.nvme_bytes == b.nvme_bytes && Close(a.nvme_bandwidth, b.nvme_bandwidth);
}

// Parses `text` as a document named `name` and reads it with `read`; on success, writes the
// value with `write`, reads that back and compares with `same`.
template <typename T>
std::string RoundTrip(const std::string& name, std::string_view text,
                      const std::function<StatusOr<T>(const Document&)>& read,
                      const std::function<std::string(const T&)>& write,
                      const std::function<bool(const T&, const T&)>& same) {
  auto doc = Document::Parse(name, text);
  if (!doc.ok()) return Located(doc.status().message(), name, text);
  auto value = read(*doc);
  if (!value.ok()) return Located(value.status().message(), name, text);
  const std::string written = write(*value);
  auto doc2 = Document::Parse("written.yaml", written);
  if (!doc2.ok()) return "the writer's output does not parse: " + doc2.status().message() + "\n" + written;
  auto again = read(*doc2);
  if (!again.ok()) return "the writer's output does not read back: " + again.status().message() + "\n" + written;
  if (!same(*value, *again)) return "read back as a different value:\n" + written + "---\n" + write(*again);
  return "";
}

std::string CheckModel(std::string_view data) {
  // JSON by its first character, as a user's config.json; anything else as model YAML.
  const size_t first = data.find_first_not_of(" \t\r\n");
  const std::string name = first != std::string_view::npos && data[first] == '{' ? "config.json" : "model.yaml";
  return RoundTrip<ModelSpec>(
      name, data, [](const Document& d) { return ParseModel(d, "fuzz"); },
      [](const ModelSpec& m) { return ModelToYaml(m, 0); },
      [](const ModelSpec& a, const ModelSpec& b) { return a == b; });
}

std::string CheckCluster(std::string_view data) {
  return RoundTrip<ClusterSpec>(
      "cluster.yaml", data, [](const Document& d) { return ParseCluster(d); },
      [](const ClusterSpec& c) { return WriteClusterYaml(c); }, SameCluster);
}

std::string CheckWorkload(std::string_view data) {
  return RoundTrip<Workload>(
      "workload.yaml", data, [](const Document& d) { return ParseWorkload(d); },
      [](const Workload& w) { return WorkloadToYaml(w, 0); },
      [](Workload a, Workload b) {  // the notes on reading a trainer's file are not written back
        a.assumed.clear();
        b.assumed.clear();
        return a == b;
      });
}

std::string CheckPlan(std::string_view data) {
  auto plan = ParsePlan("plan.yaml", data);
  if (!plan.ok()) return Located(plan.status().message(), "plan.yaml", data);
  const std::string written = PlanToYaml(*plan);
  auto again = ParsePlan("written.yaml", written);
  if (!again.ok()) return "the written plan does not read back: " + again.status().message() + "\n" + written;
  const Plan& a = *plan;
  const Plan& b = *again;
  if (!(a.model == b.model) || !SameCluster(a.cluster, b.cluster) || !(a.workload == b.workload) ||
      !(a.layout == b.layout) || a.reason != b.reason || a.model_ref != b.model_ref || a.cluster_ref != b.cluster_ref ||
      a.workload_ref != b.workload_ref || a.memory_options.headroom_bytes != b.memory_options.headroom_bytes)
    return "the plan read back differs:\n" + written + "---\n" + PlanToYaml(b);
  return "";
}

// --layout is one line: an error names the key or quotes the text at fault.
std::string CheckLayout(std::string_view data) {
  auto layout = ParseLayout(data);
  if (!layout.ok()) {
    const std::string& msg = layout.status().message();
    if (msg.rfind("--layout", 0) != 0) return "error does not start with --layout: " + msg;
    // The text at fault may itself hold quotes: any quoted span of the message found in the
    // input will do.
    const std::string lower = Lower(data);
    for (const std::string open : {"got \"", "unknown key '", "(\""}) {
      for (size_t at = msg.find(open); at != std::string::npos; at = msg.find(open, at + 1)) {
        const size_t from = at + open.size();
        for (size_t to = msg.find(open.back(), from); to != std::string::npos; to = msg.find(open.back(), to + 1))
          if (to > from && lower.find(Lower(msg.substr(from, to - from))) != std::string::npos) return "";
      }
    }
    return "error names neither the key nor the text at fault: " + msg;
  }
  const std::string text = FormatLayout(*layout);
  auto again = ParseLayout(text);
  if (!again.ok()) return "FormatLayout's output does not parse: " + again.status().message() + "\n" + text;
  Layout a = *layout, b = *again;
  a.fixed = b.fixed = 0;  // FormatLayout writes every key; the value is what must match
  if (!(a == b)) return "layout read back differs: " + text + " vs " + FormatLayout(b);
  return "";
}

// The first byte picks the quantity; the rest is the text.
std::string CheckUnits(std::string_view data) {
  if (data.empty()) return "";
  const int kind = static_cast<unsigned char>(data[0]) % 6;
  const std::string_view text = data.substr(1);
  auto error = [&](const Status& s) {
    return s.message().find(Quoted(text)) == std::string::npos ? "error does not quote the input: " + s.message()
                                                               : std::string();
  };
  auto bad_value = [&](double v) {
    return std::isfinite(v) && v >= 0 ? std::string() : "parsed " + Quoted(text) + " to " + std::to_string(v);
  };
  switch (kind) {
    case 0: {
      auto b = ParseBytes(text);
      if (!b.ok()) return error(b.status());
      if (*b < 0) return "negative size from " + Quoted(text);
      auto back = ParseBytes(YamlBytes(*b));
      if (!back.ok() || *back != *b) return "bytes do not read back: " + YamlBytes(*b);
      return "";
    }
    case 1: {
      auto v = ParseBandwidth(text);
      if (!v.ok()) return error(v.status());
      if (auto bad = bad_value(*v); !bad.empty()) return bad;
      for (const std::string& w : {YamlBandwidth(*v), YamlBitRate(*v)}) {
        auto back = ParseBandwidth(w);
        if (!back.ok() || !Close(*back, *v)) return "bandwidth does not read back: " + w;
      }
      return "";
    }
    case 2: {
      auto v = ParseDuration(text);
      if (!v.ok()) return error(v.status());
      if (auto bad = bad_value(*v); !bad.empty()) return bad;
      auto back = ParseDuration(YamlDuration(*v));
      if (!back.ok() || !Close(*back, *v)) return "duration does not read back: " + YamlDuration(*v);
      return "";
    }
    case 3: {
      auto v = ParseTokenCount(text);
      if (!v.ok()) return error(v.status());
      return bad_value(*v);
    }
    case 4: {
      auto v = ParsePower(text);
      if (!v.ok()) return error(v.status());
      if (auto bad = bad_value(*v); !bad.empty()) return bad;
      auto back = ParsePower(ShortestNumber(*v) + " W");  // what the cluster writer and plan files write
      if (!back.ok() || !Close(*back, *v)) return "power does not read back: " + ShortestNumber(*v) + " W";
      return "";
    }
    default: {
      auto v = ParsePricePerHour(text);
      if (!v.ok()) return error(v.status());
      return bad_value(*v);
    }
  }
}

// nvidia-smi outputs are line-oriented: errors name source:line, or the whole text.
std::string LocatedLine(const std::string& message, const std::string& source, std::string_view text) {
  if (message.rfind(source + ": ", 0) == 0) return "";  // about the text as a whole
  return Located(message, source, text, /*need_col=*/false);
}

std::string CheckTopo(std::string_view data) {
  auto m = ParseTopoMatrix(data, "topo.txt");
  if (!m.ok()) return LocatedLine(m.status().message(), "topo.txt", data);
  if (m->gpus.empty()) return "a matrix with no GPUs";
  if (m->nic_devices.size() != m->nics.size()) return "NIC legend and NIC columns differ in number";
  for (size_t i = 0; i < m->gpus.size(); ++i) {
    const TopoGpu& g = m->gpus[i];
    if (g.to_gpu.size() != m->gpus.size()) return "GPU" + std::to_string(i) + " row is not square";
    if (g.to_nic.size() != m->nics.size()) return "GPU" + std::to_string(i) + " has the wrong number of NIC cells";
    for (const TopoLink& l : g.to_gpu)
      if (l.nvlinks < 0 || (l.kind != LinkKind::kNvLink && l.nvlinks != 0)) return "bad NVLink count";
  }
  return "";
}

std::string CheckQuery(std::string_view data) {
  auto gpus = ParseGpuQuery(data, "query.csv");
  if (!gpus.ok()) return LocatedLine(gpus.status().message(), "query.csv", data);
  if (gpus->empty()) return "no GPUs and no error";
  for (size_t i = 0; i < gpus->size(); ++i) {
    const QueryGpu& g = (*gpus)[i];
    if (i > 0 && (*gpus)[i - 1].index >= g.index) return "GPUs not sorted by a unique index";
    if (g.index < 0 || g.memory_bytes <= 0 || g.name.empty()) return "GPU " + std::to_string(g.index) + " read with impossible values";
  }
  return "";
}

std::string CheckOom(std::string_view data) {
  auto m = ParseOomMessage(data);
  if (!m.ok()) return m.status().message().empty() ? "an error with no message" : "";
  if (m->requested < 0 || m->total < 0 || m->free < 0 || m->allocated < 0 || m->reserved < m->allocated)
    return "impossible sizes from the message";
  const OomDiagnosis d = DiagnoseOom(*m);
  if (d.verdict.empty() || d.advice.empty()) return "a diagnosis with no verdict";
  return "";
}

const std::map<std::string, std::string (*)(std::string_view), std::less<>>& Table() {
  static const std::map<std::string, std::string (*)(std::string_view), std::less<>> t = {
      {"model", CheckModel}, {"cluster", CheckCluster}, {"workload", CheckWorkload},
      {"plan", CheckPlan},   {"layout", CheckLayout},   {"units", CheckUnits},
      {"topo", CheckTopo},   {"query", CheckQuery},     {"oom", CheckOom}};
  return t;
}

}  // namespace

const std::vector<std::string>& Targets() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [name, check] : Table()) v.push_back(name);
    return v;
  }();
  return names;
}

std::string Check(std::string_view target, std::string_view data) {
  auto it = Table().find(target);
  if (it == Table().end()) return "no fuzz target named " + std::string(target);
  return it->second(data);
}

}  // namespace shardplan::fuzz
