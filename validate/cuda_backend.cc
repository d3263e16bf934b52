#include "validate/cuda_backend.h"

#include <chrono>
#include <cstdint>
#include <thread>
#include <unordered_set>
#include <vector>

#include "validate/check.h"
#include "validate/cuda_api.h"
#include "validate/nvml_probe.h"

#define SP_CU_CHECK(call)                                                     \
  do {                                                                        \
    const cuda::CUresult sp_cu_rc_ = (call);                                  \
    if (sp_cu_rc_ != cuda::kCuSuccess) {                                      \
      return CallFailed(__FILE__, __LINE__, #call, CuError(*api_, sp_cu_rc_)); \
    }                                                                         \
  } while (0)

// Non-blocking communicators return ncclInProgress from most calls; WaitReady follows up.
#define SP_NCCL_CHECK(call)                                                          \
  do {                                                                               \
    const cuda::NcclResult sp_nccl_rc_ = (call);                                     \
    if (sp_nccl_rc_ != cuda::kNcclSuccess && sp_nccl_rc_ != cuda::kNcclInProgress) { \
      return CallFailed(__FILE__, __LINE__, #call, NcclError(*api_, sp_nccl_rc_));   \
    }                                                                                \
  } while (0)

namespace shardplan::validate {
namespace {

using cuda::Api;
using cuda::NcclComm;

std::string CuError(const Api& api, cuda::CUresult rc) {
  const char* name = nullptr;
  const char* text = nullptr;
  api.cuGetErrorName(rc, &name);
  api.cuGetErrorString(rc, &text);
  return std::string(name != nullptr ? name : "CUDA error " + std::to_string(rc)) + (text != nullptr ? std::string(": ") + text : "");
}

std::string NcclError(const Api& api, cuda::NcclResult rc) {
  std::string text = api.ncclGetErrorString(rc);
  const char* last = api.ncclGetLastError(nullptr);
  if (last != nullptr && *last != '\0') text += std::string(" (") + last + ")";
  return text;
}

int TypeOf(int elem) {
  switch (elem) {
    case 1: return cuda::kNcclInt8;
    case 2: return cuda::kNcclBfloat16;
    case 8: return cuda::kNcclFloat64;
    default: return cuda::kNcclFloat32;
  }
}

cuda::NcclConfig NonBlockingConfig() {
  cuda::NcclConfig config;
  config.blocking = 0;
  // splitShare stays off: every PyTorch process group owns its NCCL buffers
  // (memory-model.md 4.3), and the rehearsal must pay what the real run pays.
  return config;
}

void* AsPointer(cuda::CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }
cuda::CUdeviceptr AsDevice(void* p) { return static_cast<cuda::CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

class CudaBackend final : public DeviceBackend {
 public:
  ~CudaBackend() override;
  std::string_view Name() const override { return "cuda"; }
  Status Open(int local_rank) override;
  Status Connect(Communicator& world, const Deadline& deadline) override;
  std::string DeviceName() const override { return name_; }
  bool MeasuresRuntimeOverheads() const override { return true; }
  StatusOr<DeviceBuffer> Allocate(int64_t bytes) override;
  Status Free(DeviceBuffer buffer) override;
  StatusOr<MemorySample> Sample() override;
  StatusOr<int> CreateGroup(int color, int key, const Deadline& deadline) override;
  int GroupSize(int group) const override { return group >= 0 ? sizes_[static_cast<size_t>(group)] : 1; }
  StatusOr<double> Run(int group, const CollectiveCall& call, const Deadline& deadline) override;
  void Abort() override;
  Status Shutdown(const Deadline& deadline) override;

 private:
  Status WaitReady(NcclComm comm, const char* what, const Deadline& deadline);
  Status WaitDone(NcclComm comm, const char* what, const Deadline& deadline);
  Status Enqueue(int group, const CollectiveCall& call, const Deadline& deadline);

  const Api* api_ = nullptr;
  cuda::CUdevice device_ = -1;
  cuda::CUcontext context_ = nullptr;
  std::string name_;
  cuda::CUstream stream_ = nullptr;
  cuda::CUevent start_ = nullptr;
  cuda::CUevent stop_ = nullptr;
  NcclComm world_ = nullptr;
  std::vector<NcclComm> groups_;
  std::vector<int> sizes_, ranks_;
  std::unordered_set<void*> buffers_;
  std::unique_ptr<NvmlProbe> nvml_;
  bool aborted_ = false;
};

CudaBackend::~CudaBackend() {
  if (api_ == nullptr) return;
  if (world_ != nullptr || !groups_.empty()) Abort();
  // Errors here cannot be returned; the driver reclaims whatever is left at exit.
  for (void* p : buffers_) api_->cuMemFree(AsDevice(p));
  if (start_) api_->cuEventDestroy(start_);
  if (stop_) api_->cuEventDestroy(stop_);
  if (stream_) api_->cuStreamDestroy(stream_);
  if (context_) api_->cuDevicePrimaryCtxRelease(device_);
}

Status CudaBackend::Open(int local_rank) {
  SP_ASSIGN_OR_RETURN(api_, cuda::LoadApi());
  const cuda::CUresult init = api_->cuInit(0);
  if (init == cuda::kCuErrorNoDevice) {
    return Status::Internal("no usable GPU (cuInit: " + CuError(*api_, init) + "); rehearse with --backend host");
  }
  SP_CU_CHECK(init);
  int count = 0;
  SP_CU_CHECK(api_->cuDeviceGetCount(&count));
  if (count == 0) return Status::Internal("no usable GPU (the driver sees none); rehearse with --backend host");
  if (local_rank >= count) {
    return Status::Internal("local rank " + std::to_string(local_rank) + " needs GPU " +
                            std::to_string(local_rank) + " but " + std::to_string(count) +
                            " are visible (check CUDA_VISIBLE_DEVICES and ranks per node)");
  }
  SP_CU_CHECK(api_->cuDeviceGet(&device_, local_rank));
  // The primary context, the one the CUDA runtime inside NCCL (and PyTorch) uses: created
  // now, so that it counts from the first reading.
  SP_CU_CHECK(api_->cuDevicePrimaryCtxRetain(&context_, device_));
  SP_CU_CHECK(api_->cuCtxSetCurrent(context_));
  char name[256] = {};
  SP_CU_CHECK(api_->cuDeviceGetName(name, sizeof(name) - 1, device_));
  char bus[32] = {};
  SP_CU_CHECK(api_->cuDeviceGetPCIBusId(bus, sizeof(bus) - 1, device_));
  const int driver = api_->driver_version;
  name_ = "GPU " + std::to_string(local_rank) + " " + name + " [" + bus + "], CUDA driver " +
          std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10) + ", NCCL " +
          cuda::NcclVersionText(api_->nccl_version) + " (" + api_->nccl_path + ")";
  SP_CU_CHECK(api_->cuStreamCreate(&stream_, cuda::kCuStreamNonBlocking));
  SP_CU_CHECK(api_->cuEventCreate(&start_, 0));
  SP_CU_CHECK(api_->cuEventCreate(&stop_, 0));
  nvml_ = NvmlProbe::Open(bus);
  return Status::Ok();
}

Status CudaBackend::Connect(Communicator& world, const Deadline& deadline) {
  struct {
    cuda::NcclUniqueId id;
    int ok;
  } boot{};
  Status made;
  if (world.rank() == 0) {
    const cuda::NcclResult rc = api_->ncclGetUniqueId(&boot.id);
    if (rc != cuda::kNcclSuccess) made = CallFailed(__FILE__, __LINE__, "ncclGetUniqueId(&boot.id)", NcclError(*api_, rc));
    boot.ok = made.ok() ? 1 : 0;
  }
  // Broadcast even when the id failed: the other ranks are already waiting in it.
  SP_RETURN_IF_ERROR(world.Broadcast(&boot, sizeof(boot), 0));
  SP_RETURN_IF_ERROR(made);
  if (!boot.ok) return Status::Internal("rank 0 could not create the NCCL unique id");
  cuda::NcclConfig config = NonBlockingConfig();
  SP_NCCL_CHECK(api_->ncclCommInitRankConfig(&world_, world.size(), boot.id, world.rank(), &config));
  return WaitReady(world_, "ncclCommInitRankConfig", deadline);
}

Status CudaBackend::WaitReady(NcclComm comm, const char* what, const Deadline& deadline) {
  while (true) {
    cuda::NcclResult state = cuda::kNcclSuccess;
    SP_NCCL_CHECK(api_->ncclCommGetAsyncError(comm, &state));
    if (state == cuda::kNcclSuccess) return Status::Ok();
    if (state != cuda::kNcclInProgress) {
      Abort();
      return CallFailed(__FILE__, __LINE__, what, NcclError(*api_, state));
    }
    if (deadline.Passed()) {
      Abort();
      return Status::Internal(std::string(what) +
                              ": still in progress at --timeout; NCCL communicators aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// Waits for the stop event, watching the communicator: a peer that died or hangs shows as
// an async error or as the deadline passing, and both abort instead of waiting forever.
Status CudaBackend::WaitDone(NcclComm comm, const char* what, const Deadline& deadline) {
  while (true) {
    const cuda::CUresult rc = api_->cuEventQuery(stop_);
    if (rc == cuda::kCuSuccess) return Status::Ok();
    if (rc != cuda::kCuErrorNotReady) SP_CU_CHECK(rc);
    cuda::NcclResult state = cuda::kNcclSuccess;
    SP_NCCL_CHECK(api_->ncclCommGetAsyncError(comm, &state));
    if (state != cuda::kNcclSuccess && state != cuda::kNcclInProgress) {
      Abort();
      return CallFailed(__FILE__, __LINE__, what, NcclError(*api_, state));
    }
    if (deadline.Passed()) {
      Abort();
      return Status::Internal(std::string(what) +
                              " did not finish by --timeout (a peer rank hung or died); "
                              "NCCL communicators aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

StatusOr<DeviceBuffer> CudaBackend::Allocate(int64_t bytes) {
  cuda::CUdeviceptr p = 0;
  const cuda::CUresult rc = api_->cuMemAlloc(&p, static_cast<size_t>(bytes));
  if (rc == cuda::kCuErrorOutOfMemory) {
    return CallFailed(__FILE__, __LINE__, "cuMemAlloc", CuError(*api_, rc), Code::kNegative);
  }
  SP_CU_CHECK(rc);
  buffers_.insert(AsPointer(p));
  // cuMemAlloc may only reserve address space; writing makes every page resident.
  SP_CU_CHECK(api_->cuMemsetD8Async(p, 0, static_cast<size_t>(bytes), stream_));
  SP_CU_CHECK(api_->cuStreamSynchronize(stream_));
  return DeviceBuffer{AsPointer(p), bytes};
}

Status CudaBackend::Free(DeviceBuffer buffer) {
  SP_CU_CHECK(api_->cuMemFree(AsDevice(buffer.ptr)));
  buffers_.erase(buffer.ptr);
  return Status::Ok();
}

StatusOr<MemorySample> CudaBackend::Sample() {
  size_t free_bytes = 0, total_bytes = 0;
  SP_CU_CHECK(api_->cuMemGetInfo(&free_bytes, &total_bytes));
  MemorySample s;
  s.free_bytes = static_cast<int64_t>(free_bytes);
  s.total_bytes = static_cast<int64_t>(total_bytes);
  s.used_bytes = s.total_bytes - s.free_bytes;
  s.process_bytes = nvml_ ? nvml_->ProcessBytes() : -1;
  return s;
}

StatusOr<int> CudaBackend::CreateGroup(int color, int key, const Deadline& deadline) {
  if (aborted_) return Status::Internal("NCCL communicators were aborted");
  cuda::NcclConfig config = NonBlockingConfig();
  NcclComm sub = nullptr;
  SP_NCCL_CHECK(api_->ncclCommSplit(world_, color < 0 ? cuda::kNcclSplitNoColor : color, key, &sub, &config));
  SP_RETURN_IF_ERROR(WaitReady(world_, "ncclCommSplit", deadline));
  if (sub == nullptr) return -1;
  groups_.push_back(sub);
  SP_RETURN_IF_ERROR(WaitReady(sub, "ncclCommSplit", deadline));
  int n = 0, r = 0;
  SP_NCCL_CHECK(api_->ncclCommCount(sub, &n));
  SP_NCCL_CHECK(api_->ncclCommUserRank(sub, &r));
  sizes_.push_back(n);
  ranks_.push_back(r);
  return static_cast<int>(groups_.size()) - 1;
}

Status CudaBackend::Enqueue(int group, const CollectiveCall& call, const Deadline& deadline) {
  const Api& nccl = *api_;
  NcclComm comm = groups_[static_cast<size_t>(group)];
  const size_t n = static_cast<size_t>(sizes_[static_cast<size_t>(group)]);
  const size_t rank = static_cast<size_t>(ranks_[static_cast<size_t>(group)]);
  const size_t elem = static_cast<size_t>(call.elem_bytes);
  const size_t count = static_cast<size_t>(call.size_bytes) / elem;
  const int type = TypeOf(call.elem_bytes);
  char* buf = static_cast<char*>(call.buffer.ptr);
  char* second = buf + call.size_bytes;  // receive half for all-to-all and send/recv
  switch (call.kind) {
    case CollectiveKind::kAllReduce:
      SP_NCCL_CHECK(nccl.ncclAllReduce(buf, buf, count, type, cuda::kNcclSum, comm, stream_));
      break;
    case CollectiveKind::kAllGather:  // in place: rank r's slice sits at r x sendcount
      SP_NCCL_CHECK(nccl.ncclAllGather(buf + rank * (count / n) * elem, buf, count / n, type, comm, stream_));
      break;
    case CollectiveKind::kReduceScatter:
      SP_NCCL_CHECK(nccl.ncclReduceScatter(buf, buf + rank * (count / n) * elem, count / n, type, cuda::kNcclSum,
                                           comm, stream_));
      break;
    case CollectiveKind::kAllToAll:
      if (nccl.ncclAlltoAll != nullptr) {
        SP_NCCL_CHECK(nccl.ncclAlltoAll(buf, second, count / n, type, comm, stream_));
        break;
      }
      // Before NCCL 2.28, as PyTorch's all_to_all_single does it: one send and one receive
      // per peer, in one group.
      SP_NCCL_CHECK(nccl.ncclGroupStart());
      for (size_t p = 0; p < n; ++p) {
        const size_t at = p * (count / n) * elem;
        SP_NCCL_CHECK(nccl.ncclSend(buf + at, count / n, type, static_cast<int>(p), comm, stream_));
        SP_NCCL_CHECK(nccl.ncclRecv(second + at, count / n, type, static_cast<int>(p), comm, stream_));
      }
      SP_NCCL_CHECK(nccl.ncclGroupEnd());
      break;
    case CollectiveKind::kSendRecv:
      SP_NCCL_CHECK(nccl.ncclGroupStart());
      if (call.send_to >= 0) SP_NCCL_CHECK(nccl.ncclSend(buf, count, type, call.send_to, comm, stream_));
      if (call.recv_from >= 0) SP_NCCL_CHECK(nccl.ncclRecv(second, count, type, call.recv_from, comm, stream_));
      SP_NCCL_CHECK(nccl.ncclGroupEnd());
      break;
  }
  return WaitReady(comm, "NCCL enqueue", deadline);
}

StatusOr<double> CudaBackend::Run(int group, const CollectiveCall& call, const Deadline& deadline) {
  if (aborted_) return Status::Internal("NCCL communicators were aborted");
  SP_CU_CHECK(api_->cuEventRecord(start_, stream_));
  SP_RETURN_IF_ERROR(Enqueue(group, call, deadline));
  SP_CU_CHECK(api_->cuEventRecord(stop_, stream_));
  const std::string what = "nccl " + std::string(CollectiveName(call.kind));
  SP_RETURN_IF_ERROR(WaitDone(groups_[static_cast<size_t>(group)], what.c_str(), deadline));
  float ms = 0;
  SP_CU_CHECK(api_->cuEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms) / 1e3;
}

void CudaBackend::Abort() {
  aborted_ = true;
  if (api_ == nullptr) return;  // the libraries never loaded: nothing was made
  // Return codes are ignored: this runs on the way out of a failure already being reported.
  for (NcclComm& c : groups_) {
    if (c != nullptr) api_->ncclCommAbort(c);
    c = nullptr;
  }
  groups_.clear();
  if (world_ != nullptr) api_->ncclCommAbort(world_);
  world_ = nullptr;
}

Status CudaBackend::Shutdown(const Deadline& deadline) {
  if (aborted_) return Status::Ok();
  groups_.push_back(world_);  // groups first, then the world they were split from
  world_ = nullptr;
  for (NcclComm& c : groups_) {
    if (c == nullptr) continue;
    SP_NCCL_CHECK(api_->ncclCommFinalize(c));
    SP_RETURN_IF_ERROR(WaitReady(c, "ncclCommFinalize", deadline));
    SP_NCCL_CHECK(api_->ncclCommDestroy(c));
    c = nullptr;
  }
  groups_.clear();
  return Status::Ok();
}

}  // namespace

std::unique_ptr<DeviceBackend> MakeCudaBackend() { return std::make_unique<CudaBackend>(); }

}  // namespace shardplan::validate
