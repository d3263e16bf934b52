// Parsers for the two nvidia-smi outputs that describe a node's GPUs:
//   `nvidia-smi topo -m`: the link matrix (X, NV#, PIX, PXB, PHB, NODE, SYS) between GPUs and
//       NICs, with each GPU's CPU and NUMA affinity, then a legend and a NIC legend;
//   `nvidia-smi --query-gpu=index,name,memory.total,pci.bus_id --format=csv,noheader,nounits`:
//       one line per GPU.
// Both accept what people paste: CRLF, tabs turned into spaces, terminal colour codes, old
// drivers' SOC for SYS and mlx5_N NIC columns, a missing affinity column, a csv header with
// units. Text that is not such output is a BadInput Status naming `source:line`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "planner/status.h"

namespace shardplan {

// How two devices connect, nearest first (the order NCCL_P2P_LEVEL uses).
enum class LinkKind { kSelf, kNvLink, kPix, kPxb, kPhb, kNode, kSys };

struct TopoLink {
  LinkKind kind = LinkKind::kSys;
  int nvlinks = 0;  // bonded NVLinks for kNvLink ("NV18" -> 18), else 0
};

// "X", "NV18", "PIX", ... as nvidia-smi prints it.
std::string LinkName(const TopoLink& link);

struct TopoGpu {
  std::vector<TopoLink> to_gpu;  // one per GPU column, in column order
  std::vector<TopoLink> to_nic;  // one per NIC column
  std::string cpu_affinity;      // "0-55,112-167"; empty when not printed
  std::string numa_affinity;     // "0", "0-3", "N/A"; empty when not printed
  int numa_node = -1;            // numa_affinity when it names a single node, else -1
};

struct TopoMatrix {
  std::vector<TopoGpu> gpus;        // gpus[i] is the row "GPU<i>"
  std::vector<std::string> nics;    // NIC column names: "NIC0" or, from old drivers, "mlx5_0"
  std::vector<std::string> nic_devices;  // the NIC legend's device per column ("mlx5_0"), or the name
};

// Parses `nvidia-smi topo -m` output. `source` names the text in errors ("topo.txt").
StatusOr<TopoMatrix> ParseTopoMatrix(std::string_view text, const std::string& source);

// One GPU as --query-gpu reports it.
struct QueryGpu {
  int index = 0;
  std::string name;            // "NVIDIA H100 80GB HBM3"
  int64_t memory_bytes = 0;    // memory.total (MiB as the driver reports it) in bytes
  std::string pci_bus_id;      // "00000000:1B:00.0" (NormalizeBusId form); empty if not queried
  int compute_capability = 0;  // compute_cap "9.0" -> 90; 0 if not queried
  std::string driver_version;  // empty if not queried
  int pcie_gen = 0;            // pcie.link.gen.max; 0 if not queried
  int pcie_width = 0;          // pcie.link.width.max; 0 if not queried
  double power_limit_watts = 0;  // power.limit, the enforced board power cap; 0 if not queried
};

// The columns of `nvidia-smi --query-gpu=...` without a header: the documented four.
const std::vector<std::string>& DefaultQueryColumns();

// Parses --query-gpu csv. A first line starting with "index" is a header naming the columns
// (units such as " [MiB]" allowed); otherwise the columns are `columns`. Needs index, name and
// memory.total. Returns the GPUs sorted by index.
StatusOr<std::vector<QueryGpu>> ParseGpuQuery(std::string_view text, const std::string& source,
                                              const std::vector<std::string>& columns = DefaultQueryColumns());

// "0000:1b:00.0" or "00000000:1B:00.0" -> "00000000:1B:00.0"; empty if it is not a PCI address.
std::string NormalizeBusId(std::string_view bus_id);

}  // namespace shardplan
