#include "planner/collectives.h"

#include <algorithm>
#include <cmath>

namespace shardplan {
namespace {

// Fractions of the line rate NCCL reaches on large messages. NVLink: all_reduce busbw of
// about 360 GB/s on 8x H100 (450 GB/s per direction) and 235 GB/s on 8x A100 (300 GB/s)
// without NVLS, i.e. ~0.8. Network: IB/RoCE rings reach ~0.85 of the port rate.
constexpr double kIntraEfficiency = 0.80;
constexpr double kInterEfficiency = 0.85;
// Pinned host<->device copies reach ~80% of the PCIe rate (12.5 of 15.75 GB/s on Gen3 x16,
// ~25 of 31.5 GB/s on Gen4); libaio/GDS reads reach ~90% of the drives' rate.
constexpr double kPcieEfficiency = 0.80;
constexpr double kNvmeEfficiency = 0.90;
// Alpha when the cluster file gives no latency: one NVLink ring step (NCCL LL protocol) and
// one network hop.
constexpr double kDefaultIntraLatency = 1.0e-6;
constexpr double kDefaultInterLatency = 5.0e-6;
// Every collective pays one kernel launch and a rendezvous, whatever its size.
constexpr double kLaunchSeconds = 5.0e-6;

double IntraBandwidth(const ClusterSpec& c) {
  if (c.intra_node.bandwidth > 0) return c.intra_node.bandwidth;
  if (c.gpu.nvlink_bandwidth > 0) return c.gpu.nvlink_bandwidth;
  return c.pcie_bandwidth;
}

int CeilLog2(int n) {
  int hops = 0;
  for (int v = 1; v < n; v <<= 1) ++hops;
  return hops;
}

// Whether `size` ranks `stride` apart reach beyond one NVLink domain.
bool SpansDomains(const ClusterSpec& c, int stride, int size) {
  return c.nodes > 1 && static_cast<long long>(std::max(1, stride)) * size > std::max(1, c.nvlink_domain_size());
}

}  // namespace

int DomainMembers(const ClusterSpec& c, GroupSpan g) {
  if (!SpansDomains(c, g.stride, g.size)) return g.size;
  const int gpn = std::max(1, c.nvlink_domain_size()), stride = std::max(1, g.stride);
  return stride >= gpn ? 1 : std::min(g.size, gpn / stride);
}

double BusBandwidthFactor(Collective kind, int n) {
  if (n <= 1) return 0;
  const double r = static_cast<double>(n - 1) / n;
  switch (kind) {
    case Collective::kAllReduce: return 2 * r;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll: return r;
    case Collective::kBroadcast:
    case Collective::kSendRecv: return 1;
  }
  return 1;
}

double CollectiveSeconds(Collective kind, double bytes, int n, const Tier& tier) {
  if (n <= 1 || bytes <= 0 || tier.bus_bandwidth <= 0) return 0;
  const double beta = bytes * BusBandwidthFactor(kind, n) / tier.bus_bandwidth;
  const double a = tier.latency_s;
  switch (kind) {
    case Collective::kAllReduce: {
      const double ring = 2.0 * (n - 1) * a + beta;
      const double tree = 2.0 * CeilLog2(n) * a + 2.0 * bytes / tier.bus_bandwidth;
      return kLaunchSeconds + std::min(ring, tree);
    }
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
    case Collective::kBroadcast: return kLaunchSeconds + (n - 1) * a + beta;
    case Collective::kSendRecv: return kLaunchSeconds + a + beta;
  }
  return 0;
}

Tier GroupTier(const ClusterSpec& c, int stride, int size) {
  Tier t;
  // Ranks inside one NVLink domain (a node, or GB200 NVL72's 72 GPUs) talk over NVLink;
  // a group that spans domains crosses the network once per member in each domain.
  const double intra = IntraBandwidth(c) * kIntraEfficiency;
  if (!SpansDomains(c, stride, size)) {
    t.bus_bandwidth = intra;
    t.latency_s = c.intra_node.latency_s > 0 ? c.intra_node.latency_s : kDefaultIntraLatency;
    return t;
  }
  const int per_node = DomainMembers(c, {stride, size});
  const double network = per_node * c.inter_node_bandwidth_per_gpu() * kInterEfficiency;
  t.bus_bandwidth = intra > 0 ? std::min(intra, network) : network;
  t.latency_s = c.inter_node.latency_s > 0 ? c.inter_node.latency_s : kDefaultInterLatency;
  t.inter_node = true;
  return t;
}

double TokenExchangeSeconds(const ClusterSpec& c, GroupSpan g, double intra_bytes, double remote_bytes) {
  if (g.size <= 1) return 0;
  const Tier tier = GroupTier(c, g);
  const double intra = IntraBandwidth(c) * kIntraEfficiency, nic = c.inter_node_bandwidth_per_gpu() * kInterEfficiency;
  const double over_nvlink = intra > 0 ? intra_bytes / intra : 0, over_network = nic > 0 ? remote_bytes / nic : 0;
  return kLaunchSeconds + (g.size - 1) * tier.latency_s + std::max(over_nvlink, over_network);
}

Tier NeighborTier(const ClusterSpec& c, int stride, int size) {
  const int gpn = std::max(1, c.nvlink_domain_size());
  stride = std::max(1, stride);
  if (!SpansDomains(c, stride, size)) return GroupTier(c, stride, size);
  return GroupTier(c, std::max(stride, gpn), 2);  // one hop between nodes: one GPU's NIC share
}

double HostLinkBandwidth(const ClusterSpec& c) { return c.pcie_bandwidth * kPcieEfficiency; }

double NvmeBandwidthPerGpu(const ClusterSpec& c) {
  return c.nvme_bandwidth * kNvmeEfficiency / std::max(1, c.gpus_per_node);
}

}  // namespace shardplan
