// Reads a cluster YAML (DESIGN.md "--cluster") into a ClusterSpec. Quantities carry units
// as strings; unknown keys are errors with a suggestion.
#pragma once

#include <string>

#include "planner/io/document.h"
#include "topology/cluster_spec.h"

namespace shardplan {

StatusOr<ClusterSpec> ParseCluster(const Document& doc);
StatusOr<ClusterSpec> ParseClusterNode(const Document& doc, const YAML::Node& node);
// `ref` is a built-in name (configs/clusters/) or a path.
StatusOr<ClusterSpec> LoadCluster(const std::string& ref);

// A human summary: GPUs, memory, links, host (for `shardplan topology show`).
std::string DescribeCluster(const ClusterSpec& c);

}  // namespace shardplan
