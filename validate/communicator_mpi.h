// The MPI Communicator (compiled only when CMake finds MPI). Internal to validate/: use
// CreateWorld (validate/communicator.h).
#pragma once

#include <memory>

#include "validate/communicator.h"

namespace shardplan::validate {

// MPI_Init_thread (funneled: only the main thread calls MPI), errors returned rather than
// fatal, and the world communicator; MPI_Finalize when it is destroyed.
StatusOr<std::unique_ptr<Communicator>> CreateMpiWorld(int* argc, char*** argv);

}  // namespace shardplan::validate
