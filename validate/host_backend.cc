#include "validate/host_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "validate/check.h"

namespace shardplan::validate {

HostBackend::~HostBackend() {
  for (auto& [ptr, bytes] : mappings_) munmap(ptr, static_cast<size_t>(bytes));
}

Status HostBackend::Connect(Communicator& world, const Deadline&) {
  world_ = &world;
  return Status::Ok();
}

StatusOr<DeviceBuffer> HostBackend::Allocate(int64_t bytes) {
  // An anonymous mapping, not malloc: munmap hands the pages straight back to the OS, so
  // freed transients do not linger in a heap and the next phase starts clean.
  void* p = mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return CallFailed(__FILE__, __LINE__, "mmap", std::strerror(errno), Code::kNegative);
  }
  // Touch every page so the memory is resident, as cudaMemset makes device memory real.
  const int64_t page = sysconf(_SC_PAGESIZE);
  for (int64_t off = 0; off < bytes; off += page) static_cast<volatile char*>(p)[off] = 0;
  mappings_[p] = bytes;
  live_bytes_ += bytes;
  return DeviceBuffer{p, bytes};
}

Status HostBackend::Free(DeviceBuffer buffer) {
  auto it = mappings_.find(buffer.ptr);
  if (it == mappings_.end()) return Status::Internal("freeing a buffer the host backend did not allocate");
  if (munmap(buffer.ptr, static_cast<size_t>(it->second)) != 0) {
    return CallFailed(__FILE__, __LINE__, "munmap", std::strerror(errno));
  }
  live_bytes_ -= it->second;
  mappings_.erase(it);
  return Status::Ok();
}

StatusOr<MemorySample> HostBackend::Sample() {
  MemorySample s;
  s.used_bytes = live_bytes_;
  s.total_bytes = capacity_;
  s.free_bytes = capacity_ - live_bytes_;
  return s;
}

StatusOr<int> HostBackend::CreateGroup(int color, int key, const Deadline&) {
  SP_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> sub, world_->Split(color, key));
  if (!sub) return -1;
  groups_.push_back(std::move(sub));
  return static_cast<int>(groups_.size()) - 1;
}

int HostBackend::GroupSize(int group) const {
  return group >= 0 ? groups_[static_cast<size_t>(group)]->size() : 1;
}

StatusOr<double> HostBackend::Run(int group, const CollectiveCall& call, const Deadline& deadline) {
  if (aborted_) return Status::Internal("host backend: communicators were aborted");
  if (deadline.Passed()) return Status::Internal("host backend: deadline passed before a collective");
  HostCollective c;
  c.kind = call.kind;
  c.size_bytes = call.size_bytes;
  c.elem_bytes = call.elem_bytes;
  c.data = call.buffer.ptr;
  c.recv = static_cast<char*>(call.buffer.ptr) + call.size_bytes;  // the second half, when used
  c.send_to = call.send_to;
  c.recv_from = call.recv_from;
  const auto start = Deadline::Clock::now();
  SP_RETURN_IF_ERROR(groups_[static_cast<size_t>(group)]->Run(c));
  return std::chrono::duration<double>(Deadline::Clock::now() - start).count();
}

Status HostBackend::Shutdown(const Deadline&) {
  groups_.clear();
  return Status::Ok();
}

}  // namespace shardplan::validate
