// Fault: test-only failures the worker injects on one rank (--inject-fault KIND:RANK), so
// the paths that keep a broken job from hanging -- a rank that hangs, one that dies, an
// allocation that fails -- run in tests without a broken machine.
#pragma once

#include <string_view>

#include "planner/status.h"

namespace shardplan::validate {

// At the start of the first forward phase, plan rank `rank` hangs (until the watchdog ends
// it), exits with code 3, or has its first forward allocation fail as out of memory.
enum class FaultKind { kNone, kHang, kExit, kOom };
struct Fault {
  FaultKind kind = FaultKind::kNone;
  int rank = -1;  // plan rank
};

// "hang:1", "exit:0", "oom:3", or "" for none.
StatusOr<Fault> ParseFault(std::string_view text);

}  // namespace shardplan::validate
