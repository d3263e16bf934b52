// CudaBackend: the DeviceBackend on a real GPU -- cuMemAlloc'd and zeroed shards in the
// device's primary context, NCCL communicators split from one world communicator, collectives
// timed with CUDA events, and memory read with cuMemGetInfo (plus NVML's per-process figure
// where it loads). The driver library and NCCL load when it opens (validate/cuda_api.h), so
// every build has it; where they do not load, Open says why.
//
// NCCL runs non-blocking (ncclConfig_t::blocking = 0): every wait polls
// ncclCommGetAsyncError against the Deadline and aborts the communicators when it passes,
// so a dead or hung peer turns into an error on this rank instead of a hang.
#pragma once

#include <memory>

#include "validate/device_backend.h"

namespace shardplan::validate {

std::unique_ptr<DeviceBackend> MakeCudaBackend();

}  // namespace shardplan::validate
