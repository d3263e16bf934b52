// HostBackend: a DeviceBackend over host memory and MPI, so the whole worker -- manifest,
// phase walk, collectives, faults, report -- runs on machines without a GPU (CI runs it
// under `mpirun -np 4`). Allocations are real anonymous mappings with every page touched;
// the "device" is `capacity_bytes` of it; collectives go through the Communicator.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "validate/device_backend.h"

namespace shardplan::validate {

class HostBackend final : public DeviceBackend {
 public:
  explicit HostBackend(int64_t capacity_bytes) : capacity_(capacity_bytes) {}
  ~HostBackend() override;

  std::string_view Name() const override { return "host"; }
  Status Open(int) override { return Status::Ok(); }
  Status Connect(Communicator& world, const Deadline& deadline) override;
  std::string DeviceName() const override { return "host memory"; }
  // Nothing stands in for a CUDA context or NCCL buffers here: the worker allocates them.
  bool MeasuresRuntimeOverheads() const override { return false; }

  StatusOr<DeviceBuffer> Allocate(int64_t bytes) override;
  Status Free(DeviceBuffer buffer) override;
  StatusOr<MemorySample> Sample() override;

  StatusOr<int> CreateGroup(int color, int key, const Deadline& deadline) override;
  int GroupSize(int group) const override;
  StatusOr<double> Run(int group, const CollectiveCall& call, const Deadline& deadline) override;

  // MPI cannot cancel a blocking collective; after Abort no further collective starts, and
  // a rank stuck in one is ended by the worker's watchdog.
  void Abort() override { aborted_ = true; }
  Status Shutdown(const Deadline& deadline) override;

 private:
  int64_t capacity_;
  int64_t live_bytes_ = 0;
  bool aborted_ = false;
  Communicator* world_ = nullptr;
  std::unordered_map<void*, int64_t> mappings_;  // freed by the destructor if still live
  std::vector<std::unique_ptr<Communicator>> groups_;
};

}  // namespace shardplan::validate
