// The standard node `shardplan capacity` assumes for a GPU kind when no cluster file is
// given: an HGX-style server of 8 GPUs on that GPU's NVLink, one InfiniBand NIC per GPU at the
// rate its systems ship with (200 Gb/s for A100, 400 Gb/s for H100 to B200, 800 Gb/s for
// B300; 400 Gb/s when the catalog does not say), 2 TiB of host memory, PCIe Gen5 x16 per GPU
// (Gen4 before Hopper), no local NVMe counted (configs/clusters/dgx-h100.yaml is the shape).
#pragma once

#include "topology/cluster_spec.h"

namespace shardplan {

// One node (nodes = 1) of `gpu`; `assumed` says what was taken.
ClusterSpec StandardNode(const GpuSpec& gpu);

}  // namespace shardplan
