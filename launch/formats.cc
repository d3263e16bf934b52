#include "launch/formats.h"

namespace shardplan::launch {

std::string_view FormatName(Format f) {
  switch (f) {
    case Format::kDeepSpeed: return "deepspeed";
    case Format::kAccelerate: return "accelerate";
    case Format::kTorchtitan: return "torchtitan";
    case Format::kMegatron: return "megatron";
    case Format::kLitgpt: return "litgpt";
    case Format::kAll: return "all";
  }
  return "all";
}

std::string_view LauncherName(Launcher l) {
  switch (l) {
    case Launcher::kTorchrun: return "torchrun";
    case Launcher::kDeepSpeed: return "deepspeed";
    case Launcher::kMpirun: return "mpirun";
    case Launcher::kSlurm: return "slurm";
  }
  return "torchrun";
}

std::optional<Format> ParseFormat(std::string_view s) {
  for (Format f : {Format::kDeepSpeed, Format::kAccelerate, Format::kTorchtitan,
                   Format::kMegatron, Format::kLitgpt, Format::kAll})
    if (s == FormatName(f)) return f;
  return std::nullopt;
}

std::optional<Launcher> ParseLauncher(std::string_view s) {
  for (Launcher l : {Launcher::kTorchrun, Launcher::kDeepSpeed, Launcher::kMpirun, Launcher::kSlurm})
    if (s == LauncherName(l)) return l;
  return std::nullopt;
}

Format NativeFormat(const Layout& l) {
  if (l.stack == Stack::kLitgpt) return Format::kLitgpt;
  switch (l.framework) {
    case Framework::kDeepSpeed: return Format::kDeepSpeed;
    case Framework::kFsdp: return Format::kAccelerate;
    case Framework::kMegatron: return Format::kMegatron;
    case Framework::kTorchtitan: return Format::kTorchtitan;
  }
  return Format::kAccelerate;
}

}  // namespace shardplan::launch
