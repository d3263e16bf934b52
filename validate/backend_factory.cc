#include "validate/device_backend.h"
#include "validate/host_backend.h"

#if SP_HAVE_CUDA
#include "validate/cuda_backend.h"
#endif

namespace shardplan::validate {

StatusOr<std::unique_ptr<DeviceBackend>> MakeBackend(std::string_view name, int64_t capacity_bytes) {
  if (name == "host") return std::unique_ptr<DeviceBackend>(new HostBackend(capacity_bytes));
  if (name != "cuda") {
    return Status::BadInput("--backend " + std::string(name) + ": expected cuda or host");
  }
#if SP_HAVE_CUDA
  return MakeCudaBackend();
#else
  return Status::Internal(
      "--backend cuda: this build has no CUDA (CMake found no CUDA toolkit or NCCL); "
      "rebuild with them, or rehearse with --backend host");
#endif
}

}  // namespace shardplan::validate
