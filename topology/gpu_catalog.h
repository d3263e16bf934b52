// The GPU catalog (configs/gpus.yaml): memory as the driver reports it, dense peak FLOP/s,
// memory and NVLink bandwidth, each entry with its source.
#pragma once

#include <string>
#include <vector>

#include "planner/io/document.h"
#include "topology/cluster_spec.h"

namespace shardplan {

// Reads one GPU mapping (catalog entry or an inline `gpu:` in a cluster file).
StatusOr<GpuSpec> ParseGpu(const Document& doc, const YAML::Node& node, const std::string& name, bool inline_spec);
// Looks `name` up in the built-in catalog.
StatusOr<GpuSpec> CatalogGpu(const std::string& name);
std::vector<std::string> CatalogGpuNames();

}  // namespace shardplan
