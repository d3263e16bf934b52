// Emit: a Plan -> the files a user needs to run it -- framework config(s), a launch script
// for the chosen launcher, and a README saying how to launch. Pure: returns the files;
// launch/output_dir.h writes them.
#pragma once

#include <string>

#include "launch/emitted_file.h"
#include "launch/formats.h"
#include "planner/plan.h"
#include "planner/status.h"

namespace shardplan::launch {

struct EmitOptions {
  Format format = Format::kAll;            // kAll: every format the plan can be expressed in
  Launcher launcher = Launcher::kTorchrun;
  std::string nvme_path = "/local_nvme";   // node-local NVMe mount for offload=nvme
  int master_port = 29500;                 // torch's default MASTER_PORT
};

// The files for `plan`. A requested format that cannot express the plan is an error naming
// the rule; under kAll such formats are skipped and the README says why, but the plan's
// own framework format must succeed. The launch script starts the requested format, or
// under kAll the framework's own (DeepSpeed JSON, accelerate for FSDP, torchtitan, Megatron).
StatusOr<Emitted> EmitPlan(const Plan& plan, const EmitOptions& opt);

}  // namespace shardplan::launch
