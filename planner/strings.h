// Small string helpers shared by readers, writers and tables.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace shardplan {

inline std::string Join(const std::vector<std::string>& parts, std::string_view sep = ", ") {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

inline std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    out.emplace_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

inline std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

inline std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// A name as people write it, for matching against a table of spellings: lower case, '_'
// and ' ' read as '-' ("Pre_training" and "FP8 CS" are "pre-training" and "fp8-cs").
inline std::string Spelling(std::string_view s) {
  std::string out = Lower(s);
  std::replace(out.begin(), out.end(), '_', '-');
  std::replace(out.begin(), out.end(), ' ', '-');
  return out;
}

// "1,234,567" for tables.
inline std::string Thousands(long long v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

// Edit distance, for suggestions.
inline int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// The closest of `candidates` to `word`, within about a third of its length (3 edits at
// most); empty when nothing is that close.
inline std::string Suggest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  int best_d = 4;
  for (const auto& c : candidates) {
    // More than 3 edits apart by length alone: skip (and keep a long word's cost linear).
    if (word.size() > c.size() + 3 || c.size() > word.size() + 3) continue;
    int d = EditDistance(word, c);
    int limit = std::max<int>(1, std::min<int>(3, static_cast<int>(std::max(c.size(), word.size())) / 3));
    if (d <= limit && d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace shardplan
