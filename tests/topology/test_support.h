// Test support for tests/topology: the captured nvidia-smi outputs under data/ (data/README.md
// says where each came from), and a fake NVML: GPUs described as plain data, served through the
// NvmlFunctions table the real library fills (topology/nvml_loader.h), with no shared library.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "topology/nvml_loader.h"

namespace shardplan::testing {

inline std::string DataPath(const std::string& name) {
  return std::string(SHARDPLAN_SOURCE_DIR) + "/tests/topology/data/" + name;
}

inline std::string ReadData(const std::string& name) {
  std::ifstream in(DataPath(name), std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct FakeGpu {
  std::string name;
  unsigned long long memory_bytes = 0;
  std::string bus_id;                      // "00000000:1B:00.0"
  int cc_major = 0, cc_minor = 0;
  int numa_node = -1;                      // -1: nvmlDeviceGetNumaNodeId says NOT_SUPPORTED
  std::vector<int> cpus;                   // CPUs in the affinity mask
  std::vector<std::string> nvlink_remote;  // remote bus id of each active link
  unsigned pcie_gen = 0, pcie_width = 0;
  unsigned power_limit_mw = 0;             // 0: nvmlDeviceGetEnforcedPowerLimit says NOT_SUPPORTED
};

class FakeNvml {
 public:
  std::vector<FakeGpu> gpus;
  std::vector<std::vector<int>> levels;  // nvmlGpuTopologyLevel_t per pair
  std::string driver = "550.90.07";
  int init_result = kNvmlSuccess;
  int init_calls = 0, shutdown_calls = 0;

  // The table; `this` must outlive it.
  NvmlFunctions Table() {
    NvmlFunctions f;
    f.init = [this] { ++init_calls; return init_result; };
    f.shutdown = [this] { ++shutdown_calls; return kNvmlSuccess; };
    f.error_string = [](int rc) { return rc == 9 ? "Driver Not Loaded" : "Unknown Error"; };
    f.device_count = [this](unsigned* n) { *n = static_cast<unsigned>(gpus.size()); return kNvmlSuccess; };
    f.device_by_index = [this](unsigned i, NvmlDevice* d) {
      if (i >= gpus.size()) return 2;  // NVML_ERROR_INVALID_ARGUMENT
      *d = reinterpret_cast<NvmlDevice>(static_cast<uintptr_t>(i + 1));
      return kNvmlSuccess;
    };
    f.name = [this](NvmlDevice d, char* buf, unsigned len) {
      std::strncpy(buf, At(d).name.c_str(), len - 1);
      return kNvmlSuccess;
    };
    f.memory = [this](NvmlDevice d, NvmlMemory* m) {
      *m = {At(d).memory_bytes, At(d).memory_bytes, 0};
      return kNvmlSuccess;
    };
    f.pci = [this](NvmlDevice d, NvmlPciInfo* p) { return FillPci(At(d).bus_id, p); };
    f.compute_capability = [this](NvmlDevice d, int* major, int* minor) {
      *major = At(d).cc_major, *minor = At(d).cc_minor;
      return kNvmlSuccess;
    };
    f.numa_node = [this](NvmlDevice d, unsigned* node) {
      if (At(d).numa_node < 0) return kNvmlErrorNotSupported;
      *node = static_cast<unsigned>(At(d).numa_node);
      return kNvmlSuccess;
    };
    f.cpu_affinity = [this](NvmlDevice d, unsigned words, unsigned long* mask) {
      for (int cpu : At(d).cpus)
        if (static_cast<unsigned>(cpu / 64) < words) mask[cpu / 64] |= 1UL << (cpu % 64);
      return kNvmlSuccess;
    };
    f.nvlink_state = [this](NvmlDevice d, unsigned link, int* active) {
      if (link >= At(d).nvlink_remote.size()) return kNvmlErrorNotSupported;
      *active = 1;
      return kNvmlSuccess;
    };
    f.nvlink_remote_pci = [this](NvmlDevice d, unsigned link, NvmlPciInfo* p) {
      return FillPci(At(d).nvlink_remote[link], p);
    };
    f.common_ancestor = [this](NvmlDevice a, NvmlDevice b, int* level) {
      *level = levels[Index(a)][Index(b)];
      return kNvmlSuccess;
    };
    f.driver_version = [this](char* buf, unsigned len) {
      std::strncpy(buf, driver.c_str(), len - 1);
      return kNvmlSuccess;
    };
    f.max_pcie_gen = [this](NvmlDevice d, unsigned* v) { *v = At(d).pcie_gen; return kNvmlSuccess; };
    f.max_pcie_width = [this](NvmlDevice d, unsigned* v) { *v = At(d).pcie_width; return kNvmlSuccess; };
    f.power_limit = [this](NvmlDevice d, unsigned* mw) {
      if (At(d).power_limit_mw == 0) return kNvmlErrorNotSupported;
      *mw = At(d).power_limit_mw;
      return kNvmlSuccess;
    };
    return f;
  }

 private:
  static size_t Index(NvmlDevice d) { return reinterpret_cast<uintptr_t>(d) - 1; }
  const FakeGpu& At(NvmlDevice d) const { return gpus.at(Index(d)); }
  static int FillPci(const std::string& bus_id, NvmlPciInfo* p) {
    std::memset(p, 0, sizeof *p);
    std::strncpy(p->bus_id, bus_id.c_str(), sizeof p->bus_id - 1);
    return kNvmlSuccess;
  }
};

// Eight H100 SXM as on a DGX H100: 18 active NVLinks each, all to the four NVSwitches
// (5+5+4+4 links, per NCCL's topology dump), 81559 MiB each, PCIe Gen5 x16, two sockets.
inline FakeNvml DgxH100() {
  static const char* kBus[] = {"00000000:1B:00.0", "00000000:43:00.0", "00000000:52:00.0", "00000000:61:00.0",
                               "00000000:9D:00.0", "00000000:C3:00.0", "00000000:D1:00.0", "00000000:DF:00.0"};
  static const char* kSwitches[] = {"00000000:05:00.0", "00000000:06:00.0", "00000000:07:00.0", "00000000:08:00.0"};
  FakeNvml f;
  for (int i = 0; i < 8; ++i) {
    FakeGpu g{"NVIDIA H100 80GB HBM3", 81559ULL << 20, kBus[i], 9, 0, i < 4 ? 0 : 1, {}, {}, 5, 16};
    for (int cpu = 0; cpu < 224; ++cpu)
      if ((cpu % 112 < 56) == (i < 4)) g.cpus.push_back(cpu);
    for (int s = 0; s < 4; ++s)
      for (int k = 0; k < (s < 2 ? 5 : 4); ++k) g.nvlink_remote.push_back(kSwitches[s]);
    f.gpus.push_back(g);
  }
  f.levels.assign(8, std::vector<int>(8, 0));
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) f.levels[i][j] = (i < 4) == (j < 4) ? 40 : 50;
  return f;
}

}  // namespace shardplan::testing
