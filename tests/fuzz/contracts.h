// The contract every reader at the edge keeps, checked on arbitrary input: either a value
// comes back, or an error that says where in the input it went wrong (file:line:col, or for
// one-line inputs such as --layout the key or text at fault); and a value read back through
// its writer is the same value. Shared by the libFuzzer targets (SHARDPLAN_FUZZ) and by the
// ordinary test suite, which replays every stored corpus and regression file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shardplan::fuzz {

// The target names: model, cluster, workload, plan, layout, units, topo, query, oom.
const std::vector<std::string>& Targets();

// Feeds `data` to the reader named `target` and checks its contract. Returns "" when it
// holds, else what broke (with the inputs needed to see it).
std::string Check(std::string_view target, std::string_view data);

}  // namespace shardplan::fuzz
