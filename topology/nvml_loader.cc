#include "topology/nvml_loader.h"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace shardplan {
namespace {

// Resolves `symbol` into `out`; false if the library lacks it.
template <typename R, typename... Args>
bool Bind(void* lib, const char* symbol, std::function<R(Args...)>& out) {
  void* p = dlsym(lib, symbol);
  if (p == nullptr) return false;
  out = reinterpret_cast<R (*)(Args...)>(p);
  return true;
}

constexpr int kCpuMaskWords = 64;  // 4096 CPUs with 64-bit words: more than any node has

std::string Describe(const NvmlFunctions& nvml, int rc) {
  const char* text = nvml.error_string ? nvml.error_string(rc) : nullptr;
  return std::string(text != nullptr ? text : "unknown error") + " (nvmlReturn_t " + std::to_string(rc) + ")";
}

// Calls nvmlShutdown when discovery leaves, whatever the path.
class ShutdownOnExit {
 public:
  explicit ShutdownOnExit(const NvmlFunctions& nvml) : nvml_(nvml) {}
  ~ShutdownOnExit() { nvml_.shutdown(); }
  ShutdownOnExit(const ShutdownOnExit&) = delete;
  ShutdownOnExit& operator=(const ShutdownOnExit&) = delete;

 private:
  const NvmlFunctions& nvml_;
};

// The optional facts of one GPU; any call that fails leaves its field unknown.
void ReadOptional(const NvmlFunctions& nvml, NvmlDevice dev, NvmlGpu& gpu) {
  int major = 0, minor = 0;
  if (nvml.compute_capability && nvml.compute_capability(dev, &major, &minor) == kNvmlSuccess)
    gpu.compute_capability = major * 10 + minor;
  unsigned value = 0;
  if (nvml.numa_node && nvml.numa_node(dev, &value) == kNvmlSuccess) gpu.numa_node = static_cast<int>(value);
  if (nvml.max_pcie_gen && nvml.max_pcie_gen(dev, &value) == kNvmlSuccess) gpu.pcie_gen = static_cast<int>(value);
  if (nvml.max_pcie_width && nvml.max_pcie_width(dev, &value) == kNvmlSuccess) gpu.pcie_width = static_cast<int>(value);
  if (nvml.power_limit && nvml.power_limit(dev, &value) == kNvmlSuccess && value >= 1000)
    gpu.power_limit_watts = value / 1000.0;  // milliwatts
  if (nvml.cpu_affinity) {
    std::vector<unsigned long> mask(kCpuMaskWords, 0);
    if (nvml.cpu_affinity(dev, kCpuMaskWords, mask.data()) == kNvmlSuccess) gpu.cpu_affinity = CpuListFromMask(mask);
  }
  if (!nvml.nvlink_state) return;
  // Links past the GPU's own count answer NOT_SUPPORTED or INVALID_ARGUMENT: inactive.
  for (unsigned link = 0; link < kNvmlMaxNvLinks; ++link) {
    int active = 0;
    if (nvml.nvlink_state(dev, link, &active) != kNvmlSuccess || active != 1) continue;
    NvmlPciInfo remote{};
    bool known = nvml.nvlink_remote_pci && nvml.nvlink_remote_pci(dev, link, &remote) == kNvmlSuccess;
    remote.bus_id[sizeof remote.bus_id - 1] = '\0';
    gpu.nvlink_peers.push_back(known ? remote.bus_id : "");
  }
}

LinkKind FromLevel(int level) {
  switch (level) {
    case 0: case 10: return LinkKind::kPix;  // same board, or one PCIe switch
    case 20: return LinkKind::kPxb;
    case 30: return LinkKind::kPhb;
    case 40: return LinkKind::kNode;
    default: return LinkKind::kSys;          // 50, or unknown: assume the farthest
  }
}

}  // namespace

StatusOr<NvmlFunctions> LoadNvml(const char* soname) {
  void* lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return Status::Internal(std::string("cannot load ") + soname + " (the NVIDIA driver's NVML): " +
                            (why != nullptr ? why : "dlopen failed"));
  }
  NvmlFunctions f;
  f.library = std::shared_ptr<void>(lib, [](void* h) { dlclose(h); });
  struct Required {
    const char* symbol;
    bool bound;
  };
  const Required required[] = {
      {"nvmlInit_v2", Bind(lib, "nvmlInit_v2", f.init)},
      {"nvmlShutdown", Bind(lib, "nvmlShutdown", f.shutdown)},
      {"nvmlDeviceGetCount_v2", Bind(lib, "nvmlDeviceGetCount_v2", f.device_count)},
      {"nvmlDeviceGetHandleByIndex_v2", Bind(lib, "nvmlDeviceGetHandleByIndex_v2", f.device_by_index)},
      {"nvmlDeviceGetName", Bind(lib, "nvmlDeviceGetName", f.name)},
      {"nvmlDeviceGetMemoryInfo", Bind(lib, "nvmlDeviceGetMemoryInfo", f.memory)},
      {"nvmlDeviceGetPciInfo_v3", Bind(lib, "nvmlDeviceGetPciInfo_v3", f.pci)},
      {"nvmlErrorString", Bind(lib, "nvmlErrorString", f.error_string)},
  };
  for (const Required& r : required)
    if (!r.bound) return Status::Internal(std::string(soname) + " lacks " + r.symbol + "; the NVIDIA driver is too old");
  Bind(lib, "nvmlDeviceGetCudaComputeCapability", f.compute_capability);
  Bind(lib, "nvmlDeviceGetNvLinkState", f.nvlink_state);
  Bind(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", f.nvlink_remote_pci);
  Bind(lib, "nvmlDeviceGetTopologyCommonAncestor", f.common_ancestor);
  Bind(lib, "nvmlDeviceGetNumaNodeId", f.numa_node);
  Bind(lib, "nvmlDeviceGetCpuAffinity", f.cpu_affinity);
  Bind(lib, "nvmlSystemGetDriverVersion", f.driver_version);
  Bind(lib, "nvmlDeviceGetMaxPcieLinkGeneration", f.max_pcie_gen);
  Bind(lib, "nvmlDeviceGetMaxPcieLinkWidth", f.max_pcie_width);
  Bind(lib, "nvmlDeviceGetEnforcedPowerLimit", f.power_limit);
  return f;
}

StatusOr<NvmlSnapshot> QueryNvml(const NvmlFunctions& nvml) {
  if (!nvml.init || !nvml.shutdown || !nvml.device_count || !nvml.device_by_index || !nvml.name || !nvml.memory ||
      !nvml.pci)
    return Status::Internal("the NVML function table lacks a required entry point");
  if (int rc = nvml.init(); rc != kNvmlSuccess) return Status::Internal("nvmlInit_v2 failed: " + Describe(nvml, rc));
  ShutdownOnExit shutdown(nvml);
  unsigned count = 0;
  if (int rc = nvml.device_count(&count); rc != kNvmlSuccess)
    return Status::Internal("nvmlDeviceGetCount_v2 failed: " + Describe(nvml, rc));
  NvmlSnapshot snap;
  std::vector<NvmlDevice> devices(count, nullptr);
  for (unsigned i = 0; i < count; ++i) {
    const std::string at = " for GPU " + std::to_string(i) + " failed: ";
    if (int rc = nvml.device_by_index(i, &devices[i]); rc != kNvmlSuccess)
      return Status::Internal("nvmlDeviceGetHandleByIndex_v2" + at + Describe(nvml, rc));
    NvmlGpu gpu;
    char name[96] = {};  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
    if (int rc = nvml.name(devices[i], name, sizeof name); rc != kNvmlSuccess)
      return Status::Internal("nvmlDeviceGetName" + at + Describe(nvml, rc));
    gpu.name = std::string(name, strnlen(name, sizeof name));
    NvmlMemory memory{};
    if (int rc = nvml.memory(devices[i], &memory); rc != kNvmlSuccess)
      return Status::Internal("nvmlDeviceGetMemoryInfo" + at + Describe(nvml, rc));
    gpu.memory_bytes = static_cast<int64_t>(memory.total);
    NvmlPciInfo pci{};
    if (int rc = nvml.pci(devices[i], &pci); rc != kNvmlSuccess)
      return Status::Internal("nvmlDeviceGetPciInfo_v3" + at + Describe(nvml, rc));
    gpu.pci_bus_id = std::string(pci.bus_id, strnlen(pci.bus_id, sizeof pci.bus_id));
    ReadOptional(nvml, devices[i], gpu);
    snap.gpus.push_back(std::move(gpu));
  }
  char version[80] = {};  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
  if (nvml.driver_version && nvml.driver_version(version, sizeof version) == kNvmlSuccess)
    snap.driver_version = std::string(version, strnlen(version, sizeof version));
  if (nvml.common_ancestor) {
    snap.levels.assign(count, std::vector<int>(count, -1));
    for (unsigned i = 0; i < count; ++i)
      for (unsigned j = 0; j < count; ++j) {
        int level = -1;
        if (i != j && nvml.common_ancestor(devices[i], devices[j], &level) == kNvmlSuccess) snap.levels[i][j] = level;
      }
  }
  return snap;
}

std::vector<QueryGpu> NvmlQueryRows(const NvmlSnapshot& snap) {
  std::vector<QueryGpu> rows;
  for (size_t i = 0; i < snap.gpus.size(); ++i) {
    const NvmlGpu& g = snap.gpus[i];
    rows.push_back({static_cast<int>(i), g.name, g.memory_bytes, NormalizeBusId(g.pci_bus_id), g.compute_capability,
                    snap.driver_version, g.pcie_gen, g.pcie_width, g.power_limit_watts});
  }
  return rows;
}

TopoMatrix NvmlTopology(const NvmlSnapshot& snap) {
  const int n = static_cast<int>(snap.gpus.size());
  std::vector<std::string> bus(n);
  for (int i = 0; i < n; ++i) bus[i] = NormalizeBusId(snap.gpus[i].pci_bus_id);
  // Each active link ends at a peer GPU or at an NVSwitch (or at a peer NVML could not name).
  std::vector<std::vector<int>> direct(n, std::vector<int>(n, 0));
  std::vector<int> switched(n, 0);
  for (int i = 0; i < n; ++i)
    for (const std::string& peer : snap.gpus[i].nvlink_peers) {
      std::string b = NormalizeBusId(peer);
      auto it = b.empty() ? bus.end() : std::find(bus.begin(), bus.end(), b);
      if (it != bus.end() && it - bus.begin() != i) ++direct[i][it - bus.begin()];
      else ++switched[i];
    }
  TopoMatrix topo;
  topo.gpus.resize(n);
  for (int i = 0; i < n; ++i) {
    TopoGpu& row = topo.gpus[i];
    for (int j = 0; j < n; ++j) {
      if (i == j) row.to_gpu.push_back({LinkKind::kSelf, 0});
      else if (direct[i][j] > 0) row.to_gpu.push_back({LinkKind::kNvLink, direct[i][j]});
      else if (switched[i] > 0 && switched[j] > 0) row.to_gpu.push_back({LinkKind::kNvLink, std::min(switched[i], switched[j])});
      else row.to_gpu.push_back({FromLevel(snap.levels.empty() ? -1 : snap.levels[i][j]), 0});
    }
    row.cpu_affinity = snap.gpus[i].cpu_affinity;
    row.numa_node = snap.gpus[i].numa_node;
    if (row.numa_node >= 0) row.numa_affinity = std::to_string(row.numa_node);
  }
  return topo;
}

std::string CpuListFromMask(const std::vector<unsigned long>& words) {
  constexpr int kBits = sizeof(unsigned long) * CHAR_BIT;
  std::string out;
  int n = static_cast<int>(words.size()) * kBits;
  auto bit = [&](int cpu) { return cpu < n && ((words[cpu / kBits] >> (cpu % kBits)) & 1UL) != 0; };
  for (int cpu = 0; cpu < n; ++cpu) {
    if (!bit(cpu)) continue;
    int last = cpu;
    while (bit(last + 1)) ++last;
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
    if (last > cpu) {
      out += '-';
      out += std::to_string(last);
    }
    cpu = last;
  }
  return out;
}

}  // namespace shardplan
