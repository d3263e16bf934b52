// The config formats and launchers `shardplan emit` knows, with their command-line names.
#pragma once

#include <optional>
#include <string_view>

#include "planner/layout.h"

namespace shardplan::launch {

enum class Format { kDeepSpeed, kAccelerate, kTorchtitan, kMegatron, kLitgpt, kAll };
enum class Launcher { kTorchrun, kDeepSpeed, kMpirun, kSlurm };

std::string_view FormatName(Format f);      // "deepspeed", "accelerate", "torchtitan", "megatron", "litgpt", "all"
std::string_view LauncherName(Launcher l);  // "torchrun", "deepspeed", "mpirun", "slurm"
std::optional<Format> ParseFormat(std::string_view s);
std::optional<Launcher> ParseLauncher(std::string_view s);

// The format a framework's users run: DeepSpeed JSON, accelerate (FSDP), torchtitan, Megatron;
// LitGPT's own config for its stack.
Format NativeFormat(const Layout& l);

}  // namespace shardplan::launch
