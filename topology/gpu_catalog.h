// The GPU catalog (configs/gpus.yaml): memory as the driver reports it, dense peak FLOP/s,
// memory and NVLink bandwidth, each entry with its source.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/io/document.h"
#include "topology/cluster_spec.h"

namespace shardplan {

// What the driver keeps of `memory_bytes` on a card whose reserve nobody measured.
int64_t DefaultDriverReserve(int64_t memory_bytes);
// Reads one GPU mapping (catalog entry or an inline `gpu:` in a cluster file).
StatusOr<GpuSpec> ParseGpu(const Document& doc, const YAML::Node& node, const std::string& name, bool inline_spec);
// Looks `name` up in the built-in catalog.
StatusOr<GpuSpec> CatalogGpu(const std::string& name);
// The catalog key for a name as people write it: the key itself, the name nvidia-smi prints
// ("NVIDIA H100 80GB HBM3"), or its parts in any order and case ("H100", "A100-SXM4-80GB",
// "rtx4090"). Several matches of one memory size resolve to the SXM part and `note` says so;
// one part in several sizes ("A100") resolves to the smallest (SXM among equals) and `larger` gets
// the other sizes' keys; several different parts are an error that lists them. With
// `memory_bytes`, a size the catalog lacks ("H100 96GB") resolves to the family and sets
// *memory_bytes to the size the name states.
StatusOr<std::string> ResolveGpuName(const std::string& name, std::string* note, int64_t* memory_bytes = nullptr,
                                     std::vector<std::string>* larger = nullptr);
std::vector<std::string> CatalogGpuNames();

}  // namespace shardplan
