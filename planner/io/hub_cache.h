// Hugging Face hub ids (`org/name[@revision]`) resolved through the local hub cache, laid
// out as huggingface_hub lays it out; never the network.
//
//   <cache>/models--org--name/refs/<revision>          a commit hash (revision default: main)
//   <cache>/models--org--name/snapshots/<hash>/config.json   often a symlink into blobs/
#pragma once

#include <optional>
#include <string>

#include "planner/status.h"

namespace shardplan {

struct HubId {
  std::string repo;      // "org/name"
  std::string revision;  // as asked; empty means main
};

// Parses `ref` as a hub id, or nullopt when it does not look like one (a path such as
// "./x/config.json" or "/abs/dir", a file name with a .json/.yaml extension, a bare name).
std::optional<HubId> ParseHubId(const std::string& ref);

// The cache folder, as huggingface_hub picks it: HF_HUB_CACHE (or its older name
// HUGGINGFACE_HUB_CACHE), else HF_HOME/hub, else XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub.
std::string HubCacheDir();

// The path of the id's cached config.json. Not cached is a bad-input error that names the
// cache folder, what was missing, and the `hf download` command that fetches only that file.
StatusOr<std::string> FindCachedConfig(const HubId& id, const std::string& cache_dir);

}  // namespace shardplan
