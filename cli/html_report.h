// The --html report of plan, estimate, validate and capacity: one self-contained page that
// opens offline. The page embeds the command's --json output verbatim and builds every
// chart and table from it in the browser (Chart.js, from Debian's libjs-chart.js, is inlined
// at build time), so the numbers shown are the numbers --json prints.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "planner/status.h"

namespace shardplan::cli {

struct HtmlReport {
  std::string kind;        // "plan", "estimate", "validate" or "capacity": which charts
  std::string title;       // the page's heading
  nlohmann::json inputs;   // {"model", "cluster", "workload", ...} as the user named them
  nlohmann::json data;     // exactly what --json prints
};

// The page, with the command line that made it.
std::string RenderHtml(const HtmlReport& r);
// Writes the page to `path` atomically; an error names --html and the path.
Status WriteHtml(const std::string& path, const HtmlReport& r);

}  // namespace shardplan::cli
