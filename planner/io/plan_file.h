// plan.yaml: a documented file holding the inputs (the model spec, the cluster and the
// workload, written out in full so the file stands alone), the resolved layout, its
// estimates and the rank map. LoadPlan recomputes the estimates from the inputs, so
// `shardplan estimate --plan plan.yaml` reproduces them exactly.
#pragma once

#include <string>

#include "planner/plan.h"
#include "planner/status.h"

namespace shardplan {

// The YAML text of a plan, with comments explaining each section.
std::string PlanToYaml(const Plan& plan);
// Writes the plan atomically (a temporary file renamed into place).
Status SavePlan(const Plan& plan, const std::string& path);
// Reads a plan and recomputes its memory and time estimates.
StatusOr<Plan> LoadPlan(const std::string& path);
StatusOr<Plan> ParsePlan(const std::string& name, std::string_view text);

}  // namespace shardplan
