// Rendering of estimates and plans: the JSON of DESIGN.md and the text tables.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "planner/plan.h"

namespace shardplan::cli {

// {"model", "layout", "memory", "time", "inference"?} as DESIGN.md specifies.
nlohmann::json PlanJson(const Plan& p);
nlohmann::json MemoryJson(const MemoryEstimate& e);
nlohmann::json LayoutJson(const Layout& l);
// The term table of the fullest GPU (and one row per stage when pp > 1).
std::string EstimateText(const Plan& p);

}  // namespace shardplan::cli
