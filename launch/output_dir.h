// Writes emitted files into an output directory all or nothing: everything is written into
// a fresh temporary directory beside it and renamed into place, so an error (a full disk, a
// file that exists without --force) never leaves a half-written directory behind.
#pragma once

#include <string>
#include <vector>

#include "launch/emitted_file.h"
#include "planner/status.h"

namespace shardplan::launch {

// Creates `dir` (and its parents) holding `files`. When `dir` exists, its other files are
// kept; a file that would be replaced is an error unless `force`. Executable files get 0755.
Status WriteOutputDir(const std::string& dir, const std::vector<EmittedFile>& files, bool force);

}  // namespace shardplan::launch
