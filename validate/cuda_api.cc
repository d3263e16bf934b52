#include "validate/cuda_api.h"

#include <dlfcn.h>

#include <cstdlib>

namespace shardplan::validate::cuda {
namespace {

std::string DlError() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown error";
}

// Resolves `name` into *out; false (and *out null) when the library lacks it.
template <typename F>
bool Resolve(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

// Resolves every name it is called with; `missing` keeps the first the library lacks.
struct Need {
  void* lib;
  std::string missing;
  template <typename F>
  Need& operator()(const char* name, F* out) {
    if (!Resolve(lib, name, out) && missing.empty()) missing = name;
    return *this;
  }
};

}  // namespace

Status LoadDriver(const std::string& file, Api& api) {
  void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    return Status::Internal("no usable GPU (" + file + ", the NVIDIA driver's CUDA library, does not load: " +
                            DlError() + "); rehearse with --backend host");
  }
  Need need{lib, {}};
  need("cuInit", &api.cuInit)("cuDriverGetVersion", &api.cuDriverGetVersion)("cuDeviceGetCount", &api.cuDeviceGetCount)(
      "cuDeviceGet", &api.cuDeviceGet)("cuDeviceGetName", &api.cuDeviceGetName)(
      "cuDeviceGetPCIBusId", &api.cuDeviceGetPCIBusId)("cuDevicePrimaryCtxRetain", &api.cuDevicePrimaryCtxRetain)(
      "cuDevicePrimaryCtxRelease_v2", &api.cuDevicePrimaryCtxRelease)("cuCtxSetCurrent", &api.cuCtxSetCurrent)(
      "cuMemAlloc_v2", &api.cuMemAlloc)("cuMemFree_v2", &api.cuMemFree)("cuMemsetD8Async", &api.cuMemsetD8Async)(
      "cuMemGetInfo_v2", &api.cuMemGetInfo)("cuStreamCreate", &api.cuStreamCreate)(
      "cuStreamSynchronize", &api.cuStreamSynchronize)("cuStreamDestroy_v2", &api.cuStreamDestroy)(
      "cuEventCreate", &api.cuEventCreate)("cuEventRecord", &api.cuEventRecord)("cuEventQuery", &api.cuEventQuery)(
      "cuEventDestroy_v2", &api.cuEventDestroy)("cuGetErrorName", &api.cuGetErrorName)(
      "cuGetErrorString", &api.cuGetErrorString);
  // CUDA 12.8 drivers added cuEventElapsedTime_v2; older ones have only the first version.
  if (!Resolve(lib, "cuEventElapsedTime_v2", &api.cuEventElapsedTime)) need("cuEventElapsedTime", &api.cuEventElapsedTime);
  if (!need.missing.empty()) {
    dlclose(lib);
    return Status::Internal("no usable GPU (" + file + " lacks " + need.missing +
                            ": not a CUDA driver library); rehearse with --backend host");
  }
  if (api.cuDriverGetVersion(&api.driver_version) != kCuSuccess) api.driver_version = 0;
  return Status::Ok();
}

Status LoadNccl(const std::string& file, Api& api) {
  void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    return Status::Internal("NCCL does not load (" + DlError() +
                            "): put the folder of a libnccl.so.2 on LD_LIBRARY_PATH (PyTorch's wheel ships one in "
                            "site-packages/nvidia/nccl/lib) or name the file in SHARDPLAN_NCCL_LIBRARY, "
                            "or rehearse with --backend host");
  }
  Need need{lib, {}};
  need("ncclGetVersion", &api.ncclGetVersion)("ncclGetErrorString", &api.ncclGetErrorString)(
      "ncclGetLastError", &api.ncclGetLastError)("ncclGetUniqueId", &api.ncclGetUniqueId)(
      "ncclCommInitRankConfig", &api.ncclCommInitRankConfig)("ncclCommSplit", &api.ncclCommSplit)(
      "ncclCommGetAsyncError", &api.ncclCommGetAsyncError)("ncclCommCount", &api.ncclCommCount)(
      "ncclCommUserRank", &api.ncclCommUserRank)("ncclCommFinalize", &api.ncclCommFinalize)(
      "ncclCommDestroy", &api.ncclCommDestroy)("ncclCommAbort", &api.ncclCommAbort)("ncclAllReduce", &api.ncclAllReduce)(
      "ncclAllGather", &api.ncclAllGather)("ncclReduceScatter", &api.ncclReduceScatter)("ncclSend", &api.ncclSend)(
      "ncclRecv", &api.ncclRecv)("ncclGroupStart", &api.ncclGroupStart)("ncclGroupEnd", &api.ncclGroupEnd);
  Resolve(lib, "ncclAlltoAll", &api.ncclAlltoAll);  // NCCL 2.28 on; grouped send/recv before
  if (!need.missing.empty()) {
    dlclose(lib);
    // ncclCommSplit (2.18) is the newest of the required functions.
    return Status::Internal(file + " lacks " + need.missing +
                            ": the validator needs NCCL 2.18 or later (non-blocking communicators and ncclCommSplit)");
  }
  if (api.ncclGetVersion(&api.nccl_version) != kNcclSuccess) api.nccl_version = 0;
  char where[4096] = {};
  if (dlinfo(lib, RTLD_DI_ORIGIN, where) == 0 && where[0] != '\0') {
    api.nccl_path = std::string(where) + "/" + file.substr(file.rfind('/') + 1);
  } else {
    api.nccl_path = file;
  }
  return Status::Ok();
}

StatusOr<const Api*> LoadApi() {
  // Loaded once: dlopen keeps the libraries for the life of the process anyway.
  static const StatusOr<Api> loaded = []() -> StatusOr<Api> {
    Api api;
    SP_RETURN_IF_ERROR(LoadDriver("libcuda.so.1", api));
    const char* nccl = std::getenv("SHARDPLAN_NCCL_LIBRARY");
    SP_RETURN_IF_ERROR(LoadNccl(nccl != nullptr && *nccl != '\0' ? nccl : "libnccl.so.2", api));
    return api;
  }();
  if (!loaded.ok()) return loaded.status();
  return &loaded.value();
}

std::string NcclVersionText(int code) {
  if (code <= 0) return "unknown";
  const int major = code / 10000, minor = code / 100 % 100, patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace shardplan::validate::cuda
