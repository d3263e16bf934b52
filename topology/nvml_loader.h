// NVML, the NVIDIA driver's management library, opened at run time with dlopen so that
// shardplan builds and runs where no driver is installed (no nvml.h exists here either: the
// prototypes and structs below are declared locally from NVML's API 13 header,
// NVIDIA/go-nvml gen/nvml/nvml.h). A missing library or symbol is a Status, never a crash.
//
// The entry points sit in a table of std::functions, so tests drive QueryNvml with a fake
// NVML and no shared library:
//   NvmlFunctions fake = ...;            // fill the lambdas
//   StatusOr<NvmlSnapshot> s = QueryNvml(fake);
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "planner/status.h"
#include "topology/nvidia_smi.h"

namespace shardplan {

// NVML's opaque device handle (nvmlDevice_t). Never dereferenced here.
struct NvmlDeviceOpaque;
using NvmlDevice = NvmlDeviceOpaque*;

// nvmlReturn_t values this code tells apart.
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlErrorNotSupported = 3;
constexpr int kNvmlErrorFunctionNotFound = 13;

// nvmlPciInfo_t, as filled by nvmlDeviceGetPciInfo_v3 and nvmlDeviceGetNvLinkRemotePciInfo_v2.
struct NvmlPciInfo {
  char bus_id_legacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  char bus_id[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE: "00000000:1B:00.0"
};

// nvmlMemory_t (v1): bytes.
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

constexpr int kNvmlMaxNvLinks = 36;  // NVML_NVLINK_MAX_LINKS

// One std::function per NVML entry point, each returning nvmlReturn_t. The first group is
// required; an empty optional one means "not in this driver" and leaves its fields unknown.
struct NvmlFunctions {
  std::function<int()> init;                                     // nvmlInit_v2
  std::function<int()> shutdown;                                 // nvmlShutdown
  std::function<int(unsigned*)> device_count;                    // nvmlDeviceGetCount_v2
  std::function<int(unsigned, NvmlDevice*)> device_by_index;     // nvmlDeviceGetHandleByIndex_v2
  std::function<int(NvmlDevice, char*, unsigned)> name;          // nvmlDeviceGetName
  std::function<int(NvmlDevice, NvmlMemory*)> memory;            // nvmlDeviceGetMemoryInfo
  std::function<int(NvmlDevice, NvmlPciInfo*)> pci;              // nvmlDeviceGetPciInfo_v3
  std::function<const char*(int)> error_string;                  // nvmlErrorString

  std::function<int(NvmlDevice, int*, int*)> compute_capability;           // nvmlDeviceGetCudaComputeCapability
  std::function<int(NvmlDevice, unsigned, int*)> nvlink_state;             // nvmlDeviceGetNvLinkState (1 = active)
  std::function<int(NvmlDevice, unsigned, NvmlPciInfo*)> nvlink_remote_pci;  // nvmlDeviceGetNvLinkRemotePciInfo_v2
  std::function<int(NvmlDevice, NvmlDevice, int*)> common_ancestor;         // nvmlDeviceGetTopologyCommonAncestor
  std::function<int(NvmlDevice, unsigned*)> numa_node;                      // nvmlDeviceGetNumaNodeId
  std::function<int(NvmlDevice, unsigned, unsigned long*)> cpu_affinity;    // nvmlDeviceGetCpuAffinity
  std::function<int(char*, unsigned)> driver_version;                       // nvmlSystemGetDriverVersion
  std::function<int(NvmlDevice, unsigned*)> max_pcie_gen;                   // nvmlDeviceGetMaxPcieLinkGeneration
  std::function<int(NvmlDevice, unsigned*)> max_pcie_width;                 // nvmlDeviceGetMaxPcieLinkWidth
  std::function<int(NvmlDevice, unsigned*)> power_limit;                    // nvmlDeviceGetEnforcedPowerLimit (mW)

  std::shared_ptr<void> library;  // keeps the dlopen handle alive; null for a fake
};

// Opens `soname` and resolves the table. A missing library is Internal with the dlerror text;
// a missing required symbol names it (the driver is older than NVML API 10).
StatusOr<NvmlFunctions> LoadNvml(const char* soname = "libnvidia-ml.so.1");

// nvmlGpuTopologyLevel_t: the closest common ancestor of two GPUs in the PCIe tree.
enum class NvmlTopologyLevel { kInternal = 0, kSingle = 10, kMultiple = 20, kHostBridge = 30, kNode = 40, kSystem = 50 };

struct NvmlGpu {
  std::string name;                 // "NVIDIA H100 80GB HBM3"
  int64_t memory_bytes = 0;         // nvmlMemory_t.total
  std::string pci_bus_id;           // "00000000:1B:00.0"
  int compute_capability = 0;       // 90; 0 if unknown
  int numa_node = -1;               // -1 if unknown
  std::string cpu_affinity;         // "0-55,112-167"; empty if unknown
  int pcie_gen = 0, pcie_width = 0;  // maximum link; 0 if unknown
  double power_limit_watts = 0;     // enforced board power limit; 0 if unknown
  std::vector<std::string> nvlink_peers;  // remote PCI address of each active NVLink
};

struct NvmlSnapshot {
  std::string driver_version;   // "550.90.07"; empty if unknown
  std::vector<NvmlGpu> gpus;    // by NVML index
  // levels[i][j] for i != j; empty when nvmlDeviceGetTopologyCommonAncestor is missing.
  std::vector<std::vector<int>> levels;
};

// Initialises NVML, reads every GPU, and shuts it down again.
StatusOr<NvmlSnapshot> QueryNvml(const NvmlFunctions& nvml);

// The snapshot in nvidia-smi's terms, for topology/discover.h. The `topo -m` matrix: NV<n> for
// n links between two GPUs, or, when both reach NVSwitches, the smaller switch-link count (every
// pair of an NVSwitch node shows NV18, as nvidia-smi prints it); otherwise the PCIe level of the
// common ancestor (SINGLE -> PIX ... SYSTEM -> SYS; SYS when unknown).
TopoMatrix NvmlTopology(const NvmlSnapshot& snap);
// The --query-gpu rows: index, name, memory, bus id, compute capability, driver, PCIe link.
std::vector<QueryGpu> NvmlQueryRows(const NvmlSnapshot& snap);

// A CPU bitmask (nvmlDeviceGetCpuAffinity's words) as a list: "0-55,112-167".
std::string CpuListFromMask(const std::vector<unsigned long>& words);

}  // namespace shardplan
