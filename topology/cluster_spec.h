// ClusterSpec: the machines a plan runs on. Plain structs; every quantity carries its unit
// in its name. Read from YAML by topology/cluster_reader.h or discovered by
// topology/discover.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardplan {

struct GpuSpec {
  std::string name;                  // catalog key, e.g. "h100-sxm-80gb"
  std::string display_name;          // as the driver names it, e.g. "NVIDIA H100 80GB HBM3"
  int64_t memory_bytes = 0;          // total memory as the driver reports it (nvidia-smi MiB)
  double bf16_flops = 0;             // dense tensor-core peak, FLOP/s
  double fp16_flops = 0;             // dense, FP32 accumulate
  double fp8_flops = 0;              // dense; 0 when the GPU has no FP8
  double fp32_flops = 0;             // non-tensor FP32 (used for fp32 training without TF32)
  double memory_bandwidth = 0;       // bytes/s
  double nvlink_bandwidth = 0;       // bytes/s per GPU, one direction; 0 = no NVLink
  int compute_capability = 0;        // 90 for sm_90
  double tdp_watts = 0;              // board power the datasheet peaks hold at; 0 = unknown
  double power_limit_watts = 0;      // the limit the cards run under (nvidia-smi -pl); 0 = the TDP
  int nvlink_domain = 0;             // GPUs one NVLink fabric joins as the system ships (GB200 NVL72: 72); 0 = a node
  double nic_bandwidth = 0;          // network per GPU in the system the GPU ships in, bytes/s one direction; 0 = unknown
  int sms = 0;                       // streaming multiprocessors; 0 = unknown (estimated from the peak)
  int64_t reserved_bytes = 0;        // of memory_bytes, what the driver keeps for itself (see UsableMemory)
  double fp4_flops = 0;              // dense NVFP4; 0 when the GPU has no FP4 tensor cores
  std::string vendor = "nvidia";     // "amd": kernel efficiencies not measured, so no step time (StepTimeKnown)
  double host_link_bandwidth = 0;    // host <-> GPU link, bytes/s one direction; 0 = the PCIe generation's (ShippedPcieBandwidth)
  bool operator==(const GpuSpec&) const = default;
};

struct LinkSpec {
  std::string fabric;                // "nvlink", "pcie", "infiniband", "ethernet", "none"
  double bandwidth = 0;              // bytes/s, one direction: per GPU (intra) or per NIC (inter)
  double latency_s = 0;              // per message
  int nics_per_node = 0;             // inter-node only
  int domain = 0;                    // intra-node only: GPUs the fabric joins across nodes (NVL72: 72); 0 = one node
  bool operator==(const LinkSpec&) const = default;
};

// Whether shardplan prices this GPU's step time: it needs a datasheet peak, and the kernel
// efficiencies the time model applies (GEMM ceilings by compute capability, tile waves over
// SMs, attention kernels) are measured on NVIDIA GPUs only. AMD Instinct parts answer the
// memory question and leave the time unknown.
inline bool StepTimeKnown(const GpuSpec& gpu) {
  return (gpu.bf16_flops > 0 || gpu.fp16_flops > 0) && gpu.vendor == "nvidia";
}

// The memory CUDA lets processes allocate: cudaMemGetInfo's total, which PyTorch's OOM message
// calls "total capacity" and vLLM multiplies by gpu_memory_utilization. It is nvidia-smi's
// total less what the driver reserves for itself (nvidia-smi -q "Reserved"; an 80 GB A100
// reports 80.00 GiB and PyTorch 79.15 GiB). An allocation fails against this figure, so the
// fit test and serving budgets use it.
inline int64_t UsableMemory(const GpuSpec& gpu) { return gpu.memory_bytes - gpu.reserved_bytes; }

// The NVLink domain `gpu` ships in (GB200 NVL72: 72) for nodes of `gpus_per_node` of them,
// when it spans several whole nodes and the GPU has NVLink; 0 when the node is the domain.
inline int ShippedNvlinkDomain(const GpuSpec& gpu, int gpus_per_node) {
  const bool spans = gpu.nvlink_bandwidth > 0 && gpus_per_node > 0 && gpu.nvlink_domain > gpus_per_node &&
                     gpu.nvlink_domain % gpus_per_node == 0;
  return spans ? gpu.nvlink_domain : 0;
}

// The network per GPU `gpu` ships with (its catalog nic_bandwidth: DGX A100 200 Gb/s HDR,
// DGX H100/B200 400 Gb/s NDR, HGX B300 and GB300 800 Gb/s ConnectX-8); the DGX H100's
// ConnectX-7 NDR, 400 Gb/s, when the catalog does not say.
inline double ShippedNicBandwidth(const GpuSpec& gpu) { return gpu.nic_bandwidth > 0 ? gpu.nic_bandwidth : 400e9 / 8; }

// The host link per GPU, one direction: the catalog's host_link_bandwidth where the part
// states one (GH200's NVLink-C2C to its Grace CPU), else the rate of the PCIe generation the
// GPU attaches with: x16 Gen5 from Hopper on (H100's datasheet: "PCIe Gen5: 128 GB/s" both
// ways), Gen4 before (A100's "PCIe Gen4: 64 GB/s"). A link rate, as host.pcie_bandwidth
// states it and `topology discover` reads it (63.02 GB/s for Gen5 x16); HostLinkBandwidth
// takes the protocol's share off it.
// One direction of an x16 link of PCIe generation `gen` (3 to 6): 16, 32, 64 or 128 GB/s,
// doubling each generation; 0 for another number.
inline double PcieX16Bandwidth(int gen) { return gen >= 3 && gen <= 6 ? 16e9 * static_cast<double>(1 << (gen - 3)) : 0; }
inline double ShippedPcieBandwidth(const GpuSpec& gpu) {
  if (gpu.host_link_bandwidth > 0) return gpu.host_link_bandwidth;
  return PcieX16Bandwidth(gpu.compute_capability >= 90 ? 5 : 4);
}

// How the GPUs of one node talk as the part ships: its NVLink at the full per-direction rate
// (through NVSwitch), or PCIe at its host link's rate where it has none.
inline LinkSpec ShippedIntraNodeLink(const GpuSpec& gpu) {
  if (gpu.nvlink_bandwidth > 0) return {"nvlink", gpu.nvlink_bandwidth, 2e-6, 0, 0};
  return {"pcie", ShippedPcieBandwidth(gpu), 5e-6, 0, 0};
}

struct ClusterSpec {
  std::string name;
  int nodes = 1;
  int gpus_per_node = 1;
  GpuSpec gpu;
  LinkSpec intra_node;               // GPU to GPU inside a node
  LinkSpec inter_node;               // node to node
  int64_t host_memory_bytes = 0;     // per node
  double pcie_bandwidth = 0;         // bytes/s host<->GPU per GPU, one direction
  int64_t nvme_bytes = 0;            // per node; 0 = none
  double nvme_bandwidth = 0;         // bytes/s per node
  std::vector<std::string> assumed;  // how the reader read what the file left loose ("H100" -> h100-sxm-80gb)
  std::vector<std::string> larger_gpus;  // catalog keys of the larger sizes a GPU name also matched
                                         // ("A100" reads as a100-sxm-40gb; here a100-sxm-80gb, ...)

  bool operator==(const ClusterSpec&) const = default;
  int world_size() const { return nodes * gpus_per_node; }
  // GPUs that reach each other over the intra-node fabric: the node, or a multi-node NVLink
  // domain (GB200 NVL72 joins 18 trays of 4).
  int nvlink_domain_size() const { return intra_node.domain > gpus_per_node ? intra_node.domain : gpus_per_node; }
  // Bandwidth per GPU across nodes: the node's NICs shared by its GPUs.
  double inter_node_bandwidth_per_gpu() const {
    int nics = inter_node.nics_per_node > 0 ? inter_node.nics_per_node : 1;
    return inter_node.bandwidth * nics / (gpus_per_node > 0 ? gpus_per_node : 1);
  }
};

}  // namespace shardplan
