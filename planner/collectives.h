// Collectives: the alpha-beta cost of one NCCL collective on the link tier its group spans.
// time = alpha * steps + factor(n) * bytes / bus_bandwidth, with the busbw factors of
// nccl-tests (doc/PERFORMANCE.md; ecosystem.md 6.3), so a predicted time and a busbw measured
// by the validator or nccl-tests compare directly. Pure, allocation-free: the search calls
// these millions of times.
#pragma once

#include "planner/layout.h"
#include "topology/cluster_spec.h"

namespace shardplan {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kSendRecv };

// One link tier as a collective sees it.
struct Tier {
  double bus_bandwidth = 0;   // bytes/s per GPU, one direction, after protocol efficiency
  double latency_s = 0;       // alpha: per ring step / tree hop
  bool inter_node = false;    // the group leaves a node
};

// nccl-tests busbw factor: algbw * factor = busbw. AllReduce 2(n-1)/n; AllGather,
// ReduceScatter and AlltoAll (n-1)/n; Broadcast, Reduce and SendRecv 1.
double BusBandwidthFactor(Collective kind, int n);

// Seconds for one collective over `n` ranks. `bytes` is nccl-tests' S: the buffer each rank
// holds for AllReduce/Broadcast/SendRecv, the whole gathered (or scattered) array for
// AllGather/ReduceScatter, and everything one rank sends plus keeps for AlltoAll. AllReduce
// takes the cheaper of a ring (2(n-1) steps) and NCCL's double binary tree (2 log2 n hops,
// moving the buffer twice). 0 when n <= 1, bytes <= 0 or the tier has no bandwidth (a link
// the cluster file left unset is not charged).
double CollectiveSeconds(Collective kind, double bytes, int n, const Tier& tier);

// The tier a group of `size` ranks spaced `stride` global ranks apart runs on (SpanOf in
// planner/layout.h gives a layout's groups in the rank order; nodes hold consecutive ranks). A
// group inside one node gets the intra-node link; a group across nodes gets the network,
// where NCCL runs one ring per member a node holds, each on its GPU's share of the NICs, so
// busbw = min(intra, members_per_node * per-GPU NIC share).
Tier GroupTier(const ClusterSpec& c, int stride, int size);
inline Tier GroupTier(const ClusterSpec& c, GroupSpan g) { return GroupTier(c, g.stride, g.size); }

// The tier of a neighbour exchange around a ring of `size` ranks spaced `stride` apart
// (ring attention's K/V blocks, pipeline send/recv): every rank sends to the next at once and
// the slowest hop sets the pace. A ring that leaves a node has hops from one GPU to one GPU of
// the next node, each on that GPU's share of the NICs: point-to-point traffic, unlike a
// collective's rings, cannot spread one hop over the node's other NICs.
Tier NeighborTier(const ClusterSpec& c, int stride, int size);
inline Tier NeighborTier(const ClusterSpec& c, GroupSpan g) { return NeighborTier(c, g.stride, g.size); }

// Members of a group (`size` ranks `stride` apart) that share one NVLink domain: the whole
// group when it stays inside one.
int DomainMembers(const ClusterSpec& c, GroupSpan g);

// One MoE token exchange (a dispatch or a combine) over an expert-parallel group, where one
// rank sends `intra_bytes` to the other members of its NVLink domain and `remote_bytes` to
// members in other domains. The two go at once, the first over NVLink and the second through
// the rank's own share of the NICs: the exchange is point-to-point sends (NCCL's alltoall,
// DeepEP's and HybridEP's RDMA), every rank's at the same time, so unlike a ring collective's
// traffic the remote share cannot spread over the node's other NICs.
double TokenExchangeSeconds(const ClusterSpec& c, GroupSpan g, double intra_bytes, double remote_bytes);

// Bandwidth one GPU sees to host memory (PCIe, one direction) and to NVMe (the node's drives
// shared by its GPUs), bytes/s after efficiency.
double HostLinkBandwidth(const ClusterSpec& c);
double NvmeBandwidthPerGpu(const ClusterSpec& c);

}  // namespace shardplan
