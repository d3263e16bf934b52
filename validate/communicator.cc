#include "validate/communicator.h"

#include <cstdlib>
#include <cstring>

#include "validate/check.h"

#if SP_HAVE_MPI
#include "validate/communicator_mpi.h"
#endif

namespace shardplan::validate {
namespace {

// The world of one: every collective is over a single rank, so in-place kinds leave the
// buffer as it is and all-to-all copies the rank's own slice.
class SingleWorld final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status Broadcast(void*, int64_t, int) override { return Status::Ok(); }
  Status AllGather(const void* in, int64_t bytes, void* out) override {
    std::memmove(out, in, static_cast<size_t>(bytes));
    return Status::Ok();
  }
  StatusOr<int64_t> AllReduceMax(int64_t value) override { return value; }
  StatusOr<std::vector<std::string>> Gather(const std::string& mine, int) override {
    return std::vector<std::string>{mine};
  }
  StatusOr<std::unique_ptr<Communicator>> Split(int color, int) override {
    if (color < 0) return std::unique_ptr<Communicator>();
    return std::unique_ptr<Communicator>(new SingleWorld());
  }
  Status Run(const HostCollective& c) override {
    if (c.send_to >= 0 || c.recv_from >= 0) {
      return Status::Internal("send/recv to a peer in a world of one");
    }
    if (c.kind == CollectiveKind::kAllToAll) {
      std::memcpy(c.recv, c.data, static_cast<size_t>(c.size_bytes));
    }
    return Status::Ok();
  }
};

bool HasEnv(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

}  // namespace

bool LaunchedByLauncher() {
  // OpenMPI's mpirun, PMIx-based launchers (srun --mpi=pmix, prterun), PMI-1/2 (MPICH
  // hydra, srun --mpi=pmi2) and plain srun each set one of these in every rank.
  return HasEnv("OMPI_COMM_WORLD_SIZE") || HasEnv("PMIX_RANK") || HasEnv("PMI_RANK") ||
         HasEnv("PMI_SIZE") || (HasEnv("SLURM_PROCID") && HasEnv("SLURM_STEP_ID"));
}

std::unique_ptr<Communicator> SingleProcessWorld() { return std::make_unique<SingleWorld>(); }

StatusOr<std::unique_ptr<Communicator>> CreateWorld(int* argc, char*** argv) {
#if SP_HAVE_MPI
  if (LaunchedByLauncher()) return CreateMpiWorld(argc, argv);
#else
  (void)argc;
  (void)argv;
  if (LaunchedByLauncher()) {
    return Status::Internal(
        "started by a launcher, but this worker was built without MPI; install OpenMPI and "
        "rebuild, or run a single rank without mpirun");
  }
#endif
  return SingleProcessWorld();
}

std::string WhereAmI(const Communicator& world) {
  return HostName() + ":rank " + std::to_string(world.rank());
}

}  // namespace shardplan::validate
