// Discovery: the local node's GPUs as a ClusterSpec (topology/cluster_spec.h), plus what a
// ClusterSpec cannot say (per-GPU NUMA node, NVLink islands, NICs) for a person to check.
//
// Sources, in the order DiscoverLocal tries them: NVML (topology/nvml_loader.h), then the
// `nvidia-smi` command; or, on any machine, the two nvidia-smi outputs captured on the GPU node
// (DiscoverFromFiles). Every path ends in Combine, which is pure.
//
// The GPU model is matched by its driver name to the catalog (configs/gpus.yaml); the memory
// is what the driver reports, and the NVLink bandwidth is what the links show: active links
// per GPU x the per-link rate of its generation (25 GB/s per direction for NVLink2-4).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "planner/status.h"
#include "topology/cluster_spec.h"
#include "topology/nvidia_smi.h"
#include "topology/nvml_loader.h"

namespace shardplan {

struct DiscoveredGpu {
  int index = 0;
  std::string name;           // as the driver names it
  int64_t memory_bytes = 0;   // as the driver reports it
  std::string pci_bus_id;     // "00000000:1B:00.0"; empty if unknown
  int numa_node = -1;         // -1 if unknown
  std::string cpu_affinity;   // "0-55,112-167"; empty if unknown
  int nvlinks = 0;            // active NVLinks (to peers or to NVSwitches)
};

struct Discovery {
  ClusterSpec cluster;                           // one node; inter_node unknown (empty fabric)
  std::string source;                            // what was read, for comments and --json
  std::string driver_version;                    // empty if unknown
  std::vector<DiscoveredGpu> gpus;
  std::vector<std::vector<TopoLink>> links;      // links[i][j] between GPUs i and j
  std::vector<std::vector<int>> nvlink_islands;  // GPUs joined by NVLink, 2 or more each
  std::vector<std::string> nics;                 // NIC devices seen ("mlx5_0")
  std::vector<std::string> notes;                // what the spec had to assume or leave out
};

struct DiscoverOptions {
  std::string name;               // cluster name; empty = the host name (live) or "discovered"
  int64_t host_memory_bytes = 0;  // per node; 0 = unknown (DiscoverLocal reads the machine's)
};

// The most NVLinks any GPU has (H100, B200: 18). A row of `topo -m` whose NV# counts add up to
// more is behind NVSwitches, where every pair shows the GPU's full count.
constexpr int kMaxNvLinksPerGpu = 18;

// Per-link NVLink bandwidth, one direction, for a compute capability (0 = unknown -> 25 GB/s).
double NvLinkBandwidthPerLink(int compute_capability);
// PCIe bandwidth of a link, one direction, after line encoding, rounded to 0.01 GB/s.
double PcieBandwidth(int generation, int width);

// Builds the Discovery from a parsed topology and GPU list describing the same GPUs.
// REQUIRES: nothing; mismatched inputs are BadInput.
StatusOr<Discovery> Combine(const TopoMatrix& topo, const std::vector<QueryGpu>& gpus, const std::string& source,
                            const DiscoverOptions& options);

// From captured `nvidia-smi topo -m` and `--query-gpu` outputs (no GPU needed).
StatusOr<Discovery> DiscoverFromFiles(const std::string& topo_path, const std::string& query_path,
                                      const DiscoverOptions& options);
// From NVML (a real library from LoadNvml, or a fake table).
StatusOr<Discovery> DiscoverFromNvml(const NvmlFunctions& nvml, const DiscoverOptions& options);

// Runs a shell command and returns its stdout; a non-zero exit is Internal.
using CommandRunner = std::function<StatusOr<std::string>(const std::string& command)>;
StatusOr<std::string> RunCommand(const std::string& command);
// From the `nvidia-smi` command, run through `run`.
StatusOr<Discovery> DiscoverWithNvidiaSmi(const CommandRunner& run, const DiscoverOptions& options);

// The live machine: NVML, else nvidia-smi. Neither available is Internal (exit 3), with a
// message that says how to capture the outputs on the GPU node instead. `progress` (may be
// empty) is called with each step as it starts ("loading NVML", ...).
StatusOr<Discovery> DiscoverLocal(DiscoverOptions options,
                                  const std::function<void(const std::string&)>& progress = {});

// Comment lines for the top of the written YAML (without "# "), and its `source:` value.
std::vector<std::string> DiscoveryComments(const Discovery& d);
// A table for people: GPUs, NUMA, NVLink islands, NICs, notes.
std::string DescribeDiscovery(const Discovery& d);

}  // namespace shardplan
