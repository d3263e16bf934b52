// Check helpers: every CUDA, NCCL and MPI call in validate/ goes through one of the
// SP_*_CHECK macros (cuda_backend.cc, communicator_mpi.cc), which turn a failed call into a
// Status naming the call, its file:line, the host and the error string -- nccl-tests'
// CUDACHECK idea, returned instead of printed.
#pragma once

#include <string>

#include "planner/status.h"

namespace shardplan::validate {

// The short host name (up to the first '.'), as nccl-tests prints it.
std::string HostName();

// "<file>:<line>: <call> failed on <host>: <error>".
Status CallFailed(const char* file, int line, const char* call, const std::string& error,
                  Code code = Code::kInternal);

}  // namespace shardplan::validate
