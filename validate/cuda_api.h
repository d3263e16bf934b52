// CudaApi: the CUDA driver API (libcuda.so.1) and NCCL (libnccl.so.2), loaded when the CUDA
// backend opens rather than linked. The validator then builds on any machine, needs no CUDA
// toolkit, and runs against whatever driver and NCCL the GPU machine has: the driver API is
// the one every driver serves (a CUDA runtime linked in would need a driver at least as new as
// the toolkit), and the NCCL PyTorch brings (its wheel's nvidia/nccl/lib) is the one its
// training would use. Functions a NCCL release lacks are null and the backend works around
// them (ncclAlltoAll, NCCL 2.28, becomes grouped sends and receives).
//
// The handful of types and constants used are declared here with the values and layouts of
// cuda.h and nccl.h; tests/validate/cuda_api_abi_test.cc checks them against those headers
// where a toolkit is installed.
#pragma once

#include <climits>
#include <cstddef>
#include <string>

#include "planner/status.h"

namespace shardplan::validate::cuda {

// ---- Driver API (cuda.h) ----
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
constexpr CUresult kCuSuccess = 0;
constexpr CUresult kCuErrorOutOfMemory = 2;       // CUDA_ERROR_OUT_OF_MEMORY
constexpr CUresult kCuErrorNoDevice = 100;        // CUDA_ERROR_NO_DEVICE
constexpr CUresult kCuErrorNotReady = 600;        // CUDA_ERROR_NOT_READY
constexpr unsigned kCuStreamNonBlocking = 0x1;    // CU_STREAM_NON_BLOCKING

// ---- NCCL (nccl.h) ----
using NcclResult = int;
constexpr NcclResult kNcclSuccess = 0;
constexpr NcclResult kNcclInProgress = 7;         // non-blocking communicators
using NcclComm = struct NcclCommOpaque*;
struct NcclUniqueId {
  char internal[128];                             // NCCL_UNIQUE_ID_BYTES
};
enum NcclDataType : int { kNcclInt8 = 0, kNcclFloat32 = 7, kNcclFloat64 = 8, kNcclBfloat16 = 9 };
constexpr int kNcclSum = 0;                       // ncclSum
constexpr int kNcclSplitNoColor = -1;             // NCCL_SPLIT_NOCOLOR
// ncclConfig_t up to splitShare, the fields of NCCL 2.18. NCCL reads `size` bytes of the
// struct and gives fields past them, and those a lower `version` lacks, their defaults.
struct NcclConfig {
  size_t size = sizeof(NcclConfig);
  unsigned int magic = 0xcafebeef;
  unsigned int version = 21800;                   // NCCL_VERSION(2, 18, 0)
  int blocking = INT_MIN;                         // NCCL_CONFIG_UNDEF_INT: NCCL's default
  int cga_cluster_size = INT_MIN;
  int min_ctas = INT_MIN;
  int max_ctas = INT_MIN;
  const char* net_name = nullptr;
  int split_share = INT_MIN;
};

struct Api {
  // Driver. cuEventElapsedTime is the _v2 entry point where the driver has it (CUDA 12.8+).
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int*) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetPCIBusId)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  CUresult (*cuMemGetInfo)(size_t*, size_t*) = nullptr;
  CUresult (*cuStreamCreate)(CUstream*, unsigned) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventQuery)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;

  // NCCL. ncclAlltoAll is null before NCCL 2.28.
  NcclResult (*ncclGetVersion)(int*) = nullptr;
  const char* (*ncclGetErrorString)(NcclResult) = nullptr;
  const char* (*ncclGetLastError)(NcclComm) = nullptr;
  NcclResult (*ncclGetUniqueId)(NcclUniqueId*) = nullptr;
  NcclResult (*ncclCommInitRankConfig)(NcclComm*, int, NcclUniqueId, int, NcclConfig*) = nullptr;
  NcclResult (*ncclCommSplit)(NcclComm, int, int, NcclComm*, NcclConfig*) = nullptr;
  NcclResult (*ncclCommGetAsyncError)(NcclComm, NcclResult*) = nullptr;
  NcclResult (*ncclCommCount)(NcclComm, int*) = nullptr;
  NcclResult (*ncclCommUserRank)(NcclComm, int*) = nullptr;
  NcclResult (*ncclCommFinalize)(NcclComm) = nullptr;
  NcclResult (*ncclCommDestroy)(NcclComm) = nullptr;
  NcclResult (*ncclCommAbort)(NcclComm) = nullptr;
  NcclResult (*ncclAllReduce)(const void*, void*, size_t, int, int, NcclComm, CUstream) = nullptr;
  NcclResult (*ncclAllGather)(const void*, void*, size_t, int, NcclComm, CUstream) = nullptr;
  NcclResult (*ncclReduceScatter)(const void*, void*, size_t, int, int, NcclComm, CUstream) = nullptr;
  NcclResult (*ncclAlltoAll)(const void*, void*, size_t, int, NcclComm, CUstream) = nullptr;
  NcclResult (*ncclSend)(const void*, size_t, int, int, NcclComm, CUstream) = nullptr;
  NcclResult (*ncclRecv)(void*, size_t, int, int, NcclComm, CUstream) = nullptr;
  NcclResult (*ncclGroupStart)() = nullptr;
  NcclResult (*ncclGroupEnd)() = nullptr;

  int driver_version = 0;   // the CUDA version the driver serves, 1000 x major + 10 x minor
  int nccl_version = 0;     // NCCL_VERSION_CODE of the library loaded
  std::string nccl_path;    // where it was loaded from (the report's device line names it)
};

// The driver library named (the first that loads): "libcuda.so.1" by default.
// NCCL: $SHARDPLAN_NCCL_LIBRARY where set, else "libnccl.so.2" on the loader's search path.
// Loaded once per process. Errors say which library failed and why; a missing driver
// library is reported as "no usable GPU", as the worker's environment errors are.
StatusOr<const Api*> LoadApi();

// Load one library into `api`, from the file given (tests: one that is not there, or not
// the right one).
Status LoadDriver(const std::string& file, Api& api);
Status LoadNccl(const std::string& file, Api& api);

// "1.2.3" from NCCL's version code (2.9 on: major x 10000 + minor x 100 + patch).
std::string NcclVersionText(int code);

}  // namespace shardplan::validate::cuda
