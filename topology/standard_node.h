// The standard node `shardplan capacity` assumes for a GPU kind when no cluster file is
// given: an HGX-style server of 8 GPUs on that GPU's NVLink, one 400 Gb/s InfiniBand NIC per
// GPU, 2 TiB of host memory, PCIe Gen5 x16 per GPU (Gen4 before Hopper), no local NVMe
// counted. This is the DGX/HGX H100, H200 and B200 shape (configs/clusters/dgx-h100.yaml);
// an A100 node had 200 Gb/s NICs, so its fabric here is the newer one it would be sold with.
#pragma once

#include "topology/cluster_spec.h"

namespace shardplan {

// One node (nodes = 1) of `gpu`; `assumed` says what was taken.
ClusterSpec StandardNode(const GpuSpec& gpu);

}  // namespace shardplan
