#include "topology/discover.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "planner/io/document.h"
#include "planner/strings.h"
#include "planner/units.h"
#include "topology/gpu_catalog.h"

namespace shardplan {
namespace {

// Typical small-message latencies, not measured here (the built-in cluster files use the same).
constexpr double kNvLinkLatency = 2e-6;
constexpr double kPcieLatency = 5e-6;

constexpr const char* kCaptureHint =
    "On the GPU node run `nvidia-smi topo -m > topo.txt` and `nvidia-smi "
    "--query-gpu=index,name,memory.total,pci.bus_id --format=csv,noheader,nounits > gpus.csv`, then "
    "`shardplan topology discover --from-topo topo.txt --from-query gpus.csv`";

// Driver names and catalog display names compare without case, punctuation or "NVIDIA".
std::string NameKey(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != ' ') out += ' ';
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out.rfind("nvidia ", 0) == 0 ? out.substr(7) : out;
}

// "Tesla P40" -> "tesla-p40", a name for a GPU the catalog lacks.
std::string Slug(std::string_view name) {
  std::string out;
  for (char c : NameKey(name)) out += c == ' ' ? '-' : c;
  return out.empty() ? "gpu" : out;
}

std::optional<GpuSpec> MatchCatalog(const std::string& driver_name) {
  for (const std::string& key : CatalogGpuNames()) {
    StatusOr<GpuSpec> g = CatalogGpu(key);
    if (g.ok() && NameKey(g->display_name) == NameKey(driver_name)) return *g;
  }
  return std::nullopt;
}

// Active NVLinks of one GPU: the sum of its row's NV# cells, or, behind NVSwitches (where every
// pair shows the GPU's full count, so the sum exceeds what any GPU has), the largest cell.
int NvLinksOf(const TopoGpu& row) {
  int sum = 0, most = 0;
  for (const TopoLink& l : row.to_gpu)
    if (l.kind == LinkKind::kNvLink) sum += l.nvlinks, most = std::max(most, l.nvlinks);
  return sum <= kMaxNvLinksPerGpu ? sum : most;
}

std::vector<std::vector<int>> Islands(const TopoMatrix& topo) {
  const int n = static_cast<int>(topo.gpus.size());
  std::vector<int> parent(n);
  for (int i = 0; i < n; ++i) parent[i] = i;
  auto root = [&](int i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (topo.gpus[i].to_gpu[j].kind == LinkKind::kNvLink) parent[root(i)] = root(j);
  std::map<int, std::vector<int>> groups;
  for (int i = 0; i < n; ++i) groups[root(i)].push_back(i);
  std::vector<std::vector<int>> islands;
  for (auto& [_, members] : groups)
    if (members.size() > 1) islands.push_back(members);
  std::sort(islands.begin(), islands.end());
  return islands;
}

// "0-3" for consecutive GPUs, else "0,2,5".
std::string GpuList(const std::vector<int>& gpus) {
  bool consecutive = true;
  for (size_t k = 1; k < gpus.size(); ++k) consecutive = consecutive && gpus[k] == gpus[k - 1] + 1;
  if (consecutive && gpus.size() > 2) return std::to_string(gpus.front()) + "-" + std::to_string(gpus.back());
  std::vector<std::string> parts;
  for (int g : gpus) parts.push_back(std::to_string(g));
  return Join(parts, ",");
}

std::string GbPerS(double bytes_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g GB/s", bytes_per_s / 1e9);
  return buf;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::BadInput(path + ": cannot read: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  for (const std::string& dir : Split(path != nullptr ? path : "", ':'))
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  return false;
}

int64_t HostMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<int64_t>(pages) * page / kGiB * kGiB;  // whole GiB, as `free -g` shows it
}

}  // namespace

double NvLinkBandwidthPerLink(int cc) {
  // Per link, one direction: NVLink1 (P100) 20 GB/s; NVLink2-4 (V100, A100, H100) 25 GB/s; the
  // GA102 bridge (RTX 3090, RTX A6000; `nvidia-smi nvlink -s` shows 14.062 GB/s) 14.0625 GB/s;
  // NVLink5 (B200) 50 GB/s. Ecosystem notes section 5.4.
  if (cc >= 100) return 50e9;
  if (cc >= 86 && cc <= 89) return 14.0625e9;
  if (cc == 60) return 20e9;
  return 25e9;
}

double PcieBandwidth(int generation, int width) {
  static const double kGigaTransfersPerLane[] = {0, 2.5, 5, 8, 16, 32, 64};
  if (generation < 1 || generation > 6 || width <= 0) return 0;
  // Line encoding: 8b/10b to Gen2, 128b/130b to Gen5, 242B/256B FLITs in Gen6.
  double encoding = generation <= 2 ? 0.8 : generation <= 5 ? 128.0 / 130 : 242.0 / 256;
  double bytes = kGigaTransfersPerLane[generation] * 1e9 * encoding * width / 8;
  return std::round(bytes / 1e7) * 1e7;
}

namespace {

Status CheckSameGpus(const TopoMatrix& topo, const std::vector<QueryGpu>& gpus, const std::string& source) {
  const int n = static_cast<int>(gpus.size());
  if (n == 0) return Status::BadInput(source + ": no GPUs");
  if (static_cast<int>(topo.gpus.size()) != n)
    return Status::BadInput(source + ": the topology shows " + std::to_string(topo.gpus.size()) +
                            " GPUs but the GPU list has " + std::to_string(n) + "; capture both on the same machine");
  for (int i = 0; i < n; ++i)
    if (gpus[i].index != i)
      return Status::BadInput(source + ": GPU indices should run 0.." + std::to_string(n - 1) + ", found " +
                              std::to_string(gpus[i].index));
  return Status::Ok();
}

// The GPU model: the catalog entry the driver's name matches (else the name alone), with the
// smallest memory the driver reports and the NVLink bandwidth the fewest links give.
GpuSpec NodeGpu(const std::vector<QueryGpu>& gpus, Discovery& d) {
  std::map<std::string, int> models;
  int64_t memory = gpus[0].memory_bytes;
  int links = d.gpus[0].nvlinks;
  for (size_t i = 0; i < gpus.size(); ++i) {
    ++models[gpus[i].name];
    memory = std::min(memory, gpus[i].memory_bytes);
    links = std::min(links, d.gpus[i].nvlinks);
  }
  if (models.size() > 1) {
    std::vector<std::string> seen;
    for (const auto& [name, count] : models) seen.push_back(std::to_string(count) + "x " + name);
    d.notes.push_back("the GPUs differ (" + Join(seen) + "); the spec describes " + gpus[0].name +
                      " with the smallest memory");
  }
  std::optional<GpuSpec> catalog = MatchCatalog(gpus[0].name);
  GpuSpec g = catalog.value_or(GpuSpec{});
  if (!catalog) {
    g.name = Slug(gpus[0].name);
    g.display_name = gpus[0].name;
    d.notes.push_back("\"" + gpus[0].name + "\" is not in the GPU catalog (configs/gpus.yaml): add its dense " +
                      "bf16_tflops and memory_bandwidth to the written file before planning");
  }
  g.memory_bytes = memory;
  if (gpus[0].compute_capability > 0) g.compute_capability = gpus[0].compute_capability;
  double nvlink = links * NvLinkBandwidthPerLink(g.compute_capability);
  if (links > 0 && g.compute_capability == 0)
    d.notes.push_back("the NVLink generation is unknown; assumed 25 GB/s per link and direction");
  if (catalog && nvlink != catalog->nvlink_bandwidth)
    d.notes.push_back("the catalog gives " + catalog->name + " " + GbPerS(catalog->nvlink_bandwidth) +
                      " of NVLink per GPU; this node's links give " + GbPerS(nvlink));
  g.nvlink_bandwidth = nvlink;
  // A cap below the card's TDP (nvidia-smi -pl; torchtitan's H100s ran at 500 W of 700)
  // slows its tensor cores; the lowest card sets the pace of a synchronous step.
  double limit = 0;
  for (const QueryGpu& q : gpus)
    if (q.power_limit_watts > 0) limit = limit > 0 ? std::min(limit, q.power_limit_watts) : q.power_limit_watts;
  if (limit > 0 && g.tdp_watts > 0 && limit < g.tdp_watts - 0.5) {
    g.power_limit_watts = limit;
    d.notes.push_back("the GPUs run under a " + ShortestNumber(limit) + " W power limit of the " +
                      ShortestNumber(g.tdp_watts) + " W TDP; the plan prices their tensor cores at the clock that allows");
  }
  return g;
}

// intra_node is NVLink only when one island holds every GPU; inter_node stays unknown (empty),
// because one node shows its NICs but not the fabric or its rate.
void SetLinks(Discovery& d, double pcie) {
  ClusterSpec& c = d.cluster;
  const int n = c.gpus_per_node;
  c.pcie_bandwidth = pcie;
  if (n > 1 && d.nvlink_islands.size() == 1 && static_cast<int>(d.nvlink_islands[0].size()) == n) {
    c.intra_node = {"nvlink", c.gpu.nvlink_bandwidth, kNvLinkLatency, 0};
  } else {
    c.intra_node = {"pcie", pcie, kPcieLatency, 0};
    if (!d.nvlink_islands.empty())
      d.notes.push_back("NVLink joins only part of the node, so intra_node is PCIe; keep tensor parallel groups "
                        "inside an NVLink island");
  }
  if (pcie == 0) d.notes.push_back("the PCIe link was not reported; host.pcie_bandwidth is left to the reader's default");
  d.notes.push_back("one node was discovered, so inter_node is left to the reader's default; set its fabric, "
                    "bandwidth and nics_per_node before planning across nodes" +
                    (d.nics.empty() ? std::string() : " (NICs seen: " + Join(d.nics) + ")"));
}

}  // namespace

StatusOr<Discovery> Combine(const TopoMatrix& topo, const std::vector<QueryGpu>& gpus, const std::string& source,
                            const DiscoverOptions& options) {
  SP_RETURN_IF_ERROR(CheckSameGpus(topo, gpus, source));
  Discovery d;
  d.source = source;
  d.driver_version = gpus[0].driver_version;
  d.nics = topo.nic_devices;
  d.nvlink_islands = Islands(topo);
  double pcie = 0;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const TopoGpu& row = topo.gpus[i];
    d.links.push_back(row.to_gpu);
    d.gpus.push_back({static_cast<int>(i), gpus[i].name, gpus[i].memory_bytes, gpus[i].pci_bus_id, row.numa_node,
                      row.cpu_affinity, NvLinksOf(row)});
    double link = PcieBandwidth(gpus[i].pcie_gen, gpus[i].pcie_width);
    pcie = i == 0 ? link : std::min(pcie, link);  // the slowest GPU's link; 0 if any is unknown
  }
  ClusterSpec& c = d.cluster;
  c.name = options.name.empty() ? "discovered" : options.name;
  c.nodes = 1;
  c.gpus_per_node = static_cast<int>(gpus.size());
  c.gpu = NodeGpu(gpus, d);
  c.host_memory_bytes = options.host_memory_bytes;
  SetLinks(d, pcie);
  return d;
}

StatusOr<Discovery> DiscoverFromFiles(const std::string& topo_path, const std::string& query_path,
                                      const DiscoverOptions& options) {
  SP_ASSIGN_OR_RETURN(std::string topo_text, ReadFile(topo_path));
  SP_ASSIGN_OR_RETURN(std::string query_text, ReadFile(query_path));
  SP_ASSIGN_OR_RETURN(TopoMatrix topo, ParseTopoMatrix(topo_text, topo_path));
  SP_ASSIGN_OR_RETURN(std::vector<QueryGpu> gpus, ParseGpuQuery(query_text, query_path));
  namespace fs = std::filesystem;
  std::string source = "captured nvidia-smi output (" + fs::path(topo_path).filename().string() + ", " +
                       fs::path(query_path).filename().string() + ")";
  return Combine(topo, gpus, source, options);
}

StatusOr<Discovery> DiscoverFromNvml(const NvmlFunctions& nvml, const DiscoverOptions& options) {
  SP_ASSIGN_OR_RETURN(NvmlSnapshot snap, QueryNvml(nvml));
  if (snap.gpus.empty()) return Status::Internal("NVML sees no GPUs");
  std::string source = "NVML" + (snap.driver_version.empty() ? "" : " (driver " + snap.driver_version + ")");
  return Combine(NvmlTopology(snap), NvmlQueryRows(snap), source, options);
}

StatusOr<std::string> RunCommand(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return Status::Internal("cannot run `" + command + "`: " + std::strerror(errno));
  std::string out;
  char buf[4096];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, got);
  int status = pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    int code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::string first = Trim(out.substr(0, out.find('\n')));
    return Status::Internal("`" + command + "` exited with status " + std::to_string(code) +
                            (first.empty() ? "" : ": " + first));
  }
  return out;
}

StatusOr<Discovery> DiscoverWithNvidiaSmi(const CommandRunner& run, const DiscoverOptions& options) {
  const std::string topo_command = "nvidia-smi topo -m";
  auto query_command = [](const std::vector<std::string>& cols) {
    return "nvidia-smi --query-gpu=" + Join(cols, ",") + " --format=csv,noheader,nounits";
  };
  SP_ASSIGN_OR_RETURN(std::string topo_text, run(topo_command));
  std::vector<std::string> cols = {"index", "name", "memory.total", "pci.bus_id", "compute_cap",
                                   "pcie.link.gen.max", "pcie.link.width.max", "driver_version", "power.limit"};
  StatusOr<std::string> query = run(query_command(cols));
  if (!query.ok()) {  // drivers before ~510 reject compute_cap: ask for the documented four
    cols = DefaultQueryColumns();
    query = run(query_command(cols));
  }
  if (!query.ok()) return query.status();
  SP_ASSIGN_OR_RETURN(TopoMatrix topo, ParseTopoMatrix(topo_text, topo_command));
  SP_ASSIGN_OR_RETURN(std::vector<QueryGpu> gpus, ParseGpuQuery(*query, "nvidia-smi --query-gpu", cols));
  std::string driver = gpus.empty() || gpus[0].driver_version.empty() ? "" : " (driver " + gpus[0].driver_version + ")";
  return Combine(topo, gpus, "nvidia-smi" + driver, options);
}

StatusOr<Discovery> DiscoverLocal(DiscoverOptions options, const std::function<void(const std::string&)>& progress) {
  if (options.name.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) options.name = host;
  }
  auto step = [&](const std::string& what) {
    if (progress) progress(what);
  };
  if (options.host_memory_bytes == 0) options.host_memory_bytes = HostMemoryBytes();
  std::string nvml_problem;
  step("loading NVML");
  StatusOr<NvmlFunctions> nvml = LoadNvml();
  if (nvml.ok()) {
    step("reading the GPUs and their links through NVML");
    StatusOr<Discovery> d = DiscoverFromNvml(*nvml, options);
    if (d.ok()) return d;
    nvml_problem = d.status().message();
  } else {
    nvml_problem = nvml.status().message();
  }
  if (!OnPath("nvidia-smi"))
    return Status::Internal("cannot discover GPUs on this machine: " + nvml_problem +
                            ", and nvidia-smi is not on PATH. " + kCaptureHint);
  step("running nvidia-smi");
  StatusOr<Discovery> d = DiscoverWithNvidiaSmi(RunCommand, options);
  if (!d.ok())
    return Status::Internal("NVML: " + nvml_problem + "; nvidia-smi: " + d.status().message() + ". " + kCaptureHint);
  d->notes.push_back("NVML was not usable (" + nvml_problem + "); read nvidia-smi instead");
  return d;
}

std::vector<std::string> DiscoveryComments(const Discovery& d) {
  const ClusterSpec& c = d.cluster;
  std::vector<std::string> lines = {"Discovered by `shardplan topology discover` from " + d.source + "."};
  lines.push_back(std::to_string(c.gpus_per_node) + "x " + c.gpu.display_name + ", " +
                  std::to_string(c.gpu.memory_bytes / kMiB) + " MiB each as the driver reports it.");
  if (d.nvlink_islands.empty()) {
    lines.push_back("NVLink: none; the GPUs talk over PCIe.");
  } else {
    std::vector<std::string> islands;
    for (const auto& island : d.nvlink_islands) islands.push_back("GPU " + GpuList(island));
    lines.push_back("NVLink islands: " + Join(islands, "; ") + " (" + std::to_string(d.gpus[d.nvlink_islands[0][0]].nvlinks) +
                    " links per GPU).");
  }
  std::map<int, std::vector<int>> numa;
  for (const DiscoveredGpu& g : d.gpus) numa[g.numa_node].push_back(g.index);
  std::vector<std::string> parts;
  for (const auto& [node, members] : numa)
    parts.push_back("GPU " + GpuList(members) + (node < 0 ? " unknown" : " on node " + std::to_string(node)));
  lines.push_back("NUMA: " + Join(parts, "; ") + ".");
  for (const std::string& note : d.notes) lines.push_back("Note: " + note + ".");
  return lines;
}

std::string DescribeDiscovery(const Discovery& d) {
  std::string out = "source    " + d.source + "\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-4s %-24s %-11s %-18s %-5s %-18s %s\n", "GPU", "name", "memory", "PCI", "NUMA",
                "CPU affinity", "NVLinks");
  out += buf;
  for (const DiscoveredGpu& g : d.gpus) {
    std::snprintf(buf, sizeof buf, "%-4d %-24s %-11s %-18s %-5s %-18s %d\n", g.index, g.name.c_str(),
                  (std::to_string(g.memory_bytes / kMiB) + " MiB").c_str(), g.pci_bus_id.c_str(),
                  g.numa_node < 0 ? "-" : std::to_string(g.numa_node).c_str(),
                  g.cpu_affinity.empty() ? "-" : g.cpu_affinity.c_str(), g.nvlinks);
    out += buf;
  }
  for (const std::string& line : DiscoveryComments(d))
    if (line.rfind("NVLink", 0) == 0 || line.rfind("Note", 0) == 0) out += line + "\n";
  return out;
}

}  // namespace shardplan
