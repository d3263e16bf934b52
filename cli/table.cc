#include "cli/table.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace shardplan::cli {
namespace {

bool Numeric(const std::string& s) {
  if (s.empty()) return false;
  char c = s[0];
  return std::isdigit(static_cast<unsigned char>(c)) || ((c == '-' || c == '+') && s.size() > 1);
}

}  // namespace

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string Table::Render() const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  auto line = [&](const std::vector<std::string>& r, bool header) {
    std::string out;
    for (size_t i = 0; i < width.size(); ++i) {
      std::string cell = i < r.size() ? r[i] : "";
      std::string pad(width[i] - std::min(width[i], cell.size()), ' ');
      bool right = !header && i > 0 && Numeric(cell);
      out += (i ? "  " : "") + (right ? pad + cell : cell + (i + 1 < width.size() ? pad : ""));
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  size_t total = 0;
  for (size_t w : width) total += w;
  total += 2 * (width.empty() ? 0 : width.size() - 1);
  std::string out = line(header_, true) + std::string(total, '-') + "\n";
  for (const auto& r : rows_) out += r.empty() ? std::string(total, '-') + "\n" : line(r, false);
  return out;
}

}  // namespace shardplan::cli
