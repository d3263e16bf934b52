#include "planner/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

#include "planner/strings.h"

namespace shardplan {
namespace {

struct Split {
  double number = 0;
  std::string unit;
};

std::string Quote(std::string_view s) {
  std::string out = "\"";
  out += s;
  out += '"';
  return out;
}

// Splits "80 GiB" into 80 and "GiB"; the number must be finite and >= 0.
// One value of each kind of quantity, for the error that finds no number.
std::string Example(std::string_view what) {
  if (what == "a bandwidth") return "\"400 Gb/s\"";
  if (what == "a duration") return "\"5 us\"";
  if (what == "a power") return "\"700 W\"";
  return "\"80 GiB\"";
}

StatusOr<Split> SplitQuantity(std::string_view text, const char* what) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  size_t start = i;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' ||
                             text[i] == 'e' || text[i] == 'E' || text[i] == '_' ||
                             ((text[i] == '+' || text[i] == '-') && (i == start || text[i - 1] == 'e' || text[i - 1] == 'E')))) {
    // Stop before a unit that starts with 'e'/'E' (none do) -- keeps "1e9 B" working.
    ++i;
  }
  std::string number;
  for (size_t k = start; k < i; ++k)
    if (text[k] != '_') number.push_back(text[k]);
  if (number.empty())
    return Status::BadInput(std::string("expected ") + what + " like " + Example(what) + ", got " + Quote(text));
  double value = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || ptr != number.data() + number.size() || !std::isfinite(value))
    return Status::BadInput(std::string("expected a number in ") + what + ", got " + Quote(text));
  if (value < 0) return Status::BadInput(std::string(what) + " must not be negative, got " + Quote(text));
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::string unit(text.substr(i));
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.back()))) unit.pop_back();
  if (unit.empty())
    return Status::BadInput(std::string(what) + " needs a unit, got the bare number " + Quote(text));
  return Split{value, unit};
}

std::string ListUnits(const std::vector<std::pair<const char*, double>>& table) {
  std::string out;
  for (const auto& [name, _] : table) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

StatusOr<double> Scale(std::string_view text, const char* what,
                       const std::vector<std::pair<const char*, double>>& table) {
  SP_ASSIGN_OR_RETURN(Split s, SplitQuantity(text, what));
  for (const auto& [name, factor] : table) {
    if (s.unit != name) continue;
    const double value = s.number * factor;
    if (!std::isfinite(value)) return Status::BadInput(std::string(what) + " " + Quote(text) + " is past any real size");
    // Below 1e-100 of a unit nothing real is measured, and such subnormal doubles do not
    // survive a write and re-read (fuzzing found 1e-308 B/s).
    if (value != 0 && std::fabs(value) < 1e-100)
      return Status::BadInput(std::string(what) + " " + Quote(text) + " is too small to be real (use 0 for none)");
    return value;
  }
  return Status::BadInput("unknown unit \"" + s.unit + "\" in " + what + " " + Quote(text) +
                          "; expected one of " + ListUnits(table));
}

}  // namespace

StatusOr<int64_t> ParseBytes(std::string_view text) {
  static const std::vector<std::pair<const char*, double>> kUnits = {
      {"B", 1},       {"kB", 1e3},   {"KB", 1e3},   {"MB", 1e6},   {"GB", 1e9},
      {"TB", 1e12},   {"PB", 1e15},  {"KiB", 0x1p10}, {"MiB", 0x1p20}, {"GiB", 0x1p30},
      {"TiB", 0x1p40}, {"PiB", 0x1p50}};
  SP_ASSIGN_OR_RETURN(double bytes, Scale(text, "a size", kUnits));
  if (bytes >= 0x1p63) return Status::BadInput("size " + Quote(text) + " is past the int64 range");
  return static_cast<int64_t>(std::llround(bytes));
}

StatusOr<double> ParseBandwidth(std::string_view text) {
  static const std::vector<std::pair<const char*, double>> kUnits = {
      {"B/s", 1},         {"kB/s", 1e3},        {"KB/s", 1e3},        {"MB/s", 1e6},
      {"GB/s", 1e9},      {"TB/s", 1e12},       {"KiB/s", 0x1p10},    {"MiB/s", 0x1p20},
      {"GiB/s", 0x1p30},  {"TiB/s", 0x1p40},    {"b/s", 1.0 / 8},     {"kb/s", 1e3 / 8},
      {"Kb/s", 1e3 / 8},  {"Mb/s", 1e6 / 8},    {"Gb/s", 1e9 / 8},    {"Tb/s", 1e12 / 8},
      {"Gbps", 1e9 / 8},  {"Mbps", 1e6 / 8},    {"Tbps", 1e12 / 8},   {"GBps", 1e9}};
  return Scale(text, "a bandwidth", kUnits);
}

StatusOr<double> ParseDuration(std::string_view text) {
  static const std::vector<std::pair<const char*, double>> kUnits = {
      {"ns", 1e-9}, {"us", 1e-6}, {"µs", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"min", 60},
      {"h", 3600},  {"d", 86400}, {"w", 7 * 86400}};
  return Scale(text, "a duration", kUnits);
}

StatusOr<double> ParsePower(std::string_view text) {
  static const std::vector<std::pair<const char*, double>> kUnits = {{"W", 1}, {"kW", 1e3}};
  return Scale(text, "a power", kUnits);
}

StatusOr<double> ParseTokenCount(std::string_view text) {
  const Status bad = Status::BadInput("expected a token count such as 15T, 500B or 2.5e12 (suffixes K, M, B, T), got " +
                                      Quote(text));
  std::string t(text);
  auto trim = [&t] {
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.erase(t.begin());
  };
  trim();
  double factor = 1;
  if (!t.empty() && std::isalpha(static_cast<unsigned char>(t.back()))) {
    switch (std::toupper(static_cast<unsigned char>(t.back()))) {
      case 'K': factor = 1e3; break;
      case 'M': factor = 1e6; break;
      case 'B': factor = 1e9; break;
      case 'T': factor = 1e12; break;
      default: return bad;
    }
    t.pop_back();
    trim();
  }
  double value = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size() || !std::isfinite(value)) return bad;
  if (value * factor < 1) return Status::BadInput("expected a positive token count such as 15T, got " + Quote(text));
  if (!std::isfinite(value * factor) || value * factor > 1e30)  // 1e305B overflows a double
    return Status::BadInput("token count too large (at most 1e30), got " + Quote(text));
  return value * factor;
}

StatusOr<double> ParsePricePerHour(std::string_view text) {
  std::string_view t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  if (!t.empty() && t.front() == '$') t.remove_prefix(1);
  const size_t slash = t.find('/');
  const std::string_view per = slash == std::string_view::npos ? std::string_view() : t.substr(slash + 1);
  if (per != "h" && per != "hr" && per != "hour")
    return Status::BadInput("expected a price per GPU-hour such as 2.9/h, got " + Quote(text) +
                            (slash == std::string_view::npos ? "; add the unit: " + std::string(t) + "/h" : ""));
  std::string number = Trim(t.substr(0, slash));
  double value = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || ptr != number.data() + number.size() || !std::isfinite(value) || value < 0)
    return Status::BadInput("expected a price per GPU-hour such as 2.9/h, got " + Quote(text) + "; the amount is not a number");
  return value;
}

std::string FormatBytes(int64_t bytes) {
  char buf[64];
  double b = static_cast<double>(bytes);
  double mag = std::fabs(b);
  if (mag >= 0x1p40) std::snprintf(buf, sizeof buf, "%.2f TiB", b / 0x1p40);
  else if (mag >= 0x1p30) std::snprintf(buf, sizeof buf, "%.2f GiB", b / 0x1p30);
  else if (mag >= 0x1p20) std::snprintf(buf, sizeof buf, "%.1f MiB", b / 0x1p20);
  else if (mag >= 0x1p10) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 0x1p10);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  return buf;
}

std::string FormatBandwidth(double bps) {
  char buf[64];
  if (bps >= 1e12) std::snprintf(buf, sizeof buf, "%.3g TB/s", bps / 1e12);
  else if (bps >= 1e9) std::snprintf(buf, sizeof buf, "%.4g GB/s", bps / 1e9);
  else std::snprintf(buf, sizeof buf, "%.4g MB/s", bps / 1e6);
  return buf;
}

}  // namespace shardplan
