// Command-line helpers shared by the speed benchmarks.
#pragma once

#include <fmt/format.h>

#include <cstdlib>

namespace shardplan::bench {

// `value` of `flag` as an integer in [min, 1000]; exits 2 naming the program otherwise.
inline int ParseCount(const char* program, const char* flag, const char* value, int min) {
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  if (*end != '\0' || v < min || v > 1000) {
    fmt::print(stderr, "{}: {}: expected an integer >= {}, got \"{}\"\n", program, flag, min, value);
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace shardplan::bench
