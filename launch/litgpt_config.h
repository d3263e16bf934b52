// LitGPT's config file (`litgpt finetune_lora --config litgpt.yaml`, finetune_full, pretrain),
// with the keys its config_hub files use (litgpt/args.py TrainArgs; finetune/lora.py and
// full.py setup). LitGPT's scripts choose the sharding themselves -- one GPU plainly, FSDP
// FULL_SHARD with every block checkpointed over devices x num_nodes (HYBRID_SHARD without
// checkpointing for pretraining) -- so the plans it can express are those.
#pragma once

#include <string_view>

#include "launch/emitted_file.h"
#include "launch/job_shape.h"
#include "planner/plan.h"
#include "planner/status.h"

namespace shardplan::launch {

// The LitGPT command that reads the config: finetune_lora (LoRA and QLoRA), finetune_full or
// pretrain.
std::string_view LitgptCommand(const Plan& plan);

// litgpt.yaml; BadInput naming the rule when LitGPT has no way to run the plan.
StatusOr<Emitted> LitgptConfig(const Plan& plan, const JobShape& shape);

}  // namespace shardplan::launch
