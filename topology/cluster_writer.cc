#include "topology/cluster_writer.h"

#include <strings.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "planner/units.h"
#include "topology/gpu_catalog.h"

namespace shardplan {
namespace {

constexpr size_t kCommentColumn = 44;

// `value` in `unit` (value / factor), with as few decimals as read back within 1e-15; the
// units parser multiplies by the same factor.
std::string Scaled(double value, double factor, const char* unit) {
  char buf[64];
  double x = value / factor;
  for (int decimals = 0; decimals <= 17; ++decimals) {
    std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
    double back = std::strtod(buf, nullptr) * factor;
    if (back == value || std::fabs(back - value) <= 1e-15 * std::fabs(value)) break;
    if (decimals == 17) std::snprintf(buf, sizeof buf, "%.17g", x);
  }
  return *unit ? std::string(buf) + " " + unit : std::string(buf);
}

// A string as a YAML scalar: plain when it is safe and cannot read as a number, bool or
// null; otherwise double-quoted with JSON escapes (valid YAML).
std::string YamlScalar(std::string_view s) {
  bool plain = !s.empty() && std::isalnum(static_cast<unsigned char>(s[0])) && s.back() != ' ';
  bool numeric = true;
  for (char c : s) {
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || std::strchr(" ._()/+-", c) != nullptr);
    numeric = numeric && std::strchr("0123456789.eE+-_", c) != nullptr;
  }
  static const char* kReserved[] = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"};
  for (const char* r : kReserved) plain = plain && strcasecmp(std::string(s).c_str(), r) != 0;
  if (plain && !numeric) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += c;
  }
  return out + "\"";
}

// `text`, padded, then "# comment".
std::string Commented(const std::string& text, const std::string& comment) {
  if (comment.empty()) return text + "\n";
  std::string line = text;
  line.append(line.size() < kCommentColumn ? kCommentColumn - line.size() : 1, ' ');
  return line + "# " + comment + "\n";
}

// Memory as nvidia-smi prints it: "81559 MiB".
std::string Mib(int64_t bytes) { return bytes % kMiB == 0 ? std::to_string(bytes / kMiB) + " MiB" : YamlBytes(bytes); }

// The fields of `g` that differ from `c`, by YAML key.
std::vector<std::string> Differences(const GpuSpec& g, const GpuSpec& c) {
  std::vector<std::string> d;
  if (g.display_name != c.display_name) d.push_back("display_name");
  if (g.memory_bytes != c.memory_bytes) d.push_back("memory");
  if (g.reserved_bytes != c.reserved_bytes) d.push_back("driver_reserved");
  if (g.bf16_flops != c.bf16_flops || g.fp16_flops != c.fp16_flops || g.fp8_flops != c.fp8_flops || g.fp4_flops != c.fp4_flops ||
      g.fp32_flops != c.fp32_flops)
    d.push_back("tflops");
  if (g.memory_bandwidth != c.memory_bandwidth) d.push_back("memory_bandwidth");
  if (g.nvlink_bandwidth != c.nvlink_bandwidth) d.push_back("nvlink_bandwidth");
  if (g.compute_capability != c.compute_capability) d.push_back("compute_capability");
  if (g.tdp_watts != c.tdp_watts) d.push_back("tdp");
  if (g.power_limit_watts != c.power_limit_watts) d.push_back("power_limit");
  if (g.nvlink_domain != c.nvlink_domain) d.push_back("nvlink_domain");
  if (g.nic_bandwidth != c.nic_bandwidth) d.push_back("nic_bandwidth");
  if (g.host_link_bandwidth != c.host_link_bandwidth) d.push_back("host_link_bandwidth");
  if (g.sms != c.sms) d.push_back("sms");
  if (g.vendor != c.vendor) d.push_back("vendor");
  return d;
}

std::string WriteGpu(const GpuSpec& g) {
  StatusOr<GpuSpec> catalog = CatalogGpu(g.name);
  std::vector<std::string> differ;
  if (catalog.ok()) {
    differ = Differences(g, *catalog);
    if (differ.empty())
      return Commented("gpu: " + YamlScalar(g.name), g.display_name + ": the catalog entry, " + Mib(g.memory_bytes));
  }
  std::string why = catalog.ok() ? "catalog " + g.name + " with this node's " + differ[0] +
                                       (differ.size() > 1 ? " and more" : "")
                                 : "not in the GPU catalog";
  std::string out = Commented("gpu:", why);
  out += "  name: " + YamlScalar(g.name) + "\n";
  out += "  display_name: " + YamlScalar(g.display_name) + "\n";
  if (g.vendor != "nvidia") out += "  vendor: " + g.vendor + "\n";
  out += Commented("  memory: " + YamlBytes(g.memory_bytes), "as the driver reports it");
  out += Commented("  driver_reserved: " + YamlBytes(g.reserved_bytes), "nvidia-smi -q Reserved: not allocatable");
  if (g.bf16_flops > 0 || g.fp16_flops > 0) {
    out += Commented("  bf16_tflops: " + ShortestDecimal(g.bf16_flops / 1e12), "dense, without 2:4 sparsity");
    out += "  fp16_tflops: " + ShortestDecimal(g.fp16_flops / 1e12) + "\n";
    out += "  fp8_tflops: " + ShortestDecimal(g.fp8_flops / 1e12) + "\n";
    if (g.fp4_flops > 0) out += "  fp4_tflops: " + ShortestDecimal(g.fp4_flops / 1e12) + "\n";
    out += Commented("  fp32_tflops: " + ShortestDecimal(g.fp32_flops / 1e12), "non-tensor");
  } else {
    out += "  # bf16_tflops, fp16_tflops, fp8_tflops, fp32_tflops: unknown; add the dense TFLOP/s before planning\n";
  }
  if (g.memory_bandwidth > 0) out += "  memory_bandwidth: " + YamlBandwidth(g.memory_bandwidth) + "\n";
  else out += "  # memory_bandwidth: unknown; the reader's default applies\n";
  out += Commented("  nvlink_bandwidth: " + YamlBandwidth(g.nvlink_bandwidth), "per GPU, one direction; 0 = none");
  if (g.compute_capability > 0) out += "  compute_capability: " + std::to_string(g.compute_capability) + "\n";
  else out += "  # compute_capability: unknown; the reader's default applies\n";
  if (g.tdp_watts > 0) out += "  tdp: " + ShortestDecimal(g.tdp_watts) + " W\n";
  if (g.power_limit_watts > 0) out += Commented("  power_limit: " + ShortestDecimal(g.power_limit_watts) + " W", "nvidia-smi -pl");
  if (g.nvlink_domain > 0) out += Commented("  nvlink_domain: " + std::to_string(g.nvlink_domain), "GPUs one NVLink fabric joins");
  if (g.nic_bandwidth > 0)
    out += Commented("  nic_bandwidth: " + YamlBitRate(g.nic_bandwidth), "network per GPU as the system ships");
  if (g.host_link_bandwidth > 0)
    out += Commented("  host_link_bandwidth: " + YamlBandwidth(g.host_link_bandwidth), "host link per GPU, one direction");
  if (g.sms > 0) out += Commented("  sms: " + std::to_string(g.sms), "streaming multiprocessors");
  return out;
}

std::string WriteLink(const char* key, const LinkSpec& l, bool inter, const std::string& meaning) {
  if (l.fabric.empty()) return std::string("# ") + key + ": unknown; the reader's default applies\n";
  bool none = l.fabric == "none";
  std::string text = std::string(key) + ": {fabric: " + YamlScalar(l.fabric);
  std::string comment = meaning;
  if (l.bandwidth > 0 || none) text += ", bandwidth: " + (inter ? YamlBitRate(l.bandwidth) : YamlBandwidth(l.bandwidth));
  else comment = "bandwidth unknown: the reader's default applies";
  if (inter && (l.nics_per_node > 0 || none)) text += ", nics_per_node: " + std::to_string(l.nics_per_node);
  if (!inter && l.domain > 0) text += ", domain: " + std::to_string(l.domain);
  if (l.latency_s > 0 || none) text += ", latency: " + YamlDuration(l.latency_s);
  return Commented(text + "}", comment);
}

}  // namespace

std::string ShortestDecimal(double v) { return Scaled(v, 1, ""); }

std::string YamlBytes(int64_t bytes) {
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"TiB", kTiB}, {"TB", 1000'000'000'000}, {"GiB", kGiB}, {"GB", 1000'000'000},
      {"MiB", kMiB}, {"MB", 1000'000},         {"KiB", kKiB}, {"kB", 1000}};
  const char* unit = "B";
  int64_t best = bytes;
  for (const auto& [name, size] : kUnits)
    if (bytes != 0 && bytes % size == 0 && bytes / size < best) best = bytes / size, unit = name;
  return std::to_string(best) + " " + unit;
}

std::string YamlBandwidth(double bps) {
  if (bps >= 1e12) return Scaled(bps, 1e12, "TB/s");
  if (bps >= 1e9 || bps == 0) return Scaled(bps, 1e9, "GB/s");
  return Scaled(bps, 1e6, "MB/s");
}

std::string YamlBitRate(double bps) { return Scaled(bps, 1e9 / 8, "Gb/s"); }

std::string YamlDuration(double s) {
  if (s == 0 || s < 1e-3) return Scaled(s, 1e-6, "us");
  if (s < 1) return Scaled(s, 1e-3, "ms");
  return Scaled(s, 1, "s");
}

std::string WriteClusterYaml(const ClusterSpec& c, const ClusterYamlOptions& options) {
  std::string out;
  for (const std::string& line : options.header) out += line.empty() ? "#\n" : "# " + line + "\n";
  out += "name: " + YamlScalar(c.name) + "\n";
  out += "nodes: " + std::to_string(c.nodes) + "\n";
  out += "gpus_per_node: " + std::to_string(c.gpus_per_node) + "\n";
  out += WriteGpu(c.gpu);
  out += WriteLink("intra_node", c.intra_node, false, "per GPU, one direction");
  out += WriteLink("inter_node", c.inter_node, true, "per NIC, one direction");
  std::vector<std::string> host;
  if (c.host_memory_bytes > 0) host.push_back("memory: " + YamlBytes(c.host_memory_bytes));
  if (c.pcie_bandwidth > 0) host.push_back("pcie_bandwidth: " + YamlBandwidth(c.pcie_bandwidth));
  if (host.empty()) {
    out += "# host: {memory, pcie_bandwidth} unknown; the reader's defaults apply\n";
  } else {
    std::string text = "host: {" + host[0] + (host.size() > 1 ? ", " + host[1] : "") + "}";
    out += Commented(text, std::string(c.host_memory_bytes > 0 ? "memory per node" : "memory unknown") +
                               (c.pcie_bandwidth > 0 ? "; PCIe per GPU, one direction" : "; PCIe: the reader's default"));
  }
  // A bandwidth without capacity is still what the file said (fuzzing found it dropped).
  if (c.nvme_bytes > 0 || c.nvme_bandwidth > 0) {
    std::string text = "nvme: {capacity: " + YamlBytes(c.nvme_bytes);
    if (c.nvme_bandwidth > 0) text += ", bandwidth: " + YamlBandwidth(c.nvme_bandwidth);
    out += Commented(text + "}", "per node");
  }
  if (!options.source.empty()) out += "source: " + YamlScalar(options.source) + "\n";
  return out;
}


}  // namespace shardplan
