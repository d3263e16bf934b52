// Quantities with units, as written in cluster YAML: "80 GiB", "900 GB/s",
// "400 Gb/s", "5 us". A bare number where a unit is needed is an error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "planner/status.h"

namespace shardplan {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kGiB = 1024 * kMiB;
constexpr int64_t kTiB = 1024 * kGiB;

// "80 GiB", "80GB", "1.5 TB", "512 B" -> bytes (SI for kB/MB/GB/TB, binary for KiB..TiB).
StatusOr<int64_t> ParseBytes(std::string_view text);
// "900 GB/s", "400 Gb/s" (bits), "64 GiB/s" -> bytes per second.
StatusOr<double> ParseBandwidth(std::string_view text);
// "5 us", "1.2 ms", "2 s", "300 ns", "90 min", "12h", "60d", "8w" -> seconds.
StatusOr<double> ParseDuration(std::string_view text);
// "500 W", "0.7 kW" -> watts (board power: a GPU's TDP or the power limit it runs under).
StatusOr<double> ParsePower(std::string_view text);
// "15T", "15.6 T", "500B", "8M", "100K", "2.5e12" -> a count of tokens (K/M/B/T are 1e3..1e12;
// a bare number is a count). Must be positive.
StatusOr<double> ParseTokenCount(std::string_view text);
// "2.9/h", "$2.9/h", "2.9/hr", "2.9/hour" -> US dollars per GPU-hour. The unit is required:
// "2.9" alone is an error (per hour or per month?).
StatusOr<double> ParsePricePerHour(std::string_view text);

// 12.34 GiB, 512.0 MiB, ... (binary units, two decimals); for tables.
std::string FormatBytes(int64_t bytes);
// "450 GB/s" style, SI.
std::string FormatBandwidth(double bytes_per_s);
// bytes / 2^30 as a double, for JSON-free tables and tests.
inline double ToGiB(int64_t bytes) { return static_cast<double>(bytes) / kGiB; }

}  // namespace shardplan
