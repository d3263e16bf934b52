// Launch scripts for a plan: torchrun, the deepspeed launcher (with its hostfile), OpenMPI
// 4.1 mpirun, or a Slurm sbatch file. Every launcher numbers ranks node-major -- rank =
// node x procs_per_node + local rank, local rank i on GPU i in PCI bus order -- which is
// the plan's rank map (planner/plan.h MakeRankMap), so each TP group lands inside one
// node's NVLink island. Scripts pass `bash -n` and shellcheck.
#pragma once

#include <string>

#include "launch/emitted_file.h"
#include "launch/formats.h"
#include "launch/job_shape.h"
#include "planner/plan.h"
#include "planner/status.h"

namespace shardplan::launch {

struct LaunchOptions {
  int master_port = 29500;  // torch's default MASTER_PORT (TORCH_DISTRIBUTED_DEFAULT_PORT)
};

// `entry` is the config the script starts the job with (never kAll). Writes launch.sh (or
// job.sbatch for Slurm), plus `hostfile` for multi-node deepspeed/mpirun launches and
// `deepspeed_env` for the deepspeed launcher.
StatusOr<Emitted> LaunchScripts(const Plan& plan, const JobShape& shape, Launcher launcher,
                                Format entry, const LaunchOptions& opt = {});

// `host slots=N` lines, one per node in rank-map order (DeepSpeed and OpenMPI both read it).
std::string Hostfile(const JobShape& shape);

}  // namespace shardplan::launch
