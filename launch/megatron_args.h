// Megatron-LM arguments as a shell-friendly file, `megatron_args.sh`, that defines one bash
// array; a launch script sources it and passes "${MEGATRON_ARGS[@]}" to pretrain_gpt.py.
// Flag names from megatron/training/arguments.py (ecosystem.md 2.3).
#pragma once

#include <string>
#include <vector>

#include "launch/emitted_file.h"
#include "launch/job_shape.h"
#include "planner/plan.h"
#include "planner/status.h"

namespace shardplan::launch {

// The flags, one entry per flag with its value ("--tensor-model-parallel-size 8").
// Rejects ZeRO-2/3 (Megatron-FSDP is not emitted) and NVMe offload.
StatusOr<std::vector<std::string>> MegatronFlags(const Plan& plan, const JobShape& shape);

StatusOr<Emitted> MegatronArgs(const Plan& plan, const JobShape& shape);

}  // namespace shardplan::launch
