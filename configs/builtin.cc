#include "configs/builtin.h"

namespace shardplan {
namespace {

std::string_view Stem(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view file = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = file.rfind('.');
  return dot == std::string_view::npos ? file : file.substr(0, dot);
}

bool InFolder(std::string_view path, std::string_view folder) {
  return path.size() > folder.size() && path.substr(0, folder.size()) == folder && path[folder.size()] == '/';
}

}  // namespace

std::optional<BuiltinFile> FindBuiltin(std::string_view folder, std::string_view name) {
  for (const BuiltinFile& f : BuiltinFiles())
    if (InFolder(f.path, folder) && Stem(f.path) == name) return f;
  return std::nullopt;
}

std::vector<std::string> BuiltinNames(std::string_view folder) {
  std::vector<std::string> names;
  for (const BuiltinFile& f : BuiltinFiles())
    if (InFolder(f.path, folder) && f.path.find('/', folder.size() + 1) == std::string_view::npos)
      names.emplace_back(Stem(f.path));
  return names;
}

}  // namespace shardplan
