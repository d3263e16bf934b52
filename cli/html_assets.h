// Files compiled into shardplan for the --html reports (cli/CMakeLists.txt embeds them):
// Chart.js from Debian's libjs-chart.js, and the page's own script and style (cli/html/).
#pragma once

#include <string_view>

namespace shardplan::cli {

extern const std::string_view kChartJs;
extern const std::string_view kReportJs;
extern const std::string_view kReportCss;

}  // namespace shardplan::cli
