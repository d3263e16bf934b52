// Fault: test-only failures the worker injects on one rank (--inject-fault KIND:RANK), so
// the paths that keep a broken job from hanging -- a rank that hangs, one that dies, an
// allocation that fails -- run in tests without a broken machine.
#pragma once

#include <string_view>

#include "planner/memory_model.h"
#include "planner/status.h"

namespace shardplan::validate {

// In the first iteration's `phase` (forward unless named), plan rank `rank` hangs (until the
// watchdog ends it), exits with code 3, has its first allocation of the phase fail as out of
// memory, or is killed by SIGKILL as its peers enter the phase's first collective.
enum class FaultKind { kNone, kHang, kExit, kOom, kKill };
struct Fault {
  FaultKind kind = FaultKind::kNone;
  int rank = -1;  // plan rank
  Phase phase = Phase::kForward;
};

// "hang:1", "exit:0", "oom:3", "oom:3@backward", "kill:2", or "" for none.
StatusOr<Fault> ParseFault(std::string_view text);

}  // namespace shardplan::validate
