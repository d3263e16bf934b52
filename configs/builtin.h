// The files under configs/, compiled into the binary. Users name them: `--model
// llama-3.1-70b` is configs/models/llama-3.1-70b.json.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardplan {

struct BuiltinFile {
  std::string_view path;     // relative to configs/, e.g. "models/llama-2-7b.json"
  std::string_view content;
};

const std::vector<BuiltinFile>& BuiltinFiles();

// Finds `name` in `folder` ("models", "clusters", "workloads") with any extension.
std::optional<BuiltinFile> FindBuiltin(std::string_view folder, std::string_view name);
// The names in a folder, sorted, for error messages and listings.
std::vector<std::string> BuiltinNames(std::string_view folder);

}  // namespace shardplan
