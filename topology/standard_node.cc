#include "topology/standard_node.h"

#include <string>

#include "topology/cluster_writer.h"

namespace shardplan {

ClusterSpec StandardNode(const GpuSpec& gpu) {
  ClusterSpec c;
  c.name = "standard-" + gpu.name;
  c.nodes = 1;
  c.gpus_per_node = 8;
  c.gpu = gpu;
  // NVLink through NVSwitch, or PCIe for a GPU without NVLink (Gen4 x16: 32 GB/s per
  // direction, Gen5: 64 GB/s).
  c.intra_node = ShippedIntraNodeLink(gpu);
  // A GPU sold in a rack-scale NVLink domain (GB200 NVL72) keeps it across nodes.
  c.intra_node.domain = ShippedNvlinkDomain(gpu, c.gpus_per_node);
  const bool domain = c.intra_node.domain > 0;
  // One NIC per GPU at the rate the GPU's systems ship with.
  c.inter_node = {"infiniband", ShippedNicBandwidth(gpu), 5e-6, 8};
  c.host_memory_bytes = int64_t{2} << 40;  // 2 TiB per node (DGX H100, DGX B200: 2 TB / 4 TB)
  c.pcie_bandwidth = ShippedPcieBandwidth(gpu);
  c.assumed.push_back("node: 8 x " + gpu.name + (gpu.nvlink_bandwidth > 0 ? " on NVLink" : " on PCIe") +
                      (domain ? " (one " + std::to_string(gpu.nvlink_domain) + "-GPU NVLink domain across nodes)" : "") +
                      ", 8 x " + YamlBitRate(c.inter_node.bandwidth) + " InfiniBand, 2 TiB host memory (the standard node; --cluster names another)");
  return c;
}

}  // namespace shardplan
