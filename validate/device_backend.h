// DeviceBackend: the hardware under the validator's worker, behind one narrow interface (as
// leveldb's Env hides the OS), so every path of the worker runs in tests without a GPU.
// Two implementations: CUDA + NCCL (validate/cuda_backend.h, built only when CMake finds
// CUDA) and host memory + MPI collectives (validate/host_backend.h).
//
// Contract: Open, then Connect; Connect and CreateGroup are collective over the world
// (every rank calls them, and CreateGroup for every group kind in the same order); every
// wait honours the Deadline and, past it, fails with a Status instead of blocking. A backend
// frees whatever it still holds when destroyed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "planner/status.h"
#include "validate/collective.h"
#include "validate/communicator.h"

namespace shardplan::validate {

// The time by which a run must be over (--timeout).
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  Deadline() : at_(Clock::time_point::max()) {}
  explicit Deadline(Clock::time_point at) : at_(at) {}
  static Deadline In(double seconds) {
    return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(seconds)));
  }
  bool Passed() const { return Clock::now() >= at_; }
  Clock::time_point at() const { return at_; }

 private:
  Clock::time_point at_;
};

struct DeviceBuffer {
  void* ptr = nullptr;
  int64_t bytes = 0;
};

// One reading of the device's memory.
struct MemorySample {
  int64_t used_bytes = 0;       // device total - free (CUDA), or live allocations (host)
  int64_t free_bytes = 0;       // as the device reports it
  int64_t total_bytes = 0;
  int64_t process_bytes = -1;   // this process's usage from NVML; -1 when unavailable
};

// One collective on one group. Peers are ranks of the group, -1 for none.
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  int64_t size_bytes = 0;       // nccl-tests size (validate/collective.h)
  int elem_bytes = 2;
  DeviceBuffer buffer;          // BufferBytes(kind, size_bytes) or more
  int send_to = -1;
  int recv_from = -1;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  virtual std::string_view Name() const = 0;
  // Binds the device of `local_rank`. Local: a rank without its GPU fails here, before any
  // collective, so the worker can stop every rank together.
  virtual Status Open(int local_rank) = 0;
  // Joins the world's ranks (NCCL's id broadcast over `world`, communicator init).
  virtual Status Connect(Communicator& world, const Deadline& deadline) = 0;
  // "GPU 0 NVIDIA H100 80GB HBM3 [0000:18:00.0]" or "host memory".
  virtual std::string DeviceName() const = 0;
  // True when the runtime itself holds the non-torch terms (CUDA context, NCCL buffers), so
  // the worker measures them rather than allocating stand-ins.
  virtual bool MeasuresRuntimeOverheads() const = 0;

  // Allocates `bytes` and touches every byte. Out of memory is Code::kNegative; anything
  // else is an environment error.
  virtual StatusOr<DeviceBuffer> Allocate(int64_t bytes) = 0;
  virtual Status Free(DeviceBuffer buffer) = 0;
  virtual StatusOr<MemorySample> Sample() = 0;

  // Makes the communicator of one group: ranks passing the same `color` >= 0 join it,
  // ordered by `key`; color < 0 joins none. Returns a handle for Run, or -1 for none.
  virtual StatusOr<int> CreateGroup(int color, int key, const Deadline& deadline) = 0;
  // Ranks in the group, for bandwidth factors.
  virtual int GroupSize(int group) const = 0;
  // Runs one collective and returns its duration in seconds.
  virtual StatusOr<double> Run(int group, const CollectiveCall& call, const Deadline& deadline) = 0;

  // Aborts every communicator after a failure or a missed deadline, so no rank waits on
  // this one; later Runs fail.
  virtual void Abort() = 0;
  // Tears communicators down cleanly at the end of a successful run.
  virtual Status Shutdown(const Deadline& deadline) = 0;
};

// "cuda" or "host"; bad input for other names; an environment error when `name` is "cuda"
// and this build has no CUDA. `capacity_bytes` sizes the host backend's reported device.
StatusOr<std::unique_ptr<DeviceBackend>> MakeBackend(std::string_view name, int64_t capacity_bytes);

}  // namespace shardplan::validate
