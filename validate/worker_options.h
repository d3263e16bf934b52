// WorkerOptions: the flags of a validation run, shared by the worker binary (which parses
// them) and `shardplan validate` (which parses the same flags and passes them on), so the
// two cannot drift apart. Values are checked strictly; a bad one is bad input (exit 2).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "planner/status.h"

namespace shardplan::validate {

struct WorkerOptions {
  std::string plan;               // plan.yaml
  std::string backend = "cuda";   // cuda | host
  std::string ranks = "all";      // "all" or plan ranks: "0", "0,2", "4-7"
  std::string scale;              // "" = 1 on cuda, 1/1024 on host; "1/1024", "0.25", ...
  std::string capacity;           // "" = the plan's GPU memory; "24 GiB"
  double timeout_s = 600;         // every process is gone by then
  int iterations = 2;             // >= 2 (optimizer state and NCCL buffers appear in the first)
  bool json = false;              // JSON report on stdout instead of the table
  std::string inject_fault;       // tests: "hang:R", "exit:R", "oom:R"
};

// Adds the flags (and the PLAN positional) to `app`.
void AddWorkerFlags(CLI::App& app, WorkerOptions& o);

// The arguments that reproduce `o` on a worker command line (without the program).
std::vector<std::string> WorkerArgs(const WorkerOptions& o);

// "1/1024", "0.5", "1e-3" -> a factor in (0, 1]; "" -> the backend's default.
StatusOr<double> ParseScale(std::string_view text, std::string_view backend);

// "all" -> 0..world-1; "0,2,4-6" -> {0, 2, 4, 5, 6}; sorted, unique, each < world.
StatusOr<std::vector<int>> ParseRanks(std::string_view text, int world);

// --capacity, or 0 when unset.
StatusOr<int64_t> ParseCapacity(std::string_view text);

// Margins inside --timeout: operations give up at `OperationSeconds`, the watchdog ends a
// blocked process at `WatchdogSeconds`, both before the launcher's own limit.
double OperationSeconds(double timeout_s);
double WatchdogSeconds(double timeout_s);

}  // namespace shardplan::validate
