#include "validate/collective.h"

#include <algorithm>

namespace shardplan::validate {

std::string_view CollectiveName(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kAllToAll: return "all_to_all";
    case CollectiveKind::kSendRecv: return "send_recv";
  }
  return "?";
}

double BusFactor(CollectiveKind k, int nranks) {
  const double n = nranks;
  switch (k) {
    case CollectiveKind::kAllReduce: return 2.0 * (n - 1) / n;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll: return (n - 1) / n;
    case CollectiveKind::kSendRecv: return 1.0;
  }
  return 1.0;
}

Bandwidth ComputeBandwidth(CollectiveKind k, int64_t size_bytes, double seconds, int nranks) {
  Bandwidth bw;
  bw.algbw_gb_per_s = static_cast<double>(size_bytes) / 1e9 / seconds;
  bw.busbw_gb_per_s = bw.algbw_gb_per_s * BusFactor(k, nranks);
  return bw;
}

int64_t BufferBytes(CollectiveKind k, int64_t size_bytes) {
  switch (k) {
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kSendRecv: return 2 * size_bytes;
    default: return size_bytes;
  }
}

static bool SplitsAcrossRanks(CollectiveKind k) {
  return k == CollectiveKind::kAllGather || k == CollectiveKind::kReduceScatter ||
         k == CollectiveKind::kAllToAll;
}

int64_t RoundSize(CollectiveKind k, int64_t size_bytes, int nranks, int elem_bytes) {
  const int64_t granule =
      static_cast<int64_t>(elem_bytes) * (SplitsAcrossRanks(k) ? std::max(nranks, 1) : 1);
  return std::max(granule, size_bytes / granule * granule);
}

}  // namespace shardplan::validate
