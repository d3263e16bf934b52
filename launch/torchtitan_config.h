// torchtitan job TOML (`torchrun -m torchtitan.train --job.config_file torchtitan.toml`),
// in the last TOML-era schema (torchtitan/config/job_config.py @238fa99; HEAD keeps the same
// ParallelismConfig field names in its Python dataclass registry).
#pragma once

#include "launch/emitted_file.h"
#include "launch/job_shape.h"
#include "planner/plan.h"
#include "planner/status.h"

namespace shardplan::launch {

// Degrees: data_parallel_replicate x data_parallel_shard x context x tensor x pipeline ==
// world (torchtitan/distributed/parallel_dims.py asserts it). Rejects NVMe offload.
StatusOr<Emitted> TorchtitanConfig(const Plan& plan, const JobShape& shape);

}  // namespace shardplan::launch
