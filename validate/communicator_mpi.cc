#include "validate/communicator_mpi.h"

#include <mpi.h>

#include <climits>

#include "validate/check.h"

// Checks one MPI call; MPI_ERRORS_RETURN is set on every communicator, so a failure comes
// back here instead of aborting the job.
#define SP_MPI_CHECK(call)                                               \
  do {                                                                   \
    int sp_mpi_rc_ = (call);                                             \
    if (sp_mpi_rc_ != MPI_SUCCESS) {                                     \
      return CallFailed(__FILE__, __LINE__, #call, MpiError(sp_mpi_rc_)); \
    }                                                                    \
  } while (0)

namespace shardplan::validate {
namespace {

std::string MpiError(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, static_cast<size_t>(len));
}

// MPI counts are int: a buffer past INT_MAX elements is an input the host backend cannot run.
StatusOr<int> Count(int64_t bytes, int elem) {
  const int64_t n = bytes / elem;
  if (n > INT_MAX) {
    return Status::BadInput("a host collective of " + std::to_string(bytes) +
                            " bytes exceeds MPI's int count; use a smaller --scale");
  }
  return static_cast<int>(n);
}

MPI_Datatype TypeOf(int elem) {
  switch (elem) {
    case 1: return MPI_SIGNED_CHAR;
    case 2: return MPI_SHORT;
    case 8: return MPI_DOUBLE;
    default: return MPI_FLOAT;
  }
}

class MpiComm final : public Communicator {
 public:
  MpiComm(MPI_Comm comm, bool owns_world, int rank, int size)
      : comm_(comm), owns_world_(owns_world), rank_(rank), size_(size) {}
  // A destructor cannot return a Status; finalize/free errors at exit change nothing.
  ~MpiComm() override {
    if (owns_world_) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    } else {
      MPI_Comm_free(&comm_);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status Broadcast(void* data, int64_t bytes, int root) override {
    SP_ASSIGN_OR_RETURN(int n, Count(bytes, 1));
    SP_MPI_CHECK(MPI_Bcast(data, n, MPI_BYTE, root, comm_));
    return Status::Ok();
  }
  Status AllGather(const void* in, int64_t bytes, void* out) override {
    SP_ASSIGN_OR_RETURN(int n, Count(bytes, 1));
    SP_MPI_CHECK(MPI_Allgather(in, n, MPI_BYTE, out, n, MPI_BYTE, comm_));
    return Status::Ok();
  }
  StatusOr<int64_t> AllReduceMax(int64_t value) override {
    long long v = value, out = 0;
    SP_MPI_CHECK(MPI_Allreduce(&v, &out, 1, MPI_LONG_LONG, MPI_MAX, comm_));
    return static_cast<int64_t>(out);
  }
  StatusOr<std::vector<std::string>> Gather(const std::string& mine, int root) override;
  StatusOr<std::unique_ptr<Communicator>> Split(int color, int key) override {
    MPI_Comm sub = MPI_COMM_NULL;
    SP_MPI_CHECK(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub));
    if (sub == MPI_COMM_NULL) return std::unique_ptr<Communicator>();
    return Wrap(sub, false);
  }
  Status Run(const HostCollective& c) override;

  static StatusOr<std::unique_ptr<Communicator>> Wrap(MPI_Comm comm, bool owns_world) {
    int rank = 0, size = 1;
    SP_MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    SP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
    SP_MPI_CHECK(MPI_Comm_size(comm, &size));
    return std::unique_ptr<Communicator>(new MpiComm(comm, owns_world, rank, size));
  }

 private:
  MPI_Comm comm_;
  bool owns_world_;
  int rank_ = 0;
  int size_ = 1;
};

StatusOr<std::vector<std::string>> MpiComm::Gather(const std::string& mine, int root) {
  SP_ASSIGN_OR_RETURN(int len, Count(static_cast<int64_t>(mine.size()), 1));
  std::vector<int> lens(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
  SP_MPI_CHECK(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, root, comm_));
  int64_t total = 0;
  for (int i = 0; i < size_; ++i) {
    offsets[static_cast<size_t>(i)] = static_cast<int>(total);
    total += lens[static_cast<size_t>(i)];
  }
  SP_RETURN_IF_ERROR(Count(total, 1).status());
  std::string all(static_cast<size_t>(rank_ == root ? total : 0), '\0');
  SP_MPI_CHECK(MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(),
                           MPI_CHAR, root, comm_));
  std::vector<std::string> out;
  if (rank_ != root) return out;
  for (int i = 0; i < size_; ++i) {
    out.push_back(all.substr(static_cast<size_t>(offsets[static_cast<size_t>(i)]),
                             static_cast<size_t>(lens[static_cast<size_t>(i)])));
  }
  return out;
}

Status MpiComm::Run(const HostCollective& c) {
  SP_ASSIGN_OR_RETURN(int count, Count(c.size_bytes, c.elem_bytes));
  const MPI_Datatype type = TypeOf(c.elem_bytes);
  const int per_rank = count / size_;
  switch (c.kind) {
    case CollectiveKind::kAllReduce:
      SP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, c.data, count, type, MPI_SUM, comm_));
      break;
    case CollectiveKind::kAllGather:
      SP_MPI_CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, c.data, per_rank, type, comm_));
      break;
    case CollectiveKind::kReduceScatter:
      SP_MPI_CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, c.data, per_rank, type, MPI_SUM, comm_));
      break;
    case CollectiveKind::kAllToAll:
      SP_MPI_CHECK(MPI_Alltoall(c.data, per_rank, type, c.recv, per_rank, type, comm_));
      break;
    case CollectiveKind::kSendRecv: {
      const int to = c.send_to >= 0 ? c.send_to : MPI_PROC_NULL;
      const int from = c.recv_from >= 0 ? c.recv_from : MPI_PROC_NULL;
      SP_MPI_CHECK(MPI_Sendrecv(c.data, count, type, to, 0, c.recv, count, type, from, 0, comm_,
                                MPI_STATUS_IGNORE));
      break;
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Communicator>> CreateMpiWorld(int* argc, char*** argv) {
  int provided = 0;
  SP_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
  return MpiComm::Wrap(MPI_COMM_WORLD, true);
}

}  // namespace shardplan::validate
