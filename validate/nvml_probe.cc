#include "validate/nvml_probe.h"

#include <dlfcn.h>
#include <unistd.h>

#include <vector>

namespace shardplan::validate {
namespace {

// Declared here because no nvml.h is installed; layouts from nvml.h (API 12/13).
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
struct NvmlProcessInfo {  // nvmlProcessInfo_t, as filled by ..._v3
  unsigned int pid;
  unsigned long long used_gpu_memory;  // NVML_VALUE_NOT_AVAILABLE (all ones) when unknown
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

}  // namespace

struct NvmlProbe::Api {
  void* lib = nullptr;
  NvmlDevice device = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*by_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*processes)(NvmlDevice, unsigned int*, NvmlProcessInfo*) = nullptr;
};

template <typename F>
static bool Load(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

std::unique_ptr<NvmlProbe> NvmlProbe::Open(const std::string& pci_bus_id) {
  auto api = std::make_unique<Api>();
  api->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (api->lib == nullptr) return nullptr;
  const bool loaded = Load(api->lib, "nvmlInit_v2", &api->init) &&
                      Load(api->lib, "nvmlShutdown", &api->shutdown) &&
                      Load(api->lib, "nvmlDeviceGetHandleByPciBusId_v2", &api->by_bus_id) &&
                      Load(api->lib, "nvmlDeviceGetComputeRunningProcesses_v3", &api->processes);
  if (!loaded || api->init() != kNvmlSuccess) {
    dlclose(api->lib);
    return nullptr;
  }
  if (api->by_bus_id(pci_bus_id.c_str(), &api->device) != kNvmlSuccess) {
    api->shutdown();
    dlclose(api->lib);
    return nullptr;
  }
  std::unique_ptr<NvmlProbe> probe(new NvmlProbe());
  probe->api_ = std::move(api);
  return probe;
}

NvmlProbe::~NvmlProbe() {
  if (api_ && api_->lib) {
    api_->shutdown();
    dlclose(api_->lib);
  }
}

int64_t NvmlProbe::ProcessBytes() const {
  std::vector<NvmlProcessInfo> infos(64);
  unsigned int count = static_cast<unsigned int>(infos.size());
  NvmlReturn rc = api_->processes(api_->device, &count, infos.data());
  if (rc == kNvmlInsufficientSize) {  // more processes than slots: `count` says how many
    infos.resize(count + 16);
    count = static_cast<unsigned int>(infos.size());
    rc = api_->processes(api_->device, &count, infos.data());
  }
  if (rc != kNvmlSuccess) return -1;
  const unsigned int me = static_cast<unsigned int>(getpid());
  for (unsigned int i = 0; i < count; ++i) {
    if (infos[i].pid != me) continue;
    if (infos[i].used_gpu_memory == ~0ull) return -1;
    return static_cast<int64_t>(infos[i].used_gpu_memory);
  }
  return -1;
}

}  // namespace shardplan::validate
