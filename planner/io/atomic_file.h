// Writing a file so that readers see the old content or the new, never half of it.
#pragma once

#include <string>
#include <string_view>

#include "planner/status.h"

namespace shardplan {

// Writes `text` to `path` atomically: a temporary file in the same folder, flushed to disk,
// then renamed over `path`. A reader never sees half a file.
Status WriteFileAtomically(const std::string& path, std::string_view text);

}  // namespace shardplan
