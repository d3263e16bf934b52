#include "launch/output_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>  // renameat2
#include <stdlib.h>

#include <cerrno>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <system_error>

namespace shardplan::launch {
namespace {

namespace fs = std::filesystem;

Status CheckNames(const std::vector<EmittedFile>& files) {
  for (const EmittedFile& f : files)
    if (f.name.empty() || f.name == "." || f.name == ".." || f.name.find('/') != std::string::npos)
      return Status::Internal("emit: bad output file name '" + f.name + "'");
  return Status::Ok();
}

// Marks a directory emit created, so a later emit may add to it; a directory the user made
// for something else is left alone unless --force.
constexpr char kMarker[] = ".shardplan-emit";

Status CheckConflicts(const fs::path& dir, const std::vector<EmittedFile>& files, bool force) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Status::Ok();
  if (!fs::is_directory(dir, ec))
    return Status::BadInput(dir.string() + ": exists and is not a directory");
  if (force) return Status::Ok();
  if (!fs::is_empty(dir, ec) && !fs::exists(dir / kMarker, ec))
    return Status::BadInput(dir.string() + ": exists and was not written by `shardplan emit` (no " + kMarker +
                            "); choose a new directory or pass --force to write into it");
  for (const EmittedFile& f : files)
    if (fs::exists(dir / f.name, ec))
      return Status::BadInput(fmt::format("{}: exists; pass --force to overwrite", (dir / f.name).string()));
  return Status::Ok();
}

StatusOr<fs::path> MakeTempBeside(const fs::path& dir) {
  std::error_code ec;
  fs::path parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
  fs::create_directories(parent, ec);
  if (ec) return Status::Internal(fmt::format("{}: cannot create: {}", parent.string(), ec.message()));
  std::string name = ".";
  name += dir.filename().string();
  name += ".tmp-XXXXXX";
  std::string tmpl = (parent / name).string();
  if (mkdtemp(tmpl.data()) == nullptr)
    return Status::Internal(fmt::format("{}: cannot create a temporary directory", parent.string()));
  return fs::path(tmpl);
}

Status WriteFile(const fs::path& path, const EmittedFile& f) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << f.text;
  out.close();
  if (!out) return Status::Internal(path.string() + ": write failed");
  std::error_code ec;
  fs::permissions(path, f.executable ? fs::perms(0755) : fs::perms(0644), ec);
  if (ec) return Status::Internal(fmt::format("{}: chmod: {}", path.string(), ec.message()));
  return Status::Ok();
}

// Copies what the existing directory holds (but the files about to be replaced) into tmp,
// so that one rename swaps the whole directory.
Status CopyExisting(const fs::path& dir, const fs::path& tmp, const std::vector<EmittedFile>& files) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    bool replaced = false;
    for (const EmittedFile& f : files) replaced |= e.path().filename() == f.name;
    if (replaced) continue;
    fs::copy(e.path(), tmp / e.path().filename(),
             fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    if (ec) return Status::Internal(fmt::format("{}: copy: {}", e.path().string(), ec.message()));
  }
  if (ec) return Status::Internal(fmt::format("{}: {}", dir.string(), ec.message()));
  return Status::Ok();
}

Status Swap(const fs::path& dir, const fs::path& tmp) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::rename(tmp, dir, ec);
    return ec ? Status::Internal(fmt::format("{}: rename: {}", dir.string(), ec.message())) : Status::Ok();
  }
  // One atomic exchange: at every instant `dir` is the old directory or the new one, even if
  // the process is killed here (two renames would leave a moment with no `dir` at all).
  if (renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) != 0)
    return Status::Internal(fmt::format("{}: rename: {}", dir.string(), std::strerror(errno)));
  fs::remove_all(tmp, ec);  // now the old directory
  return Status::Ok();
}

Status Fill(const fs::path& dir, const fs::path& tmp, const std::vector<EmittedFile>& files) {
  std::error_code ec;
  if (fs::exists(dir, ec)) SP_RETURN_IF_ERROR(CopyExisting(dir, tmp, files));
  for (const EmittedFile& f : files) SP_RETURN_IF_ERROR(WriteFile(tmp / f.name, f));
  SP_RETURN_IF_ERROR(WriteFile(tmp / kMarker, {kMarker, "written by shardplan emit; its files may be replaced by the next emit\n", false}));
  return Swap(dir, tmp);
}

}  // namespace

Status WriteOutputDir(const std::string& dir_name, const std::vector<EmittedFile>& files, bool force) {
  SP_RETURN_IF_ERROR(CheckNames(files));
  fs::path dir = fs::path(dir_name).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "out/" -> "out"
  SP_RETURN_IF_ERROR(CheckConflicts(dir, files, force));
  SP_ASSIGN_OR_RETURN(fs::path tmp, MakeTempBeside(dir));
  std::error_code perm_ec;  // mkdtemp makes 0700; an output directory is shared
  fs::permissions(tmp, fs::perms(0755), perm_ec);
  Status s = Fill(dir, tmp, files);
  std::error_code ec;
  if (!s.ok()) fs::remove_all(tmp, ec);
  return s;
}

}  // namespace shardplan::launch
