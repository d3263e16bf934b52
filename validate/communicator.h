// Communicator: the processes of one validation job. It bootstraps the device backend
// (broadcasting the NCCL id), gathers the report on rank 0, agrees on whether to go on after
// each phase, and carries the host backend's collectives. Two implementations: MPI, when the
// worker was built with MPI and started by a launcher (mpirun, srun); otherwise a world of
// one, so a single-GPU user needs no MPI at all.
//
// Every call returns a Status whose message names the call, its file:line, the host and the
// rank. Calls block; a hung peer is caught by the worker's watchdog (validate/watchdog.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "planner/status.h"
#include "validate/collective.h"

namespace shardplan::validate {

// The buffers of one host collective (validate/collective.h gives the size convention).
// In-place kinds use `data` only; all-to-all and send/recv send from `data` and receive into
// `recv`. Send/recv peers are ranks of this communicator, or -1 for none.
struct HostCollective {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  int64_t size_bytes = 0;
  int elem_bytes = 4;          // 2: summed as int16, 4: as float, else moved as bytes
  void* data = nullptr;
  void* recv = nullptr;
  int send_to = -1;
  int recv_from = -1;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  virtual Status Broadcast(void* data, int64_t bytes, int root) = 0;
  // `out` receives size() x bytes, rank order.
  virtual Status AllGather(const void* in, int64_t bytes, void* out) = 0;
  virtual StatusOr<int64_t> AllReduceMax(int64_t value) = 0;
  // Root receives every rank's string (rank order); the others receive an empty vector.
  virtual StatusOr<std::vector<std::string>> Gather(const std::string& mine, int root) = 0;
  // Ranks of equal `color` >= 0 form a new communicator ordered by `key`; color < 0 gives
  // nullptr. Collective over this communicator.
  virtual StatusOr<std::unique_ptr<Communicator>> Split(int color, int key) = 0;
  virtual Status Run(const HostCollective& c) = 0;
};

// True when a launcher started this process as one rank of several (it set the variables
// of OpenMPI, PMIx, PMI or Slurm).
bool LaunchedByLauncher();

// MPI when built with it and LaunchedByLauncher(); otherwise a world of one.
StatusOr<std::unique_ptr<Communicator>> CreateWorld(int* argc, char*** argv);

// A world of one (tests, and runs without a launcher).
std::unique_ptr<Communicator> SingleProcessWorld();

// "host:rank N" for error messages.
std::string WhereAmI(const Communicator& world);

}  // namespace shardplan::validate
