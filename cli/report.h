// Rendering of estimates and plans: the JSON of DESIGN.md and the text tables.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "planner/plan.h"

namespace shardplan::cli {

// {"model", "layout", "memory", "time", "inference"?} as DESIGN.md specifies.
nlohmann::json PlanJson(const Plan& p);
// `fragmentation` (reserved/allocated - 1, as the estimate used it) prices each stage's usage
// by phase; per_stage then carries every stage's terms and its phases.
nlohmann::json MemoryJson(const MemoryEstimate& e);
nlohmann::json LayoutJson(const Layout& l);
// One line for a table: "megatron dp=8 tp=8+sp pp=16 zero=1 ac=none mbs=1 ga=16", or for
// serving "tp=8 w=bf16 kv=bf16 batch=32".
std::string CompactLayout(const Layout& l, bool inference);
// The term table of the fullest GPU (and one row per stage when pp > 1).
std::string EstimateText(const Plan& p);

}  // namespace shardplan::cli
