// Reads a workload YAML (configs/workloads/) into a Workload; our own format, so unknown
// keys are errors with a suggestion.
#pragma once

#include <string>

#include "planner/io/document.h"
#include "planner/workload.h"

namespace shardplan {

StatusOr<Workload> ParseWorkload(const Document& doc);
StatusOr<Workload> ParseWorkloadNode(const Document& doc, const YAML::Node& node);
// Writes the workload in the same schema.
std::string WorkloadToYaml(const Workload& w, int indent);
// `ref` is a built-in name (configs/workloads/) or a path.
StatusOr<Workload> LoadWorkload(const std::string& ref);

}  // namespace shardplan
