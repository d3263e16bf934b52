#include "validate/cuda_backend.h"
#include "validate/device_backend.h"
#include "validate/host_backend.h"

namespace shardplan::validate {

StatusOr<std::unique_ptr<DeviceBackend>> MakeBackend(std::string_view name, int64_t capacity_bytes) {
  if (name == "host") return std::unique_ptr<DeviceBackend>(new HostBackend(capacity_bytes));
  if (name != "cuda") {
    return Status::BadInput("--backend " + std::string(name) + ": expected cuda or host");
  }
  return MakeCudaBackend();
}

}  // namespace shardplan::validate
