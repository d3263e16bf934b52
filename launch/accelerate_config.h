// accelerate config YAML (`accelerate launch --config_file accelerate_config.yaml`) for a
// plan: FSDP2 for FSDP plans (or DDP when nothing is sharded), DeepSpeed through
// deepspeed_config_file for DeepSpeed plans. Keys follow accelerate's ClusterConfig
// (commands/config/config_args.py), which rejects unknown top-level keys.
#pragma once

#include <string>

#include "launch/emitted_file.h"
#include "launch/job_shape.h"
#include "planner/plan.h"
#include "planner/status.h"

namespace shardplan::launch {

struct AccelerateOptions {
  std::string deepspeed_config_file = "deepspeed_hf.json";  // relative to the launch directory
  int main_process_port = 29500;                            // torch's default MASTER_PORT
  bool deepspeed_hostfile = false;  // DeepSpeed plans started by the deepspeed launcher (pdsh)
};

// Rejects what accelerate cannot express: pipeline parallelism, NVMe offload under FSDP.
// On success `accelerate_config.yaml` plus notes on approximations.
StatusOr<Emitted> AccelerateConfig(const Plan& plan, const JobShape& shape,
                                   const AccelerateOptions& opt = {});

}  // namespace shardplan::launch
