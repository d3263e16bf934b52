// Rendering of `shardplan capacity`: the answer per GPU kind, the scaling curve of each, and
// the advice when nothing meets the target, as text tables and as JSON (README.md gives its
// shape).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/capacity.h"
#include "topology/gpu_prices.h"

namespace shardplan::cli {

struct CapacityReport {
  std::string model;                  // name
  int64_t params = 0;
  Workload workload;                  // as swept (training: its global batch is the sweep's start)
  CapacityTarget target;
  CapacityLimits limits;
  std::vector<GpuPrice> prices;       // one per kind, in the result's order (per_gpu_hour 0 = unknown)
  double seconds = 0;                 // the sweep's wall time
  std::vector<std::string> assumed;   // what the sweep took that the user did not say
};

nlohmann::json CapacityJson(const CapacityReport& rep, const CapacityResult& r);
std::string CapacityText(const CapacityReport& rep, const CapacityResult& r);

}  // namespace shardplan::cli
