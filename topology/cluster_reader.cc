#include "topology/cluster_reader.h"

#include <cctype>
#include <filesystem>
#include <optional>
#include <cstdio>
#include <string_view>
#include <utility>

#include "planner/strings.h"
#include "planner/units.h"
#include "topology/gpu_catalog.h"

namespace shardplan {
namespace {

Status ReadLink(const Document& doc, const YAML::Node& node, const char* what, bool inter, LinkSpec& link) {
  if (!node.IsDefined()) return Status::Ok();
  SP_RETURN_IF_ERROR(doc.ExpectMap(node, what));
  std::vector<std::string> keys = {"fabric", "bandwidth", "latency"};
  keys.push_back(inter ? "nics_per_node" : "domain");
  SP_RETURN_IF_ERROR(doc.CheckKeys(node, keys));
  SP_ASSIGN_OR_RETURN(std::optional<std::string> fabric, doc.String(node, "fabric"));
  SP_ASSIGN_OR_RETURN(std::optional<double> bw, doc.Bandwidth(node, "bandwidth"));
  SP_ASSIGN_OR_RETURN(std::optional<double> lat, doc.Duration(node, "latency"));
  // As many NICs as gpus_per_node allows GPUs: the default is one per GPU, so a 72-GPU
  // NVL72 rack read as one node writes 72 back (fuzzing found 91 refused at 64).
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> nics, doc.Int(node, "nics_per_node", 0, 1024));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> domain, doc.Int(node, "domain", 1, 1 << 20));
  if (domain) link.domain = static_cast<int>(*domain);
  if (fabric && fabric->empty())  // `fabric: !tag` or `fabric: ""`: no name to plan with
    return doc.ErrorAt(node["fabric"], std::string(what) + ".fabric: expected a name such as nvlink, infiniband or roce");
  if (fabric) link.fabric = *fabric;
  // The planner and the writers read a zero latency or bandwidth as "not given", so a stated
  // 0 on a real link would plan with the default the file never said (fuzzing found
  // `latency: 0 us` on NVLink read back as 2 us, `bandwidth: 00 GB/s` on PCIe as 25 GB/s).
  auto positive = [&](const std::optional<double>& v, const char* key, const std::string& expected) -> Status {
    if (v && *v <= 0 && link.fabric != "none")
      return doc.ErrorAt(node[key], std::string(what) + "." + key + ": expected " + expected);
    return Status::Ok();
  };
  SP_RETURN_IF_ERROR(positive(lat, "latency", "a time above 0 such as 2 us; leave the key out for the default"));
  SP_RETURN_IF_ERROR(positive(bw, "bandwidth", "a rate above 0 such as 450 GB/s; say fabric: none for no link"));
  if (bw) link.bandwidth = *bw;
  if (lat) link.latency_s = *lat;
  if (nics) link.nics_per_node = static_cast<int>(*nics);
  // Zero NICs is a node with no network: only `fabric: none` says that (fuzzing found a
  // 1600 Gb/s link on 0 NICs, which the planner read as one NIC and the writer dropped).
  if (nics && *nics == 0 && link.fabric != "none")
    return doc.ErrorAt(node["nics_per_node"], std::string(what) + ".nics_per_node: 0 means no network; give the NIC count, "
                                                                  "or say fabric: none");
  return Status::Ok();
}

}  // namespace

StatusOr<ClusterSpec> ParseCluster(const Document& doc) { return ParseClusterNode(doc, doc.root()); }

StatusOr<ClusterSpec> ParseClusterUnguarded(const Document& doc, const YAML::Node& root);

StatusOr<ClusterSpec> ParseClusterNode(const Document& doc, const YAML::Node& root) {
  return Guarded(doc, [&] { return ParseClusterUnguarded(doc, root); });
}

// The names launchers and job specs give the same settings (torchrun's nnodes and
// nproc_per_node, num_nodes, a GPU's type).
static const Document::Synonyms kClusterSynonyms = {
    {"num_nodes", "nodes"}, {"nnodes", "nodes"},        {"num_gpus_per_node", "gpus_per_node"},
    {"nproc_per_node", "gpus_per_node"}, {"gpu_type", "gpu"}, {"gpu_name", "gpu"},
    {"num_gpus", "gpus"}, {"total_gpus", "gpus"}, {"world_size", "gpus"},
    {"network", "inter_node"},
    // A node's host memory as specs and job descriptions name it.
    {"cpu_memory", "host_memory"}, {"ram", "host_memory"}, {"host_ram", "host_memory"}, {"cpu_ram", "host_memory"},
    {"system_memory", "host_memory"}, {"memory_per_node", "host_memory"}};

// The per-port rate an InfiniBand generation names (NVIDIA's NDR, HDR, ... as cluster
// descriptions write the fabric: "InfiniBand NDR", "HDR 200"), with the split-port forms
// (NDR200, HDR100): 0 when the text names none.
static double InfinibandGenerationBandwidth(std::string_view text) {
  const std::string t = Lower(text);
  static const std::pair<const char*, double> kGenerations[] = {
      {"xdr", 800}, {"ndr200", 200}, {"ndr", 400}, {"hdr100", 100}, {"hdr", 200}, {"edr", 100}, {"fdr", 56}};
  size_t i = 0;
  while (i < t.size()) {  // whole alphanumeric words only
    size_t j = i;
    while (j < t.size() && std::isalnum(static_cast<unsigned char>(t[j]))) ++j;
    const std::string word = t.substr(i, j - i);
    for (const auto& [name, gbps] : kGenerations)
      if (word == name) return gbps * 1e9 / 8;
    i = j + 1;
  }
  return 0;
}

// Whether words name a link inside a node (NVLink, NVSwitch, PCIe, AMD's xGMI / Infinity
// Fabric), as "interconnect: NVLink" means, rather than the network between nodes.
static bool NamesIntraNodeFabric(std::string_view text) {
  const std::string t = Lower(text);
  for (const char* w : {"nvl", "nvswitch", "pcie", "pci-e", "xgmi", "infinity fabric"})  // nvl: NVLink too
    if (t.find(w) != std::string::npos) return true;
  return false;
}

// One direction of an x16 link of the PCIe generation words name ("PCIe 4.0", "Gen5", "gen 3"):
// 16, 32, 64 or 128 GB/s for Gen3..Gen6; 0 when they name none.
static double PcieGenerationBandwidth(std::string_view text) {
  const std::string t = Lower(text);
  if (t.find("pci") == std::string::npos && t.find("gen") == std::string::npos) return 0;  // a rate, not a generation
  auto digit = [&](size_t i) { return i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])); };
  for (const char gen : {'3', '4', '5', '6'}) {
    for (const std::string lead : {"gen", "gen ", "pcie", "pcie ", "pcie-", "pci-e "}) {
      const std::string w = lead + gen;
      for (size_t i = t.find(w); i != std::string::npos; i = t.find(w, i + 1))
        if (!digit(i + w.size()) && !(t.size() > i + w.size() + 1 && t[i + w.size()] == '.' && t[i + w.size() + 1] != '0'))
          return PcieX16Bandwidth(gen - '0');  // "gen5", "PCIe 4.0", not "gen53" or "pcie 4.5"
    }
  }
  return 0;
}

// An intra-node link in words: "NVLink", "NVSwitch", "PCIe", "PCIe 4.0" / "Gen5" (x16, one
// direction: 16, 32, 64 GB/s), "xGMI", or a bare rate ("450 GB/s") on the shipped fabric.
static Status ReadIntraNodeWords(const Document& doc, const YAML::Node& root, const char* what, const GpuSpec& gpu,
                                 LinkSpec& link, std::vector<std::string>& assumed) {
  const YAML::Node node = root[what];
  const std::string t = Lower(node.Scalar());
  if (t.find("nvl") != std::string::npos || t.find("nvswitch") != std::string::npos) {  // NVLink, NVL72, NVSwitch
    if (gpu.nvlink_bandwidth <= 0)
      return doc.ErrorAt(node, std::string(what) + ": " + gpu.name + " has no NVLink; expected PCIe, or a mapping with "
                                                   "the link's bandwidth");
    link = {"nvlink", gpu.nvlink_bandwidth, 2e-6, 0, link.domain};
    return Status::Ok();
  }
  if (t.find("xgmi") != std::string::npos || t.find("infinity fabric") != std::string::npos) {
    link = ShippedIntraNodeLink(gpu);  // AMD's GPU links, at the catalog GPU's rate
    link.fabric = "xgmi";
    return Status::Ok();
  }
  if (t.find("pci") != std::string::npos) {
    const double gen = PcieGenerationBandwidth(t);
    const double bw = gen > 0 ? gen : ShippedPcieBandwidth(gpu);
    link = {"pcie", bw, 5e-6, 0, 0};
    assumed.push_back(std::string(what) + ": \"" + node.Scalar() + "\" read as PCIe at " + ShortestNumber(bw / 1e9) +
                      " GB/s per GPU each way (x16)");
    return Status::Ok();
  }
  auto bw = doc.Bandwidth(root, what);  // a bare rate, on the fabric the GPU ships with
  if (bw.ok() && *bw && **bw > 0) {
    link = ShippedIntraNodeLink(gpu);
    link.bandwidth = **bw;
    return Status::Ok();
  }
  return doc.ErrorAt(node, std::string(what) + ": expected NVLink, NVSwitch, PCIe (with its generation, PCIe 4.0), a "
                                               "rate, or a mapping {fabric: ..., bandwidth: ...}, got \"" + node.Scalar() + "\"");
}

// A count written before what it counts, as specs write "8x H100", "8 x 400G" or "8×NDR" (up to
// `max_digits` digits): the count, with `text` moved past it; nullopt, `text` untouched, when
// there is none.
static std::optional<int64_t> TakeCount(std::string_view& text, size_t max_digits) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  size_t j = i;
  while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
  size_t k = j;
  while (k < text.size() && std::isspace(static_cast<unsigned char>(text[k]))) ++k;
  if (j == i || j - i > max_digits || k >= text.size()) return std::nullopt;
  const size_t sign = text[k] == 'x' || text[k] == 'X' ? 1 : text.substr(k, 2) == "\xc3\x97" ? 2 : 0;
  if (sign == 0) return std::nullopt;
  const int64_t count = std::stoll(std::string(text.substr(i, j - i)));
  text.remove_prefix(k + sign);
  return count;
}

// A network in the words cluster descriptions use: "8x400G IB", "4 x NDR", "RoCE 200G",
// "3.2 Tbps", "100GbE", "EFA". Sets the fabric, the NICs (a count before the rate) and the
// per-NIC rate; `total` is set when the rate can only be the node's (no NIC count given and
// above the fastest NIC). Port speeds are bits: "400G" is 400 Gb/s; "GB/s" with a capital B
// stays bytes. Returns false when the words name no rate and no generation.
struct NetworkWords {
  std::string fabric;
  int nics = 0;       // stated count, 0 = not stated
  double rate = 0;    // bytes/s per NIC (or in all, see above)
};
static bool ParseNetworkWords(std::string_view text, NetworkWords& out) {
  const std::string t = Lower(text);
  auto has_word = [&](const char* w) {
    const size_t n = std::string_view(w).size();
    for (size_t i = t.find(w); i != std::string::npos; i = t.find(w, i + 1)) {
      const bool start = i == 0 || !std::isalpha(static_cast<unsigned char>(t[i - 1]));
      const bool end = i + n >= t.size() || !std::isalpha(static_cast<unsigned char>(t[i + n]));
      if (start && end) return true;
    }
    return false;
  };
  if (has_word("ib") || has_word("infiniband") || InfinibandGenerationBandwidth(text) > 0) out.fabric = "infiniband";
  else if (has_word("roce") || has_word("rocev2") || has_word("ethernet") || t.find("gbe") != std::string::npos)
    out.fabric = "ethernet";
  else if (has_word("efa")) out.fabric = "efa";
  else if (has_word("slingshot")) out.fabric = "slingshot";
  // A count: "8x", "8 x", "8×" before the rate.
  std::string_view tail = text;
  if (const std::optional<int64_t> n = TakeCount(tail, 4)) out.nics = static_cast<int>(*n);
  // The first number after that, and its unit.
  size_t a = 0;
  while (a < tail.size() && !std::isdigit(static_cast<unsigned char>(tail[a]))) ++a;
  if (a < tail.size()) {
    size_t b = a;
    while (b < tail.size() && (std::isdigit(static_cast<unsigned char>(tail[b])) || tail[b] == '.')) ++b;
    size_t u = b;
    while (u < tail.size() && tail[u] == ' ') ++u;
    size_t e = u;
    while (e < tail.size() && (std::isalpha(static_cast<unsigned char>(tail[e])) || tail[e] == '/')) ++e;
    const std::string number(tail.substr(a, b - a)), unit(tail.substr(u, e - u));
    const std::string lu = Lower(unit);
    double scale = 0;
    const bool bytes = unit.size() >= 2 && unit[1] == 'B';  // GB/s, TB/s
    if (!lu.empty() && lu[0] == 'g') scale = 1e9;
    else if (!lu.empty() && lu[0] == 't') scale = 1e12;
    else if (!lu.empty() && lu[0] == 'm') scale = 1e6;
    char* end = nullptr;
    const double v = std::strtod(number.c_str(), &end);
    if (scale > 0 && end && *end == '\0' && v > 0) out.rate = bytes ? v * scale : v * scale / 8;
  }
  const double generation = InfinibandGenerationBandwidth(tail);  // "4xNDR": after the count
  if (generation > 0) out.fabric = "infiniband";
  if (out.rate <= 0) out.rate = generation;
  return out.rate > 0 || out.fabric == "efa";
}

// Nodes and GPUs per node from a total GPU count (`gpus:`, as a run's source states it) and
// whichever of the two the file gives; a total of 8 or fewer alone is one node.
static Status ResolveGpuCount(const Document& doc, const YAML::Node& root, std::optional<int64_t>& nodes,
                              std::optional<int64_t>& gpn, std::vector<std::string>& assumed) {
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> gpus, doc.Int(root, "gpus", 1, int64_t{1} << 30));
  if (!gpus) return Status::Ok();
  const YAML::Node at = root["gpus"];
  if (nodes && gpn) {
    if (*nodes * *gpn != *gpus)
      return doc.ErrorAt(at, "gpus: " + std::to_string(*gpus) + " is not nodes x gpus_per_node (" +
                                 std::to_string(*nodes) + " x " + std::to_string(*gpn) + ")");
    return Status::Ok();
  }
  std::string why;
  if (!nodes && !gpn) {
    if (*gpus > 8)
      return doc.ErrorAt(at, "gpus: " + std::to_string(*gpus) + " in all; give nodes or gpus_per_node to say how they are split");
    nodes = 1;
    why = "eight or fewer and no nodes given: one node";
  }
  const int64_t known = nodes ? *nodes : *gpn;
  if (*gpus % known != 0)
    return doc.ErrorAt(at, "gpus: " + std::to_string(*gpus) + " does not divide over " + std::to_string(known) +
                               (nodes ? " nodes" : " GPUs per node"));
  if (why.empty()) why = nodes ? "over the nodes given" : "at the GPUs per node given";
  (nodes ? gpn : nodes) = *gpus / known;
  assumed.push_back("nodes: " + std::to_string(*nodes) + ", gpus_per_node: " + std::to_string(*gpn) + " (gpus: " +
                    std::to_string(*gpus) + ", " + why + ")");
  return Status::Ok();
}

// Cloud GPU instances by their provider's name: the GPUs of one, the network between them
// and the host memory, as AWS's EC2 instance-type pages, Google Cloud's GPU machine-type
// pages and Azure's ND-series size pages state them. An empty network or 0 host memory: the
// page's figure is not carried here, and it stays unstated.
struct CloudInstance {
  std::string_view name;  // lower case; Azure's without its "standard_" prefix
  int gpus;
  std::string_view gpu, network;
  int64_t host_gib;
};
constexpr CloudInstance kInstances[] = {
    // AWS: P4d/P4de (A100, 400 Gb/s EFA, 1,152 GiB), P5/P5e/P5en (H100, H200; 3,200 Gb/s EFA,
    // 2 TiB), P6 (B200), P3 (V100), G5 (A10G), G6 (L4), G6e (L40S).
    {"p4d.24xlarge", 8, "A100 40GB", "400 Gb/s EFA", 1152},
    {"p4de.24xlarge", 8, "A100 80GB", "400 Gb/s EFA", 1152},
    {"p5.48xlarge", 8, "H100 SXM", "3200 Gb/s EFA", 2048},
    {"p5e.48xlarge", 8, "H200", "3200 Gb/s EFA", 2048},
    {"p5en.48xlarge", 8, "H200", "3200 Gb/s EFA", 2048},
    {"p6-b200.48xlarge", 8, "B200", "3200 Gb/s EFA", 2048},
    {"p3.2xlarge", 1, "V100 16GB", "", 61},
    {"p3.8xlarge", 4, "V100 16GB", "", 244},
    {"p3.16xlarge", 8, "V100 16GB", "1x25G Ethernet", 488},
    {"p3dn.24xlarge", 8, "V100 32GB", "100 Gb/s EFA", 768},
    {"g5.xlarge", 1, "A10G", "", 16},
    {"g5.2xlarge", 1, "A10G", "", 32},
    {"g5.4xlarge", 1, "A10G", "", 64},
    {"g5.8xlarge", 1, "A10G", "", 128},
    {"g5.16xlarge", 1, "A10G", "", 256},
    {"g5.12xlarge", 4, "A10G", "1x40G Ethernet", 192},
    {"g5.24xlarge", 4, "A10G", "1x50G Ethernet", 384},
    {"g5.48xlarge", 8, "A10G", "100 Gb/s EFA", 768},
    {"g6.xlarge", 1, "L4", "", 16},
    {"g6.12xlarge", 4, "L4", "", 192},
    {"g6.48xlarge", 8, "L4", "", 768},
    {"g6e.xlarge", 1, "L40S", "", 32},
    {"g6e.12xlarge", 4, "L40S", "", 384},
    {"g6e.48xlarge", 8, "L40S", "400 Gb/s EFA", 1536},
    // Google Cloud: A2 (A100 40GB; ultra: 80GB), A3 (H100; ultra: H200), A4 (B200), G2 (L4).
    {"a2-highgpu-1g", 1, "A100 40GB", "", 0},
    {"a2-highgpu-2g", 2, "A100 40GB", "", 0},
    {"a2-highgpu-4g", 4, "A100 40GB", "", 0},
    {"a2-highgpu-8g", 8, "A100 40GB", "", 0},
    {"a2-megagpu-16g", 16, "A100 40GB", "", 0},
    {"a2-ultragpu-1g", 1, "A100 80GB", "", 0},
    {"a2-ultragpu-2g", 2, "A100 80GB", "", 0},
    {"a2-ultragpu-4g", 4, "A100 80GB", "", 0},
    {"a2-ultragpu-8g", 8, "A100 80GB", "", 0},
    {"a3-highgpu-8g", 8, "H100 SXM", "4x200G", 0},
    {"a3-megagpu-8g", 8, "H100 SXM", "8x200G", 0},
    {"a3-ultragpu-8g", 8, "H200", "8x400G RoCE", 0},
    {"a4-highgpu-8g", 8, "B200", "8x400G RoCE", 0},
    {"g2-standard-4", 1, "L4", "", 0},
    {"g2-standard-8", 1, "L4", "", 0},
    {"g2-standard-24", 2, "L4", "", 0},
    {"g2-standard-48", 4, "L4", "", 0},
    {"g2-standard-96", 8, "L4", "", 0},
    // Azure ND: A100 v4 (HDR InfiniBand, 200 Gb/s a GPU), H100 and H200 v5 (NDR, 400).
    {"nd96asr_v4", 8, "A100 40GB", "8x200G IB", 900},
    {"nd96amsr_a100_v4", 8, "A100 80GB", "8x200G IB", 1900},
    {"nd96isr_h100_v5", 8, "H100 SXM", "8x400G IB", 1900},
    {"nd96isr_h200_v5", 8, "H200", "8x400G IB", 0},
    {"nd96isr_mi300x_v5", 8, "MI300X", "8x400G IB", 0},
};

const CloudInstance* FindInstance(std::string_view written) {
  std::string v = Lower(Trim(std::string(written)));
  if (v.starts_with("standard_")) v = v.substr(9);
  for (const CloudInstance& i : kInstances)
    if (v == i.name) return &i;
  return nullptr;
}

// The cluster-file keys an instance states, for those the file leaves out.
std::string InstanceYaml(const CloudInstance& i) {
  std::string out = "gpus_per_node: " + std::to_string(i.gpus) + "\ngpu: \"" + std::string(i.gpu) + "\"\n";
  if (!i.network.empty()) out += "inter_node: \"" + std::string(i.network) + "\"\n";
  if (i.host_gib > 0) out += "host_memory: " + std::to_string(i.host_gib) + " GiB\n";
  return out;
}

std::string InstanceNote(const CloudInstance& i) {
  return std::string(i.name) + ": " + std::to_string(i.gpus) + " x " + std::string(i.gpu) +
         (i.network.empty() ? std::string() : ", " + std::string(i.network) + " between instances") +
         (i.host_gib > 0 ? ", " + std::to_string(i.host_gib) + " GiB host memory" : std::string()) +
         " (the provider's instance page)";
}

// The network as a scalar, as cluster descriptions give it. A bare rate ("400 Gb/s") is one
// NIC's, one NIC per GPU, up to the fastest NIC that ships (800 Gb/s, ConnectX-8); above that it
// can only be the node's total, split over one NIC per GPU. A count before the rate ("8x400G")
// is the NICs. AWS's EFA alone is the instance's: 3,200 Gb/s a node on H100, H200 and B200
// instances (p5, p5e, p6-b200), 400 Gb/s on A100 ones (p4d). Every reading is said.
Status ReadNetworkScalar(const Document& doc, const YAML::Node& root, const char* key, ClusterSpec& c) {
  constexpr double kFastestNic = 800e9 / 8;
  const YAML::Node inter = root[key];
  NetworkWords words;
  std::optional<double> plain;
  if (!ParseNetworkWords(inter.Scalar(), words)) {
    SP_ASSIGN_OR_RETURN(plain, doc.Bandwidth(root, key));
  } else if (words.fabric.empty() && words.nics == 0) {
    // A rate alone in a unit Bandwidth reads ("50 GB/s", "400Gbps"): its reading.
    auto strict = doc.Bandwidth(root, key);
    if (strict.ok() && *strict) plain = *strict;
  }
  double bw = plain ? *plain : words.rate;
  int nics = words.nics > 0 ? words.nics : c.gpus_per_node;
  // AWS states EFA's rate per instance ("400 Gbps EFA" on a p4d, "3200 Gbps" on a p5).
  bool total = words.nics == 0 && (bw > kFastestNic || words.fabric == "efa");
  std::string why;
  if (!plain && words.fabric == "efa" && bw <= 0) {
    const std::string g = c.gpu.name;
    const bool a100 = g.starts_with("a100");
    if (!a100 && !g.starts_with("h100") && !g.starts_with("h200") && !g.starts_with("b200"))
      return doc.ErrorAt(inter, std::string(key) + ": EFA's rate depends on the instance; give it, such as \"EFA 3200 Gb/s\"");
    bw = (a100 ? 400e9 : 3200e9) / 8;
    total = true;
    why = std::string("EFA on ") + (a100 ? "A100 instances (p4d)" : "H100, H200 and B200 instances (p5, p5e, p6-b200)") +
          ": " + (a100 ? "400" : "3,200") + " Gb/s a node; ";
  }
  if (bw <= 0) return doc.ErrorAt(inter, std::string(key) + ": expected a rate above 0 such as 400 Gb/s, or a mapping");
  if (words.nics > 0 && words.nics > 1024)
    return doc.ErrorAt(inter, std::string(key) + ": " + std::to_string(words.nics) + " NICs to a node is out of range");
  c.inter_node.bandwidth = total ? bw / nics : bw;
  c.inter_node.nics_per_node = nics;
  if (!words.fabric.empty()) c.inter_node.fabric = words.fabric;
  const std::string rate = ShortestNumber(c.inter_node.bandwidth * 8 / 1e9) + " Gb/s";
  const bool generation = !plain && words.nics == 0 && InfinibandGenerationBandwidth(inter.Scalar()) == bw;
  const std::string written = plain && words.fabric.empty() ? ShortestNumber(bw * 8 / 1e9) + " Gb/s"
                              : generation ? "\"" + inter.Scalar() + "\" (" + ShortestNumber(bw * 8 / 1e9) + " Gb/s a port)"
                                           : "\"" + inter.Scalar() + "\"";
  c.assumed.push_back("inter_node: " + written + " read as " + why +
                      (words.nics > 0 ? std::to_string(nics) + " NICs of " + rate + " a node"
                       : total        ? "the node's total: " + std::to_string(nics) + " x " + rate + " per node"
                                      : "one NIC per GPU: " + std::to_string(nics) + " x " + rate + " per node") +
                      (words.fabric.empty() || generation ? std::string() : ", " + words.fabric) +
                      " (" +
                      (words.nics > 0  ? std::string("as written")
                       : !why.empty() ? std::string("split over one NIC per GPU")
                       : words.fabric == "efa" ? std::string("AWS states EFA's rate per instance")
                       : total        ? std::string("no NIC runs faster than 800 Gb/s")
                                      : std::string("a node's total would be larger")) +
                      "; say inter_node: {bandwidth: ..., nics_per_node: ...} to set both)");
  return Status::Ok();
}

StatusOr<ClusterSpec> ParseClusterUnguarded(const Document& doc, const YAML::Node& given) {
  SP_RETURN_IF_ERROR(doc.CheckKeys(given, {"name", "nodes", "gpus_per_node", "gpus", "gpu", "intra_node", "inter_node",
                                           "host", "nvme", "source", "interconnect", "host_memory", "instance"},
                                   kClusterSynonyms));
  SP_ASSIGN_OR_RETURN(YAML::Node root, doc.WithOurNames(given, kClusterSynonyms));
  // A cloud instance type names the node: its GPUs, network and host memory, where the file
  // does not give them itself.
  std::string instance_note;
  if (const YAML::Node instance = root["instance"]; instance.IsDefined()) {
    SP_ASSIGN_OR_RETURN(std::optional<std::string> type, doc.String(root, "instance"));
    const CloudInstance* known = type ? FindInstance(*type) : nullptr;
    if (!known) {
      std::vector<std::string> names;
      for (const CloudInstance& i : kInstances) names.emplace_back(i.name);
      const std::string hint = type ? Suggest(Lower(*type), names) : std::string();
      return doc.ErrorAt(instance, "instance: expected a GPU instance type such as p5.48xlarge, a3-highgpu-8g or "
                                   "Standard_ND96isr_H100_v5" + (hint.empty() ? std::string() : " (did you mean '" + hint + "'?)") +
                                   ", got \"" + (type ? *type : std::string("a block")) + "\"");
    }
    const YAML::Node filled = YAML::Load(InstanceYaml(*known));
    for (auto it = filled.begin(); it != filled.end(); ++it) {
      const std::string key = it->first.Scalar();
      const bool given_too = root[key].IsDefined() || (key == "inter_node" && root["interconnect"].IsDefined()) ||
                             (key == "host_memory" && root["host"].IsDefined()) ||
                             (key == "gpus_per_node" && root["gpus"].IsDefined());
      if (!given_too) root[key] = it->second;
    }
    instance_note = "instance: " + InstanceNote(*known);
  }
  // "interconnect" is the link inside a node when its words name one (NVLink, PCIe), else
  // the network between nodes.
  const YAML::Node interconnect = root["interconnect"];
  const bool interconnect_intra =
      interconnect.IsDefined() && interconnect.IsScalar() && NamesIntraNodeFabric(interconnect.Scalar());
  const char* const intra_key = interconnect_intra ? "interconnect" : "intra_node";
  const char* const inter_key = interconnect.IsDefined() && !interconnect_intra ? "interconnect" : "inter_node";
  if (interconnect.IsDefined() && root[interconnect_intra ? "intra_node" : "inter_node"].IsDefined())
    return doc.ErrorAt(interconnect, std::string("interconnect: the file gives ") +
                                         (interconnect_intra ? "intra_node" : "inter_node (or network)") + " already");
  ClusterSpec c;
  if (!instance_note.empty()) c.assumed.push_back(instance_note);
  SP_ASSIGN_OR_RETURN(std::optional<std::string> name, doc.String(root, "name"));
  c.name = name.value_or("cluster");
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> nodes, doc.Int(root, "nodes", 1, 1 << 20));
  SP_ASSIGN_OR_RETURN(std::optional<int64_t> gpn, doc.Int(root, "gpus_per_node", 1, 1024));
  YAML::Node gpu = root["gpu"];
  if (!gpu.IsDefined()) return doc.ErrorAt(given, "gpu: missing; expected a catalog name (e.g. h100-sxm-80gb) or a mapping");
  std::string gpu_name = gpu.IsScalar() ? gpu.Scalar() : std::string();
  if (gpu.IsScalar()) {
    // "8x H100", "8 x A100 80GB": the node's GPUs and their kind, as specs write them.
    const std::string& v = gpu.Scalar();
    std::string_view rest = v;
    if (const std::optional<int64_t> count = TakeCount(rest, 4); count && !Trim(rest).empty()) {
      if (*count < 1 || *count > 1024) return doc.ErrorAt(gpu, "gpu: " + std::to_string(*count) + " GPUs to a node is out of range");
      if (gpn && *gpn != *count)
        return doc.ErrorAt(gpu, "gpu: \"" + v + "\" says " + std::to_string(*count) + " to a node, but gpus_per_node is " +
                                    std::to_string(*gpn));
      gpn = *count;
      gpu_name = Trim(rest);
    }
  }
  SP_RETURN_IF_ERROR(ResolveGpuCount(doc, root, nodes, gpn, c.assumed));
  if (nodes && (*nodes < 1 || *nodes > (1 << 20))) return doc.ErrorAt(root["gpus"], "gpus: gives more nodes than a cluster file may state");
  if (gpn && (*gpn < 1 || *gpn > 1024)) return doc.ErrorAt(root["gpus"], "gpus: gives more than 1,024 GPUs per node");
  c.nodes = static_cast<int>(nodes.value_or(1));
  if (gpn) c.gpus_per_node = static_cast<int>(*gpn);
  if (!gpn) return doc.ErrorAt(given, "gpus_per_node: missing; expected a positive integer");
  std::string tdp_of;  // whose TDP the power limit is checked against, for the message
  if (gpu.IsScalar()) {
    std::string note;
    int64_t stated_memory = 0;
    auto key = ResolveGpuName(gpu_name, &note, &stated_memory, &c.larger_gpus);
    if (!key.ok()) return doc.ErrorAt(gpu, "gpu: " + key.status().message());
    auto g = CatalogGpu(*key);
    if (!g.ok()) return doc.ErrorAt(gpu, "gpu: " + g.status().message());
    if (!note.empty()) c.assumed.push_back(note);
    c.gpu = *g;
    if (stated_memory > 0) {
      c.gpu.memory_bytes = stated_memory;
      c.gpu.display_name = gpu_name;
    }
  } else {
    SP_ASSIGN_OR_RETURN(c.gpu, ParseGpu(doc, gpu, "custom", true));
    tdp_of = c.gpu.name;
    // A card's "80GB" is binary (an 80GB A100 holds 81,920 MiB), a unit's GB decimal. The
    // memory is read as written, and the output says what a card's size would be.
    if (const YAML::Node mem = gpu["memory"]; mem.IsScalar()) {
      const std::string& v = mem.Scalar();  // parsed already: a number, then its unit
      if (v.size() > 2 && v.compare(v.size() - 2, 2, "GB") == 0)
        c.assumed.push_back("gpu memory: '" + v + "' read as " + FormatBytes(c.gpu.memory_bytes) +
                            " (decimal GB); a card sold as " + v + " holds " +
                            ShortestNumber(static_cast<double>(c.gpu.memory_bytes) / 1e9) +
                            " GiB unless ECC takes a share of it (HBM cards and GeForce lose none): write GiB for those");
    }
    // A mapping that names a catalog GPU and states only its memory ({name: H100 96GB,
    // memory: 96 GB}) takes that GPU's speeds; a name the catalog does not know leaves the
    // time unknown.
    if (c.gpu.bf16_flops <= 0 && c.gpu.fp16_flops <= 0 && gpu["name"].IsScalar()) {
      std::string note;
      int64_t ignored = 0;
      if (auto key = ResolveGpuName(gpu["name"].Scalar(), &note, &ignored); key.ok()) {
        if (auto g = CatalogGpu(*key); g.ok()) {
          const GpuSpec stated = c.gpu;
          c.gpu = *g;
          c.gpu.name = stated.name;
          c.gpu.display_name = stated.display_name;
          c.gpu.memory_bytes = stated.memory_bytes;
          if (gpu["driver_reserved"].IsDefined()) c.gpu.reserved_bytes = stated.reserved_bytes;
          if (gpu["nvlink_bandwidth"].IsDefined()) c.gpu.nvlink_bandwidth = stated.nvlink_bandwidth;
          if (gpu["memory_bandwidth"].IsDefined()) c.gpu.memory_bandwidth = stated.memory_bandwidth;
          if (gpu["power_limit"].IsDefined()) c.gpu.power_limit_watts = stated.power_limit_watts;
          if (gpu["tdp"].IsDefined()) c.gpu.tdp_watts = stated.tdp_watts;
          if (gpu["nvlink_domain"].IsDefined()) c.gpu.nvlink_domain = stated.nvlink_domain;
          if (gpu["nic_bandwidth"].IsDefined()) c.gpu.nic_bandwidth = stated.nic_bandwidth;
          if (gpu["host_link_bandwidth"].IsDefined()) c.gpu.host_link_bandwidth = stated.host_link_bandwidth;
          if (gpu["sms"].IsDefined()) c.gpu.sms = stated.sms;
          tdp_of = *key;
          c.assumed.push_back("gpu: '" + stated.name + "' computes as the catalog's " + *key + " (speeds taken from it)");
        }
      }
    }
  }
  if (c.gpu.tdp_watts > 0 && c.gpu.power_limit_watts > c.gpu.tdp_watts)  // a card draws at most its board power
    return doc.ErrorAt(gpu["power_limit"], "power_limit: above the " + tdp_of + " TDP (" +
                                               ShortestNumber(c.gpu.tdp_watts) + " W)");
  // Unstated, the GPUs talk as the standard node's do: over NVLink, or PCIe where they have none.
  c.intra_node = ShippedIntraNodeLink(c.gpu);
  // One NIC per GPU at the rate of the system the GPU ships in.
  c.inter_node = {"infiniband", ShippedNicBandwidth(c.gpu), 5e-6, c.gpus_per_node};
  YAML::Node intra = root[intra_key];
  if (intra.IsDefined() && intra.IsScalar()) {
    SP_RETURN_IF_ERROR(ReadIntraNodeWords(doc, root, intra_key, c.gpu, c.intra_node, c.assumed));
  } else {
    SP_RETURN_IF_ERROR(ReadLink(doc, intra, intra_key, false, c.intra_node));
  }
  // A system whose NVLink fabric spans trays (GB200 NVL72: 18 trays of 4 GPUs on one NVLink
  // switch fabric) ships that way: its collectives inside the domain never touch a NIC.
  const bool domain_stated = intra.IsDefined() && intra.IsMap() && intra["domain"].IsDefined();
  const int shipped = ShippedNvlinkDomain(c.gpu, c.gpus_per_node);
  if (!domain_stated && shipped > 0 && c.nodes > 1 && c.intra_node.fabric == "nvlink") {
    c.intra_node.domain = shipped;
    c.assumed.push_back("intra_node.domain: " + std::to_string(shipped) + " (" + c.gpu.name + " systems join " +
                        std::to_string(shipped) +
                        " GPUs on one NVLink fabric; say intra_node: {domain: " + std::to_string(c.gpus_per_node) +
                        "} for trays on the network alone)");
  }
  // Only a stated domain can be off: the shipped one is whole nodes or not taken.
  if (domain_stated && (c.intra_node.domain < c.gpus_per_node || c.intra_node.domain % c.gpus_per_node != 0))
    return doc.ErrorAt(intra["domain"],
                       "intra_node.domain: " + std::to_string(c.intra_node.domain) +
                           " GPUs is not a whole number of nodes of " + std::to_string(c.gpus_per_node));
  const YAML::Node inter = root[inter_key];
  if (inter.IsDefined() && inter.IsScalar()) {
    SP_RETURN_IF_ERROR(ReadNetworkScalar(doc, root, inter_key, c));
  } else {
    SP_RETURN_IF_ERROR(ReadLink(doc, inter, inter_key, true, c.inter_node));
  }
  if (c.nodes > 1 && c.inter_node.fabric != "none" && !(inter.IsDefined() && (inter.IsScalar() || (inter.IsMap() && inter["bandwidth"].IsDefined()))))
    c.assumed.push_back("inter_node: " + std::to_string(c.inter_node.nics_per_node) + " x " +
                        ShortestNumber(c.inter_node.bandwidth * 8 / 1e9) + " Gb/s per node (one NIC per GPU at the rate " + c.gpu.name +
                        " systems ship with; state inter_node: {bandwidth: ..., nics_per_node: ...} for yours)");
  // The host link, one direction per GPU, where the file does not state it: the rate of the
  // PCIe generation the GPU attaches with, as the built-in clusters and the standard node
  // state it.
  c.pcie_bandwidth = ShippedPcieBandwidth(c.gpu);
  // host: {memory, pcie_bandwidth}, or its memory alone (host: 2 TiB, host_memory: 2 TiB).
  if (YAML::Node host = root["host"]; host.IsDefined() && host.IsScalar()) {
    SP_ASSIGN_OR_RETURN(std::optional<int64_t> mem, doc.Bytes(root, "host"));
    if (mem) c.host_memory_bytes = *mem;
  } else if (host.IsDefined()) {
    SP_RETURN_IF_ERROR(doc.ExpectMap(host, "host"));
    SP_RETURN_IF_ERROR(doc.CheckKeys(host, {"memory", "pcie_bandwidth"}));
    SP_ASSIGN_OR_RETURN(std::optional<int64_t> mem, doc.Bytes(host, "memory"));
    std::optional<double> pcie;
    if (const YAML::Node p = host["pcie_bandwidth"]; p.IsScalar() && PcieGenerationBandwidth(p.Scalar()) > 0) {
      pcie = PcieGenerationBandwidth(p.Scalar());  // "PCIe 5.0", "Gen4": x16, one direction
    } else {
      SP_ASSIGN_OR_RETURN(pcie, doc.Bandwidth(host, "pcie_bandwidth"));
    }
    if (mem) c.host_memory_bytes = *mem;
    if (pcie) c.pcie_bandwidth = *pcie;
  }
  if (root["host_memory"].IsDefined()) {
    const YAML::Node host = root["host"];
    if (host.IsDefined() && (host.IsScalar() || host["memory"].IsDefined()))
      return doc.ErrorAt(root["host_memory"], "host_memory: the file gives host memory already");
    SP_ASSIGN_OR_RETURN(std::optional<int64_t> mem, doc.Bytes(root, "host_memory"));
    if (mem) c.host_memory_bytes = *mem;
  }
  if (YAML::Node nvme = root["nvme"]; nvme.IsDefined() && nvme.IsScalar()) {  // its capacity alone
    SP_ASSIGN_OR_RETURN(std::optional<int64_t> cap, doc.Bytes(root, "nvme"));
    if (cap) c.nvme_bytes = *cap;
  } else if (nvme.IsDefined()) {
    SP_RETURN_IF_ERROR(doc.ExpectMap(nvme, "nvme"));
    SP_RETURN_IF_ERROR(doc.CheckKeys(nvme, {"capacity", "bandwidth"}));
    SP_ASSIGN_OR_RETURN(std::optional<int64_t> cap, doc.Bytes(nvme, "capacity"));
    SP_ASSIGN_OR_RETURN(std::optional<double> bw, doc.Bandwidth(nvme, "bandwidth"));
    if (cap) c.nvme_bytes = *cap;
    if (bw) c.nvme_bandwidth = *bw;
  }
  return c;
}

StatusOr<ClusterSpec> LoadCluster(const std::string& ref) {
  auto doc = LoadBuiltinOrFile("clusters", ref);
  if (!doc.ok() && !std::filesystem::exists(ref)) {
    // No built-in and no file: a cluster in words, "H100", "8xH100", "2x8xH100" or "4 x 8 x A100
    // 80GB" (nodes x GPUs per node x GPU), read as a cluster file stating them would be.
    std::string_view words = ref;
    std::vector<int64_t> counts;
    while (counts.size() < 2)
      if (const std::optional<int64_t> n = TakeCount(words, 6)) counts.push_back(*n);
      else break;
    const std::string rest = Trim(words);
    // "p5.48xlarge", "2x p4d.24xlarge": a cloud instance, as many as the count says.
    if (const CloudInstance* instance = FindInstance(rest); instance && counts.size() <= 1) {
      const int64_t n = counts.empty() ? 1 : counts[0];
      const std::string text = "name: \"" + ref + "\"\nnodes: " + std::to_string(n) + "\n" + InstanceYaml(*instance);
      SP_ASSIGN_OR_RETURN(Document words_doc, Document::Parse("--cluster", text));
      SP_ASSIGN_OR_RETURN(ClusterSpec c, ParseCluster(words_doc));
      c.assumed.push_back("cluster: '" + ref + "' read as " + std::to_string(n) + " x " + InstanceNote(*instance));
      return c;
    }
    const int64_t nodes = counts.size() == 2 ? counts[0] : 1;
    const int64_t per_node = counts.empty() ? 1 : counts.back();
    std::string note;
    int64_t ignored = 0;
    if (!rest.empty() && ResolveGpuName(rest, &note, &ignored).ok()) {
      const std::string text = "name: \"" + ref + "\"\nnodes: " + std::to_string(nodes) + "\ngpus_per_node: " +
                               std::to_string(per_node) + "\ngpu: \"" + rest + "\"\n";
      SP_ASSIGN_OR_RETURN(Document words, Document::Parse("--cluster", text));
      SP_ASSIGN_OR_RETURN(ClusterSpec c, ParseCluster(words));
      const std::string shape = counts.empty() ? c.gpu.name + " nodes (one GPU each unless --gpus-per-node says)"
                                               : std::to_string(nodes) + " node(s) of " + std::to_string(per_node) +
                                                     " x " + c.gpu.name;
      c.assumed.push_back("cluster: '" + ref + "' read as " + shape + ", linked as they ship (NVLink where the part has "
                          "it, one NIC per GPU); a cluster YAML says otherwise");
      return c;
    }
    return Status::BadInput(doc.status().message() + ", or a GPU with counts such as 8xH100 or 2x8xA100-80GB");
  }
  if (!doc.ok()) return doc.status();
  return ParseCluster(*doc);
}

std::string DescribeCluster(const ClusterSpec& c) {
  char buf[2048];
  std::string out;
  std::snprintf(buf, sizeof buf, "cluster      %s\n", c.name.c_str());
  out += buf;
  std::snprintf(buf, sizeof buf, "GPUs         %d = %d node(s) x %d  %s (%s)\n", c.world_size(), c.nodes,
                c.gpus_per_node, c.gpu.display_name.c_str(), c.gpu.name.c_str());
  out += buf;
  std::snprintf(buf, sizeof buf, "GPU memory   %s each (%s allocatable), %s in all\n", FormatBytes(c.gpu.memory_bytes).c_str(),
                FormatBytes(UsableMemory(c.gpu)).c_str(), FormatBytes(c.gpu.memory_bytes * c.world_size()).c_str());
  out += buf;
  std::snprintf(buf, sizeof buf, "GPU compute  %.1f TFLOP/s bf16 dense, %s memory bandwidth\n", c.gpu.bf16_flops / 1e12,
                FormatBandwidth(c.gpu.memory_bandwidth).c_str());
  out += buf;
  if (c.gpu.power_limit_watts > 0 && c.gpu.power_limit_watts < c.gpu.tdp_watts) {
    std::snprintf(buf, sizeof buf, "GPU power    %.0f W limit of a %.0f W TDP (tensor cores clocked down to fit)\n",
                  c.gpu.power_limit_watts, c.gpu.tdp_watts);
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "intra-node   %s, %s per GPU per direction, %.1f us\n", c.intra_node.fabric.c_str(),
                FormatBandwidth(c.intra_node.bandwidth).c_str(), c.intra_node.latency_s * 1e6);
  out += buf;
  if (c.nvlink_domain_size() > c.gpus_per_node) {
    std::snprintf(buf, sizeof buf, "NVLink domain %d GPUs (%d nodes) on one %s fabric\n", c.nvlink_domain_size(),
                  c.nvlink_domain_size() / c.gpus_per_node, c.intra_node.fabric.c_str());
    out += buf;
  }
  if (c.nodes > 1 || c.inter_node.nics_per_node > 0) {
    std::snprintf(buf, sizeof buf, "inter-node   %s, %d NIC(s) x %s per node = %s per GPU, %.1f us\n",
                  c.inter_node.fabric.c_str(), c.inter_node.nics_per_node,
                  FormatBandwidth(c.inter_node.bandwidth).c_str(),
                  FormatBandwidth(c.inter_node_bandwidth_per_gpu()).c_str(), c.inter_node.latency_s * 1e6);
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "host         %s RAM per node, host link %s per GPU\n", FormatBytes(c.host_memory_bytes).c_str(),
                FormatBandwidth(c.pcie_bandwidth).c_str());
  out += buf;
  if (c.nvme_bytes > 0) {
    std::snprintf(buf, sizeof buf, "nvme         %s per node at %s\n", FormatBytes(c.nvme_bytes).c_str(),
                  FormatBandwidth(c.nvme_bandwidth).c_str());
    out += buf;
  }
  return out;
}

}  // namespace shardplan
