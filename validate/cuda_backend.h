// CudaBackend: the DeviceBackend on a real GPU -- cudaMalloc'd and cudaMemset shards, NCCL
// communicators split from one world communicator, collectives timed with CUDA events, and
// memory read with cudaMemGetInfo (plus NVML's per-process figure where it loads).
// Built only when CMake finds CUDA and NCCL (SP_HAVE_CUDA); this header needs neither.
//
// NCCL runs non-blocking (ncclConfig_t::blocking = 0): every wait polls
// ncclCommGetAsyncError against the Deadline and aborts the communicators when it passes,
// so a dead or hung peer turns into an error on this rank instead of a hang.
#pragma once

#include <memory>

#include "validate/device_backend.h"

namespace shardplan::validate {

std::unique_ptr<DeviceBackend> MakeCudaBackend();

// cudaGetDeviceCount's codes for "no usable GPU": cudaErrorInsufficientDriver (35, a toolkit
// without a driver) and cudaErrorNoDevice (100). The worker reports these as an environment
// error that suggests --backend host; GPU tests skip on them.
constexpr int kCudaErrorInsufficientDriver = 35;
constexpr int kCudaErrorNoDevice = 100;

}  // namespace shardplan::validate
