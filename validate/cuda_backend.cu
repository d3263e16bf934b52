#include "validate/cuda_backend.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <thread>
#include <unordered_set>
#include <vector>

#include "validate/check.h"
#include "validate/nvml_probe.h"

#define SP_CUDA_CHECK(call)                                                         \
  do {                                                                              \
    cudaError_t sp_cuda_rc_ = (call);                                               \
    if (sp_cuda_rc_ != cudaSuccess) {                                               \
      return CallFailed(__FILE__, __LINE__, #call, cudaGetErrorString(sp_cuda_rc_)); \
    }                                                                               \
  } while (0)

// Non-blocking communicators return ncclInProgress from most calls; WaitReady follows up.
#define SP_NCCL_CHECK(call)                                                  \
  do {                                                                       \
    ncclResult_t sp_nccl_rc_ = (call);                                       \
    if (sp_nccl_rc_ != ncclSuccess && sp_nccl_rc_ != ncclInProgress) {       \
      return CallFailed(__FILE__, __LINE__, #call, NcclError(sp_nccl_rc_)); \
    }                                                                        \
  } while (0)

namespace shardplan::validate {
namespace {

std::string NcclError(ncclResult_t rc) {
  std::string text = ncclGetErrorString(rc);
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && *last != '\0') text += std::string(" (") + last + ")";
  return text;
}

ncclDataType_t TypeOf(int elem) {
  switch (elem) {
    case 1: return ncclInt8;
    case 2: return ncclBfloat16;
    case 8: return ncclFloat64;
    default: return ncclFloat32;
  }
}

ncclConfig_t NonBlockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  // splitShare stays off: every PyTorch process group owns its NCCL buffers
  // (memory-model.md 4.3), and the rehearsal must pay what the real run pays.
  return config;
}

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
  Status WaitReady(ncclComm_t comm, const char* what, const Deadline& deadline);
  Status WaitDone(ncclComm_t comm, const char* what, const Deadline& deadline);
  Status Enqueue(int group, const CollectiveCall& call, const Deadline& deadline);

  int device_ = -1;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  ncclComm_t world_ = nullptr;
  std::vector<ncclComm_t> groups_;
  std::vector<int> sizes_, ranks_;
  std::unordered_set<void*> buffers_;
  std::unique_ptr<NvmlProbe> nvml_;
  bool aborted_ = false;
};

CudaBackend::~CudaBackend() {
  if (world_ != nullptr || !groups_.empty()) Abort();
  // Errors here cannot be returned; the driver reclaims whatever is left at exit.
  for (void* p : buffers_) cudaFree(p);
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
  if (stream_) cudaStreamDestroy(stream_);
}

Status CudaBackend::Open(int local_rank) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc == kCudaErrorInsufficientDriver || rc == kCudaErrorNoDevice) {
    return Status::Internal(std::string("no usable GPU (cudaGetDeviceCount: ") +
                            cudaGetErrorString(rc) + "); rehearse with --backend host");
  }
  SP_CUDA_CHECK(rc);
  if (local_rank >= count) {
    return Status::Internal("local rank " + std::to_string(local_rank) + " needs GPU " +
                            std::to_string(local_rank) + " but " + std::to_string(count) +
                            " are visible (check CUDA_VISIBLE_DEVICES and ranks per node)");
  }
  device_ = local_rank;
  SP_CUDA_CHECK(cudaSetDevice(device_));
  SP_CUDA_CHECK(cudaFree(nullptr));  // create the context now: it counts from the first reading
  cudaDeviceProp prop{};
  SP_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  char bus[32] = {};
  SP_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof(bus), device_));
  name_ = "GPU " + std::to_string(device_) + " " + prop.name + " [" + bus + "]";
  SP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  SP_CUDA_CHECK(cudaEventCreate(&start_));
  SP_CUDA_CHECK(cudaEventCreate(&stop_));
  nvml_ = NvmlProbe::Open(bus);
  return Status::Ok();
}

Status CudaBackend::Connect(Communicator& world, const Deadline& deadline) {
  struct {
    ncclUniqueId id;
    int ok;
  } boot{};
  Status made;
  if (world.rank() == 0) {
    const ncclResult_t rc = ncclGetUniqueId(&boot.id);
    if (rc != ncclSuccess) made = CallFailed(__FILE__, __LINE__, "ncclGetUniqueId(&boot.id)", NcclError(rc));
    boot.ok = made.ok() ? 1 : 0;
  }
  // Broadcast even when the id failed: the other ranks are already waiting in it.
  SP_RETURN_IF_ERROR(world.Broadcast(&boot, sizeof(boot), 0));
  SP_RETURN_IF_ERROR(made);
  if (!boot.ok) return Status::Internal("rank 0 could not create the NCCL unique id");
  ncclConfig_t config = NonBlockingConfig();
  SP_NCCL_CHECK(ncclCommInitRankConfig(&world_, world.size(), boot.id, world.rank(), &config));
  return WaitReady(world_, "ncclCommInitRankConfig", deadline);
}

Status CudaBackend::WaitReady(ncclComm_t comm, const char* what, const Deadline& deadline) {
  while (true) {
    ncclResult_t state = ncclSuccess;
    SP_NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
    if (state == ncclSuccess) return Status::Ok();
    if (state != ncclInProgress) {
      Abort();
      return CallFailed(__FILE__, __LINE__, what, NcclError(state));
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
Status CudaBackend::WaitDone(ncclComm_t comm, const char* what, const Deadline& deadline) {
  while (true) {
    const cudaError_t rc = cudaEventQuery(stop_);
    if (rc == cudaSuccess) return Status::Ok();
    if (rc != cudaErrorNotReady) SP_CUDA_CHECK(rc);
    ncclResult_t state = ncclSuccess;
    SP_NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
    if (state != ncclSuccess && state != ncclInProgress) {
      Abort();
      return CallFailed(__FILE__, __LINE__, what, NcclError(state));
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
  void* p = nullptr;
  const cudaError_t rc = cudaMalloc(&p, static_cast<size_t>(bytes));
  if (rc == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // clear the sticky-free error so later calls succeed
    return CallFailed(__FILE__, __LINE__, "cudaMalloc", cudaGetErrorString(rc), Code::kNegative);
  }
  SP_CUDA_CHECK(rc);
  buffers_.insert(p);
  // cudaMalloc may only reserve address space; writing makes every page resident.
  SP_CUDA_CHECK(cudaMemsetAsync(p, 0, static_cast<size_t>(bytes), stream_));
  SP_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return DeviceBuffer{p, bytes};
}

Status CudaBackend::Free(DeviceBuffer buffer) {
  SP_CUDA_CHECK(cudaFree(buffer.ptr));
  buffers_.erase(buffer.ptr);
  return Status::Ok();
}

StatusOr<MemorySample> CudaBackend::Sample() {
  size_t free_bytes = 0, total_bytes = 0;
  SP_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  MemorySample s;
  s.free_bytes = static_cast<int64_t>(free_bytes);
  s.total_bytes = static_cast<int64_t>(total_bytes);
  s.used_bytes = s.total_bytes - s.free_bytes;
  s.process_bytes = nvml_ ? nvml_->ProcessBytes() : -1;
  return s;
}

StatusOr<int> CudaBackend::CreateGroup(int color, int key, const Deadline& deadline) {
  if (aborted_) return Status::Internal("NCCL communicators were aborted");
  ncclConfig_t config = NonBlockingConfig();
  ncclComm_t sub = nullptr;
  SP_NCCL_CHECK(ncclCommSplit(world_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &sub, &config));
  SP_RETURN_IF_ERROR(WaitReady(world_, "ncclCommSplit", deadline));
  if (sub == nullptr) return -1;
  groups_.push_back(sub);
  SP_RETURN_IF_ERROR(WaitReady(sub, "ncclCommSplit", deadline));
  int n = 0, r = 0;
  SP_NCCL_CHECK(ncclCommCount(sub, &n));
  SP_NCCL_CHECK(ncclCommUserRank(sub, &r));
  sizes_.push_back(n);
  ranks_.push_back(r);
  return static_cast<int>(groups_.size()) - 1;
}

Status CudaBackend::Enqueue(int group, const CollectiveCall& call, const Deadline& deadline) {
  ncclComm_t comm = groups_[static_cast<size_t>(group)];
  const size_t n = static_cast<size_t>(sizes_[static_cast<size_t>(group)]);
  const size_t rank = static_cast<size_t>(ranks_[static_cast<size_t>(group)]);
  const size_t elem = static_cast<size_t>(call.elem_bytes);
  const size_t count = static_cast<size_t>(call.size_bytes) / elem;
  const ncclDataType_t type = TypeOf(call.elem_bytes);
  char* buf = static_cast<char*>(call.buffer.ptr);
  char* second = buf + call.size_bytes;  // receive half for all-to-all and send/recv
  switch (call.kind) {
    case CollectiveKind::kAllReduce:
      SP_NCCL_CHECK(ncclAllReduce(buf, buf, count, type, ncclSum, comm, stream_));
      break;
    case CollectiveKind::kAllGather:  // in place: rank r's slice sits at r x sendcount
      SP_NCCL_CHECK(ncclAllGather(buf + rank * (count / n) * elem, buf, count / n, type, comm, stream_));
      break;
    case CollectiveKind::kReduceScatter:
      SP_NCCL_CHECK(ncclReduceScatter(buf, buf + rank * (count / n) * elem, count / n, type, ncclSum,
                                      comm, stream_));
      break;
    case CollectiveKind::kAllToAll:
      SP_NCCL_CHECK(ncclAlltoAll(buf, second, count / n, type, comm, stream_));
      break;
    case CollectiveKind::kSendRecv:
      SP_NCCL_CHECK(ncclGroupStart());
      if (call.send_to >= 0) SP_NCCL_CHECK(ncclSend(buf, count, type, call.send_to, comm, stream_));
      if (call.recv_from >= 0) SP_NCCL_CHECK(ncclRecv(second, count, type, call.recv_from, comm, stream_));
      SP_NCCL_CHECK(ncclGroupEnd());
      break;
  }
  return WaitReady(comm, "NCCL enqueue", deadline);
}

StatusOr<double> CudaBackend::Run(int group, const CollectiveCall& call, const Deadline& deadline) {
  if (aborted_) return Status::Internal("NCCL communicators were aborted");
  SP_CUDA_CHECK(cudaEventRecord(start_, stream_));
  SP_RETURN_IF_ERROR(Enqueue(group, call, deadline));
  SP_CUDA_CHECK(cudaEventRecord(stop_, stream_));
  const std::string what = "nccl " + std::string(CollectiveName(call.kind));
  SP_RETURN_IF_ERROR(WaitDone(groups_[static_cast<size_t>(group)], what.c_str(), deadline));
  float ms = 0;
  SP_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms) / 1e3;
}

void CudaBackend::Abort() {
  // Return codes are ignored: this runs on the way out of a failure already being reported.
  for (ncclComm_t& c : groups_) {
    if (c != nullptr) ncclCommAbort(c);
    c = nullptr;
  }
  groups_.clear();
  if (world_ != nullptr) ncclCommAbort(world_);
  world_ = nullptr;
  aborted_ = true;
}

Status CudaBackend::Shutdown(const Deadline& deadline) {
  if (aborted_) return Status::Ok();
  groups_.push_back(world_);  // groups first, then the world they were split from
  world_ = nullptr;
  for (ncclComm_t& c : groups_) {
    if (c == nullptr) continue;
    SP_NCCL_CHECK(ncclCommFinalize(c));
    SP_RETURN_IF_ERROR(WaitReady(c, "ncclCommFinalize", deadline));
    SP_NCCL_CHECK(ncclCommDestroy(c));
    c = nullptr;
  }
  groups_.clear();
  return Status::Ok();
}

}  // namespace

std::unique_ptr<DeviceBackend> MakeCudaBackend() { return std::make_unique<CudaBackend>(); }

}  // namespace shardplan::validate
