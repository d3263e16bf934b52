// Reads a PyTorch "CUDA out of memory" message (the 2.x wording and the 1.x one) and says
// why it happened: fragmentation of the caching allocator, memory outside PyTorch (CUDA
// context, NCCL, other processes), or a working set that really is too large.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/status.h"

namespace shardplan {

struct OomMessage {
  int gpu = -1;
  int64_t requested = 0;            // "Tried to allocate"
  int64_t total = 0;                // total capacity
  int64_t free = 0;                 // free on the device
  std::optional<int64_t> process;   // this process's use (2.x: "Process N has X memory in use")
  int64_t allocated = 0;            // allocated by PyTorch
  int64_t reserved = 0;             // reserved by PyTorch (allocated + cached)
};

struct OomDiagnosis {
  OomMessage message;
  int64_t cached_unallocated = 0;   // reserved - allocated: freed blocks the allocator keeps
  int64_t outside_torch = 0;        // used on the device but not reserved by PyTorch
  std::string verdict;              // "fragmentation", "outside PyTorch" or "working set"
  std::vector<std::string> advice;  // what to change, most likely first
};

StatusOr<OomMessage> ParseOomMessage(std::string_view text);
OomDiagnosis DiagnoseOom(const OomMessage& m);

}  // namespace shardplan
