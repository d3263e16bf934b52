// Collective: the operations the validator runs and how their sizes and bandwidths are
// counted. Sizes follow nccl-tests' `size` column (ecosystem.md 6.2-6.3), so a validator
// line compares directly with an nccl-tests line: all-reduce, broadcast and send/recv count
// the buffer; all-gather, reduce-scatter and all-to-all count the whole array every rank
// sees (count x typesize x nranks).
#pragma once

#include <cstdint>
#include <string_view>

namespace shardplan::validate {

enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };

// "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv" (nccl-tests names).
std::string_view CollectiveName(CollectiveKind k);

// nccl-tests' bus-bandwidth factor for `nranks`: 2(n-1)/n for all-reduce, (n-1)/n for
// all-gather, reduce-scatter and all-to-all, 1 for send/recv (src/<op>.cu *GetBw).
double BusFactor(CollectiveKind k, int nranks);

struct Bandwidth {
  double algbw_gb_per_s = 0;  // size / time, GB = 1e9 bytes (nccl-tests)
  double busbw_gb_per_s = 0;  // algbw x BusFactor
};
// REQUIRES: seconds > 0.
Bandwidth ComputeBandwidth(CollectiveKind k, int64_t size_bytes, double seconds, int nranks);

// Bytes of device memory one rank needs to run the collective of `size_bytes`: in place for
// all-reduce, all-gather and reduce-scatter (the size is the whole array); a separate send
// and receive buffer for all-to-all and send/recv.
int64_t BufferBytes(CollectiveKind k, int64_t size_bytes);

// Rounds `size_bytes` down so it splits evenly: a multiple of nranks x elem_bytes for the
// collectives that split the array across ranks, of elem_bytes for the others. Never below
// one element per rank.
int64_t RoundSize(CollectiveKind k, int64_t size_bytes, int nranks, int elem_bytes);

}  // namespace shardplan::validate
