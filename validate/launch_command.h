// LaunchCommand: the command lines that start a validation job -- mpirun for a local run,
// mpirun or srun for a cluster (printed for the user to submit) -- and where to find the
// worker and mpirun. Pure except for the two lookups at the bottom.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "validate/worker_options.h"

namespace shardplan::validate {

inline constexpr const char* kWorkerName = "shardplan-validate-worker";

struct LaunchSpec {
  std::string launcher = "mpirun";  // mpirun | srun
  std::string worker;               // path of shardplan-validate-worker
  int np = 1;                       // processes, one per rehearsed rank
  int gpus_per_node = 1;            // cluster commands: ranks per node
  bool as_root = false;             // mpirun refuses root without --allow-run-as-root
};

// Local: `mpirun -np N --quiet --oversubscribe --bind-to none [--allow-run-as-root] --timeout T
// WORKER ARGS`. Oversubscribing is safe here: ranks bind GPUs, not cores.
std::vector<std::string> LocalCommand(const LaunchSpec& s, const WorkerOptions& o);

// Cluster: mpirun with a hostfile and `--map-by ppr:G:node`, or srun with
// `--ntasks-per-node G --gpus-per-node G --kill-on-bad-exit=1` (a dead rank ends the step).
std::vector<std::string> ClusterCommand(const LaunchSpec& s, const WorkerOptions& o);

// Joins argv into one shell line, quoting what needs it.
std::string ShellJoin(const std::vector<std::string>& argv);

// `name` in the folders of $PATH, or nullopt.
std::optional<std::string> FindOnPath(const std::string& name);

// The worker next to the running executable (/proc/self/exe), or nullopt.
std::optional<std::string> WorkerNextToSelf();

}  // namespace shardplan::validate
