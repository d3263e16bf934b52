#include "planner/io/hub_cache.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace shardplan {
namespace fs = std::filesystem;
namespace {

// Characters the hub allows in an org or repo name.
bool NamePart(const std::string& s) {
  if (s.empty() || s.size() > 96 || s == "." || s == ".." || s.front() == '-' || s.front() == '.') return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool IsCommitHash(const std::string& s) {
  if (s.size() != 40) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string ExpandHome(const std::string& p) {
  if (p.empty() || p[0] != '~') return p;
  return Env("HOME") + p.substr(1);
}

std::string FetchCommand(const HubId& id) {
  return "hf download " + id.repo + " config.json" + (id.revision.empty() ? "" : " --revision " + id.revision);
}

}  // namespace

std::optional<HubId> ParseHubId(const std::string& ref) {
  HubId id;
  std::string repo = ref;
  if (const size_t at = ref.find('@'); at != std::string::npos) {
    repo = ref.substr(0, at);
    id.revision = ref.substr(at + 1);
    // Branches may hold slashes (refs/pr/1), but never climb out of refs/.
    if (id.revision.empty() || id.revision.find("..") != std::string::npos || id.revision.front() == '/') return std::nullopt;
  }
  const size_t slash = repo.find('/');
  if (slash == std::string::npos || repo.find('/', slash + 1) != std::string::npos) return std::nullopt;
  const std::string org = repo.substr(0, slash), name = repo.substr(slash + 1);
  if (!NamePart(org) || !NamePart(name)) return std::nullopt;
  for (const char* ext : {".json", ".yaml", ".yml"})
    if (EndsWith(name, ext)) return std::nullopt;
  id.repo = repo;
  return id;
}

std::string HubCacheDir() {
  for (const char* var : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"})
    if (std::string v = Env(var); !v.empty()) return ExpandHome(v);
  if (std::string home = Env("HF_HOME"); !home.empty()) return (fs::path(ExpandHome(home)) / "hub").string();
  if (std::string xdg = Env("XDG_CACHE_HOME"); !xdg.empty()) return (fs::path(ExpandHome(xdg)) / "huggingface" / "hub").string();
  return (fs::path(Env("HOME")) / ".cache" / "huggingface" / "hub").string();
}

StatusOr<std::string> FindCachedConfig(const HubId& id, const std::string& cache_dir) {
  const std::string revision = id.revision.empty() ? "main" : id.revision;
  std::string folder_name = "models--" + id.repo;
  folder_name.replace(folder_name.find('/'), 1, "--");
  const fs::path repo = fs::path(cache_dir) / folder_name;
  auto missing = [&](const std::string& what) {
    return Status::BadInput("--model " + id.repo + (id.revision.empty() ? "" : "@" + id.revision) +
                            ": config.json is not in the Hugging Face cache (" + cache_dir + "): " + what +
                            ". shardplan never uses the network; fetch only that file with `" + FetchCommand(id) +
                            "` (or point HF_HUB_CACHE at the cache that holds it)");
  };
  std::error_code ec;
  if (!fs::is_directory(repo, ec)) return missing("no folder " + folder_name);
  std::string hash;
  if (std::ifstream ref(repo / "refs" / revision); ref) {
    std::getline(ref, hash);
    while (!hash.empty() && std::isspace(static_cast<unsigned char>(hash.back()))) hash.pop_back();
    if (!IsCommitHash(hash)) return missing("refs/" + revision + " holds \"" + hash + "\", not a commit hash");
  } else if (IsCommitHash(revision) && fs::is_directory(repo / "snapshots" / revision, ec)) {
    hash = revision;
  } else {
    return missing("no ref '" + revision + "' under " + folder_name + "/refs" +
                   (IsCommitHash(revision) ? " and no snapshot of that commit" : ""));
  }
  const fs::path config = repo / "snapshots" / hash / "config.json";
  if (!fs::is_regular_file(config, ec))  // follows the symlink into blobs/; a dangling one is missing
    return missing("snapshot " + hash.substr(0, 12) + " has no config.json");
  return config.string();
}

}  // namespace shardplan
