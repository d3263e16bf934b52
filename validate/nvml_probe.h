// NvmlProbe: this process's memory on its GPU as NVML reports it -- what nvidia-smi shows
// for the process, the number the plan's `peak_bytes` predicts. NVML is opened with dlopen
// ("libnvidia-ml.so.1" ships with the driver; there is no header or stub in the toolkit,
// ecosystem.md 5.2), so the worker runs, without this reading, where it is missing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace shardplan::validate {

class NvmlProbe {
 public:
  // nullptr when the library, its symbols or the device at `pci_bus_id` are unavailable.
  static std::unique_ptr<NvmlProbe> Open(const std::string& pci_bus_id);
  ~NvmlProbe();
  NvmlProbe(const NvmlProbe&) = delete;
  NvmlProbe& operator=(const NvmlProbe&) = delete;

  // Bytes used by this process on the device; -1 when NVML cannot say.
  int64_t ProcessBytes() const;

 private:
  NvmlProbe() = default;
  struct Api;
  std::unique_ptr<Api> api_;
};

}  // namespace shardplan::validate
