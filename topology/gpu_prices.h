// GPU prices (configs/prices.yaml): on-demand cloud list prices per GPU-hour, each with its
// offering, date and source, and the GPU kinds `shardplan capacity` sweeps by default.
#pragma once

#include <string>
#include <vector>

#include "planner/status.h"

namespace shardplan {

struct GpuPrice {
  std::string gpu;              // catalog key, e.g. "h100-sxm-80gb"
  double per_gpu_hour = 0;      // US dollars
  std::string offering;         // what is sold at that price ("... 8 GPUs per instance, $49.24/h")
  std::string date;             // when it was read, "2026-02"; "--price" for a user's own
  std::string source;           // where it is published
};

struct PriceTable {
  std::vector<std::string> default_gpus;  // catalog keys, in sweep order
  std::vector<GpuPrice> prices;

  const GpuPrice* Find(const std::string& gpu) const;
};

// The built-in table; every key is checked against the GPU catalog.
StatusOr<PriceTable> BuiltinPrices();
// Reads a table from text named `name` in errors (the built-in, or tests).
StatusOr<PriceTable> ParsePrices(const std::string& name, const std::string& text);

}  // namespace shardplan
